#!/usr/bin/python3
"""ordo's masked-language-model head against the PyTorch module that trained it (tools/train/mlm.py).

    tests/python/test_mlm_parity.py --ordo build/ordo [--model DIR ...] [--train]

--train: runs tools/train/train_mlm.py for a few dozen steps on a small slice of WordNet, checks that
  the loss falls, and holds ordo to the module it wrote.
--model DIR: a committed model (models/default, ...); skipped (not an error) when DIR has no head.
--random rope|alibi|alibi-symmetric|...: a module of that positional encoding with random weights (every
  parameter drawn, biases and LayerNorms included, so that a wrong wire shows), exported and checked the
  same way; alibi and alibi-symmetric also with 3 heads (slopes of a head count that is not a power of two);
  t5-buckets with ordo's 32 buckets to distance 32 and with 16 buckets to distance 10, on a long text too
  (40+ pieces: offsets past max_distance, in the last bucket of either side).

For each model, texts with <mask> markers go through `ordo fill --json --logits` (with and without
positions); ordo's ids are fed to the module rebuilt from the same directory (mlm.load) and every
logit at every mask must satisfy |ordo - torch| <= 2e-5 * max(1, max |torch|). `ordo score --json`'s
log-probabilities are held to the module's log-softmax (float64) at each masked copy, to 1e-4.
Exit 77 (skipped) where PyTorch or the training data is not installed.
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
TRAIN = os.path.join(ROOT, "tools", "train")

try:
    import numpy as np
    import torch
except ImportError as e:
    print(f"skipped: {e}")
    sys.exit(77)
sys.path.insert(0, TRAIN)
import mlm  # noqa: E402
import relative_positions  # noqa: E402  (tools/pytorch/, on the path mlm puts it on)

TEXTS = [
    "the cat sat on the <mask>.",
    "<mask> dog ran to the red house",
    "a small <mask> crossed the quiet <mask>",
    "she read a book under the tree <mask>",
    "caf\u00e9 <mask> \u732b",  # byte pieces
    "<mask>",
]
# t5-buckets only (the learned models cannot run past 32 pieces): offsets beyond max_distance
LONG = ["the old house at the end of the lane had stood empty for many years before a family of five came "
        "to live in it and the <mask> of the village were glad to see smoke rise from its <mask> again"]
SCORED = ["the cat sat on the mat.", "the mat sat on the cat.", "birds sing in the morning", "x"]
TOLERANCE = 2e-5


def run(ordo, *args):
    r = subprocess.run([ordo, *args], capture_output=True, text=True)
    if r.returncode != 0:
        raise AssertionError(f"ordo {' '.join(args)} exited {r.returncode}: {r.stderr}")
    return r.stdout


def check_model(ordo, model_dir):
    if not os.path.exists(os.path.join(model_dir, "model.safetensors")):
        print(f"{model_dir}: no weights committed, skipped")
        return 0
    with open(os.path.join(model_dir, "config.json")) as f:
        if json.load(f).get("head") != "mlm":
            print(f"{model_dir}: no head, skipped")
            return 0
    module = mlm.load(model_dir)
    mask = mask_id(model_dir)
    with open(os.path.join(model_dir, "config.json")) as f:
        texts = TEXTS + (LONG if json.load(f)["positional_encoding"] == "t5-buckets" else [])
    worst, worst_lp, n = 0.0, 0.0, 0
    for positions in (True, False):
        flags = [] if positions else ["--no-pe"]
        for text in texts:
            out = json.loads(run(ordo, "fill", "--json", "--logits", "--top", "3", "--model", model_dir, text, *flags))
            ids = torch.tensor([out["ids"]])
            with torch.no_grad():
                want = module.logits(module.hidden(ids, use_positions=positions))[0].double().numpy()
            for m in out["masks"]:
                got = np.array(m["logits"], dtype=np.float64)
                y = want[m["position"]]
                err = np.max(np.abs(got - y)) / max(1.0, np.max(np.abs(y)))
                worst = max(worst, err)
                n += 1
                if err > TOLERANCE:
                    raise AssertionError(f"{model_dir} {text!r} positions={positions} mask at {m['position']}: "
                                         f"max |ordo - torch| / max(1, |torch|) = {err:.3g}")
                # The top pieces are the torch logits' top (ties aside).
                top = [g["id"] for g in m["top"]]
                order = np.argsort(-y, kind="stable")[:3].tolist()
                if top[0] != order[0] and abs(y[top[0]] - y[order[0]]) > 1e-4:
                    raise AssertionError(f"{model_dir} {text!r}: top piece {top[0]}, torch's {order[0]}")
        for s in json.loads("[" + ",".join(run(ordo, "score", "--json", "--model", model_dir, *SCORED,
                                               *flags).splitlines()) + "]"):
            ids = s["ids"]
            copies = torch.tensor([ids] * len(ids))
            for t in range(len(ids)):
                copies[t, t] = mask
            with torch.no_grad():
                z = module.logits(module.hidden(copies, use_positions=positions)).double()
            lp = torch.log_softmax(z, dim=-1)
            want = [lp[t, t, ids[t]].item() for t in range(len(ids))]
            err = max((abs(a - b) for a, b in zip(s["log_probs"], want)), default=0.0)
            worst_lp = max(worst_lp, err)
            if err > 1e-4 or abs(s["pll"] - sum(want)) > 1e-4 * max(1.0, abs(sum(want))):
                raise AssertionError(f"{model_dir} {s['text']!r} positions={positions}: log-probs differ by {err:.3g}")
    print(f"{model_dir}: {n} masked rows, max |ordo - torch| logits {worst:.2e} (relative), "
          f"log-probs {worst_lp:.2e}")
    return n


def mask_id(model_dir):
    import sentencepiece as spm
    sp = spm.SentencePieceProcessor(model_file=os.path.join(model_dir, "tokenizer.model"))
    return sp.PieceToId("<mask>")


def train_small(tmp):
    """A few dozen steps on a small slice; the loss must fall."""
    if not os.path.exists("/usr/share/wordnet/data.noun"):
        print("skipped: WordNet is not installed (apt-get install wordnet-base)")
        sys.exit(77)
    out = os.path.join(tmp, "trained")
    r = subprocess.run([sys.executable, os.path.join(TRAIN, "train_mlm.py"), "--lines", "300", "--steps", "40",
                        "--log-every", "10", "--eval-lines", "20", "--no-final-eval", "--out", out],
                       capture_output=True, text=True, timeout=900)
    if r.returncode != 0:
        raise AssertionError("train_mlm.py failed:\n" + r.stdout + r.stderr)
    with open(os.path.join(out, "train.log")) as f:
        losses = [float(line.split()[3]) for line in f if line.startswith("step")]
    print(f"trained 40 steps: loss {' -> '.join(f'{x:.3f}' for x in losses)}")
    if len(losses) != 4 or any(b >= a for a, b in zip(losses, losses[1:])) or not losses[-1] < losses[0] - 0.3:
        raise AssertionError(f"the loss should fall at every log line over 40 steps: {losses}")
    return out


def random_model(tmp, positions, n_heads, seed, buckets=(32, 32), slopes=None):
    """A MaskedLM with every parameter drawn, exported to tmp/<positions>-<n_heads>[-<buckets>-<distance>]
    [-slopes]; t5-buckets' table N(0, 1), so that a bucket read wrong moves the scores; `slopes`: ALiBi's
    slopes given per head (config.json's alibi_slopes)."""
    sys.path.insert(0, os.path.join(ROOT, "tools", "pytorch"))
    from export_pytorch import export
    torch.manual_seed(seed)
    tokenizer = os.path.join(ROOT, "models", "default", "tokenizer.model")
    m = mlm.MaskedLM(8000, 8 * n_heads, n_heads, 48, 2, positions, 32, num_buckets=buckets[0], max_distance=buckets[1],
                     alibi_slopes=slopes)
    with torch.no_grad():
        for name, p in m.named_parameters():
            if "embedding" in name:
                continue
            p.add_(torch.randn_like(p) * (1.0 if name == "position_bias" else 0.3 if p.dim() == 1 else 0.1))
    out = os.path.join(tmp, f"{positions}-{n_heads}" + (f"-{buckets[0]}-{buckets[1]}" if m.position_bias is not None
                                                        else "") + ("-slopes" if slopes else ""))
    export(m.encoder, m.embedding, out, tokenizer=tokenizer, positional_encoding=positions, scale_embedding=True,
           position_embedding=m.position_embedding, head=m.head, position_bias=m.position_bias,
           max_distance=buckets[1] if m.position_bias is not None else None)
    return out


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--ordo", required=True)
    p.add_argument("--model", action="append", default=[])
    p.add_argument("--train", action="store_true")
    p.add_argument("--random", action="append", default=[], choices=("sinusoidal", "learned", "none", "rope", "alibi-pairs", "alibi-symmetric", "alibi",
                                                                        "t5-buckets"))
    a = p.parse_args()
    torch.set_num_threads(1)
    checked = 0
    with tempfile.TemporaryDirectory() as tmp:
        if a.train:
            checked += check_model(a.ordo, train_small(tmp))
        for k, positions in enumerate(a.random):
            if positions == "t5-buckets":
                for buckets in ((32, 32), (16, 10)):
                    checked += check_model(a.ordo, random_model(tmp, positions, 4, 1000 + k, buckets))
                continue
            for heads in (4, 3) if positions.startswith("alibi") else (4,):
                checked += check_model(a.ordo, random_model(tmp, positions, heads, 1000 + k))
            if positions.startswith("alibi"):  # slopes given: a pair per slope of the 4-head set (8 heads)
                slopes = relative_positions.all_slopes_in_pairs(8)
                if positions == "alibi-symmetric":  # any positive slope per head, not in order
                    slopes = [0.5, 0.03, 0.25, 0.004, 0.125, 0.0625, 0.01, 0.3]
                checked += check_model(a.ordo, random_model(tmp, positions, 8, 2000 + k, slopes=slopes))
        for d in a.model:
            checked += check_model(a.ordo, d)
    if checked == 0:
        print("skipped: no model with a head to check")
        return 77
    return 0


if __name__ == "__main__":
    sys.exit(main())
