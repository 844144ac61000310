#!/usr/bin/python3
"""--faithfulness against numpy/torch: the deletion and insertion curves of RISE (Petsiuk et
al. 2018) recomputed here, for the map vitattn drew (its _cls.npy) and for the random
baseline, with the model run by torch (torchvision's VisionTransformer), not by vitattn.

Run:  /usr/bin/python3 -m pytest tests/oracle/test_faithfulness.py
Env:  VITATTN_BIN  binary to test (default <repo>/build/dev/vitattn)

What is recomputed here, each from its definition in docs/faithfulness.md:
  - the model input: tests/pylib/torch_reference.preprocess (cv2 resize, normalise);
  - the blur: a Gaussian of sigma = one patch, kernel 2*ceil(4 sigma)+1, border reflect-101
    (numpy's "reflect"), separable, in float64;
  - the ranking: highest first, ties by row-major index (numpy lexsort);
  - n_k = ceil(k N / K) in integers; deletion sets the patches to 0, insertion pastes them
    from the sharp input into the blurred one; p(c) from torch's softmax; the AUC by
    numpy's trapezoid rule over n_k / N;
  - the random map: splitmix64 from seed 0x5eed, written here from its published definition.
Also: faithfulness.csv byte-identical at -j 1 and -j 2, rows in input order, and the refusals
(a model without classifier, the seeded model, --faithfulness-steps 0 or without --faithfulness).
"""
import csv
import math
import os
import sys
from pathlib import Path

import numpy as np
import pytest

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "pylib"))

from harness import need, run_process  # noqa: E402

try:
    import torch
    import torch.nn.functional as F
except ImportError as e:  # CI installs python3-torch (scripts/install-deps.sh)
    need(False, f"cannot import torch ({e}); install python3-torch python3-torchvision")

import torch_reference as tr  # noqa: E402  (torchvision ViTs, their exports, torch references, the input)

REPO = HERE.parents[1]
BIN = Path(os.environ.get("VITATTN_BIN", REPO / "build" / "dev" / "vitattn"))
TOL = 1e-4
SIZE, P = 96, 16  # grid 6x6 = 36 patches; the blur's radius 64 stays inside one reflection
HEADER = ["path", "method", "class", "deletion_auc", "insertion_auc", "steps"]
torch.set_grad_enabled(False)
torch.set_num_threads(2)


def read_csv(path):
    with open(path, newline="", encoding="utf-8") as f:
        rows = list(csv.reader(f))
    assert rows[0] == HEADER, f"{path}: header {rows[0]}"
    return rows[1:]


# ---------------------------------------------------------------------------
# the definition, recomputed
# ---------------------------------------------------------------------------

MASK64 = (1 << 64) - 1


def splitmix64_map(h, w, seed=0x5EED):
    """Cell i (row-major) = top 24 bits of the i-th splitmix64 output / 2^24."""
    state, out = seed, []
    for _ in range(h * w):
        state = (state + 0x9E3779B97F4A7C15) & MASK64
        z = state
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK64
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK64
        z ^= z >> 31
        out.append((z >> 40) / 2.0 ** 24)
    return np.asarray(out, np.float32).reshape(h, w)


def gaussian_blur(x, sigma):
    """x [3, H, W] → each channel convolved with a normalised Gaussian, kernel 2*ceil(4σ)+1, reflect-101."""
    r = int(math.ceil(4 * sigma))
    k = np.exp(-((np.arange(-r, r + 1)) ** 2) / (2.0 * sigma * sigma))
    k /= k.sum()
    x = x.astype(np.float64)
    pad = np.pad(x, ((0, 0), (r, r), (r, r)), mode="reflect")  # numpy's reflect is OpenCV's REFLECT_101
    h, w = x.shape[1:]
    rows = sum(k[i] * pad[:, :, i:i + w] for i in range(2 * r + 1))           # along x: [3, H + 2r, W]
    return sum(k[i] * rows[:, i:i + h, :] for i in range(2 * r + 1)).astype(np.float32)  # along y


def ranking(m):
    flat = m.reshape(-1)
    return np.lexsort((np.arange(flat.size), -flat))  # highest first, ties by index


def curves(model, x, blurred, m, c, steps):
    """x, blurred [3, H, W]; m [gh, gw] → (fractions, deletion, insertion), p(c) by torch."""
    gh, gw = m.shape
    n = gh * gw
    order = ranking(m)
    dele, ins, fractions = [], [], []
    for k in range(steps + 1):
        n_k = (k * n + steps - 1) // steps
        chosen = np.zeros(n, bool)
        chosen[order[:n_k]] = True
        pix = np.kron(chosen.reshape(gh, gw), np.ones((P, P), bool))[None]  # [1, H, W]
        dele.append(np.where(pix, 0.0, x))
        ins.append(np.where(pix, x, blurred))
        fractions.append(n_k / n)
    batch = torch.from_numpy(np.stack(dele + ins).astype(np.float32))
    p = F.softmax(model(batch).double(), dim=-1)[:, c].numpy()
    return np.asarray(fractions), p[:steps + 1], p[steps + 1:]


def trapezoid(y, x):
    return float(np.sum((x[1:] - x[:-1]) * (y[1:] + y[:-1]) / 2))


# ---------------------------------------------------------------------------
# fixtures
# ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    if not BIN.is_file():
        pytest.fail(f"binary {BIN} not found")
    tmp = tmp_path_factory.mktemp("faith")
    model = tr.make_vit(SIZE, 96, 3, 192, 3, 10, seed=11)
    path = tmp / "m.safetensors"
    tr.write_safetensors(path, tr.export_timm(model.state_dict(), 3), metadata={"num_heads": 3})
    return tmp, model, path, tr.make_shifted_images(tmp, 3)


def model_input(image):
    return tr.preprocess(image, SIZE, SIZE, tr.HALF)[0].numpy()  # timm names with a head: the family's 0.5/0.5


def check_image(model, image, cls_map, rows, steps, method, c=None):
    """The image's rows: the map's and random's, each scored for class c (None: torch's top-1)."""
    x = model_input(image)
    blurred = gaussian_blur(x, P)
    top1 = int(torch.argmax(model(torch.from_numpy(x)[None])[0]))
    c = top1 if c is None else c
    got = {r[1]: r for r in rows if r[0] == str(image)}
    assert list(got) == [method, "random"], f"{image}: rows {rows}"
    worst = 0.0
    for name, m in ((method, cls_map), ("random", splitmix64_map(*cls_map.shape))):
        r = got[name]
        assert int(r[2]) == c, f"{image} {name}: class {r[2]}, want {c} (torch's top-1 is {top1})"
        assert int(r[5]) == steps
        fr, dele, ins = curves(model, x, blurred, m, c, steps)
        assert abs(dele[0] - ins[-1]) < 1e-6  # the sharp image at both ends (torch batches differ in the last bits)
        want = (trapezoid(dele, fr), trapezoid(ins, fr))
        d = max(abs(float(r[3]) - want[0]), abs(float(r[4]) - want[1]))
        assert d <= TOL, f"{image} {name}: AUCs {r[3]}, {r[4]}; numpy/torch {want[0]:.6g}, {want[1]:.6g} (|d| {d:.3g})"
        worst = max(worst, d)
    return worst


# ---------------------------------------------------------------------------
# tests
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("view,steps", [([], 16), (["--rollout"], 5), (["--layer", "1", "--head", "2"], 7)])
def test_curves_against_numpy_torch(setup, view, steps):
    tmp, model, path, images = setup
    out = tmp / f"out_{'_'.join(view) or 'attention'}_{steps}"
    run_process("--model", path, *view, "--faithfulness", "--faithfulness-steps", steps, "--save-attention", "-o", out,
         images[0], expect=0)
    rows = read_csv(out / "faithfulness.csv")
    assert len(rows) == 2, rows
    method = "rollout" if "--rollout" in view else "attention"
    cls_map = np.load(out / f"{images[0].stem}_cls.npy")
    worst = check_image(model, images[0], cls_map, rows, steps, method)
    print(f"faithfulness {' '.join(view) or 'attention'} K={steps}: max |AUC - numpy/torch| {worst:.2g}", flush=True)


def test_a_class_specific_map_is_scored_for_the_class_given(setup):
    """--method chefer --class A, then --class B: each run's rows (the map's and random's) are for
    the class given, and their AUCs are torch's curves for that class. A and B are torch's 2nd
    and 3rd most likely classes, so scoring the top-1 instead cannot pass."""
    tmp, model, path, images = setup
    logits = model(torch.from_numpy(model_input(images[0]))[None])[0]
    second, third = (int(i) for i in torch.argsort(logits, descending=True)[1:3])
    rows_of = {}
    for c in (second, third):
        out = tmp / f"out_class_{c}"
        run_process("--model", path, "--method", "chefer", "--class", c, "--faithfulness", "--faithfulness-steps", 8,
             "--save-attention", "-o", out, images[0], expect=0)
        rows = read_csv(out / "faithfulness.csv")
        assert [(r[1], int(r[2])) for r in rows] == [("chefer", c), ("random", c)], rows
        check_image(model, images[0], np.load(out / f"{images[0].stem}_cls.npy"), rows, 8, "chefer", c)
        rows_of[c] = rows
    assert rows_of[second][1][3:5] != rows_of[third][1][3:5], "the same random map scores differently for another class"


def test_random_map_is_not_the_attention(setup):
    """The baseline differs from the map scored beside it (else the check above proves little)."""
    tmp, model, path, images = setup
    out = tmp / "out_diff"
    run_process("--model", path, "--faithfulness", "-o", out, images[0], expect=0)
    rows = read_csv(out / "faithfulness.csv")
    assert rows[0][3:5] != rows[1][3:5], rows


def test_batch_in_input_order_and_same_bytes_whatever_j(setup):
    tmp, model, path, images = setup
    outs = []
    for j in (1, 2):
        out = tmp / f"out_j{j}"
        run_process("--model", path, "--faithfulness", "--save-attention", "-j", j, "-o", out, *images, expect=0)
        outs.append(out)
    a, b = ((o / "faithfulness.csv").read_bytes() for o in outs)
    assert a == b, "faithfulness.csv differs between -j 1 and -j 2"
    rows = read_csv(outs[0] / "faithfulness.csv")
    assert [r[0] for r in rows] == [str(p) for p in images for _ in range(2)], rows
    assert [r[1] for r in rows] == ["attention", "random"] * len(images)
    for image in images[1:]:  # every image's figures, not only the first's
        check_image(model, image, np.load(outs[0] / f"{image.stem}_cls.npy"), rows, 16, "attention")


def test_refusals(setup):
    tmp, model, path, images = setup
    backbone = tmp / "backbone.safetensors"
    sd = {k: v for k, v in tr.export_timm(model.state_dict(), 3).items() if not k.startswith("head.")}
    tr.write_safetensors(backbone, sd, metadata={"num_heads": 3})
    for args, what in [(["--model", backbone], "backbone"), ([], "seeded")]:
        out = tmp / f"out_refused_{what}"
        p = run_process(*args, "--faithfulness", "-o", out, images[0], expect=2)
        lines = p.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("error:") and "--faithfulness" in lines[0] \
            and "classifier" in lines[0], f"{what}: {lines}"
        assert not out.exists(), f"{what}: the output folder was made"
    for args in (["--faithfulness", "--faithfulness-steps", "0"], ["--faithfulness", "--faithfulness-steps", "x"],
                 ["--faithfulness-steps", "4"]):
        out = tmp / "out_bad_steps"
        p = run_process("--model", path, *args, "-o", out, images[0], expect=2)
        lines = p.stderr.strip().splitlines()
        assert len(lines) == 1 and "--faithfulness" in lines[0], f"{args}: {lines}"
        assert not out.exists()
