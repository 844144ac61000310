#!/usr/bin/python3
"""Peak RSS per worker, for sizing a cluster job's memory limit (a script, not a test).

    bench/worker_memory.py [--dir D] [--count 8] [--models vit_s16 vit_b16]

For each image set (the benchmark photos, 0.3-2 MP; the same scaled to 12 MP) and model (the
seeded default; random ViT-S/16 and ViT-B/16 checkpoints from bench/make_vit.py), runs
vitattn at -j 1, 2 and 4 over one folder (at least 4 images per worker, so every worker is
busy) under /usr/bin/time and prints the peak RSS. The per-worker peak is the slope from -j 1
to -j 4 ((RSS(4) - RSS(1)) / 3); what is left at -j 1 is the model and the process.
A job's limit is then about: base + -j x per-worker (docs/scaling.md).
Binary: env VITATTN_BIN (default build/release/vitattn). Needs ../shared/images.
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile

import cv2

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
PY = "/usr/bin/python3"


def peak_rss_mb(cmd):
    r = subprocess.run(["/usr/bin/time", "-v"] + cmd, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"{' '.join(cmd)} failed ({r.returncode}):\n{r.stderr[-2000:]}")
    return int(re.search(r"Maximum resident set size \(kbytes\): (\d+)", r.stderr).group(1)) / 1024.0


def scaled_copy(src, dst, megapixels):
    os.makedirs(dst, exist_ok=True)
    for name in sorted(os.listdir(src)):
        img = cv2.imread(os.path.join(src, name), cv2.IMREAD_COLOR)
        f = (megapixels * 1e6 / (img.shape[0] * img.shape[1])) ** 0.5
        cv2.imwrite(os.path.join(dst, os.path.splitext(name)[0] + ".jpg"),
                    cv2.resize(img, None, fx=f, fy=f, interpolation=cv2.INTER_CUBIC), [cv2.IMWRITE_JPEG_QUALITY, 90])


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--dir", help="work folder (default: a temporary one)")
    ap.add_argument("--count", type=int, default=16, help="images per set (>= 4 per worker at -j 4)")
    ap.add_argument("--models", nargs="*", default=["vit_s16", "vit_b16"])
    args = ap.parse_args()
    binary = os.environ.get("VITATTN_BIN", os.path.join(REPO, "build/release/vitattn"))
    with tempfile.TemporaryDirectory(prefix="vitattn-mem-") as tmp:
        work = args.dir or tmp
        photos = os.path.join(work, "photos")
        if not os.path.isdir(photos):
            subprocess.run([PY, os.path.join(HERE, "make_photos.py"), photos, "--count", str(args.count)], check=True,
                           stdout=subprocess.DEVNULL)
        big = os.path.join(work, "photos-12mp")
        if not os.path.isdir(big):
            scaled_copy(photos, big, 12)
        models = [("seeded", [])]
        if args.models:
            subprocess.run([PY, os.path.join(HERE, "make_vit.py"), work, "--models", *args.models], check=True,
                           stdout=subprocess.DEVNULL)
            models += [(m, ["--model", os.path.join(work, f"{m}.safetensors")]) for m in args.models]
        print(f"{'model':8} {'images':18} {'-j 1':>8} {'-j 2':>8} {'-j 4':>8} {'per worker':>11}   (peak RSS, MB)")
        for model, model_args in models:
            for label, folder in (("0.3-2 MP photos", photos), ("12 MP photos", big)):
                rss = {}
                for j in (1, 2, 4):
                    out = os.path.join(work, f"out-{model}-{j}")
                    rss[j] = peak_rss_mb([binary, "-q", "-j", str(j), *model_args, "-o", out, folder])
                per = (rss[4] - rss[1]) / 3
                print(f"{model:8} {label:18} {rss[1]:8.0f} {rss[2]:8.0f} {rss[4]:8.0f} {per:11.0f}", flush=True)


if __name__ == "__main__":
    main()
