#!/usr/bin/env bash
# The committed default tokenizer is exactly what tools/train/train_tokenizer.sh makes from WordNet.
set -euo pipefail
source_dir=$1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$source_dir/tools/train/train_tokenizer.sh" "$work"
if cmp "$work/tokenizer.model" "$source_dir/models/default/tokenizer.model"; then
  echo "models/default/tokenizer.model is reproduced byte for byte"
else
  echo "models/default/tokenizer.model differs from what tools/train/train_tokenizer.sh makes" >&2
  exit 1
fi
