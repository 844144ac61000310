"""vitattn eval's eval.html in a real browser (headless Debian Chromium, one session).

Every number the page's tables show is eval.csv's, as its text, for the same method and metric;
each table is ranked best first (lower first for positive_auc and sanity_spearman, higher first
otherwise); every curve of eval_curves.csv has its line; no console errors, no network requests.

Runs under pytest (tests/conftest.py); the binary is harness.BIN. Needs numpy, cv2,
python3-selenium, chromium, chromium-driver.
"""
import csv
import sys
import tempfile
import unittest
from pathlib import Path

import cv2
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import browser  # noqa: E402
from browser import run  # noqa: E402

SESSION = browser.Session()
REPO = Path(__file__).resolve().parents[2]
MODEL = REPO / "models" / "vit_cifar10_tintn.safetensors"
LOWER_IS_BETTER = {"positive_auc", "sanity_spearman"}


def setUpModule():
    SESSION.start()


def tearDownModule():
    SESSION.stop()


def read_rows(path):
    with open(path, newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f))


class EvalPage(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory(prefix="vitattn-eval-page-")
        root = Path(cls.tmp.name)
        rng = np.random.default_rng(7)
        images, masks = [], root / "masks"
        masks.mkdir()
        for i in range(3):
            img = rng.integers(0, 256, (48, 64, 3), dtype=np.uint8)
            cv2.circle(img, (20 + 10 * i, 24), 12, (30, 200, 60), -1)
            p = root / f"p{i}.png"
            cv2.imwrite(str(p), img)
            m = np.zeros((48, 64), np.uint8)
            cv2.circle(m, (20 + 10 * i, 24), 12, 255, -1)
            cv2.imwrite(str(masks / p.name), m)
            images.append(p)
        cls.out = root / "out"
        run("eval", "--model", MODEL, "--masks", masks, "-o", cls.out, *images)
        cls.summary = read_rows(cls.out / "eval.csv")
        cls.curves = read_rows(cls.out / "eval_curves.csv")

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def test_tables_are_the_csv(self):
        SESSION.open(self.out / "eval.html")
        shown = SESSION.js(
            "return Array.from(document.querySelectorAll('td.value')).map(c => [c.dataset.method, c.dataset.metric, c.textContent])")
        want = {(r["method"], r["metric"]): r["value"] for r in self.summary}
        self.assertEqual(len(shown), len(want))
        self.assertEqual({(m, k): v for m, k, v in shown}, want)
        self.assertGreater(len({k for _, k, _ in shown}), 5, "the run measured too few metrics to prove much")
        SESSION.assert_clean()

    def test_each_table_is_ranked_best_first(self):
        SESSION.open(self.out / "eval.html")
        tables = SESSION.js(
            "return Array.from(document.querySelectorAll('table[data-metric]')).map(t => [t.dataset.metric, "
            "Array.from(t.querySelectorAll('td.value')).map(c => Number(c.textContent))])")
        self.assertEqual({m for m, _ in tables}, {r["metric"] for r in self.summary})
        for metric, values in tables:
            want = sorted(values) if metric in LOWER_IS_BETTER else sorted(values, reverse=True)
            self.assertEqual(values, want, metric)

    def test_every_curve_has_its_lines(self):
        SESSION.open(self.out / "eval.html")
        lines = SESSION.js(
            "return Array.from(document.querySelectorAll('figure[data-curve]')).flatMap(f => "
            "Array.from(f.querySelectorAll('polyline[data-method]')).map(l => [f.dataset.curve, l.dataset.method, "
            "l.getAttribute('points').split(' ').length]))")
        want = {}
        for r in self.curves:
            want[(r["curve"], r["method"])] = want.get((r["curve"], r["method"]), 0) + 1
        self.assertEqual({(c, m): n for c, m, n in lines}, want)
        SESSION.assert_clean()
