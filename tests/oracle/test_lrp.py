#!/usr/bin/python3
"""vitattn's AttnLRP map (--method lrp) against a torch implementation of its rules.

Run:  /usr/bin/python3 -m pytest tests/oracle/test_lrp.py
      Skips when torch cannot be imported (CI installs python3-torch); under CI=true a skip fails.
Env:  VITATTN_BIN  binary to test (default <repo>/build/dev/vitattn)

Nothing here comes from vitattn. Random ViTs are made here (harness.timm_tensors, timm's names,
F32 safetensors) and by tests/pylib's builders for the other families; the same float32 values,
renamed into timm's names (canonical_clip, canonical_siglip), run through a torch ViT written
below in float64, in which AttnLRP's rules (core/lrp.hpp; LXT's cp_LRP for a ViT with zennit's
Gamma) are the backward itself, so the relevance is image ⊙ image.grad summed over the colour
channels:

  attention   the probabilities detached (CP-LRP): nothing into q and k; SigLIP's probe alike
  activation  an autograd Function whose backward is d·f(h)/h (the identity rule): GELU's erf and
              tanh forms, CLIP's QuickGELU
  LayerNorm   (x − mean)/σ.detach()·w + b (LXT's layer_norm_forward): every norm, norm_pre
              (CLIP's ln_pre), fc_norm, the probe's
  linear      an autograd Function whose backward is zennit's Gamma rule in its own form: the
              four modified outputs (x⁺, W + γW⁺, b + γb⁺), (x⁻, W + γW⁻), (x⁺, W + γW⁻, b + γb⁻),
              (x⁻, W + γW⁺); R_z = z·d_z spread over them with zennit's stabilize; the relevance
              at x their sum, and the gradient handed down R_x / x (LXT's monkey_patch_zennit).
              Every linear layer: the values' rows of qkv, the projections, the MLPs, the
              classifier(s), the probe's, CLIP's projection to the joint embedding; layer scale as
              the diagonal linear layer diag(λ) without bias
  patch embedding  the same Function on the unfolded patches, with γ_conv
  the target  a class's logit; distilled DeiT's ½(head(t₀) + head_dist(t₁)); a text's
              exp(logit_scale)·t·u/‖u‖ (+ logit_bias for SigLIP) with ‖u‖ detached

Checked (test_lrp_maps): `vitattn forward --class c --method lrp` (<stem>_relevance_lrp.npy, the
pixels summed over each patch) against the torch map, two γ pairs on a model with biases; a model
without biases, positions and class token, on which Σ R = y_c (conservation, against torch's
logit); registers with layer scale (DINOv2-like); a 3×5 grid from a 4×4 model (positions resampled
as timm does); and the image command's --save-attention <name>_pixels.npy [S_h, S_w] and
<name>_cls.npy against the torch maps.
Checked (test_lrp_heads_and_texts), each for two γ pairs through `forward` (and the torch forward's
y against vitattn's <stem>_logits.npy) and once through the image command's pixel files:
distilled DeiT (deit_reference.deit_distilled, 3×5), timm's average pool with fc_norm, registers
and layer scale (deit_reference.timm_avg, 3×5), HF Dinov2ForImageClassification's [class, patch
mean] head with registers (deit_reference.hf_dinov2_classifier, at its 4×4: DINOv2 resamples its
positions its own way), an OpenAI-named CLIP's image–text logits (clip_reference, 3×5; the ids
OpenAI's tokeniser gives, tests/oracle/data/clip_tokens.jsonl; _t<i> files) and a SigLIP's through
its probe head (siglip_reference, 3×5; the ids of HF's SiglipTokenizer over a tiny trained
spiece.model). DINOv3 has no classifier and no text tower, so no logit to explain: --method lrp is
refused (test_lrp_dinov3_refused); its RoPE reaches LRP only through the attention probabilities,
which CP-LRP holds constant, and its registers and layer scale are among the cases above.
Bound: max|vitattn − torch| / max|torch| ≤ 1e-4.

Seen red with a mistake planted in vitattn's core/lrp.cpp (max relative difference of the patch
maps): the probe's layers on the plain gradient (γ 0) 0.38–0.84; the probe's residual path
dropped 0.99–1.08; the probe's softmax passing relevance into the keys 0.66–1.5; head_dist on the
plain gradient 0.14–0.32; fc_norm without its mean path 0.33; the registers in HF Dinov2's patch
mean 0.11–0.13; CLIP's projection on the plain gradient 0.28–0.88; ln_pre without its mean path
0.006–0.085.
"""

import json
import math
import tempfile
from pathlib import Path

import numpy as np

import harness
import safetensors_io
from compare import relative
from harness import need
from tally import Tally

try:
    import torch
    import torch.nn.functional as F
except ImportError as e:  # CI installs python3-torch (scripts/install-deps.sh)
    need(False, f"cannot import torch ({e}); install python3-torch")

import clip_reference as cr  # noqa: E402  (after torch's check: the builders need it)
import deit_reference as dr  # noqa: E402
import siglip_reference as sr  # noqa: E402

BIN = Path(harness.BIN)
REL_TOL = 1e-4
EPS_STAB = 1e-6  # zennit's stabilize
T = Tally()
D, HEADS, MLP, P, GRID, CLASSES = 32, 2, 64, 8, 4, 7


def check(label, got, ref, tol=REL_TOL):
    r = relative(got, ref)
    print(f"  {r:.3g}  {label}", flush=True)
    T.check(r <= tol and np.abs(np.asarray(ref)).max() > 0,
            f"{label}: max|diff|/max|ref| = {r:.3g} (bound {tol}; {np.shape(got)} vs {np.shape(ref)})")


# ---------------------------------------------------------------------------
# The rules as autograd Functions
# ---------------------------------------------------------------------------


def stabilize(t):
    """zennit.core.stabilize: t + ε·(sign(t) + [t = 0])."""
    return t + ((t == 0).to(t.dtype) + t.sign()) * EPS_STAB


class GammaLinear(torch.autograd.Function):
    """z = x·Wᵀ + b forward; backward: zennit's Gamma rule on R_z = z ⊙ d_z, as relevance, then
    divided by x (zero where x is) to hand a gradient down."""

    @staticmethod
    def forward(ctx, x, w, b, gamma):
        ctx.save_for_backward(x, w, b)
        ctx.gamma = gamma
        return F.linear(x, w, b)

    @staticmethod
    def backward(ctx, d_z):
        x, w, b = ctx.saved_tensors
        g = ctx.gamma
        z = F.linear(x, w, b)
        r_z = z * d_z
        xp, xn = x.clamp(min=0), x.clamp(max=0)
        w_up, w_down = w + g * w.clamp(min=0), w + g * w.clamp(max=0)
        b_up, b_down = b + g * b.clamp(min=0), b + g * b.clamp(max=0)
        outs = []   # the four modified products and which input each read
        for inp, wm, bm in ((xp, w_up, b_up), (xn, w_down, None), (xp, w_down, b_down), (xn, w_up, None)):
            inp = inp.detach().requires_grad_(True)
            with torch.enable_grad():
                outs.append((inp, F.linear(inp, wm, bm)))
        share_pos = (z > 0).to(z.dtype) * r_z / stabilize(outs[0][1] + outs[1][1]).detach()
        share_neg = (z < 0).to(z.dtype) * r_z / stabilize(outs[2][1] + outs[3][1]).detach()
        relevance = torch.zeros_like(x)
        for (inp, out), share in zip(outs, (share_pos, share_pos, share_neg, share_neg)):
            (grad,) = torch.autograd.grad(out, inp, grad_outputs=share)
            relevance = relevance + inp.detach() * grad
        safe = torch.where(x == 0, torch.ones_like(x), x)
        return torch.where(x == 0, torch.zeros_like(x), relevance / safe), None, None, None


def linear_gamma(x, w, b, gamma):
    if b is None:
        b = torch.zeros(w.shape[0], dtype=w.dtype)
    return GammaLinear.apply(x, w, b, gamma)


class IdentityAct(torch.autograd.Function):
    """The MLP's activation forward; backward d·f(h)/h (the identity rule)."""

    @staticmethod
    def forward(ctx, h, kind):
        out = activation(h, kind)
        ctx.save_for_backward(out / h)
        return out

    @staticmethod
    def backward(ctx, d):
        (ratio,) = ctx.saved_tensors
        return d * ratio, None


def activation(h, kind):
    """GELU's erf form ("none": timm, DINOv2), its tanh form (SigLIP) or CLIP's QuickGELU ("quick")."""
    if kind == "quick":
        return h * torch.sigmoid(1.702 * h)
    return F.gelu(h, approximate=kind)


def layer_norm(x, w, b, eps):
    mean = x.mean(-1, keepdim=True)
    std = ((x - mean) ** 2).mean(-1, keepdim=True).add(eps).sqrt()
    return (x - mean) / std.detach() * w + b


# ---------------------------------------------------------------------------
# The families and the torch ViT with those rules
# ---------------------------------------------------------------------------


class Arch:
    """What the torch ViT below needs besides its tensors, which are in timm's names (the
    canonical_* functions rename the other families' into them, plus embed.weight for CLIP's
    projection and probe.* for SigLIP's head):
      pooling  token (class token → head), distilled (½(head(t₀) + head_dist(t₁))), avg (fc_norm of
               the patches' mean), cls_avg (HF Dinov2ForImageClassification: [t₀, patches' mean]),
               probe (SigLIP's attention-pooling head)
      pos      how the position table is resampled to another grid: antialias (timm, open_clip's
               resize_pos_embed) or bicubic (SigLIP's interpolate_pos_encoding)"""

    def __init__(self, heads=HEADS, eps=1e-6, act="none", pooling="token", pos="antialias"):
        self.heads, self.eps, self.act, self.pooling, self.pos = heads, eps, act, pooling, pos


class Text:
    """An image–text target: y = exp(log_scale)·t·u/‖u‖ + bias, t the text's unit embedding."""

    def __init__(self, embedding, log_scale, bias=0.0):
        self.embedding = torch.from_numpy(np.asarray(embedding, np.float64))
        self.log_scale, self.bias = float(np.asarray(log_scale).reshape(())), float(np.asarray(bias).reshape(()))


class Family:
    def __init__(self, name, seed, registers=0, grid=(GRID, GRID), biases=True, layers=2):
        self.name, self.seed, self.registers, self.grid, self.biases, self.layers = \
            name, seed, registers, grid, biases, layers

    def tensors(self):
        t = harness.timm_tensors(D, P, GRID, self.layers, MLP, seed=self.seed, classes=CLASSES,
                                 registers=self.registers)
        if not self.biases:  # no bias anywhere, and no position, class token: nothing absorbs relevance
            for k in list(t):
                if k.endswith("bias") or k in ("cls_token", "pos_embed"):
                    t[k] = np.zeros_like(t[k])
        return t


def resampled_positions(pos, arch, gh, gw):
    """pos [n², D] on the trained square grid → [gh·gw, D]."""
    n = int(round(math.sqrt(pos.shape[0])))
    if (gh, gw) == (n, n):
        return pos
    grid = pos.reshape(1, n, n, -1).permute(0, 3, 1, 2)
    grid = F.interpolate(grid, size=(gh, gw), mode="bicubic", align_corners=False, antialias=arch.pos == "antialias")
    return grid.permute(0, 2, 3, 1).reshape(gh * gw, -1)


def embedded(t, arch, x_in, g_conv):
    """(The tokens [B, T, D] before the first block, the index of the first patch among them): the
    class (and distillation) tokens with their positions, the registers (no positions), the patches
    (the Gamma rule with γ_conv, as a linear map of the unfolded patches) with theirs; then norm_pre
    when there is one."""
    b, _, h, w = x_in.shape
    gh, gw = h // P, w // P
    d = t["patch_embed.proj.weight"].shape[0]
    cols = F.unfold(x_in, P, stride=P).transpose(1, 2)                     # [B, gh·gw, 3·P·P] (c, y, x)
    tok = linear_gamma(cols, t["patch_embed.proj.weight"].reshape(d, -1), t.get("patch_embed.proj.bias"), g_conv)
    lead = [t[k][0, 0] for k in ("cls_token", "dist_token") if k in t]   # [D] each
    if "pos_embed" in t:
        pos = t["pos_embed"][0]
        tok = tok + resampled_positions(pos[len(lead):], arch, gh, gw)
        lead = [v + pos[i] for i, v in enumerate(lead)]
    parts = [v.expand(b, 1, -1) for v in lead]
    if "register_tokens" in t:
        parts.append(t["register_tokens"].expand(b, -1, -1))
    x = torch.cat(parts + [tok], dim=1)
    if "norm_pre.weight" in t:
        x = layer_norm(x, t["norm_pre.weight"], t["norm_pre.bias"], arch.eps)
    return x, x.shape[1] - gh * gw


def layer_scaled(m, t, key, g_lin):
    """Layer scale, a diagonal linear layer without bias: the Gamma rule on diag(λ). (On one input
    per output it hands each output's relevance to its input whole, up to the stabiliser: the
    plain gradient.)"""
    return linear_gamma(m, torch.diag(t[key]), None, g_lin) if key in t else m


def block(x, t, arch, i, g_lin):
    p = f"blocks.{i}."
    b, d = x.shape[0], x.shape[-1]
    d_head = d // arch.heads
    split = lambda m: m.reshape(b, -1, arch.heads, d_head).transpose(1, 2)  # noqa: E731  [B, H, T, d_head]
    y = layer_norm(x, t[p + "norm1.weight"], t[p + "norm1.bias"], arch.eps)
    w_qkv, b_qkv = t[p + "attn.qkv.weight"], t[p + "attn.qkv.bias"]
    q = F.linear(y, w_qkv[:d], b_qkv[:d]).detach()
    k = F.linear(y, w_qkv[d:2 * d], b_qkv[d:2 * d]).detach()
    v = linear_gamma(y, w_qkv[2 * d:], b_qkv[2 * d:], g_lin)
    a = torch.softmax(split(q) @ split(k).transpose(-2, -1) / math.sqrt(d_head), dim=-1).detach()
    heads = (a @ split(v)).transpose(1, 2).reshape(b, -1, d)
    o = linear_gamma(heads, t[p + "attn.proj.weight"], t[p + "attn.proj.bias"], g_lin)
    x = x + layer_scaled(o, t, p + "ls1.gamma", g_lin)
    y = layer_norm(x, t[p + "norm2.weight"], t[p + "norm2.bias"], arch.eps)
    hdn = linear_gamma(y, t[p + "mlp.fc1.weight"], t[p + "mlp.fc1.bias"], g_lin)
    m = linear_gamma(IdentityAct.apply(hdn, arch.act), t[p + "mlp.fc2.weight"], t[p + "mlp.fc2.bias"], g_lin)
    return x + layer_scaled(m, t, p + "ls2.gamma", g_lin)


def probe_pooled(x, t, arch, g_lin):
    """SigLIP's SiglipMultiheadAttentionPoolingHead [B, T, D] → [B, D] with the rules: its attention
    a constant (nothing into the probe's q nor the tokens' k), the values, out_proj and the MLP by
    the Gamma rule, its LayerNorm and GELU by the identity rule, the residual as it is."""
    b, d = x.shape[0], x.shape[-1]
    d_head = d // arch.heads
    split = lambda m: m.reshape(b, -1, arch.heads, d_head).transpose(1, 2)  # noqa: E731
    w, bias = t["probe.qkv.weight"], t["probe.qkv.bias"]
    q = F.linear(t["probe.probe"].reshape(1, 1, d), w[:d], bias[:d]).expand(b, 1, d)
    k = F.linear(x, w[d:2 * d], bias[d:2 * d]).detach()
    v = linear_gamma(x, w[2 * d:], bias[2 * d:], g_lin)
    a = torch.softmax(split(q) @ split(k).transpose(-2, -1) / math.sqrt(d_head), dim=-1).detach()  # [B, H, 1, T]
    y = linear_gamma((a @ split(v)).transpose(1, 2).reshape(b, 1, d), t["probe.proj.weight"], t["probe.proj.bias"],
                     g_lin)
    n = layer_norm(y, t["probe.norm.weight"], t["probe.norm.bias"], arch.eps)
    hdn = linear_gamma(n, t["probe.fc1.weight"], t["probe.fc1.bias"], g_lin)
    m = linear_gamma(IdentityAct.apply(hdn, arch.act), t["probe.fc2.weight"], t["probe.fc2.bias"], g_lin)
    return (y + m)[:, 0]


def target_value(x, t, arch, first, target, g_lin):
    """y [B] from the tokens after the last block: the final norm, the pooling, then a class's logit
    (the classifier by the Gamma rule) or a text's (CLIP's projection by the Gamma rule, ‖u‖ a
    constant as LayerNorm's σ)."""
    if "norm.weight" in t:
        x = layer_norm(x, t["norm.weight"], t["norm.bias"], arch.eps)
    if arch.pooling == "distilled":
        both = linear_gamma(x[:, 0], t["head.weight"], t["head.bias"], g_lin) + \
            linear_gamma(x[:, 1], t["head_dist.weight"], t["head_dist.bias"], g_lin)
        return both[:, target] / 2
    if arch.pooling == "token":
        pooled = x[:, 0]
    elif arch.pooling == "avg":
        pooled = layer_norm(x[:, first:].mean(1), t["fc_norm.weight"], t["fc_norm.bias"], arch.eps)
    elif arch.pooling == "cls_avg":
        pooled = torch.cat([x[:, 0], x[:, first:].mean(1)], dim=-1)
    else:
        pooled = probe_pooled(x, t, arch, g_lin)
    if not isinstance(target, Text):
        return linear_gamma(pooled, t["head.weight"], t["head.bias"], g_lin)[:, target]
    u = linear_gamma(pooled, t["embed.weight"], None, g_lin) if "embed.weight" in t else pooled
    return math.exp(target.log_scale) * (u / u.norm(dim=-1, keepdim=True).detach()) @ target.embedding + target.bias


def torch_lrp(t, arch, image, target, g_lin, g_conv):
    """(pixel relevance [B, H, W], y [B]) in float64; t in timm's names (numpy), target a class
    index or a Text."""
    t = {k: torch.from_numpy(np.asarray(v, np.float64)) for k, v in t.items()}
    x_in = image.clone().requires_grad_(True)
    x, first = embedded(t, arch, x_in, g_conv)
    i = 0
    while f"blocks.{i}.norm1.weight" in t:
        x = block(x, t, arch, i, g_lin)
        i += 1
    y = target_value(x, t, arch, first, target, g_lin)
    y.sum().backward()
    return (x_in * x_in.grad).sum(1).detach().numpy(), y.detach().numpy()


# ---------------------------------------------------------------------------
# vitattn
# ---------------------------------------------------------------------------


def patch_sums(pixels, gh, gw):
    b = pixels.shape[0]
    return pixels.reshape(b, gh, P, gw, P).sum(axis=(2, 4))


def vitattn_lrp(model_path, x_path, out, c, gamma_linear, gamma_conv):
    args = ["forward", "--model", model_path, str(x_path), "-o", out, "--class", str(c), "--method", "lrp",
            "--lrp-gamma-linear", repr(gamma_linear), "--lrp-gamma-conv", repr(gamma_conv)]
    if not harness.run_ok(T, f"vitattn {' '.join(map(str, args))}", args):
        return None
    return np.load(Path(out) / f"{Path(x_path).stem}_relevance_lrp.npy")


def check_family(tmp, fam, gammas):
    tensors = fam.tensors()
    model_path = tmp / f"m{fam.seed}.safetensors"
    safetensors_io.write(model_path, tensors, {"num_heads": str(HEADS)}, dtype="F32")
    gh, gw = fam.grid
    x = np.random.default_rng(100 + fam.seed).standard_normal((2, 3, gh * P, gw * P)).astype(np.float32)
    x_path = tmp / f"x{fam.seed}.npy"
    np.save(x_path, x)
    c = (fam.seed * 3 + 2) % CLASSES
    for gamma_linear, gamma_conv in gammas:
        label = f"{fam.name}, class {c}, γ_linear {gamma_linear}, γ_conv {gamma_conv}"
        pixels, y = torch_lrp(tensors, Arch(), torch.from_numpy(x.astype(np.float64)), c, gamma_linear, gamma_conv)
        got = vitattn_lrp(model_path, x_path, tmp / f"out{fam.seed}_{gamma_linear}_{gamma_conv}", c, gamma_linear,
                          gamma_conv)
        if got is None:
            continue
        check(f"{label}: patch map", got, patch_sums(pixels, gh, gw))
        if not fam.biases:  # conservation: Σ R over the pixels = y_c, against torch's forward logit
            check(f"{label}: Σ R = y_c (conservation)", got.sum(axis=(1, 2)), y, tol=1e-5)
            check(f"{label}: torch's own Σ R = y_c", pixels.sum(axis=(1, 2)), y, tol=1e-5)


class Case:
    """One family or target for check_case: the file vitattn reads (and the arguments it needs), the
    same model in timm's names for torch_lrp with its Arch, the targets (class indices or Texts)
    with the arguments that ask vitattn for them, and the tag each one's files carry."""

    def __init__(self, name, model, tensors, arch, targets, target_args, model_args=(), tags=("",)):
        self.name, self.model, self.tensors, self.arch = name, model, tensors, arch
        self.targets, self.target_args, self.model_args, self.tags = targets, list(target_args), list(model_args), tags


def check_forward(tmp, case, grid, gammas, seed):
    """`vitattn forward --method lrp` on two random inputs: <stem>_relevance_lrp<tag>.npy, the patch
    map of each target, for each γ pair."""
    gh, gw = grid
    x = np.random.default_rng(seed).standard_normal((2, 3, gh * P, gw * P)).astype(np.float32)
    x_path = tmp / f"x{seed}.npy"
    np.save(x_path, x)
    image = torch.from_numpy(x.astype(np.float64))
    for g_lin, g_conv in gammas:
        out = tmp / f"forward{seed}_{g_lin}_{g_conv}"
        args = ["forward", "--model", case.model, *case.model_args, x_path, "-o", out, "--method", "lrp",
                *case.target_args, "--lrp-gamma-linear", repr(g_lin), "--lrp-gamma-conv", repr(g_conv)]
        if not harness.run_ok(T, f"{case.name}: vitattn {' '.join(map(str, args))}", args):
            continue
        logits = np.load(out / f"{x_path.stem}_logits.npy")  # [2, classes or texts]
        for i, (target, tag) in enumerate(zip(case.targets, case.tags)):
            pixels, y = torch_lrp(case.tensors, case.arch, image, target, g_lin, g_conv)
            label = f"{case.name}, {gh}x{gw}, γ_linear {g_lin}, γ_conv {g_conv}"
            # the torch forward is the family's: its y is vitattn's logit
            check(f"{label}: logit {i}", logits[:, target if isinstance(target, int) else i], y)
            name = f"{x_path.stem}_relevance_lrp{tag}.npy"
            check(f"{label}: {name}", np.load(out / name), patch_sums(pixels, gh, gw))


def check_pixels(tmp, case, grid, g_lin, g_conv, seed, methods=("lrp",)):
    """The image command's --save-attention: <name>_pixels<tag>.npy [S_h, S_w] and the patch sums in
    <name>_cls<tag>.npy, on a PNG kept at its size (--keep-aspect --img-size of its short side), with
    the normalisation given, so the input is known here: RGB / 255, then (x − mean) / std. With
    --method all the same maps carry _lrp in their names, beside the other methods' files."""
    import cv2
    gh, gw = grid
    bgr = harness.photo_like(gh * P, gw * P, seed)
    png = tmp / f"pic{seed}.png"
    cv2.imwrite(str(png), bgr)
    mean, std = (0.45, 0.5, 0.55), (0.25, 0.2, 0.3)
    rgb = bgr[:, :, ::-1].astype(np.float32) / np.float32(255)
    x = (rgb - np.asarray(mean, np.float32)) / np.asarray(std, np.float32)
    image = torch.from_numpy(np.ascontiguousarray(x.transpose(2, 0, 1))[None].astype(np.float64))
    norm = ["--mean", ",".join(map(str, mean)), "--std", ",".join(map(str, std))]
    gammas = ["--lrp-gamma-linear", str(g_lin), "--lrp-gamma-conv", str(g_conv)]
    for method in methods:
        out = tmp / f"pixels{seed}_{method}"
        args = ["--model", case.model, *case.model_args, png, "-o", out, "--method", method, *case.target_args,
                "--save-attention", "--keep-aspect", "--img-size", str(min(gh, gw) * P), *norm, *gammas]
        if not harness.run_ok(T, f"{case.name}: --method {method} --save-attention", args):
            continue
        for target, tag in zip(case.targets, case.tags):
            pixels, _ = torch_lrp(case.tensors, case.arch, image, target, g_lin, g_conv)
            tag = ("_lrp" if method == "all" else "") + tag
            for kind, ref in (("pixels", pixels[0]), ("cls", patch_sums(pixels, gh, gw)[0])):
                name = f"{png.stem}_{kind}{tag}.npy"
                check(f"{case.name}, --method {method}: {name}", np.load(out / name), ref)


def timm_case(tmp):
    fam = Family("timm", seed=4, grid=(3, 5))
    model = tmp / "timm.safetensors"
    tensors = fam.tensors()
    safetensors_io.write(model, tensors, {"num_heads": str(HEADS)}, dtype="F32")
    return Case("timm", model, tensors, Arch(), [3], ["--class", "3"])


# ---------------------------------------------------------------------------
# The other families' heads and the text targets, their files made by tests/pylib's builders
# ---------------------------------------------------------------------------


def deit_distilled_case(tmp):
    t = dr.deit_distilled(seed=5)
    model = tmp / "deit.safetensors"
    dr.write(model, t)
    return Case("distilled DeiT", model, t, Arch(pooling="distilled"), [4], ["--class", "4"])


def timm_avg_case(tmp):
    t = dr.timm_avg(seed=6, registers=2)
    model = tmp / "avg.safetensors"
    dr.write(model, t)
    return Case("timm avg pool, registers + layer scale", model, t, Arch(pooling="avg"), [2], ["--class", "2"])


def hf_dinov2_case(tmp):
    hf, t = dr.hf_dinov2_classifier(seed=7, registers=2)
    model = tmp / "hf_dinov2.safetensors"
    dr.write(model, hf)
    t = dict(t, **{"head.weight": hf["classifier.weight"], "head.bias": hf["classifier.bias"]})
    return Case("HF Dinov2ForImageClassification, registers", model, t, Arch(pooling="cls_avg"), [5], ["--class", "5"])


def text_targets(texts):
    return [a for s in texts for a in ("--text", s)] + ["--class", ",".join(texts)]


CLIP_TEXTS = ["a photo of a cat", "A picture of the dog"]  # ids: OpenAI's tokeniser's, in tests/oracle/data


def clip_text_ids(texts):
    """[n, 77] as clip.tokenize: start, the ids tests/oracle/data/clip_tokens.jsonl holds, end, zeros."""
    known = {}
    with open(harness.REPO / "tests" / "oracle" / "data" / "clip_tokens.jsonl") as f:
        for line in f:
            row = json.loads(line)
            known[row["text"]] = row["ids"]
    ids = np.zeros((len(texts), cr.CONTEXT), np.int64)
    for i, s in enumerate(texts):
        row = [49406] + known[s] + [49407]
        ids[i, :len(row)] = row
    return ids


def canonical_clip(t):
    """OpenAI CLIP's image tower names → timm's (ln_pre is norm_pre, ln_post the final norm, proj the
    projection to the joint embedding as embed.weight [E, D])."""
    c = {"patch_embed.proj.weight": t["conv1.weight"], "cls_token": t["class_embedding"].reshape(1, 1, -1),
         "pos_embed": t["positional_embedding"][None], "norm_pre.weight": t["ln_pre.weight"],
         "norm_pre.bias": t["ln_pre.bias"], "norm.weight": t["ln_post.weight"], "norm.bias": t["ln_post.bias"],
         "embed.weight": np.ascontiguousarray(t["proj"].T)}
    names = (("ln_1", "norm1"), ("attn.out_proj", "attn.proj"), ("ln_2", "norm2"), ("mlp.c_fc", "mlp.fc1"),
             ("mlp.c_proj", "mlp.fc2"))
    for i in range(cr.LAYERS):
        src, dst = f"transformer.resblocks.{i}.", f"blocks.{i}."
        c[dst + "attn.qkv.weight"] = t[src + "attn.in_proj_weight"]
        c[dst + "attn.qkv.bias"] = t[src + "attn.in_proj_bias"]
        for a, b in names:
            c[dst + b + ".weight"], c[dst + b + ".bias"] = t[src + a + ".weight"], t[src + a + ".bias"]
    return c


def clip_text_case(tmp):
    """An OpenAI-named CLIP (both towers); the texts' embeddings from clip_reference's encode_text."""
    image_t, text_t = cr.openai_tensors(seed=3), cr.openai_text_tensors(seed=14)
    model = tmp / "clip.safetensors"
    safetensors_io.write(model, {"visual." + k: v for k, v in image_t.items()} | text_t)
    with torch.no_grad():
        ids = torch.from_numpy(clip_text_ids(CLIP_TEXTS))
        _, emb = cr.openai_encode_text(cr.as_torch(text_t), ids, cr.TEXT_W // 64)
    targets = [Text(e, text_t["logit_scale"]) for e in emb]
    return Case("CLIP texts", model, canonical_clip(image_t), Arch(heads=cr.HEADS, eps=1e-5, act="quick"), targets,
                text_targets(CLIP_TEXTS), ["--heads", str(cr.HEADS)], ["_t0", "_t1"])


SIGLIP_TEXTS = ["a photo of a cat", "a red car on the street"]


def canonical_siglip(t):
    """Hugging Face SigLIP's vision tower names → timm's (q, k, v stacked as qkv; post_layernorm the
    final norm), its head as probe.*."""
    v = "vision_model."
    c = {"patch_embed.proj.weight": t[v + "embeddings.patch_embedding.weight"],
         "patch_embed.proj.bias": t[v + "embeddings.patch_embedding.bias"],
         "pos_embed": t[v + "embeddings.position_embedding.weight"][None],
         "norm.weight": t[v + "post_layernorm.weight"], "norm.bias": t[v + "post_layernorm.bias"]}
    for i in range(sr.LAYERS):
        src, dst = f"{v}encoder.layers.{i}.", f"blocks.{i}."
        for end in ("weight", "bias"):
            c[dst + "attn.qkv." + end] = np.concatenate([t[src + f"self_attn.{n}_proj.{end}"] for n in "qkv"])
            for a, b in (("layer_norm1", "norm1"), ("self_attn.out_proj", "attn.proj"), ("layer_norm2", "norm2"),
                         ("mlp.fc1", "mlp.fc1"), ("mlp.fc2", "mlp.fc2")):
                c[dst + b + "." + end] = t[src + a + "." + end]
    h = v + "head."
    c.update({"probe.probe": t[h + "probe"], "probe.qkv.weight": t[h + "attention.in_proj_weight"],
              "probe.qkv.bias": t[h + "attention.in_proj_bias"]})
    for end in ("weight", "bias"):
        for a, b in (("attention.out_proj", "proj"), ("layernorm", "norm"), ("mlp.fc1", "fc1"), ("mlp.fc2", "fc2")):
            c[f"probe.{b}.{end}"] = t[h + a + "." + end]
    return c


def siglip_text_case(tmp):
    """A SiglipModel folder (both towers, config.json, a tiny spiece.model); the ids as HF's
    SiglipTokenizer makes them, the texts' embeddings from siglip_reference's text tower."""
    from test_siglip_tokenizer import hf_ids, hf_processor, train_tiny_model
    folder = tmp / "siglip"
    t = sr.siglip_tensors(seed=21, text_tower=False, text=True)
    model = sr.write_folder(folder, t, text=True)
    train_tiny_model(folder / "spiece.model", "nmt_nfkc")
    sp = hf_processor(folder / "spiece.model")
    _, emb = sr.torch_siglip_text(t, np.array([hf_ids(sp, s) for s in SIGLIP_TEXTS]))
    targets = [Text(e, t["logit_scale"], t["logit_bias"]) for e in emb]
    arch = Arch(heads=sr.HEADS, eps=sr.EPS, act="tanh", pooling="probe", pos="bicubic")
    return Case("SigLIP texts, probe head", model, canonical_siglip(t), arch, targets, text_targets(SIGLIP_TEXTS),
                tags=["_t0", "_t1"])


def test_lrp_maps():
    assert BIN.is_file(), f"binary {BIN} not found (build first or set VITATTN_BIN)"
    with T.section("lrp"), tempfile.TemporaryDirectory(prefix="vitattn_lrp_") as d:
        tmp = Path(d)
        check_family(tmp, Family("plain, biases", seed=0), [(0.05, 0.25), (0.3, 1.0)])
        check_family(tmp, Family("no biases, positions, class token", seed=1, biases=False), [(0.05, 0.25), (0.0, 0.1)])
        check_family(tmp, Family("registers + layer scale", seed=2, registers=4), [(0.1, 0.25)])
        check_family(tmp, Family("3x5 patches on a 4x4 model", seed=3, grid=(3, 5)), [(0.1, 0.25)])
        check_pixels(tmp, timm_case(tmp), (3, 5), 0.2, 0.5, seed=6, methods=("lrp", "all"))


def test_lrp_heads_and_texts():
    """The pooled heads (distilled, patch mean, class and patch mean, SigLIP's probe) and the
    image–text logits of CLIP and SigLIP: patch maps for two γ pairs on a 3×5 grid (the HF Dinov2
    classifier at its trained 4×4, as its position resampling is DINOv2's own), and the pixel files."""
    assert BIN.is_file(), f"binary {BIN} not found (build first or set VITATTN_BIN)"
    gammas = [(0.05, 0.25), (0.3, 1.0)]
    with T.section("lrp heads and texts"), tempfile.TemporaryDirectory(prefix="vitattn_lrp_") as d:
        tmp = Path(d)
        for seed, make, grid in ((10, deit_distilled_case, (3, 5)), (20, timm_avg_case, (3, 5)),
                                 (30, hf_dinov2_case, (GRID, GRID)), (40, clip_text_case, (3, 5)),
                                 (50, siglip_text_case, (3, 5))):
            case = make(tmp)
            check_forward(tmp, case, grid, gammas, seed)
            check_pixels(tmp, case, grid, 0.2, 0.5, seed + 1)


def test_lrp_dinov3_refused():
    """DINOv3 (dinov3_reference's weights): no classifier, so --method lrp has no logit: one error
    line, exit 2. (Should it ever get a head, this fails and the oracle above wants a DINOv3 case.)"""
    assert BIN.is_file(), f"binary {BIN} not found (build first or set VITATTN_BIN)"
    from dinov3_reference import make_weights, write_st
    with tempfile.TemporaryDirectory(prefix="vitattn_lrp_") as d:
        tmp = Path(d)
        write_st(tmp / "dinov3.safetensors", make_weights())
        np.save(tmp / "x.npy", np.zeros((1, 3, 4 * P, 4 * P), np.float32))
        code, _, err = harness.run("forward", "--model", tmp / "dinov3.safetensors", tmp / "x.npy", "-o", tmp / "o",
                                   "--method", "lrp", "--class", "0")
        lines = [line for line in err.splitlines() if "error:" in line]
        assert code == 2 and len(lines) == 1 and "no classifier" in lines[0], err[-2000:]
