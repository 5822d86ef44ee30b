#!/usr/bin/python3
"""The progress line of `ordo encode` and `ordo score` on a terminal, and nothing of it elsewhere.

    tests/cli/test_progress.py --ordo build/ordo --model build/models/default

stderr is a pseudo-terminal (pty): `encode --input FILE` of 3,000 lines shows "encoded N texts, P% of
FILE, R texts/s" (and its last count is the whole file); `score` of a text of 200 pieces or more says what
it is scoring. With stderr a pipe, neither prints a thing of it (a log file gets no control characters)."""
import argparse
import os
import pty
import re
import subprocess
import sys
import tempfile


def run(cmd, tty):
    """(status, what reached stderr) with stderr a pty (tty=True) or a pipe."""
    if not tty:
        p = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        return p.returncode, p.stderr.decode("utf-8", "replace")
    main, sub = pty.openpty()
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=sub)
    os.close(sub)
    got = b""
    while True:
        try:
            chunk = os.read(main, 4096)
        except OSError:  # EIO: the other end closed
            break
        if not chunk:
            break
        got += chunk
    os.close(main)
    return p.wait(), got.decode("utf-8", "replace")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ordo", required=True)
    ap.add_argument("--model", required=True)
    args = ap.parse_args()
    failures = []

    def check(ok, what):
        print(("ok   " if ok else "FAIL ") + what)
        if not ok:
            failures.append(what)

    with tempfile.TemporaryDirectory() as work:
        lines = os.path.join(work, "lines.txt")
        with open(lines, "w") as f:
            f.writelines(f"the cat sat on the mat {i}\n" for i in range(3000))
        encode = [args.ordo, "encode", "--model", args.model, "--input", lines, "--format", "npy", "--output",
                  os.path.join(work, "v.npy")]
        status, err = run(encode, tty=True)
        counts = [int(n) for n in re.findall(r"encoded (\d+) texts", err)]
        check(status == 0, f"encode on a terminal runs (status {status}: {err[-300:]!r})")
        check(counts != [] and max(counts) == 3000, f"... and counts up to the whole file, 3000 (got {counts})")
        check(re.search(r"encoded \d+ texts, \d+% of [^,]*lines\.txt, \d+ texts/s", err) is not None,
              f"... with the share of the file and the rate ({err[:200]!r})")
        status, err = run(encode, tty=False)
        check(status == 0 and "encoded" not in err and "\r" not in err,
              f"encode into a pipe: no progress line (got {err[:200]!r})")

        long_text = " ".join(["cat"] * 210)
        score = [args.ordo, "score", "--model", args.model, long_text]
        status, err = run(score, tty=True)
        check(status == 0 and "scor" in err.lower(), f"score of 210 pieces on a terminal says so ({err[:200]!r})")
        status, err = run(score, tty=False)
        check(status == 0 and err == "", f"score into a pipe: nothing on stderr (got {err[:200]!r})")
    if failures:
        print(f"{len(failures)} failed", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
