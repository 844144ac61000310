"""vitattn --report in a real browser (headless Debian Chromium, one session for this file).

The pages are opened from disk (file://). Checked against what vitattn saves with
--save-attention (.npy), redone here with numpy:
  - window.vitattn.row() for several layers, heads (index, mean, max, min), queries and both
    views, within the max_error the page states;
  - rollout's class row against --rollout's _cls.npy; entropy and mean attention distance
    against numpy, on the square 8 × 8 grid and on the 8 × 11 grid of --keep-aspect; the seeded
    model's step-by-step numbers (its one block's q and k) against the scaled and --no-scale
    matrices, at the default shape and with d_k ≠ D;
  - a real mouse click on a patch and an arrow key change the query, on both grids; the URL
    fragment brings a view back; the Content-Security-Policy blocks a request the test makes
    from the page;
  - no console errors and no network requests;
  - the fallback under --report-max-mb keeps the class rows of every layer and --layer's
    matrices, and says so;
  - index.html's links resolve to pages, and sorting by entropy orders the cards.

Runs under pytest (tests/conftest.py); the binary is harness.BIN. Needs numpy, cv2, python3-selenium,
chromium, chromium-driver.
"""
import sys
import tempfile
import unittest
import urllib.parse
from pathlib import Path

import cv2
import numpy as np

import harness
from harness import REPO, photo_like

sys.path.insert(0, str(Path(__file__).resolve().parent))
import browser  # noqa: E402
from browser import run  # noqa: E402

CIFAR = REPO / "models" / "vit_cifar10_tintn.safetensors"
SESSION = browser.Session()  # this file's one Chromium, started by setUpModule


def photo(path, h, w, seed):
    cv2.imwrite(str(path), photo_like(h, w, seed))


fuse = browser.fuse


def head_stats(a, dist, first_patch=1):
    """(H,) mean row entropy over every token, (H,) mean attention distance over the patches
    (weights renormalised over the patch keys) of one layer's (H, T, T) attention."""
    a = a.astype(np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        ent = -np.where(a > 0, a * np.log(a), 0).sum(-1).mean(-1)
    patches = a[:, first_patch:, first_patch:]
    mad = (patches / patches.sum(-1, keepdims=True) * dist).sum(-1).mean(-1)
    return ent, mad


def click_patch(canvas, grid_h, grid_w, row, col):
    """A real mouse click on the centre of patch (row, col) of the page's view."""
    from selenium.webdriver.common.action_chains import ActionChains
    w, h = canvas.size["width"], canvas.size["height"]
    ActionChains(SESSION.driver).move_to_element_with_offset(canvas, int((col + 0.5) * w / grid_w - w / 2),
                                                             int((row + 0.5) * h / grid_h - h / 2)).click().perform()


def rollout_cls(layers, head):
    """(A + I)/2 renormalised per layer, multiplied later-on-the-left: the README's rollout."""
    r = None
    for a in layers:
        m = fuse(a.astype(np.float64), head) + np.eye(a.shape[1])
        m /= m.sum(1, keepdims=True)
        r = m if r is None else m @ r
    return r[0]


class ReportPage(unittest.TestCase):
    """The pages of one batch, made once for the class (harness.TmpCase's folder is per test)."""
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory(prefix="vitattn-report-")
        d = cls.dir = Path(cls.tmp.name)
        (d / "in").mkdir()
        photo(d / "in" / "cat.png", 120, 160, 0)
        photo(d / "in" / "dog one.png", 90, 90, 1)
        cls.layer = 2
        run("--model", CIFAR, "--report", "--save-attention", "--layer", cls.layer, d / "in", "-o", d / "out", "-q")
        cls.npy = {}  # layer → (H, T, T) of cat.png, each from its own --save-attention run
        for layer in range(4):
            o = d / f"l{layer}"
            run("--model", CIFAR, "--save-attention", "--layer", layer, d / "in" / "cat.png", "-o", o, "-q")
            cls.npy[layer] = np.load(o / "cat_attn.npy")
        run("--model", CIFAR, "--rollout", "--save-attention", "--layer", 2, d / "in" / "cat.png", "-o", d / "roll", "-q")
        cls.page = (d / "out" / "cat_report.html").as_uri()
        # cat.png (160 × 120) at its own aspect ratio: the shorter side 32 px, 8 patches of 4 px;
        # the longer 32·160/120 = 42.7 px, 11 patches. A grid whose rows and columns differ.
        run("--model", CIFAR, "--keep-aspect", "--report", d / "in" / "cat.png", "-o", d / "aspect", "-q")
        cls.aspect_page = (d / "aspect" / "cat_report.html").as_uri()
        cls.aspect_npy = {}
        for layer in range(4):
            o = d / f"aspect{layer}"
            run("--model", CIFAR, "--keep-aspect", "--save-attention", "--layer", layer, d / "in" / "cat.png", "-o", o, "-q")
            cls.aspect_npy[layer] = np.load(o / "cat_attn.npy")
            assert np.load(o / "cat_cls.npy").shape == (8, 11)

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def test_rows_match_saved_attention(self):
        info = SESSION.open(self.page)
        self.assertEqual((info["layers"], info["heads"], info["tokens"], info["grid"]), (4, 4, 65, [8, 8]))
        self.assertEqual(info["quantisation"], "u8-row")
        err = info["max_error"]
        self.assertTrue(0 < err < 2.5e-3, err)  # 8 bits of a weight ≤ 1: at most 1/510 + float rounding
        checked, worst = 0, 0.0
        for layer in (0, 1, self.layer, 3):
            a = self.npy[layer]
            for head in (0, 1, 3, "mean", "max", "min"):
                for query in (0, 1, 27, 64):
                    for view in ("query", "key"):
                        SESSION.select(layer=layer, head=head, query=query, view=view)
                        want = fuse(a, head)[query] if view == "query" else fuse(a, head)[:, query]
                        diff = np.abs(SESSION.row() - want).max()
                        worst = max(worst, diff)
                        self.assertLessEqual(diff, err, f"layer {layer} head {head} query {query} {view}")
                        checked += 1
        print(f"report rows: {checked} rows/columns within {worst:.2e} of the .npy (stated {err:.2e})")
        SESSION.assert_clean()

    def test_rollout_and_stats(self):
        SESSION.open(self.page)
        SESSION.select(layer=2, head="mean", query=0, view="query", rollout=True)
        got = SESSION.row()[1:].reshape(8, 8)
        want = np.load(self.dir / "roll" / "cat_cls.npy")
        own = rollout_cls([self.npy[l] for l in range(3)], "mean")[1:].reshape(8, 8)
        self.assertLess(np.abs(own - want).max(), 1e-5)  # the numpy rollout is vitattn's
        # Three layers of 8-bit rows, each within 1/510 of its weight: the class row stays within 1e-3.
        self.assertLess(np.abs(got - want).max(), 1e-3)
        stats = SESSION.js("return window.vitattn.stats()")
        dist = browser.patch_distances(8, 8, 4)  # patch 4 px at 32×32
        for layer in (0, 3):
            ent, mad = head_stats(self.npy[layer], dist)
            np.testing.assert_allclose(stats["entropy"][layer], ent, rtol=1e-5, atol=1e-6)
            np.testing.assert_allclose(stats["distance"][layer], mad, rtol=1e-5, atol=1e-5)
        SESSION.assert_clean()

    def test_stats_and_patches_on_a_non_square_grid(self):
        # 8 rows of 11 patches: a distance over rows of 8, or a click or arrow key read with the
        # grid's sides swapped, lands elsewhere.
        info = SESSION.open(self.aspect_page)
        self.assertEqual((info["grid"], info["tokens"]), ([8, 11], 1 + 8 * 11))
        stats = SESSION.js("return window.vitattn.stats()")
        dist = browser.patch_distances(8, 11, 4)
        for layer in range(4):
            ent, mad = head_stats(self.aspect_npy[layer], dist)
            np.testing.assert_allclose(stats["entropy"][layer], ent, rtol=1e-5, atol=1e-6, err_msg=f"layer {layer}")
            np.testing.assert_allclose(stats["distance"][layer], mad, rtol=1e-5, atol=1e-5, err_msg=f"layer {layer}")
        from selenium.webdriver.common.action_chains import ActionChains
        from selenium.webdriver.common.by import By
        from selenium.webdriver.common.keys import Keys
        SESSION.select(layer=3, head="mean", query=0, view="query")
        click_patch(SESSION.driver.find_element(By.ID, "view"), 8, 11, 6, 9)
        state = SESSION.js("return window.vitattn.state()")
        self.assertEqual(state["query"], 1 + 6 * 11 + 9)
        np.testing.assert_allclose(SESSION.row(), fuse(self.aspect_npy[3], "mean")[state["query"]], atol=info["max_error"])
        for key, want in ((Keys.ARROW_DOWN, (7, 9)), (Keys.ARROW_DOWN, (7, 9)), (Keys.ARROW_RIGHT, (7, 10)),
                          (Keys.ARROW_RIGHT, (7, 10)), (Keys.ARROW_UP, (6, 10))):
            ActionChains(SESSION.driver).send_keys(key).perform()
            self.assertEqual(SESSION.js("return window.vitattn.state().query"), 1 + want[0] * 11 + want[1], key)
        SESSION.assert_clean()

    def test_mouse_keys_and_fragment(self):
        SESSION.open(self.page)
        from selenium.webdriver.common.action_chains import ActionChains
        from selenium.webdriver.common.by import By
        from selenium.webdriver.common.keys import Keys
        SESSION.select(layer=self.layer, head="mean", query=0, view="query")
        gx, gy = 6, 2  # patch (row 2, col 6) → token 1 + 2·8 + 6
        click_patch(SESSION.driver.find_element(By.ID, "view"), 8, 8, gy, gx)
        state = SESSION.js("return window.vitattn.state()")
        self.assertEqual(state["query"], 1 + gy * 8 + gx)
        self.assertTrue(state["pinned"])
        np.testing.assert_allclose(SESSION.row(), fuse(self.npy[self.layer], "mean")[state["query"]], atol=SESSION.js("return window.vitattn.info().max_error"))
        ActionChains(SESSION.driver).send_keys(Keys.ARROW_LEFT).perform()
        self.assertEqual(SESSION.js("return window.vitattn.state().query"), 1 + gy * 8 + gx - 1)
        ActionChains(SESSION.driver).send_keys(Keys.ARROW_DOWN).perform()
        self.assertEqual(SESSION.js("return window.vitattn.state().query"), 1 + (gy + 1) * 8 + gx - 1)
        SESSION.select(layer=3, head=1, query=30, view="key")
        fragment = SESSION.js("return location.hash")
        SESSION.open(self.page + fragment)
        state = SESSION.js("return window.vitattn.state()")
        self.assertEqual((state["layer"], state["head"], state["query"], state["view"]), (3, 1, 30, "key"))
        SESSION.assert_clean()

    def test_offline_and_csp(self):
        SESSION.open(self.page)
        csp = SESSION.js("return document.querySelector('meta[http-equiv=\"Content-Security-Policy\"]').content")
        self.assertIn("default-src 'none'", csp)
        # The policy is in force: a request the page tries is refused by the browser.
        blocked = SESSION.driver.execute_async_script("""
            const done = arguments[arguments.length - 1];
            let violation = null;
            document.addEventListener('securitypolicyviolation', (e) => { violation = e.violatedDirective; });
            fetch('http://127.0.0.1:9/x').then(() => done('fetched'), () => setTimeout(() => done(violation), 50));""")
        self.assertEqual(blocked, "connect-src")
        browser.console_errors(SESSION.driver)  # the refusal itself is logged; nothing else may be
        browser.network_requests(SESSION.driver)
        SESSION.open(self.page)
        resources = SESSION.js("return performance.getEntriesByType('resource').map(e => e.name).filter(n => !n.startsWith('data:'))")
        self.assertEqual(resources, [])
        SESSION.assert_clean()

    def test_bad_select_is_refused(self):
        SESSION.open(self.page)
        for bad in ({"layer": 4}, {"head": 4}, {"head": "median"}, {"query": 65}, {"view": "column"}):
            with self.assertRaises(Exception, msg=str(bad)):
                SESSION.select(**bad)
        browser.console_errors(SESSION.driver)

    def test_budget_fallback(self):
        d = self.dir
        run("--model", CIFAR, "--report", "--report-max-mb", "0.03", "--layer", 1, d / "in" / "cat.png", "-o", d / "small", "-q")
        info = SESSION.open((d / "small" / "cat_report.html").as_uri())
        self.assertEqual(info["full_layers"], [1])
        left_out = SESSION.js("return document.getElementById('left-out').textContent")
        self.assertIn("class token", left_out)
        self.assertIn("every layer but layer 1", left_out)
        for layer in (0, 1, 2, 3):
            SESSION.select(layer=layer, head="max", query=0, view="query")
            self.assertLessEqual(np.abs(SESSION.row() - self.npy[layer].max(0)[0]).max(), info["max_error"])
        SESSION.select(layer=1, head=2, query=40, view="key")
        self.assertLessEqual(np.abs(SESSION.row() - self.npy[1][2][:, 40]).max(), info["max_error"])
        with self.assertRaises(Exception):
            SESSION.select(layer=3, head=2, query=40, view="query")
        size = (d / "small" / "cat_report.html").stat().st_size
        full = (d / "out" / "cat_report.html").stat().st_size
        self.assertLess(size, full)
        SESSION.assert_clean()

    def test_seeded_step_by_step(self):
        # The seeded model is a one-block, one-head VitModel: the panel's q and k are its qkv rows
        # W_Q and W_K. Default shape (D 768, d_k 64) and a head narrower than D (d_k 40 of 96).
        for shape, d_k in (((), 64), (("--dim", 96, "--d-k", 40, "--img-size", 64, "--patch-size", 8), 40)):
            with self.subTest(d_k=d_k):
                self.seeded_step_by_step(shape, d_k)

    def seeded_step_by_step(self, shape, d_k):
        d, tag = self.dir, f"dk{d_k}"
        run(*shape, "--report", "--save-attention", d / "in" / "cat.png", "-o", d / f"seeded_{tag}", "-q")
        run(*shape, "--no-scale", "--save-attention", d / "in" / "cat.png", "-o", d / f"noscale_{tag}", "-q")
        scaled = np.load(d / f"seeded_{tag}" / "cat_attn.npy")
        unscaled = np.load(d / f"noscale_{tag}" / "cat_attn.npy")
        tokens = scaled.shape[-1]
        info = SESSION.open((d / f"seeded_{tag}" / "cat_report.html").as_uri())
        self.assertEqual((info["layers"], info["heads"], info["tokens"]), (1, 1, tokens))
        self.assertEqual(tokens, 197 if d_k == 64 else 65)
        for query in (0, tokens // 4, tokens - 1):
            SESSION.select(layer=0, head=0, query=query, view="query")
            self.assertLessEqual(np.abs(SESSION.row() - scaled[query]).max(), info["max_error"])
            steps = SESSION.js("return window.vitattn.steps()")
            key = steps["key"]
            self.assertEqual(key, int(np.argmax(SESSION.row())))
            self.assertAlmostEqual(steps["scaled"]["weight"], scaled[query, key], delta=1e-5)
            self.assertAlmostEqual(steps["unscaled"]["weight"], unscaled[query, key], delta=1e-5)
            self.assertAlmostEqual(steps["scaled"]["rowSum"], 1.0, delta=1e-9)
            self.assertAlmostEqual(steps["scaled"]["z"] * np.sqrt(d_k), steps["unscaled"]["z"],
                                   delta=1e-6 * abs(steps["unscaled"]["z"]) + 1e-9)
        self.assertFalse(SESSION.js("return document.getElementById('steps-panel').hidden"))
        SESSION.assert_clean()

    def test_index_links(self):
        index = self.dir / "out" / "index.html"
        SESSION.driver.get(index.as_uri())
        cards = SESSION.js("return Array.from(document.querySelectorAll('#gallery li')).map(li => [li.dataset.name, li.dataset.entropy, li.querySelector('a').getAttribute('href'), !!li.querySelector('img')])")
        self.assertEqual(sorted(c[0] for c in cards), ["cat.png", "dog one.png"])
        for name, entropy, href, has_thumb in cards:
            target = (index.parent / urllib.parse.unquote(href)).resolve()
            self.assertTrue(target.is_file(), href)
            self.assertTrue(has_thumb)
            m = np.load(index.parent / (Path(name).stem + "_cls.npy")).astype(np.float64)
            p = m / m.sum()
            self.assertAlmostEqual(float(entropy), float(-(p * np.log(p)).sum()), delta=1e-5)
        SESSION.js("document.getElementById('sort-entropy').click()")
        order = SESSION.js("return Array.from(document.querySelectorAll('#gallery li')).map(li => Number(li.dataset.entropy))")
        self.assertEqual(order, sorted(order))
        SESSION.js("document.getElementById('sort-entropy-desc').click()")
        order = SESSION.js("return Array.from(document.querySelectorAll('#gallery li')).map(li => Number(li.dataset.entropy))")
        self.assertEqual(order, sorted(order, reverse=True))
        # Each link opens its page.
        from selenium.webdriver.common.by import By
        SESSION.driver.find_element(By.CSS_SELECTOR, "#gallery li a").click()
        browser.wait_for(SESSION.driver, browser.READY)
        self.assertTrue(SESSION.js("return window.vitattn.info().layers") == 4)
        SESSION.assert_clean()


def setUpModule():
    harness.need(CIFAR.exists(), f"missing {CIFAR}")
    SESSION.start()


def tearDownModule():
    SESSION.stop()
