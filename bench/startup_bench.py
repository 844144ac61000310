#!/usr/bin/env python3
"""What a start of vitattn costs, before vs after a change: CPU seconds (user + sys, from
wait4) of `vitattn --version`, median of N runs of each binary interleaved, and the libraries
the dynamic loader opens (LD_DEBUG=files) for a run on one image and on an image and a clip
(whether OpenCV's videoio is among them: only the video module, loaded for videos, needs it).

    /usr/bin/python3 bench/startup_bench.py BASE_BINARY NEW_BINARY [N]   (N = 25)

Figures, not a test: read them beside the load average (other builds inflate them).
"""
import glob
import os
import re
import statistics
import subprocess
import sys
import tempfile

import cv2
import numpy as np


def cpu_seconds(binary):
    pid = os.fork()
    if pid == 0:
        null = os.open(os.devnull, os.O_WRONLY)
        os.dup2(null, 1)
        os.dup2(null, 2)
        os.execv(binary, [binary, "--version"])
    _, _, usage = os.wait4(pid, 0)
    return usage.ru_utime + usage.ru_stime


def opened_libraries(binary, scratch, *args):
    """The set of library files the loader opened (at start or by dlopen) for `binary args`."""
    trace = os.path.join(scratch, "ld-trace")
    for f in glob.glob(trace + "*"):
        os.remove(f)
    env = dict(os.environ, LD_DEBUG="files", LD_DEBUG_OUTPUT=trace)
    subprocess.run([binary, *args], env=env, capture_output=True, check=False)
    text = "".join(open(f, errors="replace").read() for f in glob.glob(trace + "*"))
    return set(re.findall(r"file=(\S+) \[0\];  (?:needed|dynamically)", text))


def main():
    base, new = sys.argv[1], sys.argv[2]
    n = int(sys.argv[3]) if len(sys.argv) > 3 else 25
    times = {base: [], new: []}
    for _ in range(n):
        for b in (base, new):
            times[b].append(cpu_seconds(b))
    with tempfile.TemporaryDirectory(prefix="vitattn-startup-") as scratch:
        folder = os.path.join(scratch, "in")
        os.mkdir(folder)
        cv2.imwrite(os.path.join(folder, "photo.png"), np.zeros((32, 32, 3), np.uint8))
        image_only = ["--img-size", "32", os.path.join(folder, "photo.png"), "-o", os.path.join(scratch, "out")]
        w = cv2.VideoWriter(os.path.join(folder, "clip.avi"), cv2.CAP_FFMPEG, cv2.VideoWriter_fourcc(*"MJPG"), 10.0, (32, 32))
        for t in range(3):
            w.write(np.full((32, 32, 3), 60 * t, np.uint8))
        w.release()
        with_video = ["--img-size", "32", folder, "-o", os.path.join(scratch, "out2")]
        for name, b in (("base", base), ("new", new)):
            t = times[b]
            img, vid = opened_libraries(b, scratch, *image_only), opened_libraries(b, scratch, *with_video)
            has = lambda libs: any("libopencv_videoio" in l for l in libs)
            print(f"{name}: --version CPU median {statistics.median(t) * 1000:.0f} ms (min {min(t) * 1000:.0f}, "
                  f"max {max(t) * 1000:.0f}, {n} runs); libraries opened: image {len(img)} (videoio {has(img)}), "
                  f"image + clip {len(vid)} (videoio {has(vid)})")
    print(f"--version CPU, new / base: {statistics.median(times[new]) / statistics.median(times[base]):.2f}")
    print(f"load average: {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
