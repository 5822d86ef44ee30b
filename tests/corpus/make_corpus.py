#!/usr/bin/python3
"""Writes tests/corpus/: tiny models that are malformed (bad/) or valid but unusual (odd/).

Each case is a directory: a model (config.json, model.safetensors, tokenizer.model), optionally
  input.txt  texts for `ordo encode --input` (else the text "the cat sat on the mat"),
  args       extra arguments for `ordo encode`,
  command    the command to run instead of `encode --json` (e.g. `info`),
  expect.txt bad: substrings the one `error:` line must hold (besides the case's path);
             odd: substrings stdout must hold,
  same_as    odd: another odd case whose output this one must equal byte for byte.
tests/cli/test_corpus.cpp runs them all. Run this script from anywhere; it rewrites the corpus whole.
The weights are multiples of 1/64, exact in F32, F16 and BF16, so the dtype variants of the base
model must give the same vectors bit for bit.
"""
import json
import os
import random
import shutil
import struct
import sys
import tempfile

import numpy as np
import sentencepiece as spm

ROOT = os.path.dirname(os.path.abspath(__file__))
V, D, H, F = 64, 8, 2, 16

# ---------------------------------------------------------------------------------------------
# Tokenizers: small unigram models trained on a fixed text, with no normalization table.

TRAIN_TEXT = """the cat sat on the mat
the mat sat on the cat
a dog ran to the red house
the big tree stood by the old road
she read a book under the tree
he wrote a short letter to his sister
birds sing in the morning and sleep at night
a small boat crossed the quiet lake
the children played in the park after school
rain fell on the roof of the house
""" * 4


def train_tokenizer(path, **extra):
    # Fixed paths: the trainer records them in the model, and the same inputs must give the same bytes.
    tmp = os.path.join(tempfile.gettempdir(), "ordo-corpus-tokenizer")
    os.makedirs(tmp, exist_ok=True)
    if True:
        text = os.path.join(tmp, "train.txt")
        with open(text, "w") as f:
            f.write(TRAIN_TEXT)
        spm.SentencePieceTrainer.train(
            input=text, model_prefix=os.path.join(tmp, "m"), vocab_size=V, model_type="unigram",
            character_coverage=1.0, normalization_rule_name="identity", num_threads=1,
            minloglevel=2, **extra)
        shutil.copy(os.path.join(tmp, "m.model"), path)
    shutil.rmtree(tmp)


# ---------------------------------------------------------------------------------------------
# safetensors, written by hand so that every rule can be broken on purpose.

def weights(config, seed=1):
    """The tensors a config asks for, as float32 arrays of multiples of 1/64."""
    rng = np.random.default_rng(seed)
    d, f, v = config["d_model"], config["d_ff"], config["vocab_size"]

    def t(*shape):
        return (rng.integers(-32, 33, size=shape) / 64.0).astype(np.float32)

    out = {"embedding.weight": t(v, d)}
    if config.get("positional_encoding") == "learned":
        out["position_embedding.weight"] = t(config["max_positions"], d)
    for i in range(config["n_layers"]):
        p = f"layers.{i}."
        out[p + "self_attn.in_proj_weight"] = t(3 * d, d)
        out[p + "self_attn.in_proj_bias"] = t(3 * d)
        out[p + "self_attn.out_proj.weight"] = t(d, d)
        out[p + "self_attn.out_proj.bias"] = t(d)
        out[p + "linear1.weight"] = t(f, d)
        out[p + "linear1.bias"] = t(f)
        out[p + "linear2.weight"] = t(d, f)
        out[p + "linear2.bias"] = t(d)
        out[p + "norm1.weight"] = 1 + t(d) / 2
        out[p + "norm1.bias"] = t(d)
        out[p + "norm2.weight"] = 1 + t(d) / 2
        out[p + "norm2.bias"] = t(d)
    if config.get("final_norm"):
        out["norm.weight"] = 1 + t(d) / 2
        out["norm.bias"] = t(d)
    return out


def raw(array, dtype):
    a = np.ascontiguousarray(array, dtype=np.float32)
    if dtype == "F32":
        return a.astype("<f4").tobytes()
    if dtype == "F16":
        return a.astype("<f2").tobytes()
    if dtype == "BF16":
        return (a.view("<u4") >> 16).astype("<u2").tobytes()
    if dtype == "F64":
        return a.astype("<f8").tobytes()
    if dtype == "I64":
        return a.astype("<i8").tobytes()
    raise ValueError(dtype)


def safetensors(tensors, dtypes=None, order=None, metadata=None, pad=0, header_edit=None, data_edit=None,
                header_text=None, length=None):
    """tensors: name -> array (or (dtype, shape, bytes)). Returns the file's bytes."""
    dtypes = dtypes or {}
    names = order or list(tensors)
    header, data = {}, b""
    if metadata is not None:
        header["__metadata__"] = metadata
    for name in names:
        value = tensors[name]
        if isinstance(value, tuple):
            dtype, shape, blob = value
        else:
            dtype = dtypes.get(name, "F32")
            shape, blob = list(value.shape), raw(value, dtype)
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [len(data), len(data) + len(blob)]}
        data += blob
    if header_edit:
        header_edit(header)
    if data_edit:
        data = data_edit(data)
    text = header_text if header_text is not None else json.dumps(header).encode()
    text += b" " * pad
    n = len(text) if length is None else length
    return struct.pack("<Q", n) + text + data


# ---------------------------------------------------------------------------------------------
# Cases

BASE_CONFIG = {"vocab_size": V, "d_model": D, "n_heads": H, "d_ff": F, "n_layers": 1,
               "positional_encoding": "sinusoidal"}
cases = {"bad": {}, "odd": {}}


def case(kind, name, config=None, weights_bytes=None, tokenizer=None, expect=(), input_text=None, args=None,
         command=None, same_as=None, files=None):
    cfg = BASE_CONFIG if config is None else config
    c = {"config.json": cfg if isinstance(cfg, bytes) else (json.dumps(cfg, indent=2) + "\n").encode()}
    if weights_bytes is None:
        weights_bytes = safetensors(weights(BASE_CONFIG))
    c["model.safetensors"] = weights_bytes
    c["tokenizer.model"] = tokenizer if tokenizer is not None else TOKENIZER
    if expect:
        c["expect.txt"] = ("\n".join(expect) + "\n").encode()
    if input_text is not None:
        c["input.txt"] = input_text
    if args:
        c["args"] = (args + "\n").encode()
    if command:
        c["command"] = (command + "\n").encode()
    if same_as:
        c["same_as"] = (same_as + "\n").encode()
    for k, v in (files or {}).items():
        c[k] = v
    cases[kind][name] = c


def cfg(**changes):
    c = dict(BASE_CONFIG)
    for k, v in changes.items():
        if v is DROP:
            c.pop(k, None)
        else:
            c[k] = v
    return c


DROP = object()
W = weights(BASE_CONFIG)
LFS = b"version https://git-lfs.github.com/spec/v1\noid sha256:" + b"0" * 64 + b"\nsize 12345\n"


def edit(name, key, value):
    def f(h):
        h[name][key] = value
    return f


def st_cases():
    ST = "model.safetensors: "
    bad = lambda name, blob, *expect: case("bad", name, weights_bytes=blob, expect=(ST,) + expect)
    bad("st_empty", b"", "0 bytes, too short")
    bad("st_short", b"\x05\x00\x00", "3 bytes, too short")
    bad("st_lfs_pointer", LFS, "Git LFS pointer")
    bad("st_header_length_huge", safetensors(W, length=1 << 63), "header length 9223372036854775808", "exceeds")
    bad("st_header_length_past_end", safetensors(W, length=1 << 20), "header length 1048576", "past the end of the file")
    bad("st_header_length_zero", safetensors(W, length=0), "header length 0")
    bad("st_header_length_cuts_json", safetensors(W, length=40), "header is not valid JSON")
    bad("st_header_not_json", safetensors({}, header_text=b"{embedding.weight}"), "header is not valid JSON")
    bad("st_header_invalid_utf8", safetensors({}, header_text=b'{"\xff\xfe": 1}'), "header is not valid JSON")
    bad("st_header_array", safetensors({}, header_text=b"[1, 2]"), "header is an array of 2, not an object")
    bad("st_header_trailing_garbage", safetensors(W, pad=0, header_text=json.dumps(
        json.loads(safetensors(W)[8:8 + struct.unpack("<Q", safetensors(W)[:8])[0]])).encode() + b" x"),
        "header is not valid JSON")
    nul_padded = bytearray(safetensors(W, pad=6))
    n = struct.unpack("<Q", nul_padded[:8])[0]
    nul_padded[8 + n - 6:8 + n] = b"\0" * 6
    bad("st_header_nul_padding", bytes(nul_padded), "header is not valid JSON")
    deep = b'{"__metadata__": ' + b"[" * 100 + b"]" * 100 + b"}"
    bad("st_header_deep_nesting", safetensors({}, header_text=deep), "nests deeper than 32")
    dup = json.dumps({"embedding.weight": {"dtype": "F32", "shape": [V, D], "data_offsets": [0, V * D * 4]}})
    bad("st_duplicate_tensor", safetensors({}, header_text=(dup[:-1] + ", " + dup[1:]).encode()) + raw(W["embedding.weight"], "F32"),
        'repeats the key "embedding.weight"')
    bad("st_duplicate_metadata_key", safetensors(W, header_edit=lambda h: None, metadata={"a": "1"}).replace(
        b'{"__metadata__": {"a": "1"}', b'{"__metadata__": {"a": "1", "a": "2"}'), 'repeats the key "a"')
    for key in ("dtype", "shape", "data_offsets"):
        bad(f"st_missing_{key}", safetensors(W, header_edit=lambda h, k=key: h["layers.0.linear1.weight"].pop(k)),
            'tensor "layers.0.linear1.weight": missing "' + key + '"')
    bad("st_entry_not_object", safetensors(W, header_edit=lambda h: h.update({"extra": 5})), 'tensor "extra" is 5, not an object')
    bad("st_dtype_not_string", safetensors(W, header_edit=edit("layers.0.linear1.bias", "dtype", 32)),
        'tensor "layers.0.linear1.bias": dtype is 32, not a string')
    bad("st_dtype_unknown", safetensors(W, header_edit=edit("layers.0.linear1.bias", "dtype", "F33")),
        'tensor "layers.0.linear1.bias": unknown dtype "F33"')
    bad("st_dtype_lowercase", safetensors(W, header_edit=edit("layers.0.linear1.bias", "dtype", "f32")), 'unknown dtype "f32"')
    bad("st_dtype_i64", safetensors(W, dtypes={"layers.0.norm1.bias": "I64"}),
        "tensor layers.0.norm1.bias has dtype I64; ordo loads F32, F16 and BF16")
    bad("st_dtype_f64", safetensors(W, dtypes={"embedding.weight": "F64"}), "tensor embedding.weight has dtype F64")
    bad("st_shape_not_array", safetensors(W, header_edit=edit("layers.0.linear1.bias", "shape", 16)),
        'tensor "layers.0.linear1.bias": shape is 16, not an array')
    bad("st_shape_negative", safetensors(W, header_edit=edit("layers.0.linear1.bias", "shape", [-16])), "shape holds -16")
    bad("st_shape_float", safetensors(W, header_edit=edit("layers.0.linear1.bias", "shape", [16.0])), "shape holds 16.0")
    bad("st_shape_string", safetensors(W, header_edit=edit("layers.0.linear1.bias", "shape", ["16"])), 'shape holds "16"')
    bad("st_shape_overflow", safetensors(W, header_edit=edit("layers.0.linear1.bias", "shape", [1 << 32, 1 << 32, 16])),
        'tensor "layers.0.linear1.bias": element count of the shape overflows 64 bits')
    bad("st_shape_bytes_overflow", safetensors(W, header_edit=edit("layers.0.linear1.bias", "shape", [1 << 62])),
        "byte count of the shape overflows 64 bits")
    bad("st_shape_mismatch_bytes", safetensors(W, header_edit=edit("layers.0.linear1.bias", "shape", [15])),
        'tensor "layers.0.linear1.bias": data_offsets', "hold 64 bytes but F32 [15] needs 60")
    bad("st_offsets_one_number", safetensors(W, header_edit=edit("layers.0.linear1.bias", "data_offsets", [0])),
        "data_offsets is an array of 1, not two byte offsets")
    bad("st_offsets_negative", safetensors(W, header_edit=lambda h: h["embedding.weight"].update(data_offsets=[-4, 2044])),
        'tensor "embedding.weight": data_offsets is an array of 2')
    bad("st_offsets_reversed", safetensors(W, header_edit=lambda h: h["embedding.weight"].update(
        data_offsets=h["embedding.weight"]["data_offsets"][::-1])), "end before they begin")
    bad("st_offsets_past_end", safetensors(W, data_edit=lambda d: d[:-4]), "past the end of the data buffer")
    bad("st_offsets_huge", safetensors(W, header_edit=edit("layers.0.linear1.bias", "data_offsets", [0, (1 << 64) - 1])),
        "data_offsets end at byte 18446744073709551615")
    bad("st_offsets_above_u64", safetensors(W, header_edit=edit("layers.0.linear1.bias", "data_offsets", [0, 1 << 64])),
        "data_offsets is an array of 2")

    def overlap(h):
        b = h["layers.0.norm2.bias"]["data_offsets"]
        h["layers.0.norm2.bias"]["data_offsets"] = [b[0] - 4, b[1] - 4]
    bad("st_offsets_overlap", safetensors(W, header_edit=overlap, data_edit=lambda d: d[:-4]), "(overlap)")

    def gap(h):
        b = h["layers.0.norm2.bias"]["data_offsets"]
        h["layers.0.norm2.bias"]["data_offsets"] = [b[0] + 4, b[1] + 4]
    bad("st_offsets_gap", safetensors(W, header_edit=gap, data_edit=lambda d: d + b"\0" * 4),
        'tensor "layers.0.norm2.bias" starts at data offset', "(gap)")
    bad("st_offsets_tail_unused", safetensors(W, data_edit=lambda d: d + b"\0" * 8), "data offset", "onwards is unused")
    bad("st_truncated", safetensors(W)[:-1], "past the end of the data buffer")
    bad("st_metadata_not_object", safetensors(W, metadata="pt"), '__metadata__ is "pt", not an object of strings')
    bad("st_metadata_number", safetensors(W, metadata={"step": 100}), '__metadata__ value for "step" is 100, not a string')
    bad("st_metadata_nested", safetensors(W, metadata={"a": {"b": "c"}}), '__metadata__ value for "a" is an object')
    bad("st_name_with_newline", safetensors(W, header_edit=lambda h: h.update({"a\nb": {"dtype": "Q4", "shape": [], "data_offsets": [0, 0]}})),
        'tensor "a\\nb": unknown dtype "Q4"')
    bad("st_missing_tensor", safetensors({k: v for k, v in W.items() if k != "layers.0.linear2.bias"}),
        "missing tensor layers.0.linear2.bias [8]")
    bad("st_wrong_shape", safetensors({**W, "layers.0.linear1.weight": W["layers.0.linear1.weight"].T.copy()}),
        "tensor layers.0.linear1.weight has shape [8,16], config wants [16,8]")
    bad("st_wrong_rank", safetensors({**W, "layers.0.norm1.weight": W["layers.0.norm1.weight"].reshape(1, D)}),
        "tensor layers.0.norm1.weight has shape [1,8], config wants [8]")
    nan = {k: v.copy() for k, v in W.items()}
    nan["layers.0.linear2.weight"][3, 5] = np.nan
    nan["norm.weight"] = np.ones(D, np.float32)
    bad("st_nan_weight", safetensors(nan), "tensor layers.0.linear2.weight holds NaN at element 53")
    inf = {k: v.copy() for k, v in W.items()}
    inf["embedding.weight"][1, 0] = np.inf
    case("bad", "st_inf_weight_info", weights_bytes=safetensors(inf), command="info",
         expect=(ST, "tensor embedding.weight holds infinity at element 8"))
    case("bad", "st_is_directory", weights_bytes=None, expect=(ST.strip(": ") + ": not a regular file",),
         files={"model.safetensors": None, "model.safetensors/README": b"a directory, not a file\n"})


def config_cases():
    CF = "config.json: "
    bad = lambda name, config, *expect, **kw: case("bad", name, config=config, expect=(CF,) + expect, **kw)
    bad("cfg_empty", b"", "not valid JSON")
    bad("cfg_tokenizer_is_config", cfg(tokenizer="config.json"), 'key "tokenizer" names "config.json"')
    bad("cfg_tokenizer_is_weights", cfg(tokenizer="model.safetensors"), 'key "tokenizer" names "model.safetensors"')
    bad("cfg_not_json", b"vocab_size = 64\n", "not valid JSON")
    bad("cfg_truncated", json.dumps(BASE_CONFIG).encode()[:-5], "not valid JSON")
    bad("cfg_array", b"[64, 8]", "holds an array of 2, not a JSON object")
    bad("cfg_invalid_utf8", b'{"vocab_size": 64, "d_model": 8, "n_heads": 2, "d_ff": 16, "n_layers": 1, '
        b'"positional_encoding": "sinusoidal", "note": "\xc3\x28"}', "not valid JSON")
    bad("cfg_duplicate_key", json.dumps(BASE_CONFIG)[:-1].encode() + b', "d_model": 16}', 'repeats the key "d_model"')
    bad("cfg_deep_nesting", json.dumps(BASE_CONFIG)[:-1].encode() + b', "x": ' + b"[" * 40 + b"]" * 40 + b"}",
        "nests deeper than 32")
    for key in ("vocab_size", "d_model", "n_heads", "d_ff", "n_layers", "positional_encoding"):
        bad(f"cfg_missing_{key}", cfg(**{key: DROP}), f'missing required key "{key}"')
    bad("cfg_vocab_string", cfg(vocab_size="64"), 'key "vocab_size" must be a positive integer, got "64"')
    bad("cfg_d_model_zero", cfg(d_model=0), 'key "d_model" must be positive, got 0')
    bad("cfg_n_heads_negative", cfg(n_heads=-2), 'key "n_heads" must be positive, got -2')
    bad("cfg_d_ff_fraction", cfg(d_ff=16.5), 'key "d_ff" must be a positive integer, got 16.5')
    bad("cfg_n_layers_bool", cfg(n_layers=True), 'key "n_layers" must be a positive integer, got true')
    bad("cfg_d_model_array", cfg(d_model=[8]), 'key "d_model" must be a positive integer, got an array of 1')
    bad("cfg_size_huge", cfg(d_ff=1 << 40), 'key "d_ff" is 1099511627776, above the limit')
    bad("cfg_size_u64_max", cfg(vocab_size=(1 << 64) - 1), 'key "vocab_size" is 18446744073709551615')
    bad("cfg_heads_do_not_divide", cfg(n_heads=3), 'key "d_model" (8) must be divisible by "n_heads" (3)')
    bad("cfg_activation_unknown", cfg(activation="swish"), 'key "activation" must be "relu" | "gelu" | "gelu-tanh", got "swish"')
    bad("cfg_activation_case", cfg(activation="ReLU"), 'key "activation"', '"ReLU"')
    bad("cfg_norm_first_int", cfg(norm_first=1), 'key "norm_first" must be true or false, got 1')
    bad("cfg_final_norm_string", cfg(final_norm="false"), 'key "final_norm" must be true or false, got "false"')
    bad("cfg_eps_zero", cfg(layer_norm_eps=0), 'key "layer_norm_eps" must be a positive number, got 0')
    bad("cfg_eps_negative", cfg(layer_norm_eps=-1e-5), 'key "layer_norm_eps" must be a positive number')
    bad("cfg_eps_string", cfg(layer_norm_eps="1e-5"), 'key "layer_norm_eps" must be a positive number, got "1e-5"')
    bad("cfg_eps_underflows_float", cfg(layer_norm_eps=1e-50), 'key "layer_norm_eps"', "rounds to 0 as a float")
    bad("cfg_eps_overflow_literal", b'{"vocab_size": 64, "d_model": 8, "n_heads": 2, "d_ff": 16, "n_layers": 1, '
        b'"positional_encoding": "sinusoidal", "layer_norm_eps": 1e999}', "not valid JSON")
    bad("cfg_pe_unknown", cfg(positional_encoding="rotary"), 'key "positional_encoding" must be', '"rotary"')
    bad("cfg_pe_layout_unknown", cfg(pe_layout="blocked"), 'key "pe_layout" must be "interleaved" | "split"')
    bad("cfg_pe_base_zero", cfg(pe_base=0), 'key "pe_base" must be a positive number')
    bad("cfg_pe_base_tiny", cfg(pe_base=1e-300), 'key "pe_base"', "too small")
    bad("cfg_learned_no_max_positions", cfg(positional_encoding="learned"), 'missing required key "max_positions"')
    bad("cfg_tokenizer_path", cfg(tokenizer="../tokenizer.model"), 'key "tokenizer" must name a file inside the model directory')
    bad("cfg_tokenizer_empty", cfg(tokenizer=""), 'key "tokenizer" must be a file name')
    bad("cfg_tokenizer_number", cfg(tokenizer=7), 'key "tokenizer" must be a file name, got 7')
    bad("cfg_add_bos_string", cfg(add_bos="yes"), 'key "add_bos" must be true or false')
    case("bad", "cfg_missing_file", config=b"", expect=("config.json: cannot open",), files={"config.json": None})
    case("bad", "cfg_is_directory", expect=("config.json: not a regular file",),
         files={"config.json": None, "config.json/README": b"a directory, not a file\n"})
    # Valid config, weights for another: the check against the file names the tensor.
    bad_w = lambda name, config, *expect: case("bad", name, config=config, expect=("model.safetensors: ",) + expect)
    bad_w("cfg_vocab_larger_than_weights", cfg(vocab_size=100), "tensor embedding.weight has shape [64,8], config wants [100,8]")
    bad_w("cfg_more_layers_than_weights", cfg(n_layers=2), "missing tensor layers.1.self_attn.in_proj_weight [24,8]")
    bad_w("cfg_millions_of_layers", cfg(n_layers=16777216), "missing tensor layers.1.self_attn.in_proj_weight")
    bad_w("cfg_final_norm_without_weights", cfg(final_norm=True), "missing tensor norm.weight [8]")
    bad_w("cfg_learned_without_table", cfg(positional_encoding="learned", max_positions=16),
          "missing tensor position_embedding.weight [16,8]")
    bad_w("cfg_d_ff_mismatch", cfg(d_ff=32), "tensor layers.0.linear1.weight has shape [16,8], config wants [32,8]")


def bpe_vocabulary(more, changes=None):
    """A byte-level BPE vocabulary: the 256 bytes' characters (GPT-2's bytes_to_unicode) as ids 0 .. 255, then `more`."""
    printable = [*range(0x21, 0x7F), *range(0xA1, 0xAD), *range(0xAE, 0x100)]
    shifted = [b for b in range(256) if b not in printable]
    chars = {b: chr(b) if b in printable else chr(0x100 + shifted.index(b)) for b in range(256)}
    vocab = {chars[b]: b for b in range(256)}
    vocab.update({p: 256 + i for i, p in enumerate(more)})
    vocab.update(changes or {})
    return vocab


def bpe_tokenizer(more, merges, changes=None, added=()):
    """tokenizer.json of a byte-level BPE (RoBERTa's layout) over bpe_vocabulary(more)."""
    return json.dumps({"added_tokens": list(added), "normalizer": None,
                       "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True},
                       "model": {"type": "BPE", "vocab": bpe_vocabulary(more, changes), "merges": merges}},
                      ensure_ascii=False).encode()


def tokenizer_cases():
    TK = "tokenizer.model: "
    bad = lambda name, blob, *expect, **kw: case("bad", name, tokenizer=blob, expect=(TK,) + expect, **kw)
    bad("tok_empty", b"", "is empty")
    bad("tok_garbage", bytes(random.Random(3).randrange(256) for _ in range(600)), "not a sentencepiece model")
    bad("tok_truncated", TOKENIZER[: len(TOKENIZER) // 2], "not a sentencepiece model")
    bad("tok_lfs_pointer", LFS, "Git LFS pointer")
    bad("tok_json", b'{"model": {"type": "BPE"}}\n', "not a sentencepiece model")
    bad("tok_too_many_pieces", TOKENIZER, "has 64 pieces but vocab_size is 48",
        config=cfg(vocab_size=48), weights_bytes=safetensors(weights(cfg(vocab_size=48))))
    bad("tok_add_bos_without_bos", NO_BOS, "config sets add_bos but the tokenizer has no BOS piece", config=cfg(add_bos=True))
    bad("tok_add_eos_without_eos", NO_BOS, "config sets add_eos but the tokenizer has no EOS piece", config=cfg(add_eos=True))
    case("bad", "tok_missing", expect=(TK.strip(": ") + ": cannot open",), files={"tokenizer.model": None})
    case("bad", "tok_is_directory", expect=(TK.strip(": ") + ": not a regular file",),
         files={"tokenizer.model": None, "tokenizer.model/README": b"a directory, not a file\n"})
    case("bad", "tok_named_file_missing", config=cfg(tokenizer="spm.model"), expect=("spm.model: cannot open",))
    # RoBERTa's byte-level BPE (tokenizer/bpe.h), named by the config: a file that is not JSON, a merge needing a
    # piece the vocabulary lacks, ids past the vocabulary, vocab.json without the merges.txt it needs.
    bpe = lambda name, files, *expect: case("bad", name, config=cfg(tokenizer=next(iter(files))), files=files,
                                            expect=expect)
    bpe("tok_bpe_not_json", {"tokenizer.json": b'{"model": {"type": "BPE", '}, "tokenizer.json: is not valid JSON (")
    bpe("tok_bpe_merge_not_in_vocab", {"tokenizer.json": bpe_tokenizer(["ab"], ["a b", "a c"])},
        'tokenizer.json: model.merges[1] ("a c") needs "ac", which the vocabulary does not have')
    bpe("tok_bpe_vocab_id_out_of_range", {"tokenizer.json": bpe_tokenizer(["ab"], [], {"ab": 400})},
        "tokenizer.json: model.vocab's ids are not 0 .. 256 once each (\"ab\": 400)")
    bpe("tok_bpe_added_id_out_of_range",
        {"tokenizer.json": bpe_tokenizer(["ab"], ["a b"], added=[{"id": 1000, "content": "<mask>", "lstrip": True}])},
        'tokenizer.json: added_tokens[0]: ("<mask>") has id 1000, not a piece\'s id nor the next after the 257 pieces')
    bpe("tok_bpe_vocab_json_without_merges", {"vocab.json": json.dumps(bpe_vocabulary(["ab"])).encode()},
        "merges.txt: cannot open")
    # A normalization table whose trie points outside itself: sentencepiece would read out of bounds.
    bad("tok_charsmap_trie_out_of_range", with_charsmap(TOKENIZER, bad_trie=True), "charsmap trie")
    bad("tok_charsmap_size_lies", with_charsmap(TOKENIZER, size_lie=True), "charsmap trie of")
    bad("tok_charsmap_not_terminated", with_charsmap(TOKENIZER, unterminated=True), "not NUL-terminated")
    # One piece of 100 KB: sentencepiece's trie builder recurses once per byte and overflows the stack
    # (the limit is the stack's: 32768 bytes with ulimit -s 8192).
    bad("tok_piece_100kb", with_piece(TOKENIZER, b"x" * 100000), "piece 64 is 100000 bytes long, more than the ")
    # An empty piece, or one holding a NUL byte: sentencepiece's trie builder (darts-clone) throws where
    # nothing can catch it, and the process aborts.
    bad("tok_piece_empty", with_piece(TOKENIZER, b""), "piece 64 is empty")
    bad("tok_piece_nul_byte", with_piece(TOKENIZER, b"ca\x00t"), "piece 64 holds a NUL byte")
    # A self-test sample that fails: sentencepiece would print the samples on stderr, raw bytes and all.
    bad("tok_self_test_fails", with_self_test(TOKENIZER, b"the cat", b"\x01\x1b[31m not these pieces"),
        "not a sentencepiece model")


def text_cases():
    IN = "input.txt: "
    bad = lambda name, text, *expect, **kw: case("bad", name, input_text=text, expect=(IN,) + expect, **kw)
    bad("txt_invalid_utf8", b"the cat\nsat \xff on the mat\n", "line 2: invalid UTF-8 at byte 4")
    bad("txt_overlong_utf8", b"\xc0\xafetc\n", "line 1: invalid UTF-8 at byte 0")
    bad("txt_surrogate", b"ok\nok\n\xed\xa0\x80\n", "line 3: invalid UTF-8 at byte 0")
    bad("txt_past_unicode", b"\xf4\x90\x80\x80\n", "line 1: invalid UTF-8 at byte 0")
    bad("txt_cut_sequence", b"caf\xc3", "line 1: invalid UTF-8 at byte 3")
    bad("txt_latin1", "café crème\n".encode("latin-1"), "line 1: invalid UTF-8 at byte 3")
    bad("txt_nul_byte", b"the cat\nsat\0on the mat\n", "line 2: holds a NUL byte at byte 3")
    bad("txt_binary", b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR\0\0\0\x10", "line 1: invalid UTF-8 at byte 0")  # the first bad line stops it
    bad("txt_utf16", "the cat sat\n".encode("utf-16"), "UTF-16 byte-order mark")
    bad("txt_too_many_tokens", b"the cat sat on the mat\n", "line 1: text has", "more than --max-tokens 3", args="--max-tokens 3")
    bad("txt_too_many_bytes", b"the cat sat on the mat " * 200 + b"\n", "line 1: text is 4600 bytes, more than --max-tokens 16 allows",
        args="--max-tokens 16")
    bad("txt_learned_positions", b"the cat sat on the mat\n", "line 1: text has", "the model's max_positions 4",
        config=cfg(positional_encoding="learned", max_positions=4),
        weights_bytes=safetensors(weights(cfg(positional_encoding="learned", max_positions=4))))
    case("bad", "txt_input_is_directory", input_text=None, expect=("input.txt: is a directory",),
         files={"input.txt/README": b"a directory, not a file\n"})


def odd_cases():
    case("odd", "base")
    same = lambda name, blob, **kw: case("odd", name, weights_bytes=blob, same_as="base", **kw)
    same("f16", safetensors(W, dtypes={k: "F16" for k in W}))
    same("bf16", safetensors(W, dtypes={k: "BF16" for k in W}))
    same("mixed_dtypes", safetensors(W, dtypes={k: ("F16", "BF16", "F32")[i % 3] for i, k in enumerate(W)}))
    same("header_padded", safetensors(W, pad=1000))
    same("misaligned_f32", safetensors(W, pad=3))  # the data buffer starts at an odd address
    same("tensors_reversed", safetensors(W, order=list(W)[::-1]))
    same("tensors_shuffled", safetensors(W, order=random.Random(5).sample(list(W), len(W))))
    same("metadata", safetensors(W, metadata={"format": "pt", "note": "weights \u00e9t\u00e9 \u732b"}))
    same("metadata_empty", safetensors(W, metadata={}))
    same("extra_tensors", safetensors({**W, "classifier.weight": ("I64", [2, 3], b"\1" * 48),
                                       "step": ("F64", [], b"\0" * 8), "empty": ("F32", [0, 8], b""),
                                       "optimizer.\u00e9tat": ("U8", [3], b"abc")}))
    same("header_pretty_printed", safetensors(W, header_text=json.dumps(
        json.loads(safetensors(W)[8:8 + struct.unpack("<Q", safetensors(W)[:8])[0]]), indent="\t").encode()))
    same("header_key_order", safetensors(W, header_text=json.dumps(
        {k: {"data_offsets": v["data_offsets"], "shape": v["shape"], "dtype": v["dtype"], "comment": "x"}
         for k, v in json.loads(safetensors(W)[8:8 + struct.unpack("<Q", safetensors(W)[:8])[0]]).items()}).encode()))
    case("odd", "config_extra_keys", config=cfg(architectures=["Encoder"], torch_dtype="float32", notes={"a": [1, 2]}),
         same_as="base")
    case("odd", "config_explicit_defaults", config=cfg(activation="relu", norm_first=False, final_norm=False,
         layer_norm_eps=1e-5, pe_layout="interleaved", pe_base=10000, scale_embedding=True, tokenizer="tokenizer.model",
         add_bos=False, add_eos=False), same_as="base")
    case("odd", "config_nulls_mean_default", config=cfg(activation=None, layer_norm_eps=None, tokenizer=None), same_as="base")
    case("odd", "config_integral_floats", config=cfg(d_model=8.0, vocab_size=64.0), same_as="base")
    case("odd", "config_bom_crlf", config=b"\xef\xbb\xbf" + json.dumps(BASE_CONFIG, indent=1).replace("\n", "\r\n").encode(),
         same_as="base")
    case("odd", "config_vocab_above_pieces", config=cfg(vocab_size=100),
         weights_bytes=safetensors({**W, "embedding.weight": np.concatenate([W["embedding.weight"],
                                    np.ones((36, D), np.float32)])}), same_as="base")
    case("odd", "tokenizer_other_name", config=cfg(tokenizer="spm.model"), same_as="base",
         files={"tokenizer.model": None, "spm.model": TOKENIZER})
    for name, changes in {"gelu_prenorm_final": dict(activation="gelu", norm_first=True, final_norm=True),
                          "learned_positions": dict(positional_encoding="learned", max_positions=32),
                          "no_positions_unscaled": dict(positional_encoding="none", scale_embedding=False),
                          "split_layout": dict(pe_layout="split", pe_base=100.0),
                          "bos_eos": dict(add_bos=True, add_eos=True),
                          "one_head_two_layers": dict(n_heads=1, n_layers=2),
                          "odd_width": dict(d_model=6, n_heads=3, d_ff=5)}.items():
        c = cfg(**changes)
        case("odd", name, config=c, weights_bytes=safetensors(weights(c)))
    case("odd", "bos_eos_truncated", config=cfg(add_bos=True, add_eos=True),
         weights_bytes=safetensors(weights(cfg(add_bos=True, add_eos=True))), args="--max-tokens 4 --truncate",
         expect=('"ids":[1,', ',2],"embedding"'))
    # Texts: each must load; equal texts must give equal lines.
    text = lambda name, data, **kw: case("odd", name, input_text=data, **kw)
    text("txt_lf", b"the cat sat on the mat\n\na dog\n")
    text("txt_crlf", b"the cat sat on the mat\r\n\r\na dog\r\n", same_as="txt_lf")
    text("txt_bom", b"\xef\xbb\xbfthe cat sat on the mat\n\na dog\n", same_as="txt_lf")
    text("txt_no_final_newline", b"the cat sat on the mat\n\na dog", same_as="txt_lf")
    text("txt_empty_file", b"")
    text("txt_only_newlines", b"\n\n\n", expect=('"ids":[]',))
    text("txt_spaces_and_tabs", b"   \t  \n the   cat \t sat\n")
    text("txt_unicode", "na\u00efve caf\u00e9 \u732b \U0001f408 \u05e9\u05dc\u05d5\u05dd \u0645\u0631\u062d\u0628\u0627\n".encode())
    text("txt_control_chars", b"the\x01cat\x1b[31m sat\x7f\n")
    text("txt_lone_cr", b"the cat\rsat on the mat\n")
    text("txt_truncated", b"the cat sat on the mat " * 40 + b"\n", args="--max-tokens 5 --truncate",
         expect=('"ids":[',))
    text("txt_long_line_truncated", b"the cat sat on the mat " * 3000 + b"\n", args="--max-tokens 16 --truncate")
    text("txt_many_lines", b"".join(b"line %d of the text\n" % i for i in range(300)))


def head_cases():
    """The masked-language-model head: "head": "mlm" in config.json and the tensor head.bias [V]."""
    HC = cfg(head="mlm")
    HW = {**W, "head.bias": (np.arange(V, dtype=np.float32) % 7 - 3) / 64}
    ST, CF = "model.safetensors: ", "config.json: "
    bad = lambda name, config, blob, *expect, **kw: case("bad", name, config=config, weights_bytes=blob,
                                                         expect=expect, **kw)
    bad("head_unknown", cfg(head="bert"), None, CF + 'key "head" must be "mlm"', '"bert"')
    bad("head_uppercase", cfg(head="MLM"), None, CF + 'key "head" must be "mlm"')
    bad("head_null", cfg(head=None), None, CF + 'key "head" must be "mlm"', "null")
    bad("head_number", cfg(head=1), None, CF + 'key "head" must be "mlm"', "got 1")
    bad("head_bias_missing", HC, safetensors(W), ST + "missing tensor head.bias [64]")
    bad("head_bias_wrong_shape", HC, safetensors({**HW, "head.bias": HW["head.bias"][:63]}),
        ST + "tensor head.bias has shape [63], config wants [64]")
    bad("head_bias_matrix", HC, safetensors({**HW, "head.bias": HW["head.bias"].reshape(8, 8)}),
        ST + "tensor head.bias has shape [8,8], config wants [64]")
    bad("head_bias_dtype_i64", HC, safetensors(HW, dtypes={"head.bias": "I64"}),
        ST + "tensor head.bias has dtype I64; ordo loads F32, F16 and BF16")
    nan = dict(HW, **{"head.bias": HW["head.bias"].copy()})
    nan["head.bias"][5] = np.nan
    bad("head_bias_nan", HC, safetensors(nan), ST + "tensor head.bias holds NaN at element 5")
    bad("head_bias_without_head", BASE_CONFIG, safetensors(HW),
        ST + 'holds tensor head.bias (a masked-language-model head) but config.json has no "head": "mlm"')
    # fill and score need the head and the tokenizer's <mask> piece; the error names the file at fault.
    no_head = CF + "the model has no masked-language-model head"
    bad("head_fill_without_head", None, None, no_head, command="fill 'the <mask> sat on the mat'")
    bad("head_score_without_head", None, None, no_head, command="score 'the cat sat on the mat'")
    no_mask = "tokenizer.model: has no <mask> piece"
    bad("head_fill_tokenizer_without_mask", HC, safetensors(HW), no_mask, command="fill 'the <mask> sat on the mat'")
    bad("head_score_tokenizer_without_mask", HC, safetensors(HW), no_mask, command="score 'the cat sat on the mat'")
    # Valid: the head changes nothing the encoder gives; fill and score run.
    case("odd", "head_mlm", config=HC, weights_bytes=safetensors(HW), same_as="base")
    case("odd", "head_mlm_bf16_bias", config=HC, weights_bytes=safetensors(HW, dtypes={"head.bias": "BF16"}),
         same_as="base")
    case("odd", "head_mlm_config_key_first", config=(json.dumps({"head": "mlm", **BASE_CONFIG}) + "\n").encode(),
         weights_bytes=safetensors(HW, order=["head.bias"] + list(W)), same_as="base")
    case("odd", "head_fill", config=HC, weights_bytes=safetensors(HW), tokenizer=MASK_TOKENIZER,
         command="fill --json --top 3 'the <mask> sat on the <mask>'", expect=('"masks":[{"position":3,',))
    case("odd", "head_score", config=HC, weights_bytes=safetensors(HW), tokenizer=MASK_TOKENIZER,
         command="score --json 'the cat sat on the mat' 'the mat sat on the cat' ''", expect=('"pll":',))


# ---------------------------------------------------------------------------------------------
# Tokenizer edits for the charsmap cases (protobuf wire format, by hand: no protobuf module needed).

def varint(v):
    out = bytearray()
    while True:
        c, v = v & 0x7F, v >> 7
        out.append(c | (0x80 if v else 0))
        if not v:
            return bytes(out)


def with_charsmap(model, bad_trie=False, size_lie=False, unterminated=False):
    """model with a NormalizerSpec (field 3) whose precompiled_charsmap (field 2) is broken."""
    # Trie of 256 units: the root's base is 0; unit 'a' (0x61) matches 'a', has a leaf, and its
    # child base is where the value unit sits. bad_trie puts that base past the array.
    units = [0] * 256
    units[0] = 0 << 10  # root: offset 0
    target = 300 if bad_trie else 0x61 ^ 1  # unit index of the value
    off = 0x61 ^ target
    units[0x61] = (off << 10) | (1 << 8) | 0x61
    if not bad_trie:
        units[target] = 0  # value 0: the first replacement string
    trie = b"".join(struct.pack("<I", u) for u in units)
    strings = b"A\0" if not unterminated else b"A"
    size = len(trie) + (1000 if size_lie else 0)
    blob = struct.pack("<I", size) + trie + strings
    spec = b"\x0a" + varint(8) + b"charsmap" + b"\x12" + varint(len(blob)) + blob
    return model + b"\x1a" + varint(len(spec)) + spec  # a later field 3 merges into the first


def message(number, payload):
    return varint(number << 3 | 2) + varint(len(payload)) + payload


def with_piece(model, piece):
    """model with one more piece (ModelProto field 1), user-defined (type 4), score 0."""
    return model + message(1, message(1, piece) + b"\x15" + struct.pack("<f", 0.0) + b"\x18" + varint(4))


def with_self_test(model, text, expected):
    """model with self_test_data (field 4): one sample whose expected pieces are wrong."""
    return model + message(4, message(1, message(1, text) + message(2, expected)))


# ---------------------------------------------------------------------------------------------

def write():
    for kind in ("bad", "odd"):
        shutil.rmtree(os.path.join(ROOT, kind), ignore_errors=True)
        for name, files in cases[kind].items():
            d = os.path.join(ROOT, kind, name)
            os.makedirs(d)
            for fname, blob in sorted(files.items(), key=lambda kv: kv[0].count("/")):
                if blob is None:
                    continue
                path = os.path.join(d, fname)
                os.makedirs(os.path.dirname(path), exist_ok=True)
                if os.path.isdir(path):
                    continue
                with open(path, "wb") as f:
                    f.write(blob)


if __name__ == "__main__":
    os.makedirs(ROOT, exist_ok=True)
    tiny = os.path.join(ROOT, "tiny.model")
    if "--retrain" in sys.argv or not os.path.exists(tiny):
        train_tokenizer(tiny)
        train_tokenizer(os.path.join(ROOT, "tiny_no_bos_eos.model"), bos_id=-1, eos_id=-1)
    TOKENIZER = open(tiny, "rb").read()
    NO_BOS = open(os.path.join(ROOT, "tiny_no_bos_eos.model"), "rb").read()
    tiny_mask = os.path.join(ROOT, "tiny_mask.model")
    if "--retrain" in sys.argv or not os.path.exists(tiny_mask):
        train_tokenizer(tiny_mask, control_symbols=["<mask>"])
    MASK_TOKENIZER = open(tiny_mask, "rb").read()
    st_cases()
    config_cases()
    tokenizer_cases()
    text_cases()
    odd_cases()
    head_cases()
    write()
    print(f"wrote {len(cases['bad'])} bad and {len(cases['odd'])} odd cases under {os.path.normpath(ROOT)}")
