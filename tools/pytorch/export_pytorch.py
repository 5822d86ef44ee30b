#!/usr/bin/python3
"""Export a PyTorch nn.TransformerEncoder and its token embedding as an ordo model directory.

An ordo model directory holds config.json, model.safetensors (F32, PyTorch's tensor names) and a
sentencepiece tokenizer.model. PyTorch records the weights; the few choices it does not record
(positional encoding, its layout, the sqrt(d) scaling of embeddings, ...) are passed here.

As a module:

    from export_pytorch import export
    export(encoder, embedding, "my_model", tokenizer="spm.model",
           positional_encoding="sinusoidal", pe_layout="interleaved", scale_embedding=True)

From the command line, with a state_dict saved by torch.save:

    tools/pytorch/export_pytorch.py state.pt --n-heads 4 --tokenizer spm.model --out my_model

What ordo cannot run (another activation, layers without biases, separate key/value sizes, ...)
is refused with one line `error: ...` (exit 2) and nothing is written. After writing, every setting
used (given, read off the modules, or a default) is printed to stderr, one `export: key = value` line
each (export(..., verbose=False) prints nothing).

A masked-language-model head (logits = h·Eᵀ + bias, the token embedding E tied as the output matrix)
is exported with head= (the module, or its bias): the tensor head.bias [vocab_size] and "head": "mlm"
in config.json. From the command line: --head mlm (the bias tensor named by --head-bias).
"""

import argparse
import json
import math
import os
import shutil
import sys
import tempfile

import numpy as np


class ExportError(Exception):
    """The model cannot be expressed as an ordo model directory; the message says why.

    `where` names the file at fault when it is not the weights (e.g. the tokenizer)."""

    def __init__(self, message, where=None):
        super().__init__(f"{where}: {message}" if where else message)
        self.message, self.where = message, where


CONFIG_CHOICES = {
    "activation": ("relu", "gelu"),
    "positional_encoding": ("sinusoidal", "learned", "none", "rope", "alibi-pairs", "alibi-symmetric", "alibi",
                            "t5-buckets"),
    "pe_layout": ("interleaved", "split"),
}

LAYER_TENSORS = (  # (name under layers.i., shape in terms of d and F)
    ("self_attn.in_proj_weight", ("3d", "d")),
    ("self_attn.in_proj_bias", ("3d",)),
    ("self_attn.out_proj.weight", ("d", "d")),
    ("self_attn.out_proj.bias", ("d",)),
    ("linear1.weight", ("F", "d")),
    ("linear1.bias", ("F",)),
    ("linear2.weight", ("d", "F")),
    ("linear2.bias", ("d",)),
    ("norm1.weight", ("d",)),
    ("norm1.bias", ("d",)),
    ("norm2.weight", ("d",)),
    ("norm2.bias", ("d",)),
)


# ---------------------------------------------------------------------------------------------
# safetensors: 8-byte little-endian header length N, N bytes of JSON, then the raw data.


SAFETENSORS_DTYPES = {np.dtype(np.float32): ("F32", "<f4"), np.dtype(np.int32): ("I32", "<i4")}


def write_safetensors(path, tensors):
    """Writes {name: array} to `path` in the safetensors format: float32 arrays as F32, int32 as I32,
    little-endian; anything else is stored as F32."""
    header, offset, blobs = {}, 0, []
    for name, array in tensors.items():
        array = np.asarray(array)
        dtype, layout = SAFETENSORS_DTYPES.get(array.dtype, ("F32", "<f4"))
        data = np.ascontiguousarray(array, dtype=layout).tobytes()
        header[name] = {"dtype": dtype, "shape": list(array.shape), "data_offsets": [offset, offset + len(data)]}
        offset += len(data)
        blobs.append(data)
    text = json.dumps(header, separators=(",", ":")).encode("utf-8")
    text += b" " * (-(8 + len(text)) % 8)  # the data starts 8-byte aligned
    with open(path, "wb") as f:
        f.write(len(text).to_bytes(8, "little"))
        f.write(text)
        for data in blobs:
            f.write(data)


# ---------------------------------------------------------------------------------------------
# From PyTorch objects to named float32 arrays plus the settings read off the modules.


def _array(t):
    """A tensor (or array) as a float32 numpy array."""
    if hasattr(t, "detach"):
        t = t.detach().cpu().float().numpy()
    return np.asarray(t, dtype=np.float32)


def _activation_name(fn, where):
    """relu or gelu from what nn.TransformerEncoderLayer stores in .activation; else ExportError."""
    import torch
    import torch.nn.functional as F

    if isinstance(fn, str):
        if fn in ("relu", "gelu"):
            return fn
    elif fn is F.relu or isinstance(fn, torch.nn.ReLU) or fn is torch.relu:
        return "relu"
    elif fn is F.gelu:
        return "gelu"
    elif isinstance(fn, torch.nn.GELU):
        if getattr(fn, "approximate", "none") == "none":
            return "gelu"
        raise ExportError(f"{where}: activation is GELU(approximate={fn.approximate!r}); ordo runs the exact "
                          "(erf) GELU only")
    raise ExportError(f"{where}: activation {fn!r} is not one ordo runs (ReLU or the exact GELU)")


def _from_module(encoder, settings):
    """Tensors of an nn.TransformerEncoder under their state_dict names, checking the layers."""
    import torch
    from torch import nn

    if type(encoder) is nn.TransformerEncoderLayer:  # one layer alone: an encoder of one layer
        encoder = nn.TransformerEncoder(encoder, 1, enable_nested_tensor=False)
    if type(encoder).forward is not nn.TransformerEncoder.forward:
        raise ExportError(f"encoder is a {type(encoder).__name__}, not an nn.TransformerEncoder; "
                          "pass its state_dict() if its forward pass is that of nn.TransformerEncoder")
    layers = list(encoder.layers)
    if not layers:
        raise ExportError("encoder has no layers")
    activations, norm_firsts, epsilons, heads, slopes = set(), set(), set(), set(), set()
    tensors = {}
    for i, layer in enumerate(layers):
        where = f"encoder.layers.{i}"
        # relative_positions.PositionalLayer: the same layer with rope or alibi(-symmetric) inside its
        # attention, exported as such when the config says so.
        relative = getattr(layer, "positions", None) in ("rope", "alibi-pairs", "alibi-symmetric", "alibi",
                                                         "t5-buckets")
        named = settings.get("positional_encoding")
        if relative and layer.positions != ("alibi-pairs" if named == "alibi" else named):
            raise ExportError(f"{where} applies {layer.positions} positions but positional_encoding is "
                              f"\"{settings.get('positional_encoding')}\"")
        if type(layer).forward is not nn.TransformerEncoderLayer.forward and not relative:
            raise ExportError(f"{where} is a {type(layer).__name__} with its own forward pass; ordo runs "
                              "nn.TransformerEncoderLayer")
        attn = layer.self_attn
        if not attn._qkv_same_embed_dim:
            raise ExportError(f"{where}.self_attn has kdim/vdim different from embed_dim (separate q/k/v "
                              "projections); ordo runs one in_proj of shape [3d, d]")
        if attn.bias_k is not None or attn.bias_v is not None:
            raise ExportError(f"{where}.self_attn uses add_bias_kv; ordo does not")
        if attn.add_zero_attn:
            raise ExportError(f"{where}.self_attn uses add_zero_attn; ordo does not")
        for norm_name in ("norm1", "norm2"):
            norm = getattr(layer, norm_name)
            if not isinstance(norm, nn.LayerNorm) or len(norm.normalized_shape) != 1:
                raise ExportError(f"{where}.{norm_name} is not a LayerNorm over the last dimension")
            epsilons.add(float(norm.eps))
        activations.add(_activation_name(layer.activation, where))
        norm_firsts.add(bool(layer.norm_first))
        heads.add(int(attn.num_heads))
        slopes.add(tuple(layer.alibi_slopes) if getattr(layer, "alibi_slopes", None) is not None else None)
        for name, param in layer.state_dict().items():
            tensors[f"layers.{i}.{name}"] = param
        for norm_name in ("norm1", "norm2"):  # a LayerNorm without elementwise_affine is one with weight 1, bias 0
            norm = getattr(layer, norm_name)
            if not norm.elementwise_affine:
                d = norm.normalized_shape[0]
                tensors[f"layers.{i}.{norm_name}.weight"] = torch.ones(d)
                tensors[f"layers.{i}.{norm_name}.bias"] = torch.zeros(d)
    if encoder.norm is not None:
        norm = encoder.norm
        if not isinstance(norm, nn.LayerNorm) or len(norm.normalized_shape) != 1:
            raise ExportError(f"encoder.norm is a {type(norm).__name__}; ordo's final norm is a LayerNorm")
        epsilons.add(float(norm.eps))
        if norm.elementwise_affine:
            tensors["norm.weight"], tensors["norm.bias"] = norm.weight, norm.bias
        else:
            d = norm.normalized_shape[0]
            tensors["norm.weight"], tensors["norm.bias"] = torch.ones(d), torch.zeros(d)

    if len(slopes) > 1:
        raise ExportError("the layers disagree on alibi_slopes; ordo uses one set for all")
    found = slopes.pop()
    if found is not None:
        given = settings.get("alibi_slopes")
        if given is not None and tuple(float(m) for m in given) != found:
            raise ExportError(f"alibi_slopes={list(given)} was given but the encoder's layers have {list(found)}")
        settings["alibi_slopes"] = list(found)

    def agree(key, values, what):
        if len(values) > 1:
            raise ExportError(f"the layers disagree on {what} ({sorted(values)}); ordo uses one {key} for all")
        found = values.pop()
        if settings.get(key) is not None and settings[key] != found:
            raise ExportError(f"{key}={settings[key]!r} was given but the encoder's layers have {found!r}")
        settings[key] = found

    agree("activation", activations, "the activation")
    agree("norm_first", norm_firsts, "norm_first")
    agree("layer_norm_eps", epsilons, "the LayerNorm eps (layers and final norm)")
    agree("n_heads", heads, "the number of heads")
    final = encoder.norm is not None
    if settings.get("final_norm") is not None and settings["final_norm"] != final:
        raise ExportError(f"final_norm={settings['final_norm']!r} was given but encoder.norm is "
                          f"{'set' if final else 'None'}")
    settings["final_norm"] = final
    return {name: _array(t) for name, t in tensors.items() if t is not None}


def _array_of_rank(t, ndim, what, expected):
    """t as a numpy array, refused unless it has ndim dimensions."""
    a = _array(t)
    if a.ndim != ndim:
        raise ExportError(f"{what} has shape {_shape(a)}; expected {expected}")
    return a


def _embedding_weight(e, what):
    """The weight of an nn.Embedding (or a [rows, d] tensor)."""
    from torch import nn

    if isinstance(e, nn.Embedding):
        if e.max_norm is not None:
            raise ExportError(f"{what} has max_norm={e.max_norm} (rows are renormalised at lookup); ordo looks "
                              "rows up as stored")
        e = e.weight
    return _array_of_rank(e, 2, what, "[rows, d_model]")


def _head_bias(head):
    """The output bias of a masked-language-model head (module with .bias, dict, or tensor)."""
    if isinstance(head, dict):
        names, head = sorted(head), head.get("bias")
    elif hasattr(head, "state_dict") and not hasattr(head, "shape"):
        names, head = sorted(head.state_dict()), getattr(head, "bias", None)
    else:
        names = ["bias"]
    if names != ["bias"]:
        raise ExportError(f"head has tensors {names}; ordo's mlm head has one, bias "
                          "(logits = h·Eᵀ + bias, E the tied token embedding)")
    return _array_of_rank(head, 1, "head bias", "[vocab_size]")


def _shape(a):
    return "[" + ",".join(str(n) for n in a.shape) + "]"


def _check_tensors(tensors, settings):
    """Infers the sizes from the tensor shapes and checks every tensor against them."""
    if "embedding.weight" not in tensors:
        raise ExportError("no token embedding (embedding.weight)")
    n_layers = 0
    while f"layers.{n_layers}.self_attn.in_proj_weight" in tensors:
        n_layers += 1
    if n_layers == 0:
        first = "layers.0.self_attn.in_proj_weight"
        prefixes = [name[: -len(first)] for name in tensors if name.endswith(first)]
        hint = f"; the encoder seems to sit under the prefix {prefixes[0]!r} (--prefix)" if prefixes else ""
        raise ExportError(f"no encoder layers ({first} is missing){hint}")
    V = tensors["embedding.weight"].shape[0]
    d = tensors["layers.0.self_attn.in_proj_weight"].shape[-1]  # the encoder sets the width
    if "layers.0.linear1.weight" not in tensors:
        raise ExportError("tensor layers.0.linear1.weight is missing")
    F = tensors["layers.0.linear1.weight"].shape[0]
    sizes = {"d": d, "3d": 3 * d, "F": F}

    expected = {"embedding.weight": (V, d)}
    if settings["positional_encoding"] == "learned":
        if "position_embedding.weight" not in tensors:
            raise ExportError("positional_encoding is \"learned\" but no position embedding was given")
        expected["position_embedding.weight"] = (tensors["position_embedding.weight"].shape[0], d)
    elif "position_embedding.weight" in tensors:
        raise ExportError(f"a position embedding was given but positional_encoding is "
                          f"\"{settings['positional_encoding']}\" (use \"learned\")")
    if settings["positional_encoding"] == "t5-buckets":
        if "position_bias" not in tensors:
            raise ExportError("positional_encoding is \"t5-buckets\" but no table of biases (position_bias=) was given")
        table = tensors["position_bias"]
        if table.ndim != 2:
            raise ExportError(f"tensor position_bias has shape {_shape(table)}, expected [n_heads,num_buckets]")
        expected["position_bias"] = tuple(table.shape)
    elif "position_bias" in tensors:
        raise ExportError(f"a table of position biases was given but positional_encoding is "
                          f"\"{settings['positional_encoding']}\" (use \"t5-buckets\")")
    for i in range(n_layers):
        for name, shape in LAYER_TENSORS:
            expected[f"layers.{i}.{name}"] = tuple(sizes[s] for s in shape)
    if "norm.weight" in tensors or "norm.bias" in tensors:
        expected["norm.weight"] = expected["norm.bias"] = (d,)
    if "head.bias" in tensors:
        expected["head.bias"] = (V,)

    for name, shape in expected.items():
        if name not in tensors:
            hint = " (a layer built with bias=False? ordo needs every bias)" if name.endswith("bias") else ""
            raise ExportError(f"tensor {name} is missing{hint}")
        if tuple(tensors[name].shape) != shape:
            raise ExportError(f"tensor {name} has shape {_shape(tensors[name])}, expected "
                              f"[{','.join(map(str, shape))}] (d_model={d}, d_ff={F})")
    for name in tensors:
        if name not in expected:
            raise ExportError(f"tensor {name} has no place in an ordo model (separate q/k/v projections, "
                              "add_bias_kv and extra layers are not supported)")
    for name, a in tensors.items():
        if not np.all(np.isfinite(a)):
            raise ExportError(f"tensor {name} holds NaN or infinite values")

    h = settings.get("n_heads")
    if h is None:
        raise ExportError("the number of heads is not recorded in a state_dict; give n_heads")
    if not isinstance(h, int) or h <= 0 or d % h != 0:
        raise ExportError(f"n_heads={h!r} must be a positive divisor of d_model={d}")
    if "position_bias" in tensors and tensors["position_bias"].shape[0] != h:
        raise ExportError(f"tensor position_bias has {tensors['position_bias'].shape[0]} rows, one per head: "
                          f"expected {h} (n_heads)")
    if settings.get("final_norm") is not None and settings["final_norm"] != ("norm.weight" in tensors):
        raise ExportError(f"final_norm={settings['final_norm']} but the encoder "
                          f"{'has' if 'norm.weight' in tensors else 'has no'} final norm (norm.weight)")
    settings["final_norm"] = "norm.weight" in tensors
    return {"vocab_size": int(V), "d_model": int(d), "n_heads": h, "d_ff": int(F), "n_layers": n_layers}


def _check_tokenizer(path, vocab_size, add_bos, add_eos):
    if not os.path.isfile(path):
        raise ExportError("no such tokenizer file", path)
    try:
        import sentencepiece as spm
    except ImportError:
        return  # ordo checks the same when it loads the model
    sp = spm.SentencePieceProcessor()
    try:
        sp.Load(path)
    except Exception:  # sentencepiece raises OSError or RuntimeError depending on version
        raise ExportError("not a sentencepiece model", path)
    if sp.GetPieceSize() > vocab_size:
        raise ExportError(f"has {sp.GetPieceSize()} pieces but the embedding has only {vocab_size} rows", path)
    if add_bos and sp.bos_id() < 0:
        raise ExportError("add_bos is set but the tokenizer has no BOS piece", path)
    if add_eos and sp.eos_id() < 0:
        raise ExportError("add_eos is set but the tokenizer has no EOS piece", path)


def export(encoder, embedding, out_dir, *, tokenizer, positional_encoding="sinusoidal", pe_layout="interleaved",
           scale_embedding=True, activation=None, norm_first=None, final_norm=None, position_embedding=None,
           pe_base=10000.0, add_bos=False, add_eos=False, layer_norm_eps=None, n_heads=None, head=None,
           position_bias=None, max_distance=None, alibi_slopes=None, verbose=True):
    """Writes out_dir/{config.json, model.safetensors, tokenizer.model}.

    encoder: an nn.TransformerEncoder (or a single nn.TransformerEncoderLayer), or its state_dict
      (names layers.i.*, norm.*).
    embedding, position_embedding: nn.Embedding or [rows, d] tensors.
    head: a masked-language-model head, logits = h·Eᵀ + bias with E the (tied) token embedding: a module
      whose parameter is `bias` (as tools/train/mlm.py's MaskedLMHead), a {"bias": ...} dict, or the
      bias itself ([vocab_size]). Written as the tensor head.bias and "head": "mlm" in config.json.
      None: no head (the key is left out).
    position_bias, max_distance: t5-buckets' table (n_heads, num_buckets), one for all layers, written as
      the tensor position_bias, and the distance its last buckets reach (relative_positions.py);
      config.json gets relative_attention_num_buckets and relative_attention_max_distance.
    alibi_slopes: for alibi-pairs or alibi-symmetric, one slope per head (the side(s) each head sees),
      written to config.json as alibi_slopes; None: ordo's default slopes (the key is left out). Taken
      from the layers (relative_positions.PositionalLayer's alibi_slopes) when they have them.
    verbose: print every setting used, one line each, to stderr.
    tokenizer: path of the sentencepiece model whose ids index `embedding`; None writes no tokenizer
      (the directory then serves only the engine, which takes ids: ordo's reference tests).
    activation, norm_first, final_norm, layer_norm_eps, n_heads: read off a module (a value given
      here must agree); for a state_dict they are taken from here (defaults: PyTorch's relu, post-LN,
      1e-5; final_norm from the presence of norm.weight; n_heads is required).
    Raises ExportError when ordo cannot run the model; nothing is written then.
    """
    settings = {"activation": activation, "norm_first": norm_first, "final_norm": final_norm,
                "layer_norm_eps": layer_norm_eps, "n_heads": n_heads, "alibi_slopes": alibi_slopes}
    if isinstance(encoder, dict):
        tensors = {}
        for name, t in encoder.items():
            if t is None:
                continue
            tensors[name] = _array(t)
        settings["activation"] = activation if activation is not None else "relu"
        settings["norm_first"] = bool(norm_first) if norm_first is not None else False
        settings["layer_norm_eps"] = layer_norm_eps if layer_norm_eps is not None else 1e-5
        if settings["activation"] not in CONFIG_CHOICES["activation"]:
            settings["activation"] = _activation_name(settings["activation"], "activation")
    else:
        settings["positional_encoding"] = positional_encoding  # (checked below) a rope or alibi layer must match it
        tensors = _from_module(encoder, settings)
    for key in tensors:
        if key in ("embedding.weight", "position_embedding.weight"):
            raise ExportError(f"the encoder holds a tensor named {key}; pass the embeddings separately")
    tensors["embedding.weight"] = _embedding_weight(embedding, "embedding")
    if "head.bias" in tensors:
        raise ExportError("the encoder holds a tensor named head.bias; pass the head separately (head=)")
    if head is not None:
        tensors["head.bias"] = _head_bias(head)
    if position_embedding is not None:
        tensors["position_embedding.weight"] = _embedding_weight(position_embedding, "position_embedding")
    if "position_bias" in tensors:
        raise ExportError("the encoder holds a tensor named position_bias; pass it separately (position_bias=)")
    if position_bias is not None:
        tensors["position_bias"] = _array(position_bias.detach() if hasattr(position_bias, "detach") else position_bias)

    for key, value in (("positional_encoding", positional_encoding), ("pe_layout", pe_layout)):
        if value not in CONFIG_CHOICES[key]:
            raise ExportError(f"{key}={value!r} must be one of {', '.join(CONFIG_CHOICES[key])}")
    settings["positional_encoding"] = positional_encoding
    sizes = _check_tensors(tensors, settings)
    if positional_encoding == "t5-buckets":
        buckets = tensors["position_bias"].shape[1]
        if buckets < 4 or buckets % 4 != 0:
            raise ExportError(f"tensor position_bias has {buckets} buckets; t5-buckets needs a multiple of 4 "
                              "(half each side, a half's first half exact)")
        if max_distance is None or not isinstance(max_distance, int) or max_distance <= buckets // 4:
            raise ExportError(f"max_distance={max_distance!r} must be a whole number above {buckets // 4} "
                              f"(the exact distances of {buckets} buckets)")
    slopes = settings.get("alibi_slopes")
    if slopes is not None:
        if positional_encoding not in ("alibi-pairs", "alibi", "alibi-symmetric"):
            raise ExportError(f"alibi_slopes was given but positional_encoding is \"{positional_encoding}\"")
        if len(slopes) != sizes["n_heads"] or not all(float(m) > 0 and math.isfinite(float(m)) for m in slopes):
            raise ExportError(f"alibi_slopes={list(slopes)} must be {sizes['n_heads']} positive numbers, one per head")
    eps = float(settings["layer_norm_eps"])
    if not (eps > 0 and math.isfinite(eps)):
        raise ExportError(f"layer_norm_eps={eps} must be a positive number")
    if not (float(pe_base) > 0 and math.isfinite(float(pe_base))):
        raise ExportError(f"pe_base={pe_base} must be a positive number")
    if tokenizer is not None:
        _check_tokenizer(tokenizer, sizes["vocab_size"], add_bos, add_eos)

    config = dict(sizes)
    config.update({
        "activation": settings["activation"],
        "norm_first": bool(settings["norm_first"]),
        "final_norm": bool(settings["final_norm"]),
        "layer_norm_eps": eps,
        "positional_encoding": positional_encoding,
        "pe_layout": pe_layout,
        "pe_base": float(pe_base),
    })
    if positional_encoding == "learned":
        config["max_positions"] = int(tensors["position_embedding.weight"].shape[0])
    if positional_encoding == "t5-buckets":
        config["relative_attention_num_buckets"] = int(tensors["position_bias"].shape[1])
        config["relative_attention_max_distance"] = int(max_distance)
    if slopes is not None:
        config["alibi_slopes"] = [float(m) for m in slopes]
    config.update({"scale_embedding": bool(scale_embedding), "tokenizer": "tokenizer.model",
                   "add_bos": bool(add_bos), "add_eos": bool(add_eos)})
    if head is not None:
        config["head"] = "mlm"

    # The order ordo lists them in: embeddings, then layer by layer, then the final norm.
    order = ["embedding.weight"] + (["position_embedding.weight"] if positional_encoding == "learned" else [])
    order += ["position_bias"] if positional_encoding == "t5-buckets" else []
    order += [f"layers.{i}.{name}" for i in range(sizes["n_layers"]) for name, _ in LAYER_TENSORS]
    order += ["norm.weight", "norm.bias"] if config["final_norm"] else []
    order += ["head.bias"] if head is not None else []

    # Write beside the destination, then rename: a failure leaves no half-written model.
    os.makedirs(out_dir, exist_ok=True)
    staging = tempfile.mkdtemp(prefix=".export-", dir=out_dir)
    try:
        with open(os.path.join(staging, "config.json"), "w") as f:
            json.dump(config, f, indent=2)
            f.write("\n")
        write_safetensors(os.path.join(staging, "model.safetensors"), {name: tensors[name] for name in order})
        names = ["config.json", "model.safetensors"]
        if tokenizer is not None:
            shutil.copyfile(tokenizer, os.path.join(staging, "tokenizer.model"))
            names.append("tokenizer.model")
        for name in names:
            os.replace(os.path.join(staging, name), os.path.join(out_dir, name))
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    if verbose:  # every setting, whether given, read off the modules or a default
        for key, value in config.items():
            print(f"export: {key} = {json.dumps(value)}", file=sys.stderr)
    return config


# ---------------------------------------------------------------------------------------------
# Command line


def _flag(text):
    if text in ("true", "1", "yes"):
        return True
    if text in ("false", "0", "no"):
        return False
    raise argparse.ArgumentTypeError(f"expected true or false, got {text!r}")


def main(argv=None):
    p = argparse.ArgumentParser(
        description="Export a PyTorch nn.TransformerEncoder state_dict (torch.save) as an ordo model directory.",
        epilog="The file may hold the encoder's state_dict plus the embeddings, or a whole model's state_dict "
               "(use --prefix and --embedding to say where the parts are).")
    p.add_argument("state_dict", help="file written by torch.save(state_dict)")
    p.add_argument("--out", required=True, help="model directory to write")
    p.add_argument("--tokenizer", required=True, help="sentencepiece model whose ids index the embedding")
    p.add_argument("--n-heads", type=int, required=True, help="attention heads (not recorded in a state_dict)")
    p.add_argument("--prefix", default="", help="name prefix of the encoder's tensors, e.g. 'encoder.'")
    p.add_argument("--embedding", default="embedding.weight", help="name of the token embedding tensor")
    p.add_argument("--position-embedding", default="position_embedding.weight",
                   help="name of the learned position embedding tensor (with --positional-encoding learned)")
    p.add_argument("--activation", choices=CONFIG_CHOICES["activation"], default="relu")
    p.add_argument("--norm-first", type=_flag, default=False, help="true: pre-LN; false: post-LN (default)")
    p.add_argument("--final-norm", type=_flag, default=None,
                   help="a LayerNorm after the last layer (default: present when the file has norm.weight)")
    p.add_argument("--layer-norm-eps", type=float, default=1e-5)
    p.add_argument("--positional-encoding", choices=CONFIG_CHOICES["positional_encoding"], default="sinusoidal")
    p.add_argument("--pe-layout", choices=CONFIG_CHOICES["pe_layout"], default="interleaved")
    p.add_argument("--pe-base", type=float, default=10000.0)
    p.add_argument("--scale-embedding", type=_flag, default=True, help="multiply embeddings by sqrt(d_model)")
    p.add_argument("--add-bos", type=_flag, default=False)
    p.add_argument("--add-eos", type=_flag, default=False)
    p.add_argument("--head", choices=("none", "mlm"), default="none",
                   help="mlm: the file holds a masked-language-model head's output bias (see --head-bias)")
    p.add_argument("--head-bias", default="head.bias", help="name of the head's output bias tensor (with --head mlm)")
    a = p.parse_args(argv)

    where = a.state_dict
    try:
        import torch
    except ImportError:
        print("error: reading a torch.save file needs PyTorch (Debian: apt-get install python3-torch)", file=sys.stderr)
        return 1
    try:
        try:
            state = torch.load(a.state_dict, map_location="cpu")
        except Exception as e:  # torch raises many kinds for a file that is not its own
            raise ExportError(f"cannot be read by torch.load ({type(e).__name__}: {e})".split("\n")[0])
        if hasattr(state, "state_dict") and not isinstance(state, dict):
            state = state.state_dict()
        for key in ("state_dict", "model_state_dict", "model"):  # a training checkpoint around the weights
            if isinstance(state, dict) and isinstance(state.get(key), dict):
                state = state[key]
                break
        if not isinstance(state, dict) or not all(hasattr(t, "shape") for t in state.values()):
            raise ExportError("does not hold a state_dict (a dict of tensors)")
        if a.embedding not in state:
            raise ExportError(f"no tensor {a.embedding} (the token embedding; see --embedding)")
        embedding = state[a.embedding]
        position = None
        if a.positional_encoding == "learned":
            if a.position_embedding not in state:
                raise ExportError(f"no tensor {a.position_embedding} (see --position-embedding)")
            position = state[a.position_embedding]
        head = None
        if a.head == "mlm":
            if a.head_bias not in state:
                raise ExportError(f"no tensor {a.head_bias} (the head's output bias; see --head-bias)")
            head = state[a.head_bias]
        taken = {a.embedding, a.position_embedding if position is not None else None,
                 a.head_bias if head is not None else None}
        encoder = {k[len(a.prefix):]: v for k, v in state.items() if k.startswith(a.prefix) and k not in taken}
        if a.prefix:
            stray = [k for k in state if not k.startswith(a.prefix) and k not in taken]
            if stray:
                print(f"note: ignoring {len(stray)} tensors outside {a.prefix!r}, e.g. {stray[0]}", file=sys.stderr)
        config = export(encoder, embedding, a.out, tokenizer=a.tokenizer, positional_encoding=a.positional_encoding,
                        pe_layout=a.pe_layout, scale_embedding=a.scale_embedding, activation=a.activation,
                        norm_first=a.norm_first, final_norm=a.final_norm, position_embedding=position,
                        pe_base=a.pe_base, add_bos=a.add_bos, add_eos=a.add_eos,
                        layer_norm_eps=a.layer_norm_eps, n_heads=a.n_heads, head=head)
    except ExportError as e:
        print(f"error: {e.where or where}: {e.message}", file=sys.stderr)
        return 2
    print(f"wrote {a.out}: d_model {config['d_model']}, {config['n_layers']} layers, {config['n_heads']} heads, "
          f"vocab {config['vocab_size']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
