#!/usr/bin/python3
"""Remakes docs/serve_page.jpg, the README's picture of `vitattn serve`'s page: the server
with the bundled CIFAR-10 ViT on a free loopback port, images/chelsea.png sent through the
page's file input, a patch clicked in the report, headless Debian Chromium (python3-selenium)
at 1000 × 700, saved as a JPEG (quality 80).
Run: scripts/serve_screenshot.py [--bin build/dev/vitattn] [--out docs/serve_page.jpg]"""
import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

import cv2
import numpy as np

REPO = Path(__file__).resolve().parent.parent


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bin", default=str(REPO / "build/dev/vitattn"))
    ap.add_argument("--out", default=str(REPO / "docs/serve_page.jpg"))
    args = ap.parse_args()
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    server = subprocess.Popen([str(Path(args.bin).resolve()), "serve", "--model", "models/vit_cifar10_tintn.safetensors",
                               "--port", "0"], stdout=subprocess.PIPE, text=True, stdin=subprocess.DEVNULL, cwd=REPO)
    url = server.stdout.readline().strip()
    profile = tempfile.mkdtemp(prefix="vitattn-shot-")
    options = webdriver.ChromeOptions()
    options.binary_location = "/usr/bin/chromium"
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--hide-scrollbars", "--window-size=1000,700", f"--user-data-dir={profile}"):
        options.add_argument(flag)
    driver = webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=options)
    try:
        driver.set_window_size(1000, 700)
        driver.get(url)
        wait = WebDriverWait(driver, 30)
        wait.until(lambda d: d.execute_script("return document.getElementById('model').options.length > 0"))
        driver.find_element(By.ID, "file").send_keys(str(REPO / "images/chelsea.png"))
        wait.until(lambda d: d.execute_script("return !document.getElementById('report').hidden"))
        driver.switch_to.frame(driver.find_element(By.ID, "report"))
        wait.until(lambda d: d.execute_script("return document.body && document.body.dataset.ready === '1'"))
        driver.execute_script("window.vitattn.select({query: 1 + 3 * 8 + 4})")  # a patch on the cat's face
        driver.switch_to.default_content()
        png = driver.get_screenshot_as_png()
    finally:
        driver.quit()
        server.terminate()
        server.wait(timeout=30)
    image = cv2.imdecode(np.frombuffer(png, np.uint8), cv2.IMREAD_COLOR)
    ok, jpeg = cv2.imencode(".jpg", image, [cv2.IMWRITE_JPEG_QUALITY, 80])
    assert ok
    Path(args.out).write_bytes(jpeg.tobytes())
    print(f"{args.out}: {image.shape[1]}×{image.shape[0]}, {len(jpeg) / 1024:.0f} KB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
