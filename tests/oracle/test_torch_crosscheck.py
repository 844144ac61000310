#!/usr/bin/python3
"""Cross-check of vitattn's ViT encoder against PyTorch (torchvision's VisionTransformer).

Run:  /usr/bin/python3 -m pytest tests/oracle/test_torch_crosscheck.py [--shared]
      Without --shared: random torchvision ViTs made here. With --shared: the trained
      CIFAR-10 model and its golden outputs in ../shared/models, and the image path on a
      photo from ../shared/images; skips when ../shared is absent, and when torch cannot be
      imported (CI installs python3-torch); under CI=true a skip fails.
Env:  VITATTN_BIN     binary to test   (default <repo>/build/dev/vitattn)
      VITATTN_SHARED  shared fixtures  (default <repo>/../shared)

Nothing here comes from vitattn: the models are torchvision's, the attention
probabilities are what torch.nn.MultiheadAttention returns (need_weights=True,
average_attn_weights=False) for each block's input captured by a forward hook,
and the safetensors files are written by tests/pylib/safetensors_io.py from torch's own
bytes (its BF16 rounding included).

  case T  torchvision ViTs (3 sizes) exported under torchvision, timm and HF-ViT names
          (also F16 / BF16 storage), `vitattn forward` vs torch: features, logits, every
          layer's attention, at the trained size and at another size (position
          embeddings resampled with F.interpolate bicubic, align_corners=False)
  case I  image mode: --head all/2/mean/max/min, --rollout, --img-size --keep-aspect
  case D  DINOv2-style (layer scale + 4 registers), timm and HF Dinov2 names
  case S  (--shared) the tintn CIFAR-10 model against its PyTorch golden outputs
Every failed check is printed ("FAIL: ...") and listed by the test that made it.
"""

import math
import tempfile
import time
from pathlib import Path

import cv2
import numpy as np

import pytest

import harness
from harness import SHARED, need
from tally import Tally

from torch_reference import (IMAGENET, STYLE, export_hf_dinov2, export_hf_vit, export_timm,  # skips without torch
                             export_torchvision, make_image, make_vit, preprocess, torch_reference,
                             dinov2_reference, with_eps, with_rounded_weights, write_safetensors)
import torch  # noqa: E402  (importable: torch_reference skipped otherwise)
import torchvision  # noqa: E402

BIN = Path(harness.BIN)
USE_SHARED = harness.USE_SHARED  # tests/conftest.py: --shared
# With --shared the test here is the shared one (the crosscheck_torch_shared entry).
pytestmark = [pytest.mark.shared] if USE_SHARED else []

ATTN_TOL = 1e-5   # absolute, on every softmax probability
REL_TOL = 1e-4    # features / logits: max|d| <= REL_TOL * max(1, max|ref|)
SHARED_REL_TOL = 1e-5  # the bound for the trained model's logits and features

torch.set_num_threads(2)
torch.set_grad_enabled(False)


T = Tally()
WORST = {}  # check kind -> largest difference seen, for the summary


def note(kind, value):
    WORST[kind] = max(WORST.get(kind, 0.0), float(value))


# ---------------------------------------------------------------------------
# running vitattn and comparing
# ---------------------------------------------------------------------------


def rel_check(label, what, got, want, rel_tol, kind):
    if not T.check(got.shape == want.shape, f"{label}: {what} shape {got.shape}, want {want.shape}"):
        return
    diff = np.abs(got.astype(np.float64) - want)
    scale = max(1.0, float(np.abs(want).max()))
    note(kind, diff.max() / scale)
    at = tuple(int(i) for i in np.unravel_index(diff.argmax(), diff.shape))
    T.check(diff.max() <= rel_tol * scale,
            f"{label}: {what} max|d| {diff.max():.3g} > {rel_tol:g}*{scale:.3g} at {at} "
            f"(vitattn {got[at]:.8g}, torch {want[at]:.8g})")
    return diff.max() / scale


def attn_check(label, what, got, want, kind="attention"):
    if not T.check(got.shape == want.shape, f"{label}: {what} shape {got.shape}, want {want.shape}"):
        return None
    diff = np.abs(got.astype(np.float64) - want)
    note(kind, diff.max())
    at = tuple(int(i) for i in np.unravel_index(diff.argmax(), diff.shape))
    T.check(diff.max() <= ATTN_TOL,
            f"{label}: {what} max|d| {diff.max():.3g} > {ATTN_TOL:g} at {at} "
            f"(vitattn {got[at]:.8g}, torch {want[at]:.8g}); {int((diff > ATTN_TOL).sum())} entries over")
    return diff.max()


def compare_forward(label, out_dir, stem, ref, rel_tol=REL_TOL, with_logits=True, ref64=None):
    """vitattn forward's outputs vs torch float32 (asserted). ref64: a function giving the torch float64
    outputs, called only when a check fails, to show whether vitattn or float32 torch is the one off."""
    failed_before = T.failed
    attn_ref, feat_ref, logit_ref = ref
    paths = {k: out_dir / f"{stem}_{k}.npy" for k in ("attention", "features", "logits")}
    if not T.check(paths["attention"].is_file() and paths["features"].is_file(),
                   f"{label}: missing {paths['attention']} or {paths['features']}"):
        return
    a = attn_check(label, "attention", np.load(paths["attention"]), attn_ref)
    f = rel_check(label, "features", np.load(paths["features"]), feat_ref, rel_tol, "features (rel)")
    line = f"{label} {stem}: T={attn_ref.shape[-1]} attn {a if a is not None else float('nan'):.2g}, " \
           f"features {f if f is not None else float('nan'):.2g}"
    if with_logits:
        if T.check(paths["logits"].is_file(), f"{label}: missing {paths['logits']}"):
            g = rel_check(label, "logits", np.load(paths["logits"]), logit_ref, rel_tol, "logits (rel)")
            line += f", logits {g if g is not None else float('nan'):.2g}"
    else:
        T.check(not paths["logits"].exists(), f"{label}: {paths['logits']} written for a model without classifier")
    if ref64 is not None and T.failed > failed_before and a is not None and f is not None:
        a64, f64 = ref64()[:2]
        line += (f"; vs float64 torch: vitattn off by attn {np.abs(np.load(paths['attention']) - a64).max():.2g} "
                 f"features {np.abs(np.load(paths['features']) - f64).max():.2g}, torch float32 off by attn "
                 f"{np.abs(attn_ref - a64).max():.2g} features {np.abs(feat_ref - f64).max():.2g}")
    print(line, flush=True)


# --precision bf16 (the MLP's weight products in bfloat16, on a CPU with AVX512-BF16) against
# vitattn's fp32 and torch's fp32, each relative to the largest value: every layer's map (the class
# token's row over the other tokens, mean over the heads, as the image command draws it), the single
# weights and the features within 1 %; the same bytes at 1 and 2 threads. Measured on these three
# random models: maps 1.05 %, 0.40 %, 0.40 % of their maximum, single weights 0.34–0.59 %, features
# 0.23–0.33 %. T0 keeps 1.5 % for its maps: its first layer's map is fp32's exactly (the patch
# embedding and the attention branch are float32), and its second layer's peak moves 1.05 % from
# the first layer's MLP alone, bf16's 8-bit significands in fc1 and fc2 through a sharp softmax;
# only a float32 MLP would take that away, and the MLP is bf16's whole gain.
BF16_MAP_TOL, BF16_WEIGHT_TOL, BF16_FEATURE_TOL = 1e-2, 1e-2, 1e-2
BF16_MAP_TOL_T0 = 1.5e-2


def class_maps(attention):  # [N, L, H, T, T] -> [N, L, T - 1]
    return attention.mean(2)[..., 0, 1:]


def compare_bf16(label, model, extra, inputs, fp32_dir, stem, ref, out, map_tol=BF16_MAP_TOL):
    outs = [Path(f"{out}_t{threads}") for threads in (1, 2)]
    for o, threads in zip(outs, (1, 2)):
        if not harness.run_ok(T, label, ["forward", "--model", model, *extra, "--precision", "bf16",
                                         "--threads", threads, *inputs, "-o", o], timeout=300):
            return
    name = f"{stem}_attention.npy"
    T.check((outs[0] / name).read_bytes() == (outs[1] / name).read_bytes(), f"{label}: bytes differ at 1 and 2 threads")
    # the first layer's attention is made by the patch embedding and qkv alone, which stay float32
    first = [np.load(o / name)[:, 0] for o in (outs[0], fp32_dir)]
    T.check(np.array_equal(*first), f"{label}: the first layer's attention differs from fp32's by "
            f"{np.abs(first[0] - first[1]).max():.3g}: its products should be float32")
    line = f"{label}:"
    checks = (("maps", "attention", map_tol, class_maps), ("weights", "attention", BF16_WEIGHT_TOL, lambda a: a),
              ("features", "features", BF16_FEATURE_TOL, lambda f: f))
    for what, file, tol, view in checks:
        got = view(np.load(outs[0] / f"{stem}_{file}.npy").astype(np.float64))
        fp32 = view(np.load(fp32_dir / f"{stem}_{file}.npy").astype(np.float64))
        want = view(np.asarray(ref[0 if file == "attention" else 1], dtype=np.float64))
        scale = np.abs(want).max(axis=-1, keepdims=True) if what == "maps" else np.abs(want).max()
        to_fp32, to_torch = (np.abs(got - fp32) / scale).max(), (np.abs(got - want) / scale).max()
        note(f"bf16 {what} (of max)", max(to_fp32, to_torch))
        T.check(0 < to_fp32 <= tol, f"{label}: {what} vs vitattn fp32 {to_fp32:.3g} of the max > {tol} (0: not bf16)")
        T.check(to_torch <= tol, f"{label}: {what} vs torch fp32 {to_torch:.3g} of the max > {tol}")
        line += f" {what} vs fp32 {to_fp32:.2g}, vs torch {to_torch:.2g};"
    print(line, flush=True)


def save_input(path, x):
    np.save(path, x.numpy().astype(np.float32))


# ---------------------------------------------------------------------------
# case T: torchvision models under three namings
# ---------------------------------------------------------------------------

# (image_size, D, heads, mlp, layers, classes, other input size (H, W), embed scale, how heads are told)
CONFIGS = [
    (224, 192, 3, 768, 4, 10, (160, 256), 1.0, "d/64"),
    (160, 384, 6, 1536, 2, 10, (224, 128), 1.0, "metadata"),
    (96, 128, 4, 256, 2, 7, (64, 112), 0.01, "--heads"),
]


def case_t(tmp):
    models = []
    for ci, (size, d, heads, mlp, layers, classes, other, embed_scale, heads_from) in enumerate(CONFIGS):
        model = make_vit(size, d, heads, mlp, layers, classes, seed=10 + ci, embed_scale=embed_scale)
        models.append(model)
        g = torch.Generator().manual_seed(50 + ci)
        x_trained = torch.randn(2, 3, size, size, generator=g)
        x_other = torch.randn(2, 3, *other, generator=g)
        inputs = {"trained": x_trained, "other": x_other}
        for stem, x in inputs.items():
            save_input(tmp / f"c{ci}_{stem}.npy", x)
        model_hf = with_eps(model, 1e-12)  # HF ViT's default LayerNorm eps, so that comparison is exact
        refs = {(eps, stem, style): torch_reference(m, x, style) for eps, m in ((1e-6, model), (1e-12, model_hf))
                for stem, x in inputs.items() for style in set(STYLE.values())}

        def ref64(eps, stem, x, style):  # the same torch code in float64, for diagnosing a failure
            return lambda: torch_reference(with_eps(model, eps).double(), x.double(), style)
        # sanity of the oracle: attention far from uniform; eps visible only where intended
        a = refs[(1e-6, "trained", "bicubic")][0]
        spread = a[:, :, :, 0].max(axis=-1).min() * a.shape[-1]
        T.check(spread > 2, f"T{ci}: torch class-token attention too flat (min over heads of max*T = {spread:.3g})")
        eps_gap = np.abs(refs[(1e-6, "trained", "bicubic")][0] - refs[(1e-12, "trained", "bicubic")][0]).max()
        print(f"T{ci}: D={d} heads={heads} mlp={mlp} layers={layers} size={size} other={other}: "
              f"attention spread {spread:.3g}, eps 1e-6 vs 1e-12 changes attention by {eps_gap:.3g}", flush=True)
        # the other-size comparison must be able to tell bicubic from bilinear resampling
        interp_gap = np.abs(refs[(1e-6, "other", "bicubic")][0] - torch_reference(model, x_other, "bilinear")[0]).max()
        T.check(interp_gap > 10 * ATTN_TOL,
                f"T{ci}: bilinear vs bicubic position embeddings barely differ (gap {interp_gap:.3g})")
        print(f"T{ci}: bicubic vs bilinear position resampling changes attention by {interp_gap:.3g}", flush=True)
        # and the families' ways of resampling must differ from each other visibly, or the
        # per-family comparison below could not tell them apart
        for style in ("antialias", "offset", "corners"):
            gap = np.abs(refs[(1e-6, "other", style)][0] - refs[(1e-6, "other", "bicubic")][0]).max()
            T.check(gap > 10 * ATTN_TOL, f"T{ci}: position resampling {style} vs bicubic barely differ (gap {gap:.3g})")
            print(f"T{ci}: position resampling {style} vs plain bicubic changes attention by {gap:.3g}", flush=True)
        if embed_scale != 1.0:
            T.check(eps_gap > 100 * ATTN_TOL, f"T{ci}: LayerNorm eps should be visible here (gap {eps_gap:.3g})")

        sd = model.state_dict()
        exports = [("torchvision", export_torchvision(sd), 1e-6, []),
                   ("timm", export_timm(sd, layers), 1e-6, []),
                   ("hf-vit", export_hf_vit(sd, layers), 1e-12, []),
                   ("hf-vit --eps 1e-6", export_hf_vit(sd, layers), 1e-6, ["--eps", "1e-6"])]
        for name, tensors, eps, extra in exports:
            label = f"T{ci}[{name}]"
            path = tmp / f"c{ci}_{name.split()[0]}.safetensors"
            meta = {"num_heads": heads} if heads_from == "metadata" else None
            if heads_from == "--heads":
                extra = extra + ["--heads", str(heads)]
            write_safetensors(path, tensors, "F32", meta)
            out = tmp / f"outT{ci}_{name.replace(' ', '_')}"
            if harness.run_ok(T, label, ["forward", "--model", path, *extra, tmp / f"c{ci}_trained.npy",
                                  tmp / f"c{ci}_other.npy", "-o", out], timeout=300):
                style = STYLE[name.split()[0]]
                for stem in inputs:
                    compare_forward(label, out, f"c{ci}_{stem}", refs[(eps, stem, style)],
                                    ref64=ref64(eps, stem, inputs[stem], style))
        bf16_args = ["--heads", heads] if heads_from == "--heads" else []
        if harness.CPU_HAS_BF16:
            compare_bf16(f"T{ci}[timm --precision bf16]", tmp / f"c{ci}_timm.safetensors", bf16_args,
                         [tmp / f"c{ci}_trained.npy"], tmp / f"outT{ci}_timm", f"c{ci}_trained",
                         refs[(1e-6, "trained", STYLE["timm"])], tmp / f"outT{ci}_bf16",
                         BF16_MAP_TOL_T0 if ci == 0 else BF16_MAP_TOL)
        else:
            harness.bf16_refused(T, f"T{ci}", ["forward", "--model", tmp / f"c{ci}_timm.safetensors", *bf16_args,
                                               tmp / f"c{ci}_trained.npy"], tmp / f"outT{ci}_bf16")
        # the stored dtype: torch run on the rounded weights is the exact reference
        for name, dtype, export in (("timm", "BF16", export_timm), ("torchvision", "F16", export_torchvision)):
            if ci == 2:
                continue
            label = f"T{ci}[{name} {dtype}]"
            mr = with_rounded_weights(model, dtype)
            ref = torch_reference(mr, x_trained)
            path = tmp / f"c{ci}_{name}_{dtype}.safetensors"
            tensors = export(sd, layers) if export is export_timm else export(sd)
            write_safetensors(path, tensors, dtype, {"num_heads": heads} if heads_from == "metadata" else None)
            gap = np.abs(ref[0] - refs[(1e-6, "trained", "bicubic")][0]).max()
            T.check(gap > 100 * ATTN_TOL, f"{label}: rounding the weights should change the attention (gap {gap:.3g})")
            out = tmp / f"outT{ci}_{dtype}"
            if harness.run_ok(T, label, ["forward", "--model", path, tmp / f"c{ci}_trained.npy", "-o", out],
                              timeout=300):
                compare_forward(label, out, f"c{ci}_trained", ref)
    return models


# ---------------------------------------------------------------------------
# case I: the image path
# ---------------------------------------------------------------------------


def fuse(heads, how):
    return {"mean": heads.mean(0), "max": heads.max(0), "min": heads.min(0)}[how]


def rollout(layers, how, ratio):
    """jacobgil/vit-explain with rows renormalised: layers [L, heads, T, T] -> R [T, T]."""
    t = layers.shape[-1]
    r = np.eye(t)
    for heads in layers:
        a = fuse(heads, how).copy()
        flat = a.reshape(-1)
        n_drop = int(math.floor(t * t * ratio))
        order = np.lexsort((np.arange(flat.size), flat))[:n_drop]  # smallest first, ties by flat index
        order = order[order != 0]
        flat[order] = 0
        a = (a + np.eye(t)) / 2
        a = a / a.sum(axis=1, keepdims=True)
        r = a @ r
    return r


def case_i(tmp, model, image):
    """Image mode on the torchvision-named D=192 model (ImageNet normalisation, the family's default)."""
    layers, heads = len(model.encoder.layers), model.encoder.layers[0].num_heads
    grid = model.image_size // model.patch_size
    path = tmp / "img_torchvision.safetensors"
    write_safetensors(path, export_torchvision(model.state_dict()))
    x = preprocess(image, model.image_size, model.image_size, IMAGENET)
    attn, _, _ = torch_reference(model, x)
    attn = attn[0]                                                         # [L, heads, T, T]
    stem = image.stem

    def run_view(tag, args):
        out = tmp / f"outI_{tag}"
        if not harness.run_ok(T, f"I[{tag}]", ["--model", path, *args, "--save-attention", "-o", out, image],
                              timeout=300):
            return None, None
        a, c = out / f"{stem}_attn.npy", out / f"{stem}_cls.npy"
        if not T.check(a.is_file() and c.is_file() and (out / f"{stem}_attn.png").is_file(),
                       f"I[{tag}]: missing outputs in {out}"):
            return None, None
        return np.load(a), np.load(c)

    # --layer 1 --head all: [heads, T, T] and [heads, g, g]
    a, c = run_view("layer1_all", ["--layer", "1", "--head", "all"])
    if a is not None:
        attn_check("I[--layer 1 --head all]", "_attn.npy", a, attn[1], "image attention")
        want = attn[1][:, 0, 1:].reshape(heads, grid, grid)
        attn_check("I[--layer 1 --head all]", "_cls.npy", c, want, "image class map")
        T.check(c.shape == want.shape and np.array_equal(c, a[:, 0, 1:].reshape(heads, grid, grid)),
                "I[--layer 1 --head all]: _cls.npy is not _attn.npy's class row")
        print(f"I: --layer 1 --head all: max|attn - torch| {np.abs(a - attn[1]).max():.2g}", flush=True)
    # --layer 1 --head 2, mean, max, min
    for head in ("2", "mean", "max", "min"):
        a, c = run_view(f"layer1_{head}", ["--layer", "1", "--head", head])
        if a is None:
            continue
        attn_check(f"I[--layer 1 --head {head}]", "_attn.npy", a, attn[1], "image attention")
        fused = attn[1][int(head)] if head.isdigit() else fuse(attn[1], head)
        d = attn_check(f"I[--layer 1 --head {head}]", "_cls.npy", c, fused[0, 1:].reshape(grid, grid),
                       "image class map")
        print(f"I: --layer 1 --head {head}: max|cls - torch| {d if d is not None else float('nan'):.2g}", flush=True)
    # default layer (last) with --head mean: the layer choice must matter
    a, c = run_view("last_mean", [])
    if a is not None:
        attn_check("I[default layer]", "_attn.npy", a, attn[-1], "image attention")
        attn_check("I[default layer]", "_cls.npy", c, attn[-1].mean(0)[0, 1:].reshape(grid, grid), "image class map")
    # rollout, mean, discard 0.5, over all layers and over layers 0..1
    for tag, args, upto in (("rollout_all", [], layers), ("rollout_layer1", ["--layer", "1"], 2)):
        a, c = run_view(tag, ["--rollout", "--head", "mean", "--discard-ratio", "0.5", *args])
        if a is None:
            continue
        r = rollout(attn[:upto], "mean", 0.5)
        want = r[0, 1:].reshape(grid, grid)
        plain = rollout(attn[:upto], "mean", 0.0)[0, 1:].reshape(grid, grid)
        gap = np.abs(plain - want).max()
        T.check(gap > 10 * ATTN_TOL, f"I[{tag}]: discarding should change the rollout (gap {gap:.3g})")
        d = attn_check(f"I[--rollout --discard-ratio 0.5 {' '.join(args)}]", "_cls.npy", c, want, "rollout class map")
        print(f"I: {tag}: max|cls - numpy rollout of torch attention| {d if d is not None else float('nan'):.2g} "
              f"(discard changes it by {gap:.2g})", flush=True)
    # --img-size 160 --keep-aspect: shorter side 160, longer round(160*aspect/16)*16
    bgr_h, bgr_w = cv2.imread(str(image), cv2.IMREAD_COLOR).shape[:2]
    longer = max(1, math.floor(160 * max(bgr_h, bgr_w) / min(bgr_h, bgr_w) / 16 + 0.5)) * 16
    w, h = (longer, 160) if bgr_w >= bgr_h else (160, longer)
    a, c = run_view("keep_aspect", ["--img-size", "160", "--keep-aspect"])
    if a is not None:
        want_shape = (h // 16, w // 16)
        if (bgr_w, bgr_h) == (300, 200):
            T.check(want_shape == (10, 15), f"I[--keep-aspect]: the test's own expected grid is {want_shape}")
        T.check(c.shape == want_shape, f"I[--img-size 160 --keep-aspect]: _cls.npy shape {c.shape}, want {want_shape}")
        xa = preprocess(image, w, h, IMAGENET)
        ra = torch_reference(model, xa, STYLE["torchvision"])[0][0]
        attn_check("I[--img-size 160 --keep-aspect]", "_attn.npy", a, ra[-1], "image attention")
        d = attn_check("I[--img-size 160 --keep-aspect]", "_cls.npy", c,
                       ra[-1].mean(0)[0, 1:].reshape(want_shape), "image class map")
        print(f"I: --img-size 160 --keep-aspect on {bgr_w}x{bgr_h}: grid {c.shape}, "
              f"max|cls - torch| {d if d is not None else float('nan'):.2g}", flush=True)


# ---------------------------------------------------------------------------
# case D: DINOv2-style (layer scale, registers)
# ---------------------------------------------------------------------------


def case_d(tmp, model):
    layers, d = len(model.encoder.layers), model.hidden_dim
    g = torch.Generator().manual_seed(77)
    ls1 = [torch.randn(d, generator=g) * 0.5 for _ in range(layers)]
    ls2 = [torch.randn(d, generator=g) * 0.5 for _ in range(layers)]
    regs = torch.randn(1, 4, d, generator=g) * 0.5
    sd = model.state_dict()
    timm = export_timm(sd, layers)
    for i in range(layers):
        timm[f"blocks.{i}.ls1.gamma"] = ls1[i]
        timm[f"blocks.{i}.ls2.gamma"] = ls2[i]
    timm["register_tokens"] = regs
    hf = export_hf_dinov2(timm, layers)

    x_trained = torch.from_numpy(np.load(tmp / "c0_trained.npy"))
    x_other = torch.from_numpy(np.load(tmp / "c0_other.npy"))
    refs = {"c0_trained": dinov2_reference(model, ls1, ls2, regs, x_trained),
            "c0_other": dinov2_reference(model, ls1, ls2, regs, x_other)}
    plain = torch_reference(model, x_trained)
    gap = np.abs(refs["c0_trained"][1] - plain[1]).max()
    T.check(gap > 100 * REL_TOL, f"D: layer scale + registers should change the features (gap {gap:.3g})")
    for name, tensors, with_logits in (("dinov2 (timm names)", timm, True), ("hf-dinov2", hf, False)):
        label = f"D[{name}]"
        path = tmp / f"dinov2_{'timm' if with_logits else 'hf'}.safetensors"
        write_safetensors(path, tensors)
        out = tmp / f"outD_{'timm' if with_logits else 'hf'}"
        if harness.run_ok(T, label,
                          ["forward", "--model", path, tmp / "c0_trained.npy", tmp / "c0_other.npy", "-o", out],
                          timeout=300):
            for stem, ref in refs.items():
                compare_forward(label, out, stem, ref, with_logits=with_logits)
    # the image path reads the class row from token 1+R on: check it on the registers model
    image = tmp / "dino_img.png"
    make_image(image)
    path = tmp / "dinov2_timm.safetensors"
    out = tmp / "outD_img"
    if harness.run_ok(T, "D[image --head all]",
                      ["--model", path, "--head", "all", "--save-attention", "-o", out, image], timeout=300):
        x = preprocess(image, model.image_size, model.image_size, IMAGENET)  # DINOv2's ImageNet default
        ra = dinov2_reference(model, ls1, ls2, regs, x)[0][0]                  # [L, heads, T, T]
        grid = model.image_size // model.patch_size
        c = np.load(out / f"{image.stem}_cls.npy")
        want = ra[-1][:, 0, 5:].reshape(-1, grid, grid)
        dd = attn_check("D[image --head all]", "_cls.npy (class row from token 1+4)", c, want, "image class map")
        print(f"D: image path with 4 registers: max|cls - torch| {dd if dd is not None else float('nan'):.2g}",
              flush=True)


# ---------------------------------------------------------------------------
# case S: the trained tintn model against its PyTorch golden outputs
# ---------------------------------------------------------------------------


def case_s(tmp):
    st = SHARED / "models" / "vit_cifar10_tintn.safetensors"
    npz = SHARED / "models" / "vit_cifar10_tintn.reference.npz"
    golden = np.load(npz)
    np.save(tmp / "tintn_inputs.npy", golden["inputs"].astype(np.float32))
    out = tmp / "outS"
    if not harness.run_ok(T, "S[tintn]", ["forward", "--model", st, tmp / "tintn_inputs.npy", "-o", out], timeout=300):
        return
    attn = np.load(out / "tintn_inputs_attention.npy")
    feats = np.load(out / "tintn_inputs_features.npy")
    logits = np.load(out / "tintn_inputs_logits.npy")
    da = attn_check("S[tintn]", "attention", attn, golden["attention"].astype(np.float64), "tintn attention")
    df = rel_check("S[tintn]", "features (cls_token_out)", feats, golden["cls_token_out"].astype(np.float64),
                   SHARED_REL_TOL, "tintn features (rel)")
    dl = rel_check("S[tintn]", "logits", logits, golden["logits"].astype(np.float64), SHARED_REL_TOL,
                   "tintn logits (rel)")
    abs_f = np.abs(feats - golden["cls_token_out"]).max() if feats.shape == golden["cls_token_out"].shape else np.nan
    abs_l = np.abs(logits - golden["logits"]).max() if logits.shape == golden["logits"].shape else np.nan
    print(f"S: tintn vs PyTorch golden: attention max|d| {da}, features max|d| {abs_f:.3g} (rel {df}), "
          f"logits max|d| {abs_l:.3g} (rel {dl})", flush=True)


def test_torch_crosscheck():
    assert BIN.is_file(), f"binary {BIN} not found (build first or set VITATTN_BIN)"
    if USE_SHARED:
        need((SHARED / "models" / "vit_cifar10_tintn.reference.npz").is_file(), f"no shared fixtures in {SHARED}")
    print(f"torch {torch.__version__}, torchvision {torchvision.__version__}, binary {BIN}", flush=True)
    start = time.monotonic()
    with T.section("torch crosscheck"), tempfile.TemporaryDirectory(prefix="vitattn_torch_") as d:
        tmp = Path(d)
        if USE_SHARED:
            case_s(tmp)
            model = make_vit(224, 192, 3, 768, 4, 10, seed=10)
            photo = SHARED / "images" / "chelsea.png"  # 451x300: --keep-aspect gives a 10x15 grid
            if not photo.is_file():
                photo = sorted(p for p in (SHARED / "images").iterdir() if p.suffix.lower() in (".png", ".jpg"))[0]
            case_i(tmp, model, photo)
        else:
            models = case_t(tmp)
            image = tmp / "synthetic.png"
            make_image(image)
            case_i(tmp, models[0], image)
            case_d(tmp, models[0])
        print("worst differences:")
        for k, v in WORST.items():
            print(f"  {k:24s} {v:.3g}")
        print(f"runtime {time.monotonic() - start:.1f} s")
