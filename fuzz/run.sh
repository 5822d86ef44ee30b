#!/usr/bin/env bash
# Runs every fuzz target for a while, seeded from tests/corpus; fails on the first finding.
#   fuzz/run.sh BUILD_DIR [SECONDS_PER_TARGET] [TARGETS_AT_ONCE]  (BUILD_DIR configured with -DORDO_FUZZ=ON)
# Each target runs on one core; TARGETS_AT_ONCE (default 1) runs that many side by side.
set -euo pipefail
build=$1
seconds=${2:-20}
at_once=${3:-1}
here="$(cd "$(dirname "$0")" && pwd)"
# fuzz_model writes each input as files before loading them: on a tmpfs it runs about 4x faster
# (docs/fuzzing.md), with the same code path.
if [ -z "${TMPDIR:-}" ] && [ -d /dev/shm ] && [ -w /dev/shm ]; then export TMPDIR=/dev/shm; fi
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
python3 "$here/seeds.py" "$work/seeds"

fuzz() {  # fuzz TARGET: runs it, then prints its figures, or its log's end when it found something
  local target=$1 dict=()
  if [ -f "$here/$target.dict" ]; then dict=(-dict="$here/$target.dict"); fi
  mkdir -p "$work/corpus-$target"
  if "$build/fuzz/fuzz_$target" "${dict[@]}" -max_total_time="$seconds" -max_len=16384 -timeout=10 \
    -rss_limit_mb=4096 -print_final_stats=1 -artifact_prefix="$build/fuzz/$target-" \
    "$work/corpus-$target" "$work/seeds/$target" 2>"$work/log-$target"; then
    echo "fuzz_$target: ${seconds}s"
    grep -E "number_of_executed_units|peak_rss_mb" "$work/log-$target" | sed 's/^/  /'
  else
    tail -n 40 "$work/log-$target"
    echo "fuzz_$target found a crash: see $build/fuzz/$target-*" >&2
    return 1
  fi
}

failed=0
running=0
for target in safetensors config model tokenizer text serve http; do
  if [ "$running" -ge "$at_once" ]; then
    wait -n || failed=1
    running=$((running - 1))
  fi
  fuzz "$target" &
  running=$((running + 1))
done
while [ "$running" -gt 0 ]; do
  wait -n || failed=1
  running=$((running - 1))
done
exit "$failed"
