#!/usr/bin/python3
"""Several ordo builds (or thread counts) side by side at the small end, each timing in a fresh process.

    tools/dev/bench_builds.py --model BASE --seqs 8,32,64,128 --processes 10 \\
        old=../old/build/ordo:2 new=build/ordo:2 openmp=build-omp/ordo:2 one=build/ordo:1

The builds take turns process by process (so the host's slow spells fall on all of them alike); each cell
is the median of the processes' medians of `ordo bench --repeat 9 --json`, with the fastest and slowest
process. OPENBLAS_CORETYPE is removed from the environment, as on a user's machine.
"""
import argparse
import json
import os
import statistics
import subprocess


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("builds", nargs="+", help="NAME=BINARY:THREADS")
    ap.add_argument("--model", default="/tmp/ordo-bench-base")
    ap.add_argument("--seqs", default="8,32,64,128")
    ap.add_argument("--batch", type=int, default=1)
    ap.add_argument("--processes", type=int, default=10)
    ap.add_argument("--repeat", type=int, default=9)
    args = ap.parse_args()
    builds = {}
    for b in args.builds:
        name, rest = b.split("=", 1)
        binary, threads = rest.rsplit(":", 1)
        builds[name] = (binary, threads)
    seqs = [int(s) for s in args.seqs.split(",")]
    env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_CORETYPE"}
    res = {(n, S): [] for n in builds for S in seqs}
    for _ in range(args.processes):
        for S in seqs:
            for name, (binary, threads) in builds.items():
                out = subprocess.run([binary, "bench", "--model", args.model, "--batch", str(args.batch), "--seq", str(S),
                                      "--threads", threads, "--repeat", str(args.repeat), "--json"],
                                     env=env, capture_output=True, text=True, check=True).stdout
                res[(name, S)].append(json.loads(out)["ms_median"])
    print(f"# {args.processes} fresh processes per cell; ms: median of medians (fastest-slowest); OPENBLAS_CORETYPE unset")
    print(f"| {args.batch} x S | " + " | ".join(builds) + " |")
    print("|---" * (len(builds) + 1) + "|")
    for S in seqs:
        cells = [f"{statistics.median(res[(n, S)]):.2f} ({min(res[(n, S)]):.2f}-{max(res[(n, S)]):.2f})" for n in builds]
        print(f"| {args.batch} x {S} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
