#!/usr/bin/python3
"""`vitattn forward`'s token outputs against PyTorch, on random models of every checkpoint family.

Run:  /usr/bin/python3 -m pytest tests/oracle/test_tokens.py
      Skips when torch cannot be imported (CI installs python3-torch); under CI=true a skip fails.
Env:  VITATTN_BIN  binary to test (default <repo>/build/dev/vitattn)

Nothing here comes from vitattn. Random tiny ViTs are made here (harness.timm_tensors, renamed
to each family's names by harness.renamed_from_timm, written as F32 safetensors by
tests/pylib/safetensors_io.py); the same float32 values run, in float64, through a torch ViT
written below from the equations, and the torchvision family also through torchvision's own
VisionTransformer. Each family's model gets two inputs in one `vitattn forward` run: N = 2
images at the trained 4×4 grid, and one 3×5 grid (non-square, positions resampled as the
family's library does). `-v` must name the family, so each row below is the family it says.

What is checked, and which reference implementation each part follows:

  _norms.npy [N, L, T]   the L2 norm of every token of the residual stream after each block,
      before the final norm. As DINOv2's DinoVisionTransformer.get_intermediate_layers(x,
      n=L, norm=False) (dinov2/models/vision_transformer.py, _get_intermediate_layers_not_chunked:
      each block's output, the final norm not applied) followed by
      torch.linalg.vector_norm(·, dim=-1), which is how the DINOv2 issues and the registers
      paper (Darcet et al. 2024, Fig. 3) measure "high-norm tokens"; for the HF families the
      same tensors are hidden_states[1:] of output_hidden_states=True, for timm
      forward_intermediates(norm=False), for torchvision the outputs of encoder.layers (read here
      by forward hooks on torchvision's own modules). Bound: every norm within 1e-4 relative.
  _tokens.npy [N, T, D]  every token after the final norm: DINOv2's forward_features
      (x_norm_clstoken, x_norm_regtokens, x_norm_patchtokens, in that order), HF's
      last_hidden_state, torchvision's encoder output; tintn has no final norm, so its last
      block's output. Bound: max|diff| / max|ref| ≤ 1e-4; _features.npy is its row 0, exactly.
  sinks [N, L, T]        the attention each token receives, token_diagnostics.hpp's
      definition: A_l[h, i, j] averaged over heads h and query rows i (each row sums to 1, so a
      layer's scores sum to 1). From _attention.npy with numpy against the same numbers from
      torch's attention (the softmax of the reference's own Q·Kᵀ/√d); within 1e-5: what
      forward writes gives them.
  register share [L]     the class token's row summed over the registers 1 … R, averaged over
      heads (token_diagnostics.hpp's class_attention_share): vitattn's own numbers, as --report
      writes them into its page's data (tokens_panel.register_share; its sinks too), for a PNG
      at the model's size (no resize) with the normalisation given, against the same
      definitions in numpy on torch's attention for that input; within 1e-5. (Computed from
      _attention.npy on both sides, this would check the attention again, not the share.)

Seen red: norms of each block's input instead of its output (every layer off by one; the
first layer's norms are the embedding's), the norms written one layer late (layer l's from
block l − 1), the norm summed without the square root, and _tokens.npy holding the last
block's output without the final norm; the register share over tokens 0 … R − 1 (the class
token's own attention counted, the last register's left out).
"""

import base64
import json
import math
import re
import tempfile
import time
from pathlib import Path

import numpy as np

import harness
import safetensors_io
from harness import need
from tally import Tally

try:
    import torch
    import torch.nn.functional as F
    from torchvision.models.vision_transformer import VisionTransformer
except ImportError as e:  # CI installs python3-torch python3-torchvision (scripts/install-deps.sh)
    need(False, f"cannot import torch/torchvision ({e}); install python3-torch python3-torchvision")

BIN = Path(harness.BIN)
NORM_TOL = 1e-4    # relative, each norm
TOKEN_TOL = 1e-4   # max|diff| / max|ref|
ATTN_TOL = 1e-5    # absolute, sinks and register shares (sums of probabilities)
torch.set_num_threads(2)
torch.set_grad_enabled(False)
T = Tally()
WORST = {}

# Tiny models: d = 32, 2 heads, MLP 64, 8-pixel patches on a trained 4×4 grid, 3 layers.
D, HEADS, MLP, P, GRID, LAYERS, CLASSES = 32, 2, 64, 8, 4, 3, 7
SQUARE, WIDE = (GRID, GRID), (3, 5)  # the trained grid; a non-square one (positions resampled)


class Family:
    """One checkpoint family as vitattn reads it: its names (harness.renamed_from_timm), and the
    defaults its library has (checkpoint_families.cpp says the same; the test states them here
    independently): LayerNorm ε, GELU, final norm, how positions are resampled."""

    def __init__(self, name, classes=CLASSES, registers=0, eps=1e-6, gelu="none", final_norm=True,
                 resample="bicubic", seed=0):
        self.name, self.classes, self.registers, self.eps = name, classes, registers, eps
        self.gelu, self.final_norm, self.resample, self.seed = gelu, final_norm, resample, seed


# How each family's library resamples positions: timm resample_abs_pos_embed (antialias),
# DINO/DINOv2 interpolate_pos_encoding (scale factor with a 0.1 offset), torchvision
# interpolate_embeddings (align_corners=True), HF ViT (size=, align_corners=False).
FAMILIES = [
    Family("timm", resample="antialias", seed=1),
    Family("dino", classes=0, resample="offset", seed=2),                     # no head: DINO's backbone
    Family("dinov2", classes=0, registers=4, resample="offset", seed=3),     # registers + layer scale
    Family("hf-vit", eps=1e-12, seed=4),
    Family("hf-dinov2", classes=0, registers=4, resample="offset", seed=5),  # registers + layer scale
    Family("torchvision", resample="corners", seed=6),
    Family("tintn", eps=1e-5, gelu="tanh", final_norm=False, seed=7),        # no final norm
]


# ---------------------------------------------------------------------------
# The reference: a pre-norm ViT from the equations, in float64
# ---------------------------------------------------------------------------


def resampled_positions(pos, gh, gw, how):
    """pos [1 + g·g, D] (class first) → the patch positions [gh·gw, D] for a gh×gw grid."""
    g = GRID
    patch = pos[1:]
    if (gh, gw) == (g, g):
        return patch
    grid = patch.reshape(1, g, g, -1).permute(0, 3, 1, 2)  # [1, D, g, g]
    if how == "offset":
        grid = F.interpolate(grid, scale_factor=((gh + 0.1) / g, (gw + 0.1) / g), mode="bicubic", align_corners=False)
    else:
        grid = F.interpolate(grid, size=(gh, gw), mode="bicubic", align_corners=how == "corners",
                             antialias=how == "antialias")
    assert grid.shape[-2:] == (gh, gw), grid.shape
    return grid.permute(0, 2, 3, 1).reshape(gh * gw, -1)


def reference(t, fam, x):
    """t: timm-named tensors (float64 torch); x [N, 3, H, W] float64 →
    (block outputs [N, L, T, D], final tokens [N, T, D], attention [N, L, H, T, T]).
    Tokens [class + pos_0; registers (no position, as DINOv2); W_E·p + b_E + pos]; each block
    x += ls1·proj(softmax(QKᵀ/√d)V) of norm1(x), then x += ls2·fc2(GELU(fc1(norm2(x))))."""
    n, _, h, w = x.shape
    gh, gw = h // P, w // P
    ln = lambda v, p: F.layer_norm(v, (D,), t[p + ".weight"], t[p + ".bias"], fam.eps)  # noqa: E731
    patches = F.conv2d(x, t["patch_embed.proj.weight"], t["patch_embed.proj.bias"], stride=P)
    patches = patches.flatten(2).transpose(1, 2) + resampled_positions(t["pos_embed"][0], gh, gw, fam.resample)
    parts = [(t["cls_token"][0, 0] + t["pos_embed"][0, 0]).expand(n, 1, D)]
    if fam.registers:
        parts.append(t["register_tokens"].expand(n, -1, -1))
    z = torch.cat(parts + [patches], dim=1)  # [N, T, D]
    outputs, attention = [], []
    d_head = D // HEADS
    for i in range(LAYERS):
        b = f"blocks.{i}."
        qkv = F.linear(ln(z, b + "norm1"), t[b + "attn.qkv.weight"], t[b + "attn.qkv.bias"])  # [N, T, 3D]
        q, k, v = qkv.reshape(n, -1, 3, HEADS, d_head).permute(2, 0, 3, 1, 4)                 # each [N, H, T, d]
        a = torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(d_head), dim=-1)                # [N, H, T, T]
        o = F.linear((a @ v).transpose(1, 2).reshape(n, -1, D), t[b + "attn.proj.weight"], t[b + "attn.proj.bias"])
        z = z + (o * t[b + "ls1.gamma"] if b + "ls1.gamma" in t else o)
        m = F.linear(F.gelu(F.linear(ln(z, b + "norm2"), t[b + "mlp.fc1.weight"], t[b + "mlp.fc1.bias"]),
                            approximate=fam.gelu), t[b + "mlp.fc2.weight"], t[b + "mlp.fc2.bias"])
        z = z + (m * t[b + "ls2.gamma"] if b + "ls2.gamma" in t else m)
        outputs.append(z)
        attention.append(a)
    final = ln(z, "norm") if fam.final_norm else z
    return torch.stack(outputs, 1).numpy(), final.numpy(), torch.stack(attention, 1).numpy()


def torchvision_reference(t, x):
    """The torchvision family at its trained size through torchvision's own VisionTransformer
    (float64): the block outputs from forward hooks on encoder.layers, the final tokens from
    one on encoder.ln, the attention from each block's MultiheadAttention on its ln_1 input."""
    model = VisionTransformer(image_size=GRID * P, patch_size=P, num_layers=LAYERS, num_heads=HEADS, hidden_dim=D,
                              mlp_dim=MLP, num_classes=CLASSES).double().eval()
    sd = harness.renamed_from_timm({k: v.numpy() for k, v in t.items()}, "torchvision", D, LAYERS)
    model.load_state_dict({k: torch.from_numpy(np.asarray(v)) for k, v in sd.items()}, strict=True)
    outputs, inputs, final = [None] * LAYERS, [None] * LAYERS, []

    def keep(i):
        def hook(mod, inp, out):  # returns None: the block's output is left as it is
            inputs[i], outputs[i] = inp[0], out
        return hook

    hooks = [blk.register_forward_hook(keep(i)) for i, blk in enumerate(model.encoder.layers)]
    hooks.append(model.encoder.ln.register_forward_hook(lambda mod, inp, out: final.append(out)))
    try:
        model(x)
    finally:
        for hk in hooks:
            hk.remove()
    attention = []
    for blk, xin in zip(model.encoder.layers, inputs):
        y = blk.ln_1(xin)
        attention.append(blk.self_attention(y, y, y, need_weights=True, average_attn_weights=False)[1])
    return torch.stack(outputs, 1).numpy(), final[0].numpy(), torch.stack(attention, 1).numpy()


# ---------------------------------------------------------------------------
# The diagnostics' definitions (token_diagnostics.hpp), in numpy
# ---------------------------------------------------------------------------


def norms_of(blocks):
    """[N, L, T, D] → [N, L, T]: each token's L2 norm."""
    return np.linalg.norm(blocks, axis=-1)


def sinks_of(attention):
    """[N, L, H, T, T] → [N, L, T]: column j's mean over heads and query rows."""
    return attention.mean(axis=(2, 3))


def register_share_of(attention, registers):
    """[N, L, H, T, T] → [N, L]: row 0 summed over tokens 1 … R, averaged over heads."""
    return attention[:, :, :, 0, 1:1 + registers].sum(axis=-1).mean(axis=-1)


# ---------------------------------------------------------------------------
# Checks
# ---------------------------------------------------------------------------


def note(kind, value):
    WORST[kind] = max(WORST.get(kind, 0.0), float(value))


def check_shape(label, got, ref):
    return T.check(got.shape == ref.shape, f"{label}: shape {got.shape}, expected {ref.shape}")


def check_norms(label, got, ref):
    if not check_shape(label, got, ref):
        return
    r = float((np.abs(got - ref) / ref).max())
    note("norms (relative, each)", r)
    T.check(ref.min() > 0 and r <= NORM_TOL, f"{label}: max |vitattn − torch| / torch = {r:.3g} (bound {NORM_TOL})")


def check_relative(label, kind, got, ref):
    if not check_shape(label, got, ref):
        return
    r = float(np.abs(got - ref).max() / np.abs(ref).max())
    note(kind, r)
    T.check(r <= TOKEN_TOL, f"{label}: max|diff| / max|ref| = {r:.3g} (bound {TOKEN_TOL})")


def check_absolute(label, kind, got, ref):
    if not check_shape(label, got, ref):
        return
    r = float(np.abs(got - ref).max())
    note(kind, r)
    T.check(r <= ATTN_TOL, f"{label}: max|diff| = {r:.3g} (bound {ATTN_TOL})")


def write_model(folder, fam):
    """The family's file and its tensors under timm's names (float64 torch, for the reference)."""
    tensors = harness.timm_tensors(D, P, GRID, LAYERS, MLP, seed=fam.seed, classes=fam.classes,
                                   registers=fam.registers)
    path = folder / f"{fam.name}.safetensors"
    safetensors_io.write(path, harness.renamed_from_timm(tensors, fam.name, D, LAYERS), {"num_heads": str(HEADS)},
                         dtype="F32")
    return path, {k: torch.from_numpy(np.asarray(v, np.float64)) for k, v in tensors.items()}


def check_family(tmp, fam):
    model_path, t = write_model(tmp, fam)
    rng = np.random.default_rng(100 + fam.seed)
    grids = {"square": (2, SQUARE), "wide": (1, WIDE)}
    inputs = {}
    for name, (n, (gh, gw)) in grids.items():
        x = rng.standard_normal((n, 3, gh * P, gw * P)).astype(np.float32)
        inputs[name] = x
        np.save(tmp / f"{fam.name}_{name}.npy", x)
    out = tmp / f"out_{fam.name}"
    args = ["forward", "-v", "--model", model_path, *(tmp / f"{fam.name}_{g}.npy" for g in grids), "-o", out]
    p = harness.run_process(*args)
    if not T.check(p.returncode == 0, f"{fam.name}: exit {p.returncode}: {p.stderr.strip()[-1500:]}"):
        return
    said = [w.split(":")[0].split()[0] for w in p.stderr.split("family ")[1:]]
    T.check(said[:1] == [fam.name], f"{fam.name}: -v names family {said}")

    for name, x in inputs.items():
        label = f"{fam.name}, {grids[name][1][0]}x{grids[name][1][1]} grid"
        stem = out / f"{fam.name}_{name}"
        got_norms = np.load(f"{stem}_norms.npy")
        got_tokens = np.load(f"{stem}_tokens.npy")
        got_attention = np.load(f"{stem}_attention.npy").astype(np.float64)
        features = np.load(f"{stem}_features.npy")
        T.check(got_norms.dtype == np.float32 and got_tokens.dtype == np.float32,
                f"{label}: dtypes {got_norms.dtype}, {got_tokens.dtype}")
        T.check(np.array_equal(features, got_tokens[:, 0]), f"{label}: _features.npy is not _tokens.npy's row 0")

        blocks, final, attention = reference(t, fam, torch.from_numpy(x.astype(np.float64)))
        check_norms(f"{label}: _norms.npy", got_norms, norms_of(blocks))
        check_relative(f"{label}: _tokens.npy", "tokens", got_tokens, final)
        check_absolute(f"{label}: sinks from _attention.npy", "sinks", sinks_of(got_attention), sinks_of(attention))
        T.check(np.abs(sinks_of(got_attention).sum(axis=-1) - 1).max() < 1e-5, f"{label}: a layer's sinks sum to 1")
        if fam.name == "torchvision" and name == "square":  # the library's own modules as a second reference
            blocks, final, attention = torchvision_reference(t, torch.from_numpy(x.astype(np.float64)))
            check_norms(f"{label}: _norms.npy vs torchvision's modules", got_norms, norms_of(blocks))
            check_relative(f"{label}: _tokens.npy vs torchvision's modules", "tokens", got_tokens, final)
            check_absolute(f"{label}: sinks vs torchvision's modules", "sinks", sinks_of(got_attention),
                           sinks_of(attention))
        # The norms must say something the final tokens do not: each layer differs from the next.
        T.check(np.abs(np.diff(got_norms, axis=1)).max() > 1e-2, f"{label}: every layer's norms are the same")


def report_data(page):
    """The data a --report page carries for its script, as JSON."""
    html = Path(page).read_text()
    return json.loads(re.search(r'<script type="application/json" id="vitattn-data">(.*?)</script>', html, re.S).group(1))


def check_report_tokens(tmp, fam):
    """vitattn's own register share and sinks (the report's tokens panel) for one image, against
    torch's attention on the same input."""
    import cv2
    model_path, t = write_model(tmp, fam)
    bgr = harness.photo_like(GRID * P, GRID * P, fam.seed)
    png = tmp / f"{fam.name}_photo.png"
    cv2.imwrite(str(png), bgr)
    mean, std = (0.45, 0.5, 0.55), (0.25, 0.2, 0.3)
    out = tmp / f"report_{fam.name}"
    p = harness.run_process("--model", model_path, png, "-o", out, "--report", "--mean", ",".join(map(str, mean)),
                            "--std", ",".join(map(str, std)))
    if not T.check(p.returncode == 0, f"{fam.name} --report: exit {p.returncode}: {p.stderr.strip()[-1500:]}"):
        return
    panel = report_data(out / f"{png.stem}_report.html")["tokens_panel"]
    rgb = bgr[:, :, ::-1].astype(np.float32) / np.float32(255)
    x = (rgb - np.asarray(mean, np.float32)) / np.asarray(std, np.float32)
    _, _, attention = reference(t, fam, torch.from_numpy(np.ascontiguousarray(x.transpose(2, 0, 1))[None].astype(np.float64)))
    label = f"{fam.name}, --report on a {GRID}x{GRID} photo"
    want = register_share_of(attention, fam.registers)[0]                                     # [L]
    T.check(want.min() > 1e-3, f"{label}: the registers draw too little attention to test ({want})")
    check_absolute(f"{label}: tokens_panel.register_share", "register share (report)",
                   np.asarray(panel["register_share"], np.float64), want)
    sinks = np.frombuffer(base64.b64decode(panel["sinks"]), "<f4").astype(np.float64)
    check_absolute(f"{label}: tokens_panel.sinks", "sinks (report)", sinks.reshape(LAYERS, -1), sinks_of(attention)[0])


def test_tokens():
    assert BIN.is_file(), f"binary {BIN} not found (build first or set VITATTN_BIN)"
    print(f"torch {torch.__version__}, binary {BIN}", flush=True)
    start = time.monotonic()
    with T.section("tokens"), tempfile.TemporaryDirectory(prefix="vitattn_tokens_") as d:
        tmp = Path(d)
        for fam in FAMILIES:
            check_family(tmp, fam)
            if fam.registers:
                check_report_tokens(tmp, fam)
        print("worst differences:")
        for k, v in WORST.items():
            print(f"  {k:28s} {v:.3g}")
        print(f"runtime {time.monotonic() - start:.1f} s")
