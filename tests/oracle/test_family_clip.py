#!/usr/bin/python3
"""CLIP's image towers (families "clip" and "hf-clip") against torch re-implementations of their
libraries' forwards, on random weights saved in each library's own names.

Run:  /usr/bin/python3 -m pytest tests/oracle/test_family_clip.py
      Skips when torch cannot be imported; under CI=true a skip fails.
Env:  VITATTN_BIN  binary to test (default <repo>/build/dev/vitattn)

Nothing here comes from vitattn. The references, written here from the libraries' code, in float64:

  openai_clip_forward  OpenAI CLIP clip/model.py VisionTransformer.forward: conv1 (no bias) →
      [class_embedding; patches] + positional_embedding → ln_pre → transformer (each
      ResidualAttentionBlock: x + attn(ln_1(x)) with torch's nn.MultiheadAttention on the packed
      in_proj_weight, then x + mlp(ln_2(x)), mlp = c_fc → QuickGELU (x·σ(1.702x)) → c_proj) →
      ln_post(x[:, 0]) @ proj. open_clip src/open_clip/transformer.py VisionTransformer is the
      same at these settings (ln_post on every token then _global_pool "tok" takes token 0;
      final_ln_after_pool False); its positions at another grid: open_clip's resize_pos_embed
      (F.interpolate bicubic, antialias=True, align_corners=False, on the patch rows only).
  hf_clip_forward  Hugging Face transformers models/clip/modeling_clip.py: CLIPVisionEmbeddings
      (patch_embedding without bias, class_embedding, position_embedding; interpolate_pos_encoding:
      bicubic, size=(h/P, w/P), align_corners=False, no antialias), CLIPVisionTransformer
      (pre_layrnorm, CLIPEncoderLayer: layer_norm1, CLIPAttention q_proj/k_proj/v_proj with
      scale head_dim**-0.5 and eager softmax, out_proj, layer_norm2, CLIPMLP fc1 → ACT2FN[hidden_act]
      → fc2; pooled = post_layernorm(last_hidden_state[:, 0])), CLIPVisionModelWithProjection
      (visual_projection, no bias); the embedding L2-normalised as CLIPModel.forward does.

Checked, through `vitattn forward` (.npy inputs, every layer's attention and the embedding): the
attention of every layer within 1e-5 and the embedding within 1e-4, at the trained 4×4 grid and
a 3×5 grid; an OpenAI/OpenCLIP state dict with its text tower (safetensors and .pth); a
`visual.`-only export without the prefix in BF16; an HF CLIPVisionModelWithProjection file with
config.json (its hidden_act followed); detection by names, by --family, by config.json's
model_type; --top refused in one line naming the text tower.

Seen red: GELU (erf) instead of QuickGELU as the "clip" default (attention of layer 1 and the
embedding off); the projection read untransposed (the [D, E] proj taken as [E, D]: refused as a
shape error, D ≠ E here; the unit test goes red too); ln_pre left out (every layer's attention off); HF
CLIP's positions resampled with antialias (open_clip's way) instead of HF's (the 3×5 grid off).
"""


import numpy as np

import harness
import safetensors_io
from harness import need

try:
    import torch
    import torch.nn.functional as F
except ImportError as e:  # CI installs python3-torch (scripts/install-deps.sh)
    need(False, f"cannot import torch ({e}); install python3-torch")

from clip_reference import (as_torch, bf16_rounded, GRID, HEADS, hf_clip_forward, hf_folder, hf_names,
                            hf_text_tower, images, LAYERS, openai_clip_forward, openai_tensors, SQUARE,
                            text_tower, WIDE)

torch.set_grad_enabled(False)
ATTN_TOL = 1e-5   # absolute, attention probabilities
EMBED_TOL = 1e-4  # absolute, the L2-normalised embedding


def run_forward(model, inputs, out, *extra, heads=True):
    """`vitattn forward -v` on {name: array} inputs (with --heads 3 unless `heads` is False: CLIP's
    files do not say, and 48 is no multiple of 64); returns ({name: (attention, embedding)}, stderr)."""
    out.mkdir(exist_ok=True)
    paths = []
    for name, x in inputs.items():
        np.save(out / f"{name}.npy", x)
        paths.append(out / f"{name}.npy")
    extra = (*extra, "--heads", str(HEADS)) if heads else extra
    code, stdout, stderr = harness.run("forward", "-v", "--model", model, *paths, "-o", out, *extra)
    assert code == 0, stderr[-3000:]
    return {name: (np.load(out / f"{name}_attention.npy"), np.load(out / f"{name}_embedding.npy"))
            for name in inputs}, stderr


def check_against(results, reference):
    """results: run_forward's; reference: {name: (attention, embedding)}; the bounds of the module comment."""
    for name, (attention, embedding) in results.items():
        ref_a, ref_e = reference[name]
        assert attention.shape == ref_a.shape, (name, attention.shape, ref_a.shape)
        assert embedding.shape == ref_e.shape, (name, embedding.shape, ref_e.shape)
        da, de = np.abs(attention - ref_a).max(), np.abs(embedding - ref_e).max()
        assert da <= ATTN_TOL, f"{name}: attention off by {da:.3g} (layer by layer: " \
            f"{[float(np.abs(attention[:, l] - ref_a[:, l]).max()) for l in range(LAYERS)]})"
        assert de <= EMBED_TOL, f"{name}: embedding off by {de:.3g}"


def both_grids(forward_fn, t):
    inputs = {"square": images(SQUARE, n=2), "wide": images(WIDE)}
    ref = {k: forward_fn(t, torch.from_numpy(x.astype(np.float64))) for k, x in inputs.items()}
    return inputs, ref


def test_openai_state_dict_with_text_tower(tmp_path):
    """A whole CLIP state dict (visual.* + the text tower) as safetensors and as a torch.save .pth:
    found by names as "clip", the text tower left outside, QuickGELU, CLIP's normalisation."""
    t = openai_tensors(seed=1)
    whole = {"visual." + k: v for k, v in t.items()} | text_tower()
    st = tmp_path / "clip.safetensors"
    safetensors_io.write(st, whole)
    inputs, ref = both_grids(openai_clip_forward, as_torch(t))
    results, log = run_forward(st, inputs, tmp_path / "st")
    assert "family clip prefix visual." in log, log[-2000:]
    assert "token_embedding.weight" in log and "QuickGELU" in log and "the erf form" in log, log[-2000:]
    assert "mean 0.481455,0.457828,0.408211 std 0.26863,0.261303,0.275777" in log, log[-2000:]
    check_against(results, ref)
    pth = tmp_path / "clip.pth"
    torch.save({k: torch.from_numpy(v) for k, v in whole.items()}, pth)
    results, _ = run_forward(pth, {"square": inputs["square"]}, tmp_path / "pth")
    check_against(results, ref)


def test_visual_only_export_bf16(tmp_path):
    """The image tower alone, without the "visual." prefix, in BF16; the reference on the same rounded values."""
    t = bf16_rounded(openai_tensors(seed=2))
    path = tmp_path / "visual.safetensors"
    safetensors_io.write(path, t, dtype="BF16")
    inputs, ref = both_grids(openai_clip_forward, as_torch(t))
    results, log = run_forward(path, inputs, tmp_path / "o")
    assert "family clip:" in log, log[-2000:]
    check_against(results, ref)


def test_gelu_override_for_openclip(tmp_path):
    """OpenCLIP's non-quickgelu models: --gelu erf against the reference with nn.GELU."""
    t = openai_tensors(seed=3)
    path = tmp_path / "openclip.safetensors"
    safetensors_io.write(path, {"visual." + k: v for k, v in t.items()})
    inputs, ref = both_grids(lambda tt, x: openai_clip_forward(tt, x, act=F.gelu), as_torch(t))
    results, _ = run_forward(path, inputs, tmp_path / "o", "--gelu", "erf")
    check_against(results, ref)


def test_hf_clip_with_projection(tmp_path):
    """CLIPVisionModelWithProjection's names, found by names (no config) and through config.json,
    whose hidden_act ("gelu" here, not the family's QuickGELU) is followed."""
    t = hf_names(openai_tensors(seed=5))
    bare = tmp_path / "bare"
    bare.mkdir()
    safetensors_io.write(bare / "model.safetensors", t)
    inputs, ref = both_grids(hf_clip_forward, as_torch(t))
    results, log = run_forward(bare / "model.safetensors", inputs, tmp_path / "o1")
    assert "family hf-clip prefix vision_model." in log, log[-2000:]
    check_against(results, ref)
    folder = tmp_path / "snap"
    hf_folder(folder, hidden_act="gelu", seed=5)
    inputs, ref = both_grids(lambda tt, x: hf_clip_forward(tt, x, act=F.gelu), as_torch(t))
    results, log = run_forward(folder / "model.safetensors", inputs, tmp_path / "o2", heads=False)
    assert "config.json" in log and "family hf-clip" in log and "GELU erf" in log, log[-2000:]
    check_against(results, ref)


def test_hf_clip_model_whole(tmp_path):
    """A whole CLIPModel file (text_model.*, text_projection, a 0-d logit_scale, int64 position_ids
    buffers as older transformers saved them): the image tower read, the rest left outside."""
    t = hf_names(openai_tensors(seed=7))
    whole = t | hf_text_tower() | {"vision_model.embeddings.position_ids": np.arange(1 + GRID * GRID, dtype=np.int64)[None]}
    path = tmp_path / "model.safetensors"
    safetensors_io.write(path, whole)
    inputs, ref = both_grids(hf_clip_forward, as_torch(t))
    results, log = run_forward(path, inputs, tmp_path / "o")
    assert "family hf-clip prefix vision_model." in log and "logit_scale, text_model." in log, log[-2000:]
    check_against(results, ref)


def test_hf_folder_reference(tmp_path):
    """hf_folder's own numbers (which the cross-family hub test reuses) are what vitattn computes."""
    made = hf_folder(tmp_path / "snap")
    results, _ = run_forward(tmp_path / "snap" / "model.safetensors", {"x": made["image"][None]}, tmp_path / "o",
                             heads=False)
    attention, embedding = results["x"]
    assert np.abs(attention[0, -1] - made["attention_last"]).max() <= ATTN_TOL
    assert np.abs(embedding[0] - made["embedding"]).max() <= EMBED_TOL


def test_family_forced_and_refusals(tmp_path):
    """--family clip on a CLIP file works; --family hf-clip on it, and --top on a CLIP tower, are one
    error line each, exit 2."""
    t = openai_tensors(seed=6)
    path = tmp_path / "clip.safetensors"
    safetensors_io.write(path, {"visual." + k: v for k, v in t.items()} | text_tower())
    results, log = run_forward(path, {"x": images(SQUARE)}, tmp_path / "o", "--family", "clip")
    assert "family clip" in log
    check_against(results, {"x": openai_clip_forward(as_torch(t), torch.from_numpy(images(SQUARE).astype(np.float64)))})
    code, _, err = harness.run("forward", "--model", path, tmp_path / "o" / "x.npy", "-o", tmp_path / "o2",
                               "--family", "hf-clip", "--heads", str(HEADS))
    assert code == 2 and err.count("error:") == 1 and "hf-clip" in err, err
    img = tmp_path / "photo.png"
    import cv2
    cv2.imwrite(str(img), harness.photo_like(32, 32))
    code, out, err = harness.run(img, "--model", path, "--heads", str(HEADS), "--top", "3", "-o", tmp_path / "maps")
    assert code == 2, (code, err)
    lines = [l for l in err.splitlines() if "error:" in l]
    assert len(lines) == 1 and "text tower" in lines[0] and "zero-shot" in lines[0], err
    assert not (tmp_path / "maps").exists() or not any((tmp_path / "maps").iterdir()), "work done before the refusal"
