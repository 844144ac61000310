#!/usr/bin/python3
"""Time from upload to map with `vitattn serve`, against the CLI's one-image time.

For each model (the bundled CIFAR-10 ViT, and a random ViT-S/16 from bench/make_vit.py when
its file is given): a 1 MP JPEG (1155×866, photo-like, generated) is POSTed to /api/map;
printed are the first answer's time and the median of the next N (the model is loaded once,
at start-up, before the first upload), against `vitattn --model M photo.jpg`: its wall time
(the CLI's start-up and model load included) and the image's own time without them, the `ms`
its `--log-json` line gives (decoding, the forward, drawing and writing the outputs: the
CLI's one-image time without its start-up). Nothing here is a ctest entry.

  bench/serve_first_map.py [--bin build/release/vitattn] [--vit-s16 /tmp/vit/vit_s16.safetensors] [-n 10]
"""
import argparse
import http.client
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import cv2
import numpy as np

REPO = Path(__file__).resolve().parents[1]


def photo(path, w=1155, h=866):
    rng = np.random.default_rng(0)
    small = rng.integers(0, 256, (h // 32, w // 32, 3), dtype=np.uint8)
    img = cv2.resize(small, (w, h), interpolation=cv2.INTER_CUBIC)
    cv2.imwrite(str(path), img, [cv2.IMWRITE_JPEG_QUALITY, 90])


def cli_seconds(binary, model, image, out, repeats=5):
    """Medians of the whole run's wall seconds and of the image's own (its --log-json ms)."""
    whole, own = [], []
    log = Path(out) / "run.jsonl"
    for _ in range(repeats):
        t = time.perf_counter()
        subprocess.run([binary, "--model", str(model), "-q", "-o", str(out), "--log-json", str(log), str(image)],
                       check=True)
        whole.append(time.perf_counter() - t)
        own.append(json.loads(log.read_text().splitlines()[0])["ms"] / 1000)
    return statistics.median(whole), statistics.median(own)


def serve_seconds(binary, model, body, n):
    p = subprocess.Popen([binary, "serve", "--port", "0", "--model", str(model), "-q"], stdout=subprocess.PIPE, text=True)
    try:
        m = re.match(r"http://([0-9.]+):(\d+)/", p.stdout.readline())
        host, port = m.group(1), int(m.group(2))
        times = []
        for _ in range(n + 1):
            c = http.client.HTTPConnection(host, port, timeout=300)
            t = time.perf_counter()
            c.request("POST", "/api/map", body)
            r = c.getresponse()
            r.read()
            times.append(time.perf_counter() - t)
            assert r.status == 200, r.status
            c.close()
        return times[0], statistics.median(times[1:])
    finally:
        p.terminate()
        p.wait()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", default=str(REPO / "build/release/vitattn"))
    ap.add_argument("--vit-s16", default="")
    ap.add_argument("-n", type=int, default=10)
    a = ap.parse_args()
    models = [("bundled CIFAR-10 ViT", REPO / "models/vit_cifar10_tintn.safetensors")]
    if a.vit_s16:
        models.append(("random ViT-S/16", Path(a.vit_s16)))
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        jpeg = tmp / "photo.jpg"
        photo(jpeg)
        body = jpeg.read_bytes()
        print(f"1 MP JPEG ({jpeg.stat().st_size} bytes), {os.cpu_count()} cores, {a.bin}")
        for name, model in models:
            first, median = serve_seconds(a.bin, model, body, a.n)
            (tmp / "out").mkdir(exist_ok=True)
            cli, own = cli_seconds(a.bin, model, jpeg, tmp / "out")
            print(f"{name}: serve first map {first * 1000:.0f} ms, next {median * 1000:.0f} ms (median of {a.n}); "
                  f"CLI one image {cli * 1000:.0f} ms as a whole process, {own * 1000:.0f} ms the image's own "
                  f"(--log-json, no start-up or load); serve first / CLI's own {first / own:.2f}")


if __name__ == "__main__":
    sys.exit(main())
