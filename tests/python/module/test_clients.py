"""One text, three clients: the command line (`ordo encode`), the server (`ordo serve`, POST
/v1/embeddings) and Python (`ordo.Model.encode`) meet a text through the library's one set of
rules (Pipeline::prepare in lib/ordo.cpp). The same over-long, empty and invalid texts
go through all three; each must give the same answer and the same message, apart from how it
names the text ("argument 1", "\"input\"[0]", "texts[0]") and spells its own options
("--max-tokens 64" / "max_tokens=64", "add --truncate" / "set \"truncate\": true" /
"pass truncate=True")."""
import http.client
import json
import os
import re
import signal
import subprocess
import tempfile
import time

import numpy as np
import pytest

import ordo
from conftest import ORDO

LONG = "the cat sat on the mat " * 20  # 120 pieces
LIMIT = 64

# How each client names the text and its options, replaced by one neutral spelling before comparing.
SPELLINGS = {
    "cli": {"where": "argument 1", "max": "--max-tokens ", "cut": "add --truncate"},
    "serve": {"where": '"input"[0]', "max": "--max-tokens ", "cut": 'set "truncate": true'},
    "python": {"where": "texts[0]", "max": "max_tokens=", "cut": "pass truncate=True"},
}


def neutral(client, message):
    s = SPELLINGS[client]
    assert message.startswith(s["where"] + ": "), (client, message)
    message = message[len(s["where"]) + 2:]
    return message.replace(s["max"], "<max>").replace(s["cut"], "<cut>")


class Server:
    def __init__(self, model, *flags):
        self.log = tempfile.NamedTemporaryFile("w+", suffix=".log", delete=False)
        self.proc = subprocess.Popen([ORDO, "serve", "--model", model, "--port", "0", *flags],
                                     stdout=subprocess.DEVNULL, stderr=self.log)
        deadline = time.time() + 60
        while time.time() < deadline:
            m = re.search(r"listening on http://127\.0\.0\.1:(\d+)/", open(self.log.name).read())
            if m:
                self.port = int(m.group(1))
                return
            assert self.proc.poll() is None, "ordo serve ended: " + open(self.log.name).read()
            time.sleep(0.05)
        raise RuntimeError("ordo serve did not listen within 60 s")

    def post(self, path, body=None, raw=None, method="POST"):
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=60)
        data = raw if raw is not None else (json.dumps(body).encode() if body is not None else None)
        conn.request(method, path, body=data, headers={"Content-Type": "application/json"} if data else {})
        r = conn.getresponse()
        out = json.loads(r.read())
        conn.close()
        return r.status, out

    def stop(self):
        self.proc.send_signal(signal.SIGTERM)
        self.proc.wait(timeout=60)
        os.unlink(self.log.name)


@pytest.fixture(scope="module")
def server(model_dir):
    s = Server(model_dir, "--max-tokens", str(LIMIT))
    yield s
    s.stop()


def cli(*args, text):
    """`ordo encode --json` of one text given as an argument (bytes allowed): (status, stdout lines, stderr)."""
    arg = text if isinstance(text, bytes) else text.encode()
    r = subprocess.run([ORDO.encode(), b"encode", b"--json", *[a.encode() for a in args], b"--", arg],
                       capture_output=True)
    return r.returncode, [json.loads(line) for line in r.stdout.decode().splitlines()], r.stderr.decode()


def cli_error(*args, text):
    status, _, err = cli(*args, text=text)
    assert status == 2 and err.startswith("error: ") and err.count("\n") == 1, err
    return err[len("error: "):].strip()


def serve_error(server, body):
    status, out = server.post("/v1/embeddings", body)
    assert status == 422, out
    return out["error"]["message"]


def python_error(call):
    with pytest.raises(ordo.InputError) as e:
        call()
    return str(e.value)


@pytest.mark.parametrize("text, what", [(LONG, "tokens"), ("a" * (LIMIT * 256 + 1), "bytes")], ids=["tokens", "bytes"])
def test_over_long_is_refused_alike(model, server, text, what):
    messages = {
        "cli": cli_error("--max-tokens", str(LIMIT), text=text),
        "serve": serve_error(server, {"input": text}),
        "python": python_error(lambda: model.encode(text, max_tokens=LIMIT)),
    }
    said = {client: neutral(client, m) for client, m in messages.items()}
    assert said["cli"] == said["serve"] == said["python"], messages
    if what == "tokens":
        assert said["cli"] == f"text has 120 tokens, more than <max>{LIMIT} (raise it, or <cut>)"
    else:
        assert said["cli"] == (f"text is {len(text)} bytes, more than <max>{LIMIT} allows "
                               f"({LIMIT * 256} bytes; raise it, or <cut>)")


def test_over_long_truncated_alike(model, server):
    status, lines, _ = cli("--max-tokens", str(LIMIT), "--truncate", text=LONG)
    assert status == 0 and lines[0]["truncated"] is True and len(lines[0]["ids"]) == LIMIT
    from_cli = np.array(lines[0]["embedding"], dtype=np.float32)
    status, out = server.post("/v1/embeddings", {"input": LONG, "truncate": True})
    assert status == 200 and out["usage"]["prompt_tokens"] == LIMIT, out
    from_serve = np.array(out["data"][0]["embedding"], dtype=np.float32)
    from_python = model.encode(LONG, max_tokens=LIMIT, truncate=True)
    # The same tokens through the same encoder: the same floats, printed and read back exactly.
    np.testing.assert_array_equal(from_cli, from_python)
    np.testing.assert_array_equal(from_serve, from_python)


def test_empty_has_no_vector_alike(model, server):
    status, lines, err = cli(text="")
    assert status == 0 and lines[0]["embedding"] is None and lines[0]["ids"] == []
    assert err == "note: argument 1: the text has no tokens, so it has no vector (null)\n"
    # The server refuses it (OpenAI's endpoint refuses empty input too), in the same words.
    assert neutral("serve", serve_error(server, {"input": ""})) == "the text has no tokens, so it has no vector"
    assert np.isnan(model.encode("")).all()  # Python: a row of NaN, as `ordo encode --format npy`


def test_invalid_utf8_alike(model, server):
    bad = b"bad \xff byte"
    assert neutral("cli", cli_error(text=bad)) == "invalid UTF-8 at byte 4"
    # Python's str holds such bytes as surrogateescape's U+DC80 .. U+DCFF: the same bytes again.
    text = bad.decode("utf-8", errors="surrogateescape")
    assert neutral("python", python_error(lambda: model.encode(text))) == "invalid UTF-8 at byte 4"
    # JSON is UTF-8: the server names the byte of the body.
    raw = b'{"input": "' + bad + b'"}'
    status, out = server.post("/v1/embeddings", raw=raw)
    assert status == 400, out
    at = raw.index(b"\xff")
    assert out["error"]["message"] == f"the body is not UTF-8, as JSON must be: invalid UTF-8 at byte {at}"


def test_version_from_one_place(server):
    # The CMake project's VERSION, said alike by the command, the module and the server.
    cmake = open(os.path.join(os.path.dirname(__file__), "..", "..", "..", "CMakeLists.txt")).read()
    version = re.search(r"project\(ordo VERSION (\S+)", cmake).group(1)
    assert subprocess.run([ORDO, "--version"], capture_output=True, text=True, check=True).stdout == f"ordo {version}\n"
    assert ordo.__version__ == version
    status, health = server.post("/health", method="GET")
    assert status == 200 and health["version"] == version, health


def test_compute_type_alike(model_dir):
    # A name that is not one: the same words from the command and the module (each spells its option).
    r = subprocess.run([ORDO, "encode", "--compute-type", "int4", "cat"], capture_output=True, text=True)
    assert r.returncode == 2
    assert r.stderr == 'error: ordo encode: --compute-type must be f32, bf16 or int8, got "int4"\n'
    with pytest.raises(ordo.InputError) as e:
        ordo.Model(model_dir, compute_type="int4")
    assert str(e.value) == 'compute_type must be f32, bf16 or int8, got "int4"'
    if "no oneDNN" in subprocess.run([ORDO, "encode", "--compute-type", "int8", "cat"], capture_output=True,
                                     text=True).stderr:
        pytest.skip("this build has no oneDNN: int8 is refused alike, and there is nothing to compare")
    # int8 through all three: the same floats, bit for bit (the same products on the same rows).
    m = ordo.Model(model_dir, compute_type="int8")
    assert m.compute_type == "int8" and repr(m).endswith(", compute_type='int8')")
    text = "the cat sat on the mat"
    status, lines, _ = cli("--compute-type", "int8", text=text)
    assert status == 0
    from_python = m.encode(text)
    np.testing.assert_array_equal(np.array(lines[0]["embedding"], dtype=np.float32), from_python)
    s = Server(model_dir, "--compute-type", "int8")
    try:
        status, out = s.post("/v1/embeddings", {"input": text})
    finally:
        s.stop()
    assert status == 200, out
    np.testing.assert_array_equal(np.array(out["data"][0]["embedding"], dtype=np.float32), from_python)
    assert not np.array_equal(from_python, ordo.Model(model_dir).encode(text))  # int8 is not f32
