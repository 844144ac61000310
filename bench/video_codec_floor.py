#!/usr/bin/python3
"""The codec-only floor of bench/run_video_bench.sh: decode every frame and encode it again.

    bench/video_codec_floor.py IN.mp4 OUT.mp4 [--max-frames M]

cv2.VideoCapture reads IN through OpenCV's FFmpeg backend, and each frame goes straight to a
cv2.VideoWriter with the codec vitattn writes (H.264 `avc1` in .mp4, MJPG in .avi), at the
input's size and frame rate: no model, no drawing. No tool that decodes and re-encodes the
clip with these libraries can be faster, so vitattn's time over this one is what its model
and drawing cost on top. Prints one JSON line: frames, loop seconds and CPU seconds (first
read to the writer's release), fps.
"""
import argparse
import json
import os
import sys
import time

import cv2

FOURCC = {".mp4": "avc1", ".avi": "MJPG"}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("input")
    ap.add_argument("output")
    ap.add_argument("--max-frames", type=int, default=0, help="0: every frame")
    args = ap.parse_args()
    ext = os.path.splitext(args.output)[1].lower()
    if ext not in FOURCC:
        sys.exit(f"video_codec_floor: {args.output}: give a .mp4 or .avi name")

    t0, c0 = time.perf_counter(), time.process_time()
    cap = cv2.VideoCapture(args.input, cv2.CAP_FFMPEG)
    if not cap.isOpened():
        sys.exit(f"video_codec_floor: {args.input}: cannot open")
    fps = cap.get(cv2.CAP_PROP_FPS)
    writer, count = None, 0
    while not args.max_frames or count < args.max_frames:
        ok, frame = cap.read()
        if not ok:
            break
        if writer is None:
            writer = cv2.VideoWriter(args.output, cv2.CAP_FFMPEG, cv2.VideoWriter_fourcc(*FOURCC[ext]), fps,
                                     (frame.shape[1], frame.shape[0]))
        writer.write(frame)
        count += 1
    cap.release()
    if writer is not None:
        writer.release()
    seconds, cpu = time.perf_counter() - t0, time.process_time() - c0
    if count == 0:
        sys.exit(f"video_codec_floor: {args.input}: no frame decoded")
    print(json.dumps({"way": "floor", "frames": count, "seconds": seconds, "cpu_seconds": cpu,
                      "fps": count / seconds, "opencv": cv2.__version__}))


if __name__ == "__main__":
    main()
