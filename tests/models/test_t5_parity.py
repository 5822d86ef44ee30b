#!/usr/bin/env python3
"""ordo against Hugging Face transformers' T5 encoder on random weights: a T5EncoderModel, T5Model or
T5ForConditionalGeneration (ordo reads the encoder of each) saved with save_pretrained beside a
sentencepiece unigram spiece.model, run by `ordo encode --model DIR --pooling none --json` (all texts in one
padded batch) and compared with the encoder in transformers on the same ids (one padded batch too, with its
attention mask):
    max |ordo − transformers| ≤ 1e-5 · max |transformers|     for every text
and the ids with transformers' T5Tokenizer of the directory (its pieces, then </s>); and the default
pooling (the mean) of `ordo encode` and, with --python-dir, of ordo.Model(DIR).encode, within the same bar
of the mean of transformers' rows; one line on stderr for umT5, gated-silu and a config that disagrees with
its tensors; and the ids of 10,000 hostile lines (make_hostile_text.py: accents,
CJK, emoji, control and zero-width characters, long words, empty lines) equal to T5Tokenizer's on both
tokenizers. Shapes: layers 1-3,
1-8 heads, d_kv 3-64 with h·d_kv equal to d_model or not (flan-t5-small's 6 × 64 = 384 beside 512), odd
vocabulary sizes, feed_forward_proj relu, gelu, gated-gelu and gated-relu, 8 to 32 buckets to distances the
long text runs past, layer_norm_epsilon 1e-6 and 1e-3. The tokenizer is a unigram model trained here with
T5's ids (<pad> 0, </s> 1, <unk> 2), or the project's own models/default/tokenizer.model named spiece.model.
Runs with the reference environment's python (tools/dev/install-deps.sh). Exit 0 all agree, 1 not.
"""
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from test_hf_parity import (BAR, TEXTS, WORDS, command_line, hidden_parity, hostile_ids, hostile_lines,  # noqa: E402
                            refused, train_spm)

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# a long line: offsets past every max_distance below, so the log-spaced and the last buckets are used
T5_TEXTS = TEXTS + [" ".join(WORDS) + " " + " ".join(reversed(WORDS))]


def t5_spm(out_dir, rng):
    """A small sentencepiece unigram model numbered as T5's: <pad> 0, </s> 1, <unk> 2, no <s>."""
    train_spm(out_dir, rng, "spiece", T5_TEXTS, [97, 113, 120], model_type="unigram", hard_vocab_limit=False,
              pad_id=0, eos_id=1, unk_id=2, bos_id=-1)


# (class, heads, d_kv, d_model, feed_forward_proj, buckets, max_distance, spiece): every class, every
# activation, h·d_kv equal to d_model and not (flan-t5-small's 6 × 64 beside 512), the trained tokenizer and
# the project's own; the layers, d_ff, layer_norm_epsilon and the extra vocabulary drawn by the seed
SHAPES = [("T5EncoderModel", 6, 64, 512, "gated-gelu", 32, 128, "trained"),
          ("T5EncoderModel", 2, 3, 6, "relu", 8, 5, "trained"),
          ("T5EncoderModel", 3, 5, 16, "gelu", 16, 20, "default"),
          ("T5Model", 4, 16, 64, "gated-relu", 12, 9, "trained"),
          ("T5ForConditionalGeneration", 5, 7, 35, "gated-gelu", 32, 12, "trained"),
          ("T5EncoderModel", 1, 8, 8, "relu", 32, 128, "default"),
          ("T5EncoderModel", 8, 4, 32, "gated-gelu", 8, 5, "trained"),
          ("T5ForConditionalGeneration", 6, 64, 512, "relu", 32, 128, "trained"),
          ("T5Model", 3, 5, 15, "gelu", 16, 20, "trained"),
          ("T5EncoderModel", 4, 16, 48, "gated-gelu", 12, 9, "default")]
shape_index = 0
# the model beside the tokenizers of tokenizer_parity (tokenize reads the directory's model too)
SHAPES_TOKENIZER = dict(arch="T5EncoderModel", d_model=8, num_heads=2, d_kv=4, num_layers=1, d_ff=8,
                        feed_forward_proj="relu", relative_attention_num_buckets=8, relative_attention_max_distance=5,
                        layer_norm_epsilon=1e-6, extra=0)


def random_case(rng, arch):
    global shape_index
    cls, h, dkv, d, proj, nb, md, spiece = SHAPES[shape_index % len(SHAPES)]
    shape_index += 1
    return dict(arch=cls, d_model=d, num_heads=h, d_kv=dkv, num_layers=rng.randint(1, 3),
                d_ff=rng.choice([d, 4 * d, rng.randint(5, 99)]), feed_forward_proj=proj,
                relative_attention_num_buckets=nb, relative_attention_max_distance=md,
                layer_norm_epsilon=rng.choice([1e-6, 1e-3]), extra=rng.choice([0, 5, 17]), spiece=spiece)


def random_t5_checkpoint(out, case, rng):
    """A random-weight T5 checkpoint of `case` in `out`, as save_pretrained writes it, with its spiece.model.
    Returns the tokenizer and the encoder (a module whose output's last_hidden_state is the encoder's)."""
    import torch
    import transformers
    if case["spiece"] == "default":
        shutil.copy(os.path.join(ROOT, "models", "default", "tokenizer.model"), os.path.join(out, "spiece.model"))
    else:
        t5_spm(out, rng)
    tok = transformers.T5Tokenizer(os.path.join(out, "spiece.model"), legacy=True)
    sizes = {k: case[k] for k in ["d_model", "num_heads", "d_kv", "num_layers", "d_ff", "feed_forward_proj",
                                  "relative_attention_num_buckets", "relative_attention_max_distance",
                                  "layer_norm_epsilon"]}
    # T5's own initialization (each matrix scaled by its fan-in, so that the scores q·kᵀ, which nothing
    # divides by √dh, stay a few units, as a trained T5's do: weights of 0.3 everywhere, as the BERT test
    # has, give scores in the tens at d_model 512, where float32 alone, transformers' included, is 1e-4
    # from float64), then RMSNorm weights that are not all 1 and a bucket table that weighs as much as
    # the scores
    config = transformers.T5Config(vocab_size=len(tok) + case["extra"], dropout_rate=0.0, pad_token_id=0,
                                   eos_token_id=1, decoder_start_token_id=0, initializer_factor=1.0, **sizes)
    model = getattr(transformers, case["arch"])(config)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "layer_norm" in name:
                p.normal_(1.0, 0.3)
            elif "relative_attention_bias" in name:
                p.normal_(0.0, 1.0)
    model.eval()
    model.save_pretrained(out, safe_serialization=True)
    return tok, model.get_encoder() if case["arch"] != "T5EncoderModel" else model


def run_case(a, case, rng, seed):
    import numpy as np
    import torch
    torch.manual_seed(seed)
    with tempfile.TemporaryDirectory() as out:
        tok, encoder = random_t5_checkpoint(out, case, rng)
        errors, want, want_ids = hidden_parity(a, out, case, tok, encoder, 0, T5_TEXTS, case["d_model"])
        if not errors:
            return False
        # the default pooling, the mean over the text's rows, by the command and by ordo.Model(path)
        text, n = T5_TEXTS[0], len(want_ids[0])
        mean = want[0, :n].astype(np.float64).mean(axis=0)
        runs = [("ordo encode", [a.ordo, "encode", "--model", out, "--json", text], {}, "embedding")]
        if a.python_dir:
            code = "import json, sys, ordo\nprint(json.dumps(ordo.Model(sys.argv[1]).encode(sys.argv[2]).tolist()))"
            runs.append(("ordo.Model(path).encode", [sys.executable, "-c", code, out, text],
                         {**os.environ, "PYTHONPATH": a.python_dir}, None))
        for by, command, env, key in runs:
            r = subprocess.run(command, capture_output=True, text=True, env=env or None, timeout=600)
            got = json.loads(r.stdout) if r.returncode == 0 else None
            got = np.array(got[key] if key and got else got, dtype=np.float64) if got else mean + np.inf
            err = np.abs(got - mean).max() / np.abs(mean).max()
            errors.check(err, f"{by}: the mean-pooled vector is {err:.3g} from transformers' mean "
                              f"{r.stderr.strip()[-300:]}")
        return errors.report()


def tokenizer_parity(a, rng, lines):
    """ordo tokenize on `lines` hostile lines (make_hostile_text.py --special) against T5Tokenizer, on each
    tokenizer: a T5 directory with the trained unigram model, and one with the project's own. Returns the failures."""
    raw = hostile_lines(lines)
    failed = 0
    for spiece in ["trained", "default"]:
        with tempfile.TemporaryDirectory() as out:
            tok, _ = random_t5_checkpoint(out, dict(SHAPES_TOKENIZER, spiece=spiece), rng)
            failed += hostile_ids(a.ordo, out, raw, tok, f"on the {spiece} spiece.model")
    return failed


def refusals(a, rng):
    """What ordo does not run gets one line on stderr, exit 2 (docs/models.md's table): umT5, a gated-silu FFN,
    and a config that says relu beside a checkpoint with the gated FFN's tensors. Returns the failures."""
    failed = 0
    with tempfile.TemporaryDirectory() as out:
        random_t5_checkpoint(out, dict(SHAPES_TOKENIZER, feed_forward_proj="gated-gelu", spiece="default"), rng)
        path = os.path.join(out, "config.json")
        with open(path) as f:
            config = json.load(f)
        wants = [({"model_type": "umt5"}, f'error: {path}: key "model_type" must be "bert" | "roberta" | '
                                          f'"xlm-roberta" | "t5" | "mt5" | "mpnet" | '
                                          f'"distilbert", got "umt5"'),
                 ({"feed_forward_proj": "gated-silu"}, f'error: {path}: key "feed_forward_proj" must be "relu" | '
                                                       f'"gated-relu" | "gelu" | "gated-gelu" | "gelu_new" | '
                                                       f'"gated-gelu_new" | "gelu_pytorch_tanh" | '
                                                       f'"gated-gelu_pytorch_tanh" | "gelu_fast" | '
                                                       f'"gated-gelu_fast", got "gated-silu"'),
                 ({"feed_forward_proj": "relu"}, f"error: {out}/model.safetensors: missing tensor "
                                                 f"encoder.block.0.layer.1.DenseReluDense.wi.weight [8,8]")]
        for change, want in wants:
            with open(path, "w") as f:
                json.dump({**config, **change}, f)
            failed += refused(a.ordo, ["encode", "--model", out, "x"], want, str(change))
    return failed


def main():
    p = command_line(20261127, python_dir=True)
    p.add_argument("--cases", type=int, default=len(SHAPES))
    p.add_argument("--lines", type=int, default=10000, help="hostile lines for the tokenizer's ids")
    a = p.parse_args()
    rng = random.Random(a.seed)
    failed = sum(not run_case(a, random_case(rng, "t5"), rng, a.seed + n) for n in range(a.cases))
    failed += tokenizer_parity(a, rng, a.lines) + refusals(a, rng)
    print(f"{a.cases + 5 - failed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
