#!/usr/bin/python3
"""Text-prompted maps of a CLIP checkpoint (`vitattn forward --text … --class TEXT --method …`)
against torch autograd on a re-implementation of OpenAI's clip/model.py, with the algorithms of
the references written from them, random weights in OpenAI's names.

Run:  /usr/bin/python3 -m pytest tests/oracle/test_clip_maps.py
      Skips when torch cannot be imported; under CI=true a skip fails.
Env:  VITATTN_BIN  binary to test (default <repo>/build/dev/vitattn)

The target is the image–text logit y_t = exp(logit_scale)·cos(image embedding, text embedding),
CLIP's logits_per_image (the text embeddings: tests/pylib/clip_reference.py openai_encode_text on
vitattn's own token ids, the tokeniser being checked elsewhere). With A_l layer l's attention
probabilities and G_l = ∂y_t/∂A_l (autograd through openai_clip_graph):
  chefer        Chefer's CLIP notebook (Transformer-MM-Explainability, CLIP_explainability.ipynb,
                interpret): R = I; for l ≥ start_layer: cam = mean over heads of max(0, G_l ⊙ A_l);
                R ← R + cam·R; the map is R[0, 1:]. start_layer −1 (the notebook's default: the
                last layer only) and 0 (every layer, --first-layer 0).
  grad-rollout  tests/oracle/test_gradients.py grad_rollout_map, on these gradients.
  gradcam       X = the last block's ln_1 output at the patches, w = mean over them of ∂y_t/∂X,
                map = max(0, X·w).
  legrad        LeGrad's compute_legrad_clip (tests/oracle/test_legrad_text.py's reference: the
                mean of every token of layer l through ln_post and proj, its cosine with the
                text; the default last two layers), before its min-max.
Bounds: 1e-4 relative to the map's largest value, for two photos and two texts; the logits
within 1e-4 of the reference's (relative to exp(logit_scale)).

Seen red: the gradient of y_t taken as if the embedding were not normalised (chefer off by 4.3,
grad-rollout by 0.07, gradcam by 0.06, relative); Chefer's rollout from layer 0 under the
notebook's default (off by 250).
"""
import numpy as np

import harness
import safetensors_io
from harness import need

try:
    import torch
except ImportError as e:  # CI installs python3-torch (scripts/install-deps.sh)
    need(False, f"cannot import torch ({e}); install python3-torch")

from clip_reference import (as_torch, D, GRID, HEADS, images, openai_clip_graph, openai_encode_text,
                            openai_tensors, openai_text_tensors, SQUARE, TEXT_W)
from test_gradients import grad_rollout_map
from test_legrad_text import legrad_clip_reference

TOL = 1e-4
TEXTS = ["a photo of a cat", "a lighthouse at dusk"]
METHODS = ("chefer", "grad-rollout", "gradcam", "legrad")


def relative(got, ref):
    got, ref = np.asarray(got, np.float64), np.asarray(ref, np.float64)
    assert got.shape == ref.shape, (got.shape, ref.shape)
    return float(np.abs(got - ref).max() / max(np.abs(ref).max(), 1e-30))


def logit(t, outputs, text_embedding, logit_scale):
    """exp(logit_scale)·cos: the class token after the last block through ln_post and proj."""
    u = torch.nn.functional.layer_norm(outputs[-1][0], (D,), t["ln_post.weight"], t["ln_post.bias"], 1e-5) @ t["proj"]
    return np.exp(logit_scale) * (u / u.norm()) @ torch.from_numpy(text_embedding.astype(np.float64))


def chefer_notebook(attn, y, start_layer):
    """interpret's image part for one image and one text."""
    start = len(attn) - 1 if start_layer == -1 else start_layer
    grads = torch.autograd.grad(y, attn, retain_graph=True)
    n = attn[0].shape[-1]
    r = torch.eye(n, dtype=torch.float64)
    for i, (a, g) in enumerate(zip(attn, grads)):
        if i < start:
            continue
        cam = (g * a.detach()).clamp(min=0).mean(dim=0)
        r = r + cam @ r
    return r[0, 1:].reshape(GRID, GRID).numpy()


def reference_maps(t_image, x, text_embedding, logit_scale):
    xt = torch.from_numpy(x.astype(np.float64))
    attn, outputs, norms = openai_clip_graph(t_image, xt)
    y = logit(t_image, outputs, text_embedding, logit_scale)
    maps = {("chefer", -1): chefer_notebook(attn, y, -1), ("chefer", 0): chefer_notebook(attn, y, 0)}
    grads = torch.autograd.grad(y, attn, retain_graph=True)
    maps["grad-rollout"] = grad_rollout_map([a.detach() for a in attn], grads, 0.0, 1, GRID, GRID).numpy()
    (d_x,) = torch.autograd.grad(y, norms[-1], retain_graph=True)
    xp, gp = norms[-1].detach()[1:], d_x[1:]
    maps["gradcam"] = (xp @ gp.mean(dim=0)).clamp(min=0).reshape(GRID, GRID).numpy()
    maps["legrad"] = legrad_clip_reference(t_image, xt, text_embedding, -2)
    return float(y.detach()), maps


def run_forward(model, out, x, *extra):
    out.mkdir()
    np.save(out / "x.npy", x)
    args = ["forward", "--model", model, "--heads", str(HEADS), "-o", out, "--class", ",".join(TEXTS)]
    for t in TEXTS:
        args += ["--text", t]
    code, _, err = harness.run(*args, *extra, out / "x.npy")
    assert code == 0, err[-3000:]
    return out


def test_openai_text_prompted_maps(tmp_path):
    image_t, text_t = openai_tensors(seed=3), openai_text_tensors(seed=14)
    model = tmp_path / "clip.safetensors"
    safetensors_io.write(model, {"visual." + k: v for k, v in image_t.items()} | text_t)
    x = images(SQUARE, n=2, seed=5)
    o_last = run_forward(model, tmp_path / "last", x, "--method", ",".join(METHODS))
    o_all = run_forward(model, tmp_path / "all", x, "--method", "chefer", "--first-layer", "0")
    ids = np.load(o_last / "text_ids.npy")
    with torch.no_grad():
        _, text_e = openai_encode_text(as_torch(text_t), torch.from_numpy(ids.astype(np.int64)), TEXT_W // 64)
    scale = float(text_t["logit_scale"])
    worst = {}
    for n in range(2):
        for i in range(len(TEXTS)):
            y, ref = reference_maps(as_torch(image_t), x[n], text_e[i], scale)
            dl = abs(np.load(o_last / "x_logits.npy")[n, i] - y) / np.exp(scale)
            assert dl <= TOL, f"image {n} text {i}: logit off by {dl:.3g}"
            for method in METHODS:
                got = np.load(o_last / f"x_relevance_{method}_t{i}.npy")[n]
                want = ref[(method, -1)] if method == "chefer" else ref[method]
                worst[method] = max(worst.get(method, 0.0), relative(got, want))
            got = np.load(o_all / f"x_relevance_chefer_t{i}.npy")[n]
            worst["chefer from 0"] = max(worst.get("chefer from 0", 0.0), relative(got, ref[("chefer", 0)]))
    print("worst relative:", {k: f"{v:.3g}" for k, v in worst.items()})
    for k, v in worst.items():
        assert v <= TOL, f"{k} off by {v:.3g}"


def test_text_class_refusals(tmp_path):
    """--class by index with texts: one error line, exit 2."""
    model = tmp_path / "clip.safetensors"
    safetensors_io.write(model, {"visual." + k: v for k, v in openai_tensors(seed=3).items()} | openai_text_tensors(seed=14))
    np.save(tmp_path / "x.npy", images(SQUARE, seed=5))
    code, _, err = harness.run("forward", "--model", model, "--heads", str(HEADS), "-o", tmp_path / "o", "--text", "a cat",
                               "--class", "0", "--method", "chefer", tmp_path / "x.npy")
    lines = [l for l in err.splitlines() if "error:" in l]
    assert code == 2 and len(lines) == 1 and "by its text" in lines[0], err
