#!/usr/bin/python3
"""CLIP's text tower (`vitattn forward --text`) against a torch re-implementation of OpenAI's
CLIP.encode_text, on random weights saved in OpenAI's and in Hugging Face's names.

Run:  /usr/bin/python3 -m pytest tests/oracle/test_clip_text.py
      Skips when torch cannot be imported; under CI=true a skip fails.
Env:  VITATTN_BIN  binary to test (default <repo>/build/dev/vitattn)

The reference (tests/pylib/clip_reference.py openai_encode_text, float64, written from OpenAI's
clip/model.py): x = token_embedding(text) + positional_embedding; the transformer with
attn_mask = build_attention_mask() (−inf above the diagonal); ln_final; the row at text.argmax(-1)
@ text_projection; normalised. HF's CLIPTextTransformer is the same computation (causal mask, the
argmax's row, text_projection without bias); its file is the OpenAI tensors renamed. The token ids
are vitattn's own text_ids.npy (the tokeniser is checked against OpenAI's elsewhere); the image
embedding of the logits is the reference's openai_clip_forward / hf_clip_forward.

Checked: text embeddings within 1e-4, every layer's attention within 1e-4 on the computed rows
(0 … each text's end token) and exactly zero after them, the logits exp(logit_scale)·cos within
1e-4 (relative to the logit scale, 1/0.07), three texts of different lengths; heads width/64
(OpenAI, HF without config) and config.json's text_config.num_attention_heads (HF); the
refusals (no text tower, an empty text, a text over the context) one error line, exit 2.

The word relevance (x_text_relevance.npy, core/text_relevance.hpp) against the CLIP notebook of
Transformer-MM-Explainability (clip_reference.py openai_word_relevance: torch autograd through
encode_text to each layer's attention probabilities, R ← R + mean_h((∇A ⊙ A).clamp(min=0))·R
from the start layer, R[EOT, 1:EOT]): 3 texts × 2 images × both start layers of the 2-layer
tower (−1, the notebook's default, and 0), within 1e-4 relative to each text's largest value;
zeros at SOT, EOT and after.

Seen red: the causal mask left out (text embeddings off by 0.38 and 0.26); the end token taken
at the last position instead of the argmax (text embeddings off by 0.65).
"""
import json

import numpy as np

import harness
import safetensors_io
from harness import need

try:
    import torch
except ImportError as e:  # CI installs python3-torch (scripts/install-deps.sh)
    need(False, f"cannot import torch ({e}); install python3-torch")

from clip_reference import (as_torch, clip_logits, CONTEXT, D, EMBED, GRID, HEADS, hf_clip_forward, hf_names,
                            hf_text_names, images, LAYERS, MLP, openai_clip_forward, openai_encode_text,
                            openai_tensors, openai_text_tensors, openai_word_relevance, P, SQUARE, TEXT_LAYERS,
                            TEXT_W, text_tower)

torch.set_grad_enabled(False)
TOL = 1e-4
SOT, EOT = 49406, 49407
TEXTS = ["a photo of a cat", "diagram",
         "an oil painting of a lighthouse on a rocky coast at dusk, with gulls, waves and a small red boat"]


def run_text(model, out, *extra, image=None, heads=True):
    """`vitattn forward -v --text …` (with an image tensor when given); returns (outputs, stderr)."""
    out.mkdir(exist_ok=True)
    args = ["forward", "-v", "--model", model, "-o", out, *extra]
    for t in TEXTS:
        args += ["--text", t]
    if heads:
        args += ["--heads", str(HEADS)]
    if image is not None:
        np.save(out / "x.npy", image)
        args.append(out / "x.npy")
    code, _, stderr = harness.run(*args)
    assert code == 0, stderr[-3000:]
    got = {k: np.load(out / f"text_{k}.npy") for k in ("ids", "embedding", "attention")}
    if image is not None:
        got["logits"], got["image_embedding"] = np.load(out / "x_logits.npy"), np.load(out / "x_embedding.npy")
    return got, stderr


def check_text(got, t, heads):
    """The bounds of the module comment; returns the max abs differences seen."""
    ids = got["ids"]
    assert ids.dtype == np.int32 and ids.shape == (len(TEXTS), CONTEXT), (ids.dtype, ids.shape)
    assert (ids[:, 0] == SOT).all() and ((ids == EOT).sum(1) == 1).all(), ids
    ref_a, ref_e = openai_encode_text(as_torch(t), torch.from_numpy(ids.astype(np.int64)), heads)
    assert got["embedding"].shape == ref_e.shape and got["attention"].shape == ref_a.shape, got["attention"].shape
    de = np.abs(got["embedding"] - ref_e).max()
    assert de <= TOL, f"text embeddings off by {de:.3g}"
    da = 0.0
    for n, row in enumerate(ids):
        length = int(np.argmax(row)) + 1
        a = got["attention"][n]
        da = max(da, float(np.abs(a[..., :length, :length] - ref_a[n, ..., :length, :length]).max()))
        assert not a[..., length:, :].any() and not a[..., :, length:].any(), f"text {n}: non-zero after its end token"
    assert da <= TOL, f"text attention off by {da:.3g}"
    lengths = sorted(int(np.argmax(r)) + 1 for r in ids)
    assert lengths[0] < lengths[1] < lengths[2], lengths
    return de, da


def test_openai_whole_state_dict(tmp_path):
    """visual.* and the text tower at the top: embeddings, attention and logits with an image."""
    image_t, text_t = openai_tensors(seed=1), openai_text_tensors(seed=11)
    path = tmp_path / "clip.safetensors"
    safetensors_io.write(path, {"visual." + k: v for k, v in image_t.items()} | text_t)
    x = images(SQUARE, n=2)
    got, log = run_text(path, tmp_path / "o", image=x)
    assert f"text tower (clip names): {TEXT_LAYERS} layers, W={TEXT_W}, 2 heads (width / 64)" in log, log[-2000:]
    assert "token_embedding" not in log and "outside the encoder" not in log, log[-2000:]  # read, so not outside
    de, da = check_text(got, text_t, heads=TEXT_W // 64)
    _, image_e = openai_clip_forward(as_torch(image_t), torch.from_numpy(x.astype(np.float64)))
    assert np.abs(got["image_embedding"] - image_e).max() <= TOL
    _, text_e = openai_encode_text(as_torch(text_t), torch.from_numpy(got["ids"].astype(np.int64)), TEXT_W // 64)
    ref = clip_logits(image_e, text_e, text_t["logit_scale"])
    assert got["logits"].shape == (2, len(TEXTS)), got["logits"].shape
    dl = np.abs(got["logits"] - ref).max()
    assert dl <= TOL * np.exp(text_t["logit_scale"]), f"logits off by {dl:.3g}"
    print(f"openai: embedding {de:.3g}, attention {da:.3g}, logits {dl:.3g}")


def test_hf_clip_model(tmp_path):
    """CLIPModel's names: without config (width / 64 heads), and with config.json's text_config's 4 heads."""
    image_t, text_t = openai_tensors(seed=7), openai_text_tensors(seed=12)
    path = tmp_path / "bare" / "model.safetensors"
    path.parent.mkdir()
    safetensors_io.write(path, hf_names(image_t) | hf_text_names(text_t))
    got, log = run_text(path, tmp_path / "o1")
    assert "text tower (hf-clip names)" in log, log[-2000:]
    de1, da1 = check_text(got, text_t, heads=TEXT_W // 64)
    folder = tmp_path / "snap"
    folder.mkdir()
    (folder / "model.safetensors").write_bytes(path.read_bytes())
    (folder / "config.json").write_text(json.dumps({
        "architectures": ["CLIPModel"], "model_type": "clip", "projection_dim": EMBED,
        "text_config": {"hidden_size": TEXT_W, "num_attention_heads": 4, "max_position_embeddings": CONTEXT},
        "vision_config": {"hidden_size": D, "intermediate_size": MLP, "num_attention_heads": HEADS,
                          "num_hidden_layers": LAYERS, "image_size": GRID * P, "patch_size": P,
                          "hidden_act": "quick_gelu", "layer_norm_eps": 1e-5}}))
    x = images(SQUARE)
    got, log = run_text(folder / "model.safetensors", tmp_path / "o2", image=x, heads=False)
    assert "4 heads (config.json's text_config)" in log, log[-2000:]
    de2, da2 = check_text(got, text_t, heads=4)
    _, image_e = hf_clip_forward(as_torch(hf_names(image_t)), torch.from_numpy(x.astype(np.float64)))
    _, text_e = openai_encode_text(as_torch(text_t), torch.from_numpy(got["ids"].astype(np.int64)), 4)
    dl = np.abs(got["logits"] - clip_logits(image_e, text_e, text_t["logit_scale"])).max()
    assert dl <= TOL * np.exp(text_t["logit_scale"]), f"logits off by {dl:.3g}"
    print(f"hf: embedding {max(de1, de2):.3g}, attention {max(da1, da2):.3g}, logits {dl:.3g}")


def test_text_only_and_refusals(tmp_path):
    """--text without tensors writes the text files only; no text tower, an empty text and a text
    over the context are one error line each, exit 2, naming the file or the text."""
    text_t = openai_text_tensors(seed=13)
    whole = tmp_path / "clip.safetensors"
    safetensors_io.write(whole, {"visual." + k: v for k, v in openai_tensors(seed=2).items()} | text_t)
    code, _, err = harness.run("forward", "--model", whole, "--text", "a dog", "--heads", str(HEADS), "-o", tmp_path / "o")
    assert code == 0, err
    assert sorted(p.name for p in (tmp_path / "o").iterdir()) == ["text_attention.npy", "text_embedding.npy", "text_ids.npy"]
    visual = tmp_path / "visual.safetensors"
    safetensors_io.write(visual, {"visual." + k: v for k, v in openai_tensors(seed=2).items()})
    long_text = " ".join(["lighthouse"] * 80)
    narrow = tmp_path / "narrow.safetensors"  # a 32-wide text tower, no config: no head count (images still work)
    safetensors_io.write(narrow, {"visual." + k: v for k, v in openai_tensors(seed=2).items()} | text_tower())
    for model, text, says in ((visual, "a dog", "visual.safetensors holds a CLIP image tower without its text tower"),
                              (narrow, "a dog", "not a multiple of 64"),
                              (whole, "  ", "empty text"), (whole, long_text, "lighthouse")):
        code, _, err = harness.run("forward", "--model", model, "--text", text, "--heads", str(HEADS), "-o",
                                   tmp_path / "refused")
        lines = [l for l in err.splitlines() if "error:" in l]
        assert code == 2 and len(lines) == 1 and says in lines[0], (code, err)
        assert not (tmp_path / "refused").exists() or not any((tmp_path / "refused").iterdir())


def test_truncate(tmp_path):
    """--truncate cuts a text over the context as clip.tokenize(truncate=True): its first 77 ids
    (SOT and 76 of the text's), the last made EOT; the embedding is the reference's on those ids."""
    text_t = openai_text_tensors(seed=14)
    whole = tmp_path / "clip.safetensors"
    safetensors_io.write(whole, {"visual." + k: v for k, v in openai_tensors(seed=2).items()} | text_t)
    code, _, err = harness.run("forward", "--model", whole, "--text", "lighthouse", "--text", " ".join(["lighthouse"] * 80),
                               "--truncate", "--heads", str(HEADS), "-o", tmp_path / "o")
    assert code == 0, err
    ids = np.load(tmp_path / "o" / "text_ids.npy")
    word = ids[0, 1]  # "lighthouse" alone: SOT, its one id, EOT
    assert list(ids[0, :3]) == [SOT, word, EOT], ids[0, :4]
    assert ids[1, 0] == SOT and (ids[1, 1:CONTEXT - 1] == word).all() and ids[1, CONTEXT - 1] == EOT, ids[1]
    _, ref_e = openai_encode_text(as_torch(text_t), torch.from_numpy(ids.astype(np.int64)), TEXT_W // 64)
    de = np.abs(np.load(tmp_path / "o" / "text_embedding.npy") - ref_e).max()
    assert de <= TOL, f"truncated text embeddings off by {de:.3g}"


def test_word_relevance(tmp_path):
    """x_text_relevance.npy [N, n, layers, ctx] against the notebook's R_text[EOT, 1:EOT], per start layer."""
    image_t, text_t = openai_tensors(seed=3), openai_text_tensors(seed=14)
    path = tmp_path / "clip.safetensors"
    safetensors_io.write(path, {"visual." + k: v for k, v in image_t.items()} | text_t)
    x = images(SQUARE, n=2, seed=5)
    got, _ = run_text(path, tmp_path / "o", image=x)
    relevance = np.load(tmp_path / "o" / "x_text_relevance.npy")
    assert relevance.shape == (2, len(TEXTS), TEXT_LAYERS, CONTEXT), relevance.shape
    _, image_e = openai_clip_forward(as_torch(image_t), torch.from_numpy(x.astype(np.float64)))
    ids = torch.from_numpy(got["ids"].astype(np.int64))
    worst = 0.0
    for i in range(2):
        for start, s in ((-1, TEXT_LAYERS - 1), (0, 0)):
            ref = openai_word_relevance(as_torch(text_t), ids, TEXT_W // 64, image_e[i], start)
            for t, r in enumerate(ref):
                eot = int(got["ids"][t].argmax())
                row = relevance[i, t, s]
                assert len(r) == eot - 1 and (len(r) == 1 or np.ptp(r) > 1e-2), r  # values that tell words apart
                d = float(np.abs(row[1:eot] - r).max() / np.abs(r).max())
                assert d <= TOL, f"image {i}, text {t}, start layer {start}: relevance off by {d:.3g} (relative)"
                assert row[0] == 0 and not row[eot:].any(), f"image {i}, text {t}: non-zero at SOT, EOT or after"
                worst = max(worst, d)
    print(f"word relevance: {worst:.3g} relative")
