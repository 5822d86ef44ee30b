#!/usr/bin/env python3
"""ordo's fill and score on Hugging Face masked-LM checkpoints against transformers, on random weights:
BertForMaskedLM (WordPiece vocab.txt, mask [MASK]), XLMRobertaForMaskedLM (XLM-R sentencepiece.bpe.model,
mask <mask>) and DistilBertForMaskedLM (vocab_transform, vocab_layer_norm, vocab_projector), head decoder tied
to the word embeddings or a matrix of its own, saved with save_pretrained.
    fill --json --logits: the ids are transformers' tokenizer's, and each mask's logits
        max |ordo − transformers| ≤ 1e-5 · max |transformers|
    with the same top 5 pieces, in the same order;
    score --json: each piece's log-probability with that piece masked (one masked copy per piece, as
        transformers computes it here) within 1e-5 · max |logits| of transformers'.
Shapes: layers 1-3, 1-12 heads, head sizes 3-64, odd vocabulary sizes, the head's activation from hidden_act
(BERT, DistilBERT: erf GELU, tanh GELU, ReLU; XLM-R's lm_head: always the erf GELU).
Runs with the reference environment's python (tools/dev/install-deps.sh). Exit 0 all agree, 1 not.
"""
import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from test_hf_parity import Errors, random_checkpoint, run_cases  # noqa: E402  (the encoder's test's checkpoints)

os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["TRANSFORMERS_OFFLINE"] = "1"

BAR = 1e-5
FILL = ["the cat sat on the {m}", "the {m} sat on the mat.", "{m} dogs run in the {m} of species", "{m}"]
SCORE = ["the cat sat on the mat", "natural selection is read by the public"]


def random_case(rng, arch):
    h, dh = rng.choice([(1, 8), (2, 3), (3, 5), (4, 16), (12, 32), (6, 64), (5, 7)])
    d = h * dh
    case = dict(arch=arch, hidden_size=d, num_attention_heads=h, num_hidden_layers=rng.randint(1, 3),
                intermediate_size=rng.choice([d, 4 * d, rng.randint(5, 99)]),
                hidden_act=rng.choice(["gelu", "gelu_new", "relu"]), layer_norm_eps=rng.choice([1e-12, 1e-5]),
                tie=rng.choice([True, False]), extra=rng.choice([0, 3, 17]))
    if arch == "distilbert":
        del case["layer_norm_eps"]  # DistilBERT's is 1e-12, fixed
    return case


def ordo_json(a, case, command, out, text, tok):
    """`ordo COMMAND --model OUT --json ... TEXT`'s answer, or None (said) when it fails or its ids are not
    transformers'."""
    r = subprocess.run([a.ordo, command, "--model", out, "--json", *(["--logits", "--top", "5"] if command == "fill"
                                                                     else []), text], capture_output=True, text=True)
    if r.returncode != 0:
        print(f"FAIL {case}: {command} {text!r} exited {r.returncode}: {r.stderr.strip()}")
        return None
    got = json.loads(r.stdout)
    ids = tok(text)["input_ids"]
    if got["ids"] != ids:
        print(f"FAIL {case}\n  ids of {text!r}: ordo {got['ids']}, transformers {ids}")
        return None
    return got


def run_case(a, case, rng, seed):
    import numpy as np
    import torch
    torch.manual_seed(seed)
    with tempfile.TemporaryDirectory() as out:
        tok, model, _ = random_checkpoint(out, case, rng, masked_lm=True, tie_word_embeddings=case["tie"])

        def logits(ids):
            with torch.no_grad():
                return model(input_ids=torch.tensor([ids])).logits[0].double().numpy()

        errors = Errors(case)
        for pattern in FILL:
            text = pattern.format(m=tok.mask_token)
            got = ordo_json(a, case, "fill", out, text, tok)
            if got is None:
                return False
            ids = got["ids"]
            want = logits(ids)
            masks = [t for t, i in enumerate(ids) if i == tok.mask_token_id]
            if [m["position"] for m in got["masks"]] != masks:
                print(f"FAIL {case}\n  masks of {text!r}: ordo {[m['position'] for m in got['masks']]}, "
                      f"transformers {masks}")
                return False
            for m in got["masks"]:
                ref = want[m["position"]]
                err = np.abs(np.array(m["logits"], dtype=np.float64) - ref).max() / np.abs(ref).max()
                top, want_top = [p["id"] for p in m["top"]], list(np.argsort(-ref, kind="stable")[:5])
                errors.check(err, f"fill {text!r} at {m['position']}: relative error {err:.3g}, "
                             f"top ordo {top}, transformers {want_top}", also=top == want_top)
        for text in SCORE:
            got = ordo_json(a, case, "score", out, text, tok)
            if got is None:
                return False
            ids = got["ids"]
            for t in range(1, len(ids) - 1):  # [CLS]/<s> and [SEP]/</s> are not scored
                z = logits(ids[:t] + [tok.mask_token_id] + ids[t + 1:])[t]
                lp = z[ids[t]] - (z.max() + np.log(np.exp(z - z.max()).sum()))
                err = abs(got["log_probs"][t] - lp) / np.abs(z).max()
                errors.check(err, f"score {text!r} piece {t}: ordo {got['log_probs'][t]}, transformers {lp}")
        return errors.report()


def main():
    return run_cases(run_case, random_case, 20261127, 4, archs=("bert", "xlm-roberta", "distilbert"))


if __name__ == "__main__":
    sys.exit(main())
