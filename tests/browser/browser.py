"""One headless Debian Chromium per test file, driven by chromedriver through python3-selenium.

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


def open_page(driver, url, ready_timeout=30):
    """Loads url (leaving the page first, so that a fragment-only change reloads) and waits for
    the page's script to set body[data-ready]."""
    from selenium.webdriver.support.ui import WebDriverWait
    driver.get("about:blank")
    driver.get(url)
    WebDriverWait(driver, ready_timeout).until(
        lambda d: d.execute_script("return document.body && document.body.dataset.ready === '1'"))


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
