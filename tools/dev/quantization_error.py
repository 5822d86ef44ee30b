#!/usr/bin/python3
"""Where int8's error comes from: the post-LN encoder in numpy, quantization switched on per product,
layer and operand, and the held-out lines' mean-pooled cosines to its own f32 vectors.

    tools/dev/quantization_error.py --ordo build/ordo --model /tmp/ordo-bench-base \\
        --input models/heldout/wordnet-heldout.txt [--scheme NAME ...]

Fake quantization: x and W are rounded to their int8 grid (s = max|row| / 127, q = round(v / s)) and
back, then multiplied in float32. ordo's kernels sum the same integers exactly, and the figures come
close to `ordo encode --compute-type int8`'s (base model: 503 lines below 0.999 here, 505 in ordo;
the float sums run in another order). Sinusoidal positions,
ReLU, post-LN only (the default model and bench_peers.py's base model). The tables of
docs/precision.md, "Where the error came from", are this script's output.
"""
import argparse
import json
import struct
import subprocess
import sys

import numpy as np

PRODUCTS = ("in_proj", "out_proj", "linear1", "linear2")


def load(model):
    data = open(model + "/model.safetensors", "rb").read()
    n = struct.unpack("<Q", data[:8])[0]
    header = json.loads(data[8:8 + n])
    weights = {}
    for name, t in header.items():
        if name != "__metadata__":
            a, b = t["data_offsets"]
            weights[name] = np.frombuffer(data[8 + n + a:8 + n + b], dtype=np.float32).reshape(t["shape"])
    config = json.load(open(model + "/config.json"))
    if config.get("norm_first") or config.get("activation") != "relu" or config.get("positional_encoding") != "sinusoidal":
        sys.exit(f"error: {model}: this script knows post-LN, ReLU, sinusoidal encoders only")
    return config, weights


def positions(S, d, base):  # interleaved: sin in even dims, cos in odd
    pe = np.zeros((S, d))
    angle = np.arange(S)[:, None] / np.power(base, 2.0 * np.arange((d + 1) // 2)[None, :] / d)
    pe[:, 0::2] = np.sin(angle)
    pe[:, 1::2] = np.cos(angle)[:, :d // 2]
    return pe.astype(np.float32)


def layer_norm(x, g, b, eps):
    m = x.mean(-1, keepdims=True)
    v = ((x - m) ** 2).mean(-1, keepdims=True)
    return ((x - m) / np.sqrt(v + eps) * g + b).astype(np.float32)


def quantize(v, mode):
    """v rounded to the grid `mode` names and back: none, row (int8 per row), g<n> (int8 per group of n
    along a row), res2 (two int8 passes: v ≈ s1·q1 + s2·q2), bf16."""
    if mode == "none":
        return v
    if mode == "bf16":
        u = np.ascontiguousarray(v, dtype=np.float32).view(np.uint32).astype(np.uint64)
        return ((u + 0x7FFF + ((u >> 16) & 1)) >> 16 << 16).astype(np.uint32).view(np.float32)

    def rows(a):
        s = np.abs(a).max(-1, keepdims=True) / 127
        s = np.where(s == 0, 1, s)
        return np.round(a / s) * s

    if mode == "row":
        return rows(v).astype(np.float32)
    if mode == "res2":
        first = rows(v)
        return (first + rows(v - first)).astype(np.float32)
    if mode.startswith("g"):
        g = int(mode[1:])
        return rows(v.reshape(v.shape[0], -1, g)).reshape(v.shape).astype(np.float32)
    raise ValueError(mode)


def forward(config, W, lines, scheme):
    """Mean-pooled vectors of `lines` (lists of ids); scheme(product, layer) -> (x mode, W mode)."""
    d, H = config["d_model"], config["n_heads"]
    dh, eps = d // H, config["layer_norm_eps"]
    cache = {}

    def linear(x, w, b, product, layer):
        xm, wm = scheme(product, layer)
        if (id(w), wm) not in cache:
            cache[(id(w), wm)] = quantize(w, wm)
        return (quantize(x, xm) @ cache[(id(w), wm)].T + b).astype(np.float32)

    lengths = np.array([len(line) for line in lines])
    starts = np.concatenate([[0], np.cumsum(lengths)])
    pe = positions(lengths.max(), d, config["pe_base"])
    scale = np.float32(np.sqrt(d)) if config.get("scale_embedding", True) else np.float32(1)
    x = (W["embedding.weight"][np.concatenate(lines)] * scale +
         pe[np.concatenate([np.arange(n) for n in lengths])]).astype(np.float32)
    by_length = {}
    for i, n in enumerate(lengths):
        by_length.setdefault(n, []).append(i)
    for layer in range(config["n_layers"]):
        p = f"layers.{layer}."
        qkv = linear(x, W[p + "self_attn.in_proj_weight"], W[p + "self_attn.in_proj_bias"], "in_proj", layer)
        context = np.empty((len(x), d), np.float32)
        for n, which in by_length.items():  # the texts of one length as one batch: no padding
            rows = starts[which][:, None] + np.arange(n)[None, :]
            q, k, v = (qkv[rows][..., i * d:(i + 1) * d].reshape(len(which), n, H, dh).transpose(0, 2, 1, 3)
                       for i in range(3))
            z = q @ k.transpose(0, 1, 3, 2) / np.float32(np.sqrt(dh))
            z = np.exp(z - z.max(-1, keepdims=True))
            z /= z.sum(-1, keepdims=True)
            context[rows.reshape(-1)] = (z @ v).transpose(0, 2, 1, 3).reshape(-1, d)
        a = linear(context, W[p + "self_attn.out_proj.weight"], W[p + "self_attn.out_proj.bias"], "out_proj", layer)
        x = layer_norm(x + a, W[p + "norm1.weight"], W[p + "norm1.bias"], eps)
        h = np.maximum(linear(x, W[p + "linear1.weight"], W[p + "linear1.bias"], "linear1", layer), 0)
        f = linear(h, W[p + "linear2.weight"], W[p + "linear2.bias"], "linear2", layer)
        x = layer_norm(x + f, W[p + "norm2.weight"], W[p + "norm2.bias"], eps)
    if config.get("final_norm"):
        x = layer_norm(x, W["norm.weight"], W["norm.bias"], eps)
    return np.stack([x[starts[i]:starts[i + 1]].mean(0) for i in range(len(lines))])


def only_first_in_proj(x_mode, w_mode):
    return lambda product, layer: (x_mode, w_mode) if (product, layer) == ("in_proj", 0) else ("row", "row")


def everywhere(x_mode, w_mode):
    return lambda product, layer: (x_mode, w_mode)


def all_but(product_name, layers=None):
    return lambda product, layer: (("none", "none") if product == product_name and (layers is None or layer in layers)
                                   else ("row", "row"))


SCHEMES = {
    "int8": everywhere("row", "row"),
    "activations-only": everywhere("row", "none"),
    "weights-only": everywhere("none", "row"),
    **{f"all-but-{p}": all_but(p) for p in PRODUCTS},
    "all-but-first-in_proj": all_but("in_proj", [0]),
    "first-in_proj-bf16": only_first_in_proj("bf16", "bf16"),
    "first-in_proj-x-float": only_first_in_proj("none", "row"),
    "first-in_proj-w-float": only_first_in_proj("row", "none"),
    "first-in_proj-x-res2": only_first_in_proj("res2", "row"),
    "first-in_proj-both-res2": only_first_in_proj("res2", "res2"),
    "first-in_proj-x-g32": only_first_in_proj("g32", "row"),
    "x-g64": everywhere("g64", "row"),
    "w-g64": everywhere("row", "g64"),
    "both-g64": everywhere("g64", "g64"),
    "x-res2": everywhere("res2", "row"),
}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ordo", default="build/ordo", help="the ordo binary (its tokenizer only)")
    ap.add_argument("--model", required=True)
    ap.add_argument("--input", required=True, help="texts, one per line")
    ap.add_argument("--scheme", action="append", choices=sorted(SCHEMES), help="default: all of them")
    args = ap.parse_args()
    config, W = load(args.model)
    out = subprocess.run([args.ordo, "tokenize", "--json", "--model", args.model, "--input", args.input],
                         check=True, capture_output=True, text=True).stdout
    lines = [np.array(json.loads(line)["ids"]) for line in out.splitlines()]
    lines = [ids for ids in lines if len(ids)]
    f32 = forward(config, W, lines, everywhere("none", "none"))
    short = np.array([len(ids) <= 4 for ids in lines])
    print(f"# {args.model}: {len(lines)} texts; cosine of mean-pooled vectors to f32: "
          "min / 1st percentile / median / lines below 0.999 / min over texts of 1-4 pieces")
    for name in args.scheme or SCHEMES:
        v = forward(config, W, lines, SCHEMES[name])
        c = (v * f32).sum(1) / np.linalg.norm(v, axis=1) / np.linalg.norm(f32, axis=1)
        print(f"{name:26s} {c.min():.5f} / {np.percentile(c, 1):.5f} / {np.median(c):.6f} / "
              f"{(c < 0.999).sum()} / {c[short].min():.5f}", flush=True)


if __name__ == "__main__":
    main()
