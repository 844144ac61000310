"""vitattn --report for every checkpoint family, in a real browser (headless Debian Chromium,
one session for this file).

One tiny random ViT (D 32, patch 8, 2 layers) per family, written by numpy under the names its
releases use: timm/DeiT (with a classifier), DINO (without), DINOv2 with registers and layer
scale, Hugging Face ViT, Hugging Face Dinov2 with registers, torchvision. Each has its own
number of heads and registers, and the image is not square, so a swapped or miscounted shape
shows. For each family's page, opened from disk:
  - vitattn -v names the family the file was written as (so each page really is that layout);
  - info(): layers, heads, tokens (class token + registers + patches), grid [h, w];
  - select()/row() for both layers, several heads and fusions, the class token, a register and
    patches, query and key view, against --save-attention's .npy within the page's max_error;
  - each register is picked with a real click on its button in the strip beside the image;
  - under a --report-max-mb between one layer's matrices and every layer's, the page keeps
    the full matrices of --layer only and the class token's rows of the other layer;
  - stats(): each layer × head's entropy and mean attention distance on the 4 × 5 grid,
    against numpy from the .npy (registers left out of the distance), and a real click on a
    patch and the arrow keys picking the patch at that row and column;
  - no console errors and no network requests.
And --report-precision f16 on the DINOv2 model: row() within the fp16 bound (2⁻¹¹ of the
weight), the page says fp16, and its budget counts 2 bytes a weight: a budget that holds every
layer at 8 bits holds only --layer in fp16.

Runs under pytest (tests/conftest.py); the binary is harness.BIN. Needs numpy, cv2,
python3-selenium, chromium, chromium-driver.
"""
import sys
import tempfile
from pathlib import Path

import cv2
import numpy as np
import pytest

import harness
import safetensors_io
from harness import photo_like

sys.path.insert(0, str(Path(__file__).resolve().parent))
import browser  # noqa: E402
from browser import run  # noqa: E402

SESSION = browser.Session()  # this file's one Chromium, started by setup_module

D, P, LAYERS, MLP = 32, 8, 2, 64
IMAGE_H, IMAGE_W = 32, 40          # --keep-aspect at the models' 32 px: a 4 × 5 grid of 8 px patches
GRID = (IMAGE_H // P, IMAGE_W // P)
POS_GRID = 4                        # the checkpoints' own position grid, 4 × 4 (resampled to 4 × 5)
LAYER = 1                           # --layer of the full page
SMALL_LAYER = 0                     # --layer of the page under a budget: the layer whose matrices it keeps

# family, heads, registers
FAMILIES = [("timm", 2, 0), ("dino", 4, 0), ("dinov2", 2, 4), ("hf-vit", 4, 0), ("hf-dinov2", 4, 2),
            ("torchvision", 2, 0)]
F16_FAMILY = "dinov2"


def renamed(t, family):
    return harness.renamed_from_timm(t, family, D, LAYERS)


fuse = browser.fuse


def u8_mb(layers, heads, tokens):
    """What the page's full matrices take at 8 bits: a byte a weight and a float scale a row, base64."""
    rows = layers * heads * tokens
    return (rows * tokens + rows * 4) * 4 / 3 / 1e6


def f16_mb(layers, heads, tokens):
    return layers * heads * tokens * tokens * 2 * 4 / 3 / 1e6


@pytest.fixture(scope="module")
def made():
    """Every family's checkpoint, its pages and its .npy files, made once."""
    tmp = tempfile.TemporaryDirectory(prefix="vitattn-families-")
    d = Path(tmp.name)
    cv2.imwrite(str(d / "img.png"), photo_like(IMAGE_H, IMAGE_W, 3))
    out = {}
    for n, (family, heads, registers) in enumerate(FAMILIES):
        model = d / f"{family}.safetensors"
        t = harness.timm_tensors(D, P, POS_GRID, LAYERS, MLP, seed=100 + n, classes=5 if family == "timm" else 0,
                                 registers=registers, qkv_scale=0.6)
        safetensors_io.write(model, renamed(t, family),
                             {"num_heads": str(heads)}, dtype="F32")
        f = d / family
        _, err = run("-v", "--model", model, "--keep-aspect", "--report", "--save-attention", "--layer", LAYER, d / "img.png", "-o", f / "page")
        assert f"family {family}" in err, err
        tokens = 1 + registers + GRID[0] * GRID[1]
        # Between one layer's full matrices and every layer's: --layer keeps its matrices, the other its
        # class rows. This run's --save-attention is the other layer's .npy.
        budget = (u8_mb(1, heads, tokens) + u8_mb(LAYERS, heads, tokens)) / 2
        run("--model", model, "--keep-aspect", "--report", "--report-max-mb", f"{budget:.6f}", "--save-attention", "--layer", SMALL_LAYER,
            d / "img.png", "-o", f / "small", "-q")
        npy = {LAYER: np.load(f / "page" / "img_attn.npy"), SMALL_LAYER: np.load(f / "small" / "img_attn.npy")}
        out[family] = {"model": model, "npy": npy, "page": (f / "page" / "img_report.html").as_uri(),
                       "small": (f / "small" / "img_report.html").as_uri()}
    yield d, out
    tmp.cleanup()


def rows_of(selections):
    """select() each of `selections` and read row(), in one call to the browser."""
    got = SESSION.js("return arguments[0].map((s) => { window.vitattn.select(s); return Array.from(window.vitattn.row()); })",
                     selections)
    return [np.array(r, dtype=np.float64) for r in got]


def check_rows(npy, heads, registers, max_error, layers=range(LAYERS)):
    """row() against the .npy for every layer, heads and fusions, the class token, registers and patches."""
    tokens = 1 + registers + GRID[0] * GRID[1]
    selections = [{"layer": layer, "head": head, "query": query, "view": view}
                  for layer in layers for head in sorted({0, heads - 1}) + ["mean", "max", "min"]
                  for query in sorted({0, *range(1, 1 + registers), 1 + registers, tokens - 1})
                  for view in ("query", "key")]
    worst = 0.0
    for s, got in zip(selections, rows_of(selections)):
        a = fuse(npy[s["layer"]], s["head"])
        diff = np.abs(got - (a[s["query"]] if s["view"] == "query" else a[:, s["query"]])).max()
        assert diff <= max_error, f"{s}: {diff} > {max_error}"
        worst = max(worst, diff)
    return worst, len(selections)


@pytest.mark.parametrize("family,heads,registers", FAMILIES)
def test_every_family(made, family, heads, registers):
    d, pages = made
    m = pages[family]
    tokens = 1 + registers + GRID[0] * GRID[1]
    SESSION.open(m["page"])
    info = SESSION.js("return window.vitattn.info()")
    assert (info["layers"], info["heads"], info["tokens"], info["grid"], info["first_patch"]) == \
        (LAYERS, heads, tokens, list(GRID), 1 + registers)
    assert info["quantisation"] == "u8-row"
    assert info["full_layers"] == list(range(LAYERS))
    assert 0 < info["max_error"] <= 1 / 510 + 2 ** -24
    for layer in range(LAYERS):
        assert m["npy"][layer].shape == (heads, tokens, tokens)
    worst, n = check_rows(m["npy"], heads, registers, info["max_error"])
    print(f"{family}: {heads} heads, {tokens} tokens: {n} rows within {worst:.2e} (stated {info['max_error']:.2e})")

    # The strip beside the image: the class token, then each register, picked with a real click.
    from selenium.webdriver.common.by import By
    buttons = SESSION.driver.find_elements(By.CSS_SELECTOR, "#strip button")
    assert [b.get_attribute("title") for b in buttons] == ["class token"] + [f"register {r}" for r in range(registers)]
    SESSION.select(layer=0, head="mean", query=tokens - 1, view="query")
    for t in list(range(1, 1 + registers)) + [0]:
        buttons[t].click()
        state = SESSION.js("return window.vitattn.state()")
        assert state["query"] == t and state["pinned"]
        assert np.abs(SESSION.row() - m["npy"][0].mean(0)[t]).max() <= info["max_error"]
    SESSION.assert_clean()

    # The budget's fallback: --layer keeps its matrices, the other layer the class token's rows.
    SESSION.open(m["small"])
    small = SESSION.js("return window.vitattn.info()")
    assert small["full_layers"] == [SMALL_LAYER]
    assert f"every layer but layer {SMALL_LAYER}" in SESSION.js("return document.getElementById('left-out').textContent")
    check_rows(m["npy"], heads, registers, small["max_error"], layers=[SMALL_LAYER])
    for layer in range(LAYERS):
        SESSION.select(layer=layer, head="max", query=0, view="query")
        assert np.abs(SESSION.row() - m["npy"][layer].max(0)[0]).max() <= small["max_error"]
    with pytest.raises(Exception):
        SESSION.select(layer=LAYER, head=0, query=tokens - 1, view="query")
    with pytest.raises(Exception):
        SESSION.select(layer=LAYER, head=0, query=0, view="key")
    SESSION.assert_clean()


@pytest.mark.parametrize("family,heads,registers", FAMILIES)
def test_stats_and_patches_on_the_non_square_grid(made, family, heads, registers):
    """4 rows of 5 patches: a distance computed over rows of 4, or a click or arrow key read
    with the sides swapped, lands on other patches."""
    d, pages = made
    m, first = pages[family], 1 + registers
    SESSION.open(m["page"])
    stats = SESSION.js("return window.vitattn.stats()")
    dist = browser.patch_distances(*GRID, P)
    for layer in range(LAYERS):
        a = m["npy"][layer].astype(np.float64)  # (H, T, T)
        with np.errstate(divide="ignore", invalid="ignore"):
            ent = -np.where(a > 0, a * np.log(a), 0).sum(-1).mean(-1)
        patches = a[:, first:, first:]
        mad = (patches / patches.sum(-1, keepdims=True) * dist).sum(-1).mean(-1)
        np.testing.assert_allclose(stats["entropy"][layer], ent, rtol=1e-5, atol=1e-6, err_msg=f"layer {layer}")
        np.testing.assert_allclose(stats["distance"][layer], mad, rtol=1e-5, atol=1e-5, err_msg=f"layer {layer}")

    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys
    SESSION.select(layer=LAYER, head="mean", query=0, view="query")
    canvas = SESSION.driver.find_element(By.ID, "view")
    w, h = canvas.size["width"], canvas.size["height"]
    gh, gw = GRID
    row_, col = 2, 3
    ActionChains(SESSION.driver).move_to_element_with_offset(canvas, int((col + 0.5) * w / gw - w / 2),
                                                             int((row_ + 0.5) * h / gh - h / 2)).click().perform()
    assert SESSION.js("return window.vitattn.state().query") == first + row_ * gw + col
    for key, (r, c) in ((Keys.ARROW_DOWN, (3, 3)), (Keys.ARROW_DOWN, (3, 3)), (Keys.ARROW_RIGHT, (3, 4)),
                        (Keys.ARROW_RIGHT, (3, 4)), (Keys.ARROW_UP, (2, 4))):
        ActionChains(SESSION.driver).send_keys(key).perform()
        assert SESSION.js("return window.vitattn.state().query") == first + r * gw + c, key
    SESSION.assert_clean()


def test_f16_precision(made):
    d, pages = made
    family, heads, registers = next(f for f in FAMILIES if f[0] == F16_FAMILY)
    m, tokens = pages[family], 1 + registers + GRID[0] * GRID[1]
    run("--model", m["model"], "--keep-aspect", "--report", "--report-precision", "f16", "--layer", LAYER, d / "img.png",
        "-o", d / "f16", "-q")
    SESSION.open((d / "f16" / "img_report.html").as_uri())
    info = SESSION.js("return window.vitattn.info()")
    assert info["quantisation"] == "f16"
    assert info["full_layers"] == list(range(LAYERS))
    # Half precision rounds to 11 significant bits: at most 2⁻¹¹ of the largest weight (plus float32's 2⁻²⁴).
    largest = max(float(a.max()) for a in m["npy"].values())
    assert abs(info["max_error"] - (largest * 2 ** -11 + 2 ** -24)) <= 1e-6 * info["max_error"], info["max_error"]
    worst, n = check_rows(m["npy"], heads, registers, info["max_error"])
    print(f"f16: {n} rows within {worst:.2e} (stated {info['max_error']:.2e}, 8-bit would state about {largest / 510:.2e})")
    assert "fp16" in SESSION.js("return document.getElementById('quant').textContent")
    SESSION.assert_clean()

    # 2 bytes a weight: a budget that holds every layer at 8 bits holds only --layer in fp16.
    budget = (u8_mb(LAYERS, heads, tokens) + f16_mb(LAYERS, heads, tokens)) / 2
    assert f16_mb(1, heads, tokens) < budget < f16_mb(LAYERS, heads, tokens)
    for precision, kept in (("u8", list(range(LAYERS))), ("f16", [LAYER])):  # --layer LAYER
        run("--model", m["model"], "--keep-aspect", "--report", "--report-precision", precision, "--report-max-mb", f"{budget:.6f}",
            "--layer", LAYER, d / "img.png", "-o", d / f"budget_{precision}", "-q")
        SESSION.open((d / f"budget_{precision}" / "img_report.html").as_uri())
        assert SESSION.js("return window.vitattn.info().full_layers") == kept, precision
    SESSION.assert_clean()


def setup_module():
    SESSION.start()


def teardown_module():
    SESSION.stop()
