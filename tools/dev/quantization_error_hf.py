#!/usr/bin/env python3
"""Where int8's error comes from on a Hugging Face BERT model (all-MiniLM-L6-v2): transformers' own
BertModel with each of its Linear layers fake-quantized on its own, and the mean-pooled, normalized
sentence vectors' cosines to the same model in float32.

    ~/.cache/ordo/reference-venv/bin/python tools/dev/quantization_error_hf.py \\
        --model "$(tools/dev/reference_model_dir.sh)" --input lines.txt [--scheme NAME ...]

Fake quantization as in quantization_error.py (the post-LN encoder of ordo's own models): x and W are
rounded to their int8 grid, s = max|row| / 127 per row of x (token) and of W (output channel),
q = round(v / s), and back, then multiplied in float32. "res2" is two int8 passes (v ≈ s1·q1 + s2·q2,
the second quantizing what the first left), "g32" int8 per group of 32 along a row, "bf16" bfloat16,
"topK" each row's K entries of largest |v| kept exact and the rest int8 on their own scale (the outlier
decomposition of Dettmers et al. 2022, per row), "gtT" the entries above T kept exact the same way,
"colK" the K columns of largest max |v| kept exact (a fixed set, for W). "x-top4-w-top16": x by top4, W by
top16; "x-top4-output-f32": x by top4, W per row, and `output` (linear2) left in float. "smoothA"
divides x's channel k by c_k = max|x_k|^A / max|W_k|^(1 − A) and multiplies W's column k by it (the
product unchanged in exact arithmetic; Xiao et al. 2023, SmoothQuant), then int8 as above; max|x_k| is
taken over the texts of --calibrate, and q, k and v share theirs as they share x.
BERT's Linear layers: query, key, value (ordo's in_proj, one product over one quantized x), the
attention output (out_proj), intermediate (linear1, GELU after it) and output (linear2, GELU's output in).
Runs offline (HF_HUB_OFFLINE=1) with the reference environment of tools/dev/install-deps.sh.
docs/precision.md, "int8 on all-MiniLM-L6-v2", has its figures.
"""
import argparse
import os
import sys

os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["TRANSFORMERS_OFFLINE"] = "1"

PRODUCTS = ("query", "key", "value", "attention.output", "intermediate", "output")


def quantize(v, mode):
    import torch
    if mode == "none":
        return v
    if mode == "row" or (mode.startswith("i") and mode[1:].isdigit()) or mode == "k32":
        # "iN": N-bit symmetric (N = 8 is "row"); "k32": as many steps as keep 127·q·K inside int32
        top = 127 if mode == "row" else (min(32767, (2**31 - 1) // (127 * v.shape[-1])) if mode == "k32"
                                         else 2 ** (int(mode[1:]) - 1) - 1)
        s = v.abs().amax(-1, keepdim=True) / top
        s = torch.where(s == 0, torch.ones_like(s), s)
        return torch.round(v / s) * s
    if mode == "res2":
        first = quantize(v, "row")
        return first + quantize(v - first, "row")
    if mode.startswith("top"):  # the k largest |entries| of each row kept exact, the rest int8 on their own scale
        k = min(int(mode[3:]), v.shape[-1])
        keep = torch.zeros_like(v).scatter(-1, v.abs().topk(k, -1).indices, 1.0)
        return v * keep + quantize(v * (1 - keep), "row")
    if mode.startswith("col"):  # the k columns of largest max |entry| kept exact (static, for W), the rest per row
        k = int(mode[3:])
        keep = torch.zeros(v.shape[-1]).index_fill(0, v.abs().amax(0).topk(k).indices, 1.0)
        return v * keep + quantize(v * (1 - keep), "row")
    if mode.startswith("gt"):  # entries above the threshold kept exact (Dettmers et al.'s decomposition, per row)
        keep = (v.abs() > float(mode[2:])).float()
        return v * keep + quantize(v * (1 - keep), "row")
    if mode == "mse":  # per row, the clipping of max|row| (a grid of 100 ratios) with the least squared error
        best, err = None, None
        for r in [1 - i / 100 for i in range(100)]:
            s = v.abs().amax(-1, keepdim=True) * r / 127
            s = torch.where(s == 0, torch.ones_like(s), s)
            q = torch.clamp(torch.round(v / s), -127, 127) * s
            e = (q - v).pow(2).sum(-1, keepdim=True)
            best = q if best is None else torch.where(e < err, q, best)
            err = e if err is None else torch.minimum(e, err)
        return best
    if mode.startswith("g"):
        g = int(mode[1:])
        return quantize(v.reshape(*v.shape[:-1], -1, g), "row").reshape(v.shape)
    if mode == "bf16":
        return v.to(torch.bfloat16).float()
    raise ValueError(mode)


def product_of(name):
    """The product a Linear of BertModel is: one of PRODUCTS, or None (the pooler)."""
    if ".attention.self." in name:
        return name.rsplit(".", 1)[1]
    if name.endswith(".attention.output.dense"):
        return "attention.output"
    if name.endswith(".intermediate.dense"):
        return "intermediate"
    if name.endswith(".output.dense"):
        return "output"
    return None


# groups of products by role: the mix (value), the feed-forward pair, and output alone
ROLES = {"vio": ("value", "intermediate", "output"), "io": ("intermediate", "output"), "o": ("output",),
         "vo": ("value", "output"), "kvio": ("key", "value", "intermediate", "output"),
         "vio-attn": ("value", "attention.output", "intermediate", "output"), "v": ("value",),
         "vi": ("value", "intermediate"), "va": ("value", "attention.output"),
         "vao": ("value", "attention.output", "output"), "qkv": ("query", "key", "value"),
         "qkvo": ("query", "key", "value", "output")}


def everywhere(x, w):
    return lambda product: (x, w)


def only(p, x, w):
    return lambda product: (x, w) if product == p else ("none", "none")


def all_but(p):
    return lambda product: ("none", "none") if product == p else ("row", "row")


SCHEMES = {
    "int8": everywhere("row", "row"),
    "activations-only": everywhere("row", "none"),
    "weights-only": everywhere("none", "row"),
    **{f"x-only-{p}": only(p, "row", "none") for p in PRODUCTS},
    **{f"w-only-{p}": only(p, "none", "row") for p in PRODUCTS},
    **{f"all-but-{p}": all_but(p) for p in PRODUCTS},
    "x-res2": everywhere("res2", "row"),
    "x-res2-w-g32": everywhere("res2", "g32"),
    "x-res2-w-res2": everywhere("res2", "res2"),
    "x-g32-w-g32": everywhere("g32", "g32"),
    "bf16": everywhere("bf16", "bf16"),
    **{f"x-top{k}": everywhere(f"top{k}", "row") for k in (1, 2, 4, 8)},
    **{f"x-gt{t}": everywhere(f"gt{t}", "row") for t in (2, 3, 6)},
    **{f"x-top{k}-output-{m}": (lambda k, m: lambda p: ("none" if m == "f32" else "bf16",) * 2 if p == "output"
                                 else (f"top{k}", "row"))(k, m) for k in (2, 4, 8) for m in ("f32", "bf16")},
    **{f"x-gt{t}-output-{m}": (lambda t, m: lambda p: ("none" if m == "f32" else "bf16",) * 2 if p == "output"
                                else (f"gt{t}", "row"))(t, m) for t in (3, 6) for m in ("f32", "bf16")},
    **{f"x-top{k}-w-top{j}": everywhere(f"top{k}", f"top{j}") for k in (1, 2, 4, 8) for j in (1, 4, 8, 16)},
    **{f"x-top{k}-w-col{j}": everywhere(f"top{k}", f"col{j}") for k in (1, 4, 8) for j in (4, 8, 16)},
    **{f"x-{a}-w-{b}": everywhere(a, b) for a in ("k32", "res2", "i16")
       for b in ("row", "g32", "g64", "g128", "mse", "res2")},
    **{f"x-i{a}-w-i{b}": everywhere(f"i{a}", f"i{b}") for a in (9, 10, 11, 12) for b in (9, 10, 11, 12)},
    **{f"x-{a}-w-{b}-output": (lambda a, b: lambda p: (a, b) if p == "output" else (a, "row"))(a, b)
       for a in ("k32", "res2") for b in ("g32", "g64", "res2", "mse")},
    **{f"x-k32-{r}-w-{b}": (lambda r, b: lambda p: ("k32" if p in ("value", "intermediate", "output") else "row", b))(r, b)
       for r in ("vio",) for b in ("row", "g32", "g64", "mse", "res2")},
    **{f"x-i{a}-w-i{b}": everywhere(f"i{a}", f"i{b}") for a in (11, 12, 13) for b in (8, 9)},
    **{f"{r}-x-i{a}-w-i{b}": (lambda r, a, b: lambda p: (f"i{a}", f"i{b}") if p in ROLES[r] else ("row", "row"))(r, a, b)
       for r in ROLES for a in (12,) for b in (10,)},
    "output-f32": lambda p: ("none", "none") if p == "output" else ("row", "row"),
    # smoothing (Xiao et al. 2023, SmoothQuant): x's channel k divided by c_k and W's column k multiplied
    # by it, c_k = max|x_k|^a / max|W_k|^(1 − a), max|x_k| over the --calibrate texts; then int8 as above
    **{f"smooth{a}": everywhere(f"smooth{a}", "row") for a in ("0.3", "0.4", "0.5", "0.6", "0.7", "0.8")},
    **{f"smooth{a}-{r}-x-i12-w-i10": (lambda a, r: lambda p: ("i12", "i10") if p in ROLES[r] else (f"smooth{a}", "row"))(a, r)
       for a in ("0.3", "0.4", "0.5", "0.6", "0.7") for r in ("o", "io", "vo")},
}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", required=True, help="a BERT model directory (config.json, model.safetensors)")
    ap.add_argument("--input", required=True, help="texts, one per line")
    ap.add_argument("--max-length", type=int, default=256)
    ap.add_argument("--scheme", action="append", choices=sorted(SCHEMES), help="default: all of them")
    ap.add_argument("--calibrate", help="texts for the smoothing schemes' max|x_k| (not the --input lines)")
    ap.add_argument("--outliers", action="store_true",
                    help="instead: for the first text, each product's input per token: its largest |entry| "
                         "over its root mean square, and that entry's dimension")
    args = ap.parse_args()
    import numpy as np
    import torch
    from transformers import AutoModel, AutoTokenizer

    texts = open(args.input, encoding="utf-8").read().split("\n")
    if texts and texts[-1] == "":
        texts.pop()
    tok = AutoTokenizer.from_pretrained(args.model)
    model = AutoModel.from_pretrained(args.model).eval()
    scheme = SCHEMES["int8"]
    weights = {}

    xmax = {}  # the input's group (q, k and v share theirs, as in ordo's in_proj) -> max|x_k| over calibration
    calibrating = [False]
    mask = [None]

    def group_of(name):
        return name.rsplit(".", 1)[0] if ".attention.self." in name else name

    def wrap(name, layer, product):
        weights[name] = layer.weight.data.clone()

        def forward(x):
            xm, wm = scheme(product) if product else ("none", "none")
            g = group_of(name)
            if calibrating[0] and product:
                seen = (x.abs() * mask[0]).reshape(-1, x.shape[-1]).amax(0)
                xmax[g] = seen if g not in xmax else torch.maximum(xmax[g], seen)
            w = weights[name]
            if xm.startswith("smooth"):
                a = float(xm[6:])
                wcols = torch.cat([weights[n] for n in weights if group_of(n) == g]).abs().amax(0)
                c = (xmax[g].clamp(min=1e-5) ** a / wcols.clamp(min=1e-5) ** (1 - a)).clamp(min=1e-5)
                return torch.nn.functional.linear(quantize(x / c, "row"), quantize(w * c, wm), layer.bias)
            return torch.nn.functional.linear(quantize(x, xm), quantize(w, wm), layer.bias)
        layer.forward = forward

    for name, layer in model.named_modules():
        if isinstance(layer, torch.nn.Linear):
            wrap(name, layer, product_of(name))

    if args.outliers:
        def report(name):
            def hook(module, inputs, output):
                x = inputs[0][0]
                crest = x.abs().amax(-1) / x.pow(2).mean(-1).sqrt()
                where = x.abs().argmax(-1)
                print(f"{name:44s} " + "  ".join(f"{float(c):5.1f}@{int(j)}" for c, j in zip(crest, where)))
            return hook
        for name, layer in model.encoder.named_modules():
            if isinstance(layer, torch.nn.Linear) and not name.endswith((".key", ".value")):
                layer.register_forward_hook(report(name))
        scheme = everywhere("none", "none")
        b = tok(texts[:1], return_tensors="pt")
        print("# " + " ".join(tok.convert_ids_to_tokens(b["input_ids"][0])) + ": max|x| / rms(x) @ dimension, per token")
        with torch.no_grad():
            model(**b)
        return 0

    def vectors(texts=texts):
        out = []
        with torch.no_grad():
            for i in range(0, len(texts), 32):
                b = tok(texts[i:i + 32], padding=True, truncation=True, max_length=args.max_length,
                        return_tensors="pt")
                mask[0] = b["attention_mask"].unsqueeze(-1).float()
                h = model(**b).last_hidden_state
                m = b["attention_mask"].unsqueeze(-1).float()
                out.append(torch.nn.functional.normalize((h * m).sum(1) / m.sum(1), dim=-1))
        return torch.cat(out).double().numpy()

    scheme = everywhere("none", "none")
    if args.calibrate:
        calibrating[0] = True
        vectors([t for t in open(args.calibrate, encoding="utf-8").read().split("\n") if t])
        calibrating[0] = False
    f32 = vectors()
    print(f"# {args.model}: {len(texts)} texts; cosine of mean-pooled vectors to f32: "
          "min / 1st percentile / median / lines below 0.999")
    for name in args.scheme or SCHEMES:
        scheme = SCHEMES[name]
        c = (vectors() * f32).sum(1)
        print(f"{name:26s} {c.min():.5f} / {np.percentile(c, 1):.5f} / {np.median(c):.6f} / {(c < 0.999).sum()}",
              flush=True)


if __name__ == "__main__":
    sys.exit(main())
