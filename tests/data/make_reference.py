#!/usr/bin/python3
"""Writes ordo's PyTorch references: tests/data/<case>/ for each configuration below.

Each case directory holds
  config.json, model.safetensors   the model, written by export_pytorch.export (no tokenizer: the
                                   test feeds ids straight to the engine)
  reference.safetensors            ids.<i> (I32, [L_i]) and hidden.<i> (F32, [L_i, d]): the input ids
                                   of sequence i and PyTorch's output for it
The weights are random from fixed seeds, so the same torch version writes the same files. PyTorch
runs in float32, eval mode, one sequence at a time (no padding); before writing, the script checks
that PyTorch's fast path and its padded batches agree with that reference.

    tests/data/make_reference.py [--out tests/data]
"""

import argparse
import os
import shutil
import sys

import warnings

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools", "pytorch"))
from export_pytorch import export, write_safetensors  # noqa: E402
from torch_encoder import TorchModel  # noqa: E402

BASE = dict(vocab_size=64, d_model=16, n_heads=4, d_ff=32, n_layers=2, activation="relu", norm_first=False,
            final_norm=False, layer_norm_eps=1e-5, positional_encoding="sinusoidal", pe_layout="interleaved",
            pe_base=10000.0, scale_embedding=True)

# name: (changes to BASE, lengths of the input sequences)
CASES = {
    "post_ln_relu": ({}, [9, 4]),
    "pre_ln_gelu_final_norm": (dict(activation="gelu", norm_first=True, final_norm=True), [11, 6]),
    "d80_h5": (dict(vocab_size=32, d_model=80, n_heads=5, d_ff=16, n_layers=1), [7, 3]),
    "head_size_6": (dict(d_model=24, n_heads=4, d_ff=24, activation="gelu"), [10, 5]),
    "split_layout": (dict(pe_layout="split", d_model=20, n_heads=2, d_ff=24), [13, 8]),
    "learned_positions": (dict(positional_encoding="learned", max_positions=24, d_model=16, n_heads=2, d_ff=32),
                          [24, 5]),
    "no_scale_embedding": (dict(scale_embedding=False, d_model=16, n_heads=4, d_ff=24), [8, 12]),
    "no_positions": (dict(positional_encoding="none", d_model=16, n_heads=2, d_ff=24), [6, 9]),
    "one_token": (dict(d_model=16, n_heads=2, d_ff=24, norm_first=True), [1]),
    "long_320": (dict(vocab_size=64, d_model=16, n_heads=2, d_ff=32, activation="gelu"), [320, 1]),
    "long_pre_ln_split": (dict(vocab_size=64, d_model=16, n_heads=4, d_ff=16, norm_first=True, final_norm=True,
                               pe_layout="split"), [301]),
    "padded_batch": (dict(d_model=24, n_heads=3, d_ff=32, activation="gelu"), [5, 17, 1, 11, 30, 2]),
    "odd_d_15": (dict(d_model=15, n_heads=3, d_ff=20), [12, 7]),
    "odd_d_15_split": (dict(d_model=15, n_heads=5, d_ff=20, pe_layout="split"), [12]),
    "pe_base_500_eps_1e-3": (dict(pe_base=500.0, layer_norm_eps=1e-3, d_model=16, n_heads=4, d_ff=24), [40, 3]),
    "one_head_four_layers": (dict(d_model=12, n_heads=1, d_ff=16, n_layers=4, final_norm=True), [15, 9]),
}


def tolerance(y):
    return 2e-5 * max(1.0, float(np.abs(y).max()))


def make_case(name, changes, lengths, out_dir, seed):
    config = dict(BASE, **changes)
    model = TorchModel(config, seed)
    rng = np.random.default_rng(seed)
    ids = [rng.integers(0, config["vocab_size"], size=L).tolist() for L in lengths]

    # The reference: PyTorch's plain path, one sequence at a time.
    reference = [model.forward([seq], fast=False)[0] for seq in ids]
    # PyTorch's other ways of running the same input must agree, or the reference means nothing.
    for fast in (False, True):
        batched = model.forward(ids, fast=fast)
        for y, r in zip(batched, reference):
            assert np.abs(y - r).max() <= tolerance(r), f"{name}: torch batch (fast={fast}) disagrees with itself"
        for seq, r in zip(ids, reference):
            assert np.abs(model.forward([seq], fast=fast)[0] - r).max() <= tolerance(r)

    case_dir = os.path.join(out_dir, name)
    shutil.rmtree(case_dir, ignore_errors=True)
    export(model.encoder, model.embedding, case_dir, tokenizer=None,
           positional_encoding=config["positional_encoding"], pe_layout=config["pe_layout"],
           scale_embedding=config["scale_embedding"], position_embedding=model.position_embedding,
           pe_base=config["pe_base"])
    tensors = {}
    for i, (seq, y) in enumerate(zip(ids, reference)):
        tensors[f"ids.{i}"] = np.asarray(seq, dtype=np.int32)
        tensors[f"hidden.{i}"] = y.astype(np.float32)
    write_safetensors(os.path.join(case_dir, "reference.safetensors"), tensors)
    size = sum(os.path.getsize(os.path.join(case_dir, f)) for f in os.listdir(case_dir))
    print(f"{name}: lengths {lengths}, {size / 1024:.1f} KiB")
    return size


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--out", default=os.path.join(here, "..", "tests", "data"))
    a = p.parse_args()
    import torch
    torch.set_num_threads(1)
    warnings.filterwarnings("ignore", message=".*nested tensors is in prototype")
    os.makedirs(a.out, exist_ok=True)
    total = sum(make_case(name, changes, lengths, a.out, seed=1000 + i)
                for i, (name, (changes, lengths)) in enumerate(CASES.items()))
    print(f"total {total / 1024:.1f} KiB in {a.out}")


if __name__ == "__main__":
    main()
