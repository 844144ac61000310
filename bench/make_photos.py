#!/usr/bin/python3
"""Build the benchmark photo folder (not committed, not a test).

    make_photos.py OUT_DIR [--count 24] [--seed 0]

Makes ~24 photo-like images of roughly 0.3 to 2 megapixels from the four
fixture photos in <shared>/images (shared = env VITATTN_SHARED, else
<repo>/../shared) by cropping to various aspect ratios, flipping and resizing.
About two thirds are written as JPEG (quality 90), the rest as PNG, like a real
photo folder. Prints the count and the total megapixels.
"""
import argparse
import os
import sys

import cv2
import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
SOURCES = ["astronaut.png", "chelsea.png", "coffee.png", "rocket.jpg"]
ASPECTS = [(4, 3), (3, 2), (16, 9), (1, 1), (3, 4), (2, 3), (5, 4), (9, 16)]


def shared_dir():
    return os.environ.get("VITATTN_SHARED") or os.path.join(REPO, "..", "shared")


def crop_to_aspect(img, aw, ah, rng):
    h, w = img.shape[:2]
    if w * ah > h * aw:          # too wide: crop width
        cw, ch = h * aw // ah, h
    else:                        # too tall: crop height
        cw, ch = w, w * ah // aw
    # crop a random 80-100% window of the largest box with that aspect
    f = rng.uniform(0.8, 1.0)
    cw, ch = max(16, int(cw * f)), max(16, int(ch * f))
    x0 = int(rng.integers(0, w - cw + 1))
    y0 = int(rng.integers(0, h - ch + 1))
    return img[y0:y0 + ch, x0:x0 + cw]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("out_dir")
    ap.add_argument("--count", type=int, default=24)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()

    src_dir = os.path.join(shared_dir(), "images")
    sources = []
    for name in SOURCES:
        img = cv2.imread(os.path.join(src_dir, name), cv2.IMREAD_COLOR)
        if img is None:
            sys.exit(f"make_photos: cannot read {os.path.join(src_dir, name)}")
        sources.append((os.path.splitext(name)[0], img))

    os.makedirs(args.out_dir, exist_ok=True)
    rng = np.random.default_rng(args.seed)
    # megapixel targets spread evenly over 0.3..2.0 and then shuffled
    targets = np.linspace(0.3, 2.0, args.count)
    rng.shuffle(targets)
    total_mp = 0.0
    for i in range(args.count):
        stem, src = sources[i % len(sources)]
        aw, ah = ASPECTS[i % len(ASPECTS)]
        img = crop_to_aspect(src, aw, ah, rng)
        if i % 3 == 1:
            img = cv2.flip(img, 1)
        elif i % 7 == 5:
            img = cv2.flip(img, 0)
        h, w = img.shape[:2]
        scale = np.sqrt(targets[i] * 1e6 / (w * h))
        nw, nh = max(1, int(round(w * scale))), max(1, int(round(h * scale)))
        big = cv2.resize(img, (nw, nh), interpolation=cv2.INTER_CUBIC)
        if i % 3 == 2:
            path = os.path.join(args.out_dir, f"photo_{i:02d}_{stem}.png")
            ok = cv2.imwrite(path, big)
        else:
            path = os.path.join(args.out_dir, f"photo_{i:02d}_{stem}.jpg")
            ok = cv2.imwrite(path, big, [cv2.IMWRITE_JPEG_QUALITY, 90])
        if not ok:
            sys.exit(f"make_photos: cannot write {path}")
        total_mp += nw * nh / 1e6
    print(f"{args.count} photos, {total_mp:.1f} megapixels total in {args.out_dir}")


if __name__ == "__main__":
    main()
