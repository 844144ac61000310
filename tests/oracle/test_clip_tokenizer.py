#!/usr/bin/env python3
"""vitattn's CLIP tokeniser (src/text) against a Python re-implementation, written here, of
OpenAI's clip/simple_tokenizer.py (SimpleTokenizer.encode): the same ids for every text.

    VITATTN_CLIP_TOKENIZE_TOOL=build/dev/tests/clip_tokenize_tool python3 -m pytest tests/oracle/test_clip_tokenizer.py

The re-implementation follows simple_tokenizer.py step by step with Python's own pieces:
html.unescape (twice), str.strip, the regex module's \\s, \\p{L} and \\p{N} (python3-regex),
str.lower, and the merges file of data/clip/ read with gzip. It leaves out ftfy.fix_text,
which vitattn does not reproduce (docs/text.md). The texts: hand-written captions and edge
cases, and seeded random mixes of English words, contractions, digits, punctuation, accented,
Greek, Cyrillic, Thai and CJK letters, emoji, odd whitespace and HTML references. Only the
references vitattn decodes appear (numeric ones, &amp; &lt; &gt; &quot; in either case, &apos; &nbsp;);
a named one outside that set (&copy;) Python would decode and vitattn keeps as written, so
the texts avoid them (test_texts_only_use_supported_references checks it).

test_same_ids_as_reference_fixture compares with ids made by OpenAI's own simple_tokenizer.py
(ftfy stubbed as identity), kept in tests/oracle/data/clip_tokens.jsonl: 1,200 texts written by
make_clip_token_fixture.py (tests/oracle/data/README.md says how and from which commit).

The test_hf_* tests write Hugging Face's form of the vocabulary (CLIPTokenizer's vocab.json +
merges.txt, and tokenizer.json) from data/clip's merges file as simple_tokenizer.py builds its
vocabulary, and check that ClipTokenizer::from_folder gives the fixture's ids, and that each
kind of malformed file is refused with one line naming it.
"""
import gzip
import html
import json
import os
import random
import subprocess
import tempfile
from pathlib import Path

import pytest

from harness import REPO
from html_names import DECODED_NAMES, unescape_with_names

regex = pytest.importorskip("regex")

TOOL = os.environ.get("VITATTN_CLIP_TOKENIZE_TOOL", str(REPO / "build/dev/tests/clip_tokenize_tool"))
MERGES = REPO / "data" / "clip" / "bpe_simple_vocab_16e6.txt.gz"
FIXTURE = REPO / "tests" / "oracle" / "data" / "clip_tokens.jsonl"
SPLIT = regex.compile(r"<\|startoftext\|>|<\|endoftext\|>|'s|'t|'re|'ve|'m|'ll|'d|[\p{L}]+|[\p{N}]|[^\s\p{L}\p{N}]+",
                      regex.IGNORECASE)


def byte_characters():
    """bytes_to_unicode: printable Latin-1 bytes stand for themselves, the rest for U+0100 on."""
    keep = set(range(0x21, 0x7F)) | set(range(0xA1, 0xAD)) | set(range(0xAE, 0x100))
    table, extra = {}, 0
    for b in range(256):
        if b in keep:
            table[b] = chr(b)
        else:
            table[b] = chr(256 + extra)
            extra += 1
    return table


class Reference:
    def __init__(self):
        self.chars = byte_characters()
        lines = gzip.open(MERGES).read().decode("utf-8").split("\n")[1:49152 - 256 - 2 + 1]
        self.ranks = {}
        order = [self.chars[b] for b in sorted(self.chars, key=lambda b: (self.chars[b] != chr(b), b))]
        symbols = order + [c + "</w>" for c in order]
        for rank, line in enumerate(lines):
            a, b = line.split()
            self.ranks[(a, b)] = rank
            symbols.append(a + b)
        symbols += ["<|startoftext|>", "<|endoftext|>"]
        self.ids = {s: i for i, s in enumerate(symbols)}

    def merge(self, word):
        if word in ("<|startoftext|>", "<|endoftext|>"):
            return [word]
        parts = list(word[:-1]) + [word[-1] + "</w>"]
        while len(parts) > 1:
            ranked = [(self.ranks[p], p) for p in zip(parts, parts[1:]) if p in self.ranks]
            if not ranked:
                break
            _, (a, b) = min(ranked)
            merged, i = [], 0
            while i < len(parts):
                if i + 1 < len(parts) and parts[i] == a and parts[i + 1] == b:
                    merged.append(a + b)
                    i += 2
                else:
                    merged.append(parts[i])
                    i += 1
            parts = merged
        return parts

    def encode(self, text):
        text = html.unescape(html.unescape(text)).strip()
        text = regex.sub(r"\s+", " ", text).strip().lower()
        ids = []
        for word in SPLIT.findall(text):
            mapped = "".join(self.chars[b] for b in word.encode("utf-8"))
            ids += [self.ids[s] for s in self.merge(mapped)]
        return ids


HAND_WRITTEN = [
    "a photo of a cat", "a diagram", "a dog", "A photo of a CAT.", "", "   ", "a", "!", "hello world",
    "The quick brown fox jumps over the lazy dog.", "two dogs playing in the snow, 2019",
    "I'm sure it's what they've said: we'll see, you'd know, they're here",
    "DON'T SHOUT, IT'S RUDE", "rock'n'roll", "''s", "'S", "o'clock 'tis", "'ſ 'K",
    "3.14159 and 1,000,000 and 2nd 3rd 42nd", "Call 555-0199 ext. 7", "x=1+2*3/4-5^6 %7 #8 @9 $10",
    "café crème brûlée naïve façade", "Ærøskøbing Straße ÖSTERREICH", "ΟΔΟΣ ΣΑΣ ΣΟΦΟΣ. Σ", "İstanbul DİYARBAKIR",
    "Москва — столица России", "東京タワーの夜景", "北京是中国的首都。", "안녕하세요 세계", "ภาษาไทย",
    "١٢٣ ٤٥٦", "½ cup, ² squared, Ⅻ o'clock", "🐱🐶 cute pets 👍🏽", "🇫🇷 flag 👨‍👩‍👧 family",
    "tab\tseparated\twords", "non\u00a0breaking\u3000space", "line\u2028separator\u2029para", "\x1cfile\x1c sep\x1d",
    "&amp; &lt; &gt; &quot; &apos; &nbsp; &#39; &#65;&#x42;&#X43", "&amp;lt;3 &amp;amp; twice", "&#128; &#150; &#0; &#1; &#xD800;",
    "&#99999999999; &#x110000;", "&ampx &ltfoo &gtbar &quotz &nbspy", "&apos &nbsp&amp",
    "<|startoftext|>a cat<|endoftext|>", "!<|endoftext|>", "<|STARTOFTEXT|>", "<|endoftext|><|endoftext|>",
    "...!!!???", "—–-‐", "«quoted» “curly” ‘single’", "e-mail@example.com http://example.org/path?q=1&x=2",
    "C++ and C# and F#", "ALLCAPSWORDWITHOUTSPACES", "supercalifragilisticexpialidocious", "mañana",
    "über-cool", "co-operate", "Mr. & Mrs. Smith", "100% natural", "#hashtag @mention", "(parenthesised) [bracketed] {braced}",
    "a\u0301 combining acute", "ﬁﬂ ligatures", "ＦＵＬＬＷＩＤＴＨ ｔｅｘｔ", "ℌ𝔢𝔩𝔩𝔬 𝕨𝕠𝕣𝕝𝕕", "zero\u200bwidth space",
]

WORDS = ["a", "photo", "of", "the", "cat", "dog", "sitting", "on", "mat", "red", "car", "street", "people", "at", "night",
         "painting", "by", "van", "gogh", "sunset", "over", "ocean", "bicycle", "kitchen", "table", "with", "fruit"]
CONTRACTIONS = ["it's", "don't", "we're", "they've", "I'm", "you'll", "he'd", "can't", "isn't", "O'Brien"]
OTHERS = ["2024", "3", "1,024", "4.5", "#1", "!!", "?", "...", ",", ";", ":", "-", "—", "(", ")", "\"", "'", "/", "*", "$5", "€10"]
FOREIGN = ["café", "naïve", "Zürich", "São", "Paulo", "Ελλάδα", "ΣΟΦΟΣ", "Привет", "мир", "日本", "東京", "北京", "中文",
           "한국어", "ไทย", "עברית", "العربية", "हिन्दी", "Ǆemal", "ﬁne"]
EMOJI = ["🐱", "🐶", "🌅", "🚲", "🍎", "👍🏽", "❤️", "🇯🇵", "👩‍💻", "😀😀", "★", "☃"]
REFERENCES = ["&amp;", "&lt;", "&gt;", "&quot;", "&apos;", "&nbsp;", "&#39;", "&#233;", "&#x1F600;", "&amp;amp;", "&amp;quot;"]
SPACES = [" ", " ", " ", " ", "  ", "\t", "\u00a0", "\u3000", " \t "]


def random_texts(n, seed=1234):
    rng = random.Random(seed)
    pools = [WORDS] * 6 + [CONTRACTIONS, OTHERS, OTHERS, FOREIGN, FOREIGN, EMOJI, REFERENCES]
    texts = []
    for _ in range(n):
        words = []
        for _ in range(rng.randint(1, 14)):
            w = rng.choice(rng.choice(pools))
            if rng.random() < 0.15:
                w = w.upper()
            elif rng.random() < 0.15:
                w = w.capitalize()
            words.append(w)
        glued = words[0]
        for w in words[1:]:
            glued += ("" if rng.random() < 0.1 else rng.choice(SPACES)) + w
        texts.append(glued)
    return texts


TEXTS = HAND_WRITTEN + random_texts(400)


def vitattn_ids(texts, folder=None):
    """The tool's ids for each text; with `folder`, from the Hugging Face files there."""
    assert all("\n" not in t and "\r" not in t for t in texts)
    if not os.path.exists(TOOL):
        pytest.skip(f"{TOOL} is not built")
    args = [TOOL] + ([str(folder)] if folder else [])
    out = subprocess.run(args, input=("\n".join(texts) + "\n").encode("utf-8"), capture_output=True, check=True).stdout
    lines = out.decode("utf-8").split("\n")[:-1]
    assert len(lines) == len(texts)
    return [[int(x) for x in line.split()] if not line.startswith("error:") else line for line in lines]


def test_texts_only_use_supported_references():
    """Each text unescapes (twice) alike with Python's whole table of names and with the names
    vitattn decodes: the comparison stays within what vitattn claims."""
    outside = [t for t in TEXTS
               if unescape_with_names(unescape_with_names(t, DECODED_NAMES), DECODED_NAMES) != html.unescape(html.unescape(t))]
    assert not outside, f"texts with references vitattn does not decode: {outside[:5]}"
    assert unescape_with_names("&copy; &amp;", DECODED_NAMES) == "&copy; &", "the cut table is in force"


def test_same_ids_as_simple_tokenizer():
    reference = Reference()
    assert len(reference.ids) == 49408
    got = vitattn_ids(TEXTS)
    differ = [(t, reference.encode(t), g) for t, g in zip(TEXTS, got) if reference.encode(t) != g]
    tokens = sum(len(reference.encode(t)) for t in TEXTS)
    print(f"\nclip_tokenizer: {len(TEXTS)} texts ({tokens} tokens) compared, {len(TEXTS) - len(differ)} equal")
    for text, want, have in differ[:10]:
        print(f"FAIL: {text!r}\n  python:  {want}\n  vitattn: {have}")
    assert not differ, f"{len(differ)} of {len(TEXTS)} texts differ"


def fixture_rows():
    with open(FIXTURE, encoding="ascii") as f:
        return [json.loads(line) for line in f]


def test_fixture_only_uses_supported_references():
    rows = fixture_rows()
    assert len(rows) >= 1000 and len({r["text"] for r in rows}) >= 1000
    outside = [r["text"] for r in rows
               if unescape_with_names(unescape_with_names(r["text"], DECODED_NAMES), DECODED_NAMES)
               != html.unescape(html.unescape(r["text"]))]
    assert not outside, f"fixture texts with references vitattn does not decode: {outside[:5]}"


def test_same_ids_as_reference_fixture():
    """The ids OpenAI's simple_tokenizer.py itself gave (make_clip_token_fixture.py), all equal."""
    rows = fixture_rows()
    got = vitattn_ids([r["text"] for r in rows])
    differ = [(r["text"], r["ids"], g) for r, g in zip(rows, got) if r["ids"] != g]
    tokens = sum(len(r["ids"]) for r in rows)
    print(f"\nclip_tokenizer fixture: {len(rows)} texts ({tokens} tokens) compared, {len(rows) - len(differ)} equal")
    for text, want, have in differ[:10]:
        print(f"FAIL: {text!r}\n  simple_tokenizer.py: {want}\n  vitattn:             {have}")
    assert not differ, f"{len(differ)} of {len(rows)} fixture texts differ"


def merge_pairs():
    """The merges simple_tokenizer.py reads: lines 1…48,894 of the file, each two symbols."""
    lines = gzip.open(MERGES).read().decode("utf-8").split("\n")[1:49152 - 256 - 2 + 1]
    return [tuple(line.split()) for line in lines]


def write_hf_files(folder, vocab=None, merges_text=None):
    """vocab.json + merges.txt as Hugging Face ships CLIP's: the reference's vocabulary
    (byte characters, their '</w>' forms, the merges joined, the two marks) and '#version: 0.2'
    then the merges. `vocab` / `merges_text` replace either for the malformed cases."""
    folder.mkdir(parents=True, exist_ok=True)
    vocab = Reference().ids if vocab is None else vocab
    (folder / "vocab.json").write_text(json.dumps(vocab, ensure_ascii=False), encoding="utf-8")
    if merges_text is None:
        merges_text = "#version: 0.2\n" + "".join(f"{a} {b}\n" for a, b in merge_pairs())
    (folder / "merges.txt").write_text(merges_text, encoding="utf-8")


def write_tokenizer_json(folder, merges=None, pairs=False):
    folder.mkdir(parents=True, exist_ok=True)
    if merges is None:
        merges = [list(m) if pairs else " ".join(m) for m in merge_pairs()]
    model = {"type": "BPE", "vocab": Reference().ids, "merges": merges, "end_of_word_suffix": "</w>"}
    (folder / "tokenizer.json").write_text(json.dumps({"version": "1.0", "model": model}, ensure_ascii=False),
                                           encoding="utf-8")


@pytest.mark.parametrize("form", ["vocab_merges", "tokenizer_json", "tokenizer_json_pairs"])
def test_hf_files_give_reference_ids(form):
    rows = fixture_rows()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        if form == "vocab_merges":
            write_hf_files(folder)
        else:
            write_tokenizer_json(folder, pairs=form == "tokenizer_json_pairs")
        got = vitattn_ids([r["text"] for r in rows], folder)
    differ = [(r["text"], r["ids"], g) for r, g in zip(rows, got) if r["ids"] != g]
    print(f"\nclip_tokenizer {form}: {len(rows)} fixture texts, {len(rows) - len(differ)} equal")
    for text, want, have in differ[:5]:
        print(f"FAIL: {text!r}\n  simple_tokenizer.py: {want}\n  vitattn ({form}): {have}")
    assert not differ, f"{len(differ)} of {len(rows)} fixture texts differ with {form}"


def swapped_marks():
    v = dict(Reference().ids)
    v["<|startoftext|>"], v["<|endoftext|>"] = v["<|endoftext|>"], v["<|startoftext|>"]
    return v


def shifted_end_of_word():
    v = dict(Reference().ids)
    v["a</w>"], v["b</w>"] = v["b</w>"], v["a</w>"]
    return v


HEADER = "#version: 0.2\n"
# (name, how the folder is written, the file the error names, what it says)
MALFORMED = [
    ("vocab_not_json", lambda f: write_hf_files(f, vocab=None) or (f / "vocab.json").write_text("{\"a\": 1,"),
     "vocab.json", "not valid JSON"),
    ("vocab_short", lambda f: write_hf_files(f, vocab={k: v for k, v in Reference().ids.items() if v != 600}),
     "vocab.json", "49407 symbols, CLIP's vocabulary has 49408"),
    ("vocab_id_not_integer", lambda f: write_hf_files(f, vocab={**Reference().ids, "in": "512"}),
     "vocab.json", "not an integer"),
    ("vocab_id_twice", lambda f: write_hf_files(f, vocab={**Reference().ids, "in": 513}), "vocab.json", "id 513 is given twice"),
    ("vocab_marks_swapped", lambda f: write_hf_files(f, vocab=swapped_marks()),
     "vocab.json", '"<|startoftext|>" is id 49407, CLIP\'s is 49406'),
    ("vocab_end_of_word_moved", lambda f: write_hf_files(f, vocab=shifted_end_of_word()),
     "vocab.json", '"a</w>" is id'),
    ("merges_no_header", lambda f: write_hf_files(f, merges_text="".join(f"{a} {b}\n" for a, b in merge_pairs())),
     "merges.txt", "line 1 is not the \"#version\" header"),
    ("merges_short", lambda f: write_hf_files(f, merges_text=HEADER + "i n\n"), "merges.txt", "CLIP reads 48895"),
    ("merges_three_symbols", lambda f: write_hf_files(f, merges_text=HEADER + "i n x\n" * 48894),
     "merges.txt", "line 2 is not two symbols"),
    ("merges_unknown_symbol", lambda f: write_hf_files(f, merges_text=HEADER + "i n\n" * 9 + "q一 z\n" * 48885),
     "merges.txt", 'line 11 names "q一z", which is no symbol'),
    ("merges_missing", lambda f: write_hf_files(f) or (f / "merges.txt").unlink(), "merges.txt", ""),
    ("tokenizer_json_merges_not_array", lambda f: write_tokenizer_json(f, merges={"i": "n"}),
     "tokenizer.json", "model.merges is not an array"),
    ("tokenizer_json_merge_malformed", lambda f: write_tokenizer_json(f, merges=["i n"] * 3 + ["in"] * 48891),
     "tokenizer.json", "model.merges[3] is not two symbols"),
    ("nothing", lambda f: f.mkdir(parents=True), "", "no CLIP tokeniser files"),
]


@pytest.mark.parametrize("name,write,file,says", MALFORMED, ids=[m[0] for m in MALFORMED])
def test_hf_files_malformed_give_one_line(name, write, file, says):
    if not os.path.exists(TOOL):
        pytest.skip(f"{TOOL} is not built")
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "model"
        write(folder)
        run = subprocess.run([TOOL, str(folder)], input=b"a photo of a cat\n", capture_output=True)
    lines = run.stdout.decode("utf-8").splitlines()
    print(f"\n{name}: {lines}")
    assert run.returncode == 1 and run.stderr == b"" and len(lines) == 1, (run.returncode, lines, run.stderr)
    assert lines[0].startswith(f"error: {folder / file}") and says in lines[0], lines[0]
