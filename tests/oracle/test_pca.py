"""--pca against numpy: the first three principal components of the last layer's patch
features, as colours (docs/tokens.md, section "PCA").

The oracle shares no code with the binary: the features come from a float64 numpy forward of
the same random weights (timm's pre-norm ViT, erf GELU, LayerNorm ε 1e-6, DINOv2's layer scale
and registers), the components from numpy.linalg.svd of the centred features (one image) or
numpy.linalg.eigh of the covariance (a batch), signed by the documented rule, scaled as
documented and compared with the PNG's cells (--interp nearest: every cell a P×P block) within
one 8-bit level. Each case checks first that the random model's top four eigenvalues are apart
(a component of a near-tie would be any vector of its plane: no oracle could pin it).
"""
import math
from pathlib import Path

import cv2
import numpy as np
import pytest

import harness
from harness import run_process

P, GRID, D, HEADS, LAYERS, MLP = 8, 6, 32, 2, 2, 64
SIZE = GRID * P
IMAGENET_MEAN = np.array([0.485, 0.456, 0.406], np.float32)
IMAGENET_STD = np.array([0.229, 0.224, 0.225], np.float32)


# ---------------------------------------------------------------------------
# The oracle: a numpy ViT in float64 and the PCA from its definition
# ---------------------------------------------------------------------------

def layer_norm(x, w, b, eps=1e-6):
    mu = x.mean(-1, keepdims=True)
    var = ((x - mu) ** 2).mean(-1, keepdims=True)
    return (x - mu) / np.sqrt(var + eps) * w + b


def gelu(x):
    return 0.5 * x * (1 + np.vectorize(math.erf)(x / math.sqrt(2)))


def patch_features(t, image_path, registers, norm=(IMAGENET_MEAN, IMAGENET_STD), positions=None):
    """The final norm's patch tokens [gh·gw, D] of the image (a BGR file of gh·P × gw·P, the
    model's input as it is). positions: the patch positions [gh·gw, D] when the grid is not
    the model's own."""
    t = {k: v.astype(np.float64) for k, v in t.items()}
    rgb = cv2.imread(str(image_path), cv2.IMREAD_COLOR)[:, :, ::-1].astype(np.float32) / 255
    x = ((rgb - norm[0]) / norm[1]).astype(np.float32).astype(np.float64)  # [H, W, 3]
    gh, gw = x.shape[0] // P, x.shape[1] // P
    w = t["patch_embed.proj.weight"].reshape(D, -1)                                    # [D, 3·P·P]
    cells = x.reshape(gh, P, gw, P, 3).transpose(0, 2, 4, 1, 3).reshape(gh * gw, -1)  # [N, 3·P·P] (c, y, x)
    pos = t["pos_embed"][0, 1:] if positions is None else positions
    patches = cells @ w.T + t["patch_embed.proj.bias"] + pos
    parts = [t["cls_token"][0] + t["pos_embed"][0, :1]]
    if registers:
        parts.append(t["register_tokens"][0])
    x = np.concatenate(parts + [patches])                                              # [T, D]
    dh = D // HEADS
    for i in range(LAYERS):
        b = f"blocks.{i}."
        h = layer_norm(x, t[b + "norm1.weight"], t[b + "norm1.bias"])
        q, k, v = np.split(h @ t[b + "attn.qkv.weight"].T + t[b + "attn.qkv.bias"], 3, axis=1)
        heads = []
        for j in range(HEADS):
            s = q[:, j * dh:(j + 1) * dh] @ k[:, j * dh:(j + 1) * dh].T / math.sqrt(dh)
            a = np.exp(s - s.max(1, keepdims=True))
            heads.append((a / a.sum(1, keepdims=True)) @ v[:, j * dh:(j + 1) * dh])
        o = np.concatenate(heads, 1) @ t[b + "attn.proj.weight"].T + t[b + "attn.proj.bias"]
        x = x + (o * t[b + "ls1.gamma"] if registers else o)
        h = layer_norm(x, t[b + "norm2.weight"], t[b + "norm2.bias"])
        m = gelu(h @ t[b + "mlp.fc1.weight"].T + t[b + "mlp.fc1.bias"]) @ t[b + "mlp.fc2.weight"].T + t[b + "mlp.fc2.bias"]
        x = x + (m * t[b + "ls2.gamma"] if registers else m)
    return layer_norm(x, t["norm.weight"], t["norm.bias"])[1 + registers:]


def border_rows(n_images, gh=GRID, gw=GRID):
    """The grid's outer ring, row indices of [n_images · gh·gw, …]."""
    r, c = np.divmod(np.arange(gh * gw), gw)
    ring = np.flatnonzero((r == 0) | (c == 0) | (r == gh - 1) | (c == gw - 1))
    return np.concatenate([ring + i * gh * gw for i in range(n_images)])


def signed(components, mean, border_mean):
    """The sign rule: (border_mean − mean)·c < 0; on a 0 (within 1e-9 of the offset's length),
    the largest entry positive."""
    out = []
    for c in components:
        dot = (border_mean - mean) @ c
        tie = abs(dot) <= 1e-9 * np.linalg.norm(border_mean - mean)
        if (dot > 0 and not tie) or (tie and c[np.argmax(np.abs(c))] < 0):
            c = -c
        out.append(c)
    return np.array(out)


def image_fit(features, gh=GRID, gw=GRID):
    """One image: numpy.linalg.svd of the centred features → (mean, components [3, D], σ²)."""
    mean = features.mean(0)
    _, s, vt = np.linalg.svd(features - mean, full_matrices=False)
    variances = s ** 2 / len(features)
    assert np.all(variances[:3] > 1.02 * variances[1:4]), f"eigenvalues too close for an oracle: {variances[:4]}"
    return mean, signed(vt[:3], mean, features[border_rows(1, gh, gw)].mean(0)), variances[:3]


def batch_fit(all_features):
    """Every image's patches: the population covariance's eigenvectors (numpy.linalg.eigh)."""
    x = np.concatenate(all_features)
    mean = x.mean(0)
    values, vectors = np.linalg.eigh((x - mean).T @ (x - mean) / len(x))
    values, vectors = values[::-1], vectors[:, ::-1].T
    assert np.all(values[:3] > 1.02 * values[1:4]), f"eigenvalues too close for an oracle: {values[:4]}"
    return mean, signed(vectors[:3], mean, x[border_rows(len(all_features))].mean(0)), values[:3]


def min_max_colours(projections):
    lo, hi = projections.min(0), projections.max(0)
    return (projections - lo) / (hi - lo)


def sigma_colours(projections, variances):
    sigma = np.sqrt(variances)
    return np.clip((projections + 3 * sigma) / (6 * sigma), 0, 1)


def png_cells(path, shape):
    """The PNG's colour at each cell's centre: [gh·gw, 3] RGB."""
    bgr = cv2.imread(str(path), cv2.IMREAD_COLOR)
    assert bgr.shape == (*shape, 3), bgr.shape
    return bgr[P // 2::P, P // 2::P, ::-1].reshape(-1, 3).astype(int)


def assert_colours(path, unit, mask=None, shape=(SIZE, SIZE)):
    want = np.round(255 * unit).astype(int)
    if mask is not None:
        want[unit[:, 0] < mask] = 0
    got = png_cells(path, shape)
    gap = np.abs(got - want).max()
    assert gap <= 1, f"{path.name}: {gap} levels from numpy's PCA\n{got[:6]}\n{want[:6]}"


# ---------------------------------------------------------------------------
# Fixtures
# ---------------------------------------------------------------------------

MODELS = {"dino": 0, "dinov2": 4}  # family → registers (DINOv2's with layer scale)


@pytest.fixture(scope="module")
def case(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("pca")
    models = {}
    for family, registers in MODELS.items():
        t = harness.timm_tensors(D, P, GRID, LAYERS, MLP, seed=11 + registers, registers=registers)
        path = tmp / f"{family}.safetensors"
        import safetensors_io
        safetensors_io.write(path, t, {"num_heads": str(HEADS)}, dtype="F32")
        models[family] = (path, t, registers)
    images = []
    for i in range(4):
        p = tmp / "in" / f"img{i}.png"
        p.parent.mkdir(exist_ok=True)
        cv2.imwrite(str(p), harness.photo_like(SIZE, SIZE, seed=i))
        images.append(p)
    return tmp, models, images


def vitattn(*args):
    r = run_process(*map(str, args))
    assert r.returncode == 0, r.stderr
    return r


def model_args(models, family):
    return ["--model", models[family][0], "--family", family, "--interp", "nearest"]


# ---------------------------------------------------------------------------
# Tests
# ---------------------------------------------------------------------------

@pytest.mark.parametrize("family", list(MODELS))
def test_one_image_matches_numpy_svd(case, family):
    tmp, models, images = case
    out = tmp / f"one_{family}"
    vitattn(*model_args(models, family), images[0], "-o", out, "--pca")
    _, t, registers = models[family]
    features = patch_features(t, images[0], registers)
    mean, components, _ = image_fit(features)
    assert_colours(out / "img0_pca.png", min_max_colours((features - mean) @ components.T))
    # --pca-mask: component 1 below T blanked (black), the rest as before.
    out = tmp / f"mask_{family}"
    vitattn(*model_args(models, family), images[0], "-o", out, "--pca", "--pca-mask", "0.5")
    assert_colours(out / "img0_pca.png", min_max_colours((features - mean) @ components.T), mask=0.5)


def test_batch_fit_matches_numpy_and_its_file(case):
    tmp, models, images = case
    out = tmp / "batch"
    vitattn(*model_args(models, "dinov2"), *images, "-o", out, "--pca", "--pca-fit", "batch")
    _, t, registers = models["dinov2"]
    features = [patch_features(t, p, registers) for p in images]
    mean, components, variances = batch_fit(features)
    fit = np.load(out / "pca_fit.npy")
    assert fit.dtype == np.float32 and fit.shape == (5, D)
    assert np.abs(fit[0] - mean).max() < 1e-4
    assert np.abs(fit[1:4] - components).max() < 1e-3, "components (sign rule included)"
    assert np.allclose(fit[4, :3], np.sqrt(variances), rtol=1e-3) and not fit[4, 3:].any()
    for p, f in zip(images, features):
        assert_colours(out / f"{p.stem}_pca.png", sigma_colours((f - mean) @ components.T, variances))
    # The file read back gives the same pictures, for a subset of the images too.
    again = tmp / "from_file"
    vitattn(*model_args(models, "dinov2"), images[1], images[2], "-o", again, "--pca", "--pca-fit", out / "pca_fit.npy")
    for p in images[1:3]:
        assert (again / f"{p.stem}_pca.png").read_bytes() == (out / f"{p.stem}_pca.png").read_bytes()


def test_batch_fit_same_bytes_whatever_shards_and_jobs(case):
    tmp, models, images = case
    base = model_args(models, "dinov2") + [*images, "--pca", "--pca-fit", "batch"]
    one = tmp / "one_run"
    vitattn(*base, "-o", one, "-j", "1")
    two = tmp / "two_workers"
    vitattn(*base, "-o", two, "-j", "2")
    assert harness.files_of(two) == harness.files_of(one)
    sharded = tmp / "sharded"
    vitattn(*base, "-o", sharded, "--shard", "1/2")
    vitattn(*base, "-o", sharded, "--shard", "2/2", "-j", "2")
    assert not (sharded / "pca_fit.npy").exists(), "a shard writes no pca_fit.npy"
    vitattn(*base, "-o", sharded, "--skip-existing")
    assert harness.files_of(sharded) == harness.files_of(one)


def refused(tmp, args, word):
    out = tmp / "refused"
    r = run_process(*map(str, args), "-o", out)
    lines = r.stderr.strip().splitlines()
    assert r.returncode == 2, r.stderr
    assert len(lines) == 1 and lines[0].startswith("error:") and word in lines[0], r.stderr
    assert not out.exists(), "nothing written"


def test_refusals(case):
    tmp, models, images = case
    base = model_args(models, "dino")
    refused(tmp, base + [images[0], "--pca", "--pca-mask", "2"], "--pca-mask")
    refused(tmp, base + [images[0], "--pca", "--pca-mask", "nan"], "nan")
    refused(tmp, base + [images[0], "--pca", "--pca-fit", "batch"], "--pca-fit batch")
    wrong_width = tmp / "wrong_width.npy"
    np.save(wrong_width, np.zeros((5, D + 1), np.float32))
    refused(tmp, base + [*images, "--pca", "--pca-fit", wrong_width], "wrong_width.npy")
    not_unit = tmp / "not_unit.npy"
    np.save(not_unit, np.ones((5, D), np.float32))
    refused(tmp, base + [*images, "--pca", "--pca-fit", not_unit], "not_unit.npy")
    refused(tmp, base + [*images, "--pca", "--pca-fit", images[0]], "img0.png")


def timm_positions(t, gh, gw):
    """timm's resample_abs_pos_embed of the 6×6 positions to gh×gw (bicubic, antialiased), in torch."""
    torch = pytest.importorskip("torch")
    grid = torch.from_numpy(t["pos_embed"][0, 1:].astype(np.float64)).reshape(1, GRID, GRID, D).permute(0, 3, 1, 2)
    grid = torch.nn.functional.interpolate(grid, size=(gh, gw), mode="bicubic", align_corners=False, antialias=True)
    return grid.permute(0, 2, 3, 1).reshape(gh * gw, D).numpy()


def test_non_square_grid(case):
    """--keep-aspect on an 80×48 image: a 6×10 grid (positions resampled as timm does): the
    cells in their order (a grid drawn transposed fails here), the signs by the 6×10 ring.
    (A ring slightly wrong rarely flips a sign: tests/unit/pca_test.cpp checks its sums.)"""
    tmp, models, _ = case
    t = harness.timm_tensors(D, P, GRID, LAYERS, MLP, seed=21)
    path = tmp / "timm.safetensors"
    import safetensors_io
    safetensors_io.write(path, t, {"num_heads": str(HEADS)}, dtype="F32")
    image = tmp / "wide" / "wide.png"
    image.parent.mkdir()
    cv2.imwrite(str(image), harness.photo_like(48, 80, seed=7))
    out = tmp / "wide_out"
    vitattn("--model", path, "--family", "timm", "--keep-aspect", "--interp", "nearest", image, "-o", out, "--pca")
    half = np.full(3, 0.5, np.float32)
    features = patch_features(t, image, 0, norm=(half, half), positions=timm_positions(t, 6, 10))
    mean, components, _ = image_fit(features, 6, 10)
    assert_colours(out / "wide_pca.png", min_max_colours((features - mean) @ components.T), shape=(48, 80))
