#!/usr/bin/python3
"""ordo against ONNX Runtime and PyTorch on the paper's base encoder, side by side.

The forward pass alone, on random ids; a real model end to end (texts in, tokenization included) is
tools/dev/bench_minilm.py's.

Builds one set of weights (d=512, h=8, F=2048, 6 layers, post-LN, ReLU), writes it as an ordo model
directory and as an ONNX graph, starts one long-lived timing process per peer, and asks them in turn,
shape by shape and round by round (the order rotating), for the median of REPEAT forward passes on the
same random token ids. Tokenization is excluded everywhere; every peer runs the same work:
ids -> E[id]*sqrt(d) + PE -> 6 encoder layers.

    tools/dev/bench_peers.py --ordo build/ordo --ort-modules /path/with/node_modules [--rounds 7]

ONNX Runtime comes from `npm install --ignore-scripts onnxruntime-node@1.30.0` in a scratch directory.
Thread settings, each peer at its best on a 2-core machine: ordo --threads 2; ONNX Runtime intra-op 2;
PyTorch torch.set_num_threads(1) with OMP_NUM_THREADS=1, OPENBLAS_NUM_THREADS=2.

Every peer runs as a user's machine would run it: OPENBLAS_CORETYPE (which forces OpenBLAS's
kernels) is removed from each peer's environment, whatever the calling shell exports. Each peer's
peak resident memory (VmHWM: its largest shape, the weights and, for PyTorch, the interpreter
and torch) is printed after the table.
"""
import argparse
import json
import math
import os
import shutil
import statistics
import struct
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
SHAPES = [(1, 8), (1, 32), (1, 128), (8, 128), (1, 512), (4, 512), (1, 2048), (1, 4096), (1, 8192)]
D, H, F, LAYERS = 512, 8, 2048, 6


def flops(B, S, d=D, F=F, layers=LAYERS):
    return layers * (2 * B * S * d * 3 * d + 2 * B * S * d * d + 4 * B * S * S * d + 4 * B * S * d * F)


def build_module(vocab, max_len):
    """ids (B, S) -> hidden (B, S, d), exactly what ordo computes for this config."""
    import torch

    class Encoder(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.embedding = torch.nn.Embedding(vocab, D)
            # Each layer initialised on its own: nn.TransformerEncoder would deep-copy one layer, and six
            # identical layers let an exporter store (and a cache hold) one set of weights for all.
            self.layers = torch.nn.ModuleList(
                torch.nn.TransformerEncoderLayer(D, H, F, dropout=0.0, activation="relu", batch_first=True,
                                                 norm_first=False) for _ in range(LAYERS))
            # PE(t, 2i) = sin(t / 10000^(2i/d)), PE(t, 2i+1) = cos(t / 10000^(2i/d))
            t = torch.arange(max_len, dtype=torch.float64)[:, None]
            freq = torch.pow(10000.0, -torch.arange(0, D, 2, dtype=torch.float64) / D)
            pe = torch.zeros(max_len, D, dtype=torch.float64)
            pe[:, 0::2], pe[:, 1::2] = torch.sin(t * freq), torch.cos(t * freq)
            self.register_buffer("pe", pe.float(), persistent=False)

        def forward(self, ids):
            x = self.embedding(ids) * math.sqrt(D) + self.pe[: ids.shape[1]]
            for layer in self.layers:
                x = layer(x)
            return x

    return Encoder()


def write_safetensors(path, tensors):
    """tensors: list of (name, float32 numpy array). Data offsets stay 8-byte aligned so ordo maps them."""
    header, offset = {}, 0
    for name, a in tensors:
        header[name] = {"dtype": "F32", "shape": list(a.shape), "data_offsets": [offset, offset + a.nbytes]}
        offset += a.nbytes
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-(8 + len(text)) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text)
        for _, a in tensors:
            f.write(a.astype("<f4").tobytes())


def export(out, vocab_size, max_len, seed):
    import numpy as np
    import torch

    torch.manual_seed(seed)
    m = build_module(vocab_size, max_len).eval()
    os.makedirs(out, exist_ok=True)
    state = {"embedding.weight": m.embedding.weight}
    state.update({"layers." + k: v for k, v in m.layers.state_dict().items()})
    write_safetensors(os.path.join(out, "model.safetensors"),
                      [(k, v.detach().numpy().astype(np.float32)) for k, v in state.items()])
    config = {"vocab_size": vocab_size, "d_model": D, "n_heads": H, "d_ff": F, "n_layers": LAYERS,
              "activation": "relu", "norm_first": False, "final_norm": False, "layer_norm_eps": 1e-5,
              "positional_encoding": "sinusoidal", "pe_layout": "interleaved", "pe_base": 10000,
              "scale_embedding": True, "tokenizer": "tokenizer.model"}
    with open(os.path.join(out, "config.json"), "w") as f:
        json.dump(config, f, indent=2)
    shutil.copy(os.path.join(HERE, "..", "..", "models", "default", "tokenizer.model"), out)
    torch.save(m.state_dict(), os.path.join(out, "torch_state.pt"))
    ids = torch.zeros(1, 8, dtype=torch.long)
    # Traced with gradients on, so PyTorch takes the plain (exportable) path instead of its fused
    # inference kernel; the graph is the same math in standard ONNX ops.
    torch.onnx.export(m, (ids,), os.path.join(out, "model.onnx"), input_names=["ids"], output_names=["hidden"],
                      dynamic_axes={"ids": {0: "B", 1: "S"}, "hidden": {0: "B", 1: "S"}}, opset_version=14)


def torch_worker(out, vocab_size, max_len):
    """Runs in its own process: the thread environment must be set before torch is imported."""
    import torch

    torch.set_num_threads(1)
    m = build_module(vocab_size, max_len).eval()
    m.load_state_dict(torch.load(os.path.join(out, "torch_state.pt")), strict=False)
    import time
    for line in sys.stdin:
        B, S, repeat = map(int, line.split())
        g = torch.Generator().manual_seed(20170612)
        ids = torch.randint(0, vocab_size, (B, S), generator=g)
        with torch.inference_mode():
            m(ids)
            ms = []
            for _ in range(repeat):
                start = time.perf_counter()
                m(ids)
                ms.append((time.perf_counter() - start) * 1e3)
        print(json.dumps({"batch": B, "seq": S, "ms_median": statistics.median(ms), "ms_min": min(ms)}), flush=True)


def peer_env(**extra):
    """The caller's environment without OPENBLAS_CORETYPE, plus extra: what a user's shell would give."""
    env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_CORETYPE"}
    env.update(extra)
    return env


def peak_rss_mb(pid):
    """VmHWM of a running process, in MiB (None where /proc does not tell)."""
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return None


class Peer:
    def __init__(self, name, cmd, env):
        self.name, self.cmd, self.env = name, cmd, env
        self.proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env)
        self.peak_mb = None

    def time(self, B, S, repeat):
        self.proc.stdin.write(f"{B} {S} {repeat}\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        if not line:
            sys.exit(f"error: {self.name}: timing process ended (exit {self.proc.wait()})")
        return json.loads(line)["ms_median"]

    def close(self):
        self.peak_mb = peak_rss_mb(self.proc.pid)
        self.proc.stdin.close()
        self.proc.wait()


def repeats_for(B, S):
    return max(3, min(40, int(400 / (0.05 * B * S + 1.5))))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ordo", default=os.path.join(HERE, "..", "..", "build", "ordo"), help="the ordo binary")
    ap.add_argument("--ort-modules", default=os.environ.get("ORT_NODE_MODULES", ""),
                    help="directory holding node_modules/onnxruntime-node (npm install --ignore-scripts "
                         "onnxruntime-node@1.30.0 there)")
    ap.add_argument("--out", default="/tmp/ordo-bench-base", help="scratch directory for the weights")
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--shapes", default=",".join(f"{b}x{s}" for b, s in SHAPES), help="e.g. 1x8,4x512")
    ap.add_argument("--peers", default="ordo,ort,torch",
                    help="of ordo, ort, torch, before (--before's f32), the int8 pair ordo-int8 (--compute-type int8) and ort-int8 "
                         "(tools/dev/quantize_onnx.py's graph, made on first use), and ordo-bf16")
    ap.add_argument("--before", default="",
                    help="another ordo binary (an earlier build) to time beside --ordo: the peers before (f32), "
                         "before-int8 and before-bf16 in --peers")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--fresh", action="store_true",
                    help="time each (peer, shape, round) in a new process, as a user runs a command: a slow mode "
                         "of a process's first passes cannot hide behind a long-lived benchmark process")
    ap.add_argument("--worker-torch", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    vocab_size, max_len = 8000, 8192
    if args.worker_torch:
        return torch_worker(args.out, vocab_size, max_len)

    shapes = [tuple(int(v) for v in s.split("x")) for s in args.shapes.split(",")]
    if max(S for _, S in shapes) > max_len:
        sys.exit(f"error: --shapes: sequences up to {max_len} tokens")
    if not os.path.exists(os.path.join(args.out, "model.onnx")):
        export(args.out, vocab_size, max_len, args.seed)

    peers = []
    names = args.peers.split(",")
    if "ordo" in names:
        peers.append(Peer("ordo", [args.ordo, "bench", "--model", args.out, "--threads", str(args.threads), "--stdin"],
                          peer_env()))
    if "before" in names:  # the f32 pass of the --before build, in the same rounds
        if not args.before:
            sys.exit("error: --peers: before needs --before ORDO")
        peers.append(Peer("before", [args.before, "bench", "--model", args.out, "--threads", str(args.threads),
                                     "--stdin"], peer_env()))
    for compute_type in ("bf16", "int8"):
        if f"ordo-{compute_type}" in names:
            peers.append(Peer(f"ordo-{compute_type}", [args.ordo, "bench", "--model", args.out, "--threads",
                                                       str(args.threads), "--compute-type", compute_type, "--stdin"],
                              peer_env()))
        if f"before-{compute_type}" in names:  # the same, from the --before build, in the same rounds
            if not args.before:
                sys.exit(f"error: --peers: before-{compute_type} needs --before ORDO")
            peers.append(Peer(f"before-{compute_type}", [args.before, "bench", "--model", args.out, "--threads",
                                                         str(args.threads), "--compute-type", compute_type,
                                                         "--stdin"], peer_env()))
    for name, onnx_file in (("ort", "model.onnx"), ("ort-int8", "model-int8.onnx")):
        if name not in names:
            continue
        if name == "ort-int8" and not os.path.exists(os.path.join(args.out, onnx_file)):
            subprocess.run([sys.executable, os.path.join(HERE, "quantize_onnx.py"), os.path.join(args.out, "model.onnx"),
                            os.path.join(args.out, onnx_file)], check=True)
        env = peer_env(ORDO_BENCH_VOCAB=str(vocab_size))
        peers.append(Peer(name, ["node", os.path.join(HERE, "bench_ort.mjs"), os.path.join(args.out, onnx_file),
                                 os.path.join(args.ort_modules, "node_modules"), str(args.threads)], env))
    if "torch" in names:
        env = peer_env(OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS=str(args.threads), MKL_NUM_THREADS="1")
        peers.append(Peer("torch", [sys.executable, os.path.abspath(__file__), "--worker-torch", "--out", args.out],
                          env))

    load_start = os.getloadavg()[0]
    results = {(p.name, s): [] for p in peers for s in shapes}
    peak = {p.name: 0.0 for p in peers}
    for r in range(args.rounds):
        for B, S in shapes:
            for i in range(len(peers)):
                p = peers[(i + r) % len(peers)]
                if args.fresh:  # a new process for this one measurement, as a user runs a command
                    p = Peer(p.name, p.cmd, p.env)
                results[(p.name, (B, S))].append(p.time(B, S, repeats_for(B, S)))
                if args.fresh:
                    p.close()
                    peak[p.name] = max(peak[p.name], p.peak_mb or 0.0)
        print(f"round {r + 1}/{args.rounds} done", file=sys.stderr, flush=True)
    for p in peers:
        p.close()
        if args.fresh:
            p.peak_mb = max(peak[p.name], p.peak_mb or 0.0)

    med = {k: statistics.median(v) for k, v in results.items()}
    load = os.getloadavg()
    print(f"# {args.rounds} rounds, medians{' of fresh processes' if args.fresh else ''}; threads {args.threads}; "
          f"OPENBLAS_CORETYPE unset for every peer; "
          f"load average (1 min) {load_start:.1f} at the start, {load[0]:.1f} at the end")
    cols = [p.name for p in peers]
    head = "| B x S | " + " | ".join(f"{c} ms" for c in cols)
    if "ordo" in cols:
        head += " | ordo GFLOP/s" + "".join(f" | ordo/{c}" for c in cols if c != "ordo")
        if args.fresh:
            head += " | ordo slowest/fastest process"
    print(head + " |")
    print("|---" * (head.count("|")) + "|")
    for B, S in shapes:
        row = f"| {B} x {S} | " + " | ".join(f"{med[(c, (B, S))]:.2f}" for c in cols)
        if "ordo" in cols:
            o = med[("ordo", (B, S))]
            row += f" | {flops(B, S) / o / 1e6:.0f}"
            row += "".join(f" | {o / med[(c, (B, S))]:.2f}" for c in cols if c != "ordo")
            if args.fresh:
                row += f" | {max(results[('ordo', (B, S))]) / min(results[('ordo', (B, S))]):.2f}"
        print(row + " |")
    weights = os.path.getsize(os.path.join(args.out, "model.safetensors")) / 2**20
    print(f"# peak RSS over the run (each peer's largest shape); the weights file is {weights:.1f} MiB")
    for p in peers:
        if p.peak_mb is not None:
            print(f"#   {p.name}: {p.peak_mb:.0f} MiB" + (f" (weights + {p.peak_mb - weights:.0f} MiB)" if p.name == "ordo" else ""))
    print(json.dumps({f"{c} {B}x{S}": round(med[(c, (B, S))], 3) for c in cols for B, S in shapes}), file=sys.stderr)


if __name__ == "__main__":
    main()
