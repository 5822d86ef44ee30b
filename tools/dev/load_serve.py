#!/usr/bin/python3
"""Load test of `ordo serve` on loopback: requests per second and p50/p99 latency at concurrency 1,
8 and 64, one short text per request, with batching on and off; optionally the server's resident
memory over a long run (--rss-requests 100000). It starts its own servers on free ports (127.0.0.1
only), sends a bounded number of requests for a bounded time per setting, stops the servers with
SIGTERM and prints a table. Measure with `env -u OPENBLAS_CORETYPE` (docs/serve.md).

  tools/dev/load_serve.py --ordo build/ordo --model build/models/default
  tools/dev/load_serve.py --ordo build/ordo --model build/models/default --only-rss --rss-requests 100000
"""
import argparse
import http.client
import json
import os
import re
import signal
import subprocess
import tempfile
import threading
import time

WORDS = ["cat", "dog", "mat", "sun", "door", "river", "house", "tree", "book", "road"]


def text(i):
    return f"the {WORDS[i % 10]} sat on the {WORDS[(i // 10) % 10]}"


def start(ordo, model, flags):
    # The request log goes to a file, not a pipe: a thread here reading 100,000 lines would take the
    # interpreter's lock from the clients it measures.
    log = tempfile.NamedTemporaryFile("w+", prefix="ordo-serve-", suffix=".log", delete=False)
    proc = subprocess.Popen([ordo, "serve", "--model", model, "--port", "0", *flags], stdout=subprocess.DEVNULL,
                            stderr=log)
    proc.log = log.name
    deadline = time.time() + 60
    while time.time() < deadline:
        with open(log.name) as f:
            m = re.search(r"listening on http://127\.0\.0\.1:(\d+)/", f.readline())
        if m:
            return proc, int(m.group(1))
        if proc.poll() is not None:
            break
        time.sleep(0.05)
    proc.kill()
    raise SystemExit("ordo serve did not start: " + open(log.name).read())


def stop(proc):
    proc.send_signal(signal.SIGTERM)
    code = proc.wait(timeout=60)
    os.unlink(proc.log)
    return code


def run(port, concurrency, requests, seconds):
    """`requests` requests from `concurrency` threads, each with its own kept-alive connection, or
    fewer if `seconds` pass first. Returns (answered, elapsed s, sorted latencies in ms)."""
    lock = threading.Lock()
    state = {"next": 0, "latencies": [], "errors": 0, "kinds": {}}
    deadline = time.perf_counter() + seconds

    def client():
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        while True:
            with lock:
                i = state["next"]
                if i >= requests or time.perf_counter() > deadline:
                    break
                state["next"] += 1
            body = json.dumps({"input": text(i)})
            t0 = time.perf_counter()
            try:
                conn.request("POST", "/v1/embeddings", body=body, headers={"Content-Type": "application/json"})
                r = conn.getresponse()
                r.read()
                ok = r.status == 200
                if not ok:
                    with lock:
                        state["kinds"][f"HTTP {r.status}"] = state["kinds"].get(f"HTTP {r.status}", 0) + 1
            except (http.client.HTTPException, OSError) as e:
                conn.close()
                conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
                ok = False
                with lock:
                    state["kinds"][type(e).__name__] = state["kinds"].get(type(e).__name__, 0) + 1
            ms = (time.perf_counter() - t0) * 1000
            with lock:
                if ok:
                    state["latencies"].append(ms)
                else:
                    state["errors"] += 1
        conn.close()

    threads = [threading.Thread(target=client) for _ in range(concurrency)]
    t0 = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    elapsed = time.perf_counter() - t0
    if state["errors"]:
        print(f"  ({state['errors']} requests failed: {state['kinds']})")
    return len(state["latencies"]), elapsed, sorted(state["latencies"])


def percentile(sorted_ms, p):
    return sorted_ms[min(len(sorted_ms) - 1, int(p / 100 * len(sorted_ms)))] if sorted_ms else float("nan")


def memory_kb(pid):
    with open(f"/proc/{pid}/status") as f:
        fields = dict(line.split(":", 1) for line in f if ":" in line)
    return int(fields["VmRSS"].split()[0]), int(fields["VmHWM"].split()[0])


def throughput(args):
    print("mode         concurrency  requests   req/s   p50 ms   p99 ms   max ms")
    for mode, flags in (("batching", []), ("no batching", ["--no-batching"])):
        proc, port = start(args.ordo, args.model, flags + args.server_flag)
        try:
            run(port, 8, 200, 10)  # warm-up: threads started, pages touched
            for c in args.concurrency:
                n, elapsed, ms = run(port, c, args.requests, args.seconds)
                print(f"{mode:12s} {c:11d} {n:9d} {n / elapsed:7.0f} {percentile(ms, 50):8.1f} "
                      f"{percentile(ms, 99):8.1f} {ms[-1] if ms else float('nan'):8.1f}", flush=True)
        finally:
            stop(proc)


def rss(args):
    proc, port = start(args.ordo, args.model, args.server_flag)
    samples = []
    done = threading.Event()

    def sample():
        while not done.is_set():
            samples.append(memory_kb(proc.pid))
            done.wait(0.5)

    sampler = threading.Thread(target=sample)
    sampler.start()
    try:
        sent = 0
        step = args.rss_requests // 10
        print("requests   VmRSS MB   VmHWM MB")
        while sent < args.rss_requests:
            n, _, _ = run(port, 64, step, 600)
            sent += n
            now, peak = memory_kb(proc.pid)
            print(f"{sent:8d} {now / 1024:10.1f} {peak / 1024:10.1f}", flush=True)
    finally:
        done.set()
        sampler.join()
        stop(proc)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ordo", required=True)
    ap.add_argument("--model", required=True)
    ap.add_argument("--concurrency", default="1,8,64", help="comma-separated client counts")
    ap.add_argument("--requests", type=int, default=3000, help="requests per setting (at most)")
    ap.add_argument("--seconds", type=float, default=30, help="time per setting (at most)")
    ap.add_argument("--rss-requests", type=int, default=0, help="also send this many and follow the server's memory")
    ap.add_argument("--only-rss", action="store_true", help="only the memory run")
    ap.add_argument("--server-flag", action="append", default=[], help="a flag passed to ordo serve (repeatable)")
    args = ap.parse_args()
    args.concurrency = [int(c) for c in args.concurrency.split(",")]
    if args.requests > 1_000_000 or args.rss_requests > 1_000_000:
        raise SystemExit("at most 1,000,000 requests per run")
    if not args.only_rss:
        throughput(args)
    if args.rss_requests:
        rss(args)


if __name__ == "__main__":
    main()
