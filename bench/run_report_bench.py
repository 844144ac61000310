#!/usr/bin/python3
"""Benchmark of vitattn --report (a script, not a test): what the page costs to write, how
large it is, and how fast it redraws in a browser.

    bench/run_report_bench.py [--bin build/release/vitattn] [--rounds 5] [--photos 8] [--work DIR]

1. Writes a random-weight ViT-S/16 (bench/make_vit.py, torchvision; 224 px, 12 layers, 6 heads)
   and a folder of photos (bench/make_photos.py, from ../shared/images).
2. Runs `vitattn --model vit_s16 photos/ -j 2` with and without --report, alternating within each
   round, and prints the medians and their ratio (with / without --report).
3. Prints the size of the pages (ViT-S/16 at 224 with every layer), and of one page written with
   --report-precision f16 (2 bytes a weight).
4. Opens that page in headless Chromium and times window.vitattn.select() — which recomputes the
   row and redraws the canvas, the strip, the per-head panel and the plot synchronously — over
   changes of layer, head (index and fusions), query, view and rollout; prints median, p95 and max
   per kind of change, beside a 60 Hz frame (16.7 ms).
"""
import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(REPO / "tests" / "pylib"))  # harness, which tests/browser/browser.py imports
sys.path.insert(0, str(REPO / "tests" / "browser"))


def timed(cmd):
    t = time.perf_counter()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - t


def write_time(args, model, photos, work):
    base, report = [], []
    for r in range(args.rounds):
        for with_report, times in ((False, base), (True, report)):
            out = work / f"out-{int(with_report)}"
            shutil.rmtree(out, ignore_errors=True)
            cmd = [args.bin, "--model", str(model), str(photos), "-o", str(out), "-j", "2", "-q"]
            if with_report:
                cmd.insert(1, "--report")
            times.append(timed(cmd))
    b, r = statistics.median(base), statistics.median(report)
    n = len(list(photos.iterdir()))
    print(f"write time, {n} photos, ViT-S/16 at 224, -j 2, median of {args.rounds}:")
    print(f"  without --report  {b:7.3f} s")
    print(f"  with --report     {r:7.3f} s   with / without {r / b:.2f}x")
    return work / "out-1"


def redraw_time(page, rounds):
    import browser
    driver, profile = browser.start()
    try:
        browser.open_page(driver, page.as_uri())
        info = driver.execute_script("return window.vitattn.info()")
        L, H, T = info["layers"], info["heads"], info["tokens"]
        kinds = {
            "query (hover)": [{"query": 1 + (i * 37) % (T - 1)} for i in range(60)],
            "layer": [{"layer": i % L, "query": 5} for i in range(60)],
            "head index": [{"head": i % H} for i in range(60)],
            "head mean/max/min": [{"head": ["mean", "max", "min"][i % 3]} for i in range(60)],
            "key view": [{"view": "key", "query": 1 + (i * 53) % (T - 1)} for i in range(60)],
            "rollout (cached)": [{"rollout": True, "layer": L - 1, "head": "mean", "query": 1 + (i * 29) % (T - 1), "view": "query"} for i in range(60)],
        }
        print(f"redraw per change in Chromium (headless, software canvas), {page.name}, {T} tokens, {L}x{H}; "
              "beside a 60 Hz frame, 16.7 ms:")
        for name, changes in kinds.items():
            driver.execute_script("window.vitattn.select({layer: 0, head: 'mean', query: 0, view: 'query', rollout: false})")
            ms = driver.execute_script("""
                const out = [];
                for (let r = 0; r < arguments[1]; r++)
                  for (const c of arguments[0]) { const t = performance.now(); window.vitattn.select(c); out.push(performance.now() - t); }
                return out;""", changes, rounds)
            ms.sort()
            print(f"  {name:18s} median {statistics.median(ms):6.2f} ms  p95 {ms[int(0.95 * (len(ms) - 1))]:6.2f} ms  max {ms[-1]:6.2f} ms  (n={len(ms)})")
        first = driver.execute_script("""
            window.vitattn.select({layer: 0, head: 'max', query: 0, view: 'query', rollout: false});
            const t = performance.now(); window.vitattn.select({rollout: true, layer: arguments[0] - 1, head: 'max'}); return performance.now() - t;""", L)
        print(f"  rollout, first time at a fusion (fuses every layer's matrices once): {first:.1f} ms")
    finally:
        browser.stop(driver, profile)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bin", default=str(REPO / "build" / "release" / "vitattn"))
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--photos", type=int, default=8)
    ap.add_argument("--work", help="keep the model and photos here (default: a temporary folder)")
    args = ap.parse_args()
    work = Path(args.work) if args.work else Path(tempfile.mkdtemp(prefix="vitattn-report-bench-"))
    work.mkdir(parents=True, exist_ok=True)
    try:
        model = work / "vit_s16.safetensors"
        if not model.exists():
            subprocess.run([sys.executable, str(HERE / "make_vit.py"), str(work), "--models", "vit_s16"], check=True)
        photos = work / "photos"
        if not photos.exists():
            subprocess.run([sys.executable, str(HERE / "make_photos.py"), str(photos), "--count", str(args.photos)], check=True)
        out = write_time(args, model, photos, work)
        pages = sorted(out.glob("*_report.html"))
        sizes = [p.stat().st_size / 1e6 for p in pages]
        print(f"page size: {min(sizes):.2f}-{max(sizes):.2f} MB (10^6 bytes) for {len(pages)} pages")
        f16 = work / "out-f16"
        shutil.rmtree(f16, ignore_errors=True)
        photo = sorted(photos.iterdir())[0]
        subprocess.run([args.bin, "--model", str(model), "--report", "--report-precision", "f16", str(photo), "-o",
                        str(f16), "-q"], check=True)
        page = next(f16.glob("*_report.html"))
        print(f"page size with --report-precision f16: {page.stat().st_size / 1e6:.2f} MB ({page.name})")
        redraw_time(pages[0], max(1, args.rounds // 2))
    finally:
        if not args.work:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
