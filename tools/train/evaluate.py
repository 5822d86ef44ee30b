#!/usr/bin/python3
"""Held-out evaluation of a masked language model, by the rule `ordo eval` follows.

    tools/train/evaluate.py MODEL_DIR [MODEL_DIR ...] [--input FILE] [--long FILE] [--no-pe] [--json]

The rule (each text is one line of the input file, tokenized with the model's tokenizer, no BOS/EOS;
i is the line's 0-based index in the file):
  - The random numbers of line i come from SplitMix64 seeded with SEED + i (ordo's Rng: state += 0x9e37
    79b97f4a7c15, then the two xor-shift-multiply rounds); next() % n picks one of n.
  - Masking: k = max(1, floor(0.15·L + 0.5)) of the L positions, chosen by the first k steps of a
    Fisher–Yates shuffle of 0..L-1 (for j = 0..k-1: r = j + next() % (L - j); swap p[j], p[r]; the
    chosen are p[0..k)). Every chosen position is replaced by <mask> at once; a hit is the true id
    being the top-1 (or among the top-5) of the head's logits over the whole vocabulary there.
  - Order, on lines of 5..20 pieces, with the same generator continuing after the masking draws:
    shuffle: p = 0..L-1; for j = L-1 down to 1: r = next() % (j + 1); swap p[j], p[r]; if the
      shuffled ids equal the natural ones, shuffle p again (at most 100 times; a line that stays
      equal, all pieces the same, is left out);
    swap: c = the positions j with ids[j] != ids[j+1]; one of them, c[next() % len(c)], is swapped
      with the next piece (a line with none is left out).
    A text's score is its pseudo-log-likelihood: mask each position in turn, sum log p(true piece).
    The natural order is preferred when its score is strictly higher; equal scores are ties.
  - Long texts (--long): masked by the same rule; hits counted by position bucket of 32.
  - A model with learned positions cannot run past its last row: texts longer than max_positions
    are left out and counted as such.
"""

import argparse
import json
import math
import os
import sys

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
import mlm  # noqa: E402

SEED = 20170612
MASK_FRACTION = 0.15
ORDER_MIN, ORDER_MAX = 5, 20
M64 = (1 << 64) - 1


class SplitMix64:
    def __init__(self, seed):
        self.state = seed & M64

    def next(self):
        self.state = (self.state + 0x9E3779B97F4A7C15) & M64
        z = self.state
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & M64
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & M64
        return z ^ (z >> 31)


def mask_positions(L, rng):
    k = max(1, math.floor(MASK_FRACTION * L + 0.5))
    p = list(range(L))
    for j in range(k):
        r = j + rng.next() % (L - j)
        p[j], p[r] = p[r], p[j]
    return sorted(p[:k])


def shuffled(ids, rng):
    for _ in range(100):
        p = list(range(len(ids)))
        for j in range(len(ids) - 1, 0, -1):
            r = rng.next() % (j + 1)
            p[j], p[r] = p[r], p[j]
        out = [ids[i] for i in p]
        if out != ids:
            return out
    return None


def swapped(ids, rng):
    c = [j for j in range(len(ids) - 1) if ids[j] != ids[j + 1]]
    if not c:
        return None
    j = c[rng.next() % len(c)]
    out = list(ids)
    out[j], out[j + 1] = out[j + 1], out[j]
    return out


def _limit(model, max_len):
    """Learned positions end at the table's last row."""
    if model.positions == "learned":
        rows = model.position_embedding.weight.shape[0]
        return rows if max_len is None else min(rows, max_len)
    return max_len


def _batches(items, size):
    for s in range(0, len(items), size):
        yield items[s:s + size]


def _run(model, seqs, use_positions):
    """Runs id lists (one padded batch); returns h (B, S, d)."""
    ids, pad = mlm.batch_tensors(seqs)
    return model.hidden(ids, pad if len(seqs) > 1 else None, use_positions)


@torch.no_grad()
def masked_accuracy(model, texts_ids, mask_id, use_positions=True, max_len=None, bucket=None, batch=64):
    """{"top1", "top5", "masked", "texts", "left_out", and "buckets" when bucket is set}."""
    jobs = []  # (masked ids, positions, true ids)
    left_out = 0
    max_len = _limit(model, max_len)
    for i, ids in enumerate(texts_ids):
        if max_len is not None and len(ids) > max_len:
            left_out += 1
            continue
        pos = mask_positions(len(ids), SplitMix64(SEED + i))
        x = list(ids)
        for p in pos:
            x[p] = mask_id
        jobs.append((x, pos, [ids[p] for p in pos]))
    jobs.sort(key=lambda j: len(j[0]))
    hit1 = hit5 = total = 0
    buckets = {}
    for group in _batches(jobs, batch):
        h = _run(model, [j[0] for j in group], use_positions)
        rows = torch.cat([h[b, j[1]] for b, j in enumerate(group)])
        truth = torch.tensor([t for j in group for t in j[2]])
        top = model.logits(rows).topk(5, dim=-1).indices
        h1 = (top[:, 0] == truth)
        h5 = (top == truth[:, None]).any(-1)
        hit1 += int(h1.sum())
        hit5 += int(h5.sum())
        total += len(truth)
        if bucket:
            positions = [p for j in group for p in j[1]]
            for p, a, b in zip(positions, h1.tolist(), h5.tolist()):
                e = buckets.setdefault(p // bucket * bucket, [0, 0, 0])
                e[0] += a
                e[1] += b
                e[2] += 1
    out = {"top1": hit1 / max(total, 1), "top5": hit5 / max(total, 1), "masked": total, "texts": len(jobs),
           "left_out": left_out}
    if bucket:
        out["buckets"] = [{"from": k, "to": k + bucket - 1, "top1": v[0] / v[2], "top5": v[1] / v[2], "masked": v[2]}
                          for k, v in sorted(buckets.items())]
    return out


@torch.no_grad()
def pll(model, seqs, mask_id, use_positions=True, batch=512):
    """Pseudo-log-likelihood of each id list: S masked copies each, run as batches."""
    copies = []  # (text index, position, masked ids, true id)
    for t, ids in enumerate(seqs):
        for p in range(len(ids)):
            x = list(ids)
            x[p] = mask_id
            copies.append((t, p, x, ids[p]))
    out = np.zeros(len(seqs))
    for group in _batches(copies, batch):
        h = _run(model, [c[2] for c in group], use_positions)
        rows = h[torch.arange(len(group)), torch.tensor([c[1] for c in group])]
        logp = torch.log_softmax(model.logits(rows).double(), dim=-1)
        lp = logp[torch.arange(len(group)), torch.tensor([c[3] for c in group])]
        for c, v in zip(group, lp.tolist()):
            out[c[0]] += v
    return out


def order_preferences(model, texts_ids, mask_id, use_positions=True, max_len=None):
    """{"shuffle": {...}, "swap": {...}} each with preferred, ties, other (reordered scored higher), lines."""
    naturals, shuffles, swaps = [], [], []
    max_len = _limit(model, max_len)
    for i, ids in enumerate(texts_ids):
        if not (ORDER_MIN <= len(ids) <= ORDER_MAX) or (max_len is not None and len(ids) > max_len):
            continue
        rng = SplitMix64(SEED + i)
        mask_positions(len(ids), rng)  # the masking draws come first
        naturals.append(ids)
        shuffles.append(shuffled(ids, rng))
        swaps.append(swapped(ids, rng))
    nat = pll(model, naturals, mask_id, use_positions)
    result = {}
    for name, others in (("shuffle", shuffles), ("swap", swaps)):
        keep = [k for k, o in enumerate(others) if o is not None]
        scores = pll(model, [others[k] for k in keep], mask_id, use_positions)
        n = nat[keep]
        diff = n - scores
        result[name] = {"lines": len(keep), "preferred": int((diff > 0).sum()), "ties": int((diff == 0).sum()),
                        "other": int((diff < 0).sum()), "preferred_share": float((diff > 0).mean()),
                        "max_abs_difference": float(np.abs(diff).max()) if len(keep) else 0.0}
    return result


def read_lines(path):
    with open(path, encoding="utf-8") as f:
        return [line.rstrip("\n") for line in f]


def evaluate(model, sp, heldout, long=None, use_positions=True, order=True):
    mask_id = sp.PieceToId("<mask>")
    max_len = _limit(model, None)
    texts = sp.EncodeAsIds(read_lines(heldout))
    out = {"heldout": masked_accuracy(model, texts, mask_id, use_positions, max_len)}
    if order:
        out["order"] = order_preferences(model, texts, mask_id, use_positions, max_len)
    if long is not None:
        out["long"] = masked_accuracy(model, sp.EncodeAsIds(read_lines(long)), mask_id, use_positions, max_len,
                                      bucket=32)
    return out


def main(argv=None):
    import sentencepiece as spm

    p = argparse.ArgumentParser(description="Held-out masked accuracy and order preferences of ordo MLM models.")
    p.add_argument("models", nargs="+")
    p.add_argument("--input", default=os.path.join(ROOT, "models", "heldout", "wordnet-heldout.txt"))
    p.add_argument("--long", default=os.path.join(ROOT, "models", "heldout", "wordnet-heldout-long.txt"))
    p.add_argument("--no-pe", action="store_true", help="run without positions")
    p.add_argument("--json", action="store_true")
    a = p.parse_args(argv)
    torch.set_num_threads(1)
    results = {}
    for d in a.models:
        model = mlm.load(d)
        sp = spm.SentencePieceProcessor(model_file=os.path.join(d, "tokenizer.model"))
        r = results[d] = evaluate(model, sp, a.input, a.long, not a.no_pe)
        if not a.json:
            h, o = r["heldout"], r["order"]
            print(f"{d}: held-out top-1 {100 * h['top1']:.1f}%, top-5 {100 * h['top5']:.1f}% "
                  f"({h['masked']} masked pieces in {h['texts']} lines, {h['left_out']} lines left out); "
                  f"natural order preferred over a shuffle on {100 * o['shuffle']['preferred_share']:.1f}% "
                  f"({o['shuffle']['ties']} ties), over one adjacent swap on "
                  f"{100 * o['swap']['preferred_share']:.1f}% ({o['swap']['ties']} ties) of "
                  f"{o['shuffle']['lines']} lines of {ORDER_MIN}-{ORDER_MAX} pieces")
            lg = r["long"]
            if lg["texts"]:
                print("  long texts, top-1 by position: " + ", ".join(
                    f"{b['from']}-{b['to']}: {100 * b['top1']:.1f}%" for b in lg["buckets"]))
            else:
                print(f"  long texts: none can run ({lg['left_out']} are longer than the model's positions)")
    if a.json:
        print(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
