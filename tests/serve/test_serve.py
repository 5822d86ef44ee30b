#!/usr/bin/python3
"""ordo serve over real loopback HTTP: every endpoint against the command line's --json output
(floats within 1e-6), every error status, 64 concurrent clients each getting its own rows, a
SIGTERM while requests are in flight, and a busy port. Servers listen on port 0 (a free port the
kernel picks) and print the port they bound, which this script reads from their stderr."""
import argparse
import base64
import http.client
import json
import os
import re
import select
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time

TOL = 1e-6
failures = []


def check(ok, what):
    print(("ok   " if ok else "FAIL ") + what, flush=True)
    if not ok:
        failures.append(what)


def max_diff(a, b, path="$"):
    """The largest |a - b| over the numbers of two JSON values; other values must be equal
    (raises ValueError naming the first place they differ)."""
    if isinstance(a, bool) or isinstance(b, bool) or a is None or isinstance(a, str):
        if a != b:
            raise ValueError(f"{path}: {a!r} != {b!r}")
        return 0.0
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return abs(a - b)
    if isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            raise ValueError(f"{path}: {len(a)} items != {len(b)}")
        return max([max_diff(x, y, f"{path}[{i}]") for i, (x, y) in enumerate(zip(a, b))], default=0.0)
    if isinstance(a, dict) and isinstance(b, dict):
        if list(a) != list(b):
            raise ValueError(f"{path}: keys {list(a)} != {list(b)}")
        return max([max_diff(a[k], b[k], f"{path}.{k}") for k in a], default=0.0)
    raise ValueError(f"{path}: {type(a).__name__} != {type(b).__name__}")


def same(a, b, what, tol=TOL):
    try:
        d = max_diff(a, b)
        check(d <= tol, f"{what} (max |diff| {d:.3g})")
    except ValueError as e:
        check(False, f"{what}: {e}")


class Server:
    def __init__(self, ordo, model, *flags, port=0):
        self.log = tempfile.NamedTemporaryFile("w+", suffix=".log", delete=False)
        self.proc = subprocess.Popen([ordo, "serve", "--model", model, "--port", str(port), *flags],
                                     stdout=subprocess.DEVNULL, stderr=self.log)
        deadline = time.time() + 60
        while time.time() < deadline:
            m = re.search(r"listening on http://127\.0\.0\.1:(\d+)/", self.stderr())
            if m:
                self.port = int(m.group(1))
                return
            if self.proc.poll() is not None:
                raise RuntimeError("ordo serve ended before listening: " + self.stderr())
            time.sleep(0.05)
        raise RuntimeError("ordo serve did not listen within 60 s")

    def stderr(self):
        with open(self.log.name) as f:
            return f.read()

    def request(self, method, path, body=None, raw=None, ctype="application/json"):
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=60)
        data = raw if raw is not None else (json.dumps(body).encode() if body is not None else None)
        conn.request(method, path, body=data, headers={"Content-Type": ctype} if data else {})
        r = conn.getresponse()
        text = r.read()
        conn.close()
        ctype = r.getheader("Content-Type", "")
        return r.status, (json.loads(text) if ctype.startswith("application/json") else text.decode())

    def post(self, path, body=None, raw=None):
        return self.request("POST", path, body, raw)

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        code = self.proc.wait(timeout=60)
        self.last_stderr = self.stderr()
        os.unlink(self.log.name)
        return code


def cli(ordo, model, *args):
    out = subprocess.run([ordo, *args, "--model", model], check=True, capture_output=True, text=True).stdout
    return out


def cli_json(ordo, model, *args):
    return json.loads(cli(ordo, model, *args))


def embed_cli(ordo, model, texts):
    lines = cli(ordo, model, "encode", "--json", *texts).splitlines()
    return [json.loads(line)["embedding"] for line in lines]


def test_endpoints(s, ordo, model):
    status, body = s.request("GET", "/health")
    check(status == 200 and body["status"] == "ok", "GET /health is 200, status ok")

    texts = ["the cat sat on the mat", "the mat sat on the cat", "she opened the door and went out"]
    expected = embed_cli(ordo, model, texts)
    status, body = s.post("/v1/embeddings", {"input": texts, "model": "anything"})
    check(status == 200 and body["object"] == "list" and len(body["data"]) == 3, "/v1/embeddings: a list of 3")
    check([d["index"] for d in body["data"]] == [0, 1, 2] and all(d["object"] == "embedding" for d in body["data"]),
          "/v1/embeddings: index 0, 1, 2 in order, object embedding")
    same([d["embedding"] for d in body["data"]], expected, "/v1/embeddings = ordo encode --json (mean pooling)")
    pieces = sum(len(cli_json(ordo, model, "tokenize", "--json", t)["ids"]) for t in texts)
    check(body["usage"] == {"prompt_tokens": pieces, "total_tokens": pieces},
          f"/v1/embeddings: usage counts the {pieces} tokens")
    check(body["model"] == os.path.basename(model.rstrip("/")), "/v1/embeddings: model is the model directory's name")
    status, one = s.post("/v1/embeddings", {"input": texts[1]})
    check(status == 200 and len(one["data"]) == 1, "/v1/embeddings: one string is one text")
    same(one["data"][0]["embedding"], expected[1], "/v1/embeddings: a string alone gives the same vector")
    status, b64 = s.post("/v1/embeddings", {"input": texts, "encoding_format": "base64"})
    decoded = []
    for d in b64["data"]:
        raw = base64.b64decode(d["embedding"])
        decoded.append(list(struct.unpack(f"<{len(raw) // 4}f", raw)))
    floats = [[struct.unpack("<f", struct.pack("<f", v))[0] for v in d["embedding"]] for d in body["data"]]
    check(status == 200 and decoded == floats, "/v1/embeddings base64: little-endian float32, the same floats exactly")

    text = "the cat sat on the mat"
    same(s.post("/tokenize", {"text": text})[1], cli_json(ordo, model, "tokenize", "--json", text),
         "/tokenize = ordo tokenize --json")
    masked = "she opened the <mask> and went out"
    same(s.post("/fill", {"text": masked, "top": 7, "words": True})[1],
         cli_json(ordo, model, "fill", "--json", "--top", "7", "--words", masked), "/fill = ordo fill --json --words")
    same(s.post("/fill", {"text": masked, "positions": False})[1],
         cli_json(ordo, model, "fill", "--json", "--no-pe", masked), "/fill positions false = ordo fill --no-pe")
    same(s.post("/score", {"text": text})[1], cli_json(ordo, model, "score", "--json", text),
         "/score = ordo score --json")
    b = "the mat sat on the cat"
    same(s.post("/compare", {"a": text, "b": b})[1], cli_json(ordo, model, "compare", "--json", text, b),
         "/compare = ordo compare --json")
    trace = cli_json(ordo, model, "trace", "--json", "--inside", "1,1", text)
    served = s.post("/trace", {"text": text, "inside": [1, 1]})[1]
    served["model"] = trace["model"]  # the server names the model by its directory
    same(served, trace, "/trace = ordo trace --json --inside 1,1")
    same(s.post("/trace", {"text": text, "positions": False})[1]["stages"],
         cli_json(ordo, model, "trace", "--json", "--no-pe", text)["stages"], "/trace positions false = --no-pe")

    att = s.post("/attention", {"text": text, "layer": 1, "head": 1})[1]
    stage = {st["name"]: st["values"] for st in trace["stages"] if st.get("layer") == 1 and st.get("head") == 1}
    check(att["pieces"] == trace["pieces"], "/attention: the pieces of ordo trace")
    same(att["q"], stage["query"], "/attention q = ordo trace --inside 1,1's query")
    same(att["k"], stage["key"], "/attention k = its key")
    scaled = [st["values"] for st in trace["stages"]
              if st.get("layer") == 1 and st.get("head") == 1 and "sqrt" in st.get("equation", "")
              and len(st["values"]) == len(st["values"][0]) and st["name"] != "attention weights"]
    check(len(scaled) >= 1, "ordo trace --inside has a scaled-scores stage")
    same(att["scaled_scores"], scaled[-1], "/attention scaled_scores = its scaled scores")
    weights = [st["values"] for st in trace["stages"] if st["name"] == "attention weights" and st["layer"] == 1
               and st["head"] == 1]
    same(att["weights"], weights[0], "/attention weights = its attention weights")
    # The weights are the softmax of the scaled scores, row by row (float64 here).
    import math
    worst = 0.0
    for srow, wrow in zip(att["scaled_scores"], att["weights"]):
        m = max(srow)
        e = [math.exp(v - m) for v in srow]
        worst = max(worst, max(abs(x / sum(e) - w) for x, w in zip(e, wrow)))
    check(worst < 1e-5, f"/attention: weights = softmax(scaled_scores) (max |diff| {worst:.2g})")
    same(att["v"], stage["value"], "/attention v = its value")
    same(att["output"], stage["head output"], "/attention output = its head output, A v")
    check(att["parts"] is None, "/attention: no content/position split in layer 1")
    # Layer 0: the split of `ordo attention --parts`; the four parts add up to the scaled scores.
    att0 = s.post("/attention", {"text": text, "layer": 0, "head": 1})[1]
    parts = att0["parts"]
    worst = max(abs(sum(parts[k][i][j] for k in parts) - att0["scaled_scores"][i][j])
                for i in range(len(att0["pieces"])) for j in range(len(att0["pieces"])))
    check(sorted(parts) == ["content_content", "content_position", "position_content", "position_position"]
          and worst < 1e-3, f"/attention layer 0: the scores split in four parts that add up to them (max |diff| {worst:.2g})")
    check(s.post("/attention", {"text": text, "layer": 0, "head": 1, "positions": False})[1]["parts"] is None,
          "/attention without positions: no split")

    with tempfile.TemporaryDirectory() as tmp:
        page = os.path.join(tmp, "view.html")
        cli(ordo, model, "view", text, b, "--html", page)
        html = open(page).read()
        embedded = json.loads(re.search(r'<script id="ordo-data" type="application/json">(.*?)</script>', html,
                                        re.S).group(1))
    served = s.post("/view", {"a": text, "b": b})[1]
    served["model"]["name"] = embedded["model"]["name"]
    # The file carries every head's inside (section 2b); the live page asks /attention for the one it shows.
    check(served["inside"] is None and embedded["inside"]["run"] == "with_pe",
          "/view leaves out the heads' inside that the file carries")
    embedded["inside"] = None
    same(served, embedded, "/view = the JSON ordo view embeds in its page")
    status, page = s.request("GET", "/")
    check(status == 200 and '"live":true' in page and "@ORDO_VIEW_DATA@" not in page,
          "GET / is the view page, marked live")


def test_errors(s):
    def expect(status, path, what, body=None, raw=None, method="POST"):
        got, j = s.request(method, path, body, raw)
        ok = got == status and isinstance(j, dict) and set(j) == {"error"} and j["error"]["message"] and \
            "\n" not in j["error"]["message"] and j["error"]["type"]
        check(ok, f"{method} {path} {what}: {status} with a JSON error (got {got}: {j})")

    expect(400, "/v1/embeddings", "malformed JSON", raw=b'{"input": ')
    expect(400, "/tokenize", "malformed JSON", raw=b"not json")
    # A Range header is ignored: the answer, an error's JSON included, goes whole (httplib cut it to
    # the range asked, '{"erro' for bytes=0-5; fuzz_http found it).
    for path, data in (("/compare", b"not json"), ("/tokenize", b'{"text": "the cat"}'), ("/", None)):
        conn = http.client.HTTPConnection("127.0.0.1", s.port, timeout=60)
        conn.request("GET" if data is None else "POST", path, body=data,
                     headers={"Range": "bytes=0-5", "Content-Type": "application/json"})
        r = conn.getresponse()
        body = r.read()
        conn.close()
        whole = body.startswith(b"<!") if data is None else isinstance(json.loads(body), dict)
        check(r.status in (200, 400) and r.getheader("Content-Range") is None and len(body) > 6 and whole,
              f"{path} with Range: bytes=0-5 answers whole (got {r.status}, {len(body)} bytes)")
    expect(400, "/v1/embeddings", "a number past a double", raw=b'{"input": "a", "user": 1e999}')
    got, j = s.request("POST", "/v1/embeddings", raw=b'{"input": "x"}', ctype="multipart/form-data; boundary=b")
    check(got == 415 and "multipart" in j["error"]["message"], f"a multipart body is 415 (got {got}: {j})")
    # JSON sent as application/x-www-form-urlencoded (curl -d's header) past 8 KiB: still JSON, still answered
    texts = ["the cat sat on the mat"] * 8
    big = json.dumps({"input": texts, "user": "x" * 9000}).encode()
    got, j = s.request("POST", "/v1/embeddings", raw=big, ctype="application/x-www-form-urlencoded")
    check(got == 200 and len(j["data"]) == 8, f"a 9 KB JSON body labelled form-urlencoded is answered (got {got})")
    expect(413, "/v1/embeddings", "body past --max-body", raw=json.dumps({"input": "word " * 30000}).encode())
    expect(422, "/v1/embeddings", "a body that is not an object", body=["x"])
    expect(422, "/v1/embeddings", "no input", body={"model": "x"})
    expect(422, "/v1/embeddings", "input a number", body={"input": 3})
    expect(422, "/v1/embeddings", "input with a number", body={"input": ["a", 3]})
    expect(422, "/v1/embeddings", "input an empty array", body={"input": []})
    expect(422, "/v1/embeddings", "an empty text", body={"input": ["a", ""]})
    expect(422, "/v1/embeddings", "a text over --max-tokens", body={"input": "the cat " * 100})
    expect(422, "/v1/embeddings", "more texts than --max-texts", body={"input": ["a"] * 9})
    expect(422, "/v1/embeddings", "an unknown encoding_format", body={"input": "a", "encoding_format": "int8"})
    expect(422, "/v1/embeddings", "model not a string", body={"input": "a", "model": 5})
    expect(422, "/v1/embeddings", "dimensions (a prefix of a mean is no embedding)", body={"input": "a", "dimensions": 8})
    expect(422, "/fill", "a text without <mask>", body={"text": "the cat sat"})
    expect(422, "/fill", "top out of range", body={"text": "the <mask> sat", "top": 0})
    expect(422, "/tokenize", "text missing", body={})
    expect(422, "/score", "positions not a boolean", body={"text": "a", "positions": "no"})
    expect(422, "/compare", "b missing", body={"a": "x"})
    expect(422, "/trace", "inside out of range", body={"text": "a cat", "inside": [9, 0]})
    expect(422, "/trace", "an empty text", body={"text": ""})
    expect(422, "/attention", "layer out of range", body={"text": "a cat", "layer": 99})
    expect(422, "/view", "an empty text", body={"a": ""})
    expect(404, "/v2/embeddings", "unknown path", body={"input": "a"})
    expect(404, "/nothing", "unknown path", method="GET")
    expect(405, "/v1/embeddings", "with GET", method="GET")
    expect(405, "/health", "with POST", body={})
    expect(405, "/view", "with DELETE", method="DELETE")
    status, _ = s.request("GET", "/health")
    check(status == 200, "the server still answers after all of them")


def test_mutated_bodies(s):
    """Valid bodies of every endpoint, mutated at random (fixed seed): every answer is a JSON object with
    a status the API has (200, 400, 413, 415 or 422), never a 500 or a dropped connection, and the server
    still answers afterwards."""
    import random
    rng = random.Random(20171206)
    seeds = [("/v1/embeddings", {"input": ["the cat sat on the mat", "a"], "encoding_format": "base64"}),
             ("/tokenize", {"text": "the cat sat"}), ("/fill", {"text": "the <mask> sat", "top": 3}),
             ("/score", {"texts": ["the cat sat"]}), ("/compare", {"a": "the cat", "b": "cat the"}),
             ("/trace", {"text": "the cat", "inside": [0, 1]}), ("/attention", {"text": "a b", "layer": 0, "head": 0}),
             ("/view", {"a": "the cat", "b": "cat the"})]
    odd = [b"\x00", b"\xff", b"\\u0000", b"\\ud800", b"1e999", b"-0", b"[]", b"{}", b"null", b'"', b"<mask>" * 50]
    bad = []
    for i in range(1200):
        path, body = seeds[i % len(seeds)]
        data = bytearray(json.dumps(body).encode())
        for _ in range(rng.randint(1, 4)):
            op, at = rng.randrange(4), rng.randrange(len(data) + 1)
            if op == 0 and data:
                del data[min(at, len(data) - 1)]
            elif op == 1:
                data[at:at] = rng.choice(odd)
            elif op == 2 and data:
                data[min(at, len(data) - 1)] = rng.randrange(256)
            else:
                data[at:at] = data[at:at + rng.randint(1, 20)]
        try:
            got, j = s.request("POST", path, raw=bytes(data))
        except (OSError, http.client.HTTPException) as e:
            bad.append((path, bytes(data), repr(e)))
            continue
        if got not in (200, 400, 413, 415, 422) or not isinstance(j, dict):
            bad.append((path, bytes(data), got))
    check(not bad, f"1,200 mutated bodies: every answer a JSON status of the API (bad: {bad[:3]})")
    status, _ = s.request("GET", "/health")
    check(status == 200, "the server still answers after the mutated bodies")


def test_no_batching(ordo, model):
    s = Server(ordo, model, "--no-batching")
    texts = ["the cat sat on the mat", "she opened the door and went out"]
    status, body = s.post("/v1/embeddings", {"input": texts})
    same([d["embedding"] for d in body["data"]], embed_cli(ordo, model, texts),
         "--no-batching: /v1/embeddings = ordo encode --json")
    code = s.stop()
    check(code == 0 and "passes held" not in s.last_stderr, "--no-batching: stops with 0, no batches")


def test_slow_client(ordo, model):
    # One connection at a time (--http-threads 1) and a client that sends half a request and goes
    # silent: after --timeout 1 s the server drops it, and the next client is answered.
    s = Server(ordo, model, "--http-threads", "1", "--timeout", "1")
    slow = socket.create_connection(("127.0.0.1", s.port))
    slow.sendall(b"POST /v1/embeddings HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{\"input\"")
    slow.settimeout(60)
    try:
        dropped = slow.recv(4096) is not None  # the server's close (b"") or its 400, not our timeout
    except socket.timeout:
        dropped = False
    slow.close()
    check(dropped, "a client silent mid-request is dropped after --timeout")
    status, body = s.post("/v1/embeddings", {"input": "the cat"})
    check(status == 200, "... and the next client, on the one thread, is answered")
    check(s.stop() == 0, "and the server stops with 0")
    check(re.search(r"stopped \(SIGTERM\) after \d+ requests; 1 pass held 1 text", s.last_stderr),
          "its last line counts the batches")


def dribble(port, ended, stop):
    """A client that sends a request one byte every 0.7 s, as long as the server keeps the connection
    (at most 30 s): ended gets the seconds it lasted."""
    start = time.monotonic()
    request = b"POST /v1/embeddings HTTP/1.1\r\nHost: x\r\nContent-Length: 100000\r\n\r\n" + b"x" * 100000
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=5) as c:
            for byte in request:
                if stop.is_set() or time.monotonic() - start > 30:
                    break
                c.sendall(bytes([byte]))
                time.sleep(0.7)
    except OSError:
        pass  # the server closed the connection: the next send fails
    ended.append(time.monotonic() - start)


def test_request_deadline(ordo, model):
    # Two clients that each send a byte every 0.7 s hold both HTTP threads: the deadline is for the
    # whole request (--timeout 2), not for each read, so both are cut near 2 s and /health is answered.
    s = Server(ordo, model, "--http-threads", "2", "--timeout", "2")
    ended, stop = [], threading.Event()
    slow = [threading.Thread(target=dribble, args=(s.port, ended, stop)) for _ in range(2)]
    for t in slow:
        t.start()
    time.sleep(0.5)  # both have their threads
    conn = http.client.HTTPConnection("127.0.0.1", s.port, timeout=20)
    try:
        conn.request("GET", "/health")
        status = conn.getresponse().status
    except OSError as e:
        status = repr(e)
    conn.close()
    check(status == 200, f"two clients sending a byte every 0.7 s: /health is still answered (got {status})")
    for t in slow:
        t.join(40)
    check(len(ended) == 2 and max(ended) < 15, f"... and both are cut after the 2 s deadline (they lasted {ended})")
    # Headers at once, then the body a byte every 0.7 s: the deadline passes while the body arrives,
    # and the answer says so (408, the connection closed after it).
    with socket.create_connection(("127.0.0.1", s.port), timeout=20) as c:
        c.sendall(b"POST /v1/embeddings HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n")
        answer = b""
        try:
            for _ in range(40):  # a byte, then 0.7 s of listening for the answer
                c.sendall(b"x")
                if select.select([c], [], [], 0.7)[0]:
                    break
        except OSError:
            pass
        try:
            while chunk := c.recv(4096):
                answer += chunk
        except OSError:
            pass
    check(answer.startswith(b"HTTP/1.1 408 ") and b"request_timeout" in answer and b"Connection: close" in answer,
          f"a body still arriving at the deadline: 408 and the connection closed (got {answer[:200]!r})")
    head = answer.split(b"\r\n\r\n")[0].lower().split(b"\r\n")
    check(head.count(b"connection: close") == 1 and not any(h.startswith(b"keep-alive:") for h in head),
          f"... one Connection: close and no Keep-Alive header beside it (got {head})")
    # A SIGTERM while such a client is sending: the server ends within its deadline.
    ended.clear()
    t = threading.Thread(target=dribble, args=(s.port, ended, stop))
    t.start()
    time.sleep(0.5)
    s.proc.send_signal(signal.SIGTERM)
    try:
        code = s.proc.wait(timeout=15)
    except subprocess.TimeoutExpired:
        code = "still running 15 s after SIGTERM"
        s.proc.kill()
    stop.set()
    t.join(40)
    check(code == 0, f"SIGTERM with a client sending a byte every 0.7 s: the server ends with 0 (got {code})")
    s.stop()


def test_keep_alive_after_refusals(s):
    # Refused requests on a kept-alive connection: each next request gets its own answer (a multipart
    # body is read and dropped, not parsed as the next request), or the connection is closed.
    conn = http.client.HTTPConnection("127.0.0.1", s.port, timeout=20)
    body = b"--b\r\nContent-Disposition: form-data; name=\"f\"\r\n\r\n" + b"x" * 50000 + b"\r\n--b--\r\n"
    answers = []
    for method, path, data, ctype in [("POST", "/v1/embeddings", body, "multipart/form-data; boundary=b"),
                                      ("GET", "/health", None, None),
                                      ("POST", "/tokenize", b"{\"text\": \"the cat\"}", "application/json"),
                                      ("POST", "/nothing", b"x" * 30000, "application/json"),
                                      ("GET", "/health", None, None)]:
        try:
            conn.request(method, path, body=data, headers={"Content-Type": ctype} if ctype else {})
            r = conn.getresponse()
            j = json.loads(r.read())
            answers.append((r.status, "status" in j or "pieces" in j or "error" in j))
        except (OSError, http.client.HTTPException) as e:
            answers.append(repr(e))
    conn.close()
    check(answers == [(415, True), (200, True), (200, True), (404, True), (200, True)],
          f"one kept-alive connection: 415, then each request its own answer (got {answers})")
    # A path holding a newline is one line of the log, its control characters escaped.
    with socket.create_connection(("127.0.0.1", s.port), timeout=20) as c:
        c.sendall(b"GET /x%0APOST%20/v1/embeddings%20200%201.0%20ms HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        while c.recv(4096):
            pass
    lines = s.stderr().splitlines()
    check("GET /x\\x0aPOST\\x20/v1/embeddings\\x20200\\x201.0\\x20ms 404" in "\n".join(lines) and
          not any(ln == "GET /x" or ln.startswith("GET /x ") for ln in lines),
          "a newline in a path is escaped in the request log (\\x0a), not a forged line")


def test_queue_full(ordo, model):
    # One request waits 3 s for company (--batch-wait-ms 3000) and fills the queue of one.
    s = Server(ordo, model, "--queue", "1", "--batch-wait-ms", "3000")
    first = {}
    t = threading.Thread(target=lambda: first.update(r=s.post("/v1/embeddings", {"input": "the cat"})))
    t.start()
    time.sleep(0.5)
    status, j = s.post("/v1/embeddings", {"input": "the mat"})
    check(status == 503 and j["error"]["type"] == "overloaded", f"a full queue is 503 overloaded (got {status})")
    t.join()
    check(first["r"][0] == 200, "the request in the queue is answered 200")
    check(s.stop() == 0, "and the server stops with 0")


def test_concurrency(s, ordo, model):
    words = ["cat", "dog", "mat", "sun", "door", "river", "house", "tree"]
    texts = [f"the {words[i % 8]} sat on the {words[(i // 8) % 8]} {i}" for i in range(64)]
    alone = {}
    for t in texts:  # one at a time: each text's single-request vector
        alone[t] = s.post("/v1/embeddings", {"input": t})[1]["data"][0]["embedding"]
    got = {}
    barrier = threading.Barrier(64)

    def client(t):
        barrier.wait()
        got[t] = s.post("/v1/embeddings", {"input": t})

    threads = [threading.Thread(target=client, args=(t,)) for t in texts]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    check(all(got[t][0] == 200 for t in texts), "64 clients at once: all 200")
    # A batch of 64 padded texts runs its products in other blocks than a text alone, so the sums
    # round differently in the last bits of a float: 1e-5 is about 100 float32 steps at |v| ~ 1.
    worst = max(max_diff(got[t][1]["data"][0]["embedding"], alone[t]) for t in texts)
    scale = max(abs(v) for t in texts for v in alone[t])
    check(worst <= 1e-5, f"64 clients at once: each gets its own text's vector (max |diff| {worst:.3g}, "
                         f"largest |value| {scale:.3g})")
    # ... and not a neighbour's: every other text's vector is far further away.
    nearest = min(max_diff(got[t][1]["data"][0]["embedding"], alone[u]) for t in texts for u in texts if u != t)
    check(nearest > 1000 * worst, f"64 clients at once: another text's vector differs by at least {nearest:.3g}")
    distinct = len({json.dumps(got[t][1]["data"][0]["embedding"]) for t in texts})
    check(distinct == 64, "64 clients at once: 64 different vectors")


def test_shutdown_in_flight(ordo, model):
    s = Server(ordo, model, "--batch-wait-ms", "1500")
    results = []
    lock = threading.Lock()

    def client(i):
        r = s.post("/v1/embeddings", {"input": f"text number {i}"})
        with lock:
            results.append(r[0])

    threads = [threading.Thread(target=client, args=(i,)) for i in range(8)]
    for th in threads:
        th.start()
    time.sleep(0.5)  # all 8 are in the batch that waits 1.5 s
    s.proc.send_signal(signal.SIGTERM)
    for th in threads:
        th.join()
    code = s.proc.wait(timeout=60)
    log = s.stderr()
    check(results == [200] * 8, f"SIGTERM in flight: the 8 requests complete with 200 (got {results})")
    check(code == 0, f"SIGTERM in flight: exit 0 (got {code})")
    check("stopped (SIGTERM)" in log, "SIGTERM in flight: the server says it stopped on SIGTERM")
    s.stop()


def test_busy_port(s, ordo, model):
    r = subprocess.run([ordo, "serve", "--model", model, "--port", str(s.port)], capture_output=True, text=True,
                       timeout=60)
    lines = r.stderr.strip().splitlines()
    check(r.returncode == 2 and len(lines) == 1 and
          lines[0].startswith(f"error: 127.0.0.1:{s.port}: the port is in use ("),
          f"a busy port: one line, exit 2 (got {r.returncode}: {r.stderr.strip()})")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ordo", required=True)
    ap.add_argument("--model", required=True)
    a = ap.parse_args()
    s = Server(a.ordo, a.model, "--max-body", "65536", "--max-tokens", "64", "--max-texts", "8")
    try:
        test_endpoints(s, a.ordo, a.model)
        test_errors(s)
        test_mutated_bodies(s)
        test_busy_port(s, a.ordo, a.model)
        test_keep_alive_after_refusals(s)
    finally:
        log = s.stderr()
        check(s.stop() == 0, "the server stops on SIGTERM with 0")
    lines = [ln for ln in log.splitlines() if not ln.startswith("ordo serve:")]
    # "- ms": a request httplib refused before it reached a route has no start time, and one it could
    # not read at all (a client gone mid-request on a loaded machine) no method or path either (serve.cpp)
    odd = [ln for ln in lines
           if not re.fullmatch(r"(GET|POST|DELETE) /\S* \d{3} \d+\.\d ms|(GET|POST|DELETE)? ?\S* \d{3} - ms", ln)]
    check(not odd and len(lines) > 40, f"one log line per request: method, path, status, ms ({len(lines)} lines; "
          f"others: {odd[:5]})")
    c = Server(a.ordo, a.model)
    try:
        test_concurrency(c, a.ordo, a.model)
    finally:
        c.stop()
    test_no_batching(a.ordo, a.model)
    test_slow_client(a.ordo, a.model)
    test_request_deadline(a.ordo, a.model)
    test_queue_full(a.ordo, a.model)
    test_shutdown_in_flight(a.ordo, a.model)
    if failures:
        print(f"{len(failures)} failed:\n  " + "\n  ".join(failures))
        return 1
    print("all passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
