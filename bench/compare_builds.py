#!/usr/bin/python3
"""The measuring half of bench/compare_builds.sh: compare_builds.py WORK OLD NEW RUNS.

WORK holds vit_s16.safetensors (bench/make_vit.py); the photos are made here. Each round runs
old and new once, in alternating order; the first round is a warm-up and not counted.
"""
import resource
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

import cv2
import numpy as np


def make_photos(folder):
    folder.mkdir()
    rng = np.random.default_rng(0)
    for i in range(24):  # photo sizes, smooth content with one hard-edged square
        h, w = [(480, 640), (768, 1024), (1200, 1600)][i % 3]
        img = cv2.resize(rng.integers(0, 255, (12, 16, 3), np.uint8), (w, h), interpolation=cv2.INTER_CUBIC)
        cv2.rectangle(img, (w // 4, h // 4), (w // 2, h // 2), (240, 240, 240), -1)
        cv2.imwrite(str(folder / f"p{i:02d}.jpg"), img, [cv2.IMWRITE_JPEG_QUALITY, 90])


def timed(cmd):
    """(wall seconds, CPU seconds user + sys) of one child process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main():
    work, old, new, runs = Path(sys.argv[1]), sys.argv[2], sys.argv[3], int(sys.argv[4])
    make_photos(work / "photos")
    jobs = {
        "batch": lambda b, out: [f"{b}/vitattn", "-q", "-j", "2", str(work / "photos"), "-o", str(out)],
        "forward": lambda b, out: [f"{b}/vitattn_forward_bench", "--model", str(work / "vit_s16.safetensors"),
                                   "--threads", "2", "--repeat", "5"],
    }
    print(f"old: {old}\nnew: {new}\n{runs} rounds, old and new alternating, after one warm-up round")
    print(f"{'work':8} {'build':5} {'wall median s':>14} {'cpu median s':>13}")
    for name, command in jobs.items():
        times = {"old": [], "new": []}
        for i in range(runs + 1):
            order = (("old", old), ("new", new)) if i % 2 == 0 else (("new", new), ("old", old))
            for who, build in order:
                out = work / f"out_{who}"
                shutil.rmtree(out, ignore_errors=True)
                t = timed(command(build, out))
                if i > 0:
                    times[who].append(t)
        med = {who: (statistics.median(w for w, _ in ts), statistics.median(c for _, c in ts)) for who, ts in times.items()}
        for who in ("old", "new"):
            print(f"{name:8} {who:5} {med[who][0]:14.3f} {med[who][1]:13.3f}")
        print(f"{name:8} new/old: wall {med['new'][0] / med['old'][0]:.3f}, cpu {med['new'][1] / med['old'][1]:.3f}")


if __name__ == "__main__":
    main()
