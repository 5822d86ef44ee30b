"""python/examples/dask_encode.py on a LocalCluster of 2 worker processes (1 thread each): its rows, read
back through the manifest, equal `ordo encode --format npy` on the same file (1e-5), in input order."""
import json
import os
import subprocess
import sys

import numpy as np

from conftest import ROOT, max_diff, run_ordo

SCRIPT = os.path.join(ROOT, "python", "examples", "dask_encode.py")


def test_two_workers_equal_the_cli(tmp_path):
    words = "the cat sat on a mat while dogs bark at night and birds sing in the morning".split()
    rng = np.random.default_rng(3)
    lines = [" ".join(rng.choice(words, size=rng.integers(1, 30))) for _ in range(300)]
    lines[17] = ""  # no tokens: a row of NaN in both
    path = tmp_path / "texts.txt"
    path.write_text("\n".join(lines) + "\n")
    out = tmp_path / "vectors"
    # "--out vectors/", as a shell completes it: the summary names vectors/manifest.json, one slash
    run = subprocess.run([sys.executable, SCRIPT, str(path), "--out", str(out) + "/", "--workers", "2", "--lines", "40"],
                         capture_output=True, text=True, timeout=240)
    assert run.returncode == 0, run.stderr
    assert run.stderr.strip().splitlines()[-1].endswith(f" -> {out}/manifest.json"), run.stderr
    manifest = json.loads((out / "manifest.json").read_text())
    assert len(manifest["parts"]) == 8 and manifest["rows"] == 300
    assert [p["first_line"] for p in manifest["parts"]] == list(range(1, 301, 40))
    got = np.concatenate([np.load(out / p["file"]) for p in manifest["parts"]])

    run_ordo("encode", "--input", str(path), "--format", "npy", "--output", str(tmp_path / "cli.npy"))
    expected = np.load(tmp_path / "cli.npy")
    assert got.shape == expected.shape == (300, 64)
    assert np.isnan(got[17]).all() and np.isnan(expected[17]).all()
    keep = np.arange(300) != 17
    diff = max_diff(got[keep], expected[keep])
    # The workers batch 40 lines, the CLI all 300: the same rows in other batches. ordo's AVX-512
    # kernels sum each row in one order whatever the batch (0 here), but OpenBLAS (the products
    # without AVX-512) picks its blocking by the batch's row count, and a sum of K float products
    # in another order moves by about sqrt(K)·2^-24 of its terms' size: 2.5e-6 was seen on values
    # of about 1 after two layers (K up to 256). A row out of order or another line's row differs
    # by 0.1 and more, so 1e-5 still catches those.
    assert diff <= 1e-5, f"max |dask - cli| = {diff}"


def test_bad_line_is_named(tmp_path):
    path = tmp_path / "bad.txt"
    path.write_bytes(b"fine\nalso fine\n\xff\xfe broken\n")
    run = subprocess.run([sys.executable, SCRIPT, str(path), "--out", str(tmp_path / "v"), "--workers", "1"],
                         capture_output=True, text=True, timeout=240)
    assert run.returncode == 2
    assert run.stderr.strip().splitlines()[-1] == f"error: {path}: line 3: invalid UTF-8 at byte 0"


def test_a_failed_run_leaves_the_earlier_one(tmp_path):
    # A run into a directory that holds an earlier run: a bad file fails it, and the earlier manifest
    # and every part it names stay as they were; no part of the failed run is left.
    good = tmp_path / "good.txt"
    good.write_text("the cat sat\nthe dog ran\na bird sang\n")
    out = tmp_path / "v"
    run = subprocess.run([sys.executable, SCRIPT, str(good), "--out", str(out), "--workers", "1", "--lines", "2"],
                         capture_output=True, text=True, timeout=240)
    assert run.returncode == 0, run.stderr
    manifest = (out / "manifest.json").read_text()
    before = {p: (out / p).read_bytes() for p in [x["file"] for x in json.loads(manifest)["parts"]]}
    bad = tmp_path / "bad.txt"
    bad.write_bytes(b"one\ntwo\nthree\n\xff\n")
    run = subprocess.run([sys.executable, SCRIPT, str(bad), "--out", str(out), "--workers", "1", "--lines", "2"],
                         capture_output=True, text=True, timeout=240)
    assert run.returncode == 2
    assert run.stderr.strip().splitlines()[-1] == f"error: {bad}: line 4: invalid UTF-8 at byte 0"
    assert (out / "manifest.json").read_text() == manifest
    assert {p: (out / p).read_bytes() for p in before} == before
    assert sorted(os.listdir(out)) == sorted(["manifest.json", os.path.dirname(next(iter(before)))])
    # A good run replaces it whole, and the earlier run's parts go.
    run = subprocess.run([sys.executable, SCRIPT, str(good), "--out", str(out), "--workers", "1", "--lines", "2"],
                         capture_output=True, text=True, timeout=240)
    assert run.returncode == 0, run.stderr
    parts = json.loads((out / "manifest.json").read_text())["parts"]
    assert sorted(os.listdir(out)) == sorted(["manifest.json", os.path.dirname(parts[0]["file"])])
    assert np.concatenate([np.load(out / p["file"]) for p in parts]).shape == (3, 64)
