#!/usr/bin/env python3
"""SigLIP's tokeniser (src/text/siglip_tokenizer.cpp) against SentencePiece's own Python
encoder after the steps of Hugging Face's SiglipTokenizer, written here from its code:

The HF steps and the tiny model are tests/pylib/siglip_tokenizer_reference.py's (shared with the
tests that build a SigLIP with its text tower):

- the model loaded with its normalizer's add_dummy_prefix turned off (protobuf MergeFrom);
- "▁" + the text with "▁" made a space, lower-cased one character at a time (HF's
  `re.sub("(.+?)", lambda m: m.group().lower())` when do_lower_case);
- big_vision's canonicalize_text: string.punctuation removed, re's \\s+ made " ", strip();
- encoded behind "<unk>", whose own pieces are dropped; each piece's id (piece_to_id);
- "</s>" appended, "</s>" (HF's pad_token) as padding to max_length; truncation=True keeps
  max_length - 1 pieces and the "</s>".

No real spiece.model is available offline: the test trains a tiny unigram model with
python3-sentencepiece, with SigLIP's special pieces in T5's layout (<pad> 0, </s> 1, <unk> 2,
no <s>), on a generated lower-case corpus, once with SentencePiece's default normaliser and once
with none, and compares the ids of a few hundred texts:
capitals (ASCII, Latin-1, Greek, "İ"), every ASCII punctuation mark, Python's whitespace
(tabs, U+00A0, U+3000, U+2028, ...), "▁" itself, pieces the model lacks (unknown), empty and
blank texts, and texts over the context (an error naming the count, or truncated); each id's
text (words.csv's token) as its piece with "▁" a space. And the
steps before the model (through the tool's --normalize) over every Unicode code point.

    VITATTN_SIGLIP_TOKENIZE_TOOL=build/dev/tests/siglip_tokenize_tool python3 -m pytest tests/oracle/test_siglip_tokenizer.py
"""
import os
import random
import string
import subprocess
import tempfile
from pathlib import Path

import pytest

from harness import REPO
from siglip_tokenizer_reference import UNDERLINE, WORDS, hf_ids, hf_normalized, hf_processor, train_tiny_model

TOOL = os.environ.get("VITATTN_SIGLIP_TOKENIZE_TOOL", str(REPO / "build/dev/tests/siglip_tokenize_tool"))
RARE = ["Éclair", "ÉTÉ", "ΣΟΣ", "İstanbul", "straße", "猫", "🙂", "naïve", "ÆON", "Ωmega", "x²"]
# Every character Python takes for whitespace (but "\n", which ends a line for the tool), runs of
# them, "▁", and a zero-width space (not whitespace).
SPACES = [c for c in map(chr, range(0x3001)) if c.isspace() and c != "\n"] + ["  ", " \t ", UNDERLINE, "\u200b"]


def texts():
    rng = random.Random(11)
    out = ["", " ", "\t \u3000", "a photo of a cat.", "A Photo Of A CAT!", "  leading and trailing  ",
           UNDERLINE, UNDERLINE + "cat", "cat" + UNDERLINE + "dog", "It's a dog's life, isn't it?",
           "x-ray: (50%) \"quoted\" [brackets] {braces} <angles> a/b a\\b a|b a~b a^b a`b a_b a@b a#b",
           string.punctuation, "ΣΟΣ İ İİ", "zzz qqq jjj", "Éclair ÉTÉ"]
    for _ in range(300):
        parts = []
        for _ in range(rng.randint(1, 14)):
            word = rng.choice(RARE) if rng.random() < 0.1 else rng.choice(WORDS)
            if rng.random() < 0.25:
                word = word.upper() if rng.random() < 0.5 else word.capitalize()
            if rng.random() < 0.2:
                mark = rng.choice(string.punctuation)
                word = word + mark if rng.random() < 0.5 else mark + word
            parts.append(word)
            parts.append(rng.choice(SPACES) if rng.random() < 0.3 else " ")
        text = "".join(parts)
        out.append(text[:-1] if rng.random() < 0.5 else text)
    for n in (20, 40, 62, 63, 64, 80):  # around the context: the error and the truncation
        out.append(" ".join(rng.choice(WORDS) for _ in range(n)))
    assert not any("\n" in t for t in out)  # one text per line
    return out


def run_tool(model, lines, *args):
    proc = subprocess.run([TOOL, str(model), *args], input="\n".join(lines).encode() + b"\n",
                          capture_output=True, timeout=300)
    assert proc.returncode == 0, proc.stderr.decode()
    got = proc.stdout.decode().split("\n")
    assert got[-1] == "" and len(got) == len(lines) + 1, (len(got), len(lines))
    return got[:-1]


@pytest.fixture(scope="module", params=["nmt_nfkc", "identity"])
def model(request):
    assert Path(TOOL).exists(), f"{TOOL} is not built (target siglip_tokenize_tool)"
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "spiece.model"
        train_tiny_model(path, request.param)
        yield path


@pytest.mark.parametrize("context,truncate", [(64, False), (64, True), (16, False), (16, True)])
def test_ids_match_hf(model, context, truncate):
    sp = hf_processor(model)
    assert (sp.pad_id(), sp.piece_to_id("</s>"), sp.unk_id(), sp.bos_id()) == (0, 1, 2, -1)
    lines = texts()
    got = run_tool(model, lines, str(context), *(["truncate"] if truncate else []))
    failures, errors, unknown = [], 0, 0
    for text, line in zip(lines, got):
        want = hf_ids(sp, text, context, truncate)
        if isinstance(want, tuple):
            errors += 1
            ok = line.startswith('error: text "') and line.endswith(
                f": {want[1]} tokens with the end token, over the context of {context}")
        else:
            unknown += sp.unk_id() in want
            ok = line == " ".join(map(str, want))
        if not ok:
            failures.append(f"{text!r}: vitattn {line!r}, HF {want!r}")
    print(f"context {context} truncate {truncate}: {len(lines)} texts, {errors} over the context, "
          f"{unknown} with an unknown piece, {len(failures)} differ")
    assert not failures, "\n".join(failures[:10])
    assert unknown > 0  # the unknown pieces were exercised
    assert (errors > 0) == (not truncate)


def test_token_text_is_the_piece_with_underline_as_space(model):
    """SiglipTokenizer::token_text (words.csv's token column) for every id of the model: its
    piece (id_to_piece) with each "▁" a space; an id past the model an error."""
    sp = hf_processor(model)
    n = sp.get_piece_size()
    got = run_tool(model, [str(i) for i in range(n + 1)], "--pieces")
    want = [sp.id_to_piece(i).replace(UNDERLINE, " ") for i in range(n)]
    assert got[:n] == want, [(i, g, w) for i, (g, w) in enumerate(zip(got, want)) if g != w][:10]
    assert got[n].startswith("error: token id"), got[n]
    assert sum(w.startswith(" ") for w in want) > 10  # pieces with the word mark were exercised


def test_every_code_point_normalized_as_hf():
    """Steps 1-3 over every Unicode scalar value but "\n" (it ends a line), 64 to a line, each
    also alone beside an "A", a space and a comma: lower-casing (glibc's tables against
    Python's), whitespace and punctuation, character by character."""
    assert Path(TOOL).exists(), f"{TOOL} is not built (target siglip_tokenize_tool)"
    chars = [chr(c) for c in range(0x110000) if not 0xD800 <= c <= 0xDFFF and c != 0x0A]
    lines = ["".join(chars[i:i + 64]) for i in range(0, len(chars), 64)]
    lines += [f"A{c} ,{c}" for c in chars if c.lower() != c or c.isspace() or c in string.punctuation]
    proc = subprocess.run([TOOL, "--normalize"], input="\n".join(lines).encode() + b"\n",
                          capture_output=True, timeout=300)
    assert proc.returncode == 0, proc.stderr.decode()
    got = proc.stdout.decode().split("\n")[:-1]
    assert len(got) == len(lines)
    failures = [f"{t!r}: vitattn {g!r}, HF {hf_normalized(t)!r}" for t, g in zip(lines, got) if g != hf_normalized(t)]
    print(f"{len(chars)} code points in {len(lines)} lines, {len(failures)} differ")
    assert not failures, "\n".join(failures[:10])


def test_context_without_room_for_the_end_token(model):
    assert run_tool(model, ["a cat"], "0") == ["error: context 0: must be at least 1, for the end token"]
    assert hf_ids(hf_processor(model), "a cat", 1) == ("error", 3)  # "▁a", "▁cat", "</s>"
    assert run_tool(model, ["a cat"], "1") == ['error: text "a cat": 3 tokens with the end token, over the context of 1']
    assert run_tool(model, ["a cat"], "1", "truncate") == ["1"]
    # A control character in the text is shown as \xNN: the error stays one line.
    assert run_tool(model, ["a\rcat"], "1") == ['error: text "a\\x0Dcat": 3 tokens with the end token, over the context of 1']


def test_model_errors_name_the_file(tmp_path):
    assert Path(TOOL).exists(), f"{TOOL} is not built (target siglip_tokenize_tool)"
    missing = tmp_path / "spiece.model"
    proc = subprocess.run([TOOL, str(missing)], input=b"", capture_output=True)
    assert proc.returncode == 1
    lines = proc.stderr.decode().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"error: {missing}: "), lines
    junk = tmp_path / "junk.model"
    junk.write_bytes(b"\x00\x01 not a model")
    proc = subprocess.run([TOOL, str(junk)], input=b"", capture_output=True)
    lines = proc.stderr.decode().splitlines()
    assert proc.returncode == 1 and len(lines) == 1 and lines[0].startswith(f"error: {junk}: not a SentencePiece model"), lines
