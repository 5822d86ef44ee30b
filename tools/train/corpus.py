#!/usr/bin/python3
"""The corpus of the trained models: its lines, the held-out splits, and the training sequences.

    tools/train/corpus.py [--check]     writes (or, with --check, compares) models/heldout/*.txt

Two texts: the glosses and examples of WordNet 3.0 (definitions, and short example sentences), and
Jane Austen's six novels as Debian's r-cran-janeaustenr ships them (narrative English, in the public
domain), which adds the everyday scenes that WordNet's definitions rarely describe.

The lines are exactly those tools/train/train_tokenizer.sh trains the tokenizer on: every synset line
of /usr/share/wordnet/data.{noun,verb,adj,adv} (in that order) that starts with an 8-digit offset,
cut after its first "| ", trailing spaces removed, split on "; " into the gloss and its examples,
each with one leading and one trailing double quote removed, empty pieces skipped.

The held-out split. WordNet repeats some texts (the same example under several senses), so the split
is made over distinct lines: of the distinct lines, in order of first appearance, random.Random(
HELDOUT_SEED).sample picks round(2% of them); those texts, in corpus order, are written to
models/heldout/wordnet-heldout.txt, and every copy of them is left out of training.

Austen's held-out split (models/heldout/austen-heldout.txt) is made the same way over the distinct
sentences of austen_lines, with the same seed; sentences longer than N pieces are cut at spaces into
parts of at most N pieces (word_chunks) before packing, so that no text is lost to truncation.

The long held-out texts (models/heldout/wordnet-heldout-long.txt), for measuring lengths never seen
in training (training sequences have at most N = 32 pieces): the held-out lines, in file order, are
joined with single spaces into texts of LONG_MIN..LONG_MAX pieces (2N..4N) with the default tokenizer.
A line is added to the current text; if that makes the text longer than LONG_MAX pieces, the current
text (then still shorter than LONG_MIN) is dropped and a new one starts at this line (a line alone
longer than LONG_MAX is skipped); as soon as the text has at least LONG_MIN pieces it is written.
models/heldout/wordnet-heldout-256.txt is made the same way with 6N..8N (192..256) pieces, eight times
the training length at the most.

Austen's held-out sentences in two more shapes, for measuring the position schemes on texts none of
their choices was made on (those were made on the WordNet files above): models/heldout/austen-heldout-32.txt
has them cut by word_chunks into parts of at most N pieces, as training cuts Austen's training
sentences (so every piece is read at the training length, none left out); models/heldout/austen-heldout-256.txt
has them joined into texts of 6N..8N pieces exactly as wordnet-heldout-256.txt is made.

The training sequences (see packed_sequences): the training lines, in corpus order, are tokenized
one by one and packed greedily into sequences of at most N pieces by concatenating their ids (the
same ids as the lines joined with a space and tokenized as one text: the tokenizer splits at every
space first). A line longer than N pieces is truncated to its first N pieces and forms a sequence
of its own.
"""

import argparse
import gzip
import os
import random
import re
import struct
import sys
import zlib

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
WORDNET = "/usr/share/wordnet"
AUSTEN = "/usr/lib/R/site-library/janeaustenr/data/Rdata"  # r-cran-janeaustenr: .rdx (index), .rdb (data)
AUSTEN_NOVELS = ("emma", "mansfieldpark", "northangerabbey", "persuasion", "prideprejudice", "sensesensibility")
TOKENIZER = os.path.join(ROOT, "models", "default", "tokenizer.model")
HELDOUT_DIR = os.path.join(ROOT, "models", "heldout")
HELDOUT = os.path.join(HELDOUT_DIR, "wordnet-heldout.txt")
HELDOUT_LONG = os.path.join(HELDOUT_DIR, "wordnet-heldout-long.txt")
HELDOUT_256 = os.path.join(HELDOUT_DIR, "wordnet-heldout-256.txt")
HELDOUT_AUSTEN = os.path.join(HELDOUT_DIR, "austen-heldout.txt")
HELDOUT_AUSTEN_32 = os.path.join(HELDOUT_DIR, "austen-heldout-32.txt")
HELDOUT_AUSTEN_256 = os.path.join(HELDOUT_DIR, "austen-heldout-256.txt")
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


class _RReader:
    """The part of R's serialization format (XDR, versions 2 and 3) that R data packages use: pairlists,
    lists, character, integer, logical and double vectors, symbols and references to them."""

    def __init__(self, data):
        if data[:2] != b"X\n":
            raise ValueError("not an R serialization in XDR format")
        self.b, self.p, self.refs = data, 2, []
        version = self.int()
        self.p += 8  # the writer's and the oldest reader's R versions
        if version == 3:
            self.p += 4 + self.int()  # the native encoding's name
        elif version != 2:
            raise ValueError(f"R serialization version {version}")

    def int(self):
        v = struct.unpack_from(">i", self.b, self.p)[0]
        self.p += 4
        return v

    def item(self):
        flags = self.int()
        kind, has_attr, has_tag = flags & 0xFF, flags & (1 << 9), flags & (1 << 10)
        if kind in (242, 253, 254):  # empty environment, global environment, NULL
            return None
        if kind == 255:  # a reference to an earlier symbol
            index = flags >> 8 or self.int()
            return self.refs[index - 1]
        if kind == 1:  # symbol
            name = self.item()
            self.refs.append(name)
            return name
        if kind == 2:  # pairlist: (tag, value) pairs
            out = []
            while kind == 2:
                if has_attr:
                    self.item()
                tag = self.item() if has_tag else None
                out.append((tag, self.item()))
                flags = self.int()
                kind, has_attr, has_tag = flags & 0xFF, flags & (1 << 9), flags & (1 << 10)
            if kind != 254:
                raise ValueError(f"pairlist ends in type {kind}")
            return out
        if kind == 9:  # one string
            n = self.int()
            if n < 0:
                return None
            v = self.b[self.p:self.p + n].decode("utf-8")
            self.p += n
            return v
        if kind in (10, 13, 14, 16, 19):  # logical, integer, double, character, list
            n = self.int()
            if kind in (10, 13):
                v = list(struct.unpack_from(f">{n}i", self.b, self.p))
                self.p += 4 * n
            elif kind == 14:
                v = list(struct.unpack_from(f">{n}d", self.b, self.p))
                self.p += 8 * n
            else:
                v = [self.item() for _ in range(n)]
            if has_attr:
                attrs = dict(self.item())
                if "names" in attrs:
                    v = dict(zip(attrs["names"], v))
            return v
        raise ValueError(f"R type {kind} is not read here")


def austen_novels(path=AUSTEN):
    """{novel: [line, ...]} from the lazy-load database of r-cran-janeaustenr (the Project Gutenberg texts
    of Jane Austen's six novels, one string per printed line)."""
    try:
        with open(path + ".rdx", "rb") as f:
            index = _RReader(gzip.decompress(f.read())).item()
        with open(path + ".rdb", "rb") as f:
            db = f.read()
    except OSError as e:
        raise SystemExit(f"error: {e.filename}: {e.strerror} (apt-get install --no-install-recommends "
                         "r-cran-janeaustenr)")
    out = {}
    for name in AUSTEN_NOVELS:
        offset, length = index["variables"][name]
        blob = db[offset:offset + length]
        out[name] = _RReader(zlib.decompress(blob[4:])).item()
    return out


_CHAPTER = re.compile(r"^(CHAPTER|Chapter|VOLUME|Volume)\b|^[IVXLC]+\.?$|^[A-Z][A-Z .,'()0-9-]*$")
_SENTENCE_END = re.compile(r"(?<=[.!?])([\"']?)\s+(?=[\"'(]?[A-Z])")
_TITLES = re.compile(r"\b(Mr|Mrs|Dr|St|Col)\.$")


def austen_lines(path=AUSTEN):
    """The novels' sentences (str), novel by novel in AUSTEN_NOVELS order: printed lines joined into
    paragraphs (blank lines between them), headings (chapter and volume lines, lines in capitals) left
    out, the underscores that mark italics removed, paragraphs split after . ! or ? (and a closing quote)
    followed by a space and a capital, except after Mr. Mrs. Dr. St. and Col.; sentences of fewer than
    three words skipped. Spaces inside a sentence stay as printed (the tokenizer collapses runs of them)."""
    out = []
    for lines in austen_novels(path).values():
        paragraph = []
        for line in lines + [""]:
            line = (line or "").strip()
            if line and not _CHAPTER.match(line):
                paragraph.append(line.replace("_", ""))
                continue
            if not paragraph:
                continue
            text = " ".join(paragraph)
            paragraph = []
            parts, start = [], 0
            for m in _SENTENCE_END.finditer(text):
                if _TITLES.search(text[start:m.start()]):
                    continue
                parts.append(text[start:m.start()] + m.group(1))
                start = m.end()
            parts.append(text[start:])
            out += [p for p in parts if len(p.split()) >= 3]
    return out


def split(lines):
    """(training lines, held-out lines), both in corpus order; see the module's description."""
    distinct = list(dict.fromkeys(lines))
    k = round(HELDOUT_FRACTION * len(distinct))
    held = set(random.Random(HELDOUT_SEED).sample(distinct, k))
    heldout = [s for s in distinct if s in held]
    training = [s for s in lines if s not in held]
    return training, heldout


def long_texts(heldout, sp, low=LONG_MIN, high=LONG_MAX):
    """Held-out lines packed into texts of low..high pieces; see the module's description."""
    LONG_MIN, LONG_MAX = low, high  # noqa: N806 (the module's names for the default bounds)
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


def word_chunks(lines, sp, n=N):
    """Lines of more than n pieces cut at spaces into consecutive parts of at most n pieces each (a word
    alone longer than n pieces becomes a part of its own, which packing then truncates)."""
    out = []
    for line in lines:
        words = line.split(" ")
        counts = [len(ids) for ids in sp.EncodeAsIds(words)]
        if sum(counts) <= n:
            out.append(line)
            continue
        start, size = 0, 0
        for i, c in enumerate(counts):
            if size + c > n and i > start:
                out.append(" ".join(words[start:i]))
                start, size = i, 0
            size += c
        out.append(" ".join(words[start:]))
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
    """{path: text} of the six held-out files."""
    sp = tokenizer()
    _, heldout = split(wordnet_lines())
    long = long_texts(heldout, sp)
    longer = long_texts(heldout, sp, 6 * N, 8 * N)
    _, austen = split(austen_lines())
    files = {HELDOUT: heldout, HELDOUT_LONG: long, HELDOUT_256: longer, HELDOUT_AUSTEN: austen,
             HELDOUT_AUSTEN_32: word_chunks(austen, sp), HELDOUT_AUSTEN_256: long_texts(austen, sp, 6 * N, 8 * N)}
    return {path: "".join(s + "\n" for s in lines) for path, lines in files.items()}


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
