#!/usr/bin/python3
"""The SigLIP family (Hugging Face SiglipVisionModel / SiglipModel, SigLIP 2 at a fixed
resolution) against a torch re-implementation written here from transformers'
models/siglip/modeling_siglip.py. Skips without torch (a failure under CI=true).

Each part follows one function of modeling_siglip.py:
  embeddings   SiglipVisionEmbeddings.forward: Conv2d patches + position_embedding.weight [N, D];
               another grid through SiglipVisionEmbeddings.interpolate_pos_encoding
               (F.interpolate, size=(new_h, new_w), bicubic, align_corners=False); no class token
  blocks       SiglipEncoderLayer.forward with SiglipAttention.forward (eager: softmax(q·kᵀ·d_h^-½))
               and SiglipMLP (hidden_act gelu_pytorch_tanh: F.gelu(approximate="tanh"))
  final norm   SiglipVisionTransformer.forward: post_layernorm
  probe        SiglipMultiheadAttentionPoolingHead.forward: torch's own nn.MultiheadAttention
               (need_weights, average_attn_weights=False gives its per-head probabilities),
               then residual + mlp(layernorm(·)); the pooled row L2-normalised is SiglipModel's
               image_embeds (get_image_features / forward: image_embeds / norm)
Checked: every layer's attention (1e-5), the probe's attention and the embedding (1e-4), at the
native size and on a non-square grid; detection by names (SiglipModel with its text tower,
SiglipVisionModel, BF16), --family siglip, config.json's model_type; the attention, rollout and
mask maps of `vitattn IMAGE` against numpy on the torch probe attention; --top, a class-specific
method and --layer before the last refused with one error line.

Planted in vitattn and seen red here: the probe's heads in reverse order (the map of the wrong
head), the probe's head columns interleaved (column j of head h at j·H + h, the wrong head axis),
GELU erf instead of tanh as the family's default (--family without config.json), rollout
without the encoder's R.

hf_folder(path) writes a hub-style snapshot of this family for the cross-family hf: test.
"""


import numpy as np
import pytest

import harness

try:
    import torch
except ImportError as e:  # CI installs python3-torch
    torch = None
    _TORCH_ERROR = str(e)

from siglip_reference import (_need_torch, bf16_rounded, GRID, HEADS, input_tensor, LAYERS, numpy_rollout, P,
                              siglip_tensors, torch_siglip, write_folder)


def rel(a, b):
    return float(np.max(np.abs(np.asarray(a, np.float64) - b)) / max(np.max(np.abs(b)), 1e-30))


def run_forward(tmp, model, x, *extra):
    np.save(tmp / "x.npy", x)
    out = tmp / "out"
    out.mkdir(exist_ok=True)
    p = harness.run_process("forward", "--model", model, tmp / "x.npy", "-o", out, *extra)
    assert p.returncode == 0, p.stderr
    return {k: np.load(out / f"x_{k}.npy") for k in ("attention", "embedding", "probe_attention")}, p


def check_against_torch(got, ref):
    for l in range(LAYERS):
        assert got["attention"][0, l].shape == ref["attention"][l].shape
        assert rel(got["attention"][0, l], ref["attention"][l]) < 1e-5, f"layer {l}"
    assert rel(got["probe_attention"][0], ref["probe"]) < 1e-4
    assert rel(got["embedding"][0], ref["embedding"]) < 1e-4


@pytest.mark.parametrize("shape", [(GRID * P, GRID * P), (3 * P, 5 * P)], ids=["native", "3x5"])
def test_forward_matches_torch(tmp_path, shape):
    _need_torch()
    t = siglip_tensors()
    model = write_folder(tmp_path / "m", t)
    x = input_tensor(*shape)
    got, _ = run_forward(tmp_path, model, x)
    check_against_torch(got, torch_siglip(t, x))


def test_vision_model_bf16_and_family_flag(tmp_path):
    """SiglipVisionModel's own file (no text tower), stored as BF16, config model_type
    siglip_vision_model; then the same with --family siglip and no config.json."""
    _need_torch()
    t = siglip_tensors(seed=5, text_tower=False)
    model = write_folder(tmp_path / "m", t, model_type="siglip_vision_model", dtype="BF16")
    x = input_tensor(GRID * P, GRID * P, seed=6)
    ref = torch_siglip(bf16_rounded(t), x)
    got, p = run_forward(tmp_path, model, x, "-v")
    assert "family siglip" in p.stderr + p.stdout
    check_against_torch(got, ref)
    (tmp_path / "m" / "config.json").unlink()
    got, _ = run_forward(tmp_path, model, x, "--family", "siglip", "--heads", str(HEADS))
    check_against_torch(got, ref)


def maps_from(probe, rollout_r=None, fusion="mean"):
    fused = {"mean": probe.mean(0), "max": probe.max(0), "min": probe.min(0)}[fusion]
    if rollout_r is not None:
        fused = fused @ rollout_r
    return fused.reshape(GRID, GRID)


def test_maps_use_the_probe(tmp_path):
    """`vitattn IMAGE`'s attention, --head all, rollout and --threshold mask from the probe's
    attention, against numpy on the torch reference's."""
    _need_torch()
    import cv2
    t = siglip_tensors()
    model = write_folder(tmp_path / "m", t)
    img = harness.photo_like(GRID * P, GRID * P)
    cv2.imwrite(str(tmp_path / "a.png"), img)
    x = ((img[:, :, ::-1].astype(np.float32) / 255 - 0.5) / 0.5).transpose(2, 0, 1)  # what vitattn feeds
    ref = torch_siglip(t, x)
    out = tmp_path / "o"
    p = harness.run_process("--model", model, tmp_path / "a.png", "-o", out, "--save-attention", "--threshold", "0.6")
    assert p.returncode == 0, p.stderr
    cls = np.load(out / "a_cls.npy")
    want = maps_from(ref["probe"])
    assert rel(cls, want) < 1e-4
    assert np.load(out / "a_attn.npy").shape == (HEADS, 1, GRID * GRID)
    assert np.array_equal(np.load(out / "a_mask.npy"), harness.dino_mask(want, 0.6))
    p = harness.run_process("--model", model, tmp_path / "a.png", "-o", tmp_path / "h", "--save-attention",
                            "--head", "all")
    assert p.returncode == 0, p.stderr
    assert rel(np.load(tmp_path / "h" / "a_cls.npy"), ref["probe"].reshape(HEADS, GRID, GRID)) < 1e-4
    p = harness.run_process("--model", model, tmp_path / "a.png", "-o", tmp_path / "r", "--save-attention",
                            "--rollout")
    assert p.returncode == 0, p.stderr
    want = maps_from(ref["probe"], numpy_rollout(ref["attention"]))
    assert rel(np.load(tmp_path / "r" / "a_cls.npy"), want) < 1e-4


@pytest.mark.parametrize("args,words", [
    (["--top", "3"], "SigLIP's zero-shot classes need its text tower"),
    (["--method", "chefer", "--class", "1"], "no classifier"),
    (["--layer", "0"], "probe"),
])
def test_refusals(tmp_path, args, words):
    import cv2
    model = write_folder(tmp_path / "m", siglip_tensors())
    cv2.imwrite(str(tmp_path / "a.png"), harness.photo_like(32, 32))
    p = harness.run_process("--model", model, tmp_path / "a.png", "-o", tmp_path / "o", *args)
    assert p.returncode == 2, p.stderr
    lines = [ln for ln in p.stderr.splitlines() if ln.startswith("error:")]
    assert len(lines) == 1 and words in lines[0], p.stderr
    assert not (tmp_path / "o").exists() or not any((tmp_path / "o").iterdir())


def test_pth_with_module_prefix(tmp_path):
    """A SiglipModel state dict saved by torch.save under DistributedDataParallel's "module."
    (config.json beside it for the heads), F16 values."""
    _need_torch()
    t = {k: v.astype(np.float16).astype(np.float32) for k, v in siglip_tensors(seed=7).items()}
    folder = tmp_path / "m"
    write_folder(folder, t)
    (folder / "model.safetensors").unlink()
    torch.save({"module." + k: torch.from_numpy(v).half() for k, v in t.items()}, folder / "model.pth")
    x = input_tensor(GRID * P, 2 * P, seed=8)
    got, _ = run_forward(tmp_path, folder / "model.pth", x)
    check_against_torch(got, torch_siglip(t, x))


def test_heads_csv_reads_the_mean_row(tmp_path):
    """Without a class token heads.csv's per-head entropy is that of the mean of each head's
    rows (docs/families.md), from the torch reference's attention."""
    _need_torch()
    import csv
    import cv2
    t = siglip_tensors()
    model = write_folder(tmp_path / "m", t)
    img = harness.photo_like(GRID * P, GRID * P)
    cv2.imwrite(str(tmp_path / "a.png"), img)
    x = ((img[:, :, ::-1].astype(np.float32) / 255 - 0.5) / 0.5).transpose(2, 0, 1)
    ref = torch_siglip(t, x)
    p = harness.run_process("--model", model, tmp_path / "a.png", "-o", tmp_path / "o", "--heads-csv")
    assert p.returncode == 0, p.stderr
    rows = list(csv.DictReader(open(tmp_path / "o" / "heads.csv")))
    key = next(k for k in rows[0] if "entropy" in k)
    for row in rows:
        mean_row = ref["attention"][int(row["layer"])][int(row["head"])].mean(0)
        want = -np.sum(mean_row * np.log(mean_row))
        assert abs(float(row[key]) - want) < 1e-3 * max(1.0, abs(want)), row


def test_incomplete_probe_head_refused(tmp_path):
    """A probe head missing a tensor: one error line naming it, exit 2."""
    import cv2
    t = siglip_tensors()
    del t["vision_model.head.layernorm.bias"]
    model = write_folder(tmp_path / "m", t)
    cv2.imwrite(str(tmp_path / "a.png"), harness.photo_like(32, 32))
    p = harness.run_process("--model", model, tmp_path / "a.png", "-o", tmp_path / "o")
    assert p.returncode == 2, p.stderr
    lines = [ln for ln in p.stderr.splitlines() if ln.startswith("error:")]
    assert len(lines) == 1 and "vision_model.head.layernorm.bias" in lines[0], p.stderr
