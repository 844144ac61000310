#!/usr/bin/python3
"""The time of a click's row: from a click on a patch of the page to the new row drawn.

The page is the report's own (`vitattn --report`, the page `vitattn serve` serves too), of a
1 MP JPEG made from a photo of ../shared/images (coffee.png scaled to 1224×816), for the
bundled CIFAR-10 ViT and, when its file is given, a random ViT-S/16 (bench/make_vit.py).
Headless Debian Chromium (tests/browser/browser.py's flags) opens it; the timing is taken in
the page with performance.now(): a click event dispatched on the map's canvas at the centre of
a patch, to the end of its handler (the row computed and every panel redrawn, the canvas's
drawing calls returned), and to the next animation frame after it (the frame that shows it;
headless Chromium runs frames at 60 Hz, so up to 16.7 ms of that is waiting for the frame).
Each click picks another patch (seeded order); the first 5 warm the JIT and are not counted.
Two views at the last layer, heads fused by their mean: the query view (the patch's attention
row) and rollout (the product over layers, recomputed for the patch). Nothing here is a ctest entry.

  bench/serve_click_row.py [--bin build/release/vitattn] [--vit-s16 /tmp/vit/vit_s16.safetensors] [-n 25]
"""
import argparse
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

import cv2
import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests" / "pylib"))
sys.path.insert(0, str(REPO / "tests" / "browser"))
import browser  # noqa: E402  (tests/browser/browser.py: Chromium with the tests' flags)

WARM = 5

# Runs in the page: clicks the given patches one after the other; for each, [handler ms,
# to-next-frame ms, the query the page then shows, the page's own time of its last redraw].
CLICKS_JS = """
const [patches, done] = [arguments[0], arguments[arguments.length - 1]];
const info = window.vitattn.info(), [GH, GW] = info.grid;
const view = document.getElementById('view'), r = view.getBoundingClientRect();
(async () => {
  const out = [];
  for (const p of patches) {
    const x = r.left + ((p % GW) + 0.5) * r.width / GW, y = r.top + (Math.floor(p / GW) + 0.5) * r.height / GH;
    const t0 = performance.now();
    view.dispatchEvent(new MouseEvent('click', { clientX: x, clientY: y, bubbles: true }));
    const t1 = performance.now();
    await new Promise((res) => requestAnimationFrame(() => setTimeout(res, 0)));
    out.push([t1 - t0, performance.now() - t0, window.vitattn.state().query, window.vitattn.lastRedrawMs()]);
  }
  done(out);
})();
"""


def photo_1mp(src, out):
    img = cv2.imread(str(src), cv2.IMREAD_COLOR)
    assert img is not None, f"cannot read {src}"
    cv2.imwrite(str(out), cv2.resize(img, (1224, 816), interpolation=cv2.INTER_CUBIC), [cv2.IMWRITE_JPEG_QUALITY, 90])


def report_page(binary, model, jpeg, out):
    subprocess.run([binary, "--model", str(model), "--report", "-q", "-o", str(out), str(jpeg)], check=True)
    return out / (jpeg.stem + "_report.html")


def clicks(driver, page, method, n):
    browser.open_page(driver, page.as_uri(), ready_timeout=120)
    info = driver.execute_script("return window.vitattn.info()")
    last = info["layers"] - 1
    assert last in info["full_layers"], f"the page keeps only class rows at layer {last}: {info['full_layers']}"
    driver.execute_script("window.vitattn.select(arguments[0])",
                          {"layer": last, "head": "mean", "view": "query", "method": method, "query": 0})
    patches = np.random.default_rng(0).permutation(info["grid"][0] * info["grid"][1])[:n + WARM].tolist()
    got = driver.execute_async_script(CLICKS_JS, patches)
    fp = info["first_patch"]
    wrong = [(p, g[2]) for p, g in zip(patches, got) if g[2] != fp + p]
    assert not wrong, f"clicks that did not pick their patch: {wrong[:5]}"
    assert browser.console_errors(driver) == [], "console errors"
    handler, frame, redraw = ([g[i] for g in got[WARM:]] for i in (0, 1, 3))
    return info, statistics.median(handler), max(handler), statistics.median(frame), statistics.median(redraw)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", default=str(REPO / "build/release/vitattn"))
    ap.add_argument("--vit-s16", default="")
    ap.add_argument("--photo", default=str(REPO.parent / "shared" / "images" / "coffee.png"))
    ap.add_argument("-n", type=int, default=25)
    a = ap.parse_args()
    models = [("bundled CIFAR-10 ViT", REPO / "models/vit_cifar10_tintn.safetensors")]
    if a.vit_s16:
        models.append(("random ViT-S/16", Path(a.vit_s16)))
    driver, profile = browser.start()
    try:
        with tempfile.TemporaryDirectory() as tmp:
            tmp = Path(tmp)
            jpeg = tmp / "photo.jpg"
            photo_1mp(a.photo, jpeg)
            print(f"1 MP JPEG from {Path(a.photo).name} ({jpeg.stat().st_size} bytes), {os.cpu_count()} cores, "
                  f"{a.bin}, {driver.capabilities.get('browserVersion', '?')} headless; median of {a.n} clicks")
            for k, (name, model) in enumerate(models):
                page = report_page(a.bin, model, jpeg, tmp / f"out{k}")
                for method in ("attention", "rollout"):
                    info, handler, worst, frame, redraw = clicks(driver, page, method, a.n)
                    view = "query view" if method == "attention" else "rollout"
                    print(f"{name} ({info['tokens']} tokens, {info['layers']} layers × {info['heads']} heads, "
                          f"page {page.stat().st_size // 1024} KB), {view}: click → row drawn {handler:.1f} ms "
                          f"(slowest {worst:.1f} ms; the page's last redraw {redraw:.1f} ms), click → next frame {frame:.1f} ms")
    finally:
        browser.stop(driver, profile)


if __name__ == "__main__":
    sys.exit(main())
