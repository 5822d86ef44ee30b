#!/usr/bin/python3
"""The WordNet corpus of the trained models: its lines, the held-out split, and the training sequences.

    tools/train/corpus.py [--check]     writes (or, with --check, compares) models/heldout/*.txt

The lines are exactly those tools/train/train_tokenizer.sh trains the tokenizer on: every synset line
of /usr/share/wordnet/data.{noun,verb,adj,adv} (in that order) that starts with an 8-digit offset,
cut after its first "| ", trailing spaces removed, split on "; " into the gloss and its examples,
each with one leading and one trailing double quote removed, empty pieces skipped.

The held-out split. WordNet repeats some texts (the same example under several senses), so the split
is made over distinct lines: of the distinct lines, in order of first appearance, random.Random(
HELDOUT_SEED).sample picks round(2% of them); those texts, in corpus order, are written to
models/heldout/wordnet-heldout.txt, and every copy of them is left out of training.

The long held-out texts (models/heldout/wordnet-heldout-long.txt), for measuring lengths never seen
in training (training sequences have at most N = 32 pieces): the held-out lines, in file order, are
joined with single spaces into texts of LONG_MIN..LONG_MAX pieces (2N..4N) with the default tokenizer.
A line is added to the current text; if that makes the text longer than LONG_MAX pieces, the current
text (then still shorter than LONG_MIN) is dropped and a new one starts at this line (a line alone
longer than LONG_MAX is skipped); as soon as the text has at least LONG_MIN pieces it is written.

The training sequences (see packed_sequences): the training lines, in corpus order, are tokenized
one by one and packed greedily into sequences of at most N pieces by concatenating their ids (the
same ids as the lines joined with a space and tokenized as one text: the tokenizer splits at every
space first). A line longer than N pieces is truncated to its first N pieces and forms a sequence
of its own.
"""

import argparse
import os
import random
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
WORDNET = "/usr/share/wordnet"
TOKENIZER = os.path.join(ROOT, "models", "default", "tokenizer.model")
HELDOUT_DIR = os.path.join(ROOT, "models", "heldout")
HELDOUT = os.path.join(HELDOUT_DIR, "wordnet-heldout.txt")
HELDOUT_LONG = os.path.join(HELDOUT_DIR, "wordnet-heldout-long.txt")
HELDOUT_SEED = 20170612
HELDOUT_FRACTION = 0.02
N = 32  # the longest training sequence, in pieces
LONG_MIN, LONG_MAX = 2 * N, 4 * N

_SYNSET = re.compile(rb"^[0-9]{8} ")
_HEAD = re.compile(rb"^[^|]*\| ")


def wordnet_lines(wordnet=WORDNET):
    """The corpus lines (str), in the order train_tokenizer.sh writes them."""
    out = []
    for pos in ("noun", "verb", "adj", "adv"):
        path = os.path.join(wordnet, f"data.{pos}")
        try:
            with open(path, "rb") as f:
                raw = f.read()
        except OSError as e:
            raise SystemExit(f"error: {path}: {e.strerror} (apt-get install wordnet-base)")
        for line in raw.split(b"\n"):
            if not _SYNSET.match(line):
                continue
            line = _HEAD.sub(b"", line, count=1).rstrip(b" ")
            for s in line.split(b"; "):
                if s.startswith(b'"'):
                    s = s[1:]
                if s.endswith(b'"'):
                    s = s[:-1]
                if s:
                    out.append(s.decode("utf-8"))
    return out


def split(lines):
    """(training lines, held-out lines), both in corpus order; see the module's description."""
    distinct = list(dict.fromkeys(lines))
    k = round(HELDOUT_FRACTION * len(distinct))
    held = set(random.Random(HELDOUT_SEED).sample(distinct, k))
    heldout = [s for s in distinct if s in held]
    training = [s for s in lines if s not in held]
    return training, heldout


def long_texts(heldout, sp):
    """Held-out lines packed into texts of LONG_MIN..LONG_MAX pieces; see the module's description."""
    out, current = [], []
    for line in heldout:
        current.append(line)
        n = len(sp.EncodeAsIds(" ".join(current)))
        if n > LONG_MAX:
            current = [line]
            n = len(sp.EncodeAsIds(line))
            if n > LONG_MAX:
                current = []
                continue
        if n >= LONG_MIN:
            out.append(" ".join(current))
            current = []
    return out


def packed_sequences(training, sp, n=N):
    """Training lines as id lists of at most n pieces; see the module's description."""
    sequences, current = [], []
    for ids in sp.EncodeAsIds(training):
        if len(ids) > n:
            if current:
                sequences.append(current)
                current = []
            sequences.append(ids[:n])
            continue
        if len(current) + len(ids) > n:
            sequences.append(current)
            current = []
        current = current + ids
    if current:
        sequences.append(current)
    return sequences


def tokenizer(path=TOKENIZER):
    import sentencepiece as spm

    return spm.SentencePieceProcessor(model_file=path)


def heldout_files():
    """{path: text} of the two held-out files."""
    _, heldout = split(wordnet_lines())
    long = long_texts(heldout, tokenizer())
    return {HELDOUT: "".join(s + "\n" for s in heldout), HELDOUT_LONG: "".join(s + "\n" for s in long)}


def main(argv=None):
    p = argparse.ArgumentParser(description="Write (or check) the held-out files of models/heldout/.")
    p.add_argument("--check", action="store_true", help="compare with the committed files instead of writing")
    a = p.parse_args(argv)
    status = 0
    for path, text in heldout_files().items():
        rel = os.path.relpath(path, ROOT)
        if a.check:
            try:
                with open(path, encoding="utf-8") as f:
                    same = f.read() == text
            except OSError:
                same = False
            print(f"{rel}: {'reproduced exactly' if same else 'DIFFERS from what this script makes'}")
            status |= 0 if same else 1
        else:
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "w", encoding="utf-8") as f:
                f.write(text)
            print(f"wrote {rel}: {text.count(chr(10))} lines", file=sys.stderr)
    return status


if __name__ == "__main__":
    sys.exit(main())
