"""--report's method and class picker, in a real browser (headless Debian Chromium, one session
for this file).

A random timm classifier (D 32, patch 8, 3 layers, 2 heads, 7 named classes) on a 32 × 32
image. Its page lists the most likely classes (3 by default, --top's K when given) and holds
chefer, grad-rollout, legrad and gradcam for each. Checked:
  - the picker lists K classes, most likely first, probabilities summing to at most 1, the
    same classes and probabilities as --top's predictions.csv, with their labels;
  - select({method, class}) → row() is that map over the patches, against the page's embedded
    data decoded here (8 bits: q·s/255), and within the sum of both bounds of the same map in the
    --report-precision f16 page (two encodings of one float32 map);
  - every (method, class) pair gives another row() and another drawn canvas; 'attention' gives
    back the T-token row of today; a class by its label; a class without maps and a method the
    page lacks are refused; a link (#method=…&class=…) opens on that map; a click on a
    prediction selects it;
  - the budget (--report-max-mb): the full matrices of every layer but --layer go first, then
    the maps of the least likely classes, one class at a time, the most likely's always kept;
    the page says which classes lost their maps;
  - a model without a classifier: no picker, info() as before, method and class refused;
  - no console errors and no network requests.

Runs under pytest (tests/conftest.py); the binary is harness.BIN. Needs numpy, cv2,
python3-selenium, chromium, chromium-driver.
"""
import base64
import csv
import json
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

D, P, GRID, LAYERS, MLP, HEADS = 32, 8, 4, 3, 64, 2
LABELS = ["ant", "bee", "cat", "dog", "eel", "fox", "gnu"]
T, N = 1 + GRID * GRID, GRID * GRID
METHODS = ["chefer", "grad-rollout", "legrad", "gradcam", "lrp"]
LAYER = 1  # --layer of the budget runs: the layer whose full matrices are kept


def page_data(html_path):
    html = Path(html_path).read_text()
    return json.loads(re.search(r'<script type="application/json" id="vitattn-data">(.*?)</script>', html, re.S).group(1))


def decoded(m):
    """One embedded relevance map decoded here: u8 q·s/255, f16 half(m/s)·s; float64 (N)."""
    if "q8" in m:
        unit = np.frombuffer(base64.b64decode(m["q8"]), dtype=np.uint8).astype(np.float64) / 255
    else:
        unit = np.frombuffer(base64.b64decode(m["f16"]), dtype="<f2").astype(np.float64)
    return unit * m["scale"]


# The page's budget, in 10⁶ bytes of base64 as the writer counts them.
def b64_mb(n_bytes):
    return n_bytes * 4 / 3 / 1e6


FULL_MB = b64_mb(LAYERS * HEADS * T * (T + 4))                         # every layer's full matrices, u8
KEPT_MB = b64_mb(HEADS * T * (T + 4) + (LAYERS - 1) * HEADS * (T + 4))  # --layer's full, the others' class rows
CLASS_MB = b64_mb(len(METHODS) * (N + 4))                               # one class's maps, u8


@pytest.fixture(scope="module")
def made():
    tmp = tempfile.TemporaryDirectory(prefix="vitattn-report-classes-")
    d = Path(tmp.name)
    cv2.imwrite(str(d / "img.png"), photo_like(32, 32, 5))
    model = d / "timm.safetensors"
    t = harness.timm_tensors(D, P, GRID, LAYERS, MLP, seed=31, classes=len(LABELS), qkv_scale=0.6)
    # A larger classifier spreads the probabilities, so that the top classes differ clearly.
    t["head.weight"] = t["head.weight"] * 8
    safetensors_io.write(model, t, {"num_heads": str(HEADS), "classes": ",".join(LABELS)}, dtype="F32")
    headless = d / "dino.safetensors"
    safetensors_io.write(headless, harness.timm_tensors(D, P, GRID, LAYERS, MLP, seed=32), {"num_heads": str(HEADS)},
                         dtype="F32")
    img = d / "img.png"
    run("--model", model, "--report", img, "-o", d / "u8", "-q")
    run("--model", model, "--report", "--report-precision", "f16", img, "-o", d / "f16", "-q")
    run("--model", model, "--report", "--top", 5, img, "-o", d / "top5", "-q")
    run("--model", headless, "--report", img, "-o", d / "dino", "-q")
    budgets = {  # name → (MB, classes keeping their maps, layers keeping their full matrices)
        "all": (FULL_MB + 4 * CLASS_MB + CLASS_MB / 3, 4, LAYERS),
        "attention first": (FULL_MB + 4 * CLASS_MB - CLASS_MB / 3, 4, 1),
        "two classes": (KEPT_MB + 2 * CLASS_MB + CLASS_MB / 3, 2, 1),
        "tiny": (0.001, 1, 1),
    }
    for name, (mb, _, _) in budgets.items():
        run("--model", model, "--report", "--top", 4, "--layer", LAYER, "--report-max-mb", f"{mb:.9f}", img,
            "-o", d / name.replace(" ", "_"), "-q")
    yield {"dir": d, "model": model, "img": img, "budgets": budgets,
           "u8": d / "u8" / "img_report.html", "f16": d / "f16" / "img_report.html",
           "top5": d / "top5" / "img_report.html", "dino": d / "dino" / "img_report.html"}
    tmp.cleanup()


def predictions_csv(made, k):
    out = made["dir"] / f"top{k}csv"
    run("--model", made["model"], "--top", k, made["img"], "-o", out, "-q")
    with open(out / "predictions.csv", newline="") as f:
        return [(int(r["class"]), r["label"], float(r["probability"])) for r in csv.DictReader(f)]


@pytest.mark.parametrize("page,k", [("u8", 3), ("top5", 5)])
def test_picker_lists_the_top_classes(made, page, k):
    info = SESSION.open(made[page])
    classes = info["classes"]
    assert len(classes) == k
    p = [c["probability"] for c in classes]
    assert p == sorted(p, reverse=True), p
    assert 0 < sum(p) <= 1 + 1e-12, p
    assert all(c["maps"] for c in classes)
    # The same classes and probabilities as --top's predictions.csv (9 digits there).
    want = predictions_csv(made, k)
    assert [(c["index"], c["label"]) for c in classes] == [(i, label) for i, label, _ in want]
    assert np.allclose(p, [q for _, _, q in want], atol=1e-9), (p, want)
    assert info["methods"] == ["attention", "rollout", *METHODS]
    # What the user sees: the pickers and the list of predictions.
    assert SESSION.js("return document.getElementById('picker').hidden") is False
    options = SESSION.js("return Array.from(document.querySelectorAll('#class option')).map((o) => [o.value, o.textContent, o.disabled])")
    assert [int(v) for v, _, _ in options] == [c["index"] for c in classes]
    for (_, text, disabled), c in zip(options, classes):
        assert c["label"] in text and f"{c['probability'] * 100:.2f} %" in text and not disabled
    assert SESSION.js("return document.querySelectorAll('#predictions li').length") == k
    methods = SESSION.js("return Array.from(document.querySelectorAll('#method option')).map((o) => o.value)")
    assert methods == ["attention", "rollout", *METHODS]
    SESSION.assert_clean()


def test_rows_are_the_embedded_maps(made):
    info = SESSION.open(made["u8"])
    data, data16 = page_data(made["u8"]), page_data(made["f16"])
    embedded = {(m["method"], m["class"]): m for m in data["relevance"]["maps"]}
    embedded16 = {(m["method"], m["class"]): m for m in data16["relevance"]["maps"]}
    assert set(embedded) == {(m, c["index"]) for m in METHODS for c in info["classes"]}
    rows = {}
    for method in METHODS:
        for c in info["classes"]:
            state = SESSION.select(method=method, **{"class": c["index"]})
            assert (state["method"], state["class"]) == (method, c["index"])
            got = SESSION.row()
            assert got.shape == (N,)
            m = embedded[(method, c["index"])]
            # Decoded here: the page's decoder adds only float32 rounding.
            assert np.abs(got - decoded(m)).max() <= m["scale"] * 2.0 ** -23, (method, c)
            assert SESSION.js("return window.vitattn.mapError()") == m["max_error"]
            assert 0 < m["max_error"] <= m["scale"] * (1 / 510 + 2.0 ** -24) * (1 + 1e-9)
            assert got.min() >= 0 and got.max() > 0, (method, c)
            # The same float32 map stored at 8 bits and in fp16: each within its bound of it.
            m16 = embedded16[(method, c["index"])]
            assert np.abs(got - decoded(m16)).max() <= m["max_error"] + m16["max_error"], (method, c)
            rows[(method, c["index"])] = got
    print(f"relevance maps: {len(rows)} rows = the embedded maps; u8 and f16 pages within their bounds")
    SESSION.assert_clean()


def test_rows_are_the_command_line_maps(made):
    """The page's maps are the ones `--method M --class c --save-attention` writes (_cls.npy), within
    the page's own quantisation bound: the report and the command line draw the same thing."""
    info = SESSION.open(made["u8"])
    for method in METHODS:
        for c in info["classes"]:
            out = made["dir"] / f"cli-{method}-{c['index']}"
            run("--model", made["model"], "--method", method, "--class", c["index"], "--save-attention", made["img"],
                "-o", out, "-q")
            # A signed map (lrp's) is on the page as its positive part (report_page.hpp add_relevance).
            want = np.maximum(np.load(out / "img_cls.npy").astype(np.float64).ravel(), 0)
            SESSION.select(method=method, **{"class": c["index"]})
            got = np.asarray(SESSION.row(), np.float64)
            assert got.shape == want.shape, (method, c, got.shape, want.shape)
            bound = SESSION.js("return window.vitattn.mapError()")
            assert np.abs(got - want).max() <= bound + 1e-7, (method, c, np.abs(got - want).max(), bound)
    SESSION.assert_clean()


def test_selection_changes_the_map_and_the_drawing(made):
    info = SESSION.open(made["u8"])
    attention = SESSION.row()
    assert attention.shape == (T,)
    seen, canvases = {}, {}
    for method in METHODS:
        for c in info["classes"]:
            SESSION.select(method=method, **{"class": c["index"]})
            seen[(method, c["index"])] = SESSION.row()
            canvases[(method, c["index"])] = SESSION.js("return document.getElementById('view').toDataURL()")
    keys = list(seen)
    for i, a in enumerate(keys):
        for b in keys[i + 1:]:
            scale = max(seen[a].max(), seen[b].max())
            assert np.abs(seen[a] - seen[b]).max() > 0.01 * scale, (a, b)
            assert canvases[a] != canvases[b], (a, b)
    # The class-agnostic views keep today's meaning: the class token's row over the T tokens.
    state = SESSION.select(method="attention")
    assert (state["method"], state["rollout"]) == ("attention", False)
    assert np.array_equal(SESSION.row(), attention)
    assert SESSION.select(method="rollout")["rollout"] is True and SESSION.row().shape == (T,)
    # A class by its label, any case.
    second = info["classes"][1]
    assert SESSION.select(method="legrad", **{"class": second["label"].upper()})["class"] == second["index"]
    assert np.array_equal(SESSION.row(), seen[("legrad", second["index"])])
    # Refused, and nothing changed: a class the page has no maps of, a method it lacks.
    outside = next(i for i in range(len(LABELS)) if i not in [c["index"] for c in info["classes"]])
    for bad in ({"method": "chefer", "class": outside}, {"method": "saliency"}):
        with pytest.raises(Exception, match="vitattn.select"):
            SESSION.select(**bad)
        assert np.array_equal(SESSION.row(), seen[("legrad", second["index"])])
    browser.console_errors(SESSION.driver)  # the refusals are logged as errors by the driver's calls; not the page's
    # A link to a map opens on it; a click on a prediction picks its class.
    third = info["classes"][2]
    SESSION.open(made["u8"], f"#layer=2&head=mean&query=0&view=query&method=gradcam&class={third['index']}")
    state = SESSION.js("return window.vitattn.state()")
    assert (state["method"], state["class"]) == ("gradcam", third["index"])
    assert np.array_equal(SESSION.row(), seen[("gradcam", third["index"])])
    SESSION.driver.find_element("css selector", f"#predictions li[data-index='{second['index']}']").click()
    state = SESSION.js("return window.vitattn.state()")
    assert (state["method"], state["class"]) == ("gradcam", second["index"])
    SESSION.assert_clean()


@pytest.mark.parametrize("name", ["all", "attention first", "two classes", "tiny"])
def test_budget_drops_attention_then_the_least_likely_maps(made, name):
    mb, kept, full_layers = made["budgets"][name]
    path = made["dir"] / name.replace(" ", "_") / "img_report.html"
    data = page_data(path)
    rows = [layer["rows"] for layer in data["attention"]]
    assert rows == ([T] * LAYERS if full_layers == LAYERS else [T if l == LAYER else 1 for l in range(LAYERS)]), rows
    assert [c["maps"] for c in data["classes"]] == [True] * kept + [False] * (4 - kept)
    with_maps = {c["index"] for c in data["classes"][:kept]}
    assert sorted((m["method"], m["class"]) for m in data["relevance"]["maps"]) == \
        sorted((m, c) for m in METHODS for c in with_maps)
    said = " ".join(data["left_out"])
    if kept < 4:
        dropped = [c["label"] for c in data["classes"][kept:]]
        assert f"the {4 - kept} least likely class" in said and ", ".join(dropped) in said, said
    else:
        assert "relevance maps of the" not in said, said
    info = SESSION.open(path)
    assert len(info["classes"]) == 4  # every prediction is listed; only the kept ones can be picked
    disabled = SESSION.js("return Array.from(document.querySelectorAll('#class option')).map((o) => o.disabled)")
    assert disabled == [False] * kept + [True] * (4 - kept)
    for c in data["classes"]:
        if c["maps"]:
            SESSION.select(method="chefer", **{"class": c["index"]})
        else:
            with pytest.raises(Exception, match="maps this page holds"):
                SESSION.select(method="chefer", **{"class": c["index"]})
    browser.console_errors(SESSION.driver)
    assert browser.network_requests(SESSION.driver) == []


def test_model_without_classifier_has_no_picker(made):
    info = SESSION.open(made["dino"])
    assert info["classes"] == [] and info["methods"] == ["attention", "rollout"]
    assert SESSION.js("return document.getElementById('picker').hidden") is True
    assert page_data(made["dino"])["relevance"]["maps"] == []
    state = SESSION.js("return window.vitattn.state()")
    assert state["method"] == "attention" and state["class"] is None
    assert SESSION.row().shape == (T,)
    for bad in ({"method": "chefer"}, {"class": 0}):
        with pytest.raises(Exception, match="vitattn.select"):
            SESSION.select(**bad)
    browser.console_errors(SESSION.driver)
    assert browser.network_requests(SESSION.driver) == []


def test_one_layer_classifier(made):
    """LeGrad's last two layers are the one layer of a one-layer model: its page has every map."""
    model = made["dir"] / "one_layer.safetensors"
    t = harness.timm_tensors(D, P, GRID, 1, MLP, seed=33, classes=len(LABELS))
    safetensors_io.write(model, t, {"num_heads": str(HEADS)}, dtype="F32")
    run("--model", model, "--report", made["img"], "-o", made["dir"] / "one", "-q")
    data = page_data(made["dir"] / "one" / "img_report.html")
    assert len(data["relevance"]["maps"]) == 3 * len(METHODS)
    assert "LeGrad: 0…0" in data["relevance"]["about"], data["relevance"]["about"]


def setup_module():
    SESSION.start()


def teardown_module():
    SESSION.stop()
