#!/usr/bin/python3
"""`ordo encode --format npy` read by NumPy: numpy.load gives float32 of shape (texts, d), or
(total tokens, d) with --pooling none, equal to the JSON output's floats; npy to a terminal is
refused. Exit 77 (skipped) where NumPy is not installed.

    tests/python/test_npy.py --ordo build/ordo --model build/models/default"""

import argparse
import io
import json
import os
import pty
import subprocess
import sys
import tempfile

try:
    import numpy as np
except ImportError as e:
    print(f"skipped: {e}")
    sys.exit(77)

TEXTS = ["the cat sat on the mat", "a", "", "dogs bark at night"]


def run(ordo, args, stdin=b"", stdout=subprocess.PIPE):
    return subprocess.run([ordo, *args], input=stdin, stdout=stdout, stderr=subprocess.PIPE)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ordo", required=True)
    ap.add_argument("--model", required=True)
    a = ap.parse_args()
    stdin = ("\n".join(TEXTS) + "\n").encode()
    failures = 0

    def check(ok, what):
        nonlocal failures
        if not ok:
            failures += 1
            print(f"FAIL: {what}")

    for pooling in ["mean", "max", "none"]:
        base = ["encode", "--model", a.model, "--pooling", pooling]
        js = [json.loads(line) for line in run(a.ordo, base + ["--json"], stdin).stdout.splitlines()]
        if pooling == "none":
            want = np.array([row for j in js for row in j["hidden"]], dtype=np.float32)
        else:
            d = len(js[0]["embedding"])
            want = np.array([j["embedding"] if j["embedding"] is not None else [np.nan] * d for j in js],
                            dtype=np.float32)
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "out.npy")
            r = run(a.ordo, base + ["--format", "npy", "--output", path], stdin)
            check(r.returncode == 0, f"{pooling}: exit {r.returncode}: {r.stderr.decode()}")
            got = np.load(path)
        check(got.dtype == np.dtype("<f4"), f"{pooling}: dtype {got.dtype}")
        check(got.flags["C_CONTIGUOUS"], f"{pooling}: C order")
        check(got.shape == want.shape, f"{pooling}: shape {got.shape}, JSON has {want.shape}")
        if got.shape == want.shape:
            check(np.array_equal(got, want, equal_nan=True), f"{pooling}: values differ from the JSON output's")
        piped = run(a.ordo, base + ["--format", "npy"], stdin)
        check(np.array_equal(np.load(io.BytesIO(piped.stdout)), got, equal_nan=True),
              f"{pooling}: stdout differs from --output")
        print(f"--pooling {pooling}: shape {got.shape}, equal to the JSON floats")

    # stdout a terminal: refused, one error line, nothing written.
    leader, follower = pty.openpty()
    r = run(a.ordo, ["encode", "--model", a.model, "--format", "npy", "hello"], stdout=follower)
    os.close(follower)
    os.set_blocking(leader, False)
    try:
        shown = os.read(leader, 4096)
    except (BlockingIOError, OSError):
        shown = b""
    os.close(leader)
    err = r.stderr.decode()
    check(r.returncode == 2 and err.startswith("error: ordo encode: --format npy") and err.count("\n") == 1,
          f"npy to a terminal: exit {r.returncode}, stderr {err!r}")
    check(shown == b"", f"npy to a terminal wrote {shown[:40]!r}")

    print("ok" if failures == 0 else f"{failures} failures")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
