#!/usr/bin/env python3
"""ordo against Hugging Face transformers on random weights: BertModel (with a WordPiece vocab.txt),
XLMRobertaModel (with an XLM-R sentencepiece.bpe.model), MPNetModel (a WordPiece vocab.txt with MPNet's
<s> </s> <pad> <mask>, its bucket table of 32 rows or more) and DistilBertModel (a WordPiece vocab.txt saved
by DistilBertTokenizerFast, positions learned or filled with sinusoids by sinusoidal_pos_embds), saved with
save_pretrained as a user downloads them, run by `ordo encode --model DIR --pooling none --json` (all texts in one padded batch), and
compared with transformers on the same ids (one padded batch too, with its attention mask):
    max |ordo − transformers| ≤ 1e-5 · max |transformers|     for every text
and the ids with transformers' own tokenizer of the directory (BertTokenizerFast, XLMRobertaTokenizer,
MPNetTokenizerFast, DistilBertTokenizerFast). Shapes: layers 1-3, 1-12 heads, head sizes 2-64, odd vocabulary sizes, GELU (erf and
tanh) and ReLU, layer_norm_eps 1e-12 and 1e-5, token-type tables of 1 to 3 rows; MPNet's texts include one
of 182 tokens, keys past its bucket bias's max distance of 128. Then the ids of 10,000 hostile lines (with
special tokens' texts) against XLMRobertaTokenizer's, MPNetTokenizerFast's and DistilBertTokenizerFast's (the
WordPiece of BertTokenizerFast, checked on its own files all the same); and the one-line
errors of a bad MPNet or DistilBERT directory.
Runs with the reference environment's python (tools/dev/install-deps.sh). Exit 0 all agree, 1 not.
"""
import argparse
import json
import os
import random
import subprocess
import sys
import tempfile

os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["TRANSFORMERS_OFFLINE"] = "1"

BAR = 1e-5
TEXTS = [
    "the cat sat on the mat",
    "The Mat sat on the CAT!",
    "x",
    "",
    "naïve café owners don't always agree: 3 + 4 = 7?",
    "In 1859, Darwin published On the Origin of Species, arguing that populations evolve over generations "
    "through a process of natural selection; the book was read widely, by scientists and the public alike.",
    # special tokens' texts, which each tokenizer keeps whole (case and all) wherever they stand
    "the cat [SEP] sat on the [MASK]mat [sep] [CLS][PAD]",
    "<s>the cat</s> sat <mask> on <pad> the<unk>mat </s>",
]
WORDS = ("the cat sat on mat dog dogs run running ran a an of in to and is was for with as by at from this that "
         "it be are or not his her they we you on origin species natural selection public book read").split()


def bert_vocab(rng, extra):
    """A vocab.txt: the special pieces, every ASCII character alone and after ##, some words, `extra` fillers."""
    pieces = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    chars = [chr(c) for c in range(33, 127) if not chr(c).isupper()]
    pieces += chars + ["##" + c for c in chars] + WORDS + ["##" + w for w in ["s", "ing", "ed", "ion", "al"]]
    pieces += ["café", "na", "##ï", "##ive"]
    pieces += [f"filler{i}" for i in range(extra)]
    return pieces


def mpnet_vocab(rng, extra):
    """MPNet's vocab.txt as all-mpnet-base-v2 has it: <s> <pad> </s> <unk> first, BERT's pieces, <mask> last;
    each once (the tokenizer saves its vocabulary again, without a repeated piece's first line)."""
    return list(dict.fromkeys(["<s>", "<pad>", "</s>", "<unk>"] + bert_vocab(rng, extra) + ["<mask>"]))


def train_spm(out_dir, rng, prefix, texts, vocab_sizes, **options):
    """A small sentencepiece model out_dir/prefix.model, trained on random lines of WORDS and `texts`."""
    import sentencepiece as spm
    corpus = os.path.join(out_dir, "corpus.txt")
    with open(corpus, "w") as f:
        for _ in range(400):
            f.write(" ".join(rng.choice(WORDS) for _ in range(12)) + "\n")
        for t in texts:
            f.write(t + "\n")
    spm.SentencePieceTrainer.train(input=corpus, model_prefix=os.path.join(out_dir, prefix),
                                   vocab_size=rng.choice(vocab_sizes), character_coverage=1.0, minloglevel=2,
                                   **options)
    os.remove(corpus)
    os.remove(os.path.join(out_dir, prefix + ".vocab"))


def xlmr_spm(out_dir, rng):
    """A small sentencepiece BPE model numbered as XLM-R's: <unk> 0, <s> 1, </s> 2."""
    train_spm(out_dir, rng, "sentencepiece.bpe", TEXTS, [150, 151, 163], model_type="bpe", unk_id=0, bos_id=1,
              eos_id=2, pad_id=-1)


def random_case(rng, arch):
    h, dh = rng.choice([(1, 8), (2, 3), (3, 5), (4, 16), (12, 32), (6, 64), (5, 7)])
    d = h * dh
    case = dict(arch=arch, hidden_size=d, num_attention_heads=h, num_hidden_layers=rng.randint(1, 3),
                intermediate_size=rng.choice([d, 4 * d, rng.randint(5, 99)]),
                hidden_act=rng.choice(["gelu", "gelu", "gelu_new", "gelu_pytorch_tanh", "relu"]),
                layer_norm_eps=rng.choice([1e-12, 1e-5]), type_vocab_size=rng.choice([2, 1, 3]),
                extra=rng.choice([0, 3, 17]))
    if arch == "mpnet":  # the rows of its bucket table: MPNet's 32, or more (of which it reads 32)
        case["buckets"] = rng.choice([32, 32, 40])
    if arch == "distilbert":  # its table of positions filled with sinusoids at init (saved in the file either way)
        case["sinusoidal"] = rng.choice([False, True])
        del case["layer_norm_eps"], case["type_vocab_size"]  # eps fixed at 1e-12; no token types
    return case


def random_checkpoint(out, case, rng, masked_lm=False, **config):
    """Writes a random-weight Hugging Face checkpoint of `case` into `out` as save_pretrained does, with its
    tokenizer's files: BertModel, XLMRobertaModel (their ForMaskedLM with masked_lm) or MPNetModel. Returns
    the tokenizer, the model and the padding id."""
    import torch
    import transformers
    if case["arch"] in ("mpnet", "distilbert"):
        config.pop("type_vocab_size", None)  # MPNet and DistilBERT have no token types
    common = dict(hidden_size=case["hidden_size"], num_attention_heads=case["num_attention_heads"],
                  num_hidden_layers=case["num_hidden_layers"], intermediate_size=case["intermediate_size"],
                  hidden_act=case["hidden_act"], layer_norm_eps=case.get("layer_norm_eps"), max_position_embeddings=300,
                  **config)
    if case["arch"] == "bert":
        pieces = bert_vocab(rng, case["extra"])
        with open(os.path.join(out, "vocab.txt"), "w") as f:
            f.write("\n".join(pieces) + "\n")
        tok = transformers.BertTokenizerFast(os.path.join(out, "vocab.txt"))
        pad, config = 0, transformers.BertConfig(vocab_size=len(pieces), pad_token_id=0, **common)
        model = transformers.BertForMaskedLM(config) if masked_lm else transformers.BertModel(config, add_pooling_layer=False)
    elif case["arch"] == "distilbert":  # DistilBertConfig's own names; LayerNorm eps fixed at 1e-12
        pieces = list(dict.fromkeys(bert_vocab(rng, case["extra"])))  # each once, as the tokenizer saves it again
        with open(os.path.join(out, "vocab.txt"), "w") as f:
            f.write("\n".join(pieces) + "\n")
        tok = transformers.DistilBertTokenizerFast(os.path.join(out, "vocab.txt"))
        tok.save_pretrained(out)  # tokenizer.json, tokenizer_config.json beside vocab.txt, as the Hub has them
        pad, config = 0, transformers.DistilBertConfig(
            vocab_size=len(pieces), pad_token_id=0, dim=case["hidden_size"], n_heads=case["num_attention_heads"],
            n_layers=case["num_hidden_layers"], hidden_dim=case["intermediate_size"], activation=case["hidden_act"],
            max_position_embeddings=300, sinusoidal_pos_embds=case.get("sinusoidal", False), **config)
        model = (transformers.DistilBertForMaskedLM(config) if masked_lm else transformers.DistilBertModel(config))
    elif case["arch"] == "mpnet":
        pieces = mpnet_vocab(rng, case["extra"])
        with open(os.path.join(out, "vocab.txt"), "w") as f:
            f.write("\n".join(pieces) + "\n")
        tok = transformers.MPNetTokenizerFast(os.path.join(out, "vocab.txt"))
        tok.save_pretrained(out)  # tokenizer.json, tokenizer_config.json beside vocab.txt, as the Hub has them
        pad, config = 1, transformers.MPNetConfig(vocab_size=len(pieces), pad_token_id=1,
                                                   relative_attention_num_buckets=case["buckets"], **common)
        model = transformers.MPNetModel(config, add_pooling_layer=False)
    else:
        xlmr_spm(out, rng)
        tok = transformers.XLMRobertaTokenizer(os.path.join(out, "sentencepiece.bpe.model"))
        pad, config = 1, transformers.XLMRobertaConfig(vocab_size=len(tok), pad_token_id=1, **common)
        if not masked_lm:
            config.max_position_embeddings = 302
        model = transformers.XLMRobertaForMaskedLM(config) if masked_lm else transformers.XLMRobertaModel(config, add_pooling_layer=False)
    with torch.no_grad():  # weights larger than init's 0.02, LayerNorms not the identity
        for name, p in model.named_parameters():
            if not (case.get("sinusoidal") and "position_embeddings" in name):  # the sinusoids kept as init made them
                p.normal_(0.0, 0.3)
    model.eval()
    model.save_pretrained(out, safe_serialization=True)
    return tok, model, pad


class Errors:
    """A case's relative errors against transformers: the worst of them, and each one over BAR reported."""

    def __init__(self, case):
        self.case, self.ok, self.worst = case, True, 0.0

    def check(self, err, what, also=True):
        """Counts err; a failure (err over BAR, or `also` false) prints `what`."""
        self.worst = max(self.worst, err)
        if not (err <= BAR and also):
            print(f"FAIL {self.case}\n  {what}")
            self.ok = False

    def report(self):
        print(f"{'ok  ' if self.ok else 'FAIL'} {self.case} worst {self.worst:.2e}")
        return self.ok


def hidden_parity(a, out, case, tok, model, pad, texts, width):
    """`ordo encode --model out --pooling none --json` on all texts in one batch against `model` on the same
    padded batch: the ids equal to tok's, every text's rows within BAR. Returns (the case's Errors, or None
    when ordo failed or the ids differ; transformers' hidden states (B, S, width); the ids)."""
    import numpy as np
    import torch
    r = subprocess.run([a.ordo, "encode", "--model", out, "--pooling", "none", "--json", *texts],
                       capture_output=True, text=True)
    if r.returncode != 0:
        print(f"FAIL {case}: ordo exited {r.returncode}: {r.stderr.strip()}")
        return None, None, None
    rows = [json.loads(line) for line in r.stdout.split("\n") if line]
    want_ids = [tok(t)["input_ids"] for t in texts]
    ok = True
    for text, row, ids in zip(texts, rows, want_ids):
        if row["ids"] != ids:
            print(f"FAIL {case}\n  ids of {text!r}: ordo {row['ids']}, transformers {ids}")
            ok = False
    if not ok:
        return None, None, None
    S = max(len(i) for i in want_ids)
    batch = torch.tensor([i + [pad] * (S - len(i)) for i in want_ids])
    mask = torch.tensor([[1] * len(i) + [0] * (S - len(i)) for i in want_ids])
    with torch.no_grad():
        want = model(input_ids=batch, attention_mask=mask).last_hidden_state.numpy()
    errors = Errors(case)
    for k, (row, ids) in enumerate(zip(rows, want_ids)):
        got = np.array(row["hidden"], dtype=np.float64).reshape(len(ids), width)
        ref = want[k, :len(ids)].astype(np.float64)
        err = np.abs(got - ref).max() / np.abs(ref).max()
        errors.check(err, f"text {k}: max relative error {err:.3g} > {BAR}")
    return errors, want, want_ids


def run_case(a, case, rng, seed):
    import torch
    torch.manual_seed(seed)
    with tempfile.TemporaryDirectory() as out:
        tok, model, pad = random_checkpoint(out, case, rng, **({"type_vocab_size": case["type_vocab_size"]}
                                                                if "type_vocab_size" in case else {}))
        texts = TEXTS + (["the cat sat on the mat " * 30] if case["arch"] == "mpnet" else [])
        errors, _, _ = hidden_parity(a, out, case, tok, model, pad, texts, case["hidden_size"])
        return errors.report() if errors else False


def command_line(default_seed=None, python_dir=False):
    """The options every test here takes: --ordo (the built command), and --seed, --python-dir where asked."""
    p = argparse.ArgumentParser(description=sys.modules["__main__"].__doc__.splitlines()[0])
    p.add_argument("--ordo", required=True)
    if python_dir:
        p.add_argument("--python-dir", help="the directory holding the built `ordo` Python module")
    if default_seed is not None:
        p.add_argument("--seed", type=int, default=default_seed)
    return p


def ordo_binary():
    """--ordo of this process's command line, for a check run beside others (the rest left to them)."""
    p = argparse.ArgumentParser()
    p.add_argument("--ordo", required=True)
    return p.parse_known_args()[0].ordo


def run_cases(run_case, random_case, default_seed, default_cases, archs=("bert", "xlm-roberta")):
    """The command line of a random-checkpoint test: --ordo, --seed, --cases per architecture."""
    p = command_line(default_seed)
    p.add_argument("--cases", type=int, default=default_cases, help="random cases per architecture")
    a = p.parse_args()
    rng = random.Random(a.seed)
    failed = 0
    for arch in archs:
        for n in range(a.cases):
            failed += not run_case(a, random_case(rng, arch), rng, a.seed + n)
    print(f"{len(archs) * a.cases - failed} passed, {failed} failed")
    return 1 if failed else 0


def hostile_lines(lines):
    """`lines` hostile lines with special tokens' texts among them (make_hostile_text.py --special), as bytes."""
    here = os.path.dirname(os.path.abspath(__file__))
    return subprocess.run([sys.executable, os.path.join(here, "make_hostile_text.py"), str(lines), "--special"],
                          capture_output=True, check=True).stdout


def hostile_ids(ordo, out, raw, tok, name):
    """`ordo tokenize --model out` on the lines `raw` (bytes) against transformers' tokenizer `tok`, line by line.
    Prints one line; returns 1 if ordo failed or any line's ids differ."""
    texts = raw.decode("utf-8").split("\n")[:-1]
    path = os.path.join(out, "hostile.txt")
    with open(path, "wb") as f:
        f.write(raw)
    r = subprocess.run([ordo, "tokenize", "--model", out, "--input", path, "--json"], capture_output=True)
    rows = [json.loads(line) for line in r.stdout.decode("utf-8").split("\n") if line]
    bad = [(t, row["ids"]) for t, row in zip(texts, rows) if row["ids"] != tok(t)["input_ids"]]
    if r.returncode != 0 or len(rows) != len(texts) or bad:
        print(f"FAIL ids {name}: exit {r.returncode}, {len(rows)} rows, {len(bad)} differ"
              + (f"; first {bad[0][0]!r}: ordo {bad[0][1]}, transformers {tok(bad[0][0])['input_ids']}" if bad else ""))
        return 1
    print(f"ok   ids of {len(texts)} hostile lines equal {type(tok).__name__}'s {name}")
    return 0


def family_hostile_ids(arch, seed, name, lines=10000, **checkpoint):
    """The ids of `lines` hostile lines against those of the tokenizer a random `arch` directory was saved
    with: XLMRobertaTokenizer's; MPNetTokenizerFast's, as save_pretrained writes its tokenizer.json (every
    special token "normalized": found in the lowercased text, so "<MASK>" is <mask> and "[UNK]" is text);
    DistilBertTokenizerFast's (vocab.txt, tokenizer.json, tokenizer_config.json). Returns 1 if any differ."""
    ordo = ordo_binary()
    rng = random.Random(seed)
    with tempfile.TemporaryDirectory() as out:
        tok, _, _ = random_checkpoint(out, random_case(rng, arch), rng, **checkpoint)
        return hostile_ids(ordo, out, hostile_lines(lines), tok, name)


def refused(ordo, args, want, what):
    """`ordo ARGS` ends with exit 2, nothing on stdout and the one line `want` on stderr. Prints ok, or FAIL with
    `what` and what came instead; returns 0 or 1."""
    r = subprocess.run([ordo, *args], capture_output=True, text=True)
    if (r.returncode, r.stdout, r.stderr) != (2, "", want + "\n"):
        print(f"FAIL {what}: exit {r.returncode}, stdout {r.stdout[:100]!r}, stderr {r.stderr!r}, want {want!r}")
        return 1
    print(f"ok   {want[:160]}")
    return 0


def mpnet_refusals(lines=None):
    """A bad MPNet directory gets one line on stderr, exit 2 (docs/models.md's table): the bucket table
    missing, of the wrong shape, or fewer than MPNet's 32 rows in config.json. Returns 1 if any is otherwise."""
    import torch
    from safetensors.torch import load_file, save_file
    ordo = ordo_binary()
    rng = random.Random(40)
    failed = 0
    with tempfile.TemporaryDirectory() as out:
        case = dict(random_case(rng, "mpnet"), buckets=32)
        random_checkpoint(out, case, rng)
        st, cfg = os.path.join(out, "model.safetensors"), os.path.join(out, "config.json")
        tensors = load_file(st)
        with open(cfg) as f:
            config = json.load(f)
        h, table = case["num_attention_heads"], "encoder.relative_attention_bias.weight"
        wants = [({k: v for k, v in tensors.items() if k != table}, {},
                  f"error: {st}: missing tensor {table} [32,{h}]"),
                 ({**tensors, table: torch.zeros(32, h + 1)}, {},
                  f"error: {st}: tensor {table} has shape [32,{h + 1}], config wants [32,{h}]"),
                 (tensors, {"relative_attention_num_buckets": 16},
                  f'error: {cfg}: key "relative_attention_num_buckets" is 16, fewer than the 32 buckets MPNet looks up')]
        for weights, change, want in wants:
            save_file(weights, st)
            with open(cfg, "w") as f:
                json.dump({**config, **change}, f)
            failed |= refused(ordo, ["encode", "--model", out, "x"], want, "bad MPNet directory")
    return failed


def distilbert_refusals():
    """A bad DistilBERT directory gets one line on stderr, exit 2: a BertModel's weights under model_type
    "distilbert" (its layers' tensors under other names), and a config with BERT's names for the sizes.
    Returns 1 if any is otherwise."""
    import transformers
    ordo = ordo_binary()
    rng = random.Random(41)
    failed = 0
    with tempfile.TemporaryDirectory() as out:
        case = random_case(rng, "bert")
        random_checkpoint(out, case, rng)
        cfg, st = os.path.join(out, "config.json"), os.path.join(out, "model.safetensors")
        d = case["hidden_size"]
        bert = json.load(open(cfg))
        distil = transformers.DistilBertConfig(vocab_size=bert["vocab_size"], dim=d, n_heads=case["num_attention_heads"],
                                               n_layers=case["num_hidden_layers"], hidden_dim=case["intermediate_size"],
                                               max_position_embeddings=300).to_dict()
        wants = [(distil, f"error: {st}: missing tensor transformer.layer.0.attention.q_lin.weight [{d},{d}]"),
                 ({**bert, "model_type": "distilbert"}, f'error: {cfg}: missing required key "dim"')]
        for config, want in wants:
            with open(cfg, "w") as f:
                json.dump(config, f)
            failed |= refused(ordo, ["encode", "--model", out, "x"], want, "bad DistilBERT directory")
    return failed


def main():
    return (mpnet_refusals() | distilbert_refusals()
            | run_cases(run_case, random_case, 20261126, 6, archs=("bert", "xlm-roberta", "mpnet", "distilbert"))
            | family_hostile_ids("xlm-roberta", 38, "on an XLM-R directory", type_vocab_size=1)
            | family_hostile_ids("mpnet", 39, "on an MPNet directory")
            | family_hostile_ids("distilbert", 42, "on a DistilBERT directory"))


if __name__ == "__main__":
    sys.exit(main())
