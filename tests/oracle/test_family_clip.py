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

import json
import math
import tempfile
from pathlib import Path

import numpy as np

import harness
import safetensors_io
from harness import need

try:
    import torch
    import torch.nn.functional as F
except ImportError as e:  # CI installs python3-torch (scripts/install-deps.sh)
    need(False, f"cannot import torch ({e}); install python3-torch")

torch.set_grad_enabled(False)
ATTN_TOL = 1e-5   # absolute, attention probabilities
EMBED_TOL = 1e-4  # absolute, the L2-normalised embedding

# Tiny towers: D = 48, 3 heads of 16, MLP 96, 8-pixel patches on a trained 4×4 grid, 2 layers,
# a 24-wide joint embedding. The text tower is narrower (32) so no shape of it fits the image's.
D, HEADS, MLP, P, GRID, LAYERS, EMBED = 48, 3, 96, 8, 4, 2, 24
SQUARE, WIDE = (GRID, GRID), (3, 5)
CLIP_MEAN = (0.48145466, 0.4578275, 0.40821073)
CLIP_STD = (0.26862954, 0.26130258, 0.27577711)


def openai_tensors(seed=0, scale=0.3):
    """A random image tower under OpenAI CLIP's names, without the "visual." prefix: {name: float32}."""
    rng = np.random.default_rng(seed)
    r = lambda *s, sc=scale: (rng.standard_normal(s) * sc).astype(np.float32)  # noqa: E731
    t = {"conv1.weight": r(D, 3, P, P, sc=0.1), "class_embedding": r(D), "positional_embedding": r(1 + GRID * GRID, D),
         "ln_pre.weight": 1 + r(D), "ln_pre.bias": r(D), "ln_post.weight": 1 + r(D), "ln_post.bias": r(D),
         "proj": r(D, EMBED)}
    for i in range(LAYERS):
        b = f"transformer.resblocks.{i}."
        t.update({b + "ln_1.weight": 1 + r(D), b + "ln_1.bias": r(D), b + "attn.in_proj_weight": r(3 * D, D),
                  b + "attn.in_proj_bias": r(3 * D), b + "attn.out_proj.weight": r(D, D), b + "attn.out_proj.bias": r(D),
                  b + "ln_2.weight": 1 + r(D), b + "ln_2.bias": r(D), b + "mlp.c_fc.weight": r(MLP, D),
                  b + "mlp.c_fc.bias": r(MLP), b + "mlp.c_proj.weight": r(D, MLP), b + "mlp.c_proj.bias": r(D)})
    return t


def text_tower(seed=9):
    """A whole CLIP state dict's text side (clip/model.py CLIP: token_embedding, positional_embedding
    at the top, transformer.resblocks, ln_final, text_projection, logit_scale): 32 wide, 1 block."""
    rng = np.random.default_rng(seed)
    r = lambda *s: (rng.standard_normal(s) * 0.1).astype(np.float32)  # noqa: E731
    w, b = 32, "transformer.resblocks.0."
    return {"token_embedding.weight": r(50, w), "positional_embedding": r(7, w), "ln_final.weight": r(w),
            "ln_final.bias": r(w), "text_projection": r(w, EMBED), "logit_scale": np.array([4.6], np.float32),
            b + "ln_1.weight": r(w), b + "ln_1.bias": r(w), b + "attn.in_proj_weight": r(3 * w, w),
            b + "attn.in_proj_bias": r(3 * w), b + "attn.out_proj.weight": r(w, w), b + "attn.out_proj.bias": r(w),
            b + "ln_2.weight": r(w), b + "ln_2.bias": r(w), b + "mlp.c_fc.weight": r(4 * w, w),
            b + "mlp.c_fc.bias": r(4 * w), b + "mlp.c_proj.weight": r(w, 4 * w), b + "mlp.c_proj.bias": r(w)}


def hf_names(t):
    """OpenAI names → CLIPVisionModelWithProjection's (convert_clip_original_pytorch_to_hf.py's mapping):
    the packed in_proj split into q_proj, k_proj, v_proj; visual_projection = projᵀ."""
    v = "vision_model."
    out = {v + "embeddings.patch_embedding.weight": t["conv1.weight"],
           v + "embeddings.class_embedding": t["class_embedding"],
           v + "embeddings.position_embedding.weight": t["positional_embedding"],
           v + "pre_layrnorm.weight": t["ln_pre.weight"], v + "pre_layrnorm.bias": t["ln_pre.bias"],
           v + "post_layernorm.weight": t["ln_post.weight"], v + "post_layernorm.bias": t["ln_post.bias"],
           "visual_projection.weight": np.ascontiguousarray(t["proj"].T)}
    for i in range(LAYERS):
        s, d = f"transformer.resblocks.{i}.", f"{v}encoder.layers.{i}."
        for k, part in enumerate(("q_proj", "k_proj", "v_proj")):
            out[d + f"self_attn.{part}.weight"] = t[s + "attn.in_proj_weight"][k * D:(k + 1) * D]
            out[d + f"self_attn.{part}.bias"] = t[s + "attn.in_proj_bias"][k * D:(k + 1) * D]
        for a, b in (("ln_1", "layer_norm1"), ("ln_2", "layer_norm2"), ("attn.out_proj", "self_attn.out_proj"),
                     ("mlp.c_fc", "mlp.fc1"), ("mlp.c_proj", "mlp.fc2")):
            out[d + b + ".weight"], out[d + b + ".bias"] = t[s + a + ".weight"], t[s + a + ".bias"]
    return out


def as_torch(t):
    return {k: torch.from_numpy(np.asarray(v, np.float64)) for k, v in t.items()}


def bf16_rounded(t):
    """The values a BF16 file holds: float32 rounded to nearest even on the top 16 bits."""
    out = {}
    for k, v in t.items():
        bits = np.asarray(v, np.float32).view(np.uint32).astype(np.uint64)
        bits = (bits + 0x7FFF + ((bits >> 16) & 1)) & 0xFFFF0000
        out[k] = bits.astype(np.uint32).view(np.float32)
    return out


def quick_gelu(x):
    return x * torch.sigmoid(1.702 * x)  # clip/model.py QuickGELU


def openai_clip_forward(t, x, act=quick_gelu):
    """OpenAI CLIP / open_clip VisionTransformer.forward (see the module comment) on OpenAI-named
    float64 tensors; x [N, 3, H, W] → (attention [N, L, H, T, T], embedding [N, E] L2-normalised)."""
    n, _, h, w = x.shape
    gh, gw = h // P, w // P
    z = F.conv2d(x, t["conv1.weight"], stride=P).flatten(2).transpose(1, 2)  # [N, gh·gw, D]
    z = torch.cat([t["class_embedding"].expand(n, 1, D), z], dim=1)
    pos = t["positional_embedding"]
    if (gh, gw) != SQUARE:  # open_clip resize_pos_embed
        grid = pos[1:].reshape(1, GRID, GRID, D).permute(0, 3, 1, 2)
        grid = F.interpolate(grid, size=(gh, gw), mode="bicubic", antialias=True, align_corners=False)
        pos = torch.cat([pos[:1], grid.permute(0, 2, 3, 1).reshape(gh * gw, D)])
    z = z + pos
    ln = lambda v, p: F.layer_norm(v, (D,), t[p + ".weight"], t[p + ".bias"], 1e-5)  # noqa: E731
    z = ln(z, "ln_pre").transpose(0, 1)  # [T, N, D]: clip/model.py runs the transformer sequence-first
    attention = []
    for i in range(LAYERS):
        b = f"transformer.resblocks.{i}."
        mha = torch.nn.MultiheadAttention(D, HEADS).double()
        mha.in_proj_weight.copy_(t[b + "attn.in_proj_weight"])
        mha.in_proj_bias.copy_(t[b + "attn.in_proj_bias"])
        mha.out_proj.weight.copy_(t[b + "attn.out_proj.weight"])
        mha.out_proj.bias.copy_(t[b + "attn.out_proj.bias"])
        y = ln(z, b + "ln_1")
        o, a = mha(y, y, y, need_weights=True, average_attn_weights=False)  # a [N, H, T, T]
        z = z + o
        m = act(F.linear(ln(z, b + "ln_2"), t[b + "mlp.c_fc.weight"], t[b + "mlp.c_fc.bias"]))
        z = z + F.linear(m, t[b + "mlp.c_proj.weight"], t[b + "mlp.c_proj.bias"])
        attention.append(a)
    pooled = ln(z.transpose(0, 1)[:, 0], "ln_post") @ t["proj"]  # [N, E]
    return torch.stack(attention, 1).numpy(), F.normalize(pooled, dim=-1).numpy()


def hf_clip_forward(t, x, act=quick_gelu):
    """HF CLIPVisionModelWithProjection (see the module comment) on HF-named float64 tensors, with
    interpolate_pos_encoding=True; x [N, 3, H, W] → (attention [N, L, H, T, T], embedding [N, E])."""
    v = "vision_model."
    n, _, h, w = x.shape
    gh, gw = h // P, w // P
    patches = F.conv2d(x, t[v + "embeddings.patch_embedding.weight"], stride=P).flatten(2).transpose(1, 2)
    z = torch.cat([t[v + "embeddings.class_embedding"].expand(n, 1, D), patches], dim=1)
    pos = t[v + "embeddings.position_embedding.weight"]
    if (gh, gw) != SQUARE:  # CLIPVisionEmbeddings.interpolate_pos_encoding
        grid = pos[1:].reshape(1, GRID, GRID, D).permute(0, 3, 1, 2)
        grid = F.interpolate(grid, size=(gh, gw), mode="bicubic", align_corners=False)
        pos = torch.cat([pos[:1], grid.permute(0, 2, 3, 1).reshape(gh * gw, D)])
    z = z + pos
    ln = lambda u, p: F.layer_norm(u, (D,), t[p + ".weight"], t[p + ".bias"], 1e-5)  # noqa: E731
    lin = lambda u, p: F.linear(u, t[p + ".weight"], t[p + ".bias"])  # noqa: E731
    z = ln(z, v + "pre_layrnorm")
    d_head, attention = D // HEADS, []
    for i in range(LAYERS):
        b = f"{v}encoder.layers.{i}."
        y = ln(z, b + "layer_norm1")
        q, k, vv = (lin(y, b + f"self_attn.{p}").view(n, -1, HEADS, d_head).transpose(1, 2)
                    for p in ("q_proj", "k_proj", "v_proj"))
        a = torch.softmax((q @ k.transpose(-1, -2)) * d_head ** -0.5, dim=-1)  # eager_attention_forward
        z = z + lin((a @ vv).transpose(1, 2).reshape(n, -1, D), b + "self_attn.out_proj")
        z = z + lin(act(lin(ln(z, b + "layer_norm2"), b + "mlp.fc1")), b + "mlp.fc2")
        attention.append(a)
    pooled = ln(z[:, 0], v + "post_layernorm")
    e = F.linear(pooled, t["visual_projection.weight"])
    return torch.stack(attention, 1).numpy(), F.normalize(e, dim=-1).numpy()


def images(grid, n=1, seed=0):
    """Preprocessed inputs [N, 3, gh·P, gw·P] (what `vitattn forward` reads), float32."""
    rng = np.random.default_rng(seed + grid[0] * 10 + grid[1])
    return rng.standard_normal((n, 3, grid[0] * P, grid[1] * P)).astype(np.float32)


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


def hf_folder(path, hidden_act="quick_gelu", seed=4):
    """An HF CLIPVisionModelWithProjection snapshot folder at `path`: model.safetensors, config.json
    (model_type clip_vision_model, its sizes, hidden_act, layer_norm_eps, projection_dim) and
    preprocessor_config.json (CLIP's mean and std). Returns {"image": the preprocessed input
    [3, 32, 32] float32 (what `vitattn forward` reads as a .npy), "attention_last": the last
    layer's attention [H, T, T] of hf_clip_forward on it, "embedding": [E]}."""
    path = Path(path)
    path.mkdir(parents=True, exist_ok=True)
    t = hf_names(openai_tensors(seed=seed))
    safetensors_io.write(path / "model.safetensors", t)
    (path / "config.json").write_text(json.dumps({
        "architectures": ["CLIPVisionModelWithProjection"], "model_type": "clip_vision_model", "hidden_size": D,
        "intermediate_size": MLP, "num_attention_heads": HEADS, "num_hidden_layers": LAYERS, "image_size": GRID * P,
        "patch_size": P, "hidden_act": hidden_act, "layer_norm_eps": 1e-5, "projection_dim": EMBED}))
    (path / "preprocessor_config.json").write_text(json.dumps({
        "image_processor_type": "CLIPImageProcessor", "image_mean": list(CLIP_MEAN), "image_std": list(CLIP_STD),
        "crop_size": {"height": GRID * P, "width": GRID * P}, "size": {"shortest_edge": GRID * P}}))
    x = images(SQUARE, seed=seed)
    act = quick_gelu if hidden_act == "quick_gelu" else F.gelu
    attention, embedding = hf_clip_forward(as_torch(t), torch.from_numpy(x.astype(np.float64)), act=act)
    return {"image": x[0], "attention_last": attention[0, -1], "embedding": embedding[0]}


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


def hf_text_tower(seed=8):
    """CLIPModel's text side and shared scalars (modeling_clip.py CLIPTextTransformer, CLIPModel): 32 wide, 1 layer."""
    rng = np.random.default_rng(seed)
    r = lambda *s: (rng.standard_normal(s) * 0.1).astype(np.float32)  # noqa: E731
    w, b = 32, "text_model.encoder.layers.0."
    t = {"text_model.embeddings.token_embedding.weight": r(50, w),
         "text_model.embeddings.position_embedding.weight": r(7, w),
         "text_model.embeddings.position_ids": np.arange(7, dtype=np.int64)[None],
         "text_model.final_layer_norm.weight": r(w), "text_model.final_layer_norm.bias": r(w),
         "text_projection.weight": r(EMBED, w), "logit_scale": np.array(2.6592, np.float32)}
    for name, shape in (("layer_norm1", (w,)), ("layer_norm2", (w,)), ("self_attn.q_proj", (w, w)),
                        ("self_attn.k_proj", (w, w)), ("self_attn.v_proj", (w, w)), ("self_attn.out_proj", (w, w)),
                        ("mlp.fc1", (4 * w, w)), ("mlp.fc2", (w, 4 * w))):
        t[b + name + ".weight"], t[b + name + ".bias"] = r(*shape), r(shape[0])
    return t


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
