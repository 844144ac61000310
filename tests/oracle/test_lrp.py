#!/usr/bin/python3
"""vitattn's AttnLRP map (--method lrp) against a torch implementation of its rules.

Run:  /usr/bin/python3 -m pytest tests/oracle/test_lrp.py
      Skips when torch cannot be imported (CI installs python3-torch); under CI=true a skip fails.
Env:  VITATTN_BIN  binary to test (default <repo>/build/dev/vitattn)

Nothing here comes from vitattn. Random ViTs are made here (harness.timm_tensors, timm's names,
F32 safetensors); the same float32 values run through a torch ViT written below in float64, in
which AttnLRP's rules (core/lrp.hpp; LXT's cp_LRP for a ViT with zennit's Gamma) are the
backward itself, so the relevance is image ⊙ image.grad summed over the colour channels:

  attention   the probabilities detached (CP-LRP): nothing into q and k
  GELU        an autograd Function whose backward is d·GELU(h)/h (the identity rule)
  LayerNorm   (x − mean)/σ.detach()·w + b (LXT's layer_norm_forward)
  linear      an autograd Function whose backward is zennit's Gamma rule in its own form: the
              four modified outputs (x⁺, W + γW⁺, b + γb⁺), (x⁻, W + γW⁻), (x⁺, W + γW⁻, b + γb⁻),
              (x⁻, W + γW⁺); R_z = z·d_z spread over them with zennit's stabilize; the relevance
              at x their sum, and the gradient handed down R_x / x (LXT's monkey_patch_zennit)
  patch embedding  the same Function on the unfolded patches, with γ_conv; the classifier too

Checked: `vitattn forward --class c --method lrp` (<stem>_relevance_lrp.npy, the pixels summed
over each patch) against the torch map, two γ pairs on a model with biases; a model without
biases, positions and class token, on which Σ R = y_c (conservation, against torch's logit);
registers with layer scale (DINOv2-like); a 3×5 grid from a 4×4 model (positions resampled as
timm does); and the image
command's --save-attention <name>_pixels.npy [S_h, S_w] against the torch pixel map.
Bound: max|vitattn − torch| / max|torch| ≤ 1e-4.
"""

import math
import tempfile
from pathlib import Path

import numpy as np

import harness
import safetensors_io
from harness import need
from tally import Tally

try:
    import torch
    import torch.nn.functional as F
except ImportError as e:  # CI installs python3-torch (scripts/install-deps.sh)
    need(False, f"cannot import torch ({e}); install python3-torch")

BIN = Path(harness.BIN)
REL_TOL = 1e-4
EPS_STAB = 1e-6  # zennit's stabilize
T = Tally()
D, HEADS, MLP, P, GRID, CLASSES = 32, 2, 64, 8, 4, 7


def relative(got, ref):
    got, ref = np.asarray(got, np.float64), np.asarray(ref, np.float64)
    if got.shape != ref.shape:
        return math.inf
    scale = np.abs(ref).max()
    return float(np.abs(got - ref).max() / scale) if scale > 0 else float(np.abs(got).max())


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


class IdentityGelu(torch.autograd.Function):
    @staticmethod
    def forward(ctx, h, approximate):
        out = F.gelu(h, approximate=approximate)
        ctx.save_for_backward(out / h)
        return out

    @staticmethod
    def backward(ctx, d):
        (ratio,) = ctx.saved_tensors
        return d * ratio, None


def layer_norm(x, w, b, eps):
    mean = x.mean(-1, keepdim=True)
    std = ((x - mean) ** 2).mean(-1, keepdim=True).add(eps).sqrt()
    return (x - mean) / std.detach() * w + b


# ---------------------------------------------------------------------------
# The families and the torch ViT with those rules
# ---------------------------------------------------------------------------


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


def torch_lrp(t, fam, image, c, g_lin, g_conv):
    """(pixel relevance [B, H, W], logits [B, classes]) in float64."""
    t = {k: torch.from_numpy(np.asarray(v, np.float64)) for k, v in t.items()}
    eps = 1e-6
    b, _, h, w = image.shape
    gh, gw = h // P, w // P
    x_in = image.clone().requires_grad_(True)
    cols = F.unfold(x_in, P, stride=P).transpose(1, 2)                     # [B, gh·gw, 3·P·P] (c, y, x)
    w_patch = t["patch_embed.proj.weight"].reshape(D, -1)
    tok = linear_gamma(cols, w_patch, t["patch_embed.proj.bias"], g_conv)  # [B, gh·gw, D]
    pos = t["pos_embed"][0, 1:]
    if (gh, gw) != (GRID, GRID):  # timm's resample_abs_pos_embed
        grid = pos.reshape(1, GRID, GRID, D).permute(0, 3, 1, 2)
        grid = F.interpolate(grid, size=(gh, gw), mode="bicubic", align_corners=False, antialias=True)
        pos = grid.permute(0, 2, 3, 1).reshape(gh * gw, D)
    tok = tok + pos
    parts = [(t["cls_token"][0, 0] + t["pos_embed"][0, 0]).expand(b, 1, -1)]
    if fam.registers:
        parts.append(t["register_tokens"].expand(b, -1, -1))
    x = torch.cat(parts + [tok], dim=1)
    d_head = D // HEADS
    for i in range(fam.layers):
        p = f"blocks.{i}."
        y = layer_norm(x, t[p + "norm1.weight"], t[p + "norm1.bias"], eps)
        w_qkv, b_qkv = t[p + "attn.qkv.weight"], t[p + "attn.qkv.bias"]
        q = F.linear(y, w_qkv[:D], b_qkv[:D]).detach()
        k = F.linear(y, w_qkv[D:2 * D], b_qkv[D:2 * D]).detach()
        v = linear_gamma(y, w_qkv[2 * D:], b_qkv[2 * D:], g_lin)
        split = lambda m: m.reshape(b, -1, HEADS, d_head).transpose(1, 2)  # noqa: E731  [B, H, T, d_head]
        a = torch.softmax(split(q) @ split(k).transpose(-2, -1) / math.sqrt(d_head), dim=-1).detach()
        heads = (a @ split(v)).transpose(1, 2).reshape(b, -1, D)
        o = linear_gamma(heads, t[p + "attn.proj.weight"], t[p + "attn.proj.bias"], g_lin)
        x = x + (o * t[p + "ls1.gamma"] if p + "ls1.gamma" in t else o)
        y = layer_norm(x, t[p + "norm2.weight"], t[p + "norm2.bias"], eps)
        hdn = linear_gamma(y, t[p + "mlp.fc1.weight"], t[p + "mlp.fc1.bias"], g_lin)
        m = linear_gamma(IdentityGelu.apply(hdn, "none"), t[p + "mlp.fc2.weight"], t[p + "mlp.fc2.bias"],
                         g_lin)
        x = x + (m * t[p + "ls2.gamma"] if p + "ls2.gamma" in t else m)
    cls = layer_norm(x[:, 0], t["norm.weight"], t["norm.bias"], eps)
    logits = linear_gamma(cls, t["head.weight"], t["head.bias"], g_lin)
    logits[:, c].sum().backward()
    return (x_in * x_in.grad).sum(1).detach().numpy(), logits.detach().numpy()


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
        pixels, logits = torch_lrp(tensors, fam, torch.from_numpy(x.astype(np.float64)), c, gamma_linear, gamma_conv)
        got = vitattn_lrp(model_path, x_path, tmp / f"out{fam.seed}_{gamma_linear}_{gamma_conv}", c, gamma_linear,
                          gamma_conv)
        if got is None:
            continue
        check(f"{label}: patch map", got, patch_sums(pixels, gh, gw))
        if not fam.biases:  # conservation: Σ R over the pixels = y_c, against torch's forward logit
            check(f"{label}: Σ R = y_c (conservation)", got.sum(axis=(1, 2)), logits[:, c], tol=1e-5)
            check(f"{label}: torch's own Σ R = y_c", pixels.sum(axis=(1, 2)), logits[:, c], tol=1e-5)


def check_pixels(tmp):
    """The image command's --save-attention: <name>_pixels.npy [S_h, S_w] and the patch sums in
    <name>_cls.npy, on a 24×40 PNG kept at its size (--keep-aspect --img-size 24: 3×5 patches), with the
    normalisation given, so the input is known here: RGB / 255, then (x − mean) / std. With
    --method all the same map is <name>_pixels_lrp.npy beside the other methods' files."""
    import cv2
    fam = Family("pixels", seed=4, grid=(3, 5))
    tensors = fam.tensors()
    model_path = tmp / "pixels.safetensors"
    safetensors_io.write(model_path, tensors, {"num_heads": str(HEADS)}, dtype="F32")
    gh, gw = fam.grid
    bgr = harness.photo_like(gh * P, gw * P, 6)
    png = tmp / "pic.png"
    cv2.imwrite(str(png), bgr)
    mean, std = (0.45, 0.5, 0.55), (0.25, 0.2, 0.3)
    rgb = bgr[:, :, ::-1].astype(np.float32) / np.float32(255)
    x = (rgb - np.asarray(mean, np.float32)) / np.asarray(std, np.float32)
    image = torch.from_numpy(np.ascontiguousarray(x.transpose(2, 0, 1))[None].astype(np.float64))
    c, g_lin, g_conv = 3, 0.2, 0.5
    pixels, _ = torch_lrp(tensors, fam, image, c, g_lin, g_conv)
    norm = ["--mean", ",".join(map(str, mean)), "--std", ",".join(map(str, std))]
    gammas = ["--lrp-gamma-linear", str(g_lin), "--lrp-gamma-conv", str(g_conv)]
    for method, suffix in (("lrp", ""), ("all", "_lrp")):
        out = tmp / f"pixels_{method}"
        args = ["--model", model_path, png, "-o", out, "--method", method, "--class", str(c), "--save-attention",
                "--keep-aspect", "--img-size", str(gh * P), *norm, *gammas]
        if not harness.run_ok(T, f"--method {method} --save-attention", args):
            continue
        check(f"--method {method}: pic_pixels{suffix}.npy", np.load(out / f"pic_pixels{suffix}.npy"), pixels[0])
        check(f"--method {method}: pic_cls{suffix}.npy", np.load(out / f"pic_cls{suffix}.npy"),
              patch_sums(pixels, gh, gw)[0])


def test_lrp_maps():
    assert BIN.is_file(), f"binary {BIN} not found (build first or set VITATTN_BIN)"
    with T.section("lrp"), tempfile.TemporaryDirectory(prefix="vitattn_lrp_") as d:
        tmp = Path(d)
        check_family(tmp, Family("plain, biases", seed=0), [(0.05, 0.25), (0.3, 1.0)])
        check_family(tmp, Family("no biases, positions, class token", seed=1, biases=False), [(0.05, 0.25), (0.0, 0.1)])
        check_family(tmp, Family("registers + layer scale", seed=2, registers=4), [(0.1, 0.25)])
        check_family(tmp, Family("3x5 patches on a 4x4 model", seed=3, grid=(3, 5)), [(0.1, 0.25)])
        check_pixels(tmp)
