#!/usr/bin/python3
"""vitattn's backward pass and its class-specific relevance maps against PyTorch.

Run:  /usr/bin/python3 -m pytest tests/oracle/test_gradients.py
      Skips when torch cannot be imported (CI installs python3-torch); under CI=true a skip fails.
Env:  VITATTN_BIN  binary to test (default <repo>/build/dev/vitattn)

Nothing here comes from vitattn. Random ViTs are made here (harness.timm_tensors, timm's
names, written as F32 safetensors by tests/pylib/safetensors_io.py); the same float32 values
run through a torch ViT written below from the equations, in float64, on the same .npy input
that `vitattn forward --class c --method …` reads. Then:

  gradients  ∂y_c/∂A_l of every layer (A_l the attention probabilities, [H, T, T]) and
             ∂y_c/∂x_l (x_l the input of block l, [T, D]) from torch.autograd (retain_grad
             on A_l and x_l), against <stem>_grad_attention.npy and <stem>_grad_blocks.npy
  methods    each map from its definition (relevance.hpp, the README), written here on
             the autograd gradients: chefer, grad-rollout (discard ratio 0, 0.5, 0.9), legrad
             (the default first layer and another; and with --layer below the first layer,
             through the image command: the sum starts at --layer), gradcam
  reference  LeGrad as the authors' legrad/wrapper.py computes it (compute_legrad_clip) and
             Grad-CAM as pytorch-grad-cam computes it (GradCAM, reshape_transform, target
             layer blocks[-1].norm1), each on hooks like theirs; each difference is said
             where it is, and the maps are compared before their display steps
  bytes      every .npy of a gradient run identical at --threads 1 and --threads 2
  refused    --class on a model without a classifier or past its classes, --legrad-from
             past its layers, --method without --class: one error line, exit 2

Families: plain (qkv bias, erf GELU), registers + layer scale (DINOv2-like), no qkv bias,
tanh GELU with LayerNorm ε 1e-5 (from the file's metadata), and a 3×5 patch input on a model
trained on 4×4 (positions resampled as timm does: bicubic, align_corners=False, antialias).
Bound: max|vitattn − torch| / max|torch| ≤ 1e-4 for each layer's gradient and each map.
"""

import math
import tempfile
import time
from pathlib import Path

import numpy as np

import harness
import safetensors_io
from compare import relative
from harness import need
from tally import Tally

try:
    import torch
    import torch.nn as nn
    import torch.nn.functional as F
except ImportError as e:  # CI installs python3-torch (scripts/install-deps.sh)
    need(False, f"cannot import torch ({e}); install python3-torch")

BIN = Path(harness.BIN)
REL_TOL = 1e-4
VERBOSE = False  # True: every check's figure
torch.set_num_threads(2)
T = Tally()
WORST = {}  # check kind -> largest relative difference seen, for the summary

# Tiny models: d = 32, 2 heads, MLP 64, 8-pixel patches on a 4×4 grid, 7 classes.
D, HEADS, MLP, P, GRID, CLASSES = 32, 2, 64, 8, 4, 7
METHODS = ("chefer", "grad-rollout", "legrad", "gradcam")
DISCARD = (0.0, 0.5, 0.9)  # grad-rollout's discard ratios


def check(kind, label, got, ref):
    r = relative(got, ref)
    if VERBOSE:
        print(f"  {r:.3g}  {label}")
    WORST[kind] = max(WORST.get(kind, 0.0), r)
    shape = f"{np.shape(got)} vs {np.shape(ref)}"
    T.check(r <= REL_TOL and np.abs(np.asarray(ref)).max() > 0,
            f"{label}: max|diff|/max|ref| = {r:.3g} (bound {REL_TOL}; {shape})")


# ---------------------------------------------------------------------------
# The families: timm-named weights, what the file's metadata says
# ---------------------------------------------------------------------------


class Family:
    def __init__(self, name, layers=3, registers=0, qkv_bias=True, gelu="erf", eps=1e-6, grid=(GRID, GRID), seed=0,
                 d=D, heads=HEADS, mlp=MLP, train_grid=GRID):
        self.name, self.layers, self.registers, self.qkv_bias = name, layers, registers, qkv_bias
        self.gelu, self.eps, self.grid, self.seed = gelu, eps, grid, seed
        self.d, self.heads, self.mlp, self.train_grid = d, heads, mlp, train_grid

    def tensors(self):
        # harness's weight scale (0.3) gives attention peaked enough to matter (max ≈ 0.7)
        # and a model whose float32 gradients are within about 1e-6 of its float64 ones
        # (torch's own float32 autograd, measured). Twice the qkv scale saturates the softmax
        # (max 0.99999) and torch float32 itself is then 1e-4 away from float64: no bound
        # on vitattn's float32 could be told from the model's conditioning.
        t = harness.timm_tensors(self.d, P, self.train_grid, self.layers, self.mlp, seed=self.seed, classes=CLASSES,
                                 registers=self.registers)
        if not self.qkv_bias:
            for i in range(self.layers):
                del t[f"blocks.{i}.attn.qkv.bias"]
        return t

    def metadata(self):
        m = {"num_heads": str(self.heads)}
        if self.gelu != "erf":
            m["gelu"] = self.gelu
        if self.eps != 1e-6:
            m["layer_norm_eps"] = repr(self.eps)
        return m


FAMILIES = [
    Family("plain"),
    Family("registers + layer scale", registers=4, seed=1),
    Family("no qkv bias", qkv_bias=False, seed=2),
    Family("tanh GELU, eps 1e-5", gelu="tanh", eps=1e-5, seed=3),
    Family("3x5 patches on a 4x4 model", grid=(3, 5), layers=2, seed=4),
]


# ---------------------------------------------------------------------------
# A ViT in torch, from the equations (pre-norm blocks as timm writes them)
# ---------------------------------------------------------------------------


def layer_norm(x, w, b, eps):
    return F.layer_norm(x, (x.shape[-1],), w, b, eps)


class Attention(nn.Module):
    """softmax(Q·Kᵀ/√d_head)·V per head, then the projection. The probabilities A of the last
    call are kept (attention_map) with their gradient retained."""

    def __init__(self, t, prefix, heads):
        super().__init__()
        self.heads = heads
        self.w_qkv, self.b_qkv = t[prefix + "qkv.weight"], t.get(prefix + "qkv.bias")
        self.w_proj, self.b_proj = t[prefix + "proj.weight"], t[prefix + "proj.bias"]

    def forward(self, x):                                   # x [B, T, D]
        b, n, d = x.shape
        d_head = d // self.heads
        qkv = F.linear(x, self.w_qkv, self.b_qkv)           # [B, T, 3D]: [q | k | v], head h at h·d_head in each
        q, k, v = qkv.reshape(b, n, 3, self.heads, d_head).permute(2, 0, 3, 1, 4)  # each [B, H, T, d_head]
        a = torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(d_head), dim=-1)      # [B, H, T, T]
        if a.requires_grad:
            a.retain_grad()
        self.attention_map = a
        heads = (a @ v).transpose(1, 2).reshape(b, n, d)   # [B, T, D]
        return F.linear(heads, self.w_proj, self.b_proj)


class LayerNorm(nn.Module):
    def __init__(self, w, b, eps):
        super().__init__()
        self.w, self.b, self.eps = w, b, eps

    def forward(self, x):
        return layer_norm(x, self.w, self.b, self.eps)


class Block(nn.Module):
    """x + ls1·attn(norm1(x)), then + ls2·fc2(GELU(fc1(norm2(·)))). Keeps its input (block_input,
    gradient retained), norm1's output (norm1_output) and its output (feat_post_mlp, as
    LeGrad's hooked block names it)."""

    def __init__(self, t, i, fam):
        super().__init__()
        p = f"blocks.{i}."
        self.norm1 = LayerNorm(t[p + "norm1.weight"], t[p + "norm1.bias"], fam.eps)
        self.attn = Attention(t, p + "attn.", fam.heads)
        self.norm2 = LayerNorm(t[p + "norm2.weight"], t[p + "norm2.bias"], fam.eps)
        self.fc1 = (t[p + "mlp.fc1.weight"], t[p + "mlp.fc1.bias"])
        self.fc2 = (t[p + "mlp.fc2.weight"], t[p + "mlp.fc2.bias"])
        self.ls1, self.ls2 = t.get(p + "ls1.gamma"), t.get(p + "ls2.gamma")
        self.approximate = "tanh" if fam.gelu == "tanh" else "none"

    def forward(self, x):
        if x.requires_grad:
            x.retain_grad()
        self.block_input = x
        self.norm1_output = self.norm1(x)
        a = self.attn(self.norm1_output)
        x = x + (a * self.ls1 if self.ls1 is not None else a)
        m = F.linear(F.gelu(F.linear(self.norm2(x), *self.fc1), approximate=self.approximate), *self.fc2)
        x = x + (m * self.ls2 if self.ls2 is not None else m)
        self.feat_post_mlp = x
        return x


class ViT(nn.Module):
    def __init__(self, t, fam):
        super().__init__()
        self.t, self.fam = t, fam
        self.blocks = nn.ModuleList(Block(t, i, fam) for i in range(fam.layers))
        self.norm = LayerNorm(t["norm.weight"], t["norm.bias"], fam.eps)
        self.first_patch = 1 + fam.registers

    def positions(self, gh, gw):
        """The patch positions [gh·gw, D]; resampled from the trained grid as timm's
        resample_abs_pos_embed does (bicubic, align_corners=False, antialias=True)."""
        g, d = self.fam.train_grid, self.fam.d
        pos = self.t["pos_embed"][0, 1:]
        if (gh, gw) == (g, g):
            return pos
        grid = pos.reshape(1, g, g, d).permute(0, 3, 1, 2)
        grid = F.interpolate(grid, size=(gh, gw), mode="bicubic", align_corners=False, antialias=True)
        return grid.permute(0, 2, 3, 1).reshape(gh * gw, d)

    def embed(self, x):
        """[B, 3, H, W] → [B, T, D] = [cls + pos_0; registers; W_E·p + b_E + pos]."""
        b, _, h, w = x.shape
        patches = F.conv2d(x, self.t["patch_embed.proj.weight"], self.t["patch_embed.proj.bias"], stride=P)
        patches = patches.flatten(2).transpose(1, 2) + self.positions(h // P, w // P)  # [B, gh·gw, D]
        cls = (self.t["cls_token"][0, 0] + self.t["pos_embed"][0, 0]).expand(b, 1, -1)
        parts = [cls]
        if self.fam.registers:
            parts.append(self.t["register_tokens"].expand(b, -1, -1))  # no position: DINOv2's registers
        return torch.cat(parts + [patches], dim=1)

    def logits(self, x):
        """The classifier on the final norm of the class token: [B, T, D] → [B, classes]."""
        return F.linear(self.norm(x[:, 0]), self.t["head.weight"], self.t["head.bias"])

    def forward(self, image):
        x = self.embed(image).detach().requires_grad_(True)  # the stream is the graph's leaf: x_0 gets a gradient
        for blk in self.blocks:
            x = blk(x)
        return self.logits(x)


def torch_model(tensors, fam):
    return ViT({k: torch.from_numpy(np.asarray(v, np.float64)) for k, v in tensors.items()}, fam)


# ---------------------------------------------------------------------------
# Autograd: ∂y_c/∂A_l and ∂y_c/∂x_l
# ---------------------------------------------------------------------------


def autograd_gradients(model, image, c):
    """(grad_attention [B, L, H, T, T], grad_blocks [B, L, T, D], logits [B, classes]) in float64.
    The images of a batch do not mix, so the sum of their y_c gives each its own gradient."""
    logits = model(image)
    logits[:, c].sum().backward()
    g_attn = torch.stack([blk.attn.attention_map.grad for blk in model.blocks], dim=1)
    g_blocks = torch.stack([blk.block_input.grad for blk in model.blocks], dim=1)
    return g_attn.numpy(), g_blocks.numpy(), logits.detach().numpy()


# ---------------------------------------------------------------------------
# The methods, from their definitions (relevance.hpp; the text), per image
# ---------------------------------------------------------------------------


def patch_map(row, first, gh, gw):
    """Row 0's patch columns on the grid, row-major as the patches are numbered."""
    return row[first:].reshape(gh, gw)


def chefer_map(attn, grads, first, gh, gw):
    """R = I; for l = 0 … L−1: Ā = mean over heads of max(0, G_l ⊙ A_l); R ← R + Ā·R. Map = R[0, P]."""
    n = attn[0].shape[-1]
    r = torch.eye(n, dtype=torch.float64)
    for a, g in zip(attn, grads):
        a_bar = (g * a).clamp(min=0).mean(dim=0)
        r = r + a_bar @ r
    return patch_map(r[0], first, gh, gw)


def grad_rollout_map(attn, grads, discard_ratio, first, gh, gw):
    """F = max(0, mean over heads of A ⊙ G); the discard_ratio smallest entries of F set to 0,
    never the class token's own (F[0, 0]); a = (F + I)/2, each row renormalised to sum 1;
    R ← a·R from R = I. Map = R[0, P]."""
    n = attn[0].shape[-1]
    r = torch.eye(n, dtype=torch.float64)
    for a, g in zip(attn, grads):
        f = (a * g).mean(dim=0).clamp(min=0)
        flat = f.flatten().clone()
        k = int(flat.numel() * discard_ratio)
        if k:
            idx = torch.topk(flat, k, largest=False).indices
            flat[idx[idx != 0]] = 0
        f = flat.reshape(n, n)
        step = (f + torch.eye(n, dtype=torch.float64)) / 2
        step = step / step.sum(dim=-1, keepdim=True)
        r = step @ r
    return patch_map(r[0], first, gh, gw)


def legrad_map(model, image, c, legrad_from, first, gh, gw, last=None):
    """For l = from … last (default L−1): s_l = the class-c logit read from layer l's output
    through the final norm and the classifier; E_l = mean over heads and query rows of
    max(0, ∂s_l/∂A_l) at the patch columns. Map = Σ_l E_l. One image: image [1, 3, H, W]."""
    model(image)
    layers = len(model.blocks)
    last = layers - 1 if last is None else last
    start = legrad_from if legrad_from >= 0 else max(0, layers + legrad_from)  # −K: the last K layers, all when fewer
    total = 0
    for l in range(start, last + 1):
        s_l = model.logits(model.blocks[l].feat_post_mlp)[0, c]
        (g,) = torch.autograd.grad(s_l, model.blocks[l].attn.attention_map, retain_graph=True)
        total = total + g[0].clamp(min=0).mean(dim=(0, 1))
    return patch_map(total.detach(), first, gh, gw)


def gradcam_map(model, image, c, first, gh, gw):
    """X = the last block's norm1 output at P (|P|, D), w = mean over P of ∂y_c/∂X; map =
    max(0, X·w). One image."""
    logits = model(image)
    x = model.blocks[-1].norm1_output
    (d_x,) = torch.autograd.grad(logits[0, c], x)
    xp, gp = x.detach()[0, first:], d_x[0, first:]  # (|P|, D) each
    w = gp.mean(dim=0)                               # (D)
    return (xp @ w).clamp(min=0).reshape(gh, gw)


# ---------------------------------------------------------------------------
# The reference code's algorithms, on hooks like theirs
# ---------------------------------------------------------------------------


def legrad_authors(model, image, c, layer_index=-2):
    """LeGrad's LeWrapper.compute_legrad_clip (WalBouss/LeGrad, legrad/wrapper.py), for a ViT
    classifier. Theirs and here:
      starting_depth = layer_index if ≥ 0 else len(blocks) + layer_index (default −2);
      for each block from there: the block's feat_post_mlp (its output, a hooked forward);
        theirs: ln_post(mean over all tokens) @ proj, L2-normalised, dot a text embedding;
        here:   the class token through the final norm and the classifier, logit c (a ViT
                classifier's decision is read from its class token, and it has no text side);
      grad = autograd.grad(sum of the targets, attn.attention_map) (the softmax probabilities,
        [batch, heads, N, N]); clamp(min=0); mean over heads (dim 1) then over query rows
        (dim 1); the patch columns: theirs [:, 1:] (CLIP has no registers), here the registers
        are left out too;
      accumulated over the layers.
    Then theirs: F.interpolate(scale_factor=patch_size, mode='bilinear') and min_max: display
    steps, left out here and compared separately (legrad_display)."""
    model(image)
    blocks = list(model.blocks)
    starting_depth = layer_index if layer_index >= 0 else len(blocks) + layer_index
    accum = 0
    for blk in blocks[starting_depth:]:
        img_feat = blk.feat_post_mlp
        target = torch.sum(model.logits(img_feat)[:, c])
        grad = torch.autograd.grad(target, [blk.attn.attention_map], retain_graph=True)[0]  # [b, h, N, N]
        grad = torch.clamp(grad, min=0.0)
        image_relevance = grad.mean(dim=1).mean(dim=1)[:, model.first_patch:]
        accum = accum + image_relevance
    return accum.detach()  # [b, gh·gw]


def legrad_display(flat, gh, gw):
    """Their last two steps: the patch map upsampled bilinearly by the patch size, then min-max."""
    m = F.interpolate(torch.as_tensor(flat).reshape(1, 1, gh, gw), scale_factor=P, mode="bilinear")
    return (m - m.min()) / (m.max() - m.min())


def gradcam_authors(model, image, c, gh, gw):
    """pytorch-grad-cam's GradCAM (jacobgil/pytorch-grad-cam: base_cam.py, grad_cam.py,
    activations_and_gradients.py) with target_layers=[model.blocks[-1].norm1] and the ViT
    example's reshape_transform. Theirs and here:
      a forward hook on the target layer keeps its output, and a hook on that output tensor
        its gradient, each through reshape_transform: tokens [:, 1:] (the class token dropped;
        here the registers too, which their transform would keep and then fail to reshape)
        → [B, gh, gw, C] → [B, C, gh, gw];
      loss = Σ over the batch of ClassifierOutputTarget(c) = the logit c; loss.backward();
      weights = mean of the gradients over (2, 3) (the patches); cam = Σ_C weights·activations;
      np.maximum(cam, 0).
    Then theirs: scale_cam_image (min-max and cv2.resize to the input size) and again in
    aggregate_multi_layers: display steps, left out here."""
    store = {}

    def reshape_transform(tensor):
        result = tensor[:, model.first_patch:, :].reshape(tensor.size(0), gh, gw, tensor.size(2))
        return result.transpose(2, 3).transpose(1, 2)

    def save_activation(module, inputs, output):
        store["activation"] = reshape_transform(output).detach().numpy()

        def save_gradient(grad):
            store["gradient"] = reshape_transform(grad).detach().numpy()

        output.register_hook(save_gradient)

    handle = model.blocks[-1].norm1.register_forward_hook(save_activation)
    try:
        outputs = model(image)
        loss = sum(output[c] for output in outputs)
        loss.backward(retain_graph=True)
    finally:
        handle.remove()
    activations, grads = store["activation"], store["gradient"]
    weights = np.mean(grads, axis=(2, 3))
    cam = (weights[:, :, None, None] * activations).sum(axis=1)
    return np.maximum(cam, 0)  # [B, gh, gw]


# ---------------------------------------------------------------------------
# vitattn
# ---------------------------------------------------------------------------


def write_model(folder, fam):
    tensors = fam.tensors()
    path = folder / (fam.name.replace(" ", "_").replace(",", "") + ".safetensors")
    safetensors_io.write(path, tensors, fam.metadata(), dtype="F32")
    return path, tensors


def vitattn_forward(model_path, x_path, out, c, extra=()):
    """Runs `vitattn forward --class c` and returns {suffix: array} of what it wrote, or None."""
    args = ["forward", "--model", model_path, str(x_path), "-o", out, "--class", str(c), *extra]
    if not harness.run_ok(T, f"vitattn {' '.join(map(str, args))}", args):
        return None
    stem = Path(x_path).stem
    return {p.name[len(stem) + 1:-4]: np.load(p) for p in Path(out).glob(f"{stem}_*.npy")}


def check_family(tmp, fam):
    model_path, tensors = write_model(tmp, fam)
    gh, gw = fam.grid
    rng = np.random.default_rng(100 + fam.seed)
    x = rng.standard_normal((2, 3, gh * P, gw * P)).astype(np.float32)
    x_path = tmp / f"x{fam.seed}.npy"
    np.save(x_path, x)
    model = torch_model(tensors, fam)
    image = torch.from_numpy(x.astype(np.float64))
    c = int(fam.seed * 3 + 2) % CLASSES
    g_attn, g_blocks, logits = autograd_gradients(model, image, c)
    first = model.first_patch
    other_from = 0  # LeGrad from the first layer: every layer summed

    runs = {}
    runs["a"] = vitattn_forward(model_path, x_path, tmp / f"out{fam.seed}a", c,
                                ["--method", ",".join(METHODS)])
    runs["b"] = vitattn_forward(model_path, x_path, tmp / f"out{fam.seed}b", c,
                                ["--method", "grad-rollout,legrad", "--discard-ratio", str(DISCARD[1]),
                                 "--legrad-from", str(other_from)])
    runs["c"] = vitattn_forward(model_path, x_path, tmp / f"out{fam.seed}c", c,
                                ["--method", "grad-rollout", "--discard-ratio", str(DISCARD[2])])
    if None in runs.values():
        return
    got = runs["a"]
    label = f"{fam.name}, class {c}"
    check("logits", f"{label}: logits", got["logits"], logits)
    T.check(got["grad_attention"].shape == g_attn.shape,
            f"{label}: grad_attention is {got['grad_attention'].shape}, expected {g_attn.shape}")
    T.check(got["grad_blocks"].shape == g_blocks.shape,
            f"{label}: grad_blocks is {got['grad_blocks'].shape}, expected {g_blocks.shape}")
    for n in range(x.shape[0]):
        for l in range(fam.layers):
            check("∂y/∂A_l", f"{label}: image {n}, ∂y_c/∂A_{l}", got["grad_attention"][n, l], g_attn[n, l])
            check("∂y/∂x_l", f"{label}: image {n}, ∂y_c/∂x_{l}", got["grad_blocks"][n, l], g_blocks[n, l])

    for n in range(x.shape[0]):
        one = image[n:n + 1]
        model(one)  # fresh graph for this image: its attention, then its gradients from autograd
        attn = [blk.attn.attention_map[0].detach() for blk in model.blocks]
        grads = [torch.from_numpy(g_attn[n, l]) for l in range(fam.layers)]
        at = f"{label}: image {n}"
        rollout_0, rollout_half, rollout_most = (grad_rollout_map(attn, grads, r, first, gh, gw) for r in DISCARD)
        # F is mostly small (gradient-weighted) and often 0 after the clamp: half of it
        # discarded changes the map little, 90 % changes it much, so that one proves the ratio is read.
        T.check(relative(rollout_most, rollout_0) > 10 * REL_TOL, f"{at}: discarding 90 % of F changes nothing")
        check("chefer", f"{at}: chefer", got["relevance_chefer"][n], chefer_map(attn, grads, first, gh, gw))
        check("grad-rollout", f"{at}: grad-rollout, discard 0", got["relevance_grad-rollout"][n], rollout_0)
        check("grad-rollout", f"{at}: grad-rollout, discard 0.5", runs["b"]["relevance_grad-rollout"][n], rollout_half)
        check("grad-rollout", f"{at}: grad-rollout, discard 0.9", runs["c"]["relevance_grad-rollout"][n], rollout_most)
        legrad_last, legrad_all = (legrad_map(model, one, c, f, first, gh, gw) for f in (-2, other_from))
        check("legrad", f"{at}: legrad", got["relevance_legrad"][n], legrad_last)
        check("legrad", f"{at}: legrad from layer {other_from}", runs["b"]["relevance_legrad"][n], legrad_all)
        if fam.layers > 2:
            T.check(relative(legrad_last, legrad_all) > 1e-3, f"{at}: LeGrad from layer 0 is its default's map")
        check("gradcam", f"{at}: gradcam", got["relevance_gradcam"][n], gradcam_map(model, one, c, first, gh, gw))

    # The reference code's algorithms, the whole batch at once as theirs run.
    ref = legrad_authors(model, image, c).numpy().reshape(-1, gh, gw)
    check("legrad (authors')", f"{label}: legrad vs LeGrad's wrapper.py", got["relevance_legrad"], ref)
    for n in range(x.shape[0]):
        check("legrad (authors', displayed)", f"{label}: image {n}: legrad upsampled + min-max as LeGrad shows it",
              legrad_display(got["relevance_legrad"][n].astype(np.float64), gh, gw), legrad_display(ref[n], gh, gw))
    ref = legrad_authors(model, image, c, layer_index=other_from).numpy().reshape(-1, gh, gw)
    check("legrad (authors')", f"{label}: legrad from {other_from} vs LeGrad's wrapper.py",
          runs["b"]["relevance_legrad"], ref)
    check("gradcam (pytorch-grad-cam)", f"{label}: gradcam vs pytorch-grad-cam",
          got["relevance_gradcam"], gradcam_authors(model, image, c, gh, gw))


def check_legrad_below_its_first_layer(tmp):
    """--method legrad with --layer below LeGrad's first layer (the default, the last 2 of 3 layers):
    the sum starts at --layer, so the map is that layer's E_l alone, against torch. Through the
    image command (forward has no --layer), on a PNG at the model's own size (no resize) with the
    normalisation given, so the input is known here: RGB / 255, then (x − mean) / std."""
    import cv2
    fam = Family("legrad layer", seed=6)
    model_path, tensors = write_model(tmp, fam)
    model = torch_model(tensors, fam)
    gh, gw = fam.grid
    bgr = harness.photo_like(gh * P, gw * P, 6)
    png = tmp / "legrad_layer.png"
    cv2.imwrite(str(png), bgr)
    mean, std = (0.45, 0.5, 0.55), (0.25, 0.2, 0.3)
    rgb = bgr[:, :, ::-1].astype(np.float32) / np.float32(255)
    x = (rgb - np.asarray(mean, np.float32)) / np.asarray(std, np.float32)
    image = torch.from_numpy(np.ascontiguousarray(x.transpose(2, 0, 1))[None].astype(np.float64))
    c = 4
    for layer in (0, 1):
        out = tmp / f"legrad_layer{layer}"
        args = ["--model", model_path, png, "-o", out, "--method", "legrad", "--class", str(c), "--layer", str(layer),
                "--save-attention", "--mean", ",".join(map(str, mean)), "--std", ",".join(map(str, std))]
        if not harness.run_ok(T, f"legrad --layer {layer}", args):
            continue
        got = np.load(out / "legrad_layer_cls.npy")
        want = legrad_map(model, image, c, layer, model.first_patch, gh, gw, last=layer)
        check("legrad", f"legrad --layer {layer}: layer {layer}'s E_l alone", got, want)


def check_threads(tmp):
    """Every output of a gradient run, byte for byte, at --threads 1 and 2: a model whose
    products are large enough to be cut into tiles and handed to threads (65 tokens, D = 96)."""
    fam = Family("threads", layers=2, d=96, heads=3, mlp=384, grid=(8, 8), train_grid=8, seed=9)
    model_path, _ = write_model(tmp, fam)
    x = np.random.default_rng(5).standard_normal((2, 3, 8 * P, 8 * P)).astype(np.float32)
    np.save(tmp / "xt.npy", x)
    files = {}
    for threads in ("1", "2"):
        out = tmp / f"threads{threads}"
        args = ["forward", "--model", model_path, tmp / "xt.npy", "-o", out, "--class", "3", "--threads", threads,
                "--method", ",".join(METHODS), "--discard-ratio", "0.3"]
        if not harness.run_ok(T, f"--threads {threads}", args):
            return
        files[threads] = harness.files_of(out)
    names = sorted(files["1"])
    T.check(len(names) == 7 + len(METHODS), f"--threads: {len(names)} files written: {names}")
    T.check(names == sorted(files["2"]), f"--threads 1 wrote {names}, --threads 2 {sorted(files['2'])}")
    for name in names:
        T.check(files["1"][name] == files["2"].get(name), f"{name}: bytes differ between --threads 1 and 2")
    print(f"  --threads 1 and 2: {len(names)} files byte-identical", flush=True)


def test_gradients():
    assert BIN.is_file(), f"binary {BIN} not found (build first or set VITATTN_BIN)"
    print(f"torch {torch.__version__}, binary {BIN}", flush=True)
    start = time.monotonic()
    with T.section("gradients"), tempfile.TemporaryDirectory(prefix="vitattn_grad_") as d:
        tmp = Path(d)
        for fam in FAMILIES:
            check_family(tmp, fam)
        check_legrad_below_its_first_layer(tmp)
        check_threads(tmp)
        print("worst max|diff|/max|ref|:")
        for k, v in WORST.items():
            print(f"  {k:32s} {v:.3g}")
        print(f"runtime {time.monotonic() - start:.1f} s")


def test_class_refused():
    """--class on a model without a classifier, or past its classes: one error line, exit 2,
    nothing written."""
    assert BIN.is_file(), f"binary {BIN} not found (build first or set VITATTN_BIN)"
    with tempfile.TemporaryDirectory(prefix="vitattn_grad_") as d:
        tmp = Path(d)
        with_head, _ = write_model(tmp, Family("refused", layers=2))
        backbone = tmp / "backbone.safetensors"
        harness.timm_checkpoint(backbone, D, P, GRID, 2, MLP, HEADS)
        np.save(tmp / "x.npy", np.zeros((3, GRID * P, GRID * P), np.float32))
        cases = [(with_head, ["--class", str(CLASSES)], f"has classes 0…{CLASSES - 1}"),
                 (backbone, ["--class", "0"], "has no classifier"),
                 (with_head, ["--class", "0", "--method", "legrad", "--legrad-from", "2"], "--legrad-from 2"),
                 (with_head, ["--method", "chefer"], "--method requires --class")]
        for model, args, says in cases:
            out = tmp / "out"
            p = harness.run_process("forward", "--model", model, tmp / "x.npy", "-o", out, *args)
            lines = p.stderr.strip().splitlines()
            assert p.returncode == 2, f"{args}: exit {p.returncode}, expected 2: {p.stderr}"
            assert len(lines) == 1 and lines[0].startswith("error: ") and says in lines[0], f"{args}: {p.stderr!r}"
            assert not out.exists() or not any(out.iterdir()), f"{args}: wrote {list(out.iterdir())}"
