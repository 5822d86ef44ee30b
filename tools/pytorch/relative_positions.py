"""Rotary (RoPE), ALiBi and T5's bucketed positions in PyTorch: the module ordo's rope, alibi and
t5-buckets models are trained with, and the formulas engine/reference.cpp has in C++.

None adds anything to the token vectors. All act inside each head's attention:

  rope   q and k of every head rotated pair by pair by the angle t·θ_i of their position t
         (Su et al., "RoFormer", 2021, eq. 34), θ_i = base^(−2i/dh); pairs are the interleaved
         dimensions (2i, 2i+1), as in that equation and in ordo's interleaved sinusoids:
             q'_{2i}   = q_{2i}·cos(tθ_i) − q_{2i+1}·sin(tθ_i)
             q'_{2i+1} = q_{2i}·sin(tθ_i) + q_{2i+1}·cos(tθ_i)
         so q'_t·k'_s depends on t − s and not on t or s alone.
  alibi  a bias added to each head's scores q·k/√dh before the softmax (Press, Smith and Lewis,
         "Train Short, Test Long", 2022), the slopes m_1..m_H = 2^(−8h/H) for h = 1..H (the paper's
         geometric sequence for H a power of two; for other H its rule of interleaving the next power's
         slopes). The paper's models are causal: a query sees only the keys up to itself. An encoder
         must see both sides, so the heads go in pairs (counted from 0): the even head of a pair is the
         paper's causal head, the odd one its mirror image, both with the slope of the pair's first head:
             even h:  b_ij = −m_h·(i − j)  for j ≤ i,   −∞ (no weight) for j > i
             odd h:   b_ij = −m_{h−1}·(j − i)  for j ≥ i,   −∞ for j < i
         Nothing is learned. Together a pair sees both sides, and each head knows which side it sees.
         (For an odd H the last head looks back alone.) alibi_slopes (config.json's key) gives each
         head its slope instead: all_slopes_in_pairs(8) is a pair for each of the 4-head set's slopes.
  alibi-symmetric  one slope both ways, −m_h·|i − j|, every head seeing both sides: a head cannot tell
         the piece before from the piece after by the bias alone, and a reversed text keeps every
         distance (the encoder gives it the same outputs reversed, and the same score).
  t5-buckets  a learned bias added to each head's scores q·k/√dh before the softmax (Raffel et al.,
         "Exploring the Limits of Transfer Learning with a Unified Text-to-Text Transformer", 2020,
         §2.1): the offset j − i of key and query falls in one of num_buckets buckets, and head h adds
         the scalar W[h, bucket(j − i)] of one table W (n_heads, num_buckets) that every layer shares:
             b_ij = W[h, bucket(j − i)]
         bucket() (relative_bucket below): half the buckets for keys before the query (and itself),
         half for keys after it; in each half, distances n = |j − i| below exact = num_buckets/4 have a
         bucket each, the rest are spaced by log(n) up to max_distance, and every distance past it
         shares the last bucket of its side. So the bias is Shaw et al.'s relative positions
         ("Self-Attention with Relative Position Representations", 2018) made a scalar per head,
         their clipping made logarithmic.

PositionalLayer is nn.TransformerEncoderLayer (post-LN, the same parameters under the same names,
so ordo's export reads it unchanged) with the self-attention written out so that the rotation or
the bias can enter it.
"""

import math

import torch
from torch import nn
import torch.nn.functional as F


def alibi_slopes(n_heads):
    """m_h for h = 1..n_heads (Press et al. 2022, their get_slopes)."""
    def power_of_two(n):
        return [2.0 ** (-8.0 * (k + 1) / n) for k in range(n)]
    if n_heads & (n_heads - 1) == 0:
        return power_of_two(n_heads)
    lower = 2 ** math.floor(math.log2(n_heads))
    return power_of_two(lower) + power_of_two(2 * lower)[0::2][:n_heads - lower]


def head_slopes(n_heads, kind="alibi-pairs", slopes=None):
    """The slope of each head, on the side(s) it sees: `slopes` when given (config.json's alibi_slopes,
    one per head), else m_h for alibi-symmetric and the pair's first head's m for alibi-pairs."""
    if slopes is not None:
        if len(slopes) != n_heads:
            raise ValueError(f"alibi_slopes has {len(slopes)} slopes for {n_heads} heads")
        return [float(m) for m in slopes]
    m = alibi_slopes(n_heads)
    return m if kind == "alibi-symmetric" else [m[2 * (h // 2)] for h in range(n_heads)]


def all_slopes_in_pairs(n_heads):
    """alibi_slopes for alibi-pairs with the paper's whole set on each side: pair p (heads 2p and 2p+1)
    takes m_p of the n_heads/2-head set, so each side's n_heads/2 heads are the paper's causal model
    of n_heads/2 heads, every slope of it (8 heads: 1/4, 1/16, 1/64, 1/256 on each side)."""
    if n_heads % 2:
        raise ValueError(f"{n_heads} heads cannot go in pairs")
    return [m for m in alibi_slopes(n_heads // 2) for _ in range(2)]


def alibi_bias(S, n_heads, first_position=0, dtype=torch.float32, kind="alibi-pairs", slopes=None):
    """(n_heads, S, S): alibi's pairs of heads, each seeing one side (−inf on the other), or
    −m_h·|i − j| for alibi-symmetric; `slopes`: one per head (head_slopes). Only i − j enters: a
    shift of every position changes nothing."""
    pos = torch.arange(S, dtype=torch.float64) + first_position
    offset = pos[:, None] - pos[None, :]  # i − j: > 0 for keys before the query
    slope = torch.tensor(head_slopes(n_heads, kind, slopes), dtype=torch.float64)[:, None, None]
    if kind == "alibi-symmetric":
        return (-slope * offset.abs()).to(dtype)
    looks_back = torch.tensor([h % 2 == 0 for h in range(n_heads)])[:, None, None]
    seen = torch.where(looks_back, offset >= 0, offset <= 0)
    return torch.where(seen, -slope * offset.abs(), torch.tensor(float("-inf"), dtype=torch.float64)).to(dtype)


def rope_angles(S, dh, base=10000.0, first_position=0):
    """(S, dh/2) angles t·θ_i, θ_i = base^(−2i/dh), computed in float64."""
    pos = torch.arange(S, dtype=torch.float64) + first_position
    theta = base ** (-2.0 * torch.arange(dh // 2, dtype=torch.float64) / dh)
    return pos[:, None] * theta[None, :]


def rope(x, base=10000.0, first_position=0):
    """x (..., S, dh) rotated pair by pair (2i, 2i+1) by t·θ_i; an odd last dimension is left as it is."""
    S, dh = x.shape[-2], x.shape[-1]
    a = rope_angles(S, dh, base, first_position)
    cos, sin = torch.cos(a).to(x.dtype), torch.sin(a).to(x.dtype)
    even, odd = x[..., 0:2 * (dh // 2):2], x[..., 1:2 * (dh // 2):2]
    out = x.clone()
    out[..., 0:2 * (dh // 2):2] = even * cos - odd * sin
    out[..., 1:2 * (dh // 2):2] = even * sin + odd * cos
    return out


# T5's buckets as ordo trains them: 32 buckets (T5's), 16 each side, distances 0..7 exact, 8..31 in
# eight log-spaced buckets; max_distance 32 (T5's is 128) is the training length, so that every
# bucket holds distances seen in training and every distance past it shares a trained bucket.
T5_BUCKETS, T5_MAX_DISTANCE = 32, 32


def relative_bucket(offset, num_buckets=T5_BUCKETS, max_distance=T5_MAX_DISTANCE):
    """The bucket of offset j − i (an int), computed in float64:

        half = num_buckets // 2, exact = half // 2, n = |j − i|
        bucket = (half if j > i else 0) + (n                                                    if n < exact
                                           min(half − 1, exact + ⌊(half − exact)·log(n / exact)
                                                                   / log(max_distance / exact) + 1e-9⌋)  else)

    The 1e-9 puts an n where the log ratio is a whole number (n = 16 of 32 buckets, max_distance 32)
    in the bucket the exact arithmetic gives, whatever the last bit of log() on the machine."""
    half = num_buckets // 2
    exact = half // 2
    n = abs(offset)
    side = half if offset > 0 else 0
    if n < exact:
        return side + n
    k = exact + math.floor((half - exact) * math.log(n / exact) / math.log(max_distance / exact) + 1e-9)
    return side + min(half - 1, k)


def bucket_table(S, num_buckets=T5_BUCKETS, max_distance=T5_MAX_DISTANCE):
    """(S, S) long: bucket(j − i) at row i, column j."""
    by_offset = [relative_bucket(o, num_buckets, max_distance) for o in range(-(S - 1), S)]
    index = torch.arange(S)[None, :] - torch.arange(S)[:, None] + (S - 1)  # j − i + S − 1
    return torch.tensor(by_offset, dtype=torch.long)[index]


def bucket_bias(table, S, num_buckets, max_distance):
    """(n_heads, S, S): table[h, bucket(j − i)] for the table (n_heads, num_buckets)."""
    return table[:, bucket_table(S, num_buckets, max_distance)]


# The schemes that act inside the attention; "alibi" is alibi-pairs' first name, read as it.
POSITIONS = ("rope", "alibi-pairs", "alibi-symmetric", "alibi", "t5-buckets")


class PositionalLayer(nn.TransformerEncoderLayer):
    """A post-LN encoder layer whose attention applies `positions` ("rope", "alibi-pairs", "alibi-symmetric"
    or "t5-buckets"). For t5-buckets the table of biases belongs to the model, shared by its layers:
    share_table() hands it to each layer (held outside the layer's parameters, so that it is one
    tensor, saved once)."""

    def __init__(self, *args, positions="rope", base=10000.0, num_buckets=T5_BUCKETS, max_distance=T5_MAX_DISTANCE,
                 alibi_slopes=None, **kwargs):
        super().__init__(*args, **kwargs)
        if positions not in POSITIONS:
            raise ValueError(f"positions {positions!r}: expected one of {', '.join(POSITIONS)}")
        if self.norm_first:
            raise ValueError("PositionalLayer is post-LN (norm_first=False)")
        self.positions, self.base = "alibi-pairs" if positions == "alibi" else positions, base
        self.use_positions = True  # False: the layer without its rotation or bias (ordo's --no-pe)
        self.num_buckets, self.max_distance = num_buckets, max_distance
        self.alibi_slopes = None if alibi_slopes is None else [float(m) for m in alibi_slopes]  # None: the default
        self._table = ()  # t5-buckets: (the shared (n_heads, num_buckets) table,)

    def share_table(self, table):
        self._table = (table,)

    def attention(self, x, key_padding_mask):
        B, S, d = x.shape
        a = self.self_attn
        h = a.num_heads
        dh = d // h
        qkv = F.linear(x, a.in_proj_weight, a.in_proj_bias)  # [q k v] = x·W_inᵀ + b_in
        q, k, v = (t.reshape(B, S, h, dh).transpose(1, 2) for t in qkv.split(d, dim=-1))  # (B, h, S, dh)
        if self.use_positions and self.positions == "rope":
            q, k = rope(q, self.base), rope(k, self.base)
        scores = q @ k.transpose(-1, -2) / math.sqrt(dh)  # (B, h, S, S)
        if self.use_positions and self.positions == "t5-buckets":
            if not self._table:
                raise ValueError("a t5-buckets layer needs its model's table (share_table)")
            scores = scores + bucket_bias(self._table[0], S, self.num_buckets, self.max_distance).to(scores.dtype)
        elif self.use_positions and self.positions != "rope":
            scores = scores + alibi_bias(S, h, dtype=scores.dtype, kind=self.positions, slopes=self.alibi_slopes)
        if key_padding_mask is not None:  # keys past a sequence's end get no weight
            mask = key_padding_mask[:, None, None, :]
            if self.positions == "alibi-pairs":  # a padded query that looks ahead sees only padding: it keeps
                mask = mask & ~torch.eye(S, dtype=torch.bool)  # itself (its output is never read)
            scores = scores.masked_fill(mask, float("-inf"))
        weights = torch.softmax(scores, dim=-1)
        out = (weights @ v).transpose(1, 2).reshape(B, S, d)
        return a.out_proj(out)

    def forward(self, src, src_mask=None, src_key_padding_mask=None, **kwargs):
        if src_mask is not None:
            raise ValueError("PositionalLayer takes no attention mask beyond the padding")
        x = self.norm1(src + self.dropout1(self.attention(src, src_key_padding_mask)))
        return self.norm2(x + self._ff_block(x))
