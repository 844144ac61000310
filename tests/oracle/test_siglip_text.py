#!/usr/bin/python3
"""SigLIP's text tower (`vitattn forward --text` on a Hugging Face SiglipModel file) against a
torch re-implementation of transformers' modeling_siglip.py, on random weights.

Run:  /usr/bin/python3 -m pytest tests/oracle/test_siglip_text.py
      Skips when torch or python3-sentencepiece cannot be imported; under CI=true a skip fails.
Env:  VITATTN_BIN  binary to test (default <repo>/build/dev/vitattn)

The model: tests/pylib/siglip_reference.py text_model_folder: siglip_tensors(text=True) (both
towers, logit_scale, logit_bias) in a folder with config.json (text_config: 4 heads, hidden_act
"gelu" where the vision tower's is gelu_pytorch_tanh) and a spiece.model trained on the spot
(siglip_tokenizer_reference.py's tiny unigram model, SigLIP's special pieces). The references, none from vitattn:
- ids: HF SiglipTokenizer's steps over SentencePiece's Python encoder (test_siglip_tokenizer.py
  hf_ids: padding="max_length" to 64 with "</s>", truncation keeping 63 pieces and "</s>");
- text side: siglip_reference.torch_siglip_text (SiglipTextTransformer in float64: no attention
  mask, final_layer_norm, last_hidden_state[:, -1] through text_model.head, normalised);
- image side: torch_siglip (the probe's pooled row, normalised) on two photos resized by cv2;
- SiglipModel.forward's logits: text_embeds @ image_embedsᵀ · exp(logit_scale) + logit_bias,
  transposed to [images, texts], and their sigmoid.

Checked: text_ids.npy equal to HF's, text embeddings, every layer's full attention [n, L, H, 64, 64],
the image embeddings, logits and probabilities each within 1e-4; the refusals (no spiece.model:
the message names the path it looked at; a text over 64 tokens without --truncate), each one
`error:` line, exit 2, nothing written; --truncate's ids as HF's truncation; a SigLIP file with
its image tower alone still works, and refuses --text naming why; through hf: (the fake hub,
tests/pylib/fake_hub.py) the snapshot brings spiece.model, and a repository without one is
refused naming the snapshot's path; the image command's --top (each text's sigmoid) and --report
(the Prompts panel: sigmoid ranking, word bars, the unmasked text attention); <name>_words.csv
(--save-attention with texts): the tokens as their pieces with "▁" a space, the relevance
forward's at the last layer; a video with --top (each frame's texts by their sigmoid, against
torch on the frames as cv2 decodes them, and each frame's maps); `--labels FILE --templates
FILE`: the prompt ensemble through the SentencePiece ids, against torch_siglip_text's embeddings
averaged as OpenAI's zeroshot_classifier, and its logits.

Seen red: the causal mask left on (text embeddings off by 0.15, the truncated text's by 0.23);
CLIP's argmax row pooled instead of the last (text embeddings off by 0.43); the head's bias
dropped (0.022); logit_bias left out (logits off by 2.5); a softmax over the texts in place of
the sigmoid (probabilities off by 0.40; in the video path, frames' off by 0.59); the image tower's GELU in place of text_config's
(attention off by 4e-4); words.csv's start layer 0 in place of the last (off by 1.86); the
ensemble's prompts through CLIP's tokeniser (refused: ids outside the vocabulary).
"""
import shutil
from pathlib import Path

import numpy as np
import pytest

import harness
from harness import need, REPO

try:
    import torch
except ImportError as e:  # CI installs python3-torch (scripts/install-deps.sh)
    need(False, f"cannot import torch ({e}); install python3-torch")

from siglip_reference import (D, GRID, P, siglip_logits, siglip_tensors, TEXT_CONTEXT, TEXT_HEADS, TEXT_LAYERS,
                              text_model_folder, torch_siglip, torch_siglip_text, write_folder)
from siglip_tokenizer_reference import hf_ids

torch.set_grad_enabled(False)
TOL = 1e-4
TEXTS = ["a photo of a cat", "Two DOGS, playing in the snow!", "a small red car on the street near the river"]
LONG = " ".join(["mountain river"] * 45)  # over 64 pieces


@pytest.fixture(scope="module")
def siglip(tmp_path_factory):
    """(model.safetensors path, tensors, the SentencePiece processor as HF loads it)."""
    return text_model_folder(tmp_path_factory.mktemp("siglip"))


def photos():
    """Two photos as SiglipImageProcessor makes them at 32 px: RGB, resized, (x/255 − 0.5)/0.5, [2, 3, 32, 32]."""
    import cv2
    out = []
    for name in ("chelsea.png", "coffee.png"):
        bgr = cv2.imread(str(REPO / "images" / name), cv2.IMREAD_COLOR)
        rgb = cv2.resize(bgr, (GRID * P, GRID * P), interpolation=cv2.INTER_AREA)[:, :, ::-1]
        out.append(((rgb.astype(np.float32) / 255 - 0.5) / 0.5).transpose(2, 0, 1))
    return np.ascontiguousarray(np.stack(out), dtype=np.float32)


def forward(model, out, texts, *extra, image=None, expect=0):
    """`vitattn forward -v --model M --text …` [x.npy]; returns (code, stderr)."""
    args = ["forward", "-v", "--model", model, "-o", out, *extra]
    for t in texts:
        args += ["--text", t]
    if image is not None:
        np.save(out.parent / "x.npy", image)
        args.append(out.parent / "x.npy")
    code, _, err = harness.run(*args)
    assert code == expect, err[-3000:]
    return err


def one_error(err, *says):
    lines = [l for l in err.splitlines() if "error:" in l]
    assert len(lines) == 1 and all(s in lines[0] for s in says), err[-2000:]


def maxdiff(a, b):
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    assert a.shape == b.shape, (a.shape, b.shape)
    return float(np.abs(a - b).max())


def test_text_tower_against_torch(siglip, tmp_path):
    model, t, sp = siglip
    x = photos()
    log = forward(model, tmp_path / "o", TEXTS, image=x)
    assert f"text tower (siglip names): {TEXT_LAYERS} layers, W={D}, {TEXT_HEADS} heads (config.json's text_config)" \
        in log, log[-2000:]
    o = tmp_path / "o"
    ids = np.load(o / "text_ids.npy")
    want = np.array([hf_ids(sp, s) for s in TEXTS], np.int32)
    assert ids.dtype == np.int32 and ids.shape == (len(TEXTS), TEXT_CONTEXT), (ids.dtype, ids.shape)
    assert (ids == want).all(), (ids, want)
    ref_a, ref_e = torch_siglip_text(t, want)
    de = maxdiff(np.load(o / "text_embedding.npy"), ref_e)
    da = maxdiff(np.load(o / "text_attention.npy"), ref_a)  # every position: no mask, nothing left out
    assert de <= TOL, f"text embeddings off by {de:.3g}"
    assert da <= TOL, f"text attention off by {da:.3g}"
    image_e = np.stack([torch_siglip(t, img)["embedding"] for img in x])
    di = maxdiff(np.load(o / "x_embedding.npy"), image_e)
    assert di <= TOL, f"image embeddings off by {di:.3g}"
    logits, probs = siglip_logits(image_e, ref_e, t)
    dl = maxdiff(np.load(o / "x_logits.npy"), logits)
    dp = maxdiff(np.load(o / "x_probs.npy"), probs)
    assert dl <= TOL, f"logits off by {dl:.3g}"
    assert dp <= TOL, f"probabilities off by {dp:.3g}"
    assert np.ptp(probs) > 0.05, probs  # not all saturated: the sigmoid's values say something
    print(f"siglip text: embedding {de:.3g}, attention {da:.3g}, image {di:.3g}, logits {dl:.3g}, probs {dp:.3g}")


def test_truncate_and_too_long(siglip, tmp_path):
    model, t, sp = siglip
    assert isinstance(hf_ids(sp, LONG), tuple)  # over the context for HF too
    err = forward(model, tmp_path / "refused", [LONG], expect=2)
    one_error(err, "--text", "mountain river", "over the context of 64")
    assert not (tmp_path / "refused").exists() or not any((tmp_path / "refused").iterdir())
    forward(model, tmp_path / "cut", ["a cat", LONG], "--truncate")
    ids = np.load(tmp_path / "cut" / "text_ids.npy")
    assert (ids == np.array([hf_ids(sp, "a cat"), hf_ids(sp, LONG, truncate=True)], np.int32)).all(), ids
    _, ref_e = torch_siglip_text(t, ids)
    de = maxdiff(np.load(tmp_path / "cut" / "text_embedding.npy"), ref_e)
    assert de <= TOL, f"truncated text embeddings off by {de:.3g}"


def test_no_spiece_model(siglip, tmp_path):
    """The tokeniser's file missing: one line naming where it looked, before any image is read."""
    model, _, _ = siglip
    folder = tmp_path / "bare"
    folder.mkdir()
    for name in ("model.safetensors", "config.json"):
        shutil.copy(model.parent / name, folder / name)
    out = tmp_path / "o"
    err = forward(folder / "model.safetensors", out, ["a cat"], image=photos(), expect=2)
    one_error(err, "--text", str(folder / "spiece.model"), "SigLIP")
    assert not out.exists() or not any(out.iterdir())


def test_image_tower_alone(tmp_path):
    """A SigLIP file without its text tower works as before; --text on it says why not."""
    model = write_folder(tmp_path / "vision", siglip_tensors(seed=4, text_tower=False))
    x = photos()
    np.save(tmp_path / "x.npy", x)
    code, _, err = harness.run("forward", "--model", model, tmp_path / "x.npy", "-o", tmp_path / "o")
    assert code == 0, err
    assert (tmp_path / "o" / "x_embedding.npy").exists() and not (tmp_path / "o" / "x_logits.npy").exists()
    err = forward(model, tmp_path / "o2", ["a cat"], image=x, expect=2)
    one_error(err, "--text", "holds a SigLIP image tower without its text tower")


def test_through_the_hub(siglip, tmp_path):
    """hf:ORG/NAME: spiece.model comes with the snapshot, beside model.safetensors; a repository
    without it is refused in one line naming where it was looked for."""
    from fake_hub import Hub, hub_env
    model, t, sp = siglip
    files = {n: (model.parent / n).read_bytes() for n in ("model.safetensors", "config.json", "spiece.model")}
    hub = Hub()
    try:
        hub.add("acme/siglip", {"main": files})
        hub.add("acme/siglip-no-spiece", {"main": {n: b for n, b in files.items() if n != "spiece.model"}})
        env = hub_env({"HF_HUB_CACHE": str(tmp_path / "cache"), "HF_ENDPOINT": hub.endpoint})
        code, _, err = harness.run("forward", "--model", "hf:acme/siglip", "--text", TEXTS[0], "-o", tmp_path / "o",
                                   env=env)
        assert code == 0, err[-2000:]
        snapshots = list((tmp_path / "cache").glob("models--acme--siglip/snapshots/*/spiece.model"))
        assert len(snapshots) == 1, list((tmp_path / "cache").rglob("*"))
        ids = np.load(tmp_path / "o" / "text_ids.npy")
        assert (ids == np.array([hf_ids(sp, TEXTS[0])], np.int32)).all(), ids
        _, ref_e = torch_siglip_text(t, ids)
        assert maxdiff(np.load(tmp_path / "o" / "text_embedding.npy"), ref_e) <= TOL
        code, _, err = harness.run("forward", "--model", "hf:acme/siglip-no-spiece", "--text", TEXTS[0], "-o",
                                   tmp_path / "o2", env=env)
        assert code == 2, err[-2000:]
        snapshot = Path(next((tmp_path / "cache").glob("models--acme--siglip-no-spiece/snapshots/*")))
        one_error(err, "--text", str(snapshot / "spiece.model"))
    finally:
        hub.stop()


def test_words_csv_on_siglip(siglip, tmp_path):
    """The image command's <name>_words.csv on SigLIP (--save-attention with --text): per text the
    positions before its "</s>", each token its piece with "▁" a space (id_to_piece), each
    relevance forward's x_text_relevance.npy at the last layer for the same input (a photo of
    the model's own size: the input is the normalised pixels)."""
    import csv
    import cv2
    model, _, sp = siglip
    bgr = np.random.default_rng(9).integers(0, 256, (GRID * P, GRID * P, 3), dtype=np.uint8)
    cv2.imwrite(str(tmp_path / "photo.png"), bgr)
    x = ((bgr[:, :, ::-1].astype(np.float32) / 255 - 0.5) / 0.5).transpose(2, 0, 1)[None]
    forward(model, tmp_path / "fwd", TEXTS, image=np.ascontiguousarray(x, dtype=np.float32))
    relevance = np.load(tmp_path / "fwd" / "x_text_relevance.npy")[0]  # [texts, layers, ctx]
    args = ["--model", model, "-o", tmp_path / "img", "--save-attention", "--top", str(len(TEXTS)), "--report",
            tmp_path / "photo.png"]
    for t in TEXTS:
        args += ["--text", t]
    code, _, err = harness.run(*args)
    assert code == 0, err[-3000:]
    with open(tmp_path / "img" / "photo_words.csv", newline="", encoding="utf-8") as f:
        rows = list(csv.reader(f))
    assert rows[0] == ["text_index", "position", "token", "relevance"], rows[0]
    eos = sp.piece_to_id("</s>")
    want = []
    for t, text in enumerate(TEXTS):
        ids = hf_ids(sp, text, TEXT_CONTEXT)
        want += [(t, j, sp.id_to_piece(ids[j]).replace("\u2581", " ")) for j in range(ids.index(eos))]
    assert [(int(r[0]), int(r[1]), r[2]) for r in rows[1:]] == want
    for t in range(len(TEXTS)):
        got = np.array([float(r[3]) for r in rows[1:] if int(r[0]) == t])
        ref = relevance[t, TEXT_LAYERS - 1, [j for (tt, j, _) in want if tt == t]]
        assert np.abs(ref).max() > 0, f"text {t}: forward's relevance is all zeros"
        d = float(np.abs(got - ref).max() / np.abs(ref).max())
        assert d <= TOL, f"text {t}: words.csv off forward's relevance by {d:.3g} (relative)"
    check_siglip_ranking_and_report(tmp_path, rows, want, eos, sp)


def check_siglip_ranking_and_report(tmp_path, rows, want, eos, sp):
    """--top and the report's Prompts panel on SigLIP: each text's probability is the sigmoid of
    its own logit (forward's x_logits.npy, the sigmoid taken here), in predictions.csv and in
    the page; the page's word bars are words.csv's rows; its text attention view has no mask
    (said so) and is forward's text_attention.npy cropped to the words and the first </s>."""
    import csv
    import json
    import re
    logits = np.load(tmp_path / "fwd" / "x_logits.npy")[0].astype(np.float64)
    sigmoid = 1 / (1 + np.exp(-logits))
    with open(tmp_path / "img" / "photo_predictions.csv", newline="", encoding="utf-8") as f:
        top = {r["label"]: float(r["probability"]) for r in csv.DictReader(f)}
    for t, text in enumerate(TEXTS):
        assert abs(top[text] - sigmoid[t]) < 1e-6, f"predictions.csv: {text}: {top[text]}, sigmoid {sigmoid[t]}"
    html = (tmp_path / "img" / "photo_report.html").read_text(encoding="utf-8")
    data = json.loads(re.search(r'<script type="application/json" id="vitattn-data">(.*?)</script>', html, re.S).group(1))
    texts = data["texts"]
    assert texts["causal"] is False and texts["probability"] == "sigmoid"
    assert (texts["layers"], texts["heads"]) == (TEXT_LAYERS, TEXT_HEADS)
    attention = np.load(tmp_path / "fwd" / "text_attention.npy")  # [n, L, H, ctx, ctx]
    for t, (text, p) in enumerate(zip(TEXTS, texts["prompts"])):
        assert p["text"] == text and abs(p["probability"] - sigmoid[t]) < 1e-6
        mine = [r for r in rows[1:] if int(r[0]) == t]
        assert p["words"] == [r[2] for r in mine] and p["first_word"] == 0
        np.testing.assert_allclose(p["relevance"], [float(r[3]) for r in mine], rtol=1e-6, atol=1e-12)
        ids = hf_ids(sp, text, TEXT_CONTEXT)
        n = ids.index(eos) + 1  # the words and the first </s>
        assert p["tokens"] == [sp.id_to_piece(i).replace("\u2581", " ") for i in ids[:n]]
        got = np.frombuffer(__import__("base64").b64decode(p["attention"]), "<f4").reshape(TEXT_LAYERS, TEXT_HEADS, n, n)
        np.testing.assert_allclose(got, attention[t, :, :, :n, :n], rtol=0, atol=1e-6)
        assert np.triu(got[0, 0], 1).max() > 0, "no mask: later tokens are attended"


def test_video_top_is_each_frames_sigmoid(siglip, tmp_path):
    """`vitattn --model SIGLIP --text a --text b --top 2 clip.avi`: <name>_predictions.csv holds, per
    frame, both texts ranked by their sigmoid(exp(logit_scale)·cos(frame, text) + logit_bias), each
    computed here in torch (torch_siglip on the frame as cv2 decodes it, as SiglipImageProcessor
    normalises it; torch_siglip_text on HF's ids), not a softmax over the two; and every frame has
    its maps, one per text (clip_cls.npy with --save-attention, the attention video)."""
    import csv
    import cv2
    model, t, sp = siglip
    texts = TEXTS[:2]
    rng = np.random.default_rng(5)
    scene = rng.integers(0, 256, (GRID * P, GRID * P, 3), dtype=np.uint8)
    clip = tmp_path / "clip.avi"  # frames of the model's own size: no resize to agree on
    writer = cv2.VideoWriter(str(clip), cv2.CAP_FFMPEG, cv2.VideoWriter_fourcc(*"MJPG"), 5.0, (GRID * P, GRID * P))
    assert writer.isOpened(), "cv2 cannot write MJPG"
    for k in range(4):
        writer.write(np.roll(scene, 5 * k, axis=1))
    writer.release()
    args = ["--model", model, "--top", "2", "--save-attention", clip, "-o", tmp_path / "v"]
    for text in texts:
        args += ["--text", text]
    code, _, err = harness.run(*args)
    assert code == 0, err[-3000:]
    capture = cv2.VideoCapture(str(clip), cv2.CAP_FFMPEG)
    frames = []
    while True:
        ok, bgr = capture.read()
        if not ok:
            break
        frames.append(((bgr[:, :, ::-1].astype(np.float32) / 255 - 0.5) / 0.5).transpose(2, 0, 1))
    assert len(frames) == 4, len(frames)
    _, text_e = torch_siglip_text(t, np.array([hf_ids(sp, s) for s in texts], np.int32))
    image_e = np.stack([torch_siglip(t, f)["embedding"] for f in frames])
    logits, want = siglip_logits(image_e, text_e, t)  # [frames, texts]
    softmax = np.exp(logits) / np.exp(logits).sum(axis=1, keepdims=True)
    assert np.abs(softmax - want).max() > 0.1, "the frames' sigmoid and softmax must differ for the test to tell them apart"
    with open(tmp_path / "v" / "clip_predictions.csv", newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    assert [(int(r["frame"]), int(r["rank"])) for r in rows] == [(k, rank) for k in range(4) for rank in (1, 2)], rows
    got = np.zeros_like(want)
    for r in rows:
        assert r["label"] == texts[int(r["class"])], r
        got[int(r["frame"]), int(r["class"])] = float(r["probability"])
    for k in range(4):
        ranked = [int(r["class"]) for r in rows if int(r["frame"]) == k]
        assert ranked == sorted(range(2), key=lambda c: -want[k, c]), f"frame {k}: ranked {ranked}, sigmoid {want[k]}"
    d = maxdiff(got, want)
    assert d <= TOL, f"per-frame probabilities off the sigmoid by {d:.3g}: {got} against {want}"
    maps = np.load(tmp_path / "v" / "clip_cls.npy")
    assert maps.shape == (4, 2, GRID, GRID) and np.isfinite(maps).all(), maps.shape
    assert (maps.reshape(4, 2, -1).std(axis=2) > 0).all(), "a frame's map is flat"
    assert (tmp_path / "v" / "clip_attn.mp4").stat().st_size > 0


def test_labels_ensemble(siglip, tmp_path):
    """`forward --labels FILE --templates FILE` on SigLIP: each prompt tokenised with the model's
    own SentencePiece model (hf_ids), each class's embedding the normalised mean of its prompts'
    normalised torch_siglip_text embeddings (OpenAI's zeroshot_classifier), and the logits and
    sigmoid probabilities of the photos against them as SiglipModel computes them. A second
    run reads the cache; a CLIP-keyed or stale entry is never used since the key holds the
    tokeniser's file digest."""
    model, t, sp = siglip
    labels, templates = ["cat", "red car", "snowy river"], ["a photo of a {}.", "a blurry picture of the {}"]
    (tmp_path / "labels.txt").write_text("\n".join(labels) + "\n", encoding="utf-8")
    (tmp_path / "templates.txt").write_text("\n".join(templates) + "\n", encoding="utf-8")
    x = photos()
    env_cache = ["--labels", tmp_path / "labels.txt", "--templates", tmp_path / "templates.txt"]
    log = harness_forward_labels(model, tmp_path / "o", env_cache, x, tmp_path / "cache")
    classes = []
    for name in labels:
        ids = np.array([hf_ids(sp, tpl.format(name)) for tpl in templates], np.int32)
        _, e = torch_siglip_text(t, ids)
        e = np.asarray(e, np.float64)
        e /= np.linalg.norm(e, axis=1, keepdims=True)
        mean = e.mean(axis=0)
        classes.append(mean / np.linalg.norm(mean))
    classes = np.stack(classes)
    o = tmp_path / "o"
    de = maxdiff(np.load(o / "text_embedding.npy"), classes)
    assert de <= TOL, f"class embeddings off by {de:.3g}"
    image_e = np.stack([torch_siglip(t, img)["embedding"] for img in x])
    logits, probs = siglip_logits(image_e, classes, t)
    dl = maxdiff(np.load(o / "x_logits.npy"), logits)
    assert dl <= TOL, f"logits off by {dl:.3g}"
    assert "class embeddings computed" in log and "cached in" in log, log[-2000:]
    again = harness_forward_labels(model, tmp_path / "o2", env_cache, x, tmp_path / "cache")
    assert "class embeddings from the cache" in again, again[-2000:]
    assert (o / "text_embedding.npy").read_bytes() == (tmp_path / "o2" / "text_embedding.npy").read_bytes()


def harness_forward_labels(model, out, label_args, image, cache):
    """`vitattn forward -v --model M --labels … x.npy` with its cache in `cache`; returns stderr."""
    out.mkdir(parents=True, exist_ok=True)
    np.save(out / "x.npy", image)
    code, _, err = harness.run("forward", "-v", "--model", model, "-o", out, *label_args, out / "x.npy",
                               env={"XDG_CACHE_HOME": str(cache)})
    assert code == 0, err[-3000:]
    return err
