#!/usr/bin/env python3
"""ordo's byte-level BPE (RoBERTa's) against Hugging Face's, on a tokenizer trained here by `tokenizers` on
models/heldout's text (GPT-2's ByteLevel pre-tokenizer, RobertaProcessing, <mask> lstrip), saved by
transformers' RobertaTokenizerFast.save_pretrained beside a random-weight RobertaModel, with add_prefix_space
false (RoBERTa's) and true:
  - `ordo tokenize --model DIR --input FILE --json` on 10,000 hostile lines with special tokens' texts among
    them (make_hostile_text.py --special) gives, line by line, exactly the ids of tokenizer.json through
    `tokenizers`, of RobertaTokenizerFast.from_pretrained(DIR), and of RobertaTokenizerFast from the same
    directory without tokenizer.json (ordo then reads vocab.json and merges.txt), and of RobertaTokenizerFast
    from vocab.json and merges.txt alone (RobertaTokenizer's own special tokens, <mask> added after the vocabulary;
    add_prefix_space false, as roberta-base's files have it);
  - the offsets are `tokenizers`' (trim_offsets off), in bytes, except that a character two pieces share
    belongs to the piece with its last byte (the pieces before it get begin == end);
  - `ordo encode --pooling none` on texts in one batch equals RobertaModel's hidden states within 1e-5
    (relative, max), from both directories (models.hf_parity's machinery).
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
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from test_hf_parity import TEXTS as PARITY_TEXTS, hidden_parity, hostile_lines  # noqa: E402

TEXTS = PARITY_TEXTS[:6] + [  # hf_parity's texts without their WordPiece specials, and these
    "  two  spaces,\ttabs\nand a newline  ",
    "日本語のテキスト 😀 👍🏽 ½ x²",
    "<s>the cat</s> sat <mask> on <pad> the<unk>mat </s>",
]


def train(out, add_prefix_space, vocab_size):
    """A byte-level BPE trained on models/heldout, saved by RobertaTokenizerFast into `out`. Returns it."""
    import transformers
    from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers, processors, trainers
    root = os.path.dirname(os.path.dirname(HERE))
    files = [os.path.join(root, "models", "heldout", f) for f in ["austen-heldout.txt", "wordnet-heldout.txt"]]
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=add_prefix_space)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=["<s>", "<pad>", "</s>", "<unk>"],
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False)
    tok.train(files, trainer)
    tok.add_special_tokens([AddedToken("<mask>", lstrip=True, special=True)])  # the next id after the vocabulary
    tok.post_processor = processors.RobertaProcessing(("</s>", tok.token_to_id("</s>")), ("<s>", tok.token_to_id("<s>")),
                                                      add_prefix_space=add_prefix_space, trim_offsets=True)
    fast = transformers.RobertaTokenizerFast(tokenizer_object=tok, add_prefix_space=add_prefix_space)
    fast.save_pretrained(out)  # tokenizer.json, vocab.json, merges.txt, tokenizer_config.json, ...
    return fast


def checkpoint(out, rng, vocab_size):
    """A random-weight RobertaForMaskedLM saved into `out`. Returns the model and its hidden size."""
    import torch
    import transformers
    h, dh = rng.choice([(2, 4), (3, 5), (4, 16)])
    config = transformers.RobertaConfig(
        vocab_size=vocab_size, hidden_size=h * dh, num_attention_heads=h, num_hidden_layers=rng.randint(1, 2),
        intermediate_size=rng.choice([h * dh, 4 * h * dh]), hidden_act=rng.choice(["gelu", "gelu_new", "relu"]),
        layer_norm_eps=1e-5, max_position_embeddings=514, pad_token_id=1, type_vocab_size=1)
    model = transformers.RobertaForMaskedLM(config)
    with torch.no_grad():  # weights larger than init's 0.02, LayerNorms not the identity
        for p in model.parameters():
            p.normal_(0.0, 0.3)
    model.eval()
    model.save_pretrained(out, safe_serialization=True)
    return model, h * dh


def ordo_rows(ordo, model_dir, path):
    r = subprocess.run([ordo, "tokenize", "--model", model_dir, "--input", path, "--json"], capture_output=True)
    if r.returncode != 0:
        return None, r.stderr.decode(errors="replace").strip()[:300]
    return [json.loads(line) for line in r.stdout.decode("utf-8").split("\n") if line], ""


def compare_ids(name, texts, rows, encode):
    """Prints one line; returns 1 if any line's ids differ."""
    bad = [(t, row) for t, row in zip(texts, rows) if row["ids"] != encode(t)]
    if len(rows) != len(texts) or bad:
        print(f"FAIL ids {name}: {len(rows)} rows for {len(texts)} lines, {len(bad)} differ")
        for t, row in bad[:3]:
            print(f"  {t[:60]!r}\n    ordo      {row['ids'][:30]}\n    reference {encode(t)[:30]}")
        return 1
    print(f"ok   ids of {len(texts)} hostile lines equal {name}")
    return 0


def expected_spans(text, offsets, tokens):
    """`tokenizers`' character offsets (trim_offsets off) of the pieces between <s> and </s>, as ordo's byte
    spans: a piece whose next piece starts inside its last character gives that character up, and <mask> does
    not own the whitespace its lstrip took (tokenizers counts it in)."""
    starts = [0]
    for ch in text:
        starts.append(starts[-1] + len(ch.encode("utf-8")))
    out = []
    for k, (a, b) in enumerate(offsets):
        shares = k + 1 < len(offsets) and offsets[k + 1][0] < b and offsets[k + 1][1] > offsets[k + 1][0]
        end = b - 1 if shares else b
        out.append([starts[end] - len(b"<mask>") if tokens[k].strip() == "<mask>" else starts[min(a, end)], starts[end]])
    return out


def compare_spans(name, texts, rows, ref):
    bad = []
    for t, row in zip(texts, rows):
        e = ref.encode(t)
        want = expected_spans(t, e.offsets[1:-1], e.tokens[1:-1])
        got = row["offsets"][1:-1]
        if got != want:
            k = next((k for k, (g, w) in enumerate(zip(got, want)) if g != w), min(len(got), len(want)))
            bad.append((t, k, row["pieces"][1 + k:5 + k], got[k:k + 4], want[k:k + 4]))
    if bad:
        t, k, pieces, got, want = bad[0]
        print(f"FAIL offsets {name}: {len(bad)} lines differ; first {t[:60]!r}, from piece {k} {pieces}\n"
              f"    ordo      {got}\n    reference {want}")
        return 1
    print(f"ok   offsets of {len(texts)} hostile lines equal {name}")
    return 0


FILL = ["the cat sat on the <mask>.", "<mask> cat", "a  <mask>  b<mask>c", "<mask>"]


def fill(a, out, tok, model, setting):
    """`ordo fill --json --logits` against RobertaForMaskedLM: the ids are tok's, the masks where tok puts
    them, each mask's logits within 1e-5 (relative, max) and the same top 5; with --words, only pieces that
    start with "Ġ". Returns 1 if not."""
    import numpy as np
    import torch
    worst = 0.0
    for text in FILL:
        r = subprocess.run([a.ordo, "fill", "--model", out, "--json", "--logits", "--top", "5", text],
                           capture_output=True, text=True)
        ids = tok(text)["input_ids"]
        got = json.loads(r.stdout) if r.returncode == 0 else None
        if got is None or got["ids"] != ids:
            print(f"FAIL fill {text!r} {setting}: exit {r.returncode} {r.stderr.strip()[:200]}, "
                  f"ids {got and got['ids']}, transformers {ids}")
            return 1
        with torch.no_grad():
            want = model(input_ids=torch.tensor([ids])).logits[0].double().numpy()
        masks = [t for t, i in enumerate(ids) if i == tok.mask_token_id]
        if [m["position"] for m in got["masks"]] != masks:
            print(f"FAIL fill {text!r} {setting}: masks {[m['position'] for m in got['masks']]}, transformers {masks}")
            return 1
        for m in got["masks"]:
            ref = want[m["position"]]
            err = np.abs(np.array(m["logits"], dtype=np.float64) - ref).max() / np.abs(ref).max()
            worst = max(worst, err)
            if err > 1e-5 or [p["id"] for p in m["top"]] != list(np.argsort(-ref, kind="stable")[:5]):
                print(f"FAIL fill {text!r} {setting} at {m['position']}: relative error {err:.3g}, top "
                      f"{[p['id'] for p in m['top']]}, transformers {list(np.argsort(-ref, kind='stable')[:5])}")
                return 1
    r = subprocess.run([a.ordo, "fill", "--model", out, "--json", "--words", "--top", "20", FILL[0]],
                       capture_output=True, text=True)
    pieces = [p["piece"] for p in json.loads(r.stdout)["masks"][0]["top"]] if r.returncode == 0 else []
    if len(pieces) != 20 or not all(p.startswith("\u0120") and len(p) > 1 for p in pieces):
        print(f"FAIL fill --words {setting}: exit {r.returncode}, pieces {pieces}")
        return 1
    print(f"ok   fill on RobertaForMaskedLM {setting}: {len(FILL)} texts, worst {worst:.2e}; --words gives Ġ pieces")
    return 0


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--ordo", required=True)
    p.add_argument("--lines", type=int, default=10000)
    p.add_argument("--seed", type=int, default=20261127)
    a = p.parse_args()
    import torch
    import transformers
    from tokenizers import Tokenizer
    rng = random.Random(a.seed)
    torch.manual_seed(a.seed)
    raw = hostile_lines(a.lines)
    texts = raw.decode("utf-8").split("\n")[:-1]
    failed = 0
    for prefix in [False, True]:
        with tempfile.TemporaryDirectory() as tmp:
            out, alone, bare = os.path.join(tmp, "model"), os.path.join(tmp, "vocab-json"), os.path.join(tmp, "bare")
            os.mkdir(out)
            fast = train(out, prefix, 600 if prefix else 1500)
            model, width = checkpoint(out, rng, len(fast))
            os.mkdir(alone)
            for f in os.listdir(out):
                if f != "tokenizer.json":
                    os.symlink(os.path.join(out, f), os.path.join(alone, f))
            os.mkdir(bare)
            for f in ["vocab.json", "merges.txt", "config.json", "model.safetensors"]:
                os.symlink(os.path.join(out, f), os.path.join(bare, f))
            hostile = os.path.join(tmp, "hostile.txt")
            with open(hostile, "wb") as f:
                f.write(raw)
            setting = f"(add_prefix_space {str(prefix).lower()}, {len(fast)} pieces)"
            rows, err = ordo_rows(a.ordo, out, hostile)
            rows_alone, err_alone = ordo_rows(a.ordo, alone, hostile)
            rows_bare, err_bare = ordo_rows(a.ordo, bare, hostile)
            if rows is None or rows_alone is None or rows_bare is None:
                print(f"FAIL {setting}: ordo failed: {err or err_alone or err_bare}")
                failed += 1
                continue
            ref = Tokenizer.from_file(os.path.join(out, "tokenizer.json"))
            from_dir = transformers.RobertaTokenizerFast.from_pretrained(out)
            from_vocab = transformers.RobertaTokenizerFast.from_pretrained(alone)
            failed += compare_ids(f"tokenizers' tokenizer.json {setting}", texts, rows, lambda t: ref.encode(t).ids)
            failed += compare_ids(f"RobertaTokenizerFast's {setting}", texts, rows, lambda t: from_dir(t)["input_ids"])
            failed += compare_ids(f"RobertaTokenizerFast's from vocab.json and merges.txt {setting}", texts, rows_alone,
                                  lambda t: from_vocab(t)["input_ids"])
            from_bare = transformers.RobertaTokenizerFast.from_pretrained(bare)
            failed += compare_ids(f"RobertaTokenizerFast's from vocab.json and merges.txt alone {setting}", texts,
                                  rows_bare, lambda t: from_bare(t)["input_ids"])
            # offsets: tokenizers' with trim_offsets off (the space of "Ġthe" is the piece's)
            untrimmed = json.loads(ref.to_str())
            untrimmed["pre_tokenizer"]["trim_offsets"] = False
            untrimmed["post_processor"]["trim_offsets"] = False
            failed += compare_spans(f"tokenizers' {setting}", texts, rows, Tokenizer.from_str(json.dumps(untrimmed)))
            for d in [out, alone]:
                errors, _, _ = hidden_parity(a, d, f"RobertaModel {os.path.basename(d)} {setting}", from_dir,
                                             model.roberta, 1, TEXTS, width)
                failed += not (errors and errors.report())
            failed += fill(a, out, from_dir, model, setting)
    print("all agree" if not failed else f"{failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
