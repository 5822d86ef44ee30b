#!/usr/bin/env python3
"""Writes tokenizer/wordpiece_tables.inc: what BERT's basic tokenizer does to each code point, read from
the reference implementation itself (the `tokenizers` package's BertNormalizer and BertPreTokenizer,
one code point at a time), so that ordo's WordPiece agrees with it character for character whatever
Unicode version each side was built with.

Run with the reference environment of tools/dev/install-deps.sh:
    ~/.cache/ordo/reference-venv/bin/python tools/dev/make_wordpiece_tables.py > tokenizer/wordpiece_tables.inc

Classes (bits): 1 removed by clean_text (NUL, U+FFFD, control and format characters), 2 whitespace
(becomes a space), 4 punctuation (a word of its own), 8 a CJK ideograph (spaces put around it).
Maps: lowercase (each code point on its own, as Rust's char::to_lowercase) and strip (NFD, then the
nonspacing marks removed); Hangul syllables, whose NFD is arithmetic, are left to the code.
"""
import sys

from tokenizers import normalizers, pre_tokenizers
from unicode_ranges import SURROGATES, ranges_of, write_ranges

clean = normalizers.BertNormalizer(clean_text=True, handle_chinese_chars=False, strip_accents=False, lowercase=False)
cjk = normalizers.BertNormalizer(clean_text=False, handle_chinese_chars=True, strip_accents=False, lowercase=False)
lower = normalizers.BertNormalizer(clean_text=False, handle_chinese_chars=False, strip_accents=False, lowercase=True)
strip = normalizers.BertNormalizer(clean_text=False, handle_chinese_chars=False, strip_accents=True, lowercase=False)
pre = pre_tokenizers.BertPreTokenizer()


def cls(c):
    ch = chr(c)
    flags = 0
    out = clean.normalize_str(ch)
    if out == "":
        flags |= 1
    elif out == " " and ch != " " or ch == " ":
        flags |= 2
    if not flags & 3:
        if cjk.normalize_str("x" + ch + "x") == "x " + ch + " x":
            flags |= 8
        if len(pre.pre_tokenize_str("a" + ch + "a")) == 3:
            flags |= 4
    return flags


def esc(s):
    return '"' + "".join("\\x%02x" % b for b in s.encode("utf-8")) + '"'


lowers, strips = [], []
for c in range(0x110000):
    if c in SURROGATES:
        continue
    ch = chr(c)
    lo = lower.normalize_str(ch)
    if lo != ch:
        lowers.append((c, lo))
    if not (0xAC00 <= c <= 0xD7A3):
        st = strip.normalize_str(ch)
        if st != ch:
            strips.append((c, st))

w = sys.stdout.write
write_ranges(w, "make_wordpiece_tables.py", "classes}: 1 removed, 2 whitespace, 4 punctuation, 8 CJK ideograph",
             "static const CharRange kCharRanges[]", ranges_of(cls))
w("// {code point, its lowercase (UTF-8)}\nstatic const CharMap kLowercase[] = {\n")
for c, s in lowers:
    w("    {0x%X, %s},\n" % (c, esc(s)))
w("};\n// {code point, NFD without nonspacing marks (UTF-8)}\nstatic const CharMap kStripAccents[] = {\n")
for c, s in strips:
    w("    {0x%X, %s},\n" % (c, esc(s)))
w("};\n")
