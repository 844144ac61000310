#!/usr/bin/python3
"""Makes docs/video_strip.jpg, the README's picture of video input: frames of an attention video side by side.

    scripts/make_video_strip.py [--vitattn build/release/vitattn] [--out docs/video_strip.jpg] [-- VITATTN ARGS]

Pans over images/chelsea.png (CC0, images/CREDITS.md) with bench/make_clip.py (480x270, 50 frames
at 25 fps, H.264), runs `vitattn --model models/vit_cifar10_tintn.safetensors CLIP -o TMP` (the
bundled trained CIFAR-10 ViT; other vitattn options after `--` replace that default), reads
the video vitattn wrote, and lays --count evenly spaced frames side by side, each labelled with
its frame number, as one JPEG (quality 85, kept under 200 KB). Written to a temporary name,
then renamed.
"""
import argparse
import glob
import os
import subprocess
import sys
import tempfile

import cv2
import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(REPO, "bench"))
from make_clip import write_clip  # noqa: E402

MAX_BYTES = 200 * 1024


def read_frames(path):
    cap = cv2.VideoCapture(path, cv2.CAP_FFMPEG)
    frames = []
    while True:
        ok, frame = cap.read()
        if not ok:
            break
        frames.append(frame)
    cap.release()
    return frames


def label(img, text):
    font = max(0.4, img.shape[0] / 500)
    at = (6, int(22 * font / 0.5))
    cv2.putText(img, text, at, cv2.FONT_HERSHEY_SIMPLEX, font, (0, 0, 0), 3, cv2.LINE_AA)
    cv2.putText(img, text, at, cv2.FONT_HERSHEY_SIMPLEX, font, (255, 255, 255), 1, cv2.LINE_AA)


def strip(frames, count, width, gap):
    """count evenly spaced frames, each scaled to `width` px, side by side with white gaps."""
    picks = np.linspace(0, len(frames) - 1, count).round().astype(int)
    tiles = []
    for i in picks:
        f = frames[i]
        tile = cv2.resize(f, (width, round(f.shape[0] * width / f.shape[1])), interpolation=cv2.INTER_AREA)
        label(tile, f"frame {i}")
        tiles.append(tile)
    h = tiles[0].shape[0]
    out = np.full((h, count * width + (count - 1) * gap, 3), 255, np.uint8)
    for k, tile in enumerate(tiles):
        out[:, k * (width + gap):k * (width + gap) + width] = tile
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--vitattn", default=os.environ.get("VITATTN_BIN", os.path.join(REPO, "build", "release", "vitattn")))
    ap.add_argument("--photo", default=os.path.join(REPO, "images", "chelsea.png"))
    ap.add_argument("--out", default=os.path.join(REPO, "docs", "video_strip.jpg"))
    ap.add_argument("--count", type=int, default=5)
    ap.add_argument("--width", type=int, default=240, help="width of each frame in the strip")
    ap.add_argument("vitattn_args", nargs="*", help="after --: vitattn options (default: the CIFAR-10 model)")
    args = ap.parse_args()
    vit_args = args.vitattn_args or ["--model", os.path.join(REPO, "models", "vit_cifar10_tintn.safetensors")]

    with tempfile.TemporaryDirectory(prefix="vitattn-strip-") as tmp:
        clip = os.path.join(tmp, "clip.mp4")
        write_clip(args.photo, clip, 480, 270, 50, 25.0)
        subprocess.run([args.vitattn, "-q", *vit_args, clip, "-o", tmp], check=True)
        videos = glob.glob(os.path.join(tmp, "clip_attn.*"))
        if not videos:
            sys.exit(f"make_video_strip: vitattn wrote no clip_attn video in {tmp}")
        frames = read_frames(videos[0])
        if len(frames) < args.count:
            sys.exit(f"make_video_strip: {videos[0]}: {len(frames)} frames, fewer than {args.count}")
        picture = strip(frames, args.count, args.width, gap=4)
        ok, data = cv2.imencode(".jpg", picture, [cv2.IMWRITE_JPEG_QUALITY, 85])
        if not ok or len(data) > MAX_BYTES:
            sys.exit(f"make_video_strip: the strip is {len(data)} bytes, over {MAX_BYTES}: use a smaller --width")
        part = args.out + ".part"
        with open(part, "wb") as f:
            f.write(data.tobytes())
        os.replace(part, args.out)
    print(f"{args.out}: {picture.shape[1]}x{picture.shape[0]}, {len(data) // 1024} KB, frames of {len(frames)}",
          file=sys.stderr)


if __name__ == "__main__":
    main()
