#!/usr/bin/python3
"""Distilled DeiT, timm's average-pooled classifiers, timm's pre-norm ViTs (norm_pre) and Hugging
Face's Dinov2ForImageClassification against torch re-implementations written here from their
libraries' code; `--query dist`.

Run:  /usr/bin/python3 -m pytest tests/oracle/test_family_deit.py
Env:  VITATTN_BIN  binary to test (default <repo>/build/dev/vitattn)

Random tiny models (D=32, 2 heads, 2 layers, 8-pixel patches on a 4x4 grid, 7 classes) in each
family's own names, F32 safetensors. The torch side (float64) follows:
  embedding   timm vision_transformer.py VisionTransformer._pos_embed (class token, positions);
              timm deit.py VisionTransformerDistilled._pos_embed (class and distillation token,
              pos_embed covering both); DINOv2 / HF modeling_dinov2.py Dinov2Embeddings (registers
              after the class token, without positions)
  pre-norm    timm vision_transformer.py VisionTransformer.forward_features with pre_norm=True:
              _pos_embed, then norm_pre (a LayerNorm) on every token before the first block; the
              patch embedding without bias (PatchEmbed(bias=not pre_norm)), as timm's CLIP towers
  positions   on another grid: timm layers/pos_embed.py resample_abs_pos_embed (bicubic,
              antialias, align_corners=False, the leading rows kept); DINOv2's
              interpolate_pos_encoding (scale factor (n + 0.1) / n_trained) for HF Dinov2
  blocks      timm Block / Attention / Mlp (x + ls1·attn(norm1 x), x + ls2·mlp(norm2 x))
  heads       deit.py VisionTransformerDistilled.forward_head, eval mode: (head(x[:, 0]) +
              head_dist(x[:, 1])) / 2; vision_transformer.py VisionTransformer._pool / forward_head
              with global_pool='avg': x[:, num_prefix_tokens:].mean(1), fc_norm, head (norm is
              Identity); modeling_dinov2.py Dinov2ForImageClassification.forward:
              classifier(cat[cls, mean of sequence_output[:, 1:]]) and
              modeling_dinov2_with_registers.py: the mean over sequence_output[:, 1 + registers:]
Checks, at the native 4x4 grid and a 3x5 one: logits and the final tokens within 1e-4, every layer's
attention within 1e-5, ∂y_c/∂A_l and ∂y_c/∂x_l (vitattn forward --class) against torch.autograd within 1e-4; --top's
probabilities within 1e-4 of torch's softmax on the same preprocessed 32x32 image; --query dist's
_cls.npy (attention, rollout, --head all) against the torch attention's distillation row;
Chefer's and gradient rollout's maps read from the rows of R the pooled head reads (numpy on torch's
attention and gradients; seen red with row 0: relative error 1.0);
detection by names (-v), --family, config.json's model_type "dinov2"; refusals (one line, exit 2).
"""
import tempfile
from pathlib import Path

import numpy as np

import harness
from harness import need

try:
    import torch
except ImportError as e:  # CI installs python3-torch
    need(False, f"cannot import torch/cv2 ({e})")

from deit_reference import (CLASSES, HALF, IMAGENET, D, deit_distilled, gradients, GRID, HEADS,
                            hf_dinov2_classifier, hf_folder, image, LAYERS, MLP, P, preprocessed, Ref, T64,
                            timm_avg, with_norm_pre, write)

torch.set_num_threads(2)
BIN = Path(harness.BIN)


# ---------------------------------------------------------------------------- running vitattn


def relative(got, ref):
    got, ref = np.asarray(got, np.float64), np.asarray(ref, np.float64)
    assert got.shape == ref.shape, f"{got.shape} vs {ref.shape}"
    return float(np.abs(got - ref).max() / max(np.abs(ref).max(), 1e-30))


def readout(ref, n):
    """The rows of Chefer's R the pooled head reads, as weights over the n tokens (relevance.hpp):
    e_0 for a class-token head; ½(e_0 + e_1) distilled; the patch rows 1/n_p each for timm's avg pool; ½e_0 and the patch
    rows ½/n_p each for HF's [class token, patch mean]."""
    w = np.zeros(n)
    n_p = n - ref.first
    if ref.kind == "token":
        w[0] = 1.0
    elif ref.kind == "distilled":
        w[0] = w[1] = 0.5
    elif ref.kind == "avg":
        w[ref.first:] = 1.0 / n_p
    else:
        w[0], w[ref.first:] = 0.5, 0.5 / n_p
    return w


def chefer_readout(attn, grads, w, first, gh, gw):
    """Chefer et al. 2021: R = I; for each layer Ā = mean over heads of max(0, G ⊙ A), R ← R + Ā·R;
    the map is w·R at the patch columns (a class-token head's w is e_0)."""
    n = attn[0].shape[-1]
    r = np.eye(n)
    for a, g in zip(attn, grads):
        a_bar = np.clip(np.asarray(g, np.float64) * np.asarray(a, np.float64), 0, None).mean(axis=0)
        r = r + a_bar @ r
    return (w @ r)[first:].reshape(gh, gw)


def grad_rollout_readout(attn, grads, w, first, gh, gw):
    """Gradient rollout (relevance.hpp, discard ratio 0): F = max(0, mean over heads of A ⊙ G);
    a = (F + I)/2, each row renormalised; R ← a·R from R = I; the map is w·R at the patch columns."""
    n = attn[0].shape[-1]
    r = np.eye(n)
    for a, g in zip(attn, grads):
        f = np.clip((np.asarray(g, np.float64) * np.asarray(a, np.float64)).mean(axis=0), 0, None)
        step = (f + np.eye(n)) / 2
        r = (step / step.sum(axis=1, keepdims=True)) @ r
    return (w @ r)[first:].reshape(gh, gw)


def check_forward(tmp, name, model_path, ref, gh, gw, c=3):
    """vitattn forward --class c on one random input: logits, final tokens, attention, ∂y/∂A_l,
    ∂y/∂x_l vs torch, and Chefer's map read from the rows the pooled head reads."""
    rng = np.random.default_rng(7)
    x = rng.standard_normal((1, 3, gh * P, gw * P)).astype(np.float32)
    xp = tmp / f"{name}_{gh}x{gw}.npy"
    np.save(xp, x)
    out = tmp / f"out_{name}_{gh}x{gw}"
    harness.run_process("forward", "--model", model_path, xp, "-o", out, "--class", c, "--method",
                        "chefer,grad-rollout", expect=0)
    got = {p.name[len(xp.stem) + 1:-4]: np.load(p) for p in out.glob(f"{xp.stem}_*.npy")}
    g_attn, g_x, logits, attn, tokens = gradients(ref, T64(x[0]), c)
    at = f"{name} {gh}x{gw}"
    assert relative(got["logits"][0], logits) <= 1e-4, f"{at}: logits {got['logits'][0]} vs torch {logits}"
    assert relative(got["tokens"][0], tokens) <= 1e-4, f"{at}: final tokens differ by {relative(got['tokens'][0], tokens)}"
    a = got["attention"].reshape(attn.shape)
    for l in range(LAYERS):
        assert np.abs(a[l] - attn[l]).max() <= 1e-5, f"{at}: layer {l} attention differs by {np.abs(a[l] - attn[l]).max()}"
        assert relative(got["grad_attention"][0, l], g_attn[l]) <= 1e-4, f"{at}: ∂y/∂A_{l}"
        assert relative(got["grad_blocks"][0, l], g_x[l]) <= 1e-4, f"{at}: ∂y/∂x_{l}"
    n = np.asarray(attn[0]).shape[-1]
    pooled = ref.kind != "token"  # a head that reads more than the class token's row
    want = chefer_readout(attn, g_attn, readout(ref, n), ref.first, gh, gw)
    assert relative(got["relevance_chefer"][0], want) <= 1e-4, f"{at}: chefer from the head's rows"
    row0 = chefer_readout(attn, g_attn, np.eye(n)[0], ref.first, gh, gw)
    assert not pooled or relative(want, row0) > 1e-3, f"{at}: the head's rows and the class token's alike: the check cannot tell"
    want = grad_rollout_readout(attn, g_attn, readout(ref, n), ref.first, gh, gw)
    assert relative(got["relevance_grad-rollout"][0], want) <= 1e-4, f"{at}: grad-rollout from the head's rows"
    row0 = grad_rollout_readout(attn, g_attn, np.eye(n)[0], ref.first, gh, gw)
    assert not pooled or relative(want, row0) > 1e-3, f"{at}: grad-rollout: the head's rows and the class token's alike"
    return attn


def check_top(tmp, name, model_path, ref, norm, extra=()):
    img = image(tmp / f"{name}.png")
    out = tmp / f"top_{name}"
    p = harness.run_process("--model", model_path, "--top", CLASSES, "-o", out, img, "-v", *extra, expect=0)
    probs = torch.softmax(ref.forward(preprocessed(img, norm))[0], -1).detach().numpy()
    rows = [line.split(",") for line in (out / "predictions.csv").read_text().splitlines()[1:]]
    got = {int(r[2]): float(r[4]) for r in rows}
    assert len(got) == CLASSES
    worst = max(abs(got[c] - probs[c]) for c in range(CLASSES))
    assert worst <= 1e-4, f"{name}: --top probabilities differ from torch by {worst}"
    assert [int(r[2]) for r in rows] == list(np.argsort(-probs, kind="stable")), f"{name}: ranking"
    return p


def family_of(stderr):
    for line in stderr.splitlines():
        if "family " in line:
            return line.split("family ", 1)[1].split(":")[0].split()[0]
    return None


# ---------------------------------------------------------------------------- tests


def test_distilled_deit():
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        t = deit_distilled()
        path = tmp / "deit.safetensors"
        write(path, t)
        ref = Ref("distilled", t)
        for gh, gw in ((GRID, GRID), (3, 5)):
            check_forward(tmp, "deit", path, ref, gh, gw)
        p = check_top(tmp, "deit", path, ref, IMAGENET)
        assert family_of(p.stderr) == "deit-distilled", p.stderr
        harness.run_process("--model", path, "--family", "deit-distilled", "--top", 3, "-o", tmp / "forced",
                            image(tmp / "f.png"), expect=0)
        # The layout on names: a distilled model's second head comes with the first.
        half = dict(t)
        del half["head_dist.weight"]
        write(tmp / "half.safetensors", half)
        p = harness.run_process("--model", tmp / "half.safetensors", "-o", tmp / "half", tmp / "f.png", expect=2)
        assert len(p.stderr.strip().splitlines()) == 1 and "head_dist.weight" in p.stderr, p.stderr


def test_query_dist():
    """--query dist: the distillation token's row, in the attention map, each head's and the rollout."""
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        t = deit_distilled(seed=5)
        path = tmp / "deit.safetensors"
        write(path, t)
        ref = Ref("distilled", t)
        img = image(tmp / "q.png")
        _, attn, _ = ref.forward(preprocessed(img, IMAGENET))
        attn = np.stack([a.detach().numpy() for a in attn])  # [L, H, T, T]
        first = 2

        def grid(row):
            return row[first:].reshape(GRID, GRID)

        def saved(*extra):
            out = tmp / ("out" + "_".join(extra).replace("-", ""))
            harness.run_process("--model", path, "--save-attention", "-o", out, img, *extra, expect=0)
            return np.load(out / "q_cls.npy")

        mean = attn[-1].mean(0)
        got = saved("--query", "dist")
        assert np.abs(got - grid(mean[1])).max() <= 1e-5, "--query dist: not the distillation row"
        assert np.abs(saved() - grid(mean[0])).max() <= 1e-5, "default: not the class row"
        assert np.abs(got - grid(mean[0])).max() > 1e-3, "the two rows are alike: the test cannot tell them apart"
        heads = saved("--query", "dist", "--head", "all")
        for h in range(HEADS):
            assert np.abs(heads[h] - grid(attn[-1, h, 1])).max() <= 1e-5, f"--head all: head {h}"
        r = np.eye(attn.shape[-1])
        for layer in attn:  # rollout, discard ratio 0: (Â + I)/2, rows renormalised
            a = (layer.mean(0) + np.eye(layer.shape[-1])) / 2
            r = (a / a.sum(1, keepdims=True)) @ r
        got = saved("--query", "dist", "--rollout")
        assert relative(got, grid(r[1])) <= 1e-4, "--rollout --query dist"
        # A model without a distillation token refuses it: one line, exit 2.
        plain = tmp / "avg.safetensors"
        write(plain, timm_avg())
        p = harness.run_process("--model", plain, "--query", "dist", "-o", tmp / "refused", img, expect=2)
        lines = p.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("error:") and "--query" in lines[0], p.stderr


def test_timm_avg_pool():
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        for registers in (0, 2):
            t = timm_avg(seed=2 + registers, registers=registers)
            path = tmp / f"avg{registers}.safetensors"
            write(path, t)
            ref = Ref("avg", t)
            for gh, gw in ((GRID, GRID), (3, 5)):
                check_forward(tmp, f"avg{registers}", path, ref, gh, gw)
            p = check_top(tmp, f"avg{registers}", path, ref, HALF)
            assert family_of(p.stderr) == "timm", p.stderr


def test_timm_pre_norm():
    """timm's pre_norm=True ViTs (its CLIP towers, vit_*_clip_*): norm_pre on the tokens before the
    first block, with a class-token head, distilled, and as a backbone (no head: timm, not DINO)."""
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        t = with_norm_pre(harness.timm_tensors(D, P, GRID, LAYERS, MLP, seed=6, classes=CLASSES), seed=6)
        path = tmp / "prenorm.safetensors"
        write(path, t)
        ref = Ref("token", t)
        # norm_pre must change what is compared, or the check could not tell it was applied.
        without = Ref("token", {k: v for k, v in t.items() if not k.startswith("norm_pre.")})
        img = T64(np.random.default_rng(8).standard_normal((3, GRID * P, GRID * P)))
        assert relative(without.forward(img)[0].detach(), ref.forward(img)[0].detach()) > 0.1
        for gh, gw in ((GRID, GRID), (3, 5)):
            check_forward(tmp, "prenorm", path, ref, gh, gw)
        p = check_top(tmp, "prenorm", path, ref, HALF)
        assert family_of(p.stderr) == "timm", p.stderr
        assert "norm before the blocks" in p.stderr and "outside the encoder" not in p.stderr, p.stderr
        # Distilled DeiT: the same forward_features, so the same norm_pre.
        dt = with_norm_pre(deit_distilled(seed=7), seed=7)
        write(tmp / "deit_prenorm.safetensors", dt)
        check_forward(tmp, "deit_prenorm", tmp / "deit_prenorm.safetensors", Ref("distilled", dt), GRID, GRID)
        # A backbone (num_classes=0): timm's, read with its norm_pre; every layer's attention and the tokens.
        backbone = {k: v for k, v in t.items() if not k.startswith("head.")}
        write(tmp / "backbone.safetensors", backbone)
        x = np.random.default_rng(9).standard_normal((1, 3, GRID * P, GRID * P)).astype(np.float32)
        np.save(tmp / "xb.npy", x)
        p = harness.run_process("forward", "--model", tmp / "backbone.safetensors", tmp / "xb.npy", "-o",
                                tmp / "out_backbone", "-v", expect=0)
        assert family_of(p.stderr) == "timm", p.stderr
        bref = Ref("token", backbone)
        _, attn, _ = bref.forward(T64(x[0]))
        got = np.load(tmp / "out_backbone" / "xb_attention.npy")[0]
        for l in range(LAYERS):
            assert np.abs(got[l] - attn[l].detach().numpy()).max() <= 1e-5, f"backbone: layer {l} attention"
        assert relative(np.load(tmp / "out_backbone" / "xb_tokens.npy")[0], bref.tokens.detach().numpy()) <= 1e-4
        # Read as DINO (whose code has no norm_pre) it would draw without it: refused, naming it.
        p = harness.run_process("--model", path, "--family", "dino", "-o", tmp / "as_dino", tmp / "prenorm.png",
                                expect=2)
        lines = p.stderr.strip().splitlines()
        assert len(lines) == 1 and "norm_pre.bias, norm_pre.weight" in lines[0] and "dino" in lines[0], p.stderr


def test_hf_dinov2_classifier():
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        for registers in (0, 2):
            hf, t = hf_dinov2_classifier(seed=3 + registers, registers=registers)
            path = tmp / f"hf{registers}.safetensors"
            write(path, hf)
            ref = Ref("hf_cls", t, extra=hf)
            for gh, gw in ((GRID, GRID), (3, 5)):
                check_forward(tmp, f"hf{registers}", path, ref, gh, gw)
            p = check_top(tmp, f"hf{registers}", path, ref, IMAGENET)
            assert family_of(p.stderr) == "hf-dinov2", p.stderr
        # config.json's model_type, the preprocessor's mean and std, id2label: a snapshot folder.
        snap = tmp / "snapshot"
        want = hf_folder(snap)
        out = tmp / "snap_out"
        p = harness.run_process("--model", snap / "model.safetensors", "--top", CLASSES, "--save-attention", "-o", out,
                                want["image"], "-v", expect=0)
        assert family_of(p.stderr) == "hf-dinov2", p.stderr
        rows = [line.split(",") for line in (out / "predictions.csv").read_text().splitlines()[1:]]
        worst = max(abs(float(r[4]) - want["probs"][int(r[2])]) for r in rows)
        assert worst <= 1e-4 and all(r[3] == f"class{r[2]}" for r in rows), (worst, rows)
        stem = Path(want["image"]).stem
        assert np.abs(np.load(out / f"{stem}_attn.npy") - want["attention_last"]).max() <= 1e-5
