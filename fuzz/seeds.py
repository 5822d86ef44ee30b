#!/usr/bin/python3
"""Seeds the fuzz targets from tests/corpus: python3 fuzz/seeds.py OUT_DIR

Writes OUT_DIR/{safetensors,config,model,tokenizer,text,serve}/, one file per corpus file (model seeds pack a
case's config and weights, plus its tokenizer when it is not the tiny one, as fuzz_model reads them).
"""
import hashlib
import os
import struct
import sys

corpus = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "corpus")
out = sys.argv[1]
tiny = open(os.path.join(corpus, "tiny.model"), "rb").read()


def put(target, data):
    os.makedirs(os.path.join(out, target), exist_ok=True)
    with open(os.path.join(out, target, hashlib.sha1(data).hexdigest()), "wb") as f:
        f.write(data)


def read(path):
    return open(path, "rb").read() if os.path.isfile(path) else b""


for kind in ("bad", "odd"):
    for name in sorted(os.listdir(os.path.join(corpus, kind))):
        d = os.path.join(corpus, kind, name)
        config, weights, tokenizer = (read(os.path.join(d, f)) for f in ("config.json", "model.safetensors", "tokenizer.model"))
        put("safetensors", weights)
        put("config", config)
        put("tokenizer", tokenizer)
        put("model", struct.pack("<I", len(config)) + config + struct.pack("<I", len(weights)) + weights +
            (b"" if tokenizer == tiny else tokenizer))
        if os.path.isfile(os.path.join(d, "input.txt")):
            put("text", read(os.path.join(d, "input.txt"))[:4096])
put("text", b"the cat sat on the mat\nthe mat sat on the cat\n")
put("tokenizer", read(os.path.join(corpus, "..", "..", "models", "default", "tokenizer.model")))
# fuzz_serve: the first byte picks the endpoint (its index below; + 128: /v1/embeddings batched), the
# rest is a valid body for it.
for i, body in enumerate([{"input": ["the cat sat on the mat", "a"], "encoding_format": "base64"},
                          {"text": "the cat sat"}, {"text": "the <mask> sat on the mat", "top": 3},
                          {"texts": ["the cat sat", "sat the cat"]}, {"a": "the cat", "b": "cat the"},
                          {"text": "the cat", "inside": [1, 2]}, {"text": "a b c", "layer": 1, "head": 3},
                          {"a": "the cat sat", "b": "the sat cat"}]):
    import json
    put("serve", bytes([i]) + json.dumps(body).encode())
    if i == 0:
        put("serve", bytes([128]) + json.dumps(body).encode())
