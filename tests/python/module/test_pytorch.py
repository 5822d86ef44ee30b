"""A PyTorch encoder exported with tools/pytorch/export_pytorch.py: ordo.Model gives PyTorch's rows (1e-5)."""
import math
import os
import sys

import numpy as np
import torch
from torch import nn

import ordo
from conftest import ROOT, max_diff

sys.path.insert(0, os.path.join(ROOT, "tools", "pytorch"))
from export_pytorch import export  # noqa: E402
from torch_encoder import sinusoidal  # noqa: E402

TOKENIZER = os.path.join(ROOT, "models", "default", "tokenizer.model")  # 8000 pieces
V, d, h, FF = 8000, 16, 4, 24


def test_exported_model_equals_pytorch(tmp_path):
    torch.manual_seed(7)
    layer = nn.TransformerEncoderLayer(d, h, dim_feedforward=FF, batch_first=True, dropout=0.0)
    encoder = nn.TransformerEncoder(layer, 2, enable_nested_tensor=False).eval()
    embedding = nn.Embedding(V, d)
    out = str(tmp_path / "model")
    export(encoder, embedding, out, tokenizer=TOKENIZER, positional_encoding="sinusoidal",
           pe_layout="interleaved", scale_embedding=True, verbose=False)
    model = ordo.Model(out)
    texts = ["the cat sat on the mat", "a", "dogs bark at night and cats sleep all day long"]
    got = model.encode(texts, pooling="none")
    for text, rows in zip(texts, got):
        ids = model.tokenize(text)["ids"]
        S = len(ids)
        with torch.no_grad():  # x_t = E[id_t]·√d + PE(t), then the layers, in float64
            x = embedding.weight.double()[ids] * math.sqrt(d) + torch.from_numpy(sinusoidal(S, d))
            want = encoder.double()(x[None])[0].numpy()
        diff = max_diff(rows, want)
        assert diff <= 1e-5, f"{text!r}: max |ordo - pytorch| = {diff}"
    # Pooled the same way: the mean of those rows.
    assert max_diff(model.encode(texts[0]), got[0].mean(axis=0)) <= 1e-6
