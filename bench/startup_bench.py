#!/usr/bin/env python3
"""What a start of vitattn costs, before vs after a change: CPU seconds (user + sys, from
wait4) of `vitattn --version` and of a one-image seeded run on a 0.3 MP JPEG (640x480, the
seeded model at its default 224 px, PNG overlay), median of N runs of each binary
interleaved, the new binary's beside the base's (new / base); and the libraries the dynamic loader opens
(LD_DEBUG=files) for --version, for a run on one JPEG, on one PNG and on an image and a clip
(whether OpenCV's videoio and imgcodecs are among them: only the video module and the codec
module, loaded for videos and for formats other than JPEG, need them).

    /usr/bin/python3 bench/startup_bench.py BASE_BINARY NEW_BINARY [N]   (N = 25)

The processes are started with posix_spawn (vfork: the child's CPU before exec is not
Python's page tables being copied, as it would be with fork; docs/performance.md). Figures,
not a test: read them beside the load average (other builds inflate them).
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



def cpu_seconds(binary, args):
    null = os.open(os.devnull, os.O_WRONLY)
    try:
        pid = os.posix_spawn(binary, [binary, *args], os.environ,
                             file_actions=[(os.POSIX_SPAWN_DUP2, null, 1), (os.POSIX_SPAWN_DUP2, null, 2)])
    finally:
        os.close(null)
    _, status, usage = os.wait4(pid, 0)
    if os.waitstatus_to_exitcode(status) != 0:
        sys.exit(f"{binary} {' '.join(args)}: exit {os.waitstatus_to_exitcode(status)}")
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


def photo(h, w):
    """Smooth gradients plus noise: a JPEG of about the size of a photo's."""
    y, x = np.mgrid[0:h, 0:w]
    img = np.stack([x * 255 // w, y * 255 // h, (x + y) % 256], -1)
    return np.clip(img + np.random.default_rng(0).integers(-12, 13, img.shape), 0, 255).astype(np.uint8)


def ms(t):
    return f"{statistics.median(t) * 1000:.0f} ms (min {min(t) * 1000:.0f}, max {max(t) * 1000:.0f})"


def main():
    base, new = sys.argv[1], sys.argv[2]
    n = int(sys.argv[3]) if len(sys.argv) > 3 else 25
    with tempfile.TemporaryDirectory(prefix="vitattn-startup-") as scratch:
        jpeg = os.path.join(scratch, "photo.jpg")
        cv2.imwrite(jpeg, photo(480, 640), [cv2.IMWRITE_JPEG_QUALITY, 90])
        runs = {"--version": ["--version"], "seeded run, 0.3 MP JPEG": [jpeg, "-o", os.path.join(scratch, "o")]}
        times = {(b, r): [] for b in (base, new) for r in runs}
        for _ in range(n):
            for r, args in runs.items():
                for b in (base, new):
                    times[(b, r)].append(cpu_seconds(b, args))
        for r in runs:
            tb, tn = times[(base, r)], times[(new, r)]
            print(f"{r}: CPU median base {ms(tb)}, new {ms(tn)}; new / base {statistics.median(tn) / statistics.median(tb):.2f} "
                  f"({n} interleaved runs)")

        folder = os.path.join(scratch, "in")
        os.mkdir(folder)
        cv2.imwrite(os.path.join(folder, "photo.png"), np.zeros((32, 32, 3), np.uint8))
        png_only = ["--img-size", "32", os.path.join(folder, "photo.png"), "-o", os.path.join(scratch, "out")]
        jpeg_only = ["--img-size", "32", jpeg, "-o", os.path.join(scratch, "out1")]
        w = cv2.VideoWriter(os.path.join(folder, "clip.avi"), cv2.CAP_FFMPEG, cv2.VideoWriter_fourcc(*"MJPG"), 10.0, (32, 32))
        for t in range(3):
            w.write(np.full((32, 32, 3), 60 * t, np.uint8))
        w.release()
        with_video = ["--img-size", "32", folder, "-o", os.path.join(scratch, "out2")]
        for name, b in (("base", base), ("new", new)):
            has = lambda libs, what: any(what in l for l in libs)
            ver = opened_libraries(b, scratch, "--version")
            jpg, png = opened_libraries(b, scratch, *jpeg_only), opened_libraries(b, scratch, *png_only)
            vid = opened_libraries(b, scratch, *with_video)
            print(f"{name}: libraries opened: --version {len(ver)}, JPEG {len(jpg)} (imgcodecs {has(jpg, 'imgcodecs')}), "
                  f"PNG {len(png)} (imgcodecs {has(png, 'imgcodecs')}, videoio {has(png, 'videoio')}), "
                  f"image + clip {len(vid)} (videoio {has(vid, 'videoio')})")
    print(f"load average: {os.getloadavg()[0]:.1f}; CPU: {cpu_name()}")


def cpu_name():
    for line in open("/proc/cpuinfo"):
        if line.startswith("model name"):
            return f"{line.split(':', 1)[1].strip()}, {os.cpu_count()} cores"
    return "unknown"


if __name__ == "__main__":
    main()
