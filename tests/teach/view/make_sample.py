#!/usr/bin/python3
"""Writes sample.json, a small page's worth of data in the format of `ordo view` ("ordo-view/1"), from a
tiny random encoder computed here in float64: 2 layers x 2 heads, d = 8, a masked-LM head over a vocabulary
of 12 words. It lets the page be tested with parts the default model may not have (mask predictions).

    tests/teach/view/make_sample.py > tests/teach/view/sample.json
"""
import json
import math
import sys

import numpy as np

VOCAB = ["<unk>", "<s>", "</s>", "<mask>", "▁the", "▁cat", "▁sat", "▁on", "▁mat", "▁dog", "▁floor", "s"]
L, H, d, F, DEC = 2, 2, 8, 16, 4
rng = np.random.default_rng(20170612)
E = rng.normal(0, 1, (len(VOCAB), d))
layers = [{name: rng.normal(0, 0.5, shape) for name, shape in
           [("Wqkv", (3 * d, d)), ("Wo", (d, d)), ("W1", (F, d)), ("W2", (d, F))]} for _ in range(L)]
W_head = rng.normal(0, 0.7, (len(VOCAB), d))


def sinusoidal(S):
    t = np.arange(S)[:, None]
    angle = t / np.power(10000.0, 2.0 * np.arange(d // 2) / d)[None, :]
    pe = np.zeros((S, d))
    pe[:, 0::2], pe[:, 1::2] = np.sin(angle), np.cos(angle)
    return pe


def layer_norm(x):
    return (x - x.mean(-1, keepdims=True)) / np.sqrt(x.var(-1, keepdims=True) + 1e-5)


def softmax(x):
    e = np.exp(x - x.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def encode(ids, positions):
    """Post-LN encoder; returns the hidden states (S, d) and the attention [L][H] of (S, S)."""
    x = E[ids] * math.sqrt(d) + (sinusoidal(len(ids)) if positions else 0)
    attention, dh = [], d // H
    for w in layers:
        q, k, v = np.split(x @ w["Wqkv"].T, 3, axis=1)
        heads, maps = [], []
        for h in range(H):
            s = slice(h * dh, (h + 1) * dh)
            A = softmax(q[:, s] @ k[:, s].T / math.sqrt(dh))
            maps.append(A)
            heads.append(A @ v[:, s])
        attention.append(maps)
        x = layer_norm(x + np.concatenate(heads, axis=1) @ w["Wo"].T)
        x = layer_norm(x + np.maximum(x @ w["W1"].T, 0) @ w["W2"].T)
    return x, attention


def rounded(a):
    return np.round(np.asarray(a), DEC).tolist()


def cosine(a, b):
    return float(a @ b / math.sqrt((a @ a) * (b @ b)))


def run(ids, positions):
    hidden, attention = encode(ids, positions)
    predictions = []
    for t, i in enumerate(ids):
        if VOCAB[i] == "<mask>":
            p = softmax(hidden[t] @ W_head.T)
            top = np.argsort(-p)[:5]
            predictions.append({"position": t, "top": [
                {"piece": VOCAB[j], "id": int(j), "probability": float(p[j])} for j in top]})
    return hidden, {"attention": rounded(attention), "predictions": predictions}


def text(words):
    ids = [VOCAB.index(w if w == "<mask>" else "▁" + w) for w in words.split()]
    with_h, with_pe = run(ids, True)
    without_h, without_pe = run(ids, False)
    outputs = {"cosine": [cosine(a, b) for a, b in zip(with_h, without_h)],
               "distance": [float(np.linalg.norm(a - b)) for a, b in zip(with_h, without_h)],
               "pooled_cosine": cosine(with_h.mean(0), without_h.mean(0))}
    return {"text": words, "pieces": [VOCAB[i] for i in ids], "ids": ids,
            "with_pe": with_pe, "without_pe": without_pe, "outputs": outputs}, with_h, without_h


a, a_with, a_without = text("the cat sat on the <mask>")
b, b_with, b_without = text("the <mask> sat on the cat")
N = len(a["ids"])
P = sinusoidal(N)
moves, used = [], set()
for i, id_ in enumerate(a["ids"]):  # the k-th occurrence of an id in A with its k-th occurrence in B
    j = next(j for j, x in enumerate(b["ids"]) if x == id_ and j not in used)
    used.add(j)
    moves.append({"piece": a["pieces"][i], "position_a": i, "position_b": j,
                  "moved_with_pe": float(np.linalg.norm(a_with[i] - b_with[j])),
                  "moved_without_pe": float(np.linalg.norm(a_without[i] - b_without[j]))})
data = {
    "format": "ordo-view/1", "decimals": DEC,
    "model": {"name": "a tiny sample encoder", "d_model": d, "n_heads": H, "head_dim": d // H, "d_ff": F,
              "n_layers": L, "norm": "post-LN", "final_norm": False, "activation": "relu",
              "positional_encoding": "sinusoidal", "pe_layout": "interleaved", "pe_base": 10000,
              "scale_embedding": True, "masked_lm": True},
    "texts": [a, b],
    "positions": {"count": N, "table": rounded(P), "similarity": rounded(P @ P.T / (d / 2))},
    "compare": {"same_tokens_reordered": True,
                "cosine": {"with_pe": cosine(a_with.mean(0), b_with.mean(0)),
                           "without_pe": cosine(a_without.mean(0), b_without.mean(0))},
                "max_abs_diff": {"with_pe": float(np.abs(a_with.mean(0) - b_with.mean(0)).max()),
                                 "without_pe": float(np.abs(a_without.mean(0) - b_without.mean(0)).max())},
                "tokens": moves},
}
json.dump(data, sys.stdout, ensure_ascii=False, separators=(",", ":"))
sys.stdout.write("\n")
