"""The PyTorch side of ordo's parity checks: a random nn.TransformerEncoder built from an ordo config,
and its forward pass from token ids, x_t = E[id_t]·(√d) + PE(t), exactly as ordo defines it.

Used by tests/data/make_reference.py (the committed references) and tests/python/live_parity.py (the live check).
"""

import copy
import math

import numpy as np
import torch
from torch import nn


def sinusoidal(S, d, layout="interleaved", base=10000.0):
    """PE (S, d): PE(t, 2i) = sin(t / base^(2i/d)), PE(t, 2i+1) = cos(t / base^(2i/d)), in float64.

    interleaved: sin at 2i, cos at 2i+1; split: the ⌈d/2⌉ sines first, then the cosines (for an odd d
    the last frequency has a sine and no cosine, as in ordo)."""
    pairs = (d + 1) // 2
    t = np.arange(S, dtype=np.float64)[:, None]
    angle = t / np.power(float(base), 2.0 * np.arange(pairs, dtype=np.float64) / d)[None, :]  # (S, pairs)
    pe = np.zeros((S, d), dtype=np.float64)
    if layout == "interleaved":
        pe[:, 0::2] = np.sin(angle)
        pe[:, 1::2] = np.cos(angle)[:, : d // 2]
    else:
        pe[:, :pairs] = np.sin(angle)
        pe[:, pairs:] = np.cos(angle)[:, : d - pairs]
    return pe


class TorchModel:
    """Embedding, optional learned positions and nn.TransformerEncoder for an ordo config (a dict)."""

    def __init__(self, config, seed, pytorch_init=False):
        """pytorch_init: keep PyTorch's own initialisation (N(0, 1) embeddings, zero biases, LayerNorm
        (1, 0)) instead of the varied one below."""
        c = self.config = dict(config)
        g = torch.Generator().manual_seed(seed)
        torch.manual_seed(seed)
        d = c["d_model"]
        eps = c.get("layer_norm_eps", 1e-5)
        layer = nn.TransformerEncoderLayer(d, c["n_heads"], dim_feedforward=c["d_ff"], dropout=0.0,
                                           activation=c.get("activation", "relu"), layer_norm_eps=eps,
                                           batch_first=True, norm_first=c.get("norm_first", False))
        norm = nn.LayerNorm(d, eps=eps) if c.get("final_norm", False) else None
        self.encoder = nn.TransformerEncoder(layer, c["n_layers"], norm=norm, enable_nested_tensor=True)
        self.embedding = nn.Embedding(c["vocab_size"], d)
        self.position_embedding = (nn.Embedding(c["max_positions"], d)
                                   if c["positional_encoding"] == "learned" else None)
        if not pytorch_init:
            self._vary(g)
        for m in (self.encoder, self.embedding, self.position_embedding):
            if m is not None:
                m.eval()

    def _vary(self, g):
        """PyTorch starts biases at 0, LayerNorms at (1, 0) and every layer of an nn.TransformerEncoder
        as a copy of the same one; random values everywhere make each tensor count."""
        c = self.config
        d = c["d_model"]
        with torch.no_grad():
            emb_std = 1.0 / math.sqrt(d) if c.get("scale_embedding", True) else 1.0
            self.embedding.weight.copy_(torch.randn(self.embedding.weight.shape, generator=g) * emb_std)
            if self.position_embedding is not None:
                self.position_embedding.weight.copy_(torch.randn(self.position_embedding.weight.shape, generator=g))
            for name, p in self.encoder.named_parameters():
                if name.endswith("bias"):
                    p.copy_(torch.randn(p.shape, generator=g) * 0.1)
                elif "norm" in name:
                    p.copy_(1.0 + torch.randn(p.shape, generator=g) * 0.2)
                else:  # Xavier-uniform, as PyTorch's own in_proj initialisation
                    bound = math.sqrt(6.0 / (p.shape[0] + p.shape[1]))
                    p.copy_((torch.rand(p.shape, generator=g) * 2 - 1) * bound)

    def inputs(self, ids, dtype=torch.float32):
        """x (B, S, d) for a list of B id lists, zero past each sequence's end, and the padding mask."""
        c = self.config
        d = c["d_model"]
        B, S = len(ids), max(len(s) for s in ids)
        x = torch.zeros(B, S, d, dtype=dtype)
        mask = torch.ones(B, S, dtype=torch.bool)  # True: padding
        pe = None
        if c["positional_encoding"] == "sinusoidal":
            pe = torch.from_numpy(sinusoidal(S, d, c.get("pe_layout", "interleaved"),
                                             c.get("pe_base", 10000.0))).to(dtype)
        for b, seq in enumerate(ids):
            L = len(seq)
            e = self.embedding(torch.tensor(seq, dtype=torch.long)).to(dtype)
            if c.get("scale_embedding", True):
                e = e * math.sqrt(d)
            if pe is not None:
                e = e + pe[:L]
            elif self.position_embedding is not None:
                e = e + self.position_embedding.weight[:L].to(dtype)
            x[b, :L] = e
            mask[b, :L] = False
        return x, mask

    def forward(self, ids, fast):
        """Hidden states, one float64 array (L, d) per sequence, the batch run as one padded batch.

        fast=True: eval under torch.no_grad() (PyTorch's fast path, nested tensors when padded);
        fast=False: eval with gradients enabled (the plain path of the module's Python code)."""
        with torch.set_grad_enabled(not fast):
            x, mask = self.inputs(ids)
            y = self.encoder(x, src_key_padding_mask=mask if len(ids) > 1 else None)
        y = y.detach().to(torch.float64).numpy()
        return [y[b, : len(seq)] for b, seq in enumerate(ids)]

    def forward64(self, ids):
        """The same weights run in float64 (the plain path): the reference both float32 engines are
        measured against where float32 itself cannot reach the bar (an ill-conditioned input)."""
        if not hasattr(self, "_encoder64"):
            self._encoder64 = copy.deepcopy(self.encoder).double()
        with torch.enable_grad():
            x, mask = self.inputs(ids, dtype=torch.float64)
            y = self._encoder64(x, src_key_padding_mask=mask if len(ids) > 1 else None)
        y = y.detach().numpy()
        return [y[b, : len(seq)] for b, seq in enumerate(ids)]
