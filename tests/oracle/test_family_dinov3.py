#!/usr/bin/python3
"""DINOv3 ViTs against a torch re-implementation written here from the reference code.

Run:  /usr/bin/python3 -m pytest tests/oracle/test_family_dinov3.py
Env:  VITATTN_BIN  binary to test (default <repo>/build/dev/vitattn)

Which reference each part of `reference()` follows (facebookresearch/dinov3, read for this test):
  - tokens [cls, 4 storage, patches]: models/vision_transformer.py DinoVisionTransformer.prepare_tokens_with_masks
    (no position table; the mask token is unused at inference)
  - RoPE coordinates, periods, sin/cos layout: layers/rope_position_encoding.py RopePositionEmbedding.forward
    (normalize_coords="separate", eval: no shift/jitter/rescale) and ._init_weights (base 100)
  - rotation of q and k, patches only (not cls/storage): layers/attention.py rope_apply, rope_rotate_half,
    SelfAttention.apply_rope / compute_attention
  - the qkv bias with its key third masked: layers/attention.py LinearKMaskedBias (bias * bias_mask)
  - block: layers/block.py SelfAttentionBlock._forward (x + ls1(attn(norm1 x)), + ls2(mlp(norm2 x))),
    layers/layer_scale.py LayerScale, layers/ffn_layers.py Mlp (GELU erf)
  - final norm over every token: DinoVisionTransformer.forward_features_list; ε 1e-5 (hub backbones' "layernormbf16")
Hugging Face's transformers/models/dinov3_vit/modeling_dinov3_vit.py (DINOv3ViTRopePositionEmbedding, inv_freq =
1/base^(4k/d_head); apply_rotary_pos_emb; k_proj without bias) computes the same, so one reference serves both
namings; the HF files here hold the same weights under HF's names (key bias dropped: masked to zero anyway).

Checks: attention of every layer within 1e-5 and the final tokens within 1e-4 (relative to max(1, |ref|)) at the
native size and at a non-square size, for facebookresearch names (safetensors and .pth) and HF names (with
config.json's model_type and rope_theta); detection by names, --family, the image views, the refusals. Each
planted mistake (RoPE on the class token, interleaved rotation, the key bias unmasked) is shown to move the
reference by far more than the tolerance, so a vitattn with that mistake fails the checks.
"""

import tempfile
from pathlib import Path

import numpy as np
import pytest

import harness
import safetensors_io
from harness import need

try:
    import torch
except ImportError as e:  # CI installs python3-torch
    need(False, f"cannot import torch ({e})")

from dinov3_reference import (D, HEADS, hf_folder, HF_IMAGE_SIZE, hf_weights, LAYERS, make_photo,
                              make_weights, MLP, P, preprocess, reference, REGS, to_hf, write_st)

ATTN_TOL = 1e-5
REL_TOL = 1e-4


# --------------------------------------------------------------------------- checks


def check_forward(out_dir, stem, x, w, heads=HEADS):
    """vitattn's _attention.npy and _tokens.npy for input x against the float64 reference."""
    attn_ref, tok_ref = reference(w, x, heads)
    attn = np.load(out_dir / f"{stem}_attention.npy")[0]  # [L, heads, T, T]
    tokens = np.load(out_dir / f"{stem}_tokens.npy")[0]   # [T, D]
    assert attn.shape == attn_ref.shape, (attn.shape, attn_ref.shape)
    da = np.abs(attn - attn_ref).max()
    dt = np.abs(tokens - tok_ref).max() / max(1.0, np.abs(tok_ref).max())
    assert da <= ATTN_TOL, f"{stem}: attention off by {da:.3g}"
    assert dt <= REL_TOL, f"{stem}: tokens off by {dt:.3g} (relative)"
    return attn_ref, da, dt


@pytest.fixture(scope="module")
def tmp():
    with tempfile.TemporaryDirectory() as d:
        yield Path(d)


@pytest.fixture(scope="module")
def inputs(tmp):
    g = torch.Generator().manual_seed(1)
    native = torch.randn(3, 64, 64, generator=g)   # 8 × 8 patches
    other = torch.randn(3, 48, 80, generator=g)    # 6 × 10 patches, not square
    np.save(tmp / "native.npy", native.numpy())
    np.save(tmp / "other.npy", other.numpy())
    return {"native": native, "other": other}


def test_planted_mistakes_move_the_reference(inputs):
    """Each mistake changes the attention by far more than the tolerance: vitattn making it fails."""
    w = make_weights()
    right, _ = reference(w, inputs["other"])
    for mistake in ("rope_on_cls", "interleaved", "unmasked_key_bias"):
        wrong, _ = reference(w, inputs["other"], mistake=mistake)
        gap = np.abs(wrong - right).max()
        assert gap > 100 * ATTN_TOL, f"{mistake} moves the attention by only {gap:.3g}"


def test_facebookresearch_names(tmp, inputs):
    w = make_weights()
    st = tmp / "dinov3.safetensors"
    write_st(st, w)
    out = tmp / "out_fb"
    _, _, err = harness.run("forward", "-v", "--model", st, tmp / "native.npy", tmp / "other.npy", "-o", out, expect=0)
    assert "family dinov3" in err, err[-2000:]
    for stem in ("native", "other"):
        _, da, dt = check_forward(out, stem, inputs[stem], w)
        print(f"dinov3 {stem}: attention {da:.2g}, tokens {dt:.2g}")
    assert not (out / "native_logits.npy").exists()


def test_pth_and_family_flag(tmp, inputs):
    w = make_weights(seed=5)
    pth = tmp / "dinov3.pth"
    torch.save({k: v.clone() for k, v in w.items()}, pth)
    out = tmp / "out_pth"
    _, _, err = harness.run("forward", "-v", "--family", "dinov3", "--model", pth, tmp / "other.npy", "-o", out,
                            expect=0)
    assert "family dinov3" in err
    check_forward(out, "other", inputs["other"], w)


def test_bf16_storage(tmp, inputs):
    """BF16 weights (the periods too): the reference runs on the values the file stores."""
    w = make_weights(seed=9)
    st = tmp / "dinov3_bf16.safetensors"
    safetensors_io.write(st, {k: v.numpy().astype(np.float32) for k, v in w.items()}, dtype="BF16")
    stored = {k: v.to(torch.bfloat16).to(torch.float32) for k, v in w.items()}
    out = tmp / "out_bf16"
    harness.run("forward", "--model", st, tmp / "other.npy", "-o", out, expect=0)
    check_forward(out, "other", inputs["other"], stored)


def test_hf_names_and_config(tmp, inputs):
    folder = tmp / "hf"
    hf_folder(folder)
    w = hf_weights()
    out = tmp / "out_hf"
    _, _, err = harness.run("forward", "-v", "--model", folder / "model.safetensors", tmp / "native.npy",
                            tmp / "other.npy", "-o", out, expect=0)
    assert "family hf-dinov3" in err and "config.json" in err, err[-2000:]
    for stem in ("native", "other"):
        check_forward(out, stem, inputs[stem], w)
    # Without config.json the periods are base 100's: the file alone is another model.
    bare = tmp / "hf_bare.safetensors"
    write_st(bare, to_hf(w))
    out2 = tmp / "out_hf_bare"
    harness.run("forward", "--family", "hf-dinov3", "--model", bare, tmp / "other.npy", "-o", out2, expect=0)
    gap = np.abs(np.load(out2 / "other_attention.npy")[0] - reference(w, inputs["other"])[0]).max()
    assert gap > 100 * ATTN_TOL, f"rope_theta from config.json made no difference ({gap:.3g})"


def test_image_views(tmp):
    folder = tmp / "hf_views"
    made = hf_folder(folder)
    model, image = folder / "model.safetensors", made["image"]
    first = 1 + REGS
    g = HF_IMAGE_SIZE // P
    out = tmp / "views_default"
    harness.run("--model", model, "--save-attention", "-o", out, image, expect=0)
    a, c = np.load(out / f"{image.stem}_attn.npy"), np.load(out / f"{image.stem}_cls.npy")
    want = made["attention_last"]
    assert np.abs(a - want).max() <= ATTN_TOL
    assert c.shape == (g, g) and np.abs(c - want.mean(0)[0, first:].reshape(g, g)).max() <= ATTN_TOL
    # --layer, --head, --rollout, --threshold, --img-size non-square, --keep-aspect, --report
    for tag, args in (("layer_head", ["--layer", "1", "--head", "2"]), ("rollout", ["--rollout"]),
                      ("threshold", ["--threshold", "0.5"]), ("size", ["--img-size", "48"]),
                      ("aspect", ["--img-size", "48", "--keep-aspect"]), ("report", ["--report"])):
        harness.run("--model", model, *args, "--save-attention", "-o", tmp / f"views_{tag}", image, expect=0)
    w = hf_weights()
    ref_layer1 = reference(w, preprocess(image, HF_IMAGE_SIZE, HF_IMAGE_SIZE))[0][1]
    c = np.load(tmp / "views_layer_head" / f"{image.stem}_cls.npy")
    assert np.abs(c - ref_layer1[2, 0, first:].reshape(g, g)).max() <= ATTN_TOL
    # keep-aspect on an 88 × 56 photo: shorter side 48, longer round(48·88/56/8)·8 = 72
    c = np.load(tmp / "views_aspect" / f"{image.stem}_cls.npy")
    assert c.shape == (6, 9), c.shape
    ref = reference(w, preprocess(image, 72, 48))[0][-1]
    assert np.abs(c - ref.mean(0)[0, first:].reshape(6, 9)).max() <= ATTN_TOL
    assert any((tmp / "views_report").glob("*.html"))


def test_video(tmp):
    """A clip's frames: one class map per frame, frame 0's the reference's on the frame as decoded."""
    import cv2
    folder = tmp / "hf_video"
    hf_folder(folder)
    clip = tmp / "clip.avi"
    writer = cv2.VideoWriter(str(clip), cv2.CAP_FFMPEG, cv2.VideoWriter_fourcc(*"MJPG"), 5.0, (64, 64))
    assert writer.isOpened()
    photo = cv2.imread(str(make_photo(tmp / "v_photo.png", 64, 64)))
    for t in range(3):
        writer.write(np.roll(photo, 8 * t, axis=1))
    writer.release()
    cap = cv2.VideoCapture(str(clip))
    ok, frame0 = cap.read()
    cap.release()
    assert ok
    cv2.imwrite(str(tmp / "frame0.png"), frame0)
    out = tmp / "video_out"
    harness.run("--model", folder / "model.safetensors", "--save-attention", "-o", out, clip, expect=0)
    maps = np.load(out / "clip_cls.npy")
    assert maps.shape == (3, 8, 8), maps.shape
    ref = reference(hf_weights(), preprocess(tmp / "frame0.png", 64, 64))[0][-1]
    assert np.abs(maps[0] - ref.mean(0)[0, 1 + REGS:].reshape(8, 8)).max() <= ATTN_TOL


def test_refusals(tmp):
    w = make_weights()
    st = tmp / "dinov3_r.safetensors"
    write_st(st, w)
    photo = make_photo(tmp / "r_photo.png")
    code, _, err = harness.run("--model", st, "--top", "3", "-o", tmp / "r_out", photo)
    assert code == 2 and err.count("error:") == 1, (code, err)
    code, _, err = harness.run("--model", st, "--method", "chefer", "-o", tmp / "r_out", photo)
    assert code == 2 and "no classifier" in err and err.count("error:") == 1, (code, err)
    # A SwiGLU variant: named, refused before any work
    sw = dict(w)
    for i in range(LAYERS):
        b = f"blocks.{i}.mlp."
        for k in ("fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias"):
            sw.pop(b + k)
        sw.update({b + "w1.weight": torch.zeros(MLP, D), b + "w2.weight": torch.zeros(MLP, D),
                   b + "w3.weight": torch.zeros(D, MLP)})
    st2 = tmp / "dinov3_swiglu.safetensors"
    write_st(st2, sw)
    code, _, err = harness.run("--model", st2, "-o", tmp / "r_out2", photo)
    assert code == 2 and "SwiGLU" in err and err.count("error:") == 1, (code, err)
