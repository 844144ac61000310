#!/usr/bin/python3
"""A checkpoint over a folder of photos, vitattn against the PyTorch script (a script, not a test):

  bench/run_checkpoint_batch.py [--rounds 3] [--models vit_s16 vit_b16] [--photos DIR]
                                [--megapixels MP] [--models-dir DIR] [--jobs 2]

Random-weight ViT-S/16 and ViT-B/16 in timm names (bench/make_vit.py) and 24 photos
(bench/make_photos.py, 0.3-2 MP, 27.6 MP in all, JPEG and PNG; --megapixels: each shrunk
by one factor to that total, e.g. 5.2, the size of the run the speed work started from;
--photos: another folder). Per model, in each round, in turn (each first in turn, so drift and
other load hit all alike), whole processes, wall and CPU (user + system, from wait4):

  vitattn   VITATTN_BIN (default build/release/vitattn) -q -j 2 --model M PHOTOS -o OUT
  pytorch   bench/torch_checkpoint_batch.py: the script an ML engineer writes (eager timm-style ViT,
            batch 8, torch.set_num_threads(2), last layer's class-token attention, cv2 colour map,
            blend at the photo's size, PNG)
  forward   build/release/vitattn_forward_bench --threads 1: the forward alone, its CPU per forward
  onednn    build/release/vitattn_dnnl_products --threads 1: that forward's matrix products alone
            through oneDNN (f32; bench/run_dnnl_bench.py), CPU per forward: the machine's GEMM
            limit for a photo (left out when the build has no oneDNN)
  seeded    vitattn -q -j 2 PHOTOS -o OUT with the seeded head (no checkpoint): what the batch costs
            besides the checkpoint's forward (start, decoding, resizing, drawing, PNG writing)

Prints medians: seconds each, PyTorch / vitattn (wall and CPU), and vitattn's CPU per photo (the
whole process's CPU / photos) against the forward's CPU per forward at 1 thread, with the seeded
head's CPU per photo and oneDNN's products per photo beside them. First checks that both sides
draw the same maps (vitattn's --save-attention `_cls.npy` against the script's, per photo,
max |diff| <= 1e-3 of the map's maximum) and write one PNG of the photo's size per photo; refuses to run when numpy or torch is
not on OpenBLAS, and drops OPENBLAS_CORETYPE so OpenBLAS picks its kernels for this CPU
(printed, with the GEMM kernel vitattn runs).
"""
import argparse
import glob
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

import cv2
import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, HERE)
import run_model_bench as rmb  # noqa: E402  (check_blas, use_openblas_own_kernels, make_models, run_json)
import run_dnnl_bench  # noqa: E402  (oneDNN's products of one forward)


def die(msg):
    print(f"run_checkpoint_batch: {msg}", file=sys.stderr)
    sys.exit(2)


def timed(cmd, log):
    """(wall seconds, CPU seconds user + system) of one whole child process; dies on failure."""
    with open(log, "w") as out:
        t0 = time.perf_counter()
        p = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT)
        _, status, ru = os.wait4(p.pid, 0)
        wall = time.perf_counter() - t0
    p.returncode = os.waitstatus_to_exitcode(status)
    if p.returncode != 0:
        with open(log) as f:
            die(f"failed ({p.returncode}): {' '.join(cmd)}\n{f.read()[-2000:]}")
    return wall, ru.ru_utime + ru.ru_stime


def photo_stems(folder):
    exts = (".jpg", ".jpeg", ".png")
    return sorted(os.path.splitext(f)[0] for f in os.listdir(folder) if f.lower().endswith(exts))


def check_same_work(vitattn, torch_cmd, model, photos, work, jobs):
    """Both sides' maps per photo agree; each wrote one PNG of its photo's size per photo."""
    ours, theirs = os.path.join(work, "check_vitattn"), os.path.join(work, "check_torch")
    for d in (ours, theirs):
        shutil.rmtree(d, ignore_errors=True)
    maps = os.path.join(work, "check_torch_maps.npz")
    timed([vitattn, "-q", "-j", str(jobs), "--model", model, "--save-attention", photos, "-o", ours],
          os.path.join(work, "check_vitattn.log"))
    timed(torch_cmd(theirs) + ["--save-maps", maps], os.path.join(work, "check_torch.log"))
    theirs_maps = np.load(maps)
    worst = 0.0
    for stem in photo_stems(photos):
        a = np.load(os.path.join(ours, f"{stem}_cls.npy"))
        b = theirs_maps[stem]
        if a.shape != b.shape:
            die(f"{stem}: vitattn's map is {a.shape}, the script's {b.shape}: not the same work")
        diff = float(np.abs(a - b).max()) / float(np.abs(b).max())
        worst = max(worst, diff)
        if not diff <= 1e-3:
            die(f"{stem}: vitattn's map and the script's differ by {diff:.2e} of the map's maximum")
        photo = next(p for p in glob.glob(os.path.join(photos, stem + ".*")))
        h, w = cv2.imread(photo, cv2.IMREAD_UNCHANGED).shape[:2]
        for out in (ours, theirs):
            png = cv2.imread(os.path.join(out, f"{stem}_attn.png"), cv2.IMREAD_UNCHANGED)
            if png is None or png.shape[:2] != (h, w):
                die(f"{out}/{stem}_attn.png: missing or not {w}x{h}")
    print(f"check: {len(theirs_maps.files)} maps, vitattn vs the script: max |diff| {worst:.2e} of the map's "
          "maximum (tolerance 1e-3); every PNG at its photo's size")


def shrink_photos(folder, total_mp):
    """Every photo in folder shrunk (INTER_AREA) by one factor so that they hold total_mp in all."""
    files = [os.path.join(folder, f) for f in sorted(os.listdir(folder))]
    images = [cv2.imread(f, cv2.IMREAD_UNCHANGED) for f in files]
    scale = (total_mp * 1e6 / sum(img.shape[0] * img.shape[1] for img in images)) ** 0.5
    if scale >= 1:
        die(f"--megapixels {total_mp}: the photos hold less than that already")
    for f, img in zip(files, images):
        size = (max(16, round(img.shape[1] * scale)), max(16, round(img.shape[0] * scale)))
        params = [cv2.IMWRITE_JPEG_QUALITY, 90] if f.lower().endswith((".jpg", ".jpeg")) else []
        if not cv2.imwrite(f, cv2.resize(img, size, interpolation=cv2.INTER_AREA), params):
            die(f"{f}: cannot write")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--models", nargs="+", default=list(rmb.MODELS), choices=list(rmb.MODELS))
    ap.add_argument("--photos", help="folder of photos (default: bench/make_photos.py's 24)")
    ap.add_argument("--megapixels", type=float, help="shrink make_photos.py's photos to this total")
    ap.add_argument("--models-dir", help="where the checkpoints are or are written (default: a temp folder)")
    ap.add_argument("--jobs", type=int, default=2, help="vitattn -j and the script's torch threads")
    ap.add_argument("--forward-repeat", type=int, default=5)
    args = ap.parse_args()

    rmb.check_blas()
    rmb.use_openblas_own_kernels()
    build = os.path.join(REPO, "build", "release")
    vitattn = os.environ.get("VITATTN_BIN") or os.path.join(build, "vitattn")
    forward = os.path.join(os.path.dirname(os.path.abspath(vitattn)), "vitattn_forward_bench")
    for exe in (vitattn, forward):
        if not os.access(exe, os.X_OK):
            die(f"{exe} is not an executable file (cmake --preset release && cmake --build --preset release)")
    dnnl = run_dnnl_bench.find_products(os.path.dirname(os.path.abspath(vitattn)))
    if dnnl is None:
        print("no vitattn_dnnl_products beside vitattn (a build without oneDNN): no oneDNN column")
    work = tempfile.mkdtemp(prefix="vitattn-checkpoint-batch-")
    try:
        models_dir = args.models_dir or os.path.join(work, "models")
        os.makedirs(models_dir, exist_ok=True)
        paths = rmb.make_models(models_dir, args.models)
        photos = args.photos
        if not photos:
            photos = os.path.join(work, "photos")
            subprocess.run([rmb.PY, os.path.join(HERE, "make_photos.py"), photos], check=True)
            if args.megapixels:
                shrink_photos(photos, args.megapixels)
        stems = photo_stems(photos)
        mp = sum(np.prod(cv2.imread(os.path.join(photos, f), cv2.IMREAD_UNCHANGED).shape[:2])
                 for f in os.listdir(photos) if os.path.splitext(f)[0] in stems) / 1e6
        n = len(stems)
        print(f"photos: {n} in {photos}, {mp:.1f} MP; vitattn: {vitattn} -j {args.jobs}; script: batch 8, "
              f"{args.jobs} torch threads")
        rows = []
        for name in args.models:
            label = rmb.MODELS[name][0]
            model = paths[name]
            torch_cmd = lambda out: [rmb.PY, os.path.join(HERE, "torch_checkpoint_batch.py"),  # noqa: E731
                                     "--model", model, "--threads", str(args.jobs), photos, out]
            check_same_work(vitattn, torch_cmd, model, photos, work, args.jobs)
            out = lambda way: os.path.join(work, f"out_{way}")  # noqa: E731
            ways = {
                "vitattn": [vitattn, "-q", "-j", str(args.jobs), "--model", model, photos, "-o", out("vitattn")],
                "pytorch": torch_cmd(out("pytorch")),
                "seeded": [vitattn, "-q", "-j", str(args.jobs), photos, "-o", out("seeded")],
            }
            fwd_cmd = [forward, "--model", model, "--threads", "1", "--repeat", str(args.forward_repeat)]
            names = list(ways) + ["forward"] + (["onednn"] if dnnl else [])
            dnnl_cmd = run_dnnl_bench.products_cmd(dnnl, name, 1, args.forward_repeat) if dnnl else None
            got = {w: [] for w in names}
            kernel, setup = "?", []
            print(f"{label}: load average before {os.getloadavg()[0]:.2f}", flush=True)
            for rnd in range(args.rounds):
                line = []
                for way in rmb.round_order(names, rnd):
                    if way == "forward":
                        res, _ = rmb.run_json(fwd_cmd)
                        kernel = res["gemm_kernel"]
                        got[way].append((res["median"], res["cpu_median"]))
                    elif way == "onednn":
                        res, _ = rmb.run_json(dnnl_cmd)
                        got[way].append((res["median"], res["cpu_median"]))
                    else:
                        shutil.rmtree(out(way), ignore_errors=True)
                        got[way].append(timed(ways[way], os.path.join(work, f"{way}.log")))
                        if way == "pytorch":  # its own JSON line: the seconds before its first photo
                            with open(os.path.join(work, "pytorch.log")) as f:
                                res = json.loads(f.read().strip().splitlines()[-1])
                                setup.append((res["setup_seconds"], res["forward_seconds"],
                                              res["forward_cpu_seconds"] / len(stems)))
                    line.append(f"{way} {got[way][-1][0]:.2f} s (CPU {got[way][-1][1]:.2f} s)")
                print(f"  round {rnd + 1}: " + ", ".join(line), flush=True)
            print(f"{label}: load average after {os.getloadavg()[0]:.2f}; vitattn's GEMM kernel: {kernel}; "
                  f"the script, medians: imports (torch, cv2) {statistics.median(s for s, _, _ in setup):.2f} s, "
                  f"its forwards (batch 8) {statistics.median(f for _, f, _ in setup):.2f} s, "
                  f"their CPU per photo {1000 * statistics.median(c for _, _, c in setup):.0f} ms",
                  flush=True)
            med = {w: (statistics.median(s for s, _ in v), statistics.median(c for _, c in v)) for w, v in got.items()}
            rows.append((label, med))
        print(f"\n{n} photos ({mp:.1f} MP), medians of {args.rounds} rounds, whole processes (vitattn -j {args.jobs}, "
              f"the script with {args.jobs} threads); forward: vitattn_forward_bench at 1 thread, CPU per forward\n")
        print("| model | vitattn wall (CPU) | PyTorch script wall (CPU) | PyTorch / vitattn, wall (CPU) | "
              "vitattn CPU per photo | forward CPU (1 thread) | per photo / forward | "
              "seeded head's batch, CPU per photo |" + (" oneDNN's products per photo, CPU (1 thread) |" if dnnl else ""))
        print("| --- " * (8 + bool(dnnl)) + "|")
        for label, med in rows:
            (vw, vc), (tw, tc), (_, fc) = med["vitattn"], med["pytorch"], med["forward"]
            sc = med["seeded"][1]
            print(f"| {label} | {vw:.2f} s ({vc:.2f} s) | {tw:.2f} s ({tc:.2f} s) | **{tw / vw:.2f}×** "
                  f"({tc / vc:.2f}×) | {1000 * vc / n:.0f} ms | {1000 * fc:.0f} ms | "
                  f"**{vc / n / fc:.2f}×** | {1000 * sc / n:.0f} ms |" +
                  (f" {1000 * med['onednn'][1]:.0f} ms |" if dnnl else ""))
    finally:
        shutil.rmtree(work, ignore_errors=True)  # the checkpoints too, unless --models-dir


if __name__ == "__main__":
    main()
