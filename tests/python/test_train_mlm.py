#!/usr/bin/python3
"""tools/train: the corpus and its held-out split, the evaluation rule, and a short training run.

Exit 77 (skipped) where PyTorch, sentencepiece's Python module, WordNet or Jane Austen's novels are not
installed."""

import json
import os
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = HERE
while not os.path.isdir(os.path.join(ROOT, "tools", "train")):  # tests/ or tests/<room>/
    ROOT = os.path.dirname(ROOT)
TRAIN = os.path.join(ROOT, "tools", "train")

try:
    import numpy as np  # noqa: F401
    import sentencepiece  # noqa: F401
    import torch
except ImportError as e:
    print(f"skipped: {e}")
    sys.exit(77)
if not os.path.exists("/usr/share/wordnet/data.noun"):
    print("skipped: WordNet is not installed (apt-get install wordnet-base)")
    sys.exit(77)
if not os.path.exists("/usr/lib/R/site-library/janeaustenr/data/Rdata.rdb"):
    print("skipped: Jane Austen's novels are not installed (apt-get install r-cran-janeaustenr)")
    sys.exit(77)

sys.path.insert(0, TRAIN)
import corpus  # noqa: E402
import evaluate  # noqa: E402
import mlm  # noqa: E402


class Corpus(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.sp = corpus.tokenizer()
        cls.lines = corpus.wordnet_lines()
        cls.training, cls.heldout = corpus.split(cls.lines)

    def test_committed_heldout_files_are_what_the_script_makes(self):
        r = subprocess.run([sys.executable, os.path.join(TRAIN, "corpus.py"), "--check"], capture_output=True,
                           text=True)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)

    def test_heldout_lines_are_never_trained_on(self):
        self.assertFalse(set(self.training) & set(self.heldout))
        distinct = len(set(self.lines))
        self.assertEqual(len(self.heldout), round(0.02 * distinct))
        # Every copy of a held-out text leaves training: the two parts account for every line.
        held = set(self.heldout)
        self.assertEqual(len(self.training), sum(1 for s in self.lines if s not in held))

    def test_long_texts_have_two_to_four_times_the_training_length(self):
        with open(corpus.HELDOUT_LONG, encoding="utf-8") as f:
            texts = f.read().splitlines()
        self.assertGreater(len(texts), 100)
        for t in texts:
            self.assertTrue(64 <= len(self.sp.EncodeAsIds(t)) <= 128, t)

    def test_packing_concatenates_ids_up_to_32_pieces(self):
        lines = self.training[:3000]
        seqs = corpus.packed_sequences(lines, self.sp)
        self.assertTrue(all(1 <= len(s) <= 32 for s in seqs))
        ids = self.sp.EncodeAsIds(lines)
        self.assertEqual(sum(len(s) for s in seqs), sum(min(len(x), 32) for x in ids))
        flat = [i for s in seqs for i in s]
        self.assertEqual(flat, [i for x in ids for i in x[:32]])
        # Joining lines with a space and tokenizing once gives the same ids as concatenating.
        for a, b in zip(lines[:200:2], lines[1:200:2]):
            self.assertEqual(self.sp.EncodeAsIds(a + " " + b), self.sp.EncodeAsIds(a) + self.sp.EncodeAsIds(b))

    def test_mask_piece_and_byte_fallback(self):
        mask = self.sp.PieceToId("<mask>")
        self.assertNotEqual(mask, self.sp.unk_id())
        self.assertNotIn(mask, self.sp.EncodeAsIds("the <mask> sat on the mat <mask>"))
        self.assertNotIn(self.sp.unk_id(), self.sp.EncodeAsIds("café 日本語 שלום مرحبا 😀"))
        self.assertNotEqual(self.sp.EncodeAsIds("日本"), self.sp.EncodeAsIds("中国"))


class Austen(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.sp = corpus.tokenizer()
        cls.novels = corpus.austen_novels()
        cls.lines = corpus.austen_lines()

    def test_the_six_novels_are_read_whole(self):
        self.assertEqual(list(self.novels), list(corpus.AUSTEN_NOVELS))
        firsts = [next(line for line in lines if line) for lines in self.novels.values()]
        self.assertEqual(firsts, ["EMMA", "MANSFIELD PARK", "NORTHANGER ABBEY", "Persuasion", "PRIDE AND PREJUDICE",
                                  "SENSE AND SENSIBILITY"])
        last = [line for line in self.novels["prideprejudice"] if line][-1]
        self.assertTrue(last.endswith("uniting them."), last)

    def test_sentences(self):
        first = ("It is a truth universally acknowledged, that a single man in possession of a good fortune, must "
                 "be in want of a wife.")
        self.assertIn(first, self.lines)
        self.assertTrue(any(s.startswith("Mr. Darcy ") for s in self.lines))  # no break after "Mr."
        self.assertFalse([s for s in self.lines if "_" in s or len(s.split()) < 3][:3])
        # Spacing stays as printed ("it:  all"): the tokenizer collapses runs of spaces.
        self.assertEqual(self.sp.EncodeAsIds("it:  all"), self.sp.EncodeAsIds("it: all"))
        self.assertFalse([s for s in self.lines if s.startswith(("CHAPTER", "Chapter"))][:3])

    def test_long_sentences_are_cut_at_spaces_into_parts_of_at_most_32_pieces(self):
        lines = self.lines[:2000]
        parts = corpus.word_chunks(lines, self.sp)
        self.assertTrue(all(len(self.sp.EncodeAsIds(p)) <= 32 for p in parts))
        self.assertGreater(len(parts), len(lines))
        self.assertEqual(" ".join(parts), " ".join(lines))

    def test_heldout_sentences_are_never_trained_on(self):
        training, heldout = corpus.split(self.lines)
        self.assertFalse(set(training) & set(heldout))
        self.assertEqual(len(heldout), round(0.02 * len(set(self.lines))))

    def test_fresh_files_hold_austens_heldout_sentences_only(self):
        # austen-heldout-32.txt and -256.txt, where section 8 is measured again: the held-out sentences
        # and nothing else, none of them a line any model trained on (WordNet's or Austen's).
        training, heldout = corpus.split(self.lines)
        wordnet_training, _ = corpus.split(corpus.wordnet_lines())
        self.assertFalse(set(heldout) & (set(training) | set(wordnet_training)))
        with open(corpus.HELDOUT_AUSTEN_32, encoding="utf-8") as f:
            parts = f.read().splitlines()
        self.assertEqual(" ".join(parts), " ".join(heldout))  # every word, in order, cut at spaces only
        self.assertTrue(all(len(self.sp.EncodeAsIds(p)) <= 32 for p in parts))
        with open(corpus.HELDOUT_AUSTEN_256, encoding="utf-8") as f:
            texts = f.read().splitlines()
        self.assertGreater(len(texts), 90)
        for t in texts:
            self.assertTrue(192 <= len(self.sp.EncodeAsIds(t)) <= 256, t)
        joined = " ".join(heldout)
        self.assertTrue(all(t in joined for t in texts))  # runs of consecutive held-out sentences


class Rule(unittest.TestCase):
    def test_splitmix64_is_ordos_generator(self):
        rng = evaluate.SplitMix64(0)  # the published first outputs, as tests/test_encoder.cpp checks for ordo
        self.assertEqual(rng.next(), 0xE220A8397B1DCDAF)
        self.assertEqual(rng.next(), 0x6E789E6AA1B965F4)

    def test_fifteen_percent_distinct_positions(self):
        for L, k in ((1, 1), (3, 1), (4, 1), (7, 1), (10, 2), (20, 3), (64, 10), (128, 19)):
            p = evaluate.mask_positions(L, evaluate.SplitMix64(5))
            self.assertEqual(len(p), k, L)
            self.assertEqual(len(set(p)), k)
            self.assertTrue(all(0 <= x < L for x in p))
            self.assertEqual(p, evaluate.mask_positions(L, evaluate.SplitMix64(5)))

    def test_reorderings_keep_the_pieces(self):
        ids = [5, 6, 7, 7, 8, 9]
        s = evaluate.shuffled(ids, evaluate.SplitMix64(1))
        self.assertNotEqual(s, ids)
        self.assertEqual(sorted(s), sorted(ids))
        w = evaluate.swapped(ids, evaluate.SplitMix64(1))
        diff = [j for j in range(len(ids)) if w[j] != ids[j]]
        self.assertEqual(len(diff), 2)
        self.assertEqual(diff[1], diff[0] + 1)
        self.assertIsNone(evaluate.shuffled([4, 4, 4, 4, 4], evaluate.SplitMix64(1)))
        self.assertIsNone(evaluate.swapped([4, 4, 4, 4, 4], evaluate.SplitMix64(1)))


class Training(unittest.TestCase):
    def train(self, out, *extra):
        r = subprocess.run([sys.executable, os.path.join(TRAIN, "train_mlm.py"), "--lines", "4000", "--log-every",
                            "20", "--eval-lines", "50", "--no-final-eval", "--out", out, *extra],
                           capture_output=True, text=True, timeout=600)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        return r

    def test_a_few_dozen_steps_lower_the_loss_and_write_a_model(self):
        with tempfile.TemporaryDirectory() as tmp:
            out = os.path.join(tmp, "m")
            self.train(out, "--steps", "60", "--positions", "learned")
            with open(os.path.join(out, "train.log")) as f:
                losses = [float(line.split()[3]) for line in f if line.startswith("step")]
            self.assertEqual(len(losses), 3)
            self.assertLess(losses[-1], losses[0] - 0.5, losses)
            self.assertEqual(sorted(os.listdir(out)), ["LICENSE.janeaustenr", "LICENSE.wordnet", "config.json",
                                                       "model.safetensors", "tokenizer.model", "train.log",
                                                       "training.json"])
            with open(os.path.join(out, "config.json")) as f:
                config = json.load(f)
            self.assertEqual((config["head"], config["final_norm"], config["positional_encoding"],
                              config["max_positions"]), ("mlm", True, "learned", 32))
            with open(os.path.join(out, "training.json")) as f:
                record = json.load(f)
            self.assertEqual((record["steps"], record["seed"], record["positions"]), (60, 20170612, "learned"))
            # The exported directory rebuilds the module exactly (every tensor, strict names).
            model = mlm.load(out)
            self.assertEqual(tuple(model.head.bias.shape), (8000,))
            ids = torch.tensor([[261, 1267, 3, 282, 261, 3]])
            with torch.no_grad():
                logits = model.logits(model.hidden(ids))
            self.assertTrue(torch.isfinite(logits).all())

    def test_same_seed_same_bytes(self):
        with tempfile.TemporaryDirectory() as tmp:
            a, b = os.path.join(tmp, "a"), os.path.join(tmp, "b")
            self.train(a, "--steps", "20")
            self.train(b, "--steps", "20")
            for name in ("model.safetensors", "config.json"):
                with open(os.path.join(a, name), "rb") as fa, open(os.path.join(b, name), "rb") as fb:
                    self.assertEqual(fa.read(), fb.read(), name)

    def test_the_bert_head_is_compared_not_exported(self):
        with tempfile.TemporaryDirectory() as tmp:
            out = os.path.join(tmp, "m")
            self.train(out, "--steps", "20", "--head", "bert")
            self.assertEqual(sorted(os.listdir(out)), ["train.log"])
            with open(os.path.join(out, "train.log")) as f:
                log = f.read()
            self.assertIn("bert head, not exported", log)
            self.assertIn("WordNet held-out (3629 lines): top-1", log)
            self.assertIn("Austen held-out (616 lines): top-1", log)
        m = mlm.MaskedLM(100, 16, 2, 32, 1, head="bert")
        h = torch.randn(3, 16)
        t = m.head.transform
        want = torch.nn.functional.layer_norm(torch.nn.functional.gelu(h @ t[0].weight.t() + t[0].bias), (16,),
                                              t[2].weight, t[2].bias) @ m.embedding.weight.t() + m.head.bias
        self.assertTrue(torch.allclose(m.logits(h), want, atol=1e-6))


if __name__ == "__main__":
    unittest.main()
