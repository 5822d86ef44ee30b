#!/bin/sh
# The speed table of docs/precision.md: `ordo bench` at each compute type on the base encoder
# (tools/dev/bench_peers.py writes it), PROCESSES fresh processes per figure, OPENBLAS_CORETYPE
# unset (a user's shell does not set it), 2 threads. Prints one line per shape: the median over
# the processes of each process's median, in ms, and the speed-ups over f32.
#   tools/dev/bench_precision.sh build/ordo /tmp/ordo-bench-base [PROCESSES] [SHAPES]
set -eu
ordo=$1 model=$2 processes=${3:-5}
shapes=${4:-"1x8 1x32 1x128 8x128 4x512 1x2048"}
for shape in $shapes; do
  B=${shape%x*} S=${shape#*x}
  tokens=$((B * S))
  repeat=$(( tokens <= 128 ? 50 : (tokens <= 1024 ? 10 : 5) ))
  for type in f32 bf16 int8; do
    i=0
    while [ $i -lt "$processes" ]; do
      env -u OPENBLAS_CORETYPE "$ordo" bench --model "$model" --batch "$B" --seq "$S" --threads 2 \
        --repeat "$repeat" --compute-type "$type" --json
      i=$((i + 1))
    done
  done
done | python3 -c '
import json, statistics, sys
runs = {}
for line in sys.stdin:
    j = json.loads(line)
    runs.setdefault((j["batch"], j["seq"]), {}).setdefault(j["compute_type"], []).append(j["ms_median"])
print("shape      f32 ms   bf16 ms   int8 ms   bf16 x   int8 x   (medians of %d processes)" % len(next(iter(runs.values()))["f32"]))
for (b, s), t in runs.items():
    m = {k: statistics.median(v) for k, v in t.items()}
    f, h, q = m["f32"], m["bf16"], m["int8"]
    print(f"{b} x {s:<5} {f:8.2f} {h:9.2f} {q:9.2f} {f / h:8.2f} {f / q:8.2f}")
'
