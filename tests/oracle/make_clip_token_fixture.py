#!/usr/bin/env python3
"""Writes tests/oracle/data/clip_tokens.jsonl: texts and the ids OpenAI's own
clip/simple_tokenizer.py gives them (SimpleTokenizer().encode), for test_clip_tokenizer.py.

    python3 tests/oracle/make_clip_token_fixture.py PATH/TO/simple_tokenizer.py [--out FILE]

The reference is imported from the given path at run time, not copied into this repository,
and reads the merges file beside it (bpe_simple_vocab_16e6.txt.gz, as in a checkout of
github.com/openai/CLIP), or --bpe. Two substitutions:

- ftfy is replaced by a stub whose fix_text returns the text unchanged (always: vitattn does not
  apply ftfy, docs/text.md, and Debian 12 has no python3-ftfy); the stub is put in sys.modules
  before the import;
- `regex` is the real module (python3-regex).

The texts are generated from a seeded random.Random, so a rerun with the same reference writes
the same file. They stay within what vitattn decodes (docs/text.md): a text whose double
html.unescape differs when Python's table of named references is cut to the names vitattn
decodes is drawn again; no text contains '\\n' or '\\r' (the test feeds one text a line).
Each line of the output: {"text": ..., "ids": [...]} (JSON, ASCII-escaped).
"""
import argparse
import html
import importlib.util
import json
import random
import string
import sys
import types
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "pylib"))
from html_names import DECODED_NAMES, unescape_with_names  # noqa: E402

SEED = 20241205
COUNT = 1200


def load_reference(path, bpe):
    ftfy = types.ModuleType("ftfy")
    ftfy.fix_text = lambda text: text  # identity: see the module docstring
    sys.modules["ftfy"] = ftfy
    spec = importlib.util.spec_from_file_location("clip_simple_tokenizer", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.SimpleTokenizer(bpe) if bpe else module.SimpleTokenizer()


def within_vitattn(text):
    twice = lambda t, names=None: (html.unescape(html.unescape(t)) if names is None
                                   else unescape_with_names(unescape_with_names(t, names), names))
    return "\n" not in text and "\r" not in text and twice(text) == twice(text, DECODED_NAMES)


NOUNS = ["cat", "dog", "bird", "car", "bicycle", "house", "tree", "mountain", "river", "beach", "city", "street",
         "person", "woman", "man", "child", "horse", "boat", "train", "plane", "pizza", "cake", "flower", "bridge",
         "table", "chair", "computer", "phone", "book", "guitar", "painting", "sculpture", "robot", "dragon"]
ADJECTIVES = ["red", "small", "large", "old", "new", "happy", "sleepy", "blurry", "bright", "dark", "wooden",
              "shiny", "vintage", "colorful", "black and white", "snowy", "rainy", "golden", "tiny", "giant"]
PLACES = ["the park", "a kitchen", "the sea", "a forest", "the desert", "a museum", "the moon", "a city at night",
          "the snow", "a field of grass", "an office", "the street"]
TEMPLATES = ["a photo of a {a} {n}.", "a {a} {n} in {p}", "A picture of the {n}", "an illustration of a {n}",
             "a close-up photo of a {a} {n} near {p}", "{N} on {p}", "a bad photo of the {n}.", "the {n} is {a}",
             "two {n}s and a {n2} in {p}", "a sketch of a {n}", "a cropped photo of the {a} {n}.", "itap of a {n}."]
CONTRACTIONS = ["it's", "don't", "we're", "they've", "I'm", "you'll", "he'd", "can't", "isn't", "O'Brien",
                "'S", "'LL", "rock'n'roll", "y'all", "'tis", "ma'am", "'d'"]
ACCENTED = ["café", "naïve", "Zürich", "São Paulo", "crème brûlée", "façade", "Ærøskøbing", "Straße", "İstanbul",
            "mañana", "Øresund", "Kraków", "Dvořák", "Ελλάδα", "ΣΟΦΟΣ", "Москва", "Привет", "Ǆemal", "ﬁne",
            "a\u0301", "e\u0308", "Ångström", "Łódź", "Reykjavík"]
CJK = ["日本", "東京", "北京", "中文", "漢字", "한국어", "서울", "ひらがな", "カタカナ", "東京タワーの夜景",
       "北京是中国的首都。", "안녕하세요 세계", "ภาษาไทย", "עברית", "العربية", "हिन्दी"]
EMOJI = ["🐱", "🐶", "🌅", "🚲", "🍎", "👍🏽", "❤️", "🇯🇵", "🇫🇷", "👩‍💻", "👨‍👩‍👧", "😀😀", "★", "☃", "✨", "🎉",
         "🙂", "🤖", "🧑🏿‍🚀"]
REFERENCES = ["&amp;", "&lt;", "&gt;", "&quot;", "&apos;", "&nbsp;", "&#39;", "&#233;", "&#x1F600;", "&amp;amp;",
              "&amp;quot;", "&AMP;", "&LT", "&gt", "&#65;&#x42;&#X43", "&#128;", "&#150;", "&#0;", "&#xD800;",
              "&#x110000;", "&#99999999999;", "&nbsp", "&amp;lt;3", "&#1;", "&#x2028;"]
SPACES = [" ", " ", " ", "  ", "\t", "\u00a0", "\u3000", "\u2028", "\u2029", "\x0b", "\x0c", "\x1c", "\x1d",
          "\x1e", "\x1f", "\x85", "\u2003", "\u2009", "\u200a", "\u202f", "\u205f", " \t "]
MARKS = ["<|startoftext|>", "<|endoftext|>", "<|STARTOFTEXT|>", "<|endoftext|"]


def caption(rng):
    t = rng.choice(TEMPLATES)
    n = rng.choice(NOUNS)
    return t.format(a=rng.choice(ADJECTIVES), n=n, N=n.capitalize(), n2=rng.choice(NOUNS), p=rng.choice(PLACES))


def accents(rng):
    letters = [chr(c) for c in range(0xC0, 0x180) if chr(c).isalpha()]
    words = [rng.choice(ACCENTED) if rng.random() < 0.5 else "".join(rng.choice(letters) for _ in range(rng.randint(1, 9)))
             for _ in range(rng.randint(1, 5))]
    return " ".join(words)


def cjk(rng):
    blocks = [(0x4E00, 0x9FFF), (0x3041, 0x3096), (0x30A1, 0x30FA), (0xAC00, 0xD7A3)]
    parts = []
    for _ in range(rng.randint(1, 4)):
        if rng.random() < 0.4:
            parts.append(rng.choice(CJK))
        else:
            lo, hi = rng.choice(blocks)
            parts.append("".join(chr(rng.randint(lo, hi)) for _ in range(rng.randint(1, 8))))
    return rng.choice(["", " ", "、", "。"]).join(parts)


def emoji(rng):
    ranges = [(0x1F300, 0x1F5FF), (0x1F600, 0x1F64F), (0x1F680, 0x1F6C5), (0x2600, 0x26FF)]
    parts = []
    for _ in range(rng.randint(1, 5)):
        if rng.random() < 0.5:
            parts.append(rng.choice(EMOJI))
        else:
            lo, hi = rng.choice(ranges)
            parts.append(chr(rng.randint(lo, hi)))
    return rng.choice(["", " "]).join(parts) + rng.choice(["", " " + caption(rng)])


def digits(rng):
    forms = [lambda: str(rng.randint(0, 10 ** rng.randint(1, 12))), lambda: f"{rng.uniform(0, 1000):.{rng.randint(1, 4)}f}",
             lambda: f"{rng.randint(1, 28)}/{rng.randint(1, 12)}/{rng.randint(1900, 2099)}",
             lambda: f"+1 ({rng.randint(200, 999)}) {rng.randint(100, 999)}-{rng.randint(1000, 9999)}",
             lambda: f"{rng.randint(1, 999):,}{rng.randint(100, 999)}", lambda: f"{rng.randint(1, 99)}th",
             lambda: f"v{rng.randint(0, 9)}.{rng.randint(0, 99)}.{rng.randint(0, 999)}", lambda: "١٢٣ ٤٥٦",
             lambda: "½ ² Ⅻ ３", lambda: f"{rng.randint(0, 100)}%", lambda: f"${rng.randint(1, 9999)}.{rng.randint(0, 99):02d}"]
    return " ".join(rng.choice(forms)() for _ in range(rng.randint(1, 4)))


def punctuation(rng):
    marks = string.punctuation + "—–‐…«»“”‘’¡¿·•§¶†‡°©®™"
    runs = ["".join(rng.choice(marks) for _ in range(rng.randint(1, 12))) for _ in range(rng.randint(1, 4))]
    return rng.choice(["", " "]).join(runs) + rng.choice(["", " " + rng.choice(NOUNS)])


def references(rng):
    words = [rng.choice(REFERENCES) if rng.random() < 0.6 else rng.choice(NOUNS) for _ in range(rng.randint(1, 6))]
    return rng.choice(["", " "]).join(words)


def long_word(rng):
    forms = [lambda: "".join(rng.choice(string.ascii_lowercase) for _ in range(rng.randint(20, 80))),
             lambda: "".join(rng.choice(["ba", "na", "lo", "que", "tz", "xy", "ing", "tion"]) for _ in range(rng.randint(8, 30))),
             lambda: rng.choice(["supercalifragilisticexpialidocious", "pneumonoultramicroscopicsilicovolcanoconiosis",
                                 "Donaudampfschifffahrtsgesellschaftskapitän", "ALLCAPSWORDWITHOUTSPACES"]),
             lambda: "".join(rng.choice(string.ascii_letters + string.digits) for _ in range(rng.randint(20, 60))),
             lambda: rng.choice(NOUNS) * rng.randint(5, 15)]
    return " ".join(rng.choice(forms)() for _ in range(rng.randint(1, 2)))


def whitespace(rng):
    words = [caption(rng) if rng.random() < 0.3 else rng.choice(NOUNS + CONTRACTIONS) for _ in range(rng.randint(1, 6))]
    text = "".join(rng.choice(SPACES) * rng.randint(1, 3) + w for w in words)
    return text + rng.choice(SPACES) * rng.randint(0, 3)


def mixed(rng):
    pools = [NOUNS] * 4 + [CONTRACTIONS, ACCENTED, CJK, EMOJI, REFERENCES, MARKS, ["2024", "3", "4.5", "!!", "...", "?"]]
    words = []
    for _ in range(rng.randint(1, 14)):
        w = rng.choice(rng.choice(pools))
        w = w.upper() if rng.random() < 0.15 else w.capitalize() if rng.random() < 0.15 else w
        words.append(w)
    return "".join(("" if rng.random() < 0.1 else rng.choice(SPACES[:6])) + w for w in words)


KINDS = [caption, accents, cjk, emoji, digits, punctuation, references, long_word, whitespace, mixed]
FIXED = ["", " ", "\t", "a", "!", "a photo of a cat", "A photo of a CAT.", "<|startoftext|>a cat<|endoftext|>",
         "I'm sure it's what they've said: we'll see, you'd know, they're here", "DON'T SHOUT, IT'S RUDE", "''s", "'ſ 'K",
         "ΟΔΟΣ ΣΑΣ ΣΟΦΟΣ. Σ", "İstanbul DİYARBAKIR", "ﬁﬂ ligatures", "ＦＵＬＬＷＩＤＴＨ ｔｅｘｔ", "ℌ𝔢𝔩𝔩𝔬 𝕨𝕠𝕣𝕝𝕕",
         "zero\u200bwidth space", "&ampx &ltfoo &gtbar &quotz &nbspy", "&apos &nbsp&amp"]


def texts(count=COUNT, seed=SEED):
    rng = random.Random(seed)
    out = list(FIXED)
    while len(out) < count:
        kind = KINDS[len(out) % len(KINDS)]
        text = kind(rng)
        while not within_vitattn(text):
            text = kind(rng)
        out.append(text)
    return out


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("simple_tokenizer", type=Path, help="OpenAI's clip/simple_tokenizer.py")
    parser.add_argument("--bpe", type=Path, help="the merges file (default: the reference's, beside it)")
    parser.add_argument("--out", type=Path, default=Path(__file__).resolve().parent / "data" / "clip_tokens.jsonl")
    args = parser.parse_args()
    reference = load_reference(args.simple_tokenizer, str(args.bpe) if args.bpe else None)
    lines = [json.dumps({"text": t, "ids": reference.encode(t)}, ensure_ascii=True, separators=(",", ":"))
             for t in texts()]
    tmp = args.out.with_suffix(".tmp")
    tmp.write_text("\n".join(lines) + "\n", encoding="ascii")
    tmp.replace(args.out)
    print(f"{args.out}: {len(lines)} texts")


if __name__ == "__main__":
    main()
