#!/usr/bin/env bash
# Trains the default model's tokenizer: a sentencepiece unigram model of 8000 pieces learnt from
# the glosses and example sentences of WordNet 3.0 (Debian package wordnet-base).
#
#   tools/train/train_tokenizer.sh [OUT_DIR]      (default: models/default)
#
# Each synset line of /usr/share/wordnet/data.{noun,verb,adj,adv} ends in "| gloss; "example"; ...".
# The gloss and each quoted example become one line of the corpus (tools/train/corpus.py builds
# the same lines for training the model). The trained model is committed, so a build needs neither
# WordNet nor this script.
#
# Two pieces beyond what the text itself yields:
#   <mask>  a control symbol: no text is ever cut into it; `ordo fill` puts its id where the user
#           writes the literal <mask> (the masked-language-model head was trained to fill it).
#   <0x00>..<0xFF>  byte fallback: a character outside the 8000 pieces becomes its UTF-8 bytes
#           instead of <unk>, so texts that differ only in such characters stay different.
set -euo pipefail
out=${1:-"$(dirname "$0")/../../models/default"}
wordnet=/usr/share/wordnet
for pos in noun verb adj adv; do
  [ -r "$wordnet/data.$pos" ] || { echo "error: $wordnet/data.$pos: missing (apt-get install wordnet-base)" >&2; exit 2; }
done
command -v spm_train >/dev/null || { echo "error: spm_train: not found (apt-get install sentencepiece)" >&2; exit 2; }

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# Synset lines start with an 8-digit offset (the licence header lines start with spaces).
# After "| ": split on "; " into the gloss and its examples, strip quotes and trailing spaces.
grep -h '^[0-9]\{8\} ' "$wordnet"/data.{noun,verb,adj,adv} |
  sed -e 's/^[^|]*| //' -e 's/ *$//' |
  awk -F'; ' '{ for (i = 1; i <= NF; i++) { s = $i; gsub(/^"|"$/, "", s); if (length(s) > 0) print s } }' \
    >"$work/corpus.txt"
echo "corpus: $(wc -l <"$work/corpus.txt") lines, $(wc -c <"$work/corpus.txt") bytes from WordNet 3.0" >&2

# One thread and relative file names (the model records its trainer's arguments) make the same
# bytes on every run.
(cd "$work" && spm_train --input=corpus.txt --model_prefix=tokenizer --model_type=unigram \
  --vocab_size=8000 --character_coverage=1.0 --control_symbols='<mask>' --byte_fallback=true \
  --num_threads=1 --minloglevel=2 >&2)
mkdir -p "$out"
cp "$work/tokenizer.model" "$out/tokenizer.model"
echo "wrote $out/tokenizer.model" >&2
