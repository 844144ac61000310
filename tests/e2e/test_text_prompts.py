#!/usr/bin/python3
"""The image command asked in words (`vitattn --model CLIP --text … | --texts-from FILE |
--labels FILE …`), run like a user on a small random CLIP (OpenAI names, both towers) and a photo.

Run:  /usr/bin/python3 -m pytest tests/e2e/test_text_prompts.py
      Skips when torch cannot be imported (the model's builders live with the torch reference)
      or ../shared is absent; under CI=true a skip fails.
Env:  VITATTN_BIN  binary to test (default <repo>/build/dev/vitattn)

Checked: --text twice draws one map per text, _attn_t0/_t1 (and _cls_t0/_t1.npy with
--save-attention) beside a sheet, legrad by default, and --top ranks the texts with
probabilities that sum to 1 (CLIP's softmax); --texts-from gives the same bytes as the same
texts by --text; the same labels through --labels FILE (no templates: each label its own
prompt, the prompt-ensemble path and its cache) rank as --text ranks them (an independent path
to the same logits: one encodes texts as the classes, the other averages a one-template
ensemble); --class picks a text by its words. Refused with one `error:` line, exit 2, nothing
written: --class by index with --text, an empty text, invalid UTF-8 in --texts-from (naming the
line), --text on an image tower alone, --text with --labels, --truncate without texts.

Seen red: the _t tag spelled as the classifier's _c (the expected names were missing); every
text drawn from one text's embedding (the two maps equal).
"""
import csv

import numpy as np
import pytest

import harness
import safetensors_io
from harness import need

try:
    import torch  # noqa: F401  (clip_reference needs it)
except ImportError as e:
    need(False, f"cannot import torch ({e}); install python3-torch")

from clip_reference import HEADS, openai_tensors, openai_text_tensors

pytestmark = pytest.mark.shared  # the photo is ../shared's
TEXTS = ["a photo of a cat", "a lighthouse at dusk"]


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    d = tmp_path_factory.mktemp("clip")
    path = d / "clip.safetensors"
    safetensors_io.write(path, {"visual." + k: v for k, v in openai_tensors(seed=21).items()} |
                         openai_text_tensors(seed=22), {"num_heads": str(HEADS)})
    visual = d / "visual.safetensors"
    safetensors_io.write(visual, {"visual." + k: v for k, v in openai_tensors(seed=21).items()}, {"num_heads": str(HEADS)})
    return path, visual


def photo():
    p = harness.SHARED / "images" / "chelsea.png"
    need(p.exists(), f"{p} is absent (../shared)")
    return p


def run_ok(*args, cache=None):
    env = {"XDG_CACHE_HOME": str(cache)} if cache else None
    code, _, err = harness.run(*args, env=env)
    assert code == 0, err[-3000:]
    return err


def top(out, stem):
    with open(out / f"{stem}_predictions.csv", newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    return {r["label"]: float(r["probability"]) for r in rows}


def test_texts_draw_one_map_each_and_rank(tmp_path, model):
    path, _ = model
    img = photo()
    args = ["--model", path, "--save-attention", "--top", "2"]
    run_ok(*args, "--text", TEXTS[0], "--text", TEXTS[1], img, "-o", tmp_path / "a")
    names = sorted(p.name for p in (tmp_path / "a").iterdir())
    for n in ("chelsea_attn.png", "chelsea_attn_t0.png", "chelsea_attn_t1.png", "chelsea_cls_t0.npy", "chelsea_cls_t1.npy"):
        assert n in names, names
    m0, m1 = np.load(tmp_path / "a" / "chelsea_cls_t0.npy"), np.load(tmp_path / "a" / "chelsea_cls_t1.npy")
    assert m0.shape == m1.shape and not np.array_equal(m0, m1), "the two texts' maps are the same"
    ranked = top(tmp_path / "a", "chelsea")
    assert set(ranked) == set(TEXTS) and abs(sum(ranked.values()) - 1) < 1e-4, ranked
    listed = tmp_path / "texts.txt"
    listed.write_text("\n".join(TEXTS) + "\n\n", encoding="utf-8")
    run_ok(*args, "--texts-from", listed, img, "-o", tmp_path / "b")
    for n in ("chelsea_cls_t0.npy", "chelsea_cls_t1.npy"):
        assert (tmp_path / "a" / n).read_bytes() == (tmp_path / "b" / n).read_bytes(), n
    labels = tmp_path / "labels.txt"
    labels.write_text("\n".join(TEXTS) + "\n", encoding="utf-8")
    run_ok(*args, "--labels", labels, img, "-o", tmp_path / "c", cache=tmp_path / "cache")
    by_labels = top(tmp_path / "c", "chelsea")
    assert set(by_labels) == set(TEXTS), by_labels
    for t in TEXTS:
        assert abs(by_labels[t] - ranked[t]) < 1e-4, (by_labels, ranked)
    run_ok("--model", path, "--text", TEXTS[0], "--text", TEXTS[1], "--class", TEXTS[1], "--save-attention", img,
           "-o", tmp_path / "d")
    assert (tmp_path / "d" / "chelsea_cls.npy").read_bytes() == (tmp_path / "a" / "chelsea_cls_t1.npy").read_bytes()


@pytest.mark.parametrize("case", ["class index", "empty text", "bad utf-8", "no text tower", "labels and text",
                                  "truncate alone"])
def test_refusals(tmp_path, model, case):
    path, visual = model
    img = photo()
    bad = tmp_path / "bad.txt"
    bad.write_bytes(b"a cat\n\xff\xfe dog\n")
    args, says = {
        "class index": (["--model", path, "--text", "a cat", "--class", "0"], "by its text"),
        "empty text": (["--model", path, "--text", "  "], "empty text"),
        "bad utf-8": (["--model", path, "--texts-from", bad], "line 2"),
        "no text tower": (["--model", visual, "--text", "a cat"], "text tower"),
        "labels and text": (["--model", path, "--text", "a cat", "--labels", bad], "one or the other"),
        "truncate alone": (["--model", path, "--truncate"], "--truncate"),
    }[case]
    code, _, err = harness.run(*args, img, "-o", tmp_path / "o")
    lines = [l for l in err.splitlines() if "error:" in l.lower()]
    assert code == 2 and len(lines) == 1 and says in lines[0], (code, err)
    assert not (tmp_path / "o").exists() or not any((tmp_path / "o").iterdir())
