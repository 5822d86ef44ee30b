#!/usr/bin/env bash
# Runs every fuzz target for a while, seeded from tests/corpus; fails on the first finding.
#   fuzz/run.sh BUILD_DIR [SECONDS_PER_TARGET]      (BUILD_DIR configured with -DORDO_FUZZ=ON)
set -euo pipefail
build=$1
seconds=${2:-20}
here="$(cd "$(dirname "$0")" && pwd)"
# fuzz_model writes each input as files before loading them: on a tmpfs it runs about 4x faster
# (docs/fuzzing.md), with the same code path.
if [ -z "${TMPDIR:-}" ] && [ -d /dev/shm ] && [ -w /dev/shm ]; then export TMPDIR=/dev/shm; fi
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
python3 "$here/seeds.py" "$work/seeds"
for target in safetensors config model tokenizer text serve; do
  dict=()
  if [ -f "$here/$target.dict" ]; then dict=(-dict="$here/$target.dict"); fi
  mkdir -p "$work/corpus-$target"
  echo "fuzz_$target: ${seconds}s"
  "$build/fuzz/fuzz_$target" "${dict[@]}" -max_total_time="$seconds" -max_len=16384 -timeout=10 \
    -rss_limit_mb=4096 -print_final_stats=1 -artifact_prefix="$build/fuzz/$target-" \
    "$work/corpus-$target" "$work/seeds/$target" 2>"$work/log-$target" || {
    tail -n 40 "$work/log-$target"
    echo "fuzz_$target found a crash: see $build/fuzz/$target-*" >&2
    exit 1
  }
  grep -E "number_of_executed_units|peak_rss_mb" "$work/log-$target" | sed 's/^/  /'
done
