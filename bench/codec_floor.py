#!/usr/bin/python3
"""The codec-only floor of the vitattn speed benchmark (a script, not a test).

    codec_floor.py [--loop-cpu FILE] -o OUT images-or-folders...

Decodes each image with OpenCV (the decoder vitattn uses: cv2.imread, IMREAD_COLOR) and
writes it straight back as <stem>_attn.png with cv2.imwrite at OpenCV's default PNG settings,
one image after another on one core (cv2.setNumThreads(0): OpenCV runs serially). Nothing
else: no resize, no model, no colour map, no blend. An overlay has the image's own size, so
this writes as many pixels as vitattn does, and a batch tool that decodes and writes PNGs
with OpenCV cannot be faster than this on one core.

--loop-cpu FILE writes the CPU seconds of the decode/encode loop alone to FILE: the whole
process also pays for starting Python and importing cv2, which run_bench.py reports apart.

Run it with /usr/bin/python3 (Debian cv2).
"""
import argparse
import os
import sys
import time

import cv2

from numpy_pipeline import expand


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("-o", "--output", required=True, help="output folder")
    ap.add_argument("--loop-cpu", help="write the loop's CPU seconds to this file")
    ap.add_argument("inputs", nargs="+", help="image files or folders")
    args = ap.parse_args()

    cv2.setNumThreads(0)  # one core: the floor is what one core's codecs cost
    os.makedirs(args.output, exist_ok=True)
    failed = 0
    start = time.process_time()
    for path in expand(args.inputs):
        img = cv2.imread(path, cv2.IMREAD_COLOR)
        stem = os.path.splitext(os.path.basename(path))[0]
        out_path = os.path.join(args.output, stem + "_attn.png")
        if img is None or not cv2.imwrite(out_path, img):
            print(f"{path}: cannot decode or write", file=sys.stderr)
            failed += 1
    if args.loop_cpu:
        with open(args.loop_cpu, "w") as f:
            f.write(f"{time.process_time() - start:.6f}\n")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
