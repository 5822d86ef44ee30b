#!/usr/bin/python3
"""Seeds the fuzz targets from tests/corpus: python3 fuzz/seeds.py OUT_DIR

Writes OUT_DIR/{safetensors,config,model,tokenizer,text,serve,http}/, one file per corpus file (model seeds pack a
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
# fuzz_http: byte streams a client sends on one kept-alive connection (pipelined requests, a refused
# body followed by a good request, a body in chunks, one that waits for 100 Continue).


def post(path, body, extra=b""):
    return (b"POST " + path + b" HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n" + extra +
            b"Content-Length: " + str(len(body)).encode() + b"\r\n\r\n" + body)


embed = json.dumps({"input": ["the cat sat on the mat"]}).encode()
put("http", post(b"/v1/embeddings", embed) + b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n" + post(b"/tokenize", b'{"text": "a b"}'))
put("http", b"POST /v1/embeddings HTTP/1.1\r\nHost: x\r\nContent-Type: multipart/form-data; boundary=b\r\n"
    b"Content-Length: 40\r\n\r\n--b\r\nContent-Disposition: form-data\r\n\r\nx\r\n--b--" + post(b"/v1/embeddings", embed))
put("http", b"POST /fill HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
    b"a\r\n{\"text\": \"\r\n13\r\nthe <mask> sat\", \"top\r\n5\r\n\": 2}\r\n0\r\n\r\n" + post(b"/score", b'{"texts": ["a b"]}'))
put("http", post(b"/compare", b'{"a": "the cat", "b": "cat the"}', b"Expect: 100-continue\r\n") + b"GET /nowhere HTTP/1.1\r\n\r\n")
put("http", b"GET / HTTP/1.1\r\nRange: bytes=0-5\r\n\r\n" + b"PUT /v1/embeddings HTTP/1.1\r\nContent-Length: 2\r\n\r\n{}" + post(b"/view", b'{"text": "a"}'))
