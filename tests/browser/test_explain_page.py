"""vitattn explain --html in a real browser (headless Debian Chromium, one session).

The numbers the page shows (the table cells of every step, read from the DOM) must be the
ones `vitattn explain` prints, parsed from its output, (c)'s table of variances included; the
page's own recomputation must agree with them; editing Q recomputes every step (checked against numpy); the causal mask toggles;
no console errors, no network requests.

Runs under pytest (tests/conftest.py); the binary is harness.BIN. Needs numpy, python3-selenium,
chromium, chromium-driver.
"""
import re
import sys
import tempfile
import unittest
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import browser  # noqa: E402
from browser import run  # noqa: E402

SESSION = browser.Session()  # this file's one Chromium, started by setUpModule
NUMBER = r"-?\d+(?:\.\d+)?(?:e[-+]?\d+)?"


def printed_matrices(text):
    """`vitattn explain`'s output → {example letter: [(label, matrix as printed strings)]}."""
    out, example, label, rows = {}, None, None, []
    for line in text.splitlines():
        m = re.match(r"^\(([a-d])\) ", line)
        if m:
            example = m.group(1)
            out.setdefault(example, [])
            continue
        m = re.match(r"^  (\S.*?)  \((\d+)×(\d+)\)$", line)
        if m and example:
            label, rows = m.group(1), []
            out[example].append((label, rows))
            continue
        m = re.match(r"^    \[(.*)\]$", line)
        if m and label is not None:
            rows.append(m.group(1).split())
    return out


def variance_lines(text):
    """(c)'s table as `vitattn explain` prints it: [[d_k, Var(q·k), Var(q·k/√d_k)] as strings]."""
    block = text.split("d_k    Var(q·k)   Var(q·k/√d_k)\n", 1)[1]
    return [m.groups() for m in re.finditer(rf"^    +(\d+) +({NUMBER}) +({NUMBER})$", block.split("\n\n", 1)[0], re.M)]


def softmax_lines(text):
    return [[float(x) for x in m.group(2).split(", ")] for m in re.finditer(r"softmax\(\[([^\]]*)\]\) = \[([^\]]*)\]", text)]


class ExplainPage(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory(prefix="vitattn-explain-")
        cls.page = Path(cls.tmp.name) / "explain.html"
        cls.stdout, _ = run("explain", "--html", cls.page)
        cls.printed = printed_matrices(cls.stdout)

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def table(self, label):
        return SESSION.js(
            "const t = document.querySelector(`table[data-label='${arguments[0]}']`);"
            "return t ? Array.from(t.tBodies[0].rows).map(r => Array.from(r.querySelectorAll('td')).map(c => c.textContent)) : null;", label)

    def test_numbers_are_explains(self):
        SESSION.open(self.page)
        compared = 0
        for example in ("a", "b", "d"):
            SESSION.js("window.vitattnExplain.choose(arguments[0])", example)
            printed = SESSION.js("return window.vitattnExplain.printed(arguments[0])", example)
            ours = SESSION.js("return window.vitattnExplain.compute(arguments[0])", example)
            for p in printed:
                matches = [rows for label, rows in self.printed[example] if label.startswith(p["label"])]
                self.assertEqual(len(matches), 1, f"({example}) {p['label']}: {[l for l, _ in self.printed[example]]}")
                want = matches[0]
                shown = self.table(p["label"])
                self.assertEqual(shown, want, f"({example}) {p['label']}: page {shown}, explain {want}")
                key = p["label"].replace("masked ", "")
                np.testing.assert_allclose(np.array(ours[key]), np.array(p["values"]), atol=1e-6)
                compared += 1
        self.assertEqual(compared, 10)
        why = SESSION.js(
            "return ['small', 'large'].map(k => Array.from(document.querySelectorAll(`table[data-label='softmax ${k}'] td`)).map(td => Number(td.textContent)))")
        for got, want in zip(why, softmax_lines(self.stdout)):
            np.testing.assert_allclose(got, want, rtol=1e-9)
        SESSION.assert_clean()

    def test_variance_table_is_explains(self):
        """(c): Var(q·k) grows with d_k and ÷√d_k brings it back to ~1; the page shows explain's numbers."""
        SESSION.open(self.page)
        printed = variance_lines(self.stdout)
        self.assertEqual([r[0] for r in printed], ["4", "16", "64", "256"])
        shown = SESSION.js(
            "return Array.from(document.querySelectorAll(\"table[data-label='variance'] tbody tr\"))"
            ".map(r => Array.from(r.cells).map(c => c.textContent))")
        self.assertEqual([tuple(r) for r in shown], printed)
        for d_k, var, scaled in printed:  # what the table argues, within 20000 pairs' sampling error
            self.assertAlmostEqual(float(var) / int(d_k), 1.0, delta=0.05)
            self.assertAlmostEqual(float(scaled), 1.0, delta=0.05)
        self.assertEqual(browser.console_errors(SESSION.driver), [])

    def test_edit_and_mask(self):
        SESSION.open(self.page)
        SESSION.js("window.vitattnExplain.choose('b')")
        inputs = SESSION.js("return document.querySelectorAll(\"table[data-label='input q'] input\").length")
        self.assertEqual(inputs, 16)
        from selenium.webdriver.common.by import By
        cell = SESSION.driver.find_elements(By.CSS_SELECTOR, "table[data-label='input q'] input")[0]
        cell.clear()
        cell.send_keys("3")
        q = np.array([[3, 0, 1, 0], [0, 1, 0, 1], [1, 1, 0, 0], [0, 0, 1, 1]], float)
        v = np.arange(1, 17, dtype=float).reshape(4, 4)
        k = np.array([[1, 0, 1, 0], [0, 1, 0, 1], [1, 1, 0, 0], [0, 0, 1, 1]], float)  # K stays as it was

        def softmax(s):
            e = np.exp(s - s.max(1, keepdims=True))
            return e / e.sum(1, keepdims=True)
        w = softmax(q @ k.T / 2)
        got = SESSION.js("return window.vitattnExplain.compute('b')")
        np.testing.assert_allclose(got["weights"], w, atol=1e-12)
        np.testing.assert_allclose(got["output"], w @ v, atol=1e-12)
        SESSION.js("window.vitattnExplain.frame(2)")
        shown = np.array(self.table("weights"), dtype=float)
        np.testing.assert_allclose(shown, w, atol=0.5e-4 + 1e-12)
        SESSION.driver.find_element(By.ID, "mask").click()
        masked = np.array(self.table("masked weights"), dtype=float)
        self.assertTrue(np.all(np.triu(masked, 1) == 0))
        np.testing.assert_allclose(masked, softmax(np.where(np.triu(np.ones((4, 4)), 1) > 0, -np.inf, q @ k.T / 2)), atol=0.5e-4 + 1e-12)
        # the mask's line points to the same mask on a real text tower, and the command that shows it
        line = SESSION.js("const p = document.getElementById('mask-text-tower'); return p ? p.textContent : null")
        self.assertIsNotNone(line)
        self.assertIn("CLIP's text tower", line)
        self.assertIn('--text "a photo of a cat" --report', line)
        self.assertEqual(browser.console_errors(SESSION.driver), [])


def setUpModule():
    SESSION.start()


def tearDownModule():
    SESSION.stop()
