"""`vitattn serve`'s drop page in a real browser (headless Debian Chromium, one session).

The server runs the bundled CIFAR-10 ViT on a free loopback port. An image goes in through
the page's file input; the report opens in the page's frame; in it, window.vitattn's rows are
compared with the CLI's --save-attention files for the same image, model and options (the
oracle: the image command's float32 output, not the page), within the error the page states
(mapError()): the class token's row at the last layer; a real mouse click on a patch (that
patch's row); another layer and head; a class-specific method and a class other than the most
likely (the CLI's _cls.npy with --method and --class). The frame's CSP header and the drop
page's are checked, and no request leaves the server, no console error.
Run: python3 -m pytest tests/browser/test_serve_page.py (about 10 s).
"""
import re
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path

import numpy as np
import pytest

from harness import REPO
from serve_process import Server

sys.path.insert(0, str(Path(__file__).resolve().parent))
import browser  # noqa: E402
from browser import driver, run, wait_for as wait  # noqa: E402,F401  (driver: the fixture)

MODEL = REPO / "models" / "vit_cifar10_tintn.safetensors"
PHOTO = REPO / "images" / "chelsea.png"


def cli_npy(out, *options):
    """The CLI's --save-attention files for PHOTO: (attn (H, T, T) of the drawn layer, cls map)."""
    run("--model", MODEL, *options, "--save-attention", "-o", out, PHOTO)
    return np.load(Path(out) / "chelsea_attn.npy"), np.load(Path(out) / "chelsea_cls.npy")


@pytest.fixture(scope="module")
def server():
    served = Server("--model", MODEL)
    yield served.url
    assert served.stop() == 0, served.stderr


def test_drop_an_image_and_explore_it_as_the_cli_draws_it(driver, server):
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.by import By
    start = time.monotonic()
    head = urllib.request.urlopen(server).headers
    csp = head["Content-Security-Policy"]
    assert "default-src 'none'" in csp and "connect-src 'self'" in csp and "frame-src 'self'" in csp
    assert "'unsafe" not in csp
    driver.get("about:blank")
    browser.console_errors(driver), browser.network_requests(driver)  # empty the logs
    driver.get(server)
    wait(driver, "return document.getElementById('model').options.length === 1")
    driver.find_element(By.ID, "file").send_keys(str(PHOTO))
    wait(driver, "return !document.getElementById('report').hidden")
    driver.switch_to.frame(driver.find_element(By.ID, "report"))
    wait(driver, "return document.body && document.body.dataset.ready === '1'")
    js = driver.execute_script
    info = js("return window.vitattn.info()")
    grid_h, grid_w = info["grid"]
    fp = info["first_patch"]
    with tempfile.TemporaryDirectory() as tmp:
        last, _ = cli_npy(Path(tmp) / "last")
        browser.select(driver, layer=info["layers"] - 1, head="mean", query=0, view="query")
        err = js("return window.vitattn.mapError()")
        np.testing.assert_allclose(browser.row(driver), last.mean(0)[0], atol=err)

        # A real click on patch (2, 5): that patch's row.
        canvas = driver.find_element(By.ID, "view")
        w, h = canvas.size["width"], canvas.size["height"]
        ActionChains(driver).move_to_element_with_offset(canvas, int((5 + 0.5) * w / grid_w - w / 2),
                                                         int((2 + 0.5) * h / grid_h - h / 2)).click().perform()
        query = js("return window.vitattn.state().query")
        assert query == fp + 2 * grid_w + 5
        np.testing.assert_allclose(browser.row(driver), last.mean(0)[query], atol=err)

        # Another layer and head.
        layer0, _ = cli_npy(Path(tmp) / "l0", "--layer", "0", "--head", "1")
        browser.select(driver, layer=0, head=1, query=0, view="query")
        np.testing.assert_allclose(browser.row(driver), layer0[1][0], atol=js("return window.vitattn.mapError()"))

        # A class-specific method, for the second most likely class: the CLI's map for that class.
        second = info["classes"][1]["index"]
        _, chefer = cli_npy(Path(tmp) / "chefer", "--method", "chefer", "--class", str(second))
        browser.select(driver, method="chefer", **{"class": second})
        got = browser.row(driver)
        np.testing.assert_allclose(got, chefer.reshape(-1), atol=js("return window.vitattn.mapError()"))
        first = info["classes"][0]["index"]
        browser.select(driver, method="chefer", **{"class": first})
        assert np.abs(browser.row(driver) - got).max() > 10 * js("return window.vitattn.mapError()"), \
            "another class draws another map"

        # Every class: the page asks for all ten, and the least likely one's map is the CLI's.
        driver.switch_to.default_content()
        before = js("return window.vitattnServe.current().id")
        top = driver.find_element(By.ID, "serve-top")
        assert top.get_attribute("max") == "10"
        top.clear()
        top.send_keys("10\t")
        wait(driver, f"const c = window.vitattnServe.current(); return c && c.id !== '{before}'")
        driver.switch_to.frame(driver.find_element(By.ID, "report"))
        wait(driver, "return document.body && document.body.dataset.ready === '1' && "
                     "window.vitattn.info().classes.length === 10")
        last_class = js("return window.vitattn.info()")["classes"][9]["index"]
        _, least = cli_npy(Path(tmp) / "least", "--method", "chefer", "--class", str(last_class))
        browser.select(driver, method="chefer", **{"class": last_class})
        np.testing.assert_allclose(browser.row(driver), least.reshape(-1), atol=js("return window.vitattn.mapError()"))

    driver.switch_to.default_content()
    save = driver.find_element(By.ID, "save").get_attribute("href")
    assert re.match(re.escape(server) + r"api/report/[0-9a-f]{64}\?download=1$", save), save
    assert browser.console_errors(driver) == [], "console errors"
    outside = [u for u in browser.network_requests(driver) if not u.startswith(server)]
    assert outside == [], f"requests outside the server: {outside}"
    print(f"\nserve page: {time.monotonic() - start:.1f} s")


def test_the_page_opened_with_a_token_sends_it(driver):
    """A server with --token: the page opened with ?token=T posts with it and opens its frame
    with it; the same page without the token is refused."""
    from selenium.webdriver.common.by import By
    served = Server("--token", "s3cret")
    url = served.url
    try:
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(url)
        assert refused.value.code == 401
        driver.get(url + "?token=s3cret")
        wait(driver, "return document.getElementById('model').options.length === 1")
        driver.find_element(By.ID, "file").send_keys(str(PHOTO))
        wait(driver, "return !document.getElementById('report').hidden")
        driver.switch_to.frame(driver.find_element(By.ID, "report"))
        wait(driver, "return document.body && document.body.dataset.ready === '1'")
        assert driver.execute_script("return window.vitattn.info().layers") > 0
        driver.switch_to.default_content()
        assert browser.console_errors(driver) == [], "console errors"
    finally:
        status = served.stop()
    assert status == 0, served.stderr


def test_a_file_that_is_no_image_shows_the_servers_message(driver, server):
    from selenium.webdriver.common.by import By
    with tempfile.TemporaryDirectory() as tmp:
        fake = Path(tmp) / "notes.png"
        fake.write_bytes(b"GIF89a, not really an image")
        driver.get(server)
        wait(driver, "return document.getElementById('model').options.length === 1")
        browser.console_errors(driver)  # the page's own log from here on
        driver.find_element(By.ID, "file").send_keys(str(fake))
        wait(driver, "return !document.getElementById('error').hidden")
    message = driver.find_element(By.ID, "error").text
    assert message.startswith("the upload") and "\n" not in message, message
    assert driver.execute_script("return document.getElementById('report').hidden"), "no frame for a refused image"
    # The browser logs the 400 itself (a failed resource load); nothing else.
    others = [e for e in browser.console_errors(driver) if "status of 400" not in e.get("message", "")]
    assert others == [], others
