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

import json
import os
from pathlib import Path

import numpy as np
import pytest

import harness
import safetensors_io
from harness import need

try:
    import torch
    import torch.nn.functional as F
except ImportError as e:  # CI installs python3-torch
    torch = None
    _TORCH_ERROR = str(e)

D, HEADS, LAYERS, MLP, P, GRID = 48, 3, 2, 96, 8, 4  # 32-px native input, 16 patches
EPS = 1e-6


def _need_torch():
    need(torch is not None, "cannot import torch; install python3-torch")


def siglip_tensors(seed=0, text_tower=True):
    """Random float32 weights in SiglipModel's names (vision_model.*; a token of its text
    tower and logit_scale/bias, which vitattn must leave unread)."""
    rng = np.random.default_rng(seed)
    r = lambda *s, scale=0.2: (rng.standard_normal(s) * scale).astype(np.float32)  # noqa: E731
    v = "vision_model."
    t = {v + "embeddings.patch_embedding.weight": r(D, 3, P, P, scale=0.1),
         v + "embeddings.patch_embedding.bias": r(D),
         v + "embeddings.position_embedding.weight": r(GRID * GRID, D, scale=0.5)}
    for i in range(LAYERS):
        b = f"{v}encoder.layers.{i}."
        for n in ("layer_norm1", "layer_norm2"):
            t[b + n + ".weight"] = (1 + r(D, scale=0.1)).astype(np.float32)
            t[b + n + ".bias"] = r(D, scale=0.1)
        for n in ("q_proj", "k_proj", "v_proj", "out_proj"):
            t[b + f"self_attn.{n}.weight"] = r(D, D, scale=0.3)
            t[b + f"self_attn.{n}.bias"] = r(D, scale=0.1)
        t[b + "mlp.fc1.weight"], t[b + "mlp.fc1.bias"] = r(MLP, D), r(MLP)
        t[b + "mlp.fc2.weight"], t[b + "mlp.fc2.bias"] = r(D, MLP), r(D)
    t[v + "post_layernorm.weight"] = (1 + r(D, scale=0.1)).astype(np.float32)
    t[v + "post_layernorm.bias"] = r(D, scale=0.1)
    h = v + "head."
    t[h + "probe"] = r(1, 1, D, scale=1.0)
    t[h + "attention.in_proj_weight"] = r(3 * D, D, scale=0.4)
    t[h + "attention.in_proj_bias"] = r(3 * D, scale=0.1)
    t[h + "attention.out_proj.weight"], t[h + "attention.out_proj.bias"] = r(D, D), r(D)
    t[h + "layernorm.weight"] = (1 + r(D, scale=0.1)).astype(np.float32)
    t[h + "layernorm.bias"] = r(D, scale=0.1)
    t[h + "mlp.fc1.weight"], t[h + "mlp.fc1.bias"] = r(MLP, D), r(MLP)
    t[h + "mlp.fc2.weight"], t[h + "mlp.fc2.bias"] = r(D, MLP), r(D)
    if text_tower:
        t["text_model.embeddings.token_embedding.weight"] = r(11, D)
        t["logit_scale"], t["logit_bias"] = r(1), r(1)
    return t


def config(model_type="siglip"):
    vision = {"hidden_size": D, "num_attention_heads": HEADS, "num_hidden_layers": LAYERS, "intermediate_size": MLP,
              "image_size": GRID * P, "patch_size": P, "hidden_act": "gelu_pytorch_tanh", "layer_norm_eps": EPS}
    if model_type == "siglip_vision_model":
        return {"model_type": model_type, **vision}
    return {"model_type": model_type, "vision_config": vision, "text_config": {"hidden_size": D}}


def write_folder(path, tensors, model_type="siglip", dtype="F32"):
    path = Path(path)
    path.mkdir(parents=True, exist_ok=True)
    safetensors_io.write(path / "model.safetensors", tensors, None, dtype=dtype)
    (path / "config.json").write_text(json.dumps(config(model_type)))
    (path / "preprocessor_config.json").write_text(json.dumps(
        {"image_mean": [0.5, 0.5, 0.5], "image_std": [0.5, 0.5, 0.5], "size": {"height": GRID * P, "width": GRID * P}}))
    return path / "model.safetensors"


def torch_siglip(t, x, prefix="vision_model."):
    """modeling_siglip.py's vision tower in float64. x (3, H, W) normalised → dict of
    attention [layer] (H, T, T), probe (H, T), embedding (D)."""
    w = {k[len(prefix):]: torch.from_numpy(np.asarray(v, np.float64)) for k, v in t.items() if k.startswith(prefix)}
    xt = torch.from_numpy(np.asarray(x, np.float64))[None]
    # SiglipVisionEmbeddings.forward / interpolate_pos_encoding
    e = F.conv2d(xt, w["embeddings.patch_embedding.weight"], w["embeddings.patch_embedding.bias"], stride=P)
    gh, gw = e.shape[2], e.shape[3]
    e = e.flatten(2).transpose(1, 2)  # (1, T, D)
    pos = w["embeddings.position_embedding.weight"]
    n = pos.shape[0]
    if gh * gw != n or gh != gw:
        g = int(round(n ** 0.5))
        pp = pos.reshape(1, g, g, D).permute(0, 3, 1, 2)
        pp = F.interpolate(pp, size=(gh, gw), mode="bicubic", align_corners=False)
        pos = pp.permute(0, 2, 3, 1).reshape(-1, D)
    h = e + pos
    dh = D // HEADS
    attn = []
    for i in range(LAYERS):  # SiglipEncoderLayer.forward
        b = f"encoder.layers.{i}."
        a = F.layer_norm(h, (D,), w[b + "layer_norm1.weight"], w[b + "layer_norm1.bias"], EPS)
        q, k, v = (F.linear(a, w[b + f"self_attn.{n}.weight"], w[b + f"self_attn.{n}.bias"])
                   .view(1, -1, HEADS, dh).transpose(1, 2) for n in ("q_proj", "k_proj", "v_proj"))
        pr = torch.softmax(q @ k.transpose(2, 3) * dh ** -0.5, dim=-1)  # SiglipAttention.forward (eager)
        attn.append(pr[0].numpy())
        o = (pr @ v).transpose(1, 2).reshape(1, -1, D)
        h = h + F.linear(o, w[b + "self_attn.out_proj.weight"], w[b + "self_attn.out_proj.bias"])
        a = F.layer_norm(h, (D,), w[b + "layer_norm2.weight"], w[b + "layer_norm2.bias"], EPS)
        m = F.gelu(F.linear(a, w[b + "mlp.fc1.weight"], w[b + "mlp.fc1.bias"]), approximate="tanh")  # SiglipMLP
        h = h + F.linear(m, w[b + "mlp.fc2.weight"], w[b + "mlp.fc2.bias"])
    h = F.layer_norm(h, (D,), w["post_layernorm.weight"], w["post_layernorm.bias"], EPS)
    # SiglipMultiheadAttentionPoolingHead.forward, on torch's own nn.MultiheadAttention
    mha = torch.nn.MultiheadAttention(D, HEADS, batch_first=True).double()
    with torch.no_grad():
        mha.in_proj_weight.copy_(w["head.attention.in_proj_weight"])
        mha.in_proj_bias.copy_(w["head.attention.in_proj_bias"])
        mha.out_proj.weight.copy_(w["head.attention.out_proj.weight"])
        mha.out_proj.bias.copy_(w["head.attention.out_proj.bias"])
        y, probe = mha(w["head.probe"], h, h, need_weights=True, average_attn_weights=False)  # probe (1, H, 1, T)
    ln = F.layer_norm(y, (D,), w["head.layernorm.weight"], w["head.layernorm.bias"], EPS)
    mlp = F.linear(F.gelu(F.linear(ln, w["head.mlp.fc1.weight"], w["head.mlp.fc1.bias"]), approximate="tanh"),
                   w["head.mlp.fc2.weight"], w["head.mlp.fc2.bias"])
    pooled = (y + mlp)[0, 0]
    return {"attention": attn, "probe": probe[0, :, 0].detach().numpy(),
            "embedding": (pooled / pooled.norm()).detach().numpy()}


def bf16_rounded(t):
    """The float32 values a BF16 file holds (round to nearest even, as safetensors_io writes)."""
    out = {}
    for k, v in t.items():
        bits = safetensors_io.float32_to_bf16_bits(v).astype(np.uint32) << 16
        out[k] = bits.view(np.float32).reshape(v.shape)
    return out


def input_tensor(h, w, seed=1):
    return (np.random.default_rng(seed).standard_normal((3, h, w)) * 0.8).astype(np.float32)


def hf_folder(path):
    """A SigLIP hub snapshot (SiglipModel names, config.json model_type "siglip",
    preprocessor_config.json 0.5/0.5) in `path`, and the torch reference on its input:
    {"image": x.npy path ([3, 32, 32] normalised, for `vitattn forward`), "attention_last":
    [H, T, T], "probe": [H, T], "embedding": [D]}."""
    _need_torch()
    path = Path(path)
    t = siglip_tensors(seed=3)
    write_folder(path, t)
    x = input_tensor(GRID * P, GRID * P, seed=4)
    np.save(path / "x.npy", x)
    ref = torch_siglip(t, x)
    return {"image": str(path / "x.npy"), "attention_last": ref["attention"][-1], "probe": ref["probe"],
            "embedding": ref["embedding"]}


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


def numpy_rollout(attn):
    """vitattn's rollout (attention_maps.hpp) with discard ratio 0: mean of heads, (A+I)/2, rows
    renormalised, later layers on the left."""
    r = None
    for a in attn:
        f = a.mean(0)
        f = (f + np.eye(f.shape[0])) / 2
        f = f / f.sum(1, keepdims=True)
        r = f if r is None else f @ r
    return r


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
