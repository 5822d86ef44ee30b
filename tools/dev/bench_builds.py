#!/usr/bin/python3
"""Several ordo builds (or thread counts, or settings) side by side at the small end, each timing in a
fresh process.

    tools/dev/bench_builds.py --model BASE --shapes 1x8,1x32,1x128,8x128 --processes 10 --one one \\
        main-2=../main/build/ordo:2 new-2=build/ordo:2 off-2=build/ordo:2:ORDO_SPREAD=0 one=build/ordo:1

A build is NAME=BINARY:THREADS, optionally :KEY=VALUE[,KEY=VALUE] for its environment (ORDO_ISA=avx2 for
every build: set it in the tool's own environment). The builds take turns process by process, in the
opposite order every other round (so the host's slow spells fall on all of them alike). Each cell is the
median of the processes' medians of `ordo bench --repeat 9 --json`, the fastest and slowest process and
slowest / fastest; with --one NAME, each build's column also counts the rounds in which its process took
longer than NAME's process of the same round ("2t slower"). The load average is printed before and after.
OPENBLAS_CORETYPE is removed from the environment, as on a user's machine.
"""
import argparse
import json
import os
import statistics
import subprocess


def load():
    with open("/proc/loadavg") as f:
        return " ".join(f.read().split()[:3])


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("builds", nargs="+", help="NAME=BINARY:THREADS[:KEY=VALUE,...]")
    ap.add_argument("--model", default="/tmp/ordo-bench-base")
    ap.add_argument("--shapes", default=None, help="BxS,... (default: --batch × each of --seqs)")
    ap.add_argument("--seqs", default="8,32,64,128")
    ap.add_argument("--batch", type=int, default=1)
    ap.add_argument("--processes", type=int, default=10)
    ap.add_argument("--repeat", type=int, default=9)
    ap.add_argument("--one", default=None, help="the build the others are counted against (2t slower)")
    args = ap.parse_args()
    builds = {}
    base_env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_CORETYPE"}
    for b in args.builds:
        name, rest = b.split("=", 1)
        parts = rest.split(":")
        env = dict(base_env)
        if len(parts) > 2:
            for kv in parts[2].split(","):
                k, v = kv.split("=", 1)
                env[k] = v
        builds[name] = (parts[0], parts[1], env)
    if args.shapes:
        shapes = [tuple(int(x) for x in s.split("x")) for s in args.shapes.split(",")]
    else:
        shapes = [(args.batch, int(s)) for s in args.seqs.split(",")]
    names = list(builds)
    res = {(n, sh): [] for n in names for sh in shapes}
    print(f"# load average before: {load()}", flush=True)
    for round_ in range(args.processes):
        for B, S in shapes:
            for name in names if round_ % 2 == 0 else reversed(names):
                binary, threads, env = builds[name]
                out = subprocess.run([binary, "bench", "--model", args.model, "--batch", str(B), "--seq", str(S),
                                      "--threads", threads, "--repeat", str(args.repeat), "--json"],
                                     env=env, capture_output=True, text=True, check=True).stdout
                res[(name, (B, S))].append(json.loads(out)["ms_median"])
                print(f"# round {round_ + 1} {B}x{S} {name}: {res[(name, (B, S))][-1]:.2f} (load {load()})", flush=True)
    print(f"# load average after: {load()}")
    print(f"# {args.processes} fresh processes per cell; ms: median of medians (fastest-slowest, slowest/fastest)"
          + (f"; [n/{args.processes}]: rounds slower than {args.one}" if args.one else "")
          + "; OPENBLAS_CORETYPE unset")
    print("| B x S | " + " | ".join(names) + " |")
    print("|---" * (len(names) + 1) + "|")
    for sh in shapes:
        cells = []
        for n in names:
            v = res[(n, sh)]
            cell = f"{statistics.median(v):.2f} ({min(v):.2f}-{max(v):.2f}, {max(v) / min(v):.2f})"
            if args.one and n != args.one:
                slower = sum(a > b for a, b in zip(v, res[(args.one, sh)]))
                cell += f" [{slower}/{len(v)}]"
            cells.append(cell)
        print(f"| {sh[0]} x {sh[1]} | " + " | ".join(cells) + " |")
    print("# per process, in order:")
    for sh in shapes:
        for n in names:
            print(f"#   {sh[0]}x{sh[1]} {n}: " + " ".join(f"{x:.2f}" for x in res[(n, sh)]))


if __name__ == "__main__":
    main()
