#!/usr/bin/python3
"""all-MiniLM-L6-v2 end to end: ordo against the peers people would pick, as a user runs them.

    tools/dev/bench_minilm.py [--rounds 3] [--line-rounds 2] [--peers all] [--workloads 1,32,10000]
    tools/dev/bench_minilm.py --model "$(tools/dev/mpnet_model_dir.sh)" --scratch ~/.cache/ordo/bench-mpnet \
        --peers ordo-cli,ordo-cli-int8,ordo,st,ort,ort-int8 --workloads 1,32,1000

Another sentence-transformers directory goes through --model (its own --scratch: the conversions are the
model's): all-mpnet-base-v2 above, whose width and heads are read from its config.json; CTranslate2's and
llama.cpp's converters are BERT's, so their peers are for all-MiniLM-L6-v2.

Every measurement is a fresh process, with OPENBLAS_CORETYPE and OPENBLAS_L2_SIZE removed from its
environment and two threads: texts in, one normalized mean-pooled 384-float vector per text out, the
tokenization, the padding or batching and the pooling included. Peers (--peers, comma-separated):

  ordo-cli, ordo-cli-int8   `ordo encode --model DIR --threads 2 --input FILE --format npy --output F`
                            (and --compute-type int8): the whole command is the measurement
  ordo, ordo-int8           ordo.Model(DIR, compute_type=...).encode(texts), ordo.set_num_threads(2)
  st                        SentenceTransformer(DIR, device="cpu").encode(texts), torch.set_num_threads(2)
  ort, ort-int8             onnxruntime.InferenceSession on the model torch.onnx.export wrote (BertModel,
                            then mean pooling and normalization as modules.json asks) after ONNX Runtime's
                            BERT fusions (onnxruntime.transformers.optimizer), intra-op 2 threads; int8:
                            onnxruntime.quantization.quantize_dynamic(per_channel=True) of that graph. Tokenized by
                            `tokenizers` (tokenizer.json), texts sorted by length, batches of 32, padded
                            to the batch's longest
  ct2, ct2-int8             ctranslate2.Encoder (intra_threads 2) on the directory its transformers
                            converter wrote (float32, and --quantization int8); the same tokenization and
                            batches; mean pooling and normalization in numpy
  llama, llama-q8           llama_cpp.Llama(GGUF, embedding=True, pooling MEAN, n_threads 2).embed(texts,
                            normalize=True) on llama.cpp's convert_hf_to_gguf.py output (f32, q8_0)

Workloads (--workloads): 1 (one short text), 32 (32 lines of mixed length), 10000 (10,000 lines). The
texts are the project's held-out lines (models/heldout: WordNet glosses and examples, Jane Austen, and
longer WordNet runs), each within the model's 256 tokens, so nothing is truncated anywhere. For 1 and 32,
each process loads the model, times its first call and then --warm more calls on the same texts; for
10,000, one call. Printed per peer: the load (imports and model, from the process's first line), the
first call, the median warm call, the whole process (spawn to exit, as a user waits for a command) and
lines/s on 10,000 lines; each the median over rounds, the peers' order rotating round by round. Then every
peer's vectors of round 1 against sentence-transformers' (cosine, over all texts of all workloads), and
the int8 ones against their own f32.

The peers live in their own virtual environment (tools/dev/install-deps.sh --bench, pinned in
tools/dev/bench-requirements.txt); the conversions are made once, on first use, under --scratch
(default ~/.cache/ordo/bench-minilm): nothing here runs in the tests or in CI.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
ALL_PEERS = ["ordo-cli", "ordo-cli-int8", "ordo", "ordo-int8", "st", "ort", "ort-int8", "ct2", "ct2-int8",
             "llama", "llama-q8"]
BATCH = 32  # texts per batch for ORT and CTranslate2 (sentence-transformers' own default)
SHORT_TEXT = "they claimed that they had been in contact with extraterrestrial beings"


# --------------------------------------------------------------------------------------------------
# Workers: each runs in its own process under the bench environment's python. Imports happen inside
# the load function, so the load time covers them.
# --------------------------------------------------------------------------------------------------

def mean_pool_normalize(hidden, lengths):
    """hidden (B, S, d), lengths (B,): mean over each text's first lengths[b] rows, then unit length."""
    import numpy as np
    mask = (np.arange(hidden.shape[1])[None, :] < np.asarray(lengths)[:, None]).astype(np.float32)
    v = (hidden * mask[:, :, None]).sum(axis=1) / mask.sum(axis=1, keepdims=True)
    return v / np.maximum(np.linalg.norm(v, axis=1, keepdims=True), 1e-12)


def length_batches(tokenizer, texts):
    """Texts tokenized in one call, sorted by length, cut into batches of BATCH: (indices, encodings)."""
    enc = tokenizer.encode_batch(texts)
    order = sorted(range(len(texts)), key=lambda i: len(enc[i].ids))
    for start in range(0, len(order), BATCH):
        idx = order[start:start + BATCH]
        yield idx, [enc[i].ids for i in idx]


def model_config(model_dir):
    with open(os.path.join(model_dir, "config.json"), encoding="utf-8") as f:
        return json.load(f)


def load_peer(peer, model_dir, scratch, threads):
    """Returns encode(texts) -> float32 array (n, d), d the model's hidden_size (all-MiniLM-L6-v2's 384)."""
    width = model_config(model_dir)["hidden_size"]
    if peer in ("ordo", "ordo-int8"):
        import ordo
        ordo.set_num_threads(threads)
        m = ordo.Model(model_dir, compute_type="int8" if peer == "ordo-int8" else "f32")
        return lambda texts: m.encode(texts)
    if peer == "st":
        import torch
        torch.set_num_threads(threads)
        from sentence_transformers import SentenceTransformer
        m = SentenceTransformer(model_dir, device="cpu")
        return lambda texts: m.encode(texts, batch_size=BATCH)
    if peer in ("ort", "ort-int8"):
        import numpy as np
        import onnxruntime as ort
        from tokenizers import Tokenizer
        tok = Tokenizer.from_file(os.path.join(model_dir, "tokenizer.json"))
        tok.no_padding()
        tok.no_truncation()
        so = ort.SessionOptions()
        so.intra_op_num_threads, so.inter_op_num_threads = threads, 1
        so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        path = os.path.join(scratch, "onnx", "model-int8.onnx" if peer == "ort-int8" else "model.onnx")
        sess = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])

        def encode(texts):
            out = np.empty((len(texts), width), dtype=np.float32)
            for idx, ids in length_batches(tok, texts):
                S = max(len(i) for i in ids)
                a = np.zeros((len(ids), S), dtype=np.int64)
                mask = np.zeros((len(ids), S), dtype=np.int64)
                for r, i in enumerate(ids):
                    a[r, :len(i)] = i
                    mask[r, :len(i)] = 1
                out[idx] = sess.run(None, {"input_ids": a, "attention_mask": mask})[0]
            return out
        return encode
    if peer in ("ct2", "ct2-int8"):
        import ctranslate2
        import numpy as np
        from tokenizers import Tokenizer
        tok = Tokenizer.from_file(os.path.join(model_dir, "tokenizer.json"))
        tok.no_padding()
        tok.no_truncation()
        int8 = peer == "ct2-int8"
        enc = ctranslate2.Encoder(os.path.join(scratch, "ct2-int8" if int8 else "ct2"), device="cpu",
                                  compute_type="int8" if int8 else "float32", intra_threads=threads,
                                  inter_threads=1)

        def encode(texts):
            out = np.empty((len(texts), width), dtype=np.float32)
            for idx, ids in length_batches(tok, texts):
                h = np.asarray(enc.forward_batch(ids).last_hidden_state)
                out[idx] = mean_pool_normalize(h, [len(i) for i in ids])
            return out
        return encode
    if peer in ("llama", "llama-q8"):
        import llama_cpp
        import numpy as np
        gguf = os.path.join(scratch, "gguf", "minilm-q8_0.gguf" if peer == "llama-q8" else "minilm-f32.gguf")
        m = llama_cpp.Llama(gguf, embedding=True, pooling_type=llama_cpp.LLAMA_POOLING_TYPE_MEAN, n_ctx=512,
                            n_batch=512, n_ubatch=512, n_threads=threads, n_threads_batch=threads, verbose=False)
        return lambda texts: np.asarray(m.embed(texts, normalize=True), dtype=np.float32)
    raise SystemExit(f"error: --peers: unknown peer '{peer}' (one of {', '.join(ALL_PEERS)})")


def worker(args):
    start = time.monotonic()
    with open(args.texts, encoding="utf-8") as f:
        texts = f.read().split("\n")[:-1]
    encode = load_peer(args.worker, args.model, args.scratch, args.threads)
    loaded = time.monotonic()
    calls = []
    for c in range(1 + args.warm):
        t = time.perf_counter()
        v = encode(texts)
        calls.append((time.perf_counter() - t) * 1e3)
        if c == 0 and args.save:
            import numpy as np
            np.save(args.save, np.asarray(v, dtype=np.float32))
    print(json.dumps({"load_ms": (loaded - start) * 1e3, "calls_ms": calls}), flush=True)


# --------------------------------------------------------------------------------------------------
# Conversions, once, under --scratch, each by the peer's own tool.
# --------------------------------------------------------------------------------------------------

ONNX_EXPORT = r"""
import inspect, sys, torch
from transformers import AutoModel
src, dst = sys.argv[1], sys.argv[2]
bert = AutoModel.from_pretrained(src).eval()
types = "token_type_ids" in inspect.signature(bert.forward).parameters  # BertModel's; MPNetModel has none

class Sentence(torch.nn.Module):
    # BertModel, then sentence-transformers' modules.json: mean pooling over the mask, then Normalize.
    def __init__(self):
        super().__init__()
        self.bert = bert
    def forward(self, input_ids, attention_mask):
        extra = {"token_type_ids": torch.zeros_like(input_ids)} if types else {}
        h = self.bert(input_ids=input_ids, attention_mask=attention_mask, **extra).last_hidden_state
        m = attention_mask.unsqueeze(-1).to(h.dtype)
        v = (h * m).sum(1) / m.sum(1).clamp(min=1e-9)
        return torch.nn.functional.normalize(v, p=2.0, dim=1)

ids = torch.tensor([[101, 1996, 4937, 2938, 2006, 1996, 13523, 102]])
with torch.no_grad():
    torch.onnx.export(Sentence().eval(), (ids, torch.ones_like(ids)), dst, input_names=["input_ids", "attention_mask"],
                      output_names=["sentence_embedding"], opset_version=14,
                      dynamic_axes={"input_ids": {0: "B", 1: "S"}, "attention_mask": {0: "B", 1: "S"},
                                    "sentence_embedding": {0: "B"}})
"""

ORT_OPTIMIZE = r"""
import sys
from onnxruntime.transformers.optimizer import optimize_model
# ONNX Runtime's BERT fusions (optimum's ORTOptimizer runs the same): EmbedLayerNormalization, Attention,
# SkipLayerNormalization, BiasGelu.
optimize_model(sys.argv[1], model_type="bert", num_heads=int(sys.argv[3]),
               hidden_size=int(sys.argv[4])).save_model_to_file(sys.argv[2])
"""

ORT_QUANTIZE = r"""
import sys
import onnx
from onnxruntime.quantization import QuantType, quantize_dynamic
# Per output channel: per tensor (the default) gave a cosine to float32 of 0.933 at worst on the 32 lines,
# per channel 0.987. The fused graph's custom ops carry no inferred types, hence DefaultTensorType.
quantize_dynamic(sys.argv[1], sys.argv[2], weight_type=QuantType.QInt8, per_channel=True,
                 extra_options={"DefaultTensorType": onnx.TensorProto.FLOAT})
"""

CT2_CONVERT = r"""
import sys
from ctranslate2.converters import TransformersConverter

class Converter(TransformersConverter):
    # This converter passes from_pretrained(dtype=...), which transformers calls torch_dtype up to 4.55;
    # the reference environment has 4.44.
    def load_model(self, model_class, path, **kwargs):
        kwargs["torch_dtype"] = kwargs.pop("dtype", None)
        return super().load_model(model_class, path, **kwargs)

Converter(sys.argv[1]).convert(sys.argv[2], quantization=None if sys.argv[3] == "none" else sys.argv[3],
                                           force=True)
"""

# llama.cpp's converter, run as its own script would run (the gguf-py package beside it comes first on the
# path: the converter needs that version, newer than PyPI's gguf). It names torch's float8 and unsigned
# dtypes in its tables, which torch 1.13 does not have; stand-ins let it load (no tensor of this model has
# those types).
GGUF_CONVERT = r"""
import os, runpy, sys
import torch
for name in ("float8_e4m3fn", "float8_e5m2", "float8_e8m0fnu", "uint16", "uint32", "uint64"):
    if not hasattr(torch, name):
        setattr(torch, name, type(name, (), {})())
sys.argv = sys.argv[1:]
sys.path.insert(0, os.path.dirname(sys.argv[0]))
runpy.run_path(sys.argv[0], run_name="__main__")
"""


def llama_src(python):
    """The llama.cpp source tree of the installed llama-cpp-python (install-deps.sh --bench keeps it)."""
    venv = os.path.dirname(os.path.dirname(python))
    src = os.path.join(venv, "src")
    for name in sorted(os.listdir(src)) if os.path.isdir(src) else []:
        tree = os.path.join(src, name, "vendor", "llama.cpp")
        if os.path.exists(os.path.join(tree, "convert_hf_to_gguf.py")):
            return tree
    sys.exit(f"error: {src}: no llama-cpp-python source with vendor/llama.cpp/convert_hf_to_gguf.py; "
             "run tools/dev/install-deps.sh --bench")


def prepare(peers, model_dir, scratch, python):
    def run(what, cmd, out, **kw):
        if os.path.exists(out):
            return
        print(f"making {out} ({what})", file=sys.stderr, flush=True)
        os.makedirs(os.path.dirname(out), exist_ok=True)
        tmp = out + ".part"
        res = subprocess.run([a if a != "{out}" else tmp for a in cmd], env=peer_env(), **kw)
        if res.returncode != 0:
            sys.exit(f"error: {what} failed (exit {res.returncode})")
        os.rename(tmp, out)

    onnx_dir = os.path.join(scratch, "onnx")
    if {"ort", "ort-int8"} & set(peers):
        run("torch.onnx.export", [python, "-c", ONNX_EXPORT, model_dir, "{out}"], os.path.join(onnx_dir, "export.onnx"))
        config = model_config(model_dir)
        run("onnxruntime.transformers.optimizer",
            [python, "-c", ORT_OPTIMIZE, os.path.join(onnx_dir, "export.onnx"), "{out}",
             str(config["num_attention_heads"]), str(config["hidden_size"])], os.path.join(onnx_dir, "model.onnx"))
    if "ort-int8" in peers:
        # quantize_dynamic names its output; the .part file keeps the .onnx suffix it expects.
        out = os.path.join(onnx_dir, "model-int8.onnx")
        if not os.path.exists(out):
            tmp = os.path.join(onnx_dir, "model-int8.part.onnx")
            print(f"making {out} (onnxruntime.quantization.quantize_dynamic)", file=sys.stderr, flush=True)
            subprocess.run([python, "-c", ORT_QUANTIZE, os.path.join(onnx_dir, "model.onnx"), tmp], env=peer_env(),
                           check=True)
            os.rename(tmp, out)
    for peer, q in (("ct2", "none"), ("ct2-int8", "int8")):
        if peer in peers:
            run("ctranslate2's transformers converter", [python, "-c", CT2_CONVERT, model_dir, "{out}", q],
                os.path.join(scratch, peer))
    for peer, outtype in (("llama", "f32"), ("llama-q8", "q8_0")):
        if peer in peers:
            tree = llama_src(python)
            out = os.path.join(scratch, "gguf", f"minilm-{outtype}.gguf")
            if not os.path.exists(out):
                print(f"making {out} (llama.cpp's convert_hf_to_gguf.py --outtype {outtype})", file=sys.stderr,
                      flush=True)
                os.makedirs(os.path.dirname(out), exist_ok=True)
                res = subprocess.run([python, "-c", GGUF_CONVERT, os.path.join(tree, "convert_hf_to_gguf.py"), model_dir,
                                      "--outtype", outtype, "--outfile", out + ".part"], env=peer_env(),
                                     stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
                if res.returncode != 0:
                    sys.exit(f"error: convert_hf_to_gguf.py --outtype {outtype} failed (exit {res.returncode}): "
                             f"{res.stderr.strip()[-2000:]}")
                os.rename(out + ".part", out)


# --------------------------------------------------------------------------------------------------
# The texts and the driver.
# --------------------------------------------------------------------------------------------------

def workload_texts(python, model_dir, scratch):
    """{1: [short], 32: [...], 10000: [...]}, each text within 256 tokens ([CLS] and [SEP] included)."""
    cache = os.path.join(scratch, "texts.json")
    if os.path.exists(cache):
        with open(cache, encoding="utf-8") as f:
            return {int(k): v for k, v in json.load(f).items()}
    lines = []
    for name in ("wordnet-heldout.txt", "austen-heldout.txt", "wordnet-heldout-long.txt"):
        with open(os.path.join(ROOT, "models", "heldout", name), encoding="utf-8") as f:
            lines.append([ln.strip() for ln in f if ln.strip()])
    # Interleaved, so any stretch of lines mixes the three kinds: 6 WordNet lines, 1 Austen, 1 long run.
    wn, au, lo = lines
    pool, i = [], 0
    while len(pool) < len(wn) + len(au) + len(lo):
        pool += wn[6 * i:6 * i + 6] + au[i:i + 1] + lo[i:i + 1]
        i += 1
    count = subprocess.run([python, "-c", "import sys, json; from tokenizers import Tokenizer; "
                            "t = Tokenizer.from_file(sys.argv[1]); t.no_truncation(); "
                            "print(json.dumps([len(e.ids) for e in t.encode_batch(json.load(sys.stdin))]))",
                            os.path.join(model_dir, "tokenizer.json")], input=json.dumps(pool), text=True,
                           capture_output=True, check=True, env=peer_env())
    pool = [t for t, n in zip(pool, json.loads(count.stdout)) if n <= 256]
    lines_10k = (pool * (10000 // len(pool) + 1))[:10000]
    texts = {1: [SHORT_TEXT], 32: pool[:32], 10000: lines_10k}
    os.makedirs(scratch, exist_ok=True)
    with open(cache, "w", encoding="utf-8") as f:
        json.dump(texts, f)
    return texts


MODULES = {"ordo": "ordo", "ordo-int8": "ordo", "st": "sentence_transformers", "ort": "onnxruntime",
           "ort-int8": "onnxruntime", "ct2": "ctranslate2", "ct2-int8": "ctranslate2", "llama": "llama_cpp",
           "llama-q8": "llama_cpp"}


def missing_packages(peers, args):
    """The peers' Python packages that the bench environment cannot import (checked before any timing)."""
    modules = sorted({MODULES[p] for p in peers if p in MODULES} | {"tokenizers"})
    code = ("import importlib.util, json, sys; "
            "print(json.dumps([m for m in sys.argv[1:] if importlib.util.find_spec(m) is None]))")
    env = peer_env(PYTHONPATH=os.path.join(os.path.abspath(args.build), "python"))
    res = subprocess.run([args.python, "-c", code] + modules, capture_output=True, text=True, env=env)
    return json.loads(res.stdout) if res.returncode == 0 else modules


def peer_env(**extra):
    """The caller's environment without OpenBLAS's CPU overrides, plus extra: what a user's shell gives."""
    env = {k: v for k, v in os.environ.items() if k not in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE")}
    env.update(extra)
    return env


def run_once(peer, args, texts_file, n_texts, save):
    """One fresh process: {"process_ms", "load_ms", "calls_ms"}."""
    if peer.startswith("ordo-cli"):
        out = save or os.path.join(args.scratch, "tmp", "ordo-cli.npy")
        cmd = [args.ordo, "encode", "--model", args.model, "--threads", str(args.threads), "--input", texts_file,
               "--format", "npy", "--output", out]
        if peer == "ordo-cli-int8":
            cmd += ["--compute-type", "int8"]
        t = time.perf_counter()
        res = subprocess.run(cmd, env=peer_env(), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        ms = (time.perf_counter() - t) * 1e3
        if res.returncode != 0:
            sys.exit(f"error: {peer}: {' '.join(cmd)}: exit {res.returncode}: {res.stderr.strip()}")
        return {"process_ms": ms, "load_ms": None, "calls_ms": [ms]}
    warm = 0 if n_texts > 32 else args.warm
    cmd = [args.python, os.path.abspath(__file__), "--worker", peer, "--texts", texts_file, "--model", args.model,
           "--scratch", args.scratch, "--threads", str(args.threads), "--warm", str(warm)]
    if save:
        cmd += ["--save", save]
    pythonpath = os.path.join(os.path.abspath(args.build), "python")
    env = peer_env(PYTHONPATH=pythonpath + os.pathsep + os.environ.get("PYTHONPATH", ""))
    t = time.perf_counter()
    res = subprocess.run(cmd, env=env, capture_output=True, text=True)
    ms = (time.perf_counter() - t) * 1e3
    if res.returncode != 0:
        sys.exit(f"error: {peer}: exit {res.returncode}: {res.stderr.strip()[-2000:]}")
    r = json.loads(res.stdout.strip().splitlines()[-1])
    r["process_ms"] = ms
    return r


def fmt(v, digits=1):
    if v is None:
        return "–"
    return f"{v:.{digits}f}" if v < 100 else f"{v:.0f}"


def report(peers, workloads, results, cos, args, load_start):
    med = statistics.median
    load = os.getloadavg()
    rounds = f"{args.rounds} rounds" + (f" ({args.line_rounds} of the many lines)"
                                        if args.line_rounds < args.rounds and any(w > 32 for w in workloads) else "")
    name = os.path.basename(os.path.normpath(args.model))  # a directory called model (a package's): its parent's
    name = os.path.basename(os.path.dirname(os.path.normpath(args.model))) if name == "model" else name
    print(f"# {name} end to end, {rounds} of fresh processes, medians; {args.threads} threads "
          f"each; OPENBLAS_CORETYPE unset for every peer; load average (1 min) {load_start:.1f} at the start, "
          f"{load[0]:.1f} at the end")
    head = "| peer | load ms"
    for w in workloads:
        if w <= 32:
            n = "1 text" if w == 1 else f"{w} lines"
            head += f" | {n}: first call ms | {n}: warm call ms | {n}: process ms"
        else:
            head += f" | {w:,} lines: lines/s | {w:,} lines: process s"
    head += " | cosine to st: min | cosine to own f32: min |"
    print(head)
    print("|---" * (head.count("|") - 1) + "|")
    summary = {}
    for p in peers:
        loads = [r["load_ms"] for w in workloads for r in results[(p, w)] if r["load_ms"] is not None]
        row = f"| {p} | {fmt(med(loads)) if loads else '–'}"
        for w in workloads:
            rs = results[(p, w)]
            proc = med([r["process_ms"] for r in rs])
            if w <= 32:
                first = med([r["calls_ms"][0] for r in rs])
                warm = [med(r["calls_ms"][1:]) for r in rs if len(r["calls_ms"]) > 1]
                warm_ms = med(warm) if warm else None
                cli = p.startswith("ordo-cli")
                row += f" | {'–' if cli else fmt(first, 2)} | {fmt(warm_ms, 2)} | {fmt(proc)}"
                summary[(p, w)] = {"first": first, "warm": warm_ms, "process": proc,
                                   "spread": (max(warm) / min(warm)) if warm else None}
            else:
                call = med([r["calls_ms"][0] for r in rs])
                rate = w / (call / 1e3)
                row += f" | {rate:.0f} | {proc / 1e3:.2f}"
                summary[(p, w)] = {"rate": rate, "process": proc}
        c = cos.get(p, {})
        row += f" | {c['st']:.6f}" if "st" in c else " | –"
        row += f" | {c['f32']:.6f}" if "f32" in c else " | –"
        print(row + " |")
    for w in workloads:  # how far apart the fresh processes were
        spread = []
        for p in peers:
            if w <= 32 and not p.startswith("ordo-cli"):
                xs = [med(r["calls_ms"][1:]) for r in results[(p, w)] if len(r["calls_ms"]) > 1]
            else:
                xs = [r["calls_ms"][0] for r in results[(p, w)]]
            if len(xs) > 1:
                spread.append(f"{p} {max(xs) / min(xs):.2f}")
        if spread:
            what = "1 text" if w == 1 else f"{w:,} lines"
            kind = "the warm call's median (ordo-cli: the command)" if w <= 32 else "the call (ordo-cli: the command)"
            print(f"# slowest / fastest process, {what}, {kind}: " + ", ".join(spread))
    goals(peers, workloads, summary)
    print(json.dumps({f"{p} {w}": v for (p, w), v in summary.items()}), file=sys.stderr)


def goals(peers, workloads, s):
    """The issue's goals as ratios of this run's medians."""
    lines = []
    for w in (1, 32):
        if w in workloads and ("ordo", w) in s and ("ort", w) in s:
            lines.append(f"ordo / ort, {'1 text' if w == 1 else '32 lines'}, warm call: "
                         f"{s[('ordo', w)]['warm'] / s[('ort', w)]['warm']:.2f} (goal ≤ 0.8); first call: "
                         f"{s[('ordo', w)]['first'] / s[('ort', w)]['first']:.2f}")
    for w in (w for w in workloads if w > 32):
        for p in ("ordo", "ordo-cli"):
            if (p, w) in s and ("st", w) in s:
                lines.append(f"{p} / st throughput, {w:,} lines: {s[(p, w)]['rate'] / s[('st', w)]['rate']:.2f} "
                             f"(goal ≥ 2){' (ordo-cli: the whole command)' if p == 'ordo-cli' else ''}")
    for other in ("ort-int8", "ct2-int8", "llama-q8"):
        for w in workloads:
            if ("ordo-int8", w) in s and (other, w) in s:
                a, b = s[("ordo-int8", w)], s[(other, w)]
                r = a["warm"] / b["warm"] if w <= 32 else b["rate"] / a["rate"]
                what = "1 text, warm call" if w == 1 else f"{w:,} lines" + (", warm call" if w <= 32 else "")
                lines.append(f"ordo-int8 / {other}, {what}: {r:.2f} (time; goal < 1)")
    for ln in lines:
        print("# " + ln)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", default="", help="the model directory (default: tools/dev/reference_model_dir.sh)")
    ap.add_argument("--build", default=os.path.join(ROOT, "build"), help="the build tree (ordo, python/ordo)")
    ap.add_argument("--ordo", default="", help="the ordo binary (default: BUILD/ordo)")
    ap.add_argument("--python", default=os.path.expanduser(os.environ.get("ORDO_BENCH_VENV", "~/.cache/ordo/bench-venv"))
                    + "/bin/python", help="the bench environment's python (tools/dev/install-deps.sh --bench)")
    ap.add_argument("--scratch", default=os.path.expanduser("~/.cache/ordo/bench-minilm"),
                    help="where the conversions (ONNX, CTranslate2, GGUF) and the texts are kept")
    ap.add_argument("--peers", default="all", help=f"all, or some of {','.join(ALL_PEERS)}")
    ap.add_argument("--workloads", default="1,32,10000",
                    help="1 (one text), 32 (lines), and N lines (the first N of the 10,000; 33 to 10000)")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--line-rounds", type=int, default=0,
                    help="rounds of the many-lines workload (default: --rounds; each takes minutes)")
    ap.add_argument("--warm", type=int, default=10, help="calls after the first, for 1 text and 32 lines")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--no-check", action="store_true", help="skip the vectors' comparison")
    ap.add_argument("--prepare", action="store_true", help="make the conversions and the texts, time nothing")
    ap.add_argument("--worker", default="", help=argparse.SUPPRESS)
    ap.add_argument("--texts", default="", help=argparse.SUPPRESS)
    ap.add_argument("--save", default="", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        return worker(args)

    if not os.path.exists(args.python):
        sys.exit(f"error: {args.python}: no bench environment; make it with tools/dev/install-deps.sh --bench")
    if not args.model:
        args.model = subprocess.run([os.path.join(HERE, "reference_model_dir.sh")], capture_output=True, text=True,
                                    check=True).stdout.strip()
    args.ordo = args.ordo or os.path.join(args.build, "ordo")
    peers = ALL_PEERS if args.peers == "all" else args.peers.split(",")
    for p in peers:
        if p not in ALL_PEERS:
            sys.exit(f"error: --peers: unknown peer '{p}' (one of {', '.join(ALL_PEERS)})")
    try:
        workloads = [int(w) for w in args.workloads.split(",")]
    except ValueError:
        sys.exit(f"error: --workloads: '{args.workloads}' is not a list of numbers")
    for w in workloads:
        if w not in (1, 32) and not 33 <= w <= 10000:
            sys.exit(f"error: --workloads: {w} is not 1, 32 or a number of lines from 33 to 10000")
    if {"ordo", "ordo-int8"} & set(peers) and not os.path.exists(os.path.join(args.build, "python", "ordo",
                                                                               "__init__.py")):
        sys.exit(f"error: {args.build}/python/ordo: no Python module; build it with "
                 f"cmake --build {args.build} --target ordo ordo_python")
    if any(p.startswith("ordo-cli") for p in peers) and not os.path.exists(args.ordo):
        sys.exit(f"error: {args.ordo}: no such binary; build it with cmake --build {args.build} --target ordo")
    if args.rounds < 1 or args.line_rounds < 0:
        sys.exit("error: --rounds: at least 1 (and --line-rounds at least 0)")
    args.line_rounds = min(args.line_rounds or args.rounds, args.rounds)
    check = not args.no_check
    if check and "st" not in peers:
        peers = peers + ["st"]  # the reference every peer is compared with

    missing = [] if args.prepare else missing_packages(peers, args)
    if missing:
        sys.exit(f"error: {args.python}: cannot import {', '.join(missing)}; install the peers with "
                 "tools/dev/install-deps.sh --bench, or leave those peers out (--peers)")
    prepare(peers, args.model, args.scratch, args.python)
    texts = workload_texts(args.python, args.model, args.scratch)
    if args.prepare:
        print(f"the conversions and texts are in {args.scratch}", file=sys.stderr)
        return
    for w in workloads:
        if w > 32:  # the first w of the 10,000 lines (a smaller count for a quick look)
            texts[w] = texts[10000][:w]
    os.makedirs(os.path.join(args.scratch, "tmp"), exist_ok=True)
    vec_dir = tempfile.mkdtemp(prefix="vectors-", dir=os.path.join(args.scratch, "tmp"))
    files = {}
    for w in workloads:
        files[w] = os.path.join(args.scratch, f"texts-{w}.txt")
        with open(files[w], "w", encoding="utf-8") as f:
            f.write("".join(t + "\n" for t in texts[w]))

    load_start = os.getloadavg()[0]
    started = time.monotonic()
    results = {(p, w): [] for p in peers for w in workloads}
    for r in range(args.rounds):
        for w in workloads:
            if w > 32 and r >= args.line_rounds:
                continue
            for i in range(len(peers)):
                p = peers[(i + r) % len(peers)]
                save = os.path.join(vec_dir, f"{p}-{w}.npy") if check and r == 0 else ""
                results[(p, w)].append(run_once(p, args, files[w], w, save))
        print(f"round {r + 1}/{args.rounds} done, {time.monotonic() - started:.0f} s", file=sys.stderr, flush=True)

    cos = {}
    if check:
        import numpy as np

        def vectors(p):
            return np.concatenate([np.load(os.path.join(vec_dir, f"{p}-{w}.npy")) for w in workloads]).astype(np.float64)

        def min_cos(a, b):
            a = a / np.linalg.norm(a, axis=1, keepdims=True)
            b = b / np.linalg.norm(b, axis=1, keepdims=True)
            return float((a * b).sum(axis=1).min())
        ref = vectors("st")
        for p in peers:
            v = vectors(p)
            cos[p] = {"st": min_cos(v, ref)}
            f32 = {"ordo-cli-int8": "ordo-cli", "ordo-int8": "ordo", "ort-int8": "ort", "ct2-int8": "ct2",
                   "llama-q8": "llama"}.get(p)
            if f32 in peers:
                cos[p]["f32"] = min_cos(v, vectors(f32))
    report(peers, workloads, results, cos, args, load_start)


if __name__ == "__main__":
    main()
