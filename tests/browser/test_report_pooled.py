"""The report page of the models whose map is not the class token's row, in a real browser
(headless Debian Chromium, one session for this file), against torch re-implementations of their
forwards (tests/pylib/siglip_reference.py, deit_reference.py: float64, their libraries' code).

SigLIP (no class token; a probe pools the last layer's output, multi-head attention pooling):
  - info(): no class token, a probe, first_patch 0; the page opens on the probe at the last layer;
  - row() of the probe, its heads fused (mean, max, min) and each head, against torch's
    nn.MultiheadAttention probabilities within the page's max_error (plus float32's own error);
  - rollout from the probe: the fused probe row · R, R from torch's attention of every layer;
  - the strip's "probe" button, clicked after a patch was picked, brings the probe's row back;
    the slider on another layer moves the query to the first patch (the probe reads the last
    layer only), select() refuses the probe there and as a key;
  - a link with #query=probe opens on the probe; the model line says there is no class token.
Distilled DeiT (class token, then the distillation token):
  - the page of `--query dist` opens on token 1; the strip names "cls" and "dist" (not a register);
  - each of the two buttons, clicked, shows its row against torch's attention.
No console errors and no network requests on either page.

Planted and seen red: the probe's heads stored in reverse order (ReportBuilder::add_probe); the
page's probe rollout starting from token 0 instead of the probe's row; the strip naming token 1
"reg 0" on a distilled model.

Runs under pytest (tests/conftest.py); the binary is harness.BIN. Needs numpy, cv2, torch,
python3-selenium, chromium, chromium-driver.
"""
import sys
import tempfile
from pathlib import Path

import cv2
import numpy as np
import pytest

import harness

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import browser  # noqa: E402
from browser import driver, run  # noqa: E402,F401  (driver: the fixture)
import deit_reference as deit  # noqa: E402
import siglip_reference as siglip  # noqa: E402

FLOAT_ERROR = 1e-5  # vitattn's float32 forward against torch's float64, on these tiny models


def state(driver):
    return driver.execute_script("return window.vitattn.state()")


def strip_buttons(driver):
    from selenium.webdriver.common.by import By
    return driver.find_elements(By.CSS_SELECTOR, "#strip button")


@pytest.fixture(scope="module")
def tmp():
    with tempfile.TemporaryDirectory(prefix="vitattn-pooled-") as d:
        yield Path(d)


def test_siglip_probe(tmp, driver):
    siglip._need_torch()
    t = siglip.siglip_tensors(seed=7)
    model = siglip.write_folder(tmp / "siglip", t)
    side = siglip.GRID * siglip.P  # the model's own size: no resize
    img = harness.photo_like(side, side)
    cv2.imwrite(str(tmp / "s.png"), img)
    x = ((img[:, :, ::-1].astype(np.float32) / 255 - 0.5) / 0.5).transpose(2, 0, 1)  # what vitattn feeds
    ref = siglip.torch_siglip(t, x)
    probe, attn = ref["probe"], ref["attention"]  # (H, T), [L] (H, T, T)
    run("--model", model, "--report", tmp / "s.png", "-o", tmp / "s")
    page = (tmp / "s" / "s_report.html").as_uri()
    browser.open_page(driver, page)
    info = driver.execute_script("return window.vitattn.info()")
    last, n = siglip.LAYERS - 1, siglip.GRID * siglip.GRID
    assert (info["probe"], info["class_token"], info["first_patch"], info["tokens"]) == (True, False, 0, n)
    assert state(driver)["query"] == "probe" and state(driver)["layer"] == last
    assert "no class token" in driver.execute_script("return document.getElementById('model').textContent")
    tol = info["max_error"] + FLOAT_ERROR

    def near(got, want, what):
        assert np.abs(got - want).max() <= tol, f"{what}: {np.abs(got - want).max():.3e} > {tol:.3e}"

    near(browser.row(driver), probe.mean(0), "the probe's mean of heads (the page's start)")
    for fusion in ("max", "min"):
        browser.select(driver, head=fusion)
        near(browser.row(driver), getattr(probe, fusion)(0), f"the probe's {fusion} of heads")
    for h in range(siglip.HEADS):
        browser.select(driver, head=h)
        near(browser.row(driver), probe[h], f"the probe's head {h}")
    # Rollout: the probe's fused row · R; L layers of 8-bit rows, each within 1/510 of its weight.
    browser.select(driver, head="mean", rollout=True)
    want = probe.mean(0) @ siglip.numpy_rollout(attn)
    assert np.abs(browser.row(driver) - want).max() <= 1e-3, np.abs(browser.row(driver) - want).max()
    assert np.abs(want - probe.mean(0) @ np.eye(n)).max() > 1e-3, "R is the identity here: the test cannot see it"
    browser.select(driver, rollout=False)

    # The strip: the probe first, no class token; a patch picked, then the probe again.
    buttons = strip_buttons(driver)
    assert [b.text.split()[0] for b in buttons] == ["probe"]
    browser.select(driver, query=5)
    near(browser.row(driver), attn[last].mean(0)[5], "patch 5's row")
    buttons[0].click()
    assert state(driver)["query"] == "probe" and state(driver)["pinned"]
    near(browser.row(driver), probe.mean(0), "the probe after its button")
    assert "query=probe" in driver.execute_script("return location.hash")

    # The probe reads the last layer's output only: elsewhere select() refuses it, and the
    # slider moves the query to the first patch.
    for bad in ({"layer": 0, "query": "probe"}, {"query": "probe", "view": "key"}):
        with pytest.raises(Exception):
            browser.select(driver, **bad)
    driver.execute_script("const l = document.getElementById('layer'); l.value = '0'; l.dispatchEvent(new Event('input'));")
    assert (state(driver)["layer"], state(driver)["query"]) == (0, 0)
    near(browser.row(driver), attn[0].mean(0)[0], "layer 0, the first patch")
    assert strip_buttons(driver)[0].get_attribute("disabled") is not None
    browser.assert_clean(driver)

    # A link to the probe opens on it.
    browser.open_page(driver, page + f"#layer={last}&head=1&query=probe&view=query")
    assert (state(driver)["query"], state(driver)["head"]) == ("probe", 1)
    near(browser.row(driver), probe[1], "the linked probe, head 1")
    browser.assert_clean(driver)


def test_distilled_deit_strip(tmp, driver):
    t = deit.deit_distilled(seed=5)
    path = tmp / "deit.safetensors"
    deit.write(path, t)
    img = deit.image(tmp / "q.png")
    _, attn, _ = deit.Ref("distilled", t).forward(deit.preprocessed(img, deit.IMAGENET))
    last = np.asarray(attn[-1].detach().numpy()).mean(0)  # (T, T)
    run("--model", path, "--report", "--query", "dist", img, "-o", tmp / "d")
    browser.open_page(driver, (tmp / "d" / "q_report.html").as_uri())
    info = driver.execute_script("return window.vitattn.info()")
    assert (info["class_token"], info["probe"], info["first_patch"]) == (True, False, 2)
    assert state(driver)["query"] == 1
    tol = info["max_error"] + FLOAT_ERROR
    assert np.abs(browser.row(driver) - last[1]).max() <= tol
    buttons = strip_buttons(driver)
    assert [b.text.split()[0] for b in buttons] == ["cls", "dist"]
    assert [b.get_attribute("title") for b in buttons] == ["class token", "distillation token"]
    assert "class token, distillation token" in driver.execute_script("return document.getElementById('model').textContent")
    for t_index in (0, 1):
        buttons[t_index].click()
        assert state(driver)["query"] == t_index
        assert np.abs(browser.row(driver) - last[t_index]).max() <= tol, f"token {t_index}"
    assert np.abs(last[0] - last[1]).max() > 1e-3, "the two rows are alike: the test cannot tell them apart"
    browser.assert_clean(driver)
