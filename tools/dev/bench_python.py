#!/usr/bin/python3
"""The figures of docs/python.md: what `import ordo` costs over the library, and what Dask adds.

    tools/dev/bench_python.py --build build [--rounds 5] [--only call,lines,dask]

call:  Model.encode(["a short text"]) per call, against the library's own Pipeline::encode of the same
       text and Encoder::forward of its ids (build/bench_call, C++); median of 20,000 calls per process,
       both with --call-threads engine threads (default 1).
lines: 50,000 short lines (fixed seed), embedded by `ordo encode --format npy` and by a Python process
       that reads the file, calls Model.encode(lines, batch_size=64) and np.save()s the array: the wall
       time of each whole process (start, model load, reading, encoding, writing).
dask:  100,000 such lines through python/examples/dask_encode.py on a LocalCluster of 1 and of 2
       worker processes (1 thread each), wall time of the whole script (cluster start included); and
       1,000 lines, whose time is almost all the fixed cost (starting the cluster, loading the model);
       and, as a control, one process encoding the 100,000 lines with 1 and with 2 engine threads.

Every run is a fresh process with OPENBLAS_CORETYPE removed from its environment (as on a user's machine);
the variants take turns within each round, and each figure is the median over rounds.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
WORDS = ("the cat sat on a mat while dogs bark at night and birds sing in the morning light over green "
         "hills where people walk slowly to an old house by the river").split()

CALL_CHILD = """
import statistics, sys, time
import ordo
ordo.set_num_threads(int(sys.argv[4]))
m = ordo.Model(sys.argv[1])
texts = [sys.argv[2]]
for _ in range(1000):
    m.encode(texts)
ts, clock = [], time.perf_counter_ns
for _ in range(int(sys.argv[3])):
    t0 = clock()
    m.encode(texts)
    ts.append(clock() - t0)
print(statistics.median(ts) / 1000)
"""

LINES_CHILD = """
import sys
import numpy as np
import ordo
if len(sys.argv) > 4:
    ordo.set_num_threads(int(sys.argv[4]))
m = ordo.Model(sys.argv[1])
with open(sys.argv[2], encoding="utf-8") as f:
    lines = f.read().splitlines()
np.save(sys.argv[3], m.encode(lines, batch_size=64))
"""


def env(build):
    e = dict(os.environ, PYTHONPATH=os.path.join(build, "python"))
    e.pop("OPENBLAS_CORETYPE", None)
    e.pop("ORDO_MODEL", None)
    return e


def write_lines(path, n, seed=1):
    rng = np.random.default_rng(seed)
    with open(path, "w") as f:
        for _ in range(n):
            f.write(" ".join(rng.choice(WORDS, size=rng.integers(3, 13))) + "\n")


def wall(cmd, e):
    t0 = time.perf_counter()
    subprocess.run(cmd, check=True, env=e, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - t0


def bench_call(build, model, rounds, e, threads):
    text, calls = "a short text", 20000
    lib, fwd, py = [], [], []
    for _ in range(rounds):
        out = subprocess.run([os.path.join(build, "bench_call"), model, text, str(calls), str(threads)], check=True,
                             env=e, capture_output=True, text=True).stdout
        j = json.loads(out)
        lib.append(j["encode_us_median"])
        fwd.append(j["forward_us_median"])
        py.append(float(subprocess.run([sys.executable, "-c", CALL_CHILD, model, text, str(calls), str(threads)],
                                       check=True, env=e, capture_output=True, text=True).stdout))
    m = {k: statistics.median(v) for k, v in (("python", py), ("library", lib), ("forward", fwd))}
    print(f"call, {threads} engine thread(s): Model.encode([{text!r}]) {m['python']:.1f} us, Pipeline::encode "
          f"{m['library']:.1f} us, Encoder::forward {m['forward']:.1f} us (medians of {rounds} processes x {calls} "
          "calls)")
    print(f"      overhead of the binding: {m['python'] - m['library']:.1f} us; over the forward pass alone "
          f"(tokenizing and pooling included): {m['python'] - m['forward']:.1f} us")


def bench_lines(build, model, rounds, e, tmp):
    path, n = os.path.join(tmp, "lines.txt"), 50000
    write_lines(path, n)
    cli, py = [], []
    for _ in range(rounds):
        cli.append(wall([os.path.join(build, "ordo"), "encode", "--model", model, "--input", path, "--format", "npy",
                         "--output", os.path.join(tmp, "cli.npy")], e))
        py.append(wall([sys.executable, "-c", LINES_CHILD, model, path, os.path.join(tmp, "py.npy")], e))
    a, b = np.load(os.path.join(tmp, "cli.npy")), np.load(os.path.join(tmp, "py.npy"))
    c, p = statistics.median(cli), statistics.median(py)
    print(f"lines: {n} lines, ordo encode --format npy {c:.2f} s, Python {p:.2f} s ({100 * (p / c - 1):+.1f}%); "
          f"max |diff| {np.abs(a - b).max():.2g} (medians of {rounds} processes each)")


def bench_dask(build, model, rounds, e, tmp):
    path, n = os.path.join(tmp, "dask.txt"), 100000
    small, n_small = os.path.join(tmp, "dask_small.txt"), 1000  # the fixed cost: cluster start, model loads
    write_lines(path, n, seed=2)
    write_lines(small, n_small, seed=2)
    script = os.path.join(ROOT, "python", "examples", "dask_encode.py")
    times = {(f, w): [] for f in (path, small, "threads") for w in (1, 2)}
    for _ in range(rounds):
        for f in (path, small):
            for workers in (1, 2):
                times[f, workers].append(wall([sys.executable, script, f, "--model", model, "--out",
                                               os.path.join(tmp, f"out{workers}"), "--workers", str(workers)], e))
        for threads in (1, 2):  # the control: one process, the engine's threads instead of workers
            times["threads", threads].append(wall([sys.executable, "-c", LINES_CHILD, model, path,
                                                   os.path.join(tmp, "py.npy"), str(threads)], e))
    t = {k: statistics.median(v) for k, v in times.items()}
    one, two = t[path, 1], t[path, 2]
    print(f"dask: {n} lines, 1 worker {one:.2f} s ({n / one:.0f} lines/s), 2 workers {two:.2f} s "
          f"({n / two:.0f} lines/s): {one / two:.2f}x (medians of {rounds} runs each)")
    print(f"      {n_small} lines (the fixed cost): 1 worker {t[small, 1]:.2f} s, 2 workers {t[small, 2]:.2f} s; "
          f"without it: {(one - t[small, 1]) / (two - t[small, 2]):.2f}x")
    print(f"      one process, Model.encode: 1 engine thread {t['threads', 1]:.2f} s, 2 threads "
          f"{t['threads', 2]:.2f} s: {t['threads', 1] / t['threads', 2]:.2f}x; load average {os.getloadavg()[0]:.1f}")


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--build", default=os.path.join(ROOT, "build"))
    p.add_argument("--model", default=None, help="model directory (default: the build's default model)")
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--only", default="call,lines,dask")
    p.add_argument("--call-threads", type=int, default=1,
                   help="engine threads for the call figure (default 1: a tiny pass gains nothing from a second "
                        "thread, and waking one costs a scheduler slice on a busy machine)")
    args = p.parse_args()
    build = os.path.abspath(args.build)
    model = args.model or os.path.join(build, "models", "default")
    e = env(build)
    with tempfile.TemporaryDirectory() as tmp:
        for part in args.only.split(","):
            {"call": lambda: bench_call(build, model, args.rounds, e, args.call_threads),
             "lines": lambda: bench_lines(build, model, args.rounds, e, tmp),
             "dask": lambda: bench_dask(build, model, args.rounds, e, tmp)}[part]()
            sys.stdout.flush()


if __name__ == "__main__":
    main()
