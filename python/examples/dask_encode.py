#!/usr/bin/python3
"""Embed a large text file, one text per line, across a Dask cluster.

    python/examples/dask_encode.py texts.txt --out vectors/                # a LocalCluster of 2 workers
    python/examples/dask_encode.py texts.txt --out vectors/ --workers 4
    python/examples/dask_encode.py texts.txt --out vectors/ --scheduler tcp://host:8786

The file is cut into partitions of --lines lines (byte ranges found by one pass over it here);
each worker reads its own ranges from the file (a path every worker can read), encodes them with
ordo.Model and writes the parts of this run, vectors/run-<id>/part-00000.npy, ... (float32, one row
per line, the rows of `ordo encode --format npy`). vectors/manifest.json lists the parts in input
order, so the rows read back in the file's order:

    import json, numpy as np
    m = json.load(open("vectors/manifest.json"))
    X = np.concatenate([np.load(f"vectors/{p['file']}") for p in m["parts"]])

A run is written whole or not at all: its parts go into a directory of their own, and the manifest
is replaced last (written beside it, then renamed over it). A run that fails removes its directory
and leaves an earlier manifest and its parts as they were; one that succeeds removes the parts the
earlier manifest named.

Each worker loads the model once: the Model is scattered to every worker (it pickles as its path,
and each worker unpickles it, loading the model, once), and every task gets that copy.
"""
import argparse
import json
import os
import shutil
import sys
import tempfile
import time

import numpy as np


def partitions(path, lines_per_part):
    """[(start byte, end byte, first line number)]: one pass over the file, in bounded memory."""
    parts, start, line, count, pos = [], 0, 1, 0, 0
    with open(path, "rb") as f:
        while chunk := f.read(1 << 20):
            at = 0
            while (nl := chunk.find(b"\n", at)) >= 0:
                count += 1
                at = nl + 1
                if count == lines_per_part:
                    parts.append((start, pos + at, line))
                    start, line, count = pos + at, line + count, 0
            pos += len(chunk)
    if pos > start:  # the last lines (the file may not end with a newline)
        parts.append((start, pos, line))
    return parts


def read_lines(path, start, end, first_line):
    """The texts of bytes [start, end), by the rules of `ordo encode`: a UTF-8 BOM at the start of the
    file and a CR before each newline are dropped."""
    with open(path, "rb") as f:
        f.seek(start)
        raw = f.read(end - start)
    if start == 0 and raw.startswith(b"\xef\xbb\xbf"):
        raw = raw[3:]
    lines = raw.split(b"\n")
    if raw.endswith(b"\n"):
        lines.pop()
    texts = []
    for n, b in enumerate(lines, first_line):
        try:
            texts.append(b.removesuffix(b"\r").decode("utf-8"))
        except UnicodeDecodeError as e:
            raise ValueError(f"{path}: line {n}: invalid UTF-8 at byte {e.start}") from None
    return texts


def encode_part(model, path, part, index, out_dir, pooling, batch_size):
    """One partition: its lines encoded and written as part-NNNNN.npy; returns (index, rows)."""
    start, end, first_line = part
    texts = read_lines(path, start, end, first_line)
    import ordo
    try:
        vectors = model.encode(texts, pooling=pooling, batch_size=batch_size)
    except ordo.InputError as e:  # "texts[3]: ..." named as the file's line
        message = str(e)
        if message.startswith("texts["):
            k = int(message[6:message.index("]")])
            message = f"{path}: line {first_line + k}{message[message.index(']') + 1:]}"
        raise ordo.InputError(message) from None
    name = f"part-{index:05d}.npy"
    np.save(os.path.join(out_dir, name + ".tmp.npy"), vectors)  # whole or not at all
    os.replace(os.path.join(out_dir, name + ".tmp.npy"), os.path.join(out_dir, name))
    return index, len(vectors)


def set_threads(n):
    """Run on each worker: the engine's thread count there (a plain function, as Dask pickles it)."""
    import ordo
    ordo.set_num_threads(n)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("input", help="text file, one text per line (every worker must be able to read it)")
    p.add_argument("--out", required=True, help="directory for manifest.json and the run's parts (run-*/part-*.npy)")
    p.add_argument("--model", default=None, help="model directory (default: ordo's default model)")
    p.add_argument("--pooling", default="mean", choices=["mean", "first", "max"])
    p.add_argument("--lines", type=int, default=10000, help="lines per partition (default 10000)")
    p.add_argument("--batch-size", type=int, default=256, help="texts per forward pass (as ordo encode)")
    p.add_argument("--workers", type=int, default=2, help="LocalCluster: worker processes (default 2)")
    p.add_argument("--threads", type=int, default=1,
                   help="engine threads in each worker (default 1: one worker per core uses the cores)")
    p.add_argument("--scheduler", help="the address of a running Dask scheduler, instead of a LocalCluster")
    args = p.parse_args(argv)
    if args.lines < 1 or args.workers < 1 or args.threads < 0:
        p.error("--lines and --workers must be at least 1, --threads at least 0")

    import ordo

    path = os.path.abspath(args.input)
    model = ordo.Model(args.model)  # here first: a bad model stops the run before any cluster starts
    os.makedirs(args.out, exist_ok=True)
    t0 = time.perf_counter()
    parts = partitions(path, args.lines)
    run_dir = tempfile.mkdtemp(prefix="run-", dir=args.out)  # this run's parts; nothing earlier is touched
    mask = os.umask(0)
    os.umask(mask)
    os.chmod(run_dir, 0o777 & ~mask)  # a directory as mkdir makes it (mkdtemp's is private)
    try:
        manifest = run(args, model, path, parts, run_dir)
    except BaseException:
        shutil.rmtree(run_dir, ignore_errors=True)
        raise
    manifest_path = os.path.join(args.out, "manifest.json")
    try:
        with open(manifest_path) as f:
            earlier = {os.path.dirname(p["file"]) for p in json.load(f).get("parts", [])}
    except (OSError, ValueError, AttributeError, TypeError):
        earlier = set()
    with open(manifest_path + ".tmp", "w") as f:
        json.dump(manifest, f, indent=1)
    os.replace(manifest_path + ".tmp", manifest_path)  # the run is in place: the manifest names it
    for d in earlier:  # the parts of the run the earlier manifest named, now named by none
        if d.startswith("run-") and "/" not in d and d != os.path.basename(run_dir):
            shutil.rmtree(os.path.join(args.out, d), ignore_errors=True)
    seconds = time.perf_counter() - t0
    print(f"{manifest['rows']} lines in {len(parts)} partitions, {seconds:.2f} s, "
          f"{manifest['rows'] / seconds:.0f} lines/s -> {manifest_path}", file=sys.stderr)
    return 0


def run(args, model, path, parts, run_dir):
    """Every partition encoded into run_dir; the manifest of the run (its files named from args.out)."""
    from dask.distributed import Client, LocalCluster

    cluster = None
    if args.scheduler:
        client = Client(args.scheduler)
    else:  # one thread per worker process: each process runs one partition at a time
        cluster = LocalCluster(n_workers=args.workers, threads_per_worker=1, processes=True,
                               dashboard_address=None)
        client = Client(cluster)
    try:
        client.run(set_threads, args.threads)
        shared = client.scatter(model, broadcast=True)  # unpickled (loaded) once per worker
        futures = [client.submit(encode_part, shared, path, part, i, run_dir, args.pooling, args.batch_size,
                                 pure=False) for i, part in enumerate(parts)]
        rows = dict(client.gather(futures))
    finally:
        client.close()
        if cluster is not None:
            cluster.close()

    run_name = os.path.basename(run_dir)
    return {"input": path, "model": model.path, "pooling": args.pooling, "d": model.config["d_model"],
            "rows": sum(rows.values()),
            "parts": [{"file": f"{run_name}/part-{i:05d}.npy", "rows": rows[i], "first_line": part[2]}
                      for i, part in enumerate(parts)]}


if __name__ == "__main__":
    try:
        sys.exit(main())
    except (ValueError, OSError) as e:  # ordo.InputError is a ValueError
        print(f"error: {e}", file=sys.stderr)
        sys.exit(2)
