"""The masked language model ordo's trained models are: the PyTorch module that trains them, and the
same module rebuilt from an exported ordo model directory (config.json + model.safetensors).

    x_t    = E[id_t]·√d + P(t)                 E: the token embedding (one row per piece)
                                               P: sinusoidal (ordo's float64 formula), learned, or none;
                                               rope, alibi(-symmetric) and t5-buckets add nothing here and act in
                                               each layer's attention (tools/pytorch/relative_positions.py);
                                               t5-buckets' table of biases, position_bias (n_heads, num_buckets),
                                               is one for all layers
    h      = nn.TransformerEncoder(x)          post-LN layers, ReLU, then a final LayerNorm (norm.*)
    logits = h·Eᵀ + b                          the head: the input embedding tied as the output matrix,
                                               plus one bias per piece (head.bias)

The names of the parameters are the names ordo's files use: embedding.weight, position_embedding.weight,
position_bias, layers.i.* and norm.* (the encoder's own names), head.bias.

head="bert" puts BERT's transform before the tied matrix, logits = LayerNorm(GELU(h·Wᵀ + c))·Eᵀ + b
(head.transform.*): an experiment to compare the two heads by; ordo runs only the plain one.
"""

import json
import math
import os
import sys

import numpy as np
import torch
from torch import nn

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "pytorch"))
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from torch_encoder import sinusoidal  # noqa: E402  (tools/pytorch/)
from relative_positions import POSITIONS as RELATIVE, PositionalLayer, T5_BUCKETS, T5_MAX_DISTANCE  # noqa: E402


class MaskedLMHead(nn.Module):
    """logits = h·Eᵀ + bias, E the tied token embedding (passed in, not owned); with BERT's transform
    (dense, GELU, LayerNorm) applied to h first when d_model is given."""

    def __init__(self, vocab_size, d_model=None, layer_norm_eps=1e-5):
        super().__init__()
        self.bias = nn.Parameter(torch.zeros(vocab_size))
        self.transform = None
        if d_model is not None:
            self.transform = nn.Sequential(nn.Linear(d_model, d_model), nn.GELU(),
                                           nn.LayerNorm(d_model, eps=layer_norm_eps))

    def forward(self, h, embedding_weight):
        if self.transform is not None:
            h = self.transform(h)
        return h @ embedding_weight.t() + self.bias


class MaskedLM(nn.Module):
    def __init__(self, vocab_size, d_model, n_heads, d_ff, n_layers, positions="sinusoidal", max_positions=32,
                 dropout=0.0, layer_norm_eps=1e-5, head="tied", num_buckets=T5_BUCKETS, max_distance=T5_MAX_DISTANCE,
                 alibi_slopes=None):
        super().__init__()
        self.d_model, self.positions = d_model, positions
        self.embedding = nn.Embedding(vocab_size, d_model)
        nn.init.normal_(self.embedding.weight, std=1.0 / math.sqrt(d_model))  # ×√d gives unit-variance entries
        self.position_embedding = None
        if positions == "learned":
            self.position_embedding = nn.Embedding(max_positions, d_model)
            nn.init.normal_(self.position_embedding.weight, std=1.0 / math.sqrt(2.0))  # the sinusoids' mean square
        elif positions not in ("sinusoidal", "none") + RELATIVE:
            raise ValueError(f"positions {positions!r}: expected sinusoidal, learned, none or one of "
                             f"{', '.join(RELATIVE)}")
        sizes = dict(dim_feedforward=d_ff, dropout=dropout, activation="relu", layer_norm_eps=layer_norm_eps,
                     batch_first=True, norm_first=False)
        self.position_bias = None
        if positions in RELATIVE:  # inside the attention: tools/pytorch/relative_positions.py
            layer = PositionalLayer(d_model, n_heads, positions=positions, num_buckets=num_buckets,
                                    max_distance=max_distance, alibi_slopes=alibi_slopes, **sizes)
            if positions == "t5-buckets":  # zeros: training starts from no preference for any distance
                self.position_bias = nn.Parameter(torch.zeros(n_heads, num_buckets))
        else:
            layer = nn.TransformerEncoderLayer(d_model, n_heads, **sizes)
        self.encoder = nn.TransformerEncoder(layer, n_layers, norm=nn.LayerNorm(d_model, eps=layer_norm_eps),
                                             enable_nested_tensor=False)
        self._share_table()
        if head not in ("tied", "bert"):
            raise ValueError(f"head {head!r}: expected tied or bert")
        self.head = MaskedLMHead(vocab_size, d_model if head == "bert" else None, layer_norm_eps)
        self._pe = torch.zeros(0, d_model)

    def _share_table(self):
        """Hands t5-buckets' one table to every layer (after a copy of the model too)."""
        if self.position_bias is not None:
            for layer in self.encoder.layers:
                layer.share_table(self.position_bias)

    def pe(self, S):
        if self._pe.shape[0] < S:
            self._pe = torch.from_numpy(sinusoidal(max(S, 128), self.d_model).astype(np.float32))
        return self._pe[:S]

    def hidden(self, ids, padding=None, use_positions=True):
        """ids (B, S) long; padding (B, S) bool, True past a sequence's end. Returns h (B, S, d)."""
        S = ids.shape[1]
        x = self.embedding(ids) * math.sqrt(self.d_model)
        if use_positions and self.positions == "sinusoidal":
            x = x + self.pe(S)
        elif use_positions and self.positions == "learned":
            x = x + self.position_embedding.weight[:S]
        for layer in self.encoder.layers:  # rope and alibi act in every layer's attention
            if isinstance(layer, PositionalLayer):
                layer.use_positions = use_positions
        self._share_table()
        return self.encoder(x, src_key_padding_mask=padding)

    def logits(self, h):
        return self.head(h, self.embedding.weight)

    def config(self):
        """The sizes as ordo's config.json names them."""
        layer = self.encoder.layers[0]
        return {"vocab_size": self.embedding.weight.shape[0], "d_model": self.d_model,
                "n_heads": layer.self_attn.num_heads, "d_ff": layer.linear1.out_features,
                "n_layers": len(self.encoder.layers)}


def batch_tensors(seqs):
    """Id lists as one padded batch: ids (B, S) and the padding mask (True where there is no token)."""
    S = max(len(s) for s in seqs)
    ids = torch.zeros(len(seqs), S, dtype=torch.long)
    pad = torch.ones(len(seqs), S, dtype=torch.bool)
    for b, s in enumerate(seqs):
        ids[b, :len(s)] = torch.tensor(s)
        pad[b, :len(s)] = False
    return ids, pad


def read_safetensors(path):
    with open(path, "rb") as f:
        raw = f.read()
    n = int.from_bytes(raw[:8], "little")
    header = json.loads(raw[8:8 + n])
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        b, e = info["data_offsets"]
        out[name] = np.frombuffer(raw[8 + n + b:8 + n + e], dtype="<f4").reshape(info["shape"]).copy()
    return out


def load(model_dir):
    """A MaskedLM (eval mode) holding the weights of an exported ordo model directory with an mlm head."""
    with open(os.path.join(model_dir, "config.json")) as f:
        c = json.load(f)
    if c.get("head") != "mlm":
        raise ValueError(f"{model_dir}: config.json has no \"head\": \"mlm\"")
    m = MaskedLM(c["vocab_size"], c["d_model"], c["n_heads"], c["d_ff"], c["n_layers"], c["positional_encoding"],
                 c.get("max_positions", 32), 0.0, c["layer_norm_eps"],
                 num_buckets=c.get("relative_attention_num_buckets", T5_BUCKETS),
                 max_distance=c.get("relative_attention_max_distance", T5_MAX_DISTANCE),
                 alibi_slopes=c.get("alibi_slopes"))
    tensors = read_safetensors(os.path.join(model_dir, "model.safetensors"))
    state = {("encoder." + k if k.startswith(("layers.", "norm.")) else k): torch.from_numpy(v)
             for k, v in tensors.items()}
    m.load_state_dict(state, strict=True)
    return m.eval()
