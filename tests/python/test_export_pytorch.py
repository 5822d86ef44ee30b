#!/usr/bin/python3
"""tools/pytorch/export_pytorch.py: what it writes, and what it refuses (with one line, exit 2, nothing written).

Exit 77 (skipped) where PyTorch is not installed."""

import contextlib
import io
import json
import os
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
TOOL = os.path.join(ROOT, "tools", "pytorch", "export_pytorch.py")
TOKENIZER = os.path.join(ROOT, "models", "default", "tokenizer.model")  # 8000 pieces

try:
    import numpy as np
    import torch
    import torch.nn.functional as F
    from torch import nn
except ImportError as e:
    print(f"skipped: {e}")
    sys.exit(77)

sys.path.insert(0, os.path.join(ROOT, "tools", "pytorch"))
from export_pytorch import ExportError, export  # noqa: E402

V, d, h, FF = 8000, 16, 4, 24


def encoder(layers=2, norm=None, **layer_args):
    layer = nn.TransformerEncoderLayer(d, h, dim_feedforward=FF, batch_first=True, **layer_args)
    return nn.TransformerEncoder(layer, layers, norm=norm).eval()


def read_json(path):
    with open(path) as f:
        return json.load(f)


def read_bytes(path):
    with open(path, "rb") as f:
        return f.read()


def read_header(path):
    raw = read_bytes(path)
    return json.loads(raw[8:8 + int.from_bytes(raw[:8], "little")])


def read_safetensors(path):
    """{name: array} and the data start offset, checked against the format's rules."""
    raw = read_bytes(path)
    n = int.from_bytes(raw[:8], "little")
    header = json.loads(raw[8:8 + n])
    start = 8 + n
    out, ends = {}, []
    for name, info in header.items():
        if name == "__metadata__":
            continue
        assert info["dtype"] == "F32", info
        b, e = info["data_offsets"]
        out[name] = np.frombuffer(raw[start + b:start + e], dtype="<f4").reshape(info["shape"])
        ends.append((b, e))
    ends.sort()
    assert ends[0][0] == 0 and all(x[1] == y[0] for x, y in zip(ends, ends[1:])) and ends[-1][1] == len(raw) - start
    return out, start


class InTempDir(unittest.TestCase):
    """Each test exports into a fresh directory, with the same torch seed."""

    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.out = os.path.join(self.tmp.name, "model")
        torch.manual_seed(0)

    def tearDown(self):
        self.tmp.cleanup()


class Writes(InTempDir):
    def test_module_export_writes_every_key_and_the_tensors(self):
        enc = encoder(norm=nn.LayerNorm(d, eps=1e-6), activation="gelu", norm_first=True, layer_norm_eps=1e-6)
        emb = nn.Embedding(V, d)
        export(enc, emb, self.out, tokenizer=TOKENIZER, pe_layout="split", scale_embedding=False, pe_base=500)
        config = read_json(os.path.join(self.out, "config.json"))
        self.assertEqual(config, {
            "vocab_size": V, "d_model": d, "n_heads": h, "d_ff": FF, "n_layers": 2, "activation": "gelu",
            "norm_first": True, "final_norm": True, "layer_norm_eps": 1e-6, "positional_encoding": "sinusoidal",
            "pe_layout": "split", "pe_base": 500.0, "scale_embedding": False, "tokenizer": "tokenizer.model",
            "add_bos": False, "add_eos": False})
        tensors, start = read_safetensors(os.path.join(self.out, "model.safetensors"))
        self.assertEqual(start % 8, 0)
        expected = {"embedding.weight": emb.weight, **enc.state_dict()}
        self.assertEqual(set(tensors), set(expected))
        for name, t in expected.items():
            np.testing.assert_array_equal(tensors[name], t.detach().numpy(), err_msg=name)
        self.assertEqual(read_bytes(os.path.join(self.out, "tokenizer.model")), read_bytes(TOKENIZER))
        self.assertEqual(sorted(os.listdir(self.out)), ["config.json", "model.safetensors", "tokenizer.model"])

    def test_relu_module_learned_positions_and_norms_without_affine(self):
        enc = encoder(activation=nn.ReLU())
        for layer in enc.layers:
            layer.norm2 = nn.LayerNorm(d, elementwise_affine=False)
        pos = nn.Embedding(50, d)
        export(enc, nn.Embedding(V, d), self.out, tokenizer=TOKENIZER, positional_encoding="learned",
               position_embedding=pos, add_bos=True, add_eos=True)
        config = read_json(os.path.join(self.out, "config.json"))
        self.assertEqual((config["activation"], config["max_positions"], config["add_bos"]), ("relu", 50, True))
        tensors, _ = read_safetensors(os.path.join(self.out, "model.safetensors"))
        np.testing.assert_array_equal(tensors["layers.1.norm2.weight"], np.ones(d, np.float32))
        np.testing.assert_array_equal(tensors["layers.1.norm2.bias"], np.zeros(d, np.float32))
        np.testing.assert_array_equal(tensors["position_embedding.weight"], pos.weight.detach().numpy())

    def test_a_single_layer_is_an_encoder_of_one_layer(self):
        layer = nn.TransformerEncoderLayer(d, h, dim_feedforward=FF, activation=F.gelu, batch_first=True).eval()
        export(layer, nn.Embedding(V, d), self.out, tokenizer=TOKENIZER)
        config = read_json(os.path.join(self.out, "config.json"))
        self.assertEqual((config["n_layers"], config["activation"], config["final_norm"]), (1, "gelu", False))
        tensors, _ = read_safetensors(os.path.join(self.out, "model.safetensors"))
        np.testing.assert_array_equal(tensors["layers.0.linear1.weight"], layer.linear1.weight.detach().numpy())

    def test_state_dict_export_takes_the_settings_given(self):
        enc = encoder(norm=nn.LayerNorm(d), norm_first=True)
        export(enc.state_dict(), nn.Embedding(V, d).weight, self.out, tokenizer=TOKENIZER, n_heads=h,
               activation="gelu", norm_first=True, layer_norm_eps=1e-5)
        config = read_json(os.path.join(self.out, "config.json"))
        self.assertEqual((config["n_heads"], config["activation"], config["norm_first"], config["final_norm"]),
                         (h, "gelu", True, True))


class TiedHead(nn.Module):
    """A masked-language-model head as tools/train/mlm.py has it: logits = h·Eᵀ + bias."""

    def __init__(self, rows=V):
        super().__init__()
        self.bias = nn.Parameter(torch.randn(rows))


class Head(InTempDir):
    def test_head_writes_its_bias_last_and_the_config_key(self):
        enc, emb, head = encoder(norm=nn.LayerNorm(d)), nn.Embedding(V, d), TiedHead()
        export(enc, emb, self.out, tokenizer=TOKENIZER, head=head, verbose=False)
        config = read_json(os.path.join(self.out, "config.json"))
        self.assertEqual(config["head"], "mlm")
        self.assertEqual(list(config)[-1], "head")
        tensors, _ = read_safetensors(os.path.join(self.out, "model.safetensors"))
        self.assertEqual(tensors["head.bias"].shape, (V,))
        np.testing.assert_array_equal(tensors["head.bias"], head.bias.detach().numpy())
        # The output matrix is the embedding itself: no second copy is written.
        self.assertEqual(set(tensors), {"embedding.weight", "head.bias", *enc.state_dict()})
        header = read_header(os.path.join(self.out, "model.safetensors"))
        last = max(header, key=lambda n: header[n]["data_offsets"][0])
        self.assertEqual(last, "head.bias")

    def test_head_as_a_tensor_or_a_dict(self):
        bias = torch.randn(V)
        export(encoder(), nn.Embedding(V, d), self.out, tokenizer=TOKENIZER, head=bias, verbose=False)
        tensors, _ = read_safetensors(os.path.join(self.out, "model.safetensors"))
        np.testing.assert_array_equal(tensors["head.bias"], bias.numpy())
        export(encoder(), nn.Embedding(V, d), self.out, tokenizer=TOKENIZER, head={"bias": 2 * bias}, verbose=False)
        tensors, _ = read_safetensors(os.path.join(self.out, "model.safetensors"))
        np.testing.assert_array_equal(tensors["head.bias"], 2 * bias.numpy())

    def test_t5_buckets_writes_its_table_and_two_keys(self):
        table = torch.randn(h, 16)
        config = export(encoder(), nn.Embedding(V, d), self.out, tokenizer=TOKENIZER, positional_encoding="t5-buckets",
                        position_bias=table, max_distance=20, verbose=False)
        self.assertEqual(config["relative_attention_num_buckets"], 16)
        self.assertEqual(config["relative_attention_max_distance"], 20)
        self.assertEqual(read_json(os.path.join(self.out, "config.json")), config)
        tensors, _ = read_safetensors(os.path.join(self.out, "model.safetensors"))
        np.testing.assert_array_equal(tensors["position_bias"], table.numpy())
        self.assertEqual(list(read_header(os.path.join(self.out, "model.safetensors")))[:2],
                         ["embedding.weight", "position_bias"])

    def test_alibi_slopes_are_written_as_given(self):
        slopes = [0.25, 0.25, 0.0625, 0.0625]
        config = export(encoder(), nn.Embedding(V, d), self.out, tokenizer=TOKENIZER, positional_encoding="alibi-pairs",
                        alibi_slopes=slopes, verbose=False)
        self.assertEqual(read_json(os.path.join(self.out, "config.json"))["alibi_slopes"], slopes)
        self.assertEqual(config["alibi_slopes"], slopes)
        export(encoder(), nn.Embedding(V, d), self.out, tokenizer=TOKENIZER, positional_encoding="alibi-pairs",
               verbose=False)
        self.assertNotIn("alibi_slopes", read_json(os.path.join(self.out, "config.json")))  # the default rule

    def test_no_head_no_key_no_tensor(self):
        export(encoder(), nn.Embedding(V, d), self.out, tokenizer=TOKENIZER, verbose=False)
        self.assertNotIn("head", read_json(os.path.join(self.out, "config.json")))
        tensors, _ = read_safetensors(os.path.join(self.out, "model.safetensors"))
        self.assertNotIn("head.bias", tensors)

    def test_every_setting_is_printed_once(self):
        err = io.StringIO()
        with contextlib.redirect_stderr(err):
            config = export(encoder(), nn.Embedding(V, d), self.out, tokenizer=TOKENIZER, head=TiedHead())
        lines = err.getvalue().splitlines()
        self.assertEqual(lines, [f"export: {k} = {json.dumps(v)}" for k, v in config.items()])
        for line in ('export: activation = "relu"', "export: norm_first = false", "export: layer_norm_eps = 1e-05",
                     'export: positional_encoding = "sinusoidal"', "export: n_heads = 4", 'export: head = "mlm"'):
            self.assertIn(line, lines)
        quiet = io.StringIO()
        with contextlib.redirect_stderr(quiet):
            export(encoder(), nn.Embedding(V, d), self.out, tokenizer=TOKENIZER, verbose=False)
        self.assertEqual(quiet.getvalue(), "")


class Refuses(InTempDir):
    def refuse(self, pattern, enc, emb=None, **kw):
        kw.setdefault("tokenizer", TOKENIZER)
        with self.assertRaisesRegex(ExportError, pattern):
            export(enc, emb if emb is not None else nn.Embedding(V, d), self.out, **kw)
        self.assertFalse(os.path.exists(os.path.join(self.out, "config.json")), "nothing may be written")

    def test_tanh_gelu(self):
        self.refuse("approximate='tanh'", encoder(activation=nn.GELU(approximate="tanh")))

    def test_custom_activations(self):
        self.refuse("not one ordo runs", encoder(activation=torch.tanh))
        self.refuse("not one ordo runs", encoder(activation=lambda x: F.gelu(x, approximate="tanh")))
        self.refuse("not one ordo runs", encoder(activation=nn.SiLU()))

    def test_missing_biases(self):
        enc = encoder()
        for layer in enc.layers:
            layer.self_attn = nn.MultiheadAttention(d, h, bias=False, batch_first=True)
        self.refuse("in_proj_bias is missing.*bias=False", enc)
        state = encoder().state_dict()
        del state["layers.1.linear2.bias"]
        self.refuse("layers.1.linear2.bias is missing", state, n_heads=h)

    def test_separate_key_value_sizes(self):
        enc = encoder()
        enc.layers[0].self_attn = nn.MultiheadAttention(d, h, kdim=8, vdim=8, batch_first=True)
        self.refuse("kdim/vdim", enc)
        state = encoder().state_dict()
        state["layers.0.self_attn.q_proj_weight"] = torch.zeros(d, d)
        self.refuse("q_proj_weight has no place", state, n_heads=h)

    def test_attention_extras(self):
        enc = encoder()
        enc.layers[1].self_attn = nn.MultiheadAttention(d, h, add_bias_kv=True, batch_first=True)
        self.refuse("add_bias_kv", enc)

    def test_disagreeing_eps(self):
        enc = encoder()
        enc.layers[1].norm2.eps = 1e-6
        self.refuse("LayerNorm eps", enc)
        self.refuse("LayerNorm eps", encoder(norm=nn.LayerNorm(d, eps=1e-3)))

    def test_settings_that_contradict_the_module(self):
        self.refuse("activation='gelu' was given", encoder(), activation="gelu")
        self.refuse("norm_first=True was given", encoder(), norm_first=True)
        self.refuse("final_norm=True was given", encoder(), final_norm=True)
        self.refuse("n_heads=2 was given", encoder(), n_heads=2)

    def test_mismatched_sizes(self):
        self.refuse(r"embedding.weight has shape \[8000,17\]", encoder(), nn.Embedding(V, 17))
        state = encoder().state_dict()
        state["layers.1.linear1.weight"] = torch.zeros(FF + 1, d)
        self.refuse(r"layers.1.linear1.weight has shape \[25,16\], expected \[24,16\]", state, n_heads=h)
        self.refuse("positive divisor", encoder().state_dict(), n_heads=5)
        self.refuse("not recorded in a state_dict", encoder().state_dict())
        nested = {f"model.encoder.{k}": v for k, v in encoder().state_dict().items()}
        self.refuse("under the prefix 'model.encoder.'", nested, n_heads=h)

    def test_positions_and_embeddings(self):
        self.refuse("no position embedding", encoder(), positional_encoding="learned")
        self.refuse("use \"learned\"", encoder(), position_embedding=nn.Embedding(10, d))
        self.refuse("max_norm", encoder(), nn.Embedding(V, d, max_norm=1.0))
        self.refuse("pe_layout='paper'", encoder(), pe_layout="paper")

    def test_t5_buckets_table(self):
        """t5-buckets needs its table (n_heads rows, buckets a multiple of 4) and a max_distance past the
        exact distances; a table without the scheme is refused too."""
        table = torch.zeros(h, 32)
        self.refuse(r"no table of biases \(position_bias=\)", encoder(), positional_encoding="t5-buckets", n_heads=h)
        self.refuse("use \"t5-buckets\"", encoder(), position_bias=table)
        self.refuse(r"position_bias has 3 rows, one per head: expected 4", encoder(), positional_encoding="t5-buckets",
                    position_bias=torch.zeros(3, 32), max_distance=32)
        self.refuse("a multiple of 4", encoder(), positional_encoding="t5-buckets", position_bias=torch.zeros(h, 30),
                    max_distance=32)
        self.refuse(r"max_distance=8 must be a whole number above 8", encoder(), positional_encoding="t5-buckets",
                    position_bias=table, max_distance=8)
        self.refuse(r"max_distance=None", encoder(), positional_encoding="t5-buckets", position_bias=table)

    def test_alibi_slopes(self):
        """One positive slope per head, and only for the two ALiBi schemes."""
        self.refuse(r"alibi_slopes=\[0.5\] must be 4 positive numbers, one per head", encoder(),
                    positional_encoding="alibi-pairs", alibi_slopes=[0.5])
        self.refuse(r"must be 4 positive numbers", encoder(), positional_encoding="alibi-symmetric",
                    alibi_slopes=[0.5, 0.5, 0.0, 0.1])
        self.refuse(r"alibi_slopes was given but positional_encoding is \"rope\"", encoder(),
                    positional_encoding="rope", alibi_slopes=[0.5] * 4)

    def test_tokenizer_larger_than_the_embedding(self):
        self.refuse("8000 pieces but the embedding has only 100 rows", encoder(), nn.Embedding(100, d))
        self.refuse("no such tokenizer file", encoder(), tokenizer=os.path.join(self.tmp.name, "none.model"))

    def test_head_of_the_wrong_shape_or_kind(self):
        self.refuse(r"head.bias has shape \[8001\], expected \[8000\]", encoder(), head=TiedHead(V + 1))
        self.refuse(r"head bias has shape \[8000,1\]", encoder(), head=torch.zeros(V, 1))
        self.refuse("ordo's mlm head has one, bias", encoder(), head={"bias": torch.zeros(V), "dense.weight": torch.zeros(d, d)})
        dense = TiedHead()
        dense.dense = nn.Linear(d, d)
        self.refuse("ordo's mlm head has one, bias", encoder(), head=dense)
        state = encoder().state_dict()
        state["head.bias"] = torch.zeros(V)
        self.refuse("pass the head separately", state, n_heads=h)
        with torch.no_grad():
            bad = TiedHead()
            bad.bias[3] = float("inf")
        self.refuse("head.bias holds NaN or infinite", encoder(), head=bad)

    def test_non_finite_weights(self):
        enc = encoder()
        with torch.no_grad():
            enc.layers[0].linear1.weight[0, 0] = float("nan")
        self.refuse("NaN", enc)


class CommandLine(InTempDir):
    def run_tool(self, *args):
        return subprocess.run([sys.executable, TOOL, *args], capture_output=True, text=True)

    def test_whole_model_state_dict(self):
        enc = encoder(norm=nn.LayerNorm(d))
        emb = nn.Embedding(V, d)
        path = os.path.join(self.tmp.name, "model.pt")
        state = {"tok.weight": emb.weight, **{f"enc.{k}": v for k, v in enc.state_dict().items()}}
        torch.save({"model": state, "optimizer": {"lr": 0.1}, "epoch": 3}, path)  # a training checkpoint
        r = self.run_tool(path, "--out", self.out, "--tokenizer", TOKENIZER, "--n-heads", str(h), "--prefix", "enc.",
                          "--embedding", "tok.weight", "--activation", "gelu", "--scale-embedding", "false")
        self.assertEqual(r.returncode, 0, r.stderr)
        config = read_json(os.path.join(self.out, "config.json"))
        self.assertEqual((config["final_norm"], config["activation"], config["scale_embedding"]), (True, "gelu", False))

    def test_head_from_a_checkpoint(self):
        enc, emb, head = encoder(norm=nn.LayerNorm(d)), nn.Embedding(V, d), TiedHead()
        path = os.path.join(self.tmp.name, "model.pt")
        torch.save({"embedding.weight": emb.weight, "head.bias": head.bias,
                    **{f"encoder.{k}": v for k, v in enc.state_dict().items()}}, path)
        args = [path, "--out", self.out, "--tokenizer", TOKENIZER, "--n-heads", str(h), "--prefix", "encoder."]
        r = self.run_tool(*args, "--head", "mlm")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn('export: head = "mlm"', r.stderr.splitlines())
        self.assertIn('export: activation = "relu"', r.stderr.splitlines())
        self.assertNotIn("ignoring", r.stderr)
        self.assertEqual(read_json(os.path.join(self.out, "config.json"))["head"], "mlm")
        tensors, _ = read_safetensors(os.path.join(self.out, "model.safetensors"))
        np.testing.assert_array_equal(tensors["head.bias"], head.bias.detach().numpy())
        os.remove(os.path.join(self.out, "config.json"))
        self.assert_refused(self.run_tool(*args, "--head", "mlm", "--head-bias", "lm.bias"), "no tensor lm.bias")

    def assert_refused(self, r, *words):
        self.assertEqual(r.returncode, 2, r.stderr)
        self.assertEqual(r.stdout, "")
        lines = r.stderr.splitlines()
        self.assertEqual(len(lines), 1, r.stderr)
        self.assertTrue(lines[0].startswith("error: "), lines[0])
        for w in words:
            self.assertIn(w, lines[0])
        self.assertFalse(os.path.exists(os.path.join(self.out, "config.json")))

    def test_not_a_torch_file(self):
        path = os.path.join(self.tmp.name, "junk.pt")
        with open(path, "w") as f:
            f.write("not a checkpoint")
        self.assert_refused(self.run_tool(path, "--out", self.out, "--tokenizer", TOKENIZER, "--n-heads", "4"),
                            path, "torch.load")

    def test_missing_bias_and_missing_embedding(self):
        state = encoder().state_dict()
        del state["layers.0.self_attn.in_proj_bias"]
        path = os.path.join(self.tmp.name, "state.pt")
        torch.save({"embedding.weight": torch.zeros(V, d), **state}, path)
        self.assert_refused(self.run_tool(path, "--out", self.out, "--tokenizer", TOKENIZER, "--n-heads", "4"),
                            path, "layers.0.self_attn.in_proj_bias is missing")
        self.assert_refused(self.run_tool(path, "--out", self.out, "--tokenizer", TOKENIZER, "--n-heads", "4",
                                          "--embedding", "emb.weight"), "no tensor emb.weight")


if __name__ == "__main__":
    unittest.main()
