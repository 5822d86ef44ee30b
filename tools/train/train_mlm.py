#!/usr/bin/python3
"""Trains one of ordo's masked language models from scratch on WordNet and Jane Austen's novels and
writes it as an ordo model directory (config.json, model.safetensors, tokenizer.model, the two
texts' licences, train.log, training.json) through tools/export_pytorch.py.

    tools/train/train_mlm.py --positions sinusoidal --out models/default
    tools/train/train_mlm.py --positions learned    --out models/position-learned
    tools/train/train_mlm.py --positions none       --out models/position-none
    tools/train/train_mlm.py --positions rope       --out models/position-rope
    tools/train/train_mlm.py --positions alibi-pairs --out models/position-alibi   (trained as "alibi", its first name)
    tools/train/train_mlm.py --positions alibi-symmetric --out models/position-alibi-symmetric
    tools/train/train_mlm.py --positions t5-buckets --out models/position-t5-buckets
    tools/train/train_mlm.py --positions alibi-pairs --heads 8 --alibi-slopes all --out models/position-alibi-all-slopes

The first seven differ only in positions: same data, packing, sizes, steps and seed. The eighth,
`--heads 8 --alibi-slopes all`, gives ALiBi's pairs a pair of heads for each of the paper's four
slopes: 8 heads of 8 dimensions where the others have 4 of 16 (the same parameters, the same d_model).

Data (tools/train/corpus.py): the WordNet glosses and examples and the sentences of Jane Austen's six
novels (r-cran-janeaustenr), each minus its held-out lines, Austen's sentences cut at spaces into parts
of at most 32 pieces, all packed into sequences of at most 32 pieces (`--corpus wordnet` leaves the
novels out). Objective, as BERT's: 15% of the pieces of a batch are chosen; of
those 80% become <mask>, 10% a random ordinary piece, 10% stay; the loss is the cross-entropy of the
true piece at the chosen positions only (the logits are computed only there). Model: tools/train/mlm.py.
"""

import argparse
import json
import math
import os
import random
import shutil
import sys
import time

# ---------------------------------------------------------------------------------------------
# Settings

D_MODEL, N_HEADS, D_FF, N_LAYERS = 64, 4, 256, 2
MAX_LEN = 32             # pieces per training sequence (corpus.N)
BATCH = 128              # sequences per step
STEPS = 10000
LR = 5e-3                # peak learning rate (AdamW)
WARMUP = 300             # steps of linear warm-up, then cosine decay to LR_FLOOR·LR
LR_FLOOR = 0.05
WEIGHT_DECAY = 0.01      # on the weight matrices (not embeddings, biases or LayerNorms)
BETAS = (0.9, 0.98)
CLIP = 1.0               # gradient norm clipping
DROPOUT = 0.0            # the model underfits at this size and step count (train ≈ held-out loss)
MASK_RATE, MASK_TOKEN, MASK_RANDOM = 0.15, 0.8, 0.1
SEED = 20170612
LOG_EVERY = 250          # steps between log lines (loss, accuracy on EVAL_LINES held-out lines, tokens/s)
EVAL_LINES = 600

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))


def parse_args(argv):
    p = argparse.ArgumentParser(description="Train an ordo masked language model on WordNet and Jane Austen.")
    p.add_argument("--positions", choices=("sinusoidal", "learned", "none", "rope", "alibi-pairs", "alibi-symmetric", "alibi",
                                                 "t5-buckets"), default="sinusoidal")
    p.add_argument("--corpus", choices=("wordnet", "wordnet+austen"), default="wordnet+austen",
                   help="training text: WordNet alone, or with Jane Austen's novels (r-cran-janeaustenr)")
    p.add_argument("--head", choices=("tied", "bert"), default="tied",
                   help="bert: BERT's dense-GELU-LayerNorm before the tied matrix, to compare heads by the "
                        "held-out lines of the log; ordo cannot run it, so nothing is exported")
    p.add_argument("--heads", type=int, default=N_HEADS, help="attention heads (d_model stays 64)")
    p.add_argument("--alibi-slopes", choices=("default", "all"), default="default",
                   help="alibi-pairs: all gives each side the paper's whole set for heads/2 heads, a pair of "
                        "heads per slope (written to config.json as alibi_slopes); default: ordo's rule")
    p.add_argument("--steps", type=int, default=STEPS)
    p.add_argument("--seed", type=int, default=SEED)
    p.add_argument("--out", required=True, help="model directory to write")
    p.add_argument("--lines", type=int, default=None, help="train on the first N training lines only (tests)")
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--log-every", type=int, default=LOG_EVERY)
    p.add_argument("--eval-lines", type=int, default=EVAL_LINES,
                   help="held-out lines for the accuracy in the log lines (the final evaluation uses all)")
    p.add_argument("--no-final-eval", action="store_true", help="skip the full evaluation at the end (tests)")
    p.add_argument("--evaluate-only", action="store_true",
                   help="train nothing: evaluate the model already in --out (trained by this script, its "
                        "train.log beside it) and write its training.json")
    return p.parse_args(argv)


args = parse_args(sys.argv[1:]) if __name__ == "__main__" else None
if args is not None:  # before numpy/torch load OpenBLAS
    os.environ["OPENBLAS_NUM_THREADS"] = str(args.threads)
    os.environ["OMP_NUM_THREADS"] = str(args.threads)

import numpy as np  # noqa: E402
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(ROOT, "tools", "pytorch"))
sys.path.insert(0, os.path.join(ROOT, "tools"))
import corpus  # noqa: E402
import evaluate  # noqa: E402
import mlm  # noqa: E402
import relative_positions  # noqa: E402
from export_pytorch import export  # noqa: E402




def mask_batch(ids, pad, mask_id, ordinary, g):
    """BERT's corruption: (inputs, chosen positions)."""
    chosen = (torch.rand(ids.shape, generator=g) < MASK_RATE) & ~pad
    if not chosen.any():
        chosen[0, 0] = True
    r = torch.rand(ids.shape, generator=g)
    x = ids.clone()
    x[chosen & (r < MASK_TOKEN)] = mask_id
    rand = chosen & (r >= MASK_TOKEN) & (r < MASK_TOKEN + MASK_RANDOM)
    x[rand] = ordinary[torch.randint(len(ordinary), (int(rand.sum()),), generator=g)]
    return x, chosen


def lr_at(step, steps):
    if step < WARMUP:
        return LR * (step + 1) / WARMUP
    t = (step - WARMUP) / max(1, steps - WARMUP)
    return LR * (LR_FLOOR + (1 - LR_FLOOR) * 0.5 * (1 + math.cos(math.pi * t)))


def main():
    a = args
    torch.set_num_threads(a.threads)
    random.seed(a.seed)
    np.random.seed(a.seed)
    torch.manual_seed(a.seed)
    g = torch.Generator().manual_seed(a.seed)
    os.makedirs(a.out, exist_ok=True)
    log_file = open(os.path.join(a.out, "train.log"), "a" if a.evaluate_only else "w")

    def log(text):
        print(text, flush=True)
        log_file.write(text + "\n")
        log_file.flush()

    command = "tools/train/train_mlm.py " + " ".join(sys.argv[1:])
    if a.evaluate_only:
        log(f"evaluating: {command}")
        trained_by, *run = recorded_run(a.out)
        return finish(a, log, trained_by, corpus.tokenizer(), *run)
    log(f"command: {command}")
    sp = corpus.tokenizer()
    mask_id = sp.PieceToId("<mask>")
    V = sp.GetPieceSize()
    ordinary = torch.tensor([i for i in range(V) if not (sp.IsControl(i) or sp.IsUnknown(i) or sp.IsByte(i))])
    training, heldout = corpus.split(corpus.wordnet_lines())
    austen_heldout = []
    if a.corpus == "wordnet+austen":
        austen_training, austen_heldout = corpus.split(corpus.austen_lines())
        training += corpus.word_chunks(austen_training, sp, MAX_LEN)
    if a.lines is not None:
        training = training[:a.lines]
    seqs = corpus.packed_sequences(training, sp, MAX_LEN)
    n_tokens = sum(len(s) for s in seqs)
    log(f"data: {len(training)} training lines -> {len(seqs)} sequences of <= {MAX_LEN} pieces, {n_tokens} "
        f"pieces; {len(heldout)} held-out lines never trained on")
    eval_ids = sp.EncodeAsIds(heldout[:a.eval_lines])

    slopes = None
    if a.alibi_slopes == "all":
        if a.positions not in ("alibi-pairs", "alibi"):
            raise SystemExit("error: --alibi-slopes all is for --positions alibi-pairs")
        slopes = relative_positions.all_slopes_in_pairs(a.heads)
    model = mlm.MaskedLM(V, D_MODEL, a.heads, D_FF, N_LAYERS, a.positions, MAX_LEN, DROPOUT, head=a.head,
                         alibi_slopes=slopes)
    n_params = sum(p.numel() for p in model.parameters())
    log(f"model: d_model {D_MODEL}, {a.heads} heads, d_ff {D_FF}, {N_LAYERS} layers, positions {a.positions}, "
        f"{n_params} parameters, {a.head} head{'' if slopes is None else f', alibi slopes {slopes}'}; batch {BATCH}, {a.steps} steps, lr {LR} (warm-up {WARMUP}, cosine to "
        f"{LR_FLOOR}x), weight decay {WEIGHT_DECAY}, dropout {DROPOUT}, seed {a.seed}, threads {a.threads}")
    def decays(n, p):  # weight matrices; not the embeddings or t5-buckets' table (a lookup table as they are)
        return p.dim() == 2 and "embedding" not in n and n != "position_bias"
    decay = [p for n, p in model.named_parameters() if decays(n, p)]
    rest = [p for n, p in model.named_parameters() if not decays(n, p)]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": WEIGHT_DECAY}, {"params": rest, "weight_decay": 0.0}],
                            lr=LR, betas=BETAS)

    order = torch.randperm(len(seqs), generator=g).tolist()
    cursor = 0
    start = last = time.time()
    loss_sum, loss_n, tokens = 0.0, 0, 0
    for step in range(a.steps):
        if cursor + BATCH > len(order):  # a new epoch, a new order
            order = torch.randperm(len(seqs), generator=g).tolist()
            cursor = 0
        batch = [seqs[i] for i in order[cursor:cursor + BATCH]]
        cursor += BATCH
        ids, pad = mlm.batch_tensors(batch)
        x, chosen = mask_batch(ids, pad, mask_id, ordinary, g)
        for group in opt.param_groups:
            group["lr"] = lr_at(step, a.steps)
        model.train()
        h = model.hidden(x, pad)
        loss = F.cross_entropy(model.logits(h[chosen]), ids[chosen])
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), CLIP)
        opt.step()
        loss_sum += loss.item()
        loss_n += 1
        tokens += int((~pad).sum())
        if (step + 1) % a.log_every == 0 or step + 1 == a.steps:
            now = time.time()
            model.eval()
            acc = evaluate.masked_accuracy(model, eval_ids, mask_id)
            log(f"step {step + 1:6d}  loss {loss_sum / loss_n:.4f}  lr {lr_at(step, a.steps):.2e}  held-out "
                f"top-1 {100 * acc['top1']:5.1f}%  top-5 {100 * acc['top5']:5.1f}%  "
                f"{tokens / (now - last):7.0f} pieces/s  {now - start:6.0f} s")
            loss_sum, loss_n, tokens = 0.0, 0, 0
            last = time.time()
    train_seconds = time.time() - start
    model.eval()
    if a.head != "tied":
        log(f"trained in {train_seconds:.0f} s; {a.head} head, not exported (ordo runs the tied head only)")
        for name, lines in (("WordNet", heldout), ("Austen", austen_heldout)):
            if lines:
                acc = evaluate.masked_accuracy(model, sp.EncodeAsIds(lines), mask_id)
                log(f"{name} held-out ({len(lines)} lines): top-1 {100 * acc['top1']:.2f}%  top-5 "
                    f"{100 * acc['top5']:.2f}%  ({acc['masked']} masked pieces)")
        return 0

    export(model.encoder, model.embedding, a.out, tokenizer=corpus.TOKENIZER,
                    positional_encoding=a.positions, pe_layout="interleaved", scale_embedding=True,
                    position_embedding=model.position_embedding, head=model.head, position_bias=model.position_bias,
                    max_distance=model.encoder.layers[0].max_distance if model.position_bias is not None else None)
    for name in ("LICENSE.wordnet",) + (("LICENSE.janeaustenr",) if a.corpus == "wordnet+austen" else ()):
        licence, copy = os.path.join(ROOT, "models", "default", name), os.path.join(a.out, name)
        if not (os.path.exists(copy) and os.path.samefile(licence, copy)):
            shutil.copyfile(licence, copy)
    log(f"trained in {train_seconds:.0f} s; wrote {a.out}")
    return finish(a, log, command, sp, train_seconds, len(training), round(loss.item(), 4))


def recorded_run(out):
    """(command, train seconds, training lines, final loss) of the run train.log in `out` records."""
    with open(os.path.join(out, "train.log")) as f:
        lines = f.read().splitlines()
    steps = [line.split() for line in lines if line.startswith("step ")]
    data = [line.split() for line in lines if line.startswith("data: ")]
    # step N  loss L  lr R  held-out top-1 A  top-5 B  P pieces/s  T s: the last one, at the end of training
    command = [line[len("command: "):] for line in lines if line.startswith("command: ")][-1]
    return command, float(steps[-1][-2]), int(data[-1][1]), float(steps[-1][3])


def finish(a, log, command, sp, train_seconds, training_lines, final_loss):
    """Evaluates the model written to a.out on all held-out lines and writes training.json."""
    with open(os.path.join(a.out, "config.json")) as f:
        config = json.load(f)
    record = {"command": command, "positions": config["positional_encoding"], "seed": a.seed, "steps": a.steps,
              "batch": BATCH, "max_len": MAX_LEN, "lr": LR, "threads": a.threads, "training_lines": training_lines,
              "train_seconds": round(train_seconds, 1), "final_loss": final_loss, "config": config}
    if not a.no_final_eval:
        t0 = time.time()
        r = evaluate.evaluate(mlm.load(a.out), sp, corpus.HELDOUT, corpus.HELDOUT_LONG)
        record["heldout"] = {k: round(v, 4) if isinstance(v, float) else v for k, v in r["heldout"].items()}
        record["order"] = r["order"]
        record["long_buckets"] = r["long"].get("buckets", [])
        log(f"held-out ({corpus.HELDOUT_FRACTION:.0%} of lines): top-1 {100 * r['heldout']['top1']:.2f}%  top-5 "
            f"{100 * r['heldout']['top5']:.2f}%  ({r['heldout']['masked']} masked pieces, "
            f"{r['heldout']['left_out']} lines too long to run)")
        for name in ("shuffle", "swap"):
            o = r["order"][name]
            log(f"order vs {name}: natural preferred on {100 * o['preferred_share']:.2f}% of {o['lines']} lines "
                f"({o['ties']} ties, largest |difference| {o['max_abs_difference']:.3g})")
        if r["long"].get("buckets"):
            log("long texts, top-1 by position: " + ", ".join(f"{b['from']}-{b['to']}: {100 * b['top1']:.1f}%"
                                                              for b in r["long"]["buckets"]))
        log(f"evaluation took {time.time() - t0:.0f} s")
    with open(os.path.join(a.out, "training.json"), "w") as f:
        json.dump(record, f, indent=2)
        f.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
