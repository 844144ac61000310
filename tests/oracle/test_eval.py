#!/usr/bin/python3
"""`vitattn eval` against numpy, sklearn and torch: each yardstick recomputed here from the maps
vitattn drew (its <name>_cls_<method>.npy), with the model run by torch (torchvision's
VisionTransformer), not by vitattn.

Run:  /usr/bin/python3 -m pytest tests/oracle/test_eval.py
Env:  VITATTN_BIN  binary to test (default <repo>/build/dev/vitattn)

What is recomputed here, each as the reference code reads (hila-chefer/Transformer-Explainability,
baselines/ViT/imagenet_seg_eval.py, utils/metrices.py, pertubation_eval_from_hdf5.py):
  - segmentation: the mask resized by PIL's nearest neighbour (torchvision's Resize(NEAREST));
    the map upsampled by torch's interpolate(scale_factor=P, bilinear), min-max normalised,
    thresholded at its mean, NaN set to 0; pixel accuracy and IoU by their histogram code summed
    over the set; AP by sklearn's average_precision_score of (1 - map, map) against the one-hot
    mask; the pointing game by the distance to the nearest mask pixel; on a normal map, a
    constant one (a model whose last layer's queries and keys are zero), an empty mask and a
    full mask;
  - perturbation: the pixels ranked by the upsampled map (ties by index), int(N * step) of them
    set to 0 before the normalisation, torch's top-1 against the target, numpy's trapezoid x 100;
  - sanity: the randomised blocks drawn here from their definition (splitmix64, Box-Muller) into
    the torch model, the attention map from torch's attention weights, scipy's spearmanr.
Also: the CSVs byte-identical at -j 1 and -j 2, and the refusals (a mask of another size, a
missing mask, a label outside the classes, a class-specific method on a backbone); large sets:
shards then the run without --shard, --skip-existing and an interrupted run resumed each leave
the one-machine run's CSVs and eval.html, byte for byte.
"""
import csv
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "pylib"))

from harness import need, run_process  # noqa: E402

try:
    import torch
    import torch.nn.functional as F
    from PIL import Image
    from scipy.stats import spearmanr
    from sklearn.metrics import average_precision_score
except ImportError as e:  # CI installs python3-torch, python3-sklearn (scripts/install-deps.sh)
    need(False, f"cannot import torch, PIL, scipy or sklearn ({e}); install python3-torch python3-sklearn")

import cv2  # noqa: E402
import torch_reference as tr  # noqa: E402

REPO = HERE.parents[1]
BIN = Path(os.environ.get("VITATTN_BIN", REPO / "build" / "dev" / "vitattn"))
SIZE, P, LAYERS, CLASSES = 96, 16, 3, 10
TOL = 1e-6
torch.set_grad_enabled(False)
torch.set_num_threads(2)


# ---------------------------------------------------------------------------
# fixtures
# ---------------------------------------------------------------------------


def save_model(model, path, backbone=False):
    sd = tr.export_timm(model.state_dict(), LAYERS)
    if backbone:
        sd = {k: v for k, v in sd.items() if not k.startswith("head.")}
    tr.write_safetensors(path, sd, metadata={"num_heads": 3})


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    if not BIN.is_file():
        pytest.fail(f"binary {BIN} not found")
    tmp = tmp_path_factory.mktemp("eval")
    model = tr.make_vit(SIZE, 96, 3, 192, LAYERS, CLASSES, seed=11)
    path = tmp / "m.safetensors"
    save_model(model, path)
    images, masks = tr.make_shifted_images(tmp, 3), tmp / "masks"
    masks.mkdir()
    h, w = 200, 300
    blob = np.zeros((h, w), np.uint8)
    cv2.circle(blob, (143, 110), 50, 255, -1)
    cv2.imwrite(str(masks / "img0.png"), blob)
    cv2.imwrite(str(masks / "img1.png"), np.zeros((h, w), np.uint8))    # empty
    cv2.imwrite(str(masks / "img2.png"), np.full((h, w), 7, np.uint8))  # full (any nonzero is object)
    return tmp, model, path, images, masks


def read_rows(path):
    with open(path, newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f))


def per_image(out):
    """{(file, method, metric): value} of eval_images.csv."""
    return {(r["file"], r["method"], r["metric"]): float(r["value"]) for r in read_rows(out / "eval_images.csv")}


def summary(out):
    return {(r["method"], r["metric"]): (float(r["value"]), int(r["images"])) for r in read_rows(out / "eval.csv")}


def run_eval(*args, expect=0):
    return run_process("eval", *args, expect=expect)


# ---------------------------------------------------------------------------
# the reference, as read
# ---------------------------------------------------------------------------


def mask_at_input(mask_path):
    img = Image.open(mask_path).convert("L")
    return torch.from_numpy((np.asarray(img.resize((SIZE, SIZE), Image.NEAREST)) != 0).astype(np.int64))


def upsampled(cls_map):
    res = torch.from_numpy(cls_map.astype(np.float64))[None, None]
    return F.interpolate(res, scale_factor=P, mode="bilinear")


def batch_pix_accuracy(predict, target):
    _, predict = torch.max(predict, 0)
    predict = predict.numpy() + 1
    target = target.numpy() + 1
    return np.sum((predict == target) * (target > 0)), np.sum(target > 0)


def batch_intersection_union(predict, target, nclass=2):
    _, predict = torch.max(predict, 0)
    predict = predict.numpy() + 1
    target = target.numpy() + 1
    predict = predict * (target > 0).astype(predict.dtype)
    intersection = predict * (predict == target)
    area_inter, _ = np.histogram(intersection, bins=nclass, range=(1, nclass))
    area_pred, _ = np.histogram(predict, bins=nclass, range=(1, nclass))
    area_lab, _ = np.histogram(target, bins=nclass, range=(1, nclass))
    return area_inter, area_pred + area_lab - area_inter


def segmentation(cls_map, labels):
    """(correct, labeled, inter, union, ap, pointing hit or None) of one map against its mask."""
    up = upsampled(cls_map)
    res = (up - up.min()) / (up.max() - up.min())
    ret = res.mean()
    res_1 = res.gt(ret).type(res.type())
    res_0 = res.le(ret).type(res.type())
    res_1_ap = res.clone()
    res_0_ap = 1 - res
    for t in (res_1, res_0, res_1_ap, res_0_ap):
        t[t != t] = 0
    output = torch.cat((res_0, res_1), 1)
    output_ap = torch.cat((res_0_ap, res_1_ap), 1)
    correct, labeled = batch_pix_accuracy(output[0], labels)
    inter, union = batch_intersection_union(output[0], labels)
    one_hot = torch.zeros((2,) + tuple(labels.shape)).scatter_(0, labels[None], 1)
    ap = np.nan_to_num(average_precision_score(one_hot.numpy().reshape(-1), output_ap[0].numpy().reshape(-1)))
    hit = None
    if labels.any():
        u = up[0, 0].numpy()
        y, x = np.unravel_index(np.argmax(u), u.shape)
        pts = np.argwhere(labels.numpy() != 0)
        hit = bool((((pts[:, 0] - y) ** 2 + (pts[:, 1] - x) ** 2) <= 15 ** 2).any())
    return correct, labeled, inter, union, float(ap), hit


EPS = np.spacing(1, dtype=np.float64)


def model_input(image):
    """The unnormalised input in [0, 1] [3, H, W] (cv2 resize as vitattn) and the normalisation."""
    bgr = cv2.imread(str(image), cv2.IMREAD_COLOR)
    img = cv2.resize(bgr, (SIZE, SIZE), interpolation=cv2.INTER_AREA)
    rgb = img[:, :, ::-1].astype(np.float32) / np.float32(255)
    return np.ascontiguousarray(rgb.transpose(2, 0, 1))


def normalise(data):
    mean, std = (np.asarray(v, np.float32)[:, None, None] for v in tr.HALF)
    return (data - mean) / std


def perturbation_auc(model, image, cls_map, target, negative):
    data = model_input(image)
    vis = upsampled(cls_map)[0, 0].numpy().reshape(-1)
    order = np.lexsort((np.arange(vis.size), vis if negative else -vis))  # ties by index
    base = SIZE * SIZE
    batch = [normalise(data)]
    for step in [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9]:
        d = data.reshape(3, -1).copy()
        d[:, order[:int(base * step)]] = 0
        batch.append(normalise(d.reshape(data.shape)))
    top = model(torch.from_numpy(np.stack(batch))).argmax(1).numpy()
    hits = (top == target).astype(np.float64)
    return float(np.trapz(hits, x=np.arange(10) / 10.0) * 100), hits


MASK64 = (1 << 64) - 1
GOLD = 0x9E3779B97F4A7C15


def splitmix_stream(seed, count):
    """The first `count` outputs of splitmix64 from `seed`, vectorised (its state steps by GOLD)."""
    k = np.arange(1, count + 1, dtype=np.uint64)
    with np.errstate(over="ignore"):
        z = np.uint64(seed) + k * np.uint64(GOLD)
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        return z ^ (z >> np.uint64(31))


def redrawn(values, layer, tensor, seed=0xADEBA4):
    v = values.detach().double().numpy().reshape(-1)
    mean, sd = v.mean(), v.std()
    out = splitmix_stream(seed ^ ((layer * 64 + tensor) * GOLD & MASK64), 2 * v.size)
    u1 = ((out[0::2] >> np.uint64(11)).astype(np.float64) + 1.0) / 2.0 ** 53
    u2 = (out[1::2] >> np.uint64(11)).astype(np.float64) / 2.0 ** 53
    z = np.sqrt(-2.0 * np.log(u1)) * np.cos(2.0 * np.pi * u2)
    return torch.from_numpy((mean + sd * z).astype(np.float32).reshape(values.shape))


def randomised(model, depth):
    """A copy of the torch model with its top `depth` blocks re-drawn as vitattn defines it."""
    import copy
    m = copy.deepcopy(model)
    names = ["ln_1.weight", "ln_1.bias", "self_attention.in_proj_weight", "self_attention.in_proj_bias",
             "self_attention.out_proj.weight", "self_attention.out_proj.bias", None, "ln_2.weight", "ln_2.bias",
             "mlp.0.weight", "mlp.0.bias", "mlp.3.weight", "mlp.3.bias"]
    for layer in range(LAYERS - depth, LAYERS):
        params = dict(m.encoder.layers[layer].named_parameters())
        for t, name in enumerate(names):
            if name is not None:
                params[name].copy_(redrawn(params[name], layer, t))
    return m


def attention_map(model, image):
    x = torch.from_numpy(normalise(model_input(image)))[None]
    attn, _, _ = tr.torch_reference(model, x)
    g = SIZE // P
    return attn[0, -1, :, 0, 1:].mean(0).reshape(g, g)


# ---------------------------------------------------------------------------
# tests
# ---------------------------------------------------------------------------


def check_segmentation(out, images, masks, methods):
    got, total = per_image(out), summary(out)
    worst = 0.0
    for method in methods:
        acc = [0, 0, np.zeros(2, np.int64), np.zeros(2, np.int64)]
        aps, hits = [], []
        for image in images:
            cls_map = np.load(out / f"{image.stem}_cls_{method}.npy")
            correct, labeled, inter, union, ap, hit = segmentation(cls_map, mask_at_input(masks / f"{image.stem}.png"))
            key = (str(image), method)
            want = {"pixel_accuracy": correct / (EPS + labeled), "miou": float(np.mean(inter / (EPS + union))), "map": ap}
            if hit is not None:
                want["pointing_game"] = float(hit)
                hits.append(hit)
            else:
                assert key + ("pointing_game",) not in got, f"{key}: a pointing game on an empty mask"
            for metric, value in want.items():
                d = abs(got[key + (metric,)] - value)
                assert d <= TOL, f"{key} {metric}: {got[key + (metric,)]}, numpy/sklearn {value}"
                worst = max(worst, d)
            acc[0] += correct
            acc[1] += labeled
            acc[2] += inter
            acc[3] += union
            aps.append(ap)
        want = {"pixel_accuracy": (acc[0] / (EPS + acc[1]), len(images)),
                "miou": (float(np.mean(acc[2] / (EPS + acc[3]))), len(images)),
                "map": (float(np.mean(aps)), len(images))}
        if hits:
            want["pointing_game"] = (float(np.mean(hits)), len(hits))
        for metric, (value, n) in want.items():
            v, count = total[(method, metric)]
            assert abs(v - value) <= TOL and count == n, f"{method} {metric} over the set: {v} ({count}), want {value} ({n})"
    return worst


def test_segmentation_against_their_code(setup):
    tmp, model, path, images, masks = setup
    out = tmp / "out_seg"
    run_eval("--model", path, "--masks", masks, "--method", "attention,rollout,chefer", "--no-sanity",
             "--save-attention", "-o", out, *images)
    worst = check_segmentation(out, images, masks, ["attention", "rollout", "chefer", "random"])
    print(f"segmentation: max |vitattn - numpy/sklearn| {worst:.2g}", flush=True)


def test_segmentation_of_a_constant_map(setup):
    """A model whose last layer's queries and keys are 0: its attention is uniform, the map
    constant; their code then predicts background everywhere and scores AP from zeros."""
    tmp, model, path, images, masks = setup
    import copy
    flat = copy.deepcopy(model)
    attn = flat.encoder.layers[LAYERS - 1].self_attention
    attn.in_proj_weight[:2 * 96].zero_()
    attn.in_proj_bias[:2 * 96].zero_()
    flat_path = tmp / "flat.safetensors"
    save_model(flat, flat_path)
    out = tmp / "out_flat"
    run_eval("--model", flat_path, "--masks", masks, "--method", "attention", "--no-sanity", "--save-attention",
             "-o", out, *images)
    cls_map = np.load(out / f"{images[0].stem}_cls_attention.npy")
    assert np.ptp(cls_map) == 0, "the map is not constant: the test proves nothing"
    check_segmentation(out, images, masks, ["attention"])
    assert per_image(out)[(str(images[0]), "attention", "map")] == pytest.approx(0.5)


def test_perturbation_against_torch(setup):
    tmp, model, path, images, masks = setup
    out = tmp / "out_pert"
    labels = tmp / "labels.csv"
    logits = model(torch.from_numpy(normalise(model_input(images[1])))[None])[0]
    second = int(torch.argsort(logits, descending=True)[1])
    labels.write_text(f"file,class\n{images[1].name},{second}\n")
    run_eval("--model", path, "--labels-csv", labels, "--method", "attention,chefer", "--no-sanity", "--save-attention",
             "-o", out, images[0], images[1])
    got, total = per_image(out), summary(out)
    worst = 0.0
    for method in ["attention", "chefer", "random"]:
        aucs = {"positive_auc": [], "negative_auc": []}
        for image in images[:2]:
            top1 = int(model(torch.from_numpy(normalise(model_input(image)))[None])[0].argmax())
            target = second if image == images[1] else top1
            cls_map = np.load(out / f"{image.stem}_cls_{method}.npy")
            for metric, negative in (("positive_auc", False), ("negative_auc", True)):
                want, hits = perturbation_auc(model, image, cls_map, target, negative)
                g = got[(str(image), method, metric)]
                assert abs(g - want) <= 1e-9, f"{image.name} {method} {metric}: {g}, torch {want} (hits {hits})"
                aucs[metric].append(want)
                worst = max(worst, abs(g - want))
        for metric, values in aucs.items():
            v, n = total[(method, metric)]
            assert abs(v - np.mean(values)) <= 1e-9 and n == 2, f"{method} {metric}: {v} ({n}), want {np.mean(values)}"
    print(f"perturbation: max |vitattn - torch| {worst:.2g}", flush=True)


def test_sanity_against_torch(setup):
    tmp, model, path, images, masks = setup
    out = tmp / "out_sanity"
    run_eval("--model", path, "--method", "attention", "--save-attention", "-o", out, images[0])
    original = attention_map(model, images[0])
    saved = np.load(out / f"{images[0].stem}_cls_attention.npy")
    assert np.abs(saved - original).max() < 1e-5, "vitattn's attention map is not torch's"
    curves = {int(float(r["x"])): float(r["value"]) for r in read_rows(out / "eval_curves.csv")
              if r["method"] == "attention" and r["curve"] == "sanity"}
    assert sorted(curves) == list(range(1, LAYERS + 1)), curves
    for depth in range(1, LAYERS + 1):
        want = spearmanr(original.reshape(-1), attention_map(randomised(model, depth), images[0]).reshape(-1))[0]
        assert abs(curves[depth] - want) <= 1e-3, f"depth {depth}: Spearman {curves[depth]}, torch/scipy {want}"
    got = per_image(out)[(str(images[0]), "attention", "sanity_spearman")]
    assert got == pytest.approx(curves[LAYERS])
    assert ("random", "sanity_spearman") not in summary(out)


def test_same_bytes_whatever_j(setup):
    """The first image is a large one (slow to decode), so that at -j 2 the second and third
    finish before it: rows in the order the images finish would show."""
    tmp, model, path, images, masks = setup
    big = tmp / "big"
    big.mkdir(exist_ok=True)
    rng = np.random.default_rng(3)
    cv2.imwrite(str(big / "a_big.png"), rng.integers(0, 256, (2400, 3600, 3), dtype=np.uint8))
    cv2.imwrite(str(masks / "a_big.png"), cv2.resize(cv2.imread(str(masks / "img0.png")), (3600, 2400)))
    images = [big / "a_big.png"] + images
    outs = []
    for j in (1, 2):
        out = tmp / f"out_j{j}"
        run_eval("--model", path, "--masks", masks, "--method", "attention,chefer", "-j", j, "-o", out, *images)
        outs.append(out)
    for name in EVAL_FILES:
        assert (outs[0] / name).read_bytes() == (outs[1] / name).read_bytes(), f"{name} differs between -j 1 and -j 2"
    files = [r["file"] for r in read_rows(outs[0] / "eval_images.csv")]
    assert list(dict.fromkeys(files)) == [str(p) for p in images], "rows not in input order"


def one_error_line(p, *words):
    lines = [ln for ln in p.stderr.strip().splitlines() if ln.startswith("error")]
    assert len(lines) == 1 and all(w in lines[0] for w in words), f"want one error line with {words}: {p.stderr}"


def test_bad_input(setup):
    tmp, model, path, images, masks = setup
    # a mask of another size: that image fails, the others are measured and written
    bad = tmp / "masks_bad"
    bad.mkdir()
    for i, image in enumerate(images):
        m = cv2.imread(str(masks / f"{image.stem}.png"), cv2.IMREAD_GRAYSCALE)
        cv2.imwrite(str(bad / f"{image.stem}.png"), m[:100] if i == 1 else m)
    out = tmp / "out_bad_size"
    p = run_eval("--model", path, "--masks", bad, "--method", "attention", "--no-sanity", "-o", out, *images, expect=1)
    one_error_line(p, str(bad / "img1.png"), "300×100", "300×200")
    assert {r["file"] for r in read_rows(out / "eval_images.csv")} == {str(images[0]), str(images[2])}
    # a missing mask: a warning, the image left out of the segmentation metrics only
    few = tmp / "masks_few"
    few.mkdir()
    for image in images[:2]:
        (few / f"{image.stem}.png").write_bytes((masks / f"{image.stem}.png").read_bytes())
    out = tmp / "out_missing"
    p = run_eval("--model", path, "--masks", few, "--method", "attention", "--no-sanity", "-o", out, *images)
    assert str(few / "img2.png") in p.stderr and "no mask" in p.stderr, p.stderr
    total = summary(out)
    assert total[("attention", "pixel_accuracy")][1] == 2 and total[("attention", "positive_auc")][1] == 3
    # an empty mask: said, and out of the pointing game
    assert "is empty" in p.stderr and total[("attention", "pointing_game")][1] == 1, p.stderr
    # a label outside the classes
    labels = tmp / "labels_bad.csv"
    labels.write_text(f"{images[0].name},{CLASSES + 3}\n")
    out = tmp / "out_bad_label"
    p = run_eval("--model", path, "--labels-csv", labels, "-o", out, images[0], expect=2)
    one_error_line(p, "--labels-csv", f"{labels}:1", str(CLASSES + 3))
    assert not out.exists()
    # a class-specific method on a backbone
    backbone = tmp / "backbone.safetensors"
    save_model(model, backbone, backbone=True)
    out = tmp / "out_backbone"
    p = run_eval("--model", backbone, "--masks", masks, "--method", "chefer", "-o", out, images[0], expect=2)
    one_error_line(p, "--method chefer", "classifier")
    assert not out.exists()
    # a backbone with masks and no method named: the methods it allows, segmentation only
    p = run_eval("--model", backbone, "--masks", masks, "--no-sanity", "-o", out, images[0])
    assert {r["metric"] for r in read_rows(out / "eval.csv")} == {"pixel_accuracy", "miou", "map", "pointing_game"}


def test_no_output_replaces_what_the_run_reads(setup):
    """Exit 2 and one line naming both files, nothing written: an output that would replace the
    labels file or the log, the log over an input, and someone else's eval.html."""
    tmp, model, path, images, masks = setup
    out = tmp / "out_guard"
    out.mkdir()
    labels = out / "eval.csv"  # the labels file where eval.csv goes
    labels.write_text(f"{images[0].name},1\n")
    before = labels.read_bytes()
    p = run_eval("--model", path, "--labels-csv", labels, "--no-sanity", "-o", out, images[0], expect=2)
    one_error_line(p, str(labels), "--labels-csv")
    assert labels.read_bytes() == before and sorted(f.name for f in out.iterdir()) == ["eval.csv"]
    labels.unlink()
    p = run_eval("--model", path, "--log-json", out / "eval_curves.csv", "--no-sanity", "-o", out, images[0], expect=2)
    one_error_line(p, "--log-json", "eval_curves.csv")
    p = run_eval("--model", path, "--log-json", images[1], "--no-sanity", "-o", out, images[1], expect=2)
    one_error_line(p, "--log-json", str(images[1]))
    assert cv2.imread(str(images[1])) is not None, "the input was emptied by the log"
    page = out / "eval.html"
    page.write_text("<html><body>someone's notes</body></html>")
    p = run_eval("--model", path, "--no-sanity", "-o", out, images[0], expect=2)
    one_error_line(p, str(page))
    assert page.read_text() == "<html><body>someone's notes</body></html>" and sorted(f.name for f in out.iterdir()) == ["eval.html"]


# ---------------------------------------------------------------------------
# large sets: shards, --skip-existing, an interrupted run
# ---------------------------------------------------------------------------

EVAL_FILES = ("eval.csv", "eval_images.csv", "eval_curves.csv", "eval.html")


@pytest.fixture(scope="module")
def many(setup):
    """Eight images with their masks in a folder, the arguments of an eval over them, and the
    one-machine run's folder: the oracle of every other way of doing the same set."""
    tmp, model, path, images, masks = setup
    src, src_masks = tmp / "many", tmp / "many_masks"
    src.mkdir()
    src_masks.mkdir()
    for i in range(8):
        cv2.imwrite(str(src / f"m{i}.png"), np.roll(cv2.imread(str(images[i % 3])), 17 * i, axis=0))
        shutil.copy(masks / f"img{i % 3}.png", src_masks / f"m{i}.png")
    args = (src, "--model", path, "--masks", src_masks, "--method", "attention,chefer")
    whole = tmp / "many_whole"
    run_eval(*args, "-o", whole)
    return args, whole


def assert_whole(out, whole, what):
    for name in EVAL_FILES:
        assert (out / name).read_bytes() == (whole / name).read_bytes(), f"{what}: {name} differs from the one-machine run"


def parts(out):
    return sorted(p.name for p in out.glob("*_eval.csv"))


def test_shards_then_the_run_without_shard_leave_the_one_machine_files(many):
    args, whole = many
    out = whole.parent / "many_shards"
    run_eval(*args, "-o", out, "--shard", "1/2", "--skip-existing")
    first = len(parts(out))
    assert 0 < first < 8, f"shard 1/2 took {first} of 8 images: nothing to check"
    p = run_eval(*args, "-o", out, "--shard", "2/2", "--skip-existing")
    assert len(parts(out)) == 8, parts(out)
    assert f"{8 - first} images measured" in p.stderr, p.stderr
    for name in EVAL_FILES:
        assert not (out / name).exists(), f"a shard wrote {name}"
    p = run_eval(*args, "-o", out, "--skip-existing")
    assert "0 images measured, 8 skipped" in p.stderr, p.stderr
    assert_whole(out, whole, "shards 1/2 and 2/2, then the run without --shard")


def test_skip_existing_measures_nothing_again_and_leaves_the_same_files(many):
    args, whole = many
    out = whole.parent / "many_again"
    shutil.copytree(whole, out)
    for name in EVAL_FILES:
        (out / name).unlink()
    stamps = {p: p.stat().st_mtime_ns for p in out.iterdir()}
    p = run_eval(*args, "-o", out, "--skip-existing")
    assert "0 images measured, 8 skipped" in p.stderr, p.stderr
    assert {p: p.stat().st_mtime_ns for p in stamps} == stamps, "a part or record was written again"
    assert_whole(out, whole, "every image skipped")
    # One part gone: that image only is measured again.
    (out / "m3_eval.csv").unlink()
    p = run_eval(*args, "-o", out, "--skip-existing")
    assert "1 image measured, 7 skipped" in p.stderr, p.stderr
    assert_whole(out, whole, "one part measured again")
    # Other settings: every part is measured again, none is gathered as it was.
    p = run_eval(*args, "--layer", "1", "-o", out, "--skip-existing")
    assert "8 images measured, 8 redone" in p.stderr, p.stderr
    assert (out / "eval_images.csv").read_bytes() != (whole / "eval_images.csv").read_bytes()


def test_an_interrupted_run_finishes_its_images_and_resumes_to_the_one_machine_files(many):
    """SIGINT after the first part at -j 1: the image in hand is finished, none started after;
    exit 130; no half file; the CSVs hold the images done; --skip-existing then completes the set."""
    args, whole = many
    out = whole.parent / "many_interrupted"
    p = subprocess.Popen([str(BIN), "eval", *map(str, args), "-o", str(out), "-j", "1"], stdout=subprocess.DEVNULL,
                         stderr=subprocess.PIPE, text=True, preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    deadline = time.monotonic() + 60
    while not parts(out) and p.poll() is None and time.monotonic() < deadline:
        time.sleep(0.005)
    p.send_signal(signal.SIGINT)
    _, err = p.communicate(timeout=60)
    assert p.returncode == 130, f"the run was to be stopped by SIGINT midway (exit {p.returncode})\n{err}"
    done = parts(out)
    assert 0 < len(done) < 8, f"the interruption left {len(done)} of 8 parts: nothing to resume"
    leftovers = [f.name for f in out.iterdir() if ".tmp-" in f.name]
    assert not leftovers, f"half-written files left: {leftovers}"
    for part in done:  # each part whole: committed with its record
        assert (out / part.replace("_eval.csv", "_settings.txt")).is_file(), f"{part} without its settings record"
    listed = {Path(r["file"]).name for r in read_rows(out / "eval_images.csv")}
    assert listed == {d.replace("_eval.csv", ".png") for d in done}, "eval_images.csv lists other images than those done"
    p = run_eval(*args, "-o", out, "--skip-existing")
    assert f"{8 - len(done)} images measured, {len(done)} skipped" in p.stderr, p.stderr
    assert_whole(out, whole, "interrupted, then resumed with --skip-existing")
