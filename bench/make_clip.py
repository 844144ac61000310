#!/usr/bin/python3
"""Makes a short clip that pans and zooms over a photo (not committed, not a test).

    bench/make_clip.py PHOTO OUT.mp4 [--size 640x360] [--frames 75] [--fps 25]

A camera-like move: a window of the output's aspect ratio slides from the photo's top-left
towards its bottom-right while it narrows from 90 % to 60 % of the photo, resampled to the
output size. Written as H.264 in MP4 (OpenCV's FFmpeg backend, `avc1`), like a phone clip;
MJPG in AVI when the name ends in .avi. bench/run_video_bench.py and
scripts/make_video_strip.py use it.
"""
import argparse
import sys

import cv2
import numpy as np

FOURCC = {".mp4": "avc1", ".avi": "MJPG"}


def pan_window(photo_w, photo_h, out_w, out_h, t):
    """Crop box (x0, y0, w, h) at time t in [0, 1]: the output's aspect, 90 % → 60 % of the photo."""
    scale = min(photo_w / out_w, photo_h / out_h) * (0.9 - 0.3 * t)
    w, h = out_w * scale, out_h * scale
    x0, y0 = (photo_w - w) * (0.1 + 0.8 * t), (photo_h - h) * (0.1 + 0.8 * t)
    return x0, y0, w, h


def pan_frames(photo, out_w, out_h, n_frames):
    """Yields n_frames BGR frames (out_h, out_w, 3) of the pan over photo."""
    ph, pw = photo.shape[:2]
    for i in range(n_frames):
        x0, y0, w, h = pan_window(pw, ph, out_w, out_h, i / max(1, n_frames - 1))
        # an affine warp resamples a sub-pixel window: the pan is smooth, not stepped by pixels
        m = np.float32([[w / out_w, 0, x0], [0, h / out_h, y0]])
        yield cv2.warpAffine(photo, m, (out_w, out_h), flags=cv2.INTER_LINEAR | cv2.WARP_INVERSE_MAP,
                             borderMode=cv2.BORDER_REFLECT)


def write_clip(photo_path, out_path, out_w, out_h, n_frames, fps):
    photo = cv2.imread(str(photo_path), cv2.IMREAD_COLOR)
    if photo is None:
        raise SystemExit(f"make_clip: {photo_path}: not an image OpenCV can read")
    ext = "." + str(out_path).rsplit(".", 1)[-1].lower()
    if ext not in FOURCC:
        raise SystemExit(f"make_clip: {out_path}: give a .mp4 or .avi name")
    writer = cv2.VideoWriter(str(out_path), cv2.CAP_FFMPEG, cv2.VideoWriter_fourcc(*FOURCC[ext]), fps,
                             (out_w, out_h))
    if not writer.isOpened():
        raise SystemExit(f"make_clip: {out_path}: OpenCV cannot write {FOURCC[ext]} (no FFmpeg backend?)")
    for frame in pan_frames(photo, out_w, out_h, n_frames):
        writer.write(frame)
    writer.release()
    return out_path


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("photo")
    ap.add_argument("out")
    ap.add_argument("--size", default="640x360", help="WxH of the clip")
    ap.add_argument("--frames", type=int, default=75)
    ap.add_argument("--fps", type=float, default=25.0)
    args = ap.parse_args()
    w, h = (int(v) for v in args.size.lower().split("x"))
    write_clip(args.photo, args.out, w, h, args.frames, args.fps)
    print(f"{args.out}: {args.frames} frames {w}x{h} at {args.fps:g} fps", file=sys.stderr)


if __name__ == "__main__":
    main()
