#!/usr/bin/env python3
"""Writes tokenizer/bpe_tables.inc: the character classes of GPT-2's pre-tokenization pattern (letters \\p{L},
numbers \\p{N}, whitespace \\s), as byte-level BPE tokenizers (RoBERTa's) apply it, read from the reference
implementation itself (the `tokenizers` package's ByteLevel pre-tokenizer, one code point at a time), so that
ordo's pieces agree with it whatever Unicode version each side was built with.

Run with the reference environment of tools/dev/install-deps.sh:
    ~/.cache/ordo/reference-venv/bin/python tools/dev/make_bpe_tables.py > tokenizer/bpe_tables.inc

How a class is read from the splits (the pattern is 's|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+|
 ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+):
  - c is a letter when "a" + c is one piece (` ?\\p{L}+` took both);
  - c is a number when "1" + c is one piece (` ?\\p{N}+`);
  - otherwise c is whitespace when "!" + c + "!" is not one piece (` ?[^\\s\\p{L}\\p{N}]+` would take all three).
The classes are also read from Python's `regex` module and the code points where the two differ counted on
stderr: with regex 2026.11.19 against tokenizers 0.19.1, 26,872, all of them characters that one side's Unicode
version assigns and the other's does not: each is unassigned in Python 3.11's unicodedata (Unicode 14.0) and
has a class in regex's newer tables. The table is tokenizers', whose pieces ordo must give.
"""
import sys

import regex
from tokenizers import pre_tokenizers
from unicode_ranges import ranges_of, write_ranges

pre = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
LETTER, NUMBER, SPACE = 1, 2, 4


def cls(c):
    ch = chr(c)
    if len(pre.pre_tokenize_str("a" + ch)) == 1:
        return LETTER
    if len(pre.pre_tokenize_str("1" + ch)) == 1:
        return NUMBER
    if len(pre.pre_tokenize_str("!" + ch + "!")) != 1:
        return SPACE
    return 0


def cls_regex(c):
    ch = chr(c)
    return (LETTER if regex.match(r"\p{L}", ch) else NUMBER if regex.match(r"\p{N}", ch)
            else SPACE if regex.match(r"\s", ch) else 0)


differ = 0


def cls_checked(c):
    """cls(c), and each code point where regex says otherwise counted (the first 20 named on stderr)."""
    global differ
    f = cls(c)
    if f != cls_regex(c):
        differ += 1
        if differ <= 20:
            sys.stderr.write("U+%04X: tokenizers %d, regex %d\n" % (c, f, cls_regex(c)))
    return f


ranges = ranges_of(cls_checked)
sys.stderr.write("%d code points where tokenizers and regex differ\n" % differ)
write_ranges(sys.stdout.write, "make_bpe_tables.py", "class}: 1 letter (\\p{L}), 2 number (\\p{N}), 4 whitespace (\\s)",
             "static const ClassRange kClassRanges[]", ranges)
