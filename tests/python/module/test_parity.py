"""ordo.Model against the `ordo` command: the same numbers for the same texts (1e-6)."""
import json
import os

import numpy as np
import pytest

import ordo
from conftest import max_diff, run_ordo

TEXTS = ["the cat sat on the mat", "the mat sat on the cat", "", "a", "dogs and cats, cats and dogs. " * 6,
         "Ünïcödé text — with dashes", "the quick brown fox jumps over the lazy dog"]


@pytest.fixture(scope="module")
def lines(tmp_path_factory):
    path = tmp_path_factory.mktemp("texts") / "texts.txt"
    path.write_text("\n".join(TEXTS) + "\n")
    return str(path)


def cli_npy(lines, tmp_path, *flags):
    out = tmp_path / "out.npy"
    run_ordo("encode", "--input", lines, "--format", "npy", "--output", str(out), *flags)
    return np.load(out)


@pytest.mark.parametrize("pooling", ["mean", "first", "max"])
@pytest.mark.parametrize("flags", [(), ("--normalize",), ("--no-pe",)])
def test_encode_pooled_equals_cli(model, lines, tmp_path, pooling, flags):
    expected = cli_npy(lines, tmp_path, "--pooling", pooling, *flags)
    got = model.encode(TEXTS, pooling=pooling, normalize="--normalize" in flags, positions="--no-pe" not in flags)
    assert got.dtype == np.float32 and got.shape == (len(TEXTS), model.config["d_model"])
    # The empty text has no vector: a row of NaN in both.
    assert np.isnan(expected[2]).all() and np.isnan(got[2]).all()
    keep = [i for i in range(len(TEXTS)) if i != 2]
    diff = max_diff(got[keep], expected[keep])
    assert diff <= 1e-6, f"max |python - cli| = {diff}"


def test_encode_per_token_equals_cli(model, lines, tmp_path):
    expected = cli_npy(lines, tmp_path, "--pooling", "none")  # (total tokens, d), texts in order
    got = model.encode(TEXTS, pooling="none")
    assert [g.shape[0] for g in got] == [len(model.tokenize(t)["ids"]) for t in TEXTS]
    assert got[2].shape == (0, model.config["d_model"])
    diff = max_diff(np.concatenate(got), expected)
    assert diff <= 1e-6, f"max |python - cli| = {diff}"


def test_encode_one_text(model):
    batch = model.encode(["the cat sat on the mat", "a"])
    one = model.encode("the cat sat on the mat")
    assert one.shape == (model.config["d_model"],)
    assert max_diff(one, batch[0]) <= 1e-6
    rows = model.encode("the cat sat on the mat", pooling="none")
    assert rows.shape == (6, model.config["d_model"]) and max_diff(rows.mean(axis=0), one) <= 1e-6


def test_encode_batch_size_does_not_change_results(model):
    texts = [f"text number {i} " * (1 + i % 7) for i in range(40)]
    a, b = model.encode(texts, batch_size=1), model.encode(texts, batch_size=256)
    # Other batches, other sums' order in the matrix products: the last bits of float32 may differ
    # (relative 1e-6, a few units in the last place), nothing more.
    diff = max_diff(a, b)
    assert diff <= 1e-6 * np.abs(a).max(), f"max |batch 1 - batch 256| = {diff}"


def test_encode_truncate_equals_cli(model, tmp_path):
    path = tmp_path / "long.txt"
    path.write_text("the cat sat on the mat " * 20 + "\n")
    expected = cli_npy(str(path), tmp_path, "--max-tokens", "10", "--truncate")
    got = model.encode(["the cat sat on the mat " * 20], max_tokens=10, truncate=True)
    assert max_diff(got, expected) <= 1e-6
    assert model.encode("the cat sat on the mat " * 20, pooling="none", max_tokens=10, truncate=True).shape[0] == 10


def test_tokenize_equals_cli(model):
    for text in ["the cat sat on the mat", "Ünïcödé  text", ""]:
        (expected,) = run_ordo("tokenize", "--json", text, json_lines=True)
        got = model.tokenize(text)
        assert got["pieces"] == expected["pieces"] and got["ids"] == expected["ids"]
        assert [list(o) for o in got["offsets"]] == expected["offsets"] and got["unknown"] == expected["unknown"]


@pytest.mark.parametrize("flags", [(), ("--no-pe",)])
def test_fill_equals_cli(model, flags):
    text = "the cat sat on the <mask>. the <mask> barked."
    expected = run_ordo("fill", "--json", "--top", "7", *flags, text, json_lines=True)[0]
    got = model.fill(text, top=7, positions=not flags)
    assert len(got) == len(expected["masks"]) == 2
    for mask, want in zip(got, expected["masks"]):
        assert [(p, i) for p, i, _ in mask] == [(g["piece"], g["id"]) for g in want["top"]]
        assert max_diff([p for _, _, p in mask], [g["prob"] for g in want["top"]]) <= 1e-6


@pytest.mark.parametrize("flags", [(), ("--no-pe",)])
def test_score_equals_cli(model, flags):
    texts = ["the cat sat on the mat.", "mat the on sat cat the.", "a", ""]
    expected = run_ordo("score", "--json", *flags, *texts, json_lines=True)
    plls, pieces = model.score(texts, positions=not flags, per_piece=True)
    assert plls.dtype == np.float64 and plls.shape == (4,)
    assert max_diff(plls, [e["pll"] for e in expected]) <= 1e-6
    for got, want in zip(pieces, expected):
        assert max_diff(got, want["log_probs"]) <= 1e-6
    assert abs(model.score(texts[0], positions=not flags) - expected[0]["pll"]) <= 1e-6


def test_compare_equals_cli(model):
    a, b = "the cat sat on the mat", "the mat sat on the cat"
    expected = json.loads(run_ordo("compare", "--json", a, b))
    got = model.compare(a, b)
    assert list(got) == list(expected)
    assert got["a"] == expected["a"] and got["b"] == expected["b"] and got["verdict"] == expected["verdict"]
    for key in ("cosine", "max_abs_diff"):
        for side in ("with_pe", "without_pe"):
            assert abs(got[key][side] - expected[key][side]) <= 1e-9
    assert len(got["tokens"]) == len(expected["tokens"]) == 6
    for g, e in zip(got["tokens"], expected["tokens"]):
        assert (g["piece"], g["position_a"], g["position_b"]) == (e["piece"], e["position_a"], e["position_b"])
        assert abs(g["moved_with_pe"] - e["moved_with_pe"]) <= 1e-9
        assert abs(g["moved_without_pe"] - e["moved_without_pe"]) <= 1e-9
    assert max_diff([got["pll"][s]["with_pe"] for s in "ab"], [expected["pll"][s]["with_pe"] for s in "ab"]) <= 1e-9


@pytest.mark.parametrize("flags", [(), ("--no-pe",)])
def test_trace_equals_cli(model, flags):
    text = "the cat sat on the mat"
    expected = run_ordo("trace", "--json", *flags, text, json_lines=True)[0]
    got = model.trace(text, positions=not flags)
    checked = 0
    for stage in expected["stages"]:
        if "values" not in stage:  # "pieces and ids", a skipped positions stage: no array
            continue
        key = stage["name"]
        if stage["head"] is not None:
            key = f"head {stage['head']}: {key}"
        if stage["layer"] is not None:
            key = f"layer {stage['layer']}{', ' if stage['head'] is not None else ': '}{key}"
        assert got[key].shape == tuple(stage["shape"]), key
        diff = max_diff(got[key], stage["values"])
        assert diff <= 1e-6, f"{key}: max |python - cli| = {diff}"
        checked += 1
    assert checked >= 2 * model.config["n_layers"] * model.config["n_heads"]
    assert max_diff(got["hidden"], expected["hidden"]) <= 1e-6
    assert max_diff(got["pooled"], expected["pooled"]) <= 1e-6


def test_attention_is_trace_attention(model):
    text = "the mat sat on the cat"
    expected = run_ordo("trace", "--json", text, json_lines=True)[0]
    A = model.attention(text)
    c = model.config
    assert A.shape == (c["n_layers"], c["n_heads"], 6, 6)
    assert np.allclose(A.sum(axis=-1), 1.0, atol=1e-5)
    for stage in expected["stages"]:
        if stage.get("name") == "attention weights":
            assert max_diff(A[stage["layer"], stage["head"]], stage["values"]) <= 1e-6


@pytest.mark.parametrize("layout", ["interleaved", "split"])
def test_positional_encoding_equals_pe(tmp_path, layout):
    csv = tmp_path / "pe.csv"
    run_ordo("pe", "--positions", "50", "--dim", "12", "--layout", layout, "--csv", str(csv), "--no-properties")
    expected = np.loadtxt(csv, delimiter=",", skiprows=1)[:, 1:]
    got = ordo.positional_encoding(50, 12, layout=layout)
    assert got.shape == (50, 12) and got.dtype == np.float32
    assert max_diff(got, expected) <= 1e-6
    # And the paper's formula in float64, PE(t, 2i) = sin(t / 10000^(2i/d)): t = 7, i = 1.
    col = 2 if layout == "interleaved" else 1
    assert abs(got[7, col] - np.sin(7 / 10000 ** (2 / 12))) <= 1e-6


def test_config_and_path(model, model_dir):
    c = model.config
    assert c["d_model"] == 64 and c["positional_encoding"] == "sinusoidal" and c["head"] == "mlm"
    assert os.path.isfile(os.path.join(model_dir, "config.json"))
    assert ordo.Model(model_dir).path == model_dir


def test_heads_by_distance_is_the_commands(model, tmp_path):
    lines = ["the cat sat on the mat", "a dog ran to the house by the river", "she said so"]
    path = tmp_path / "lines.txt"
    path.write_text("\n".join(lines) + "\n")
    expected = json.loads(run_ordo("attention", "--by-distance", "--input", str(path), "--max-offset", "2",
                                   "--split", "4", "--json"))
    got = model.heads_by_distance(lines, max_offset=2, split=4)
    assert got["mean"].shape == (2, 4, 2, 5)
    assert list(got["offsets"]) == [-2, -1, 0, 1, 2]
    assert got["texts"] == expected["texts"] == 3
    for b, bucket in enumerate(expected["buckets"]):
        assert list(got["rows"][b]) == bucket["rows"]
    for head in expected["heads"]:
        mean = np.array([[np.nan if v is None else v for v in row] for row in head["mean"]])
        assert np.allclose(got["mean"][head["layer"], head["head"]], mean, atol=1e-9, equal_nan=True)


def test_masked_heads_is_mask_head(model):
    text = "the cat sat on the mat"
    expected = run_ordo("trace", "--json", "--mask-head", "1,2", text, json_lines=True)[0]
    try:
        model.masked_heads = [(1, 2)]
        assert model.masked_heads == [(1, 2)]
        assert max_diff(model.trace(text)["hidden"], expected["hidden"]) <= 1e-6
        with pytest.raises(ordo.InputError, match="head 2,0"):
            model.masked_heads = [(2, 0)]
        assert model.masked_heads == [(1, 2)]
    finally:
        model.masked_heads = []
    assert max_diff(model.trace(text)["hidden"], expected["hidden"]) > 1e-4
