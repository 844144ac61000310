#!/usr/bin/python3
"""LeGrad with a text target (src/core/legrad_text.hpp) and the SigLIP probe head's backward
(src/core/probe_backward.hpp) against torch.autograd. Skips without torch (a failure under CI=true).

Run:  /usr/bin/python3 -m pytest tests/oracle/test_legrad_text.py
Env:  VITATTN_LEGRAD_TEXT_TOOL  tests/tools/legrad_text_tool (the CLI has no text target yet)

Nothing here comes from vitattn. Random towers from tests/pylib (an OpenAI-named CLIP image
tower, clip_reference.openai_tensors; an HF SigLIP vision tower with its probe head,
siglip_reference.siglip_tensors) run through float64 torch forwards written here, whose
attention probabilities are tensors of the graph (as LeGrad's hooks keep them), each forward
first checked against the pylib's own reference forward. Then, following the authors'
legrad/wrapper.py:

  clip     LeWrapper.compute_legrad_clip: per layer l from layer_index, s = t · normalize(ln_post(
           mean of blk.feat_post_mlp over every token) @ proj), autograd ∂s/∂A_l clamped at 0,
           averaged over heads and query rows, the patch columns; summed over l. Layer index 0
           (every layer) and −1 (the last), the trained 4×4 grid and a 3×5 one.
  siglip   LeWrapper.compute_legrad_siglip: pooled = attn_pool(blk.feat_post_mlp) (no
           post_layernorm), s = t · normalize(pooled), ∂s/∂(attn_pool's attn_probs) clamped,
           averaged over heads; summed over l. Without the correction, and with it (the empty
           prompt's map min-maxed, the map zeroed where it is above the threshold) at 0.8 and 0.5.
  probe    a linear head W on SigLIP's own pooled row (after post_layernorm): ∂y_c/∂x_out,
           ∂y_c/∂(the probe's attention) and ∂y_c/∂A_l of every block, through vitattn's
           logit_gradient, pooled_row_backward and encoder_backward; and relevance.hpp's maps
           for y_c (chefer and grad-rollout read through the probe's attention, legrad, gradcam)
           from their definitions on autograd's gradients.

The maps are compared before the reference's min-max and bilinear upsampling (legrad_text.hpp).
Bound: max|vitattn − torch| / max|torch| ≤ 1e-4.

Planted in vitattn and seen red here: CLIP's class token instead of the mean (clip), SigLIP's
final norm applied before the probe (siglip), no clamp at 0 (clip, siglip), the correction's
comparison reversed (siglip corrected), the probe's 1/√d_head left out of ∂k (probe), the
probe MLP's residual path dropped from ∂y (siglip, siglip corrected, probe), the first patch's
row as the probe's readout (chefer) and the readout clamped before the head mean (grad-rollout).
"""
import os
import subprocess
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
    need(False, f"cannot import torch ({e}); install python3-torch")

import clip_reference as cr
import siglip_reference as sr

TOOL = os.environ.get("VITATTN_LEGRAD_TEXT_TOOL", str(Path(harness.BIN).parent / "tests" / "legrad_text_tool"))
REL_TOL = 1e-4
torch.set_num_threads(2)


def relative(got, ref):
    got, ref = np.asarray(got, np.float64), np.asarray(ref, np.float64)
    assert got.shape == ref.shape, (got.shape, ref.shape)
    scale = np.abs(ref).max()
    assert scale > 0, "the reference is all zeros: nothing is compared"
    return float(np.abs(got - ref).max() / scale)


def tool(tmp, *args):
    need(Path(TOOL).exists(), f"{TOOL} is not built (cmake --build --preset dev --target legrad_text_tool)")
    p = subprocess.run([TOOL, *map(str, args)], capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr


def unit(v):
    v = np.asarray(v, np.float64)
    return (v / np.linalg.norm(v)).astype(np.float32)


def random_unit(n, seed):
    return unit(np.random.default_rng(seed).standard_normal(n))


def saved(tmp, name, array):
    path = tmp / name
    np.save(path, np.asarray(array, np.float32))
    return path


# ---------------------------------------------------------------------------
# CLIP: clip/model.py's VisionTransformer with its attention probabilities in the graph
# ---------------------------------------------------------------------------


def legrad_clip_reference(t, x, text, layer_index):
    """LeWrapper.compute_legrad_clip on clip_forward, before its min-max: [gh, gw]."""
    gh, gw = x.shape[1] // cr.P, x.shape[2] // cr.P
    attention, outputs, _ = cr.openai_clip_graph(t, x)
    start = layer_index if layer_index >= 0 else cr.LAYERS + layer_index
    text = torch.from_numpy(np.asarray(text, np.float64))
    ln_post = lambda v: F.layer_norm(v, (cr.D,), t["ln_post.weight"], t["ln_post.bias"], 1e-5)  # noqa: E731
    total = 0
    for layer in range(start, cr.LAYERS):
        feat = F.normalize(ln_post(outputs[layer].mean(dim=0)) @ t["proj"], dim=-1)
        sim = text @ feat
        grad = torch.autograd.grad(sim, [attention[layer]], retain_graph=True)[0]  # [H, T, T]
        grad = torch.clamp(grad, min=0.0)
        total = total + grad.mean(dim=0).mean(dim=0)[1:].reshape(gh, gw)
    return total.detach().numpy()


@pytest.fixture(scope="module")
def clip_model(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("clip")
    t = cr.openai_tensors(seed=5)
    path = tmp / "clip.safetensors"
    safetensors_io.write(path, {"visual." + k: v for k, v in t.items()}, metadata={"num_heads": str(cr.HEADS)})
    return path, cr.as_torch(t)


@pytest.mark.parametrize("grid", [cr.SQUARE, cr.WIDE], ids=["4x4", "3x5"])
@pytest.mark.parametrize("first", [0, -1])
def test_legrad_clip(tmp_path, clip_model, grid, first):
    path, t = clip_model
    x = cr.images(grid, seed=2)[0]
    xt = torch.from_numpy(x.astype(np.float64))
    # the forward written here is clip/model.py's: its embedding is clip_reference's
    _, outputs, _ = cr.openai_clip_graph(t, xt)
    ln_post = F.layer_norm(outputs[-1][0], (cr.D,), t["ln_post.weight"], t["ln_post.bias"], 1e-5)
    with torch.no_grad():  # it copies the weights into nn.MultiheadAttention's parameters
        _, ref_embedding = cr.openai_clip_forward(t, xt[None])
    assert relative(F.normalize(ln_post @ t["proj"], dim=-1).detach().numpy(), ref_embedding[0]) < 1e-12
    text = random_unit(cr.EMBED, seed=7)
    ref = legrad_clip_reference(t, xt, text, first)
    out = tmp_path / "map.npy"
    tool(tmp_path, "clip", path, saved(tmp_path, "x.npy", x), saved(tmp_path, "t.npy", text), first, out)
    r = relative(np.load(out), ref)
    assert r <= REL_TOL, f"LeGrad CLIP map off by {r:.3g} (relative)"


# ---------------------------------------------------------------------------
# SigLIP: modeling_siglip.py's vision tower, the probe's attention in the graph
# ---------------------------------------------------------------------------


def siglip_blocks(w, x, norm1=None):
    """SiglipVisionEmbeddings and SiglipEncoderLayer (as siglip_reference.torch_siglip) on float64
    tensors w (names without vision_model.), x [3, H, W] → (the blocks' attention [H, T, T] each,
    their outputs [T, D] each); each block's layer_norm1 output appended to `norm1` when given."""
    d, heads, dh = sr.D, sr.HEADS, sr.D // sr.HEADS
    x = x.detach().requires_grad_(True)  # a graph from the input on: every A_l has a gradient
    e = F.conv2d(x[None], w["embeddings.patch_embedding.weight"], w["embeddings.patch_embedding.bias"], stride=sr.P)
    h = e.flatten(2).transpose(1, 2)[0] + w["embeddings.position_embedding.weight"]  # the trained grid only
    attention, outputs = [], []
    for i in range(sr.LAYERS):
        b = f"encoder.layers.{i}."
        a = F.layer_norm(h, (d,), w[b + "layer_norm1.weight"], w[b + "layer_norm1.bias"], sr.EPS)
        if norm1 is not None:
            a.retain_grad()
            norm1.append(a)
        q, k, v = (F.linear(a, w[b + f"self_attn.{n}.weight"], w[b + f"self_attn.{n}.bias"])
                   .view(-1, heads, dh).transpose(0, 1) for n in ("q_proj", "k_proj", "v_proj"))
        pr = torch.softmax(q @ k.transpose(1, 2) * dh ** -0.5, dim=-1)
        h = h + F.linear((pr @ v).transpose(0, 1).reshape(-1, d), w[b + "self_attn.out_proj.weight"],
                         w[b + "self_attn.out_proj.bias"])
        a = F.layer_norm(h, (d,), w[b + "layer_norm2.weight"], w[b + "layer_norm2.bias"], sr.EPS)
        m = F.gelu(F.linear(a, w[b + "mlp.fc1.weight"], w[b + "mlp.fc1.bias"]), approximate="tanh")
        h = h + F.linear(m, w[b + "mlp.fc2.weight"], w[b + "mlp.fc2.bias"])
        attention.append(pr)
        outputs.append(h)
    return attention, outputs


def probe(w, tokens):
    """SiglipMultiheadAttentionPoolingHead.forward (nn.MultiheadAttention's equations written out,
    as timm's AttentionPoolLatent that LeGrad hooks): tokens [T, D] → (pooled [D], attn_probs
    [H, 1, T], the tensor the output is computed from)."""
    d, heads, dh = sr.D, sr.HEADS, sr.D // sr.HEADS
    wi, bi = w["head.attention.in_proj_weight"], w["head.attention.in_proj_bias"]
    q = F.linear(w["head.probe"][0], wi[:d], bi[:d]).view(heads, 1, dh)
    k = F.linear(tokens, wi[d:2 * d], bi[d:2 * d]).view(-1, heads, dh).transpose(0, 1)
    v = F.linear(tokens, wi[2 * d:], bi[2 * d:]).view(-1, heads, dh).transpose(0, 1)
    a = torch.softmax(q @ k.transpose(1, 2) * dh ** -0.5, dim=-1)  # [H, 1, T]
    y = F.linear((a @ v).transpose(0, 1).reshape(1, d), w["head.attention.out_proj.weight"],
                 w["head.attention.out_proj.bias"])
    ln = F.layer_norm(y, (d,), w["head.layernorm.weight"], w["head.layernorm.bias"], sr.EPS)
    mlp = F.linear(F.gelu(F.linear(ln, w["head.mlp.fc1.weight"], w["head.mlp.fc1.bias"]), approximate="tanh"),
                   w["head.mlp.fc2.weight"], w["head.mlp.fc2.bias"])
    return (y + mlp)[0], a


def post_layernorm(w, h):
    return F.layer_norm(h, (sr.D,), w["post_layernorm.weight"], w["post_layernorm.bias"], sr.EPS)


def min_max(m):
    return (m - m.min()) / (m.max() - m.min())  # legrad/utils.py min_max


def legrad_siglip_sums(w, x, texts, layer_index):
    """LeWrapper.compute_legrad_siglip's accumulated maps, one per text [T] (before the correction
    and the min-max)."""
    _, outputs = siglip_blocks(w, x)
    start = layer_index if layer_index >= 0 else sr.LAYERS + layer_index
    sums = [0 for _ in texts]
    for layer in range(start, sr.LAYERS):
        pooled, probs = probe(w, outputs[layer])  # attn_pool(blk.feat_post_mlp): no post_layernorm
        pooled = F.normalize(pooled, dim=-1)
        for i, text in enumerate(texts):
            sim = torch.from_numpy(np.asarray(text, np.float64)) @ pooled
            grad = torch.clamp(torch.autograd.grad(sim, [probs], retain_graph=True)[0], min=0.0)
            sums[i] = sums[i] + grad.mean(dim=0)[0]
    return [s.detach().numpy() for s in sums]


@pytest.fixture(scope="module")
def siglip_model(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("siglip")
    t = sr.siglip_tensors(seed=6)
    path = sr.write_folder(tmp / "m", t)
    w = {k[len("vision_model."):]: torch.from_numpy(np.asarray(v, np.float64))
         for k, v in t.items() if k.startswith("vision_model.")}
    return path, t, w


def siglip_input(t, w):
    """The trained-grid input, and the check that the forward here is siglip_reference's."""
    x = sr.input_tensor(sr.GRID * sr.P, sr.GRID * sr.P, seed=8)
    xt = torch.from_numpy(x.astype(np.float64))
    _, outputs = siglip_blocks(w, xt)
    pooled, probs = probe(w, post_layernorm(w, outputs[-1]))
    with torch.no_grad():
        ref = sr.torch_siglip(t, x)
    assert relative(F.normalize(pooled, dim=-1).detach().numpy(), ref["embedding"]) < 1e-12
    assert relative(probs[:, 0].detach().numpy(), ref["probe"]) < 1e-12
    return x, xt


@pytest.mark.parametrize("first", [0, -1])
def test_legrad_siglip(tmp_path, siglip_model, first):
    path, t, w = siglip_model
    x, xt = siglip_input(t, w)
    text = random_unit(sr.D, seed=9)
    (ref,) = legrad_siglip_sums(w, xt, [text], first)
    out = tmp_path / "map.npy"
    tool(tmp_path, "siglip", path, saved(tmp_path, "x.npy", x), saved(tmp_path, "t.npy", text), first, out)
    r = relative(np.load(out), ref.reshape(sr.GRID, sr.GRID))
    assert r <= REL_TOL, f"LeGrad SigLIP map off by {r:.3g} (relative)"


@pytest.mark.parametrize("threshold", [0.8, 0.5])
def test_legrad_siglip_empty_prompt_correction(tmp_path, siglip_model, threshold):
    path, t, w = siglip_model
    x, xt = siglip_input(t, w)
    text, empty = random_unit(sr.D, seed=9), random_unit(sr.D, seed=10)
    ref, ref_empty = legrad_siglip_sums(w, xt, [text, empty], -2)
    heat = min_max(ref_empty)
    # float32 cannot be told from float64 at a cell on the threshold: the seeds keep them apart
    assert np.abs(heat - threshold).min() > 1e-3
    zeroed = heat > threshold
    assert 0 < zeroed.sum() < zeroed.size and (ref[zeroed] > 0).any(), "the correction would change nothing"
    ref = np.where(zeroed, 0.0, ref)
    out = tmp_path / "map.npy"
    tool(tmp_path, "siglip", path, saved(tmp_path, "x.npy", x), saved(tmp_path, "t.npy", text), -2, out,
         saved(tmp_path, "empty.npy", empty), threshold)
    got = np.load(out)
    assert (got[zeroed.reshape(sr.GRID, sr.GRID)] == 0).all(), "a cell the correction zeroes is not 0"
    r = relative(got, ref.reshape(sr.GRID, sr.GRID))
    assert r <= REL_TOL, f"corrected LeGrad SigLIP map off by {r:.3g} (relative)"


def test_probe_backward_through_logit_gradient(tmp_path, siglip_model):
    """y_c = W[c] · (SigLIP's pooled row) + b: its gradients at the last block's output, at the
    probe's attention and at every block's attention, against autograd."""
    path, t, w = siglip_model
    x, xt = siglip_input(t, w)
    classes, c = 5, 3
    head = (np.random.default_rng(11).standard_normal((classes, sr.D)) * 0.3).astype(np.float32)
    attention, outputs = siglip_blocks(w, xt)
    x_out = outputs[-1]
    x_out.retain_grad()
    pooled, probs = probe(w, post_layernorm(w, x_out))
    probs.retain_grad()
    y = pooled @ torch.from_numpy(head[c].astype(np.float64))
    for a in attention:
        a.retain_grad()
    y.backward()
    prefix = tmp_path / "grad"
    tool(tmp_path, "logit", path, saved(tmp_path, "x.npy", x), saved(tmp_path, "head.npy", head), c, prefix)
    checks = {"final": x_out.grad, "probe": probs.grad[:, 0],
              "attention": torch.stack([a.grad for a in attention])}
    for name, ref in checks.items():
        r = relative(np.load(f"{prefix}_{name}.npy"), ref.numpy())
        assert r <= REL_TOL, f"∂y/∂{name} off by {r:.3g} (relative)"


def test_class_maps_on_a_probe_head(tmp_path, siglip_model):
    """chefer, grad-rollout, legrad and gradcam (relevance.hpp) for y_c = W[c] · (SigLIP's pooled
    row), each from its definition on autograd's gradients. The probe is read as Chefer reads an
    attention whose query is not a token (Transformer-MM-Explainability's R_qk += Ā·R_kk): its
    fused attention is the readout row of the encoder's R."""
    path, t, w = siglip_model
    x, xt = siglip_input(t, w)
    c = 1
    head = (np.random.default_rng(12).standard_normal((4, sr.D)) * 0.3).astype(np.float32)
    wc = torch.from_numpy(head[c].astype(np.float64))
    norm1 = []
    attention, outputs = siglip_blocks(w, xt, norm1)
    pooled, probs = probe(w, post_layernorm(w, outputs[-1]))
    for a in attention:
        a.retain_grad()
    probs.retain_grad()
    (pooled @ wc).backward(retain_graph=True)  # the per-layer logits below share the blocks
    n = probs.shape[-1]
    eye = torch.eye(n, dtype=torch.float64)
    fused = lambda a, g, before: ((a * g).clamp(min=0).mean(0) if before  # noqa: E731
                                  else (a * g).mean(0).clamp(min=0))
    # chefer: R = I; R ← R + Ā_l·R; the probe's row Ā_probe·R
    r = eye
    for a in attention:
        r = r + fused(a.detach(), a.grad, True) @ r
    chefer = fused(probs.detach(), probs.grad, True) @ r
    # grad-rollout (discard ratio 0): a_l = (F_l + I)/2, rows renormalised; R ← a_l·R
    r = eye
    for a in attention:
        step = (fused(a.detach(), a.grad, False) + eye) / 2
        r = (step / step.sum(dim=1, keepdim=True)) @ r
    rollout = fused(probs.detach(), probs.grad, False) @ r
    # legrad (from −2: both blocks): s_l = W[c] · probe(post_layernorm(layer l's output))
    legrad = 0
    for layer in range(sr.LAYERS):
        s, _ = probe(w, post_layernorm(w, outputs[layer]))
        g = torch.autograd.grad(s @ wc, [attention[layer]], retain_graph=True)[0]
        legrad = legrad + g.clamp(min=0).mean(dim=(0, 1))
    # gradcam on the last block's layer_norm1 output
    xn = norm1[-1]
    gradcam = (xn.detach() @ xn.grad.mean(dim=0)).clamp(min=0)
    prefix = tmp_path / "grad"
    tool(tmp_path, "logit", path, saved(tmp_path, "x.npy", x), saved(tmp_path, "head.npy", head), c, prefix)
    refs = {"chefer": chefer, "grad_rollout": rollout, "legrad": legrad, "gradcam": gradcam}
    for name, ref in refs.items():
        r = relative(np.load(f"{prefix}_{name}.npy"), ref.detach().numpy().reshape(sr.GRID, sr.GRID))
        assert r <= REL_TOL, f"{name} on SigLIP off by {r:.3g} (relative)"
