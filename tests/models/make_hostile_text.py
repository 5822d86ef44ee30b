#!/usr/bin/env python3
"""Writes N lines (default 10,000) of hostile text for the tokenizer parity tests, the same lines on
every run (a fixed seed; no input): accents precomposed and combining, CJK ideographs and Hangul, emoji
(with skin tones, ZWJ sequences and flags), control and zero-width characters, Greek final sigma,
Turkish dotted I, ligatures, right-to-left scripts, unassigned and private-use code points, Unicode
spaces, punctuation runs, numbers, 200-character words, and empty lines. No NUL, CR or LF inside a
line (they end or spoil a line of a text file), no surrogates (not UTF-8). With --special, the
special tokens' texts of BERT, XLM-R and T5 as well ("[SEP]", "</s>", "<extra_id_0>", near misses
like "[sep]" and "<extra_id_100>"), glued to words and spaces as the rest: a tokenizer keeps them whole.
    make_hostile_text.py [N] [--special] > hostile.txt
"""
import random
import sys

POOLS = {
    "ascii": [chr(c) for c in range(0x21, 0x7F)],
    "words": "the cat sat on a mat running quickly über naïve café résumé Ångström façade jalapeño "
             "coöperate déjà vu São Paulo İstanbul ΣΟΦΙΑ σοφός Москва Ελλάδα straße ǅemal ﬁnance ﬀ "
             "Hello WORLD don't can't it's U.S.A. e-mail 3.14 1,000,000 #hashtag @user http://x.y/z?q=1".split(),
    "accents": [chr(c) for c in list(range(0xC0, 0x180)) + list(range(0x1E00, 0x1F00))],
    "combining": [chr(c) for c in range(0x300, 0x370)] + ["\u20DD", "\u0488", "\u0903", "\u093F"],
    "cjk": [chr(c) for c in list(range(0x4E00, 0x4E80)) + list(range(0x3400, 0x3420)) + list(range(0xF900, 0xF910))
            + list(range(0x20000, 0x20010)) + list(range(0x3040, 0x30FF))],
    "hangul": [chr(c) for c in list(range(0xAC00, 0xAD00)) + list(range(0x1100, 0x1120)) + list(range(0x3131, 0x3140))],
    "emoji": ["😀", "👍🏽", "👨‍👩‍👧", "🇫🇷", "❤️", "🥰", "🫠", "✨", "🤖", "☃", "⚽", "🧑🏿‍🚀", "©", "™", "№"],
    "control": [chr(c) for c in list(range(1, 9)) + [0x0B, 0x0C] + list(range(0x0E, 0x20)) + list(range(0x7F, 0xA0))],
    "zero_width": ["\u200B", "\u200C", "\u200D", "\u2060", "\uFEFF", "\u00AD", "\u200E", "\u200F", "\u202E",
                   "\u2066", "\uFFFD", "\u034F", "\u180E"],
    "spaces": ["\t", "\u00A0", "\u1680", "\u2000", "\u2003", "\u2009", "\u200A", "\u2028", "\u2029", "\u202F",
               "\u205F", "\u3000", "  ", "\u0085"],
    "rtl": [chr(c) for c in list(range(0x5D0, 0x5EB)) + list(range(0x627, 0x64B)) + list(range(0x660, 0x66A))],
    "scripts": [chr(c) for c in list(range(0x391, 0x3CA)) + list(range(0x410, 0x450)) + list(range(0x900, 0x939))
                + list(range(0xE01, 0xE30)) + list(range(0x10A0, 0x10C5)) + [0x130, 0x131, 0x3C2, 0x1E9E, 0x2126,
                                                                              0x212A, 0x212B, 0x1F88, 0x1FFC]],
    "punct": list("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~") + ["…", "—", "–", "«", "»", "¿", "¡", "、", "。", "「", "」",
                                                           "‘", "’", "“", "”", "•", "§", "¶", "†", "‰", "′", "※",
                                                           "\u037E", "\u0387", "﹏", "！", "？", "（"],
    "odd": [chr(c) for c in [0x378, 0x379, 0x0E3B, 0xE000, 0xF8FF, 0xFFFF, 0x10FFFF, 0x1D165, 0x1D400, 0x1F100,
                             0xFDFA, 0x2460, 0x2163, 0x00B2, 0x00BD, 0xFF21, 0xFF41, 0x1D7D8]],
}
KINDS = list(POOLS)
SPECIAL = ["[CLS]", "[SEP]", "[MASK]", "[PAD]", "[UNK]", "[sep]", "[MASK", "[[MASK]]", "<s>", "</s>", "<pad>", "<unk>",
           "<mask>", "<MASK>", "< s>", "</s></s>", "<extra_id_0>", "<extra_id_1>", "<extra_id_99>", "<extra_id_100>",
           "<extra_id_07>", "<EXTRA_ID_1>"]


def token(rng, kinds=KINDS):
    kind = rng.choice(kinds)
    n = rng.choice([1, 1, 1, 2, 3, 5])
    s = "".join(rng.choice(POOLS[kind]) for _ in range(n))
    if rng.random() < 0.15:  # glue a mark, a zero-width character or an accent to a word
        s = rng.choice(POOLS["words"]) + rng.choice(POOLS["combining"] + POOLS["zero_width"]) + s
    return s


def line(rng, kinds=KINDS):
    r = rng.random()
    if r < 0.03:
        return ""
    if r < 0.06:  # a word of 200 characters (past WordPiece's 100), sometimes with a space in it
        w = "".join(rng.choice(POOLS["ascii"][32:58] + POOLS["accents"]) for _ in range(200))
        return w if rng.random() < 0.5 else w[:120] + " " + w[120:]
    if r < 0.09:
        return " ".join(rng.choice(POOLS["words"]) for _ in range(rng.randint(1, 12)))
    parts = []
    for _ in range(rng.randint(1, 20)):
        parts.append(token(rng, kinds))
        parts.append(rng.choice([" ", " ", " ", "", rng.choice(POOLS["spaces"])]))
    return "".join(parts)


def main():
    args = [a for a in sys.argv[1:] if a != "--special"]
    n = int(args[0]) if args else 10000
    kinds = KINDS + ["special"] * 3 if "--special" in sys.argv[1:] else KINDS  # the default lines stay as they were
    POOLS["special"] = SPECIAL
    rng = random.Random(38)
    out = sys.stdout.buffer
    for _ in range(n):
        out.write(line(rng, kinds).encode("utf-8") + b"\n")


if __name__ == "__main__":
    main()
