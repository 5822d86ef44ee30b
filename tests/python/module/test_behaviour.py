"""ordo.Model beyond single calls: errors, threads, pickling, memory."""
import os
import pickle
import subprocess
import sys
import threading
import time

import numpy as np
import pytest

import ordo
from conftest import max_diff


def test_input_error_is_a_value_error():
    assert issubclass(ordo.InputError, ValueError)


def test_bad_path_has_the_cli_words(tmp_path):
    missing = str(tmp_path / "nowhere")
    with pytest.raises(ordo.InputError) as e:
        ordo.Model(missing)
    import subprocess
    cli = subprocess.run([os.environ["ORDO_BINARY"], "encode", "--model", missing, "x"], capture_output=True,
                         text=True)
    assert cli.returncode == 2
    assert cli.stderr.strip() == "error: " + str(e.value)
    assert missing in str(e.value)


def test_model_named_by_the_environment(tmp_path, monkeypatch):
    missing = str(tmp_path / "gone")
    monkeypatch.setenv("ORDO_MODEL", missing)
    assert ordo.default_model_dir() == missing
    with pytest.raises(ordo.InputError, match=f"^{missing}: no such model directory \\(named by the environment "):
        ordo.Model()


def test_bad_pooling(model):
    with pytest.raises(ordo.InputError, match='^pooling must be mean, first, max, mean-sqrt-len, weighted-mean, last or none, got "sum"$'):
        model.encode(["a"], pooling="sum")


def test_text_too_long(model):
    with pytest.raises(ordo.InputError) as e:
        model.encode(["fine", "the cat sat on the mat " * 5], max_tokens=10)
    assert str(e.value) == "texts[1]: text has 30 tokens, more than max_tokens=10 (raise it, or pass truncate=True)"
    with pytest.raises(ordo.InputError, match=r"^texts\[0\]: text has 30 pieces, more than max_tokens=10 "):
        model.score(["the cat sat on the mat " * 5], max_tokens=10)


def test_no_head_has_the_cli_words(tmp_path, model_dir):
    # A random model of the default's shape without a head (ordo init).
    import json
    import subprocess
    config = json.loads(open(os.path.join(model_dir, "config.json")).read())
    del config["head"]
    (tmp_path / "config.json").write_text(json.dumps(config))
    d = tmp_path / "nohead"
    subprocess.run([os.environ["ORDO_BINARY"], "init", "--config", str(tmp_path / "config.json"), "--out", str(d)],
                   check=True, capture_output=True)
    m = ordo.Model(str(d))
    with pytest.raises(ordo.InputError) as e:
        m.fill("the <mask> sat")
    import subprocess
    cli = subprocess.run([os.environ["ORDO_BINARY"], "fill", "--model", str(d), "the <mask> sat"],
                         capture_output=True, text=True)
    assert cli.stderr.strip() == "error: " + str(e.value)
    assert "has no masked-language-model head" in str(e.value)
    with pytest.raises(ordo.InputError, match="has no masked-language-model head"):
        m.score(["the cat"])
    assert m.encode("the cat").shape == (64,)  # encoding needs no head


def test_other_errors(model):
    with pytest.raises(ordo.InputError, match=r"^batch_size must be in 1 \.\. "):
        model.encode(["a"], batch_size=0)
    with pytest.raises(ordo.InputError, match=r"texts\[1\] is int, not str"):
        model.encode(["a", 3])
    # surrogateescape's U+DC80 .. U+DCFF are the bytes that were not UTF-8, named as the command line names them
    with pytest.raises(ordo.InputError, match=r"^texts\[1\]: invalid UTF-8 at byte 0$"):
        model.encode(["fine", "\udc80 from surrogateescape"])
    with pytest.raises(ordo.InputError, match=r"^texts\[1\]: the text has a lone surrogate"):
        model.encode(["fine", "\ud800 alone"])
    assert model.encode(["a\0b"]).shape == (1, 64)  # a NUL byte is text like any other here
    with pytest.raises(ordo.InputError, match="has no <mask>|no <mask>|at least one"):
        model.fill("no masks here")
    with pytest.raises(ordo.InputError, match="^the text has no tokens$"):
        model.attention("")
    with pytest.raises(ordo.InputError, match=r"^layout must be interleaved or split"):
        ordo.positional_encoding(4, 8, layout="diagonal")


def test_hostile_arguments(model):
    # what a caller may pass by mistake: one clear InputError each, nothing allocated for absurd sizes
    with pytest.raises(ordo.InputError, match=r"^texts\[0\] is bytes, not str"):
        model.encode([b"abc"])
    with pytest.raises(ordo.InputError, match=r"^texts\[0\] is NoneType, not str"):
        model.encode([None])
    with pytest.raises(ordo.InputError, match=r"^positions x dim is too large"):
        ordo.positional_encoding(16777216, 65536)
    with pytest.raises(ordo.InputError, match=r"^top must be in 1 \.\. "):
        model.fill("the <mask>", top=10**9)
    with pytest.raises(ordo.InputError, match=r"^threads must be in 0 \.\. "):
        ordo.set_num_threads(-5)
    with pytest.raises(ordo.InputError, match=r"max_tokens=512"):
        model.score(["word " * 2000])
    assert model.encode(x for x in ["a", "b"]).shape == (2, 64)  # any iterable of str


def test_threads_share_one_model(model):
    texts = [f"sentence {i}: the cat sat on the mat " * (1 + i % 5) for i in range(64)]
    alone = model.encode(texts, batch_size=8)
    results, errors = [None] * 4, []

    def work(k):
        try:
            for _ in range(5):
                results[k] = model.encode(texts, batch_size=8)
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    for r in results:
        assert max_diff(r, alone) == 0.0


def test_pickle_round_trip(model):
    again = pickle.loads(pickle.dumps(model))
    assert isinstance(again, ordo.Model) and again.path == model.path
    assert max_diff(again.encode(["the cat sat"]), model.encode(["the cat sat"])) == 0.0


def test_pickle_of_a_relative_path_loads_elsewhere(model_dir, tmp_path, monkeypatch):
    monkeypatch.chdir(os.path.dirname(model_dir))
    relative = ordo.Model(os.path.basename(model_dir))
    data = pickle.dumps(relative)
    monkeypatch.chdir(tmp_path)  # another working directory, as a worker's may be
    assert pickle.loads(data).path == model_dir


def rss_kib():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise AssertionError("no VmRSS in /proc/self/status")


def test_no_memory_growth_over_10000_calls(model):
    texts = ["the cat sat on the mat", "a dog"]
    for _ in range(500):  # warm up: the engine's working memory and the allocator's pools settle
        model.encode(texts)
        model.encode(texts, pooling="none")
    before = rss_kib()
    for i in range(10000):
        v = model.encode(texts, pooling="none" if i % 2 else "mean")
        del v
        if i % 10 == 0:
            model.score(["the cat"])
            model.tokenize("the cat")
    grown = rss_kib() - before
    # Each call returns ~1 KB of arrays; a leak of them would be ~10 MB. Allow 2 MB of allocator noise.
    assert grown < 2048, f"RSS grew by {grown} KiB over 10,000 calls"


def test_set_num_threads():
    n = ordo.num_threads()
    ordo.set_num_threads(1)
    assert ordo.num_threads() == 1
    ordo.set_num_threads(n)
    with pytest.raises(ordo.InputError, match=r"^threads must be in 0 \.\. 1024, got -1$"):
        ordo.set_num_threads(-1)


def test_help_documents_encode():
    doc = ordo.Model.encode.__doc__
    assert "pooling" in doc and "batch_size" in doc and "InputError" in doc


def test_readme_example_runs():
    """The README's "From Python" block, run as written (its code between -c '...')."""
    import re
    import subprocess
    import sys
    from conftest import ROOT
    readme = open(os.path.join(ROOT, "README.md"), encoding="utf-8").read()
    section = readme[readme.index("## From Python"):]
    code = re.search(r"python3 -c '\n(.*?)'\n```", section, re.S).group(1)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.splitlines()
    assert out[0] == "(1, 64)"
    piece, id_, prob = eval(out[1])  # noqa: S307 - the repr of a tuple the test just printed
    assert isinstance(piece, str) and isinstance(id_, int) and 0 < prob < 1


def test_thread_count_changed_while_threads_encode(model):
    # one Model shared by 3 threads while a fourth changes the engine's thread count: each result is
    # what it would be alone (the library's contract: a pass keeps the count it started with)
    texts = [f"the cat sat on the mat {i} " * (1 + i % 4) for i in range(24)]
    alone = model.encode(texts, batch_size=4)
    stop, errors, results = threading.Event(), [], []

    def encode():
        try:
            for _ in range(15):
                results.append(model.encode(texts, batch_size=4))
        except Exception as e:  # noqa: BLE001
            errors.append(e)

    def change():
        n = 0
        while not stop.is_set():
            ordo.set_num_threads(1 + n % 3)
            n += 1

    workers = [threading.Thread(target=encode) for _ in range(3)]
    changer = threading.Thread(target=change)
    changer.start()
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    stop.set()
    changer.join()
    ordo.set_num_threads(0)
    assert not errors
    assert len(results) == 45
    for r in results:
        assert max_diff(r, alone) <= 1e-5  # thread counts split the work differently: float sums may differ


def assert_child_succeeds(pid, seconds, what):
    # Waits for the forked child `pid` to exit 0; a child still running after `seconds` is killed
    # and the test fails, naming `what`.
    deadline = time.time() + seconds
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            break
        if time.time() > deadline:
            os.kill(pid, 9)
            os.waitpid(pid, 0)
            pytest.fail(f"{what} did not finish in {seconds} s")
        time.sleep(0.05)
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0, status


def test_encode_in_a_forked_child(model):
    # After fork only the forking thread exists in the child; the engine's helper threads do not. A
    # job must still finish there (the caller does the tasks no helper takes), not wait for ever.
    ordo.set_num_threads(2)
    want = model.encode(["the cat sat on the mat"])
    pid = os.fork()
    if pid == 0:  # the child: encode, compare, and leave without running the parent's cleanup
        try:
            got = model.encode(["the cat sat on the mat"])
            os._exit(0 if np.array_equal(got, want) else 3)
        except BaseException:  # noqa: BLE001
            os._exit(4)
    assert_child_succeeds(pid, 60, "encode in a forked child")
    ordo.set_num_threads(0)


def test_thread_count_set_in_a_forked_child(model):
    # The child of a fork has no helper threads, and the pool's mutexes and condition variable are the
    # parent's copies (a waiter counted there is a thread of the parent): the engine starts over in the
    # child, so set_num_threads then encode runs, and gives the parent's numbers.
    ordo.set_num_threads(2)
    want = model.encode(["a"] * 64)
    pid = os.fork()
    if pid == 0:
        try:
            ordo.set_num_threads(3)
            got = model.encode(["a"] * 64)
            ok = ordo.num_threads() == 3 and max_diff(got, want) <= 1e-5
            os._exit(0 if ok else 3)
        except BaseException:  # noqa: BLE001
            os._exit(4)
    assert_child_succeeds(pid, 25, "set_num_threads and encode in a forked child")
    ordo.set_num_threads(0)


def test_arguments_of_every_kind_get_the_librarys_words(model, model_dir):
    # A lone surrogate has no UTF-8 form: InputError from every method that takes a text, as from
    # encode and score (it was pybind11's TypeError "incompatible function arguments").
    for call in (lambda: model.tokenize("\udc80"), lambda: model.fill("the <mask> \ud800"),
                 lambda: model.compare("\ud800", "a"), lambda: model.trace("\ud800"),
                 lambda: model.attention("\ud800"), lambda: model.encode("\ud800")):
        with pytest.raises(ordo.InputError, match="lone surrogate|invalid UTF-8 at byte 0"):
            call()
    with pytest.raises(ordo.InputError, match=r"^text must be a str, not int"):
        model.tokenize(5)
    with pytest.raises(ordo.InputError, match=r"^b must be a str, not NoneType"):
        model.compare("a", None)
    # A path: str or path-like; a NUL byte is named, not cut at.
    import pathlib
    assert ordo.Model(pathlib.Path(model_dir)).path == str(model_dir)
    with pytest.raises(ordo.InputError, match=r"^path holds a NUL byte at byte 14"):
        ordo.Model("models/default\0x")
    with pytest.raises(ordo.InputError, match=r"^path must be a str or a path-like \(pathlib.Path\), not int"):
        ordo.Model(2)
    with pytest.raises(ordo.InputError, match=r"^2[/:]"):
        ordo.Model("2")
    # A Model made without __init__ says so instead of crashing.
    empty = ordo.Model.__new__(ordo.Model)
    for call in (lambda: empty.encode("x"), lambda: empty.tokenize("x"), lambda: empty.path, lambda: empty.config):
        with pytest.raises(ordo.InputError, match=r"never initialised"):
            call()
    assert "not initialised" in repr(empty)
    for bad in (None, "2", 2.0, True):
        with pytest.raises(ordo.InputError, match=r"^threads must be an integer, got "):
            ordo.set_num_threads(bad)


def test_text_that_normalizes_past_the_limit_is_refused_first(model):
    # U+FDFA is 3 bytes that NFKC makes 33: 690,000 of them are within the byte limit (2 MiB for
    # max_tokens=8192) and are refused by what they would normalize to, before the tokenizer makes it
    # (it peaked at 5.2 GB).
    with pytest.raises(ordo.InputError, match=r"^texts\[0\]: text normalizes \(NFKC\) to more than 6291459 bytes, "
                                              r"more than max_tokens=8192 allows"):
        model.encode("\ufdfa" * 690000)
    assert model.encode("\ufdfa" * 10).shape == (64,)


@pytest.mark.parametrize("name,value", [("OMP_NUM_THREADS", "abc"), ("OMP_NUM_THREADS", "2,x"), ("OMP_NUM_THREADS", ""),
                                        ("OMP_THREAD_LIMIT", "0"), ("OPENBLAS_NUM_THREADS", "two"),
                                        ("GOTO_NUM_THREADS", "4,2"), ("OMP_NUM_THREADS", "2,1"),
                                        ("OMP_NUM_THREADS", " +3 "), ("OPENBLAS_NUM_THREADS", "")])
def test_junk_thread_counts_have_the_cli_words(name, value):
    # import ordo refuses a junk thread count before the library loads (libgomp would warn first),
    # with the words of `ordo`, whose copy of the rule is the library's (<ordo/ordo.h>); good values import.
    from conftest import ORDO
    env = dict(os.environ, **{name: value})
    cli = subprocess.run([ORDO, "--version"], env=env, capture_output=True, text=True)
    py = subprocess.run([sys.executable, "-c", "import ordo"], env=env, capture_output=True, text=True)
    assert "libgomp" not in py.stderr + cli.stderr
    if cli.returncode == 0:
        assert py.returncode == 0, py.stderr
    else:
        assert cli.returncode == 2 and cli.stderr.startswith("error: "), cli.stderr
        assert py.returncode != 0 and py.stderr.strip().endswith("ImportError: " + cli.stderr.strip()[len("error: "):])
