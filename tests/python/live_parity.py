#!/usr/bin/python3
"""Live parity check: fresh random nn.TransformerEncoders, exported and run by the `ordo` binary.

Each run draws a new seed (printed; --seed replays it) and from it a set of configurations: sizes,
head counts (head sizes that are not powers of two included), ReLU/GELU, pre/post-LN, final norm,
interleaved/split, sinusoidal/learned/no positions, √d scaling on/off, LayerNorm eps, BOS/EOS. Each
model is exported with tools/pytorch/export_pytorch.py (as a module, or through its command line from a
torch.save'd state_dict), then `ordo encode --pooling none --json` runs all texts in one call (one
padded batch). Every text is compared with PyTorch run on the same ids, one text at a time, both in
eval mode under torch.no_grad() (its fast path) and with gradients enabled (its plain path):
    max |ordo − torch| ≤ 5e-5 · max(1, max |torch|)
Where float32 itself cannot hold that bar (an ill-conditioned input: a LayerNorm over a few nearly
equal features, whose differences are a few roundings), the same weights are run in float64, and ordo
passes if it is within the bar of that float64 result, or no more than twice as far from it as
PyTorch's own float32 result is. d_model = 2 is not drawn: a LayerNorm over two features is a sign.
Exit 0: all agree; 1: a disagreement (the seed and the configuration are printed); 77: no PyTorch.
"""

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import time
import warnings

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
SKIP = 77

TEXTS = [
    "the cat sat on the mat",
    "the mat sat on the cat",
    "Dogs",
    "A quick brown fox jumps over the lazy dog, then rests in the shade of an old oak tree.",
    "She sells sea shells by the sea shore; the shells she sells are surely sea shells.",
    "In 1859, Darwin published On the Origin of Species, arguing that populations evolve over "
    "generations through a process of natural selection. The book presented a body of evidence that "
    "the diversity of life arose by common descent through a branching pattern of evolution, and it "
    "was read widely, by scientists and by the general public, long after its first edition sold out.",
    "naïve café owners don't always agree: 3 + 4 = 7?",
]
# and one text of several hundred tokens
TEXTS.append(" ".join(TEXTS[3:6] * 3))

BAR = 5e-5
NO_WORSE = 2.0  # ordo's distance from float64 against PyTorch float32's, where BAR is out of float32's reach


def random_config(rng, vocab_size, longest):
    if rng.random() < 0.25:  # now and then a model of a realistic width
        h, dh = rng.choice([(4, 32), (8, 64), (6, 64), (12, 32), (5, 48), (10, 24)])
    else:
        h, dh = rng.choice([1, 2, 3, 4, 5, 6, 8]), rng.choice([2, 3, 4, 5, 6, 7, 8, 12, 16])
        if h * dh == 2:  # LayerNorm over 2 features is a sign function: ±1 unless the two are within √eps
            h, dh = 1, 3
    d = h * dh
    pe = rng.choice(["sinusoidal", "sinusoidal", "learned", "none"])
    c = dict(vocab_size=vocab_size + rng.choice([0, 0, 17]), d_model=d, n_heads=h,
             d_ff=rng.choice([d, 2 * d, 4 * d, rng.randint(8, 200)]), n_layers=rng.randint(1, 3),
             activation=rng.choice(["relu", "gelu"]), norm_first=rng.random() < 0.5,
             final_norm=rng.random() < 0.5, layer_norm_eps=rng.choice([1e-5, 1e-5, 1e-6, 1e-3]),
             positional_encoding=pe, pe_layout=rng.choice(["interleaved", "split"]),
             pe_base=rng.choice([10000.0, 10000.0, 500.0, 1e5]), scale_embedding=rng.random() < 0.7,
             add_bos=rng.random() < 0.3, add_eos=rng.random() < 0.3)
    if pe == "learned":
        c["max_positions"] = longest + 2 + rng.randint(0, 20)
    return c


def describe(c):
    keys = ["d_model", "n_heads", "d_ff", "n_layers", "activation", "norm_first", "final_norm", "layer_norm_eps",
            "positional_encoding", "pe_layout", "pe_base", "scale_embedding", "add_bos", "add_eos", "vocab_size"]
    return " ".join(f"{k}={c[k]}" for k in keys)


def export_model(model, c, out_dir, tokenizer, via_cli):
    import torch

    from export_pytorch import export
    settings = dict(positional_encoding=c["positional_encoding"], pe_layout=c["pe_layout"],
                    scale_embedding=c["scale_embedding"], pe_base=c["pe_base"], add_bos=c["add_bos"],
                    add_eos=c["add_eos"])
    if not via_cli:
        export(model.encoder, model.embedding, out_dir, tokenizer=tokenizer,
               position_embedding=model.position_embedding, **settings)
        return
    # A whole model's state_dict, as a training script would save it: the encoder under "encoder."
    state = {f"encoder.{k}": v for k, v in model.encoder.state_dict().items()}
    state["tok.weight"] = model.embedding.weight
    if model.position_embedding is not None:
        state["pos.weight"] = model.position_embedding.weight
    path = out_dir + ".pt"
    torch.save(state, path)
    flag = lambda b: "true" if b else "false"  # noqa: E731
    cmd = [sys.executable, os.path.join(ROOT, "tools", "pytorch", "export_pytorch.py"), path, "--out", out_dir,
           "--tokenizer", tokenizer, "--n-heads", str(c["n_heads"]), "--prefix", "encoder.",
           "--embedding", "tok.weight", "--position-embedding", "pos.weight",
           "--activation", c["activation"], "--norm-first", flag(c["norm_first"]),
           "--final-norm", flag(c["final_norm"]), "--layer-norm-eps", repr(c["layer_norm_eps"]),
           "--positional-encoding", c["positional_encoding"], "--pe-layout", c["pe_layout"],
           "--pe-base", repr(c["pe_base"]), "--scale-embedding", flag(c["scale_embedding"]),
           "--add-bos", flag(c["add_bos"]), "--add-eos", flag(c["add_eos"])]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"export_pytorch.py failed ({r.returncode}): {r.stderr.strip()}")


def main():
    p = argparse.ArgumentParser(description="ordo against PyTorch on fresh random encoders.")
    p.add_argument("--ordo", default=os.path.join(ROOT, "build", "ordo"), help="the ordo binary")
    p.add_argument("--tokenizer", default=os.path.join(ROOT, "models", "default", "tokenizer.model"))
    p.add_argument("--seed", type=int, default=None, help="replay a run")
    p.add_argument("--configs", type=int, default=16, help="number of random configurations")
    a = p.parse_args()

    try:
        import numpy as np
        import sentencepiece as spm
        import torch
    except ImportError as e:
        print(f"skipped: {e} (install python3-torch, python3-numpy, python3-sentencepiece)")
        return SKIP
    sys.path.insert(0, os.path.join(ROOT, "tools", "pytorch"))
    from torch_encoder import TorchModel

    warnings.filterwarnings("ignore", message=".*nested tensors is in prototype")
    torch.set_num_threads(1)
    seed = a.seed if a.seed is not None else random.SystemRandom().randrange(1 << 31)
    print(f"seed {seed}   (replay: {os.path.relpath(__file__, ROOT)} --seed {seed} --configs {a.configs})")
    rng = random.Random(seed)
    sp = spm.SentencePieceProcessor(model_file=a.tokenizer)
    longest = max(len(sp.encode(t)) for t in TEXTS) + 2
    start = time.time()
    failures = 0
    with tempfile.TemporaryDirectory(prefix="ordo-live-") as tmp:
        for n in range(a.configs):
            c = random_config(rng, sp.get_piece_size(), longest)
            pytorch_init = n % 4 == 3
            model = TorchModel(c, seed + n, pytorch_init=pytorch_init)
            out_dir = os.path.join(tmp, f"model{n}")
            via_cli = n % 3 == 2
            export_model(model, c, out_dir, a.tokenizer, via_cli)
            r = subprocess.run([a.ordo, "encode", "--model", out_dir, "--pooling", "none", "--json", *TEXTS],
                               capture_output=True, text=True)
            label = f"config {n} ({'CLI' if via_cli else 'module'} export): {describe(c)}"
            if r.returncode != 0:
                print(f"FAIL {label}\n  ordo exited {r.returncode}: {r.stderr.strip()}")
                failures += 1
                continue
            rows = [json.loads(line) for line in r.stdout.splitlines()]
            if [row["text"] for row in rows] != TEXTS:
                print(f"FAIL {label}\n  ordo returned {len(rows)} results for {len(TEXTS)} texts")
                failures += 1
                continue
            worst = {True: 0.0, False: 0.0}  # relative error, by fast path on/off
            bad = 0
            for text, row in zip(TEXTS, rows):
                ids = sp.encode(text)
                ids = ([sp.bos_id()] if c["add_bos"] else []) + ids + ([sp.eos_id()] if c["add_eos"] else [])
                if row["ids"] != ids:
                    print(f"FAIL {label}\n  ids of {text!r}: ordo {row['ids']}, sentencepiece {ids}")
                    bad += 1
                    break
                got = np.array(row["hidden"], dtype=np.float64).reshape(len(ids), c["d_model"])
                for fast in (True, False):
                    want = model.forward([ids], fast=fast)[0]
                    scale = max(1.0, np.abs(want).max())
                    err = np.abs(got - want).max() / scale
                    worst[fast] = max(worst[fast], err)
                    if err <= BAR:
                        continue
                    exact = model.forward64([ids])[0]
                    ours, theirs = np.abs(got - exact).max() / scale, np.abs(want - exact).max() / scale
                    path = "no_grad fast path" if fast else "plain path"
                    if ours <= max(BAR, NO_WORSE * theirs):
                        print(f"     config {n}: text {text[:40]!r}, {path}: {err:.3g} > {BAR}, beyond float32: "
                              f"from float64, ordo {ours:.3g}, PyTorch {theirs:.3g}")
                        continue
                    print(f"FAIL {label}\n  text {text[:40]!r} ({len(ids)} tokens), {path}: max error {err:.3g} "
                          f"relative to max(1, max|y|) > {BAR}; from float64, ordo {ours:.3g}, PyTorch {theirs:.3g}")
                    bad += 1
            failures += bad
            print(f"{'FAIL' if bad else 'ok  '} config {n}: relative max error {worst[True]:.2e} (fast path) "
                  f"{worst[False]:.2e} (plain path)  [{describe(c)}{', CLI export' if via_cli else ''}"
                  f"{', PyTorch init' if pytorch_init else ''}]")
    print(f"{a.configs} configurations x {len(TEXTS)} texts in {time.time() - start:.1f} s, "
          f"{failures} failure(s), seed {seed}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
