#!/usr/bin/python3
"""`ordo eval` against the Python reference of the same rule (tools/train/evaluate.py), on the committed
models and the first held-out lines: the same masked pieces, the same hits, the same order counts, the
same counts by position.

    tests/python/test_eval_parity.py --ordo build/ordo

Python runs the model in float32 (PyTorch), ordo in its own kernels: a masked piece whose true logit
is within float rounding of the 1st or 5th largest, or an order pair whose scores differ by less than
rounding, may land on the other side in the two. Such near-ties are found from the Python side's own
numbers and allowed; every other count must be equal. Exit 77 (skipped) where PyTorch is not
installed."""

import argparse
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
MODELS = os.path.join(ROOT, "models")

try:
    import sentencepiece as spm
    import torch
except ImportError as e:
    print(f"skipped: {e}")
    sys.exit(77)

sys.path.insert(0, os.path.join(ROOT, "tools", "train"))
import evaluate  # noqa: E402
import mlm  # noqa: E402

LINES = 400  # held-out lines (about 270 of them 5-20 pieces)
LONG = 12  # long texts
NEAR = 1e-4  # a logit or score gap below this counts as a near-tie


@torch.no_grad()
def near_ties_masked(model, texts, mask_id, limit):
    """Masked pieces whose true logit is within NEAR of the 1st or the 5th largest (Python's logits)."""
    n = 0
    for i, ids in enumerate(texts):
        if limit is not None and len(ids) > limit:
            continue
        pos = evaluate.mask_positions(len(ids), evaluate.SplitMix64(evaluate.SEED + i))
        x = list(ids)
        for p in pos:
            x[p] = mask_id
        h = evaluate._run(model, [x], True)
        z = model.logits(h[0, pos]).double()
        top = z.topk(6, dim=-1).values
        for k, p in enumerate(pos):
            t = z[k, ids[p]]
            if abs(t - top[k, 0]) < NEAR or abs(t - top[k, 4]) < NEAR or abs(t - top[k, 5]) < NEAR:
                n += 1
    return n


def read_lines(path, n):
    with open(path, encoding="utf-8") as f:
        return [line.rstrip("\n") for _, line in zip(range(n), f)]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ordo", required=True)
    a = ap.parse_args()
    torch.set_num_threads(1)
    failures = []
    with tempfile.TemporaryDirectory() as tmp:
        files = {}
        for name, src, n in (("heldout", "wordnet-heldout.txt", LINES), ("long", "wordnet-heldout-long.txt", LONG)):
            files[name] = os.path.join(tmp, src)
            with open(files[name], "w", encoding="utf-8") as f:
                f.write("\n".join(read_lines(os.path.join(MODELS, "heldout", src), n)) + "\n")
        for model_name in ("default", "position-learned", "position-none"):
            d = os.path.join(MODELS, model_name)
            model = mlm.load(d)
            sp = spm.SentencePieceProcessor(model_file=os.path.join(d, "tokenizer.model"))
            mask_id = sp.PieceToId("<mask>")
            limit = evaluate._limit(model, None)
            for name, path in files.items():
                texts = sp.EncodeAsIds(read_lines(path, 10**6))
                out = subprocess.run([a.ordo, "eval", "--json", "--model", d, "--input", path], capture_output=True,
                                     text=True, check=True).stdout
                got = json.loads(out)["models"][0]
                want = evaluate.masked_accuracy(model, texts, mask_id, True, limit, bucket=32)
                slack = near_ties_masked(model, texts, mask_id, limit)

                def check(what, x, y, allowed=0):
                    status = "ok" if abs(x - y) <= allowed else "DIFFERENT"
                    print(f"{model_name:17s} {name:8s} {what:28s} ordo {x:8}  python {y:8}  {status}")
                    if status != "ok":
                        failures.append(f"{model_name} {name} {what}: ordo {x}, python {y}")

                check("masked pieces", got["masked"], want["masked"])
                check("lines left out", got["left_out"], want["left_out"])
                check("top-1 hits", got["top1_hits"], round(want["top1"] * want["masked"]), slack)
                check("top-5 hits", got["top5_hits"], round(want["top5"] * want["masked"]), slack)
                for gb, wb in zip(got["buckets"], want.get("buckets", [])):
                    check(f"bucket {wb['from']}-{wb['to']} masked", gb["masked"], wb["masked"])
                    check(f"bucket {wb['from']}-{wb['to']} top-1 hits", gb["top1_hits"],
                          round(wb["top1"] * wb["masked"]), slack)
                check("buckets", len(got["buckets"]), len(want.get("buckets", [])))
                if name != "heldout":
                    continue
                order = evaluate.order_preferences(model, texts, mask_id, True, limit)
                for test in ("shuffle", "swap"):
                    g, w = got["order"][test], order[test]
                    check(f"{test}: lines", g["lines"], w["lines"])
                    if model.positions == "none":
                        # ordo: exact ties. Python: the same up to float32 summation order.
                        check(f"{test}: ties (all)", g["ties"], g["lines"])
                        check(f"{test}: python |diff| < 1e-3", int(w["max_abs_difference"] < 1e-3), 1)
                    else:
                        near = near_order_pairs(model, texts, mask_id, test)
                        check(f"{test}: preferred", g["preferred"], w["preferred"], near)
                        check(f"{test}: other", g["other"], w["other"], near)
    if failures:
        print("\n".join(["FAILED:"] + failures))
        return 1
    return 0


def near_order_pairs(model, texts, mask_id, test):
    """Order pairs whose Python scores differ by less than NEAR."""
    naturals, others = [], []
    for i, ids in enumerate(texts):
        if not (evaluate.ORDER_MIN <= len(ids) <= evaluate.ORDER_MAX):
            continue
        rng = evaluate.SplitMix64(evaluate.SEED + i)
        evaluate.mask_positions(len(ids), rng)
        sh = evaluate.shuffled(ids, rng)
        sw = evaluate.swapped(ids, rng)
        other = sh if test == "shuffle" else sw
        if other is not None:
            naturals.append(ids)
            others.append(other)
    diff = evaluate.pll(model, naturals, mask_id) - evaluate.pll(model, others, mask_id)
    return int((abs(diff) < NEAR).sum())


if __name__ == "__main__":
    sys.exit(main())
