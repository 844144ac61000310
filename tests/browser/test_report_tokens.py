"""--report's Tokens panel, in a real browser (headless Debian Chromium, one session for this file).

Random DINOv2-style models (D 32, patch 8, 3 layers, 2 heads; 4 registers with layer scale, and
one without registers) on a 32 × 32 image, the models' own input size (no resize), and with
--keep-aspect on a 56 × 32 one (a 4 × 7 grid, positions resampled as DINOv2 does). The oracle is
a ViT written below in torch from the equations, in float64, on the image preprocessed here
(RGB / 255, ImageNet mean and std): each layer's stream after the block and its attention.
Checked, for every layer:
  - window.vitattn.tokens({layer}): the norms (L2 of each token after the block), the median
    patch norm, the flagged tokens (norm > ratio × median, --artifact-ratio), the sink scores
    (the mean over heads and query rows of each column), the register share (the class token's
    attention on the registers, mean over heads; null without registers), against torch; the
    sinks also against --save-attention's _attn.npy of that layer (--layer);
  - the head table's numbers against numpy on torch's attention (the class token's row entropy,
    the mean attention distance, DINO's mass mask share at 0.6, the flagged share); a click on a
    column header sorts the rows by it, a second click the other way;
  - the token map outlines exactly the flagged patches; the panel says how many tokens --clean
    left out (and only with --clean); the PCA picture, when the page's data holds one, is drawn
    with those bytes, and its figure is hidden when it does not;
  - no console errors and no network requests.

Runs under pytest (tests/conftest.py); the binary is harness.BIN. Needs numpy, cv2, torch,
python3-selenium, chromium, chromium-driver.
"""
import base64
import json
import math
import re
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

try:
    import torch
    import torch.nn.functional as F
except ImportError as e:  # pragma: no cover
    harness.need(False, f"cannot import torch ({e}); install python3-torch")

D, P, GRID, LAYERS, MLP, HEADS, REGISTERS = 32, 8, 4, 3, 64, 2, 4
N = GRID * GRID
WIDE = (4, 7)        # the --keep-aspect image's grid, rows × columns
RATIO = 1.2          # --artifact-ratio: low enough that random models flag a few tokens
MASK_THRESHOLD = 0.6  # heads' mass mask without --threshold
MEAN, STD = (0.485, 0.456, 0.406), (0.229, 0.224, 0.225)


# ---------------------------------------------------------------------------
# The oracle: a pre-norm ViT in torch (timm's / DINOv2's block), float64
# ---------------------------------------------------------------------------

def preprocess(path):
    """The image at the model's input size → [1, 3, S, S] float32 normalised, as vitattn's contract."""
    rgb = cv2.imread(str(path), cv2.IMREAD_COLOR)[:, :, ::-1]  # [S, S, 3] uint8 RGB
    x = (rgb.astype(np.float32) / np.float32(255.0) - np.asarray(MEAN, np.float32)) / np.asarray(STD, np.float32)
    return torch.from_numpy(np.ascontiguousarray(x.transpose(2, 0, 1))[None].astype(np.float64))


def positions(pos, gh, gw):
    """The patch positions [gh·gw, D], resampled from the trained GRID as DINO/DINOv2's
    interpolate_pos_encoding does (bicubic, scale factor with a 0.1 offset)."""
    if (gh, gw) == (GRID, GRID):
        return pos[0, 1:]
    grid = pos[0, 1:].reshape(1, GRID, GRID, D).permute(0, 3, 1, 2)             # [1, D, g, g]
    grid = F.interpolate(grid, scale_factor=((gh + 0.1) / GRID, (gw + 0.1) / GRID), mode="bicubic", align_corners=False)
    assert grid.shape[-2:] == (gh, gw), grid.shape
    return grid.permute(0, 2, 3, 1).reshape(gh * gw, D)


def reference(tensors, image, registers):
    """→ (streams [L, T, D], attention [L, H, T, T]) numpy float64: x after each block, its softmax."""
    t = {k: torch.from_numpy(np.asarray(v, np.float64)) for k, v in tensors.items()}
    gh, gw = image.shape[2] // P, image.shape[3] // P
    patches = F.conv2d(image, t["patch_embed.proj.weight"], t["patch_embed.proj.bias"], stride=P)
    patches = patches.flatten(2).transpose(1, 2)[0] + positions(t["pos_embed"], gh, gw)  # [gh·gw, D]
    parts = [(t["cls_token"][0, 0] + t["pos_embed"][0, 0])[None]]                # [1, D]
    if registers:
        parts.append(t["register_tokens"][0])                                    # [R, D], no position
    x = torch.cat(parts + [patches])                                             # [T, D]
    n, d_head = x.shape[0], D // HEADS
    streams, attention = [], []
    for i in range(LAYERS):
        b = f"blocks.{i}."
        h = F.layer_norm(x, (D,), t[b + "norm1.weight"], t[b + "norm1.bias"], 1e-6)
        q, k, v = F.linear(h, t[b + "attn.qkv.weight"], t[b + "attn.qkv.bias"]).reshape(n, 3, HEADS, d_head).permute(1, 2, 0, 3)
        a = torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(d_head), dim=-1)  # [H, T, T]
        o = F.linear((a @ v).transpose(0, 1).reshape(n, D), t[b + "attn.proj.weight"], t[b + "attn.proj.bias"])
        x = x + (o * t[b + "ls1.gamma"] if registers else o)
        m = F.linear(F.gelu(F.linear(F.layer_norm(x, (D,), t[b + "norm2.weight"], t[b + "norm2.bias"], 1e-6),
                                     t[b + "mlp.fc1.weight"], t[b + "mlp.fc1.bias"])), t[b + "mlp.fc2.weight"], t[b + "mlp.fc2.bias"])
        x = x + (m * t[b + "ls2.gamma"] if registers else m)
        streams.append(x.numpy().copy())
        attention.append(a.numpy().copy())
    return np.stack(streams), np.stack(attention)


def expected_tokens(streams, attention, first_patch, ratio):
    """Every layer's numbers from the definitions, numpy on the oracle's float64."""
    out = []
    for x, a in zip(streams, attention):
        norms = np.linalg.norm(x, axis=1)                     # [T]
        median = float(np.median(norms[first_patch:]))
        limit = ratio * median
        out.append({"norms": norms, "median": median, "limit": limit,
                    "flagged": [j for j in range(first_patch, len(norms)) if norms[j] > limit],
                    "sinks": a.mean(axis=(0, 1)),             # [T]: mean over heads and query rows
                    "register_share": float(a[:, 0, 1:first_patch].sum(axis=1).mean()) if first_patch > 1 else None})
    return out


def expected_heads(attention, first_patch, flagged, gh, gw):
    """[layer][head] → (entropy, distance, mask share, flagged share), numpy on the oracle."""
    dist = browser.patch_distances(gh, gw, P)
    rows = {}
    for l, a in enumerate(attention):
        for h in range(HEADS):
            row = a[h, 0]
            entropy = float(-(row[row > 0] * np.log(row[row > 0])).sum())
            pp = a[h, first_patch:, first_patch:]                          # [N, N] patch queries → patch keys
            distance = float(((pp * dist).sum(1) / pp.sum(1)).mean())
            mask = harness.dino_mask(row[first_patch:].reshape(gh, gw), MASK_THRESHOLD)
            rows[(l, h)] = (entropy, distance, float(mask.mean()), float(row[flagged[l]].sum()))
    return rows


# ---------------------------------------------------------------------------
# The pages
# ---------------------------------------------------------------------------

@pytest.fixture(scope="module")
def made():
    tmp = tempfile.TemporaryDirectory(prefix="vitattn-report-tokens-")
    d = Path(tmp.name)
    img, wide = d / "img.png", d / "wide.png"
    cv2.imwrite(str(img), photo_like(GRID * P, GRID * P, 5))
    cv2.imwrite(str(wide), photo_like(WIDE[0] * P, WIDE[1] * P, 6))  # --keep-aspect: its own size, no resize
    reg_t = harness.timm_tensors(D, P, GRID, LAYERS, MLP, seed=41, registers=REGISTERS)
    plain_t = harness.timm_tensors(D, P, GRID, LAYERS, MLP, seed=42)
    safetensors_io.write(d / "reg.safetensors", reg_t, {"num_heads": str(HEADS)}, dtype="F32")
    safetensors_io.write(d / "plain.safetensors", plain_t, {"num_heads": str(HEADS)}, dtype="F32")
    ratio = ("--artifact-ratio", RATIO)
    # The last layer's _attn.npy beside the page; then each other layer's (--layer), one with --clean.
    run("--model", d / "reg.safetensors", "--report", "--save-attention", *ratio, img, "-o", d / "reg", "-q")
    run("--model", d / "reg.safetensors", "--report", "--save-attention", "--layer", 0, "--clean", *ratio, img,
        "-o", d / "clean", "-q")
    run("--model", d / "reg.safetensors", "--save-attention", "--layer", 1, img, "-o", d / "layer1", "-q")
    run("--model", d / "plain.safetensors", "--report", img, "-o", d / "plain", "-q")
    run("--model", d / "reg.safetensors", "--report", "--save-attention", "--keep-aspect", *ratio, wide,
        "-o", d / "wide", "-q")
    image = preprocess(img)
    reg = reference(reg_t, image, REGISTERS)
    plain = reference(plain_t, image, 0)
    wide_ref = reference(reg_t, preprocess(wide), REGISTERS)
    pages = {"reg": {"page": d / "reg" / "img_report.html", "grid": (GRID, GRID), "ratio": RATIO,
                     "first_patch": 1 + REGISTERS, "expected": expected_tokens(*reg, 1 + REGISTERS, RATIO),
                     "attention": reg[1], "attn": {0: np.load(d / "clean" / "img_attn.npy"),
                                                   1: np.load(d / "layer1" / "img_attn.npy"),
                                                   2: np.load(d / "reg" / "img_attn.npy")}},
             "wide": {"page": d / "wide" / "wide_report.html", "grid": WIDE, "ratio": RATIO,
                      "first_patch": 1 + REGISTERS, "expected": expected_tokens(*wide_ref, 1 + REGISTERS, RATIO),
                      "attention": wide_ref[1], "attn": {2: np.load(d / "wide" / "wide_attn.npy")}},
             "plain": {"page": d / "plain" / "img_report.html", "grid": (GRID, GRID), "ratio": 3.0, "first_patch": 1,
                       "expected": expected_tokens(*plain, 1, 3.0), "attention": plain[1], "attn": {}}}
    yield {"dir": d, "pages": pages, "reg": pages["reg"]["page"], "clean": d / "clean" / "img_report.html",
           "reg_expected": pages["reg"]["expected"]}
    tmp.cleanup()


def tokens(layer):
    return SESSION.js("return window.vitattn.tokens({layer: arguments[0]})", layer)


def assert_flags(got, want, norms):
    """The page's flags are numpy's, but for a token within float32's reach of the limit."""
    near = {j for j in range(len(norms)) if abs(norms[j] - want["limit"]) <= 1e-5 * want["limit"]}
    assert set(got) - near == set(want["flagged"]) - near, (got, want["flagged"])


def check_layer(got, want, first_patch, ratio):
    norms = np.asarray(got["norms"], np.float64)
    assert norms.shape == want["norms"].shape
    assert np.abs(norms - want["norms"]).max() <= 1e-5 * want["norms"].max(), (norms, want["norms"])
    assert got["median"] == pytest.approx(want["median"], rel=1e-5)
    assert got["ratio"] == pytest.approx(ratio, rel=1e-7)
    assert got["threshold"] == pytest.approx(got["ratio"] * got["median"], rel=1e-12)
    assert_flags(got["flagged"], want, want["norms"])
    assert got["flagged"] == sorted(got["flagged"]) and all(j >= first_patch for j in got["flagged"])
    sinks = np.asarray(got["sinks"], np.float64)
    assert np.abs(sinks - want["sinks"]).max() <= 1e-6, (sinks, want["sinks"])
    assert sinks.sum() == pytest.approx(1.0, abs=1e-5)
    if want["register_share"] is None:
        assert got["register_share"] is None
    else:
        assert got["register_share"] == pytest.approx(want["register_share"], abs=1e-6)


@pytest.mark.parametrize("name", ["reg", "wide"])
def test_tokens_are_torchs(made, name):
    m = made["pages"][name]
    SESSION.open(m["page"])
    assert SESSION.js("return window.vitattn.info().grid") == list(m["grid"])
    flagged_layers = 0
    for layer in range(LAYERS):
        got, want = tokens(layer), m["expected"][layer]
        assert got["layer"] == layer
        check_layer(got, want, m["first_patch"], m["ratio"])
        flagged_layers += bool(got["flagged"])
        # The sinks from the command line's own float32 matrices of that layer: [H, T, T].
        if layer in m["attn"]:
            attn = m["attn"][layer].astype(np.float64)
            assert np.abs(np.asarray(got["sinks"]) - attn.mean(axis=(0, 1))).max() <= 1e-6
        assert got["left_out_by_clean"] is None  # no --clean on this page
    assert flagged_layers > 0, "the test needs some flagged tokens: lower RATIO"
    # The default layer is the one shown; a layer outside the model is refused.
    assert tokens(LAYERS - 1) == SESSION.js("return window.vitattn.tokens()")
    with pytest.raises(Exception, match="layer must be"):
        tokens(LAYERS)
    browser.console_errors(SESSION.driver)  # the refusal is logged by the driver's call; not the page's
    assert browser.network_requests(SESSION.driver) == []
    print(f"tokens: {LAYERS} layers of norms, flags, sinks and register share = torch's")


def test_model_without_registers(made):
    m = made["pages"]["plain"]
    SESSION.open(m["page"])
    for layer in range(LAYERS):
        check_layer(tokens(layer), m["expected"][layer], 1, 3.0)
    assert SESSION.js("return document.getElementById('register-figure').hidden") is True
    assert SESSION.js("return document.getElementById('tokens-panel').hidden") is False
    SESSION.assert_clean()


@pytest.mark.parametrize("name", ["reg", "wide"])
def test_head_table_is_numpys_and_sorts(made, name):
    m = made["pages"][name]
    SESSION.open(m["page"])
    flagged = [e["flagged"] for e in m["expected"]]
    want = expected_heads(m["attention"], m["first_patch"], flagged, *m["grid"])
    n = m["grid"][0] * m["grid"][1]
    cells = SESSION.js("return Array.from(document.querySelectorAll('#head-table tbody tr')).map("
                       "(tr) => Array.from(tr.cells).map((c) => c.textContent))")
    assert len(cells) == LAYERS * HEADS
    for row in cells:
        l, h = int(row[0]), int(row[1])
        entropy, distance, mask, share = (float(v) for v in row[2:])
        e = want[(l, h)]
        assert entropy == pytest.approx(e[0], abs=1e-4), (l, h)
        assert distance == pytest.approx(e[1], abs=1e-2), (l, h)
        assert abs(mask - e[2]) <= 1 / n + 1e-4, (l, h)  # a tie at the mask's edge may go either way
        assert share == pytest.approx(e[3], abs=1e-4), (l, h)
    columns = ["layer", "head", "entropy", "distance", "mask", "flagged"]

    def value(r, key):
        return r["layer"] if key == "layer" else r["head"] if key == "head" else want[(r["layer"], r["head"])][columns.index(key) - 2]

    for key in ("entropy", "flagged", "distance", "layer"):
        header = SESSION.driver.find_element("css selector", f"#head-table th[data-key='{key}']")
        for direction in (1, -1):
            header.click()
            order = SESSION.js("return window.vitattn.headTable()")
            assert len(order) == LAYERS * HEADS
            shown = SESSION.js("return Array.from(document.querySelectorAll('#head-table tbody tr')).map("
                               "(tr) => ({layer: Number(tr.dataset.layer), head: Number(tr.dataset.head)}))")
            assert shown == order
            values = [value(r, key) for r in order]
            assert all(direction * (b - a) >= -1e-6 for a, b in zip(values, values[1:])), (key, direction, values)
            assert ("sorted-asc" if direction > 0 else "sorted-desc") in header.get_attribute("class").split()
    # A click on a row shows that layer and head.
    SESSION.driver.find_element("css selector", "#head-table tbody tr[data-layer='1'][data-head='0']").click()
    state = SESSION.js("return window.vitattn.state()")
    assert (state["layer"], state["head"]) == (1, 0)
    assert SESSION.js("return document.getElementById('tokens-layer').textContent") == "1"
    SESSION.assert_clean()


def canvas_pixels(canvas_id):
    """The canvas's RGBA pixels, [h, w, 4] uint8."""
    w, h, data = SESSION.js(f"const c = document.getElementById('{canvas_id}'), g = c.getContext('2d');"
                            "return [c.width, c.height, Array.from(g.getImageData(0, 0, c.width, c.height).data)]")
    return np.asarray(data, np.uint8).reshape(h, w, 4)


@pytest.mark.parametrize("name", ["reg", "wide"])
def test_token_map_outlines_the_flagged(made, name):
    m = made["pages"][name]
    gh, gw = m["grid"]
    SESSION.open(m["page"])
    for layer in range(LAYERS):
        SESSION.js("window.vitattn.select({layer: arguments[0]})", layer)
        flagged = set(tokens(layer)["flagged"])
        assert_flags(flagged, m["expected"][layer], m["expected"][layer]["norms"])
        px = canvas_pixels("token-map")
        ch, cw = px.shape[0] / gh, px.shape[1] / gw
        for p in range(gh * gw):
            # The middle of the cell's left edge, on the outline's magenta line (x + 2).
            x, y = int(p % gw * cw + 2), int(p // gw * ch + ch / 2)
            magenta = np.abs(px[y, x, :3].astype(int) - (0xff, 0x2b, 0xd6)).max() <= 2
            assert magenta == (1 + REGISTERS + p in flagged), (layer, p, px[y, x])
    SESSION.assert_clean()


def test_clean_count_is_said(made):
    SESSION.open(made["clean"])
    layer0 = made["reg_expected"][0]
    got = tokens(0)
    assert got["left_out_by_clean"] == len(got["flagged"])
    assert_flags(got["flagged"], layer0, layer0["norms"])
    assert tokens(1)["left_out_by_clean"] is None  # --clean ran at the drawn layer only
    text = SESSION.js("const p = document.getElementById('tokens-clean'); return p.hidden ? null : p.textContent")
    n = len(got["flagged"])
    assert text is not None and f"--clean left {n} token{'' if n == 1 else 's'} out" in text and "layer 0" in text, text
    SESSION.open(made["reg"])
    assert SESSION.js("return document.getElementById('tokens-clean').hidden") is True
    SESSION.assert_clean()


def test_pca_picture(made):
    """The page shows the image's own PCA picture, the colours of `--pca --interp nearest`'s
    <name>_pca.png (its cells' centres); a picture put into the page's data is drawn as given."""
    d = made["dir"]
    run("--model", d / "reg.safetensors", "--pca", "--interp", "nearest", d / "img.png", "-o", d / "pca", "-q")
    png = cv2.imread(str(d / "pca" / "img_pca.png"), cv2.IMREAD_COLOR)[:, :, ::-1]  # RGB, (GRID·P, GRID·P)
    cells = png[P // 2::P, P // 2::P]  # (GRID, GRID, 3)
    SESSION.open(made["reg"])
    assert SESSION.js("return document.getElementById('pca-figure').hidden") is False
    px = canvas_pixels("pca")
    assert px.shape == (GRID, GRID, 4)
    assert (px[:, :, :3] == cells).all(), "the page's PCA picture is not --pca's"
    html = made["reg"].read_text()
    m = re.search(r'(<script type="application/json" id="vitattn-data">)(.*?)(</script>)', html, re.S)
    data = json.loads(m.group(2))
    rgb = np.random.default_rng(3).integers(0, 256, (GRID, GRID, 3), dtype=np.uint8)
    data["tokens_panel"]["pca"] = base64.b64encode(rgb.tobytes()).decode()
    page = made["dir"] / "pca_report.html"
    page.write_text(html[:m.start(2)] + json.dumps(data).replace("</", "<\\/") + html[m.end(2):])
    SESSION.open(page)
    assert SESSION.js("return document.getElementById('pca-figure').hidden") is False
    px = canvas_pixels("pca")
    assert px.shape == (GRID, GRID, 4)
    assert (px[:, :, :3] == rgb).all() and (px[:, :, 3] == 255).all()
    SESSION.assert_clean()


def setup_module():
    SESSION.start()


def teardown_module():
    SESSION.stop()
