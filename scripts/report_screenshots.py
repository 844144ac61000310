#!/usr/bin/python3
"""Makes the README's screenshots of the report page (docs/report_*.jpg) in headless Chromium.

    scripts/report_screenshots.py [--bin build/release/vitattn] [--out docs]

One page with the bundled trained CIFAR-10 model (chelsea, a pinned patch, layer 3, mean of the
heads; and the same page on chefer's map of the class cat), one with the seeded head (the
step-by-step panel open). Small JPEGs."""
import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

import cv2
import numpy as np

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tests" / "pylib"))  # harness, which tests/browser/browser.py imports
sys.path.insert(0, str(REPO / "tests" / "browser"))
import browser  # noqa: E402


def shoot(driver, page, fragment, out, height):
    browser.open_page(driver, page.as_uri() + fragment)
    driver.set_window_size(1400, height)
    png = driver.get_screenshot_as_png()
    img = cv2.imdecode(np.frombuffer(png, np.uint8), cv2.IMREAD_COLOR)
    img = cv2.resize(img, (img.shape[1] * 3 // 4, img.shape[0] * 3 // 4), interpolation=cv2.INTER_AREA)
    cv2.imwrite(str(out), img, [cv2.IMWRITE_JPEG_QUALITY, 80])
    print(f"wrote {out} ({out.stat().st_size // 1024} KB)")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", default=str(REPO / "build" / "release" / "vitattn"))
    ap.add_argument("--out", default=str(REPO / "docs"))
    args = ap.parse_args()
    out = Path(args.out)
    with tempfile.TemporaryDirectory() as tmp:
        t = Path(tmp)
        subprocess.run([args.bin, "--model", str(REPO / "models" / "vit_cifar10_tintn.safetensors"), "--report", "-q",
                        "--threshold", "0.6", str(REPO / "images" / "chelsea.png"), "-o", str(t / "cifar")], check=True)
        subprocess.run([args.bin, "--report", "-q", str(REPO / "images" / "chelsea.png"), "-o", str(t / "seeded")], check=True)
        driver, profile = browser.start()
        try:
            shoot(driver, t / "cifar" / "chelsea_report.html", "#layer=3&head=mean&query=28&view=query", out / "report_cifar10.jpg", 1100)
            shoot(driver, t / "cifar" / "chelsea_report.html", "#layer=3&head=mean&query=0&view=query&method=chefer&class=3",
                  out / "report_cifar10_classes.jpg", 1100)
            shoot(driver, t / "seeded" / "chelsea_report.html", "#layer=0&head=0&query=60&view=query", out / "report_seeded.jpg", 1500)
        finally:
            browser.stop(driver, profile)


if __name__ == "__main__":
    main()
