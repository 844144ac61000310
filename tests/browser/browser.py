"""One headless Debian Chromium per test file, driven by chromedriver through python3-selenium,
and the helpers every browser test shares: running vitattn (run), waiting on the page, the
page's window.vitattn contract, the Prompts panel's readers (a model asked in words), and a
Session for the files that keep their Chromium in a module global (the others take the `driver`
fixture and pass it to the functions here).

Chromium gets a fresh --user-data-dir and the flags that keep it off the network
(no background networking, component updates or sync): a page under test must make no
request, and the performance log shows every one it makes."""
import json
import shutil
import tempfile
from pathlib import Path

import pytest

import harness

CHROMIUM, CHROMEDRIVER = "/usr/bin/chromium", "/usr/bin/chromedriver"


def start():
    """Returns (driver, profile_dir); skips (harness.need: a failure under CI=true) when chromium
    or selenium is missing."""
    try:
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service
    except ImportError:
        harness.need(False, "python3-selenium is not installed (scripts/install-deps.sh)")
    harness.need(Path(CHROMIUM).exists() and Path(CHROMEDRIVER).exists(),
                 "chromium and chromium-driver are not installed (scripts/install-deps.sh)")
    profile = tempfile.mkdtemp(prefix="vitattn-chromium-")
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run", "--disable-quic",
                 "--disable-dev-shm-usage", "--window-size=1400,1100", f"--user-data-dir={profile}"):
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL", "performance": "ALL"})
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
    driver.set_script_timeout(60)
    return driver, profile


def stop(driver, profile):
    try:
        driver.quit()
    finally:
        shutil.rmtree(profile, ignore_errors=True)


def run(*args):
    """Runs vitattn with args (harness.run_process) and fails the test unless it exits 0, naming the
    command and its stderr; returns (stdout, stderr)."""
    p = harness.run_process(*args, expect=0)
    return p.stdout, p.stderr


@pytest.fixture(scope="module")
def driver():
    """One Chromium for a test file (import this fixture into it): started on first use,
    stopped after the file's last test."""
    d, profile = start()
    yield d
    stop(d, profile)


def assert_clean(driver):
    """No console error and no network request since the page was opened."""
    assert console_errors(driver) == [], "console errors"
    assert network_requests(driver) == [], "network requests"


READY = "return document.body && document.body.dataset.ready === '1'"  # the page's script has run


def wait_for(driver, script, timeout=30):
    """Waits until the JavaScript `script` returns a true value in the current page."""
    from selenium.webdriver.support.ui import WebDriverWait
    WebDriverWait(driver, timeout).until(lambda d: d.execute_script(script))


def open_page(driver, url, ready_timeout=30):
    """Loads url (leaving the page first, so that a fragment-only change reloads) and waits for
    the page's script to set body[data-ready]."""
    driver.get("about:blank")
    driver.get(url)
    wait_for(driver, READY, ready_timeout)


def console_errors(driver):
    """SEVERE console entries since the last call (reading the log empties it)."""
    return [e for e in driver.get_log("browser") if e.get("level") == "SEVERE"]


def network_requests(driver):
    """URLs of the requests Chromium made since the last call that could leave the machine: every
    scheme but file:, data:, about: and the browser's own chrome: pages (its new-tab page)."""
    urls = []
    for entry in driver.get_log("performance"):
        message = json.loads(entry["message"])["message"]
        if message.get("method") == "Network.requestWillBeSent":
            url = message["params"]["request"]["url"]
            if not url.startswith(("file:", "data:", "about:", "chrome:", "chrome-untrusted:", "blob:")):
                urls.append(url)
    return urls


# --- the page's window.vitattn contract -------------------------------------------------------
def select(driver, **kw):
    """window.vitattn.select({layer, head, query, view}); returns what the page returns."""
    return driver.execute_script("return window.vitattn.select(arguments[0])", kw)


def row(driver):
    """The displayed row (window.vitattn.row(), dequantised) as float64."""
    import numpy as np
    return np.array(driver.execute_script("return Array.from(window.vitattn.row())"), dtype=np.float64)


def fuse(a, head):
    """The page's head choice on a (H, T, T) stack: an index, or "mean"/"max"/"min" over heads."""
    if isinstance(head, int):
        return a[head]
    return {"mean": a.mean(0), "max": a.max(0), "min": a.min(0)}[head]


def patch_distances(grid_h, grid_w, patch):
    """Pixels between patch centres, patches in raster order: patch j at row j // grid_w."""
    import numpy as np
    ys, xs = np.divmod(np.arange(grid_h * grid_w), grid_w)
    return np.hypot(ys[:, None] - ys[None], xs[:, None] - xs[None]) * patch


# --- the Prompts panel (a model asked in words; test_report_texts, test_report_siglip_texts) -----
def text_outputs(out, stem, n_texts):
    """The image command's files for one image asked in n_texts texts (--save-attention --top):
    ({i: <stem>_cls_t<i>.npy, or <stem>_cls.npy for one text}, <stem>_words.csv's rows as dicts,
    {label: probability} from <stem>_predictions.csv)."""
    import csv
    import numpy as np
    out = Path(out)
    maps = {i: np.load(out / (f"{stem}_cls_t{i}.npy" if n_texts > 1 else f"{stem}_cls.npy")) for i in range(n_texts)}
    with open(out / f"{stem}_words.csv", newline="", encoding="utf-8") as f:
        words = list(csv.DictReader(f))
    with open(out / f"{stem}_predictions.csv", newline="", encoding="utf-8") as f:
        top = {r["label"]: float(r["probability"]) for r in csv.DictReader(f)}
    return maps, words, top


def word_bars(driver):
    """The word bars as the DOM shows them: {text index: [(position, token, relevance)]}."""
    return {int(k): [(int(p), t, float(r)) for p, t, r in v] for k, v in driver.execute_script("""
        const out = {};
        for (const li of document.querySelectorAll('#prompts > li'))
          out[li.dataset.index] = [...li.querySelectorAll('.words .bar')].map((b) => [b.dataset.position, b.dataset.token, b.dataset.relevance]);
        return out;""").items()}


def check_word_bars(driver, words):
    """The DOM's word bars are words.csv's rows (text_outputs' `words`): tokens, positions, relevances."""
    import numpy as np
    bars = word_bars(driver)
    assert sorted(bars) == list(range(len({r["text_index"] for r in words})))
    for i, shown in bars.items():
        rows = [r for r in words if int(r["text_index"]) == i]
        assert [(p, t) for p, t, _ in shown] == [(int(r["position"]), r["token"]) for r in rows]
        np.testing.assert_allclose([v for _, _, v in shown], [float(r["relevance"]) for r in rows], rtol=1e-6, atol=1e-9)
    assert any(v > 0 for row in bars.values() for _, _, v in row), "some word mattered"


def check_maps(driver, maps, method):
    """Each text's map under `method` (the class picker's path, the text the class) against the
    CLI's (text_outputs' `maps`), within the page's mapError()."""
    import numpy as np
    for i, expected in maps.items():
        select(driver, method=method, **{"class": i})
        err = driver.execute_script("return window.vitattn.mapError()")
        np.testing.assert_allclose(row(driver), expected.reshape(-1), atol=err)


def shown_prompt_order(driver):
    """The text indices in the order the Prompts panel lists them."""
    return driver.execute_script("return [...document.querySelectorAll('#prompts > li')].map((li) => Number(li.dataset.index))")


def text_attention_table(driver):
    """The text tower's token × token table as drawn: its column labels, the number of cells
    shown as masked (hatched), and the numbers of the others, row-major."""
    return driver.execute_script("""const t = document.getElementById('text-attention');
        return {cols: [...t.querySelectorAll('tr:first-of-type th')].slice(1).map((th) => th.textContent),
                masked: t.querySelectorAll('td.masked, td[data-masked]').length,
                numbers: [...t.querySelectorAll('td[data-value]')].map((td) => Number(td.dataset.value))};""")


class Session:
    """A test file's one Chromium, held in a module global: created at import, started by the
    file's setup_module (setUpModule) and stopped by its teardown, so that the file's helpers,
    not only its tests, reach the page. The methods are the functions above on its driver."""

    def __init__(self):
        self.driver = self._profile = None

    def start(self):
        self.driver, self._profile = start()

    def stop(self):
        if self.driver is not None:
            stop(self.driver, self._profile)
            self.driver = self._profile = None

    def js(self, script, *args):
        """The value of the JavaScript `script` (arguments[i] = args[i]) in the current page."""
        return self.driver.execute_script(script, *args)

    def open(self, page, fragment=""):
        """Opens page (a Path or a URL, plus fragment) as open_page does; returns its
        window.vitattn.info(), None on a page without window.vitattn."""
        url = page.as_uri() if isinstance(page, Path) else page
        open_page(self.driver, url + fragment)
        return self.js("return window.vitattn ? window.vitattn.info() : null")

    def select(self, **kw):
        return select(self.driver, **kw)

    def row(self):
        return row(self.driver)

    def assert_clean(self):
        assert_clean(self.driver)
