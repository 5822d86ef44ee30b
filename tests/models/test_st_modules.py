#!/usr/bin/env python3
"""sentence-transformers' modules after the encoder, on random weights: a BertModel or DistilBertModel
checkpoint (test_hf_parity.py's) made a SentenceTransformer with a Pooling module of each mode ordo has
(cls, max, mean, mean_sqrt_len_tokens, weightedmean_tokens, lasttoken), none to three Dense modules
(Tanh, Identity, ReLU, Sigmoid, GELU; with and without bias; widths up and down; float32 and float16) and
Normalize or not, saved with SentenceTransformer.save as a user downloads it. `ordo encode --model DIR --json` on all texts
(and, with --python-dir, ordo.Model(DIR).encode; with Dense modules, `ordo serve`'s /v1/embeddings too)
against SentenceTransformer.encode of the same texts:
    max |ordo − sentence-transformers| ≤ 1e-5 · max |sentence-transformers|     for every text
with the vector as wide as the last Dense module's out_features, and `ordo info` saying that width.
Then the one-line errors of what ordo refuses: several pooling modes at once, a Dense module with only
pytorch_model.bin (the conversion command, as for the encoder), a Dense whose in_features is not the
pooled width, an activation ordo does not have, a Dense before the pooling, a weight of the wrong shape or NaN.
Runs with the reference environment's python (tools/dev/install-deps.sh). Exit 0 all agree, 1 not.
"""
import http.client
import json
import os
import random
import re
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import test_hf_parity  # noqa: E402
from test_hf_parity import BAR, TEXTS, Errors, command_line, random_case, random_checkpoint, refused  # noqa: E402

# BERT's vocabulary with each piece once: SentenceTransformer.save writes the tokenizer again, and
# transformers writes a vocabulary with a repeated piece with holes in its numbering
_bert_vocab = test_hf_parity.bert_vocab
test_hf_parity.bert_vocab = lambda rng, extra: list(dict.fromkeys(_bert_vocab(rng, extra)))

os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["TRANSFORMERS_OFFLINE"] = "1"

MODES = ["cls", "max", "mean", "mean_sqrt_len_tokens", "weightedmean", "lasttoken"]
ACTIVATIONS = ["Tanh", "Identity", "ReLU", "Sigmoid", "GELU"]


def sentence_transformer(out, arch, mode, denses, normalize, rng, seed, half=False):
    """A SentenceTransformer over a random `arch` checkpoint: Pooling(mode), Dense modules of
    (out_features, activation, bias) each, Normalize if asked; saved into `out` (with `half`, the Dense
    modules' weights rewritten as float16). Returns it read back from `out`, the case, the width."""
    import torch
    from sentence_transformers import SentenceTransformer, models
    torch.manual_seed(seed)
    case = random_case(rng, arch)
    with tempfile.TemporaryDirectory() as hf:
        random_checkpoint(hf, case, rng)
        transformer = models.Transformer(hf, max_seq_length=256)
        d = case["hidden_size"]
        modules, width = [transformer, models.Pooling(d, pooling_mode=mode)], d
        for features, act, bias in denses:
            modules.append(models.Dense(width, features, bias=bias, activation_function=getattr(torch.nn, act)()))
            with torch.no_grad():  # weights large enough that the activation's shape matters
                for p in modules[-1].parameters():
                    p.normal_(0.0, 1.0 / width ** 0.5 * 2)
            width = features
        if normalize:
            modules.append(models.Normalize())
        SentenceTransformer(modules=modules, device="cpu").save(out)
    if half:
        from safetensors.torch import load_file, save_file
        for k in range(len(denses)):
            path = os.path.join(out, f"{k + 2}_Dense", "model.safetensors")
            save_file({n: t.half() for n, t in load_file(path).items()}, path)
    return SentenceTransformer(out, device="cpu"), case, width  # read back, as a user loads it


def served(ordo, model, texts):
    """The vectors of `texts` from `ordo serve --model MODEL --port 0`'s POST /v1/embeddings (the port read
    from its stderr), or None (said) when it fails."""
    import numpy as np
    with tempfile.TemporaryFile("w+") as log:
        proc = subprocess.Popen([ordo, "serve", "--model", model, "--port", "0"], stdout=subprocess.DEVNULL, stderr=log)
        try:
            port, deadline = None, time.time() + 60
            while port is None and time.time() < deadline and proc.poll() is None:
                log.seek(0)
                m = re.search(r"listening on http://127\.0\.0\.1:(\d+)/", log.read())
                port = int(m.group(1)) if m else time.sleep(0.05)
            if port is None:
                log.seek(0)
                print(f"FAIL ordo serve did not listen: {log.read()[-300:]}")
                return None
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
            conn.request("POST", "/v1/embeddings", body=json.dumps({"input": texts}),
                         headers={"Content-Type": "application/json"})
            r = conn.getresponse()
            body = json.loads(r.read())
            conn.close()
            if r.status != 200:
                print(f"FAIL /v1/embeddings: {r.status} {body}")
                return None
            return np.array([row["embedding"] for row in sorted(body["data"], key=lambda row: row["index"])])
        finally:
            proc.send_signal(signal.SIGTERM)
            proc.wait(timeout=60)


def run_case(a, rng, seed, arch, mode, denses, normalize, half=False):
    import numpy as np
    name = dict(arch=arch, mode=mode, dense=denses, normalize=normalize, **({"float16": True} if half else {}))
    with tempfile.TemporaryDirectory() as out:
        st, case, width = sentence_transformer(out, arch, mode, denses, normalize, rng, seed, half)
        texts = [t for t in TEXTS if t] + ["the cat sat on the mat " * 20]
        want = st.encode(texts, batch_size=4, convert_to_numpy=True).astype(np.float64)
        errors = Errors(name)
        if want.shape != (len(texts), width):
            errors.check(1.0, f"sentence-transformers gave {want.shape}, not ({len(texts)}, {width})")
        runs = [("ordo encode", [a.ordo, "encode", "--model", out, "--json", *texts], None)]
        if a.python_dir:
            code = ("import json, sys, ordo\n"
                    "print(json.dumps(ordo.Model(sys.argv[1]).encode(sys.argv[2:]).tolist()))")
            runs.append(("ordo.Model(path).encode", [sys.executable, "-c", code, out, *texts],
                         {**os.environ, "PYTHONPATH": a.python_dir}))
        if denses:
            runs.append(("ordo serve's /v1/embeddings", None, None))
        for by, command, env in runs:
            if command is None:
                got = served(a.ordo, out, texts)
                if got is None:
                    errors.check(1.0, f"{by} failed")
                    continue
            else:
                r = subprocess.run(command, capture_output=True, text=True, env=env, timeout=600)
                if r.returncode != 0:
                    errors.check(1.0, f"{by} exited {r.returncode}: {r.stderr.strip()[-300:]}")
                    continue
                if by == "ordo encode":
                    got = np.array([json.loads(line)["embedding"] for line in r.stdout.split("\n") if line])
                else:
                    got = np.array(json.loads(r.stdout))
            if got.shape != want.shape:
                errors.check(1.0, f"{by}: shape {got.shape}, sentence-transformers {want.shape}")
                continue
            for k in range(len(texts)):
                err = np.abs(got[k] - want[k]).max() / np.abs(want[k]).max()
                errors.check(err, f"{by}, text {k}: max relative error {err:.3g} > {BAR}")
        r = subprocess.run([a.ordo, "info", "--model", out], capture_output=True, text=True)
        errors.check(0.0, f"info does not say {width} numbers: {r.stdout}{r.stderr}",
                     also=r.returncode == 0 and f": {width} numbers\n" in r.stdout)
        return errors.report()


def refusals(a, rng):
    """What ordo refuses gets one line on stderr and exit 2. Returns the number of failures."""
    import torch
    from safetensors.torch import load_file
    failed = 0
    with tempfile.TemporaryDirectory() as out:
        sentence_transformer(out, "bert", "mean", [(7, "Tanh", True)], True, rng, 5)
        pool_cfg, dense_dir = os.path.join(out, "1_Pooling", "config.json"), os.path.join(out, "2_Dense")
        dense_cfg, modules = os.path.join(dense_dir, "config.json"), os.path.join(out, "modules.json")
        originals = {p: open(p).read() for p in (pool_cfg, dense_cfg, modules)}
        pooling, dense, listed = (json.loads(originals[p]) for p in (pool_cfg, dense_cfg, modules))
        st_file, bin_file = os.path.join(dense_dir, "model.safetensors"), os.path.join(dense_dir, "pytorch_model.bin")
        convert = (f"error: {dense_dir}: has pytorch_model.bin but no model.safetensors; ordo reads safetensors "
                   f"only. Convert once with: python3 -c \"import torch, safetensors.torch as s; s.save_file({{k: "
                   f"v.contiguous().clone() for k, v in torch.load('{dense_dir}/pytorch_model.bin', "
                   f"map_location='cpu').items()}}, '{dense_dir}/model.safetensors')\"")

        def only_bin():
            torch.save(load_file(st_file), bin_file)
            os.remove(st_file)

        def nan_weight():
            from safetensors.torch import save_file
            tensors = load_file(st_file)
            tensors["linear.weight"][0, 1] = float("nan")
            save_file(tensors, st_file)

        cases = [
            ({pool_cfg: {**pooling, "pooling_mode_cls_token": True}}, None,
             f"error: {pool_cfg}: asks for 2 poolings at once (pooling_mode_cls_token, pooling_mode_mean_tokens), "
             f"which sentence-transformers concatenates; ordo pools one way at a time"),
            ({pool_cfg: {**pooling, "pooling_mode_mean_tokens": False}}, None,
             f"error: {pool_cfg}: sets no pooling_mode_... key true: it asks for no pooling ordo knows"),
            ({dense_cfg: {**dense, "in_features": dense["in_features"] + 1}}, None,
             f'error: {dense_cfg}: key "in_features" is {dense["in_features"] + 1}, but the vector before it has '
             f'{dense["in_features"]} numbers'),
            ({dense_cfg: {**dense, "activation_function": "torch.nn.modules.activation.SiLU"}}, None,
             f'error: {dense_cfg}: key "activation_function" must be "torch.nn.modules.linear.Identity" | '
             f'"torch.nn.modules.activation.Tanh" | "torch.nn.modules.activation.ReLU" | '
             f'"torch.nn.modules.activation.Sigmoid" | "torch.nn.modules.activation.GELU", got '
             f'"torch.nn.modules.activation.SiLU"'),
            ({modules: [listed[0], listed[2], listed[1]] + listed[3:]}, None,
             f"error: {modules}: has a Dense module before the pooling; ordo applies Dense modules to the pooled "
             f"vector, before Normalize"),
            ({dense_cfg: {**dense, "out_features": 8}}, None,
             f"error: {st_file}: tensor linear.weight has shape [7,{dense['in_features']}], config.json wants "
             f"[8,{dense['in_features']}]"),
            ({}, nan_weight, f"error: {st_file}: tensor linear.weight holds NaN at element 1"),
            ({}, only_bin, convert),
        ]
        for changes, act, want in cases:
            for path, value in changes.items():
                with open(path, "w") as f:
                    json.dump(value, f)
            if act:
                act()
            for command in (["encode", "--model", out, "x"], ["info", "--model", out]):
                failed += refused(a.ordo, command, want, command[0])
            for path, text in originals.items():
                with open(path, "w") as f:
                    f.write(text)
    return failed


def main():
    a = command_line(20261128, python_dir=True).parse_args()
    rng = random.Random(a.seed)
    cases = []
    for k, mode in enumerate(MODES):  # each pooling alone, then under Dense modules
        cases.append((rng.choice(["bert", "distilbert"]), mode, [], k % 2 == 0))
    for k, act in enumerate(ACTIVATIONS):
        denses = [(rng.choice([5, 16, 48]), act, k % 2 == 0)]
        if k % 2:  # a second and a third Dense after the first
            denses += [(rng.choice([3, 24]), rng.choice(ACTIVATIONS), True), (9, "Identity", False)][:k // 2 + 1]
        cases.append((rng.choice(["bert", "distilbert"]), MODES[(2 * k) % len(MODES)], denses, k % 3 != 1))
    failed = 0
    for n, (arch, mode, denses, normalize) in enumerate(cases):
        failed += not run_case(a, rng, a.seed + n, arch, mode, denses, normalize)
    # Dense weights saved as float16, which ordo widens at load as sentence-transformers does
    cases.append(("bert", "mean", [(16, "Tanh", True), (8, "Identity", True)], True))
    failed += not run_case(a, rng, a.seed + len(cases), *cases[-1], half=True)
    print(f"{len(cases) - failed} passed, {failed} failed")
    failed += refusals(a, rng)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
