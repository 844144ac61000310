#!/usr/bin/python3
"""Video benchmark (a script, not a test). Run via bench/run_video_bench.sh.

Makes a clip (bench/make_clip.py: a pan over rocket.jpg from the shared photos, 640x360,
75 frames at 25 fps, H.264) and a random ViT-S/16 at 224 px (bench/make_vit.py), then, in each
round, runs four ways on that clip, in rotating order so that drift and other load hit all alike:

  seeded    vitattn CLIP -o OUT                      (the seeded head)
  vits16    vitattn --model vit_s16.safetensors CLIP -o OUT
  pytorch   bench/dino_video_loop.py: DINO's video_generation.py loop on the same model and
            frames (cv2 decoding, torch forward on OpenBLAS, cv2 writing)
  floor     bench/video_codec_floor.py: decode and re-encode the frames with cv2, no model

Each writes a video with the codec vitattn writes (the floor and the PyTorch loop copy
vitattn's container: H.264 in .mp4, else MJPG in .avi). The first round is a warm-up and is not
counted. Prints the median frames per second of each way, vits16 fps / pytorch fps and seeded
seconds / floor seconds, with the CPU seconds (getrusage) beside them, and, beside the ways that
run the ViT-S/16 forward, what that forward's matrix products alone take through oneDNN for as
many frames at the same threads (bench/run_dnnl_bench.py's vitattn_dnnl_products, f32, taken
from beside the vitattn binary; the column is left out when that build has no oneDNN). The
PyTorch loop and the floor run without OPENBLAS_CORETYPE, so OpenBLAS picks its kernels for this
CPU (printed).
vitattn is timed as a whole process (start, model load, every frame, exit); the PyTorch loop
and the floor from their first frame read to their writer's release (their `import torch` and
model build are left out), so the ratios are if anything against vitattn.

Before timing, a check that the ways do the same work: vitattn's per-frame maps
(--save-attention) against the PyTorch loop's on the same frames, and every output's frame
count. If this build of vitattn does not read videos, says so and times the PyTorch loop and
the floor alone. Refuses to run unless numpy and torch use OpenBLAS.
"""
import argparse
import glob
import json
import os
import resource
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
PY = "/usr/bin/python3"
WAYS = ("seeded", "vits16", "pytorch", "floor")

sys.path.insert(0, HERE)
from make_clip import write_clip  # noqa: E402
from run_model_bench import check_blas, round_order, use_openblas_own_kernels  # noqa: E402
import run_dnnl_bench  # noqa: E402  (oneDNN's products of one forward)


def die(msg):
    print(f"run_video_bench: {msg}", file=sys.stderr)
    sys.exit(2)


def shared_dir():
    return os.environ.get("VITATTN_SHARED") or os.path.join(REPO, "..", "shared")


def build_release():
    """build/release/vitattn, configured and brought up to date (env VITATTN_BIN: that binary instead)."""
    binary = os.environ.get("VITATTN_BIN")
    if binary:
        if not os.access(binary, os.X_OK):
            die(f"VITATTN_BIN={binary} is not an executable file")
        return binary
    build = os.path.join(REPO, "build", "release")
    if not os.path.exists(os.path.join(build, "build.ninja")):
        subprocess.run(["cmake", "--preset", "release"], cwd=REPO, check=True, stdout=subprocess.DEVNULL)
    r = subprocess.run(["cmake", "--build", "--preset", "release", "--target", "vitattn"], cwd=REPO,
                       capture_output=True, text=True)
    if r.returncode != 0:
        die(f"release build failed:\n{r.stdout[-3000:]}{r.stderr[-2000:]}")
    return os.path.join(build, "vitattn")


def timed(cmd):
    """(wall seconds, CPU seconds user + sys, stdout) of one child process; dies on failure."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    r = subprocess.run(cmd, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if r.returncode != 0:
        die(f"failed ({r.returncode}): {shlex.join(cmd)}\n{r.stderr[-2000:]}")
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime), r.stdout


def video_info(path):
    import cv2
    cap = cv2.VideoCapture(path, cv2.CAP_FFMPEG)
    if not cap.isOpened():
        return None
    fourcc = int(cap.get(cv2.CAP_PROP_FOURCC))
    n = 0
    while cap.read()[0]:
        n += 1
    info = {"frames": n, "fps": cap.get(cv2.CAP_PROP_FPS), "width": int(cap.get(cv2.CAP_PROP_FRAME_WIDTH)),
            "height": int(cap.get(cv2.CAP_PROP_FRAME_HEIGHT)),
            "fourcc": "".join(chr((fourcc >> (8 * i)) & 0xFF) for i in range(4))}
    cap.release()
    return info


def vitattn_output(out_dir, stem):
    """The video vitattn wrote for STEM in out_dir (.mp4 or the .avi fallback), or None."""
    found = [p for ext in (".mp4", ".avi") for p in glob.glob(os.path.join(out_dir, f"{stem}_attn{ext}"))]
    return found[0] if found else None


def probe_vitattn(vitattn, clip, work, threads):
    """Runs the seeded head once on the clip. Returns (video path, None) or (None, why not)."""
    out = os.path.join(work, "probe")
    shutil.rmtree(out, ignore_errors=True)
    r = subprocess.run([vitattn, "-q", "-j", str(threads), clip, "-o", out], capture_output=True, text=True)
    video = vitattn_output(out, "clip")
    if r.returncode != 0 or video is None:
        why = (r.stderr.strip().splitlines() or [f"exit {r.returncode}, no clip_attn.mp4/.avi"])[-1]
        return None, why
    return video, None


def check_same_work(vitattn, model, clip, work, threads, clip_info, out_ext):
    """vitattn's maps vs the PyTorch loop's on the same frames; every way's frame count."""
    out = os.path.join(work, "check_vitattn")
    shutil.rmtree(out, ignore_errors=True)
    timed([vitattn, "-q", "-j", str(threads), "--model", model, "--save-attention", clip, "-o", out])
    ours = [np.load(p) for p in glob.glob(os.path.join(out, "*.npy"))]
    ours = [a for a in ours if a.ndim == 3 and a.shape[0] == clip_info["frames"]]
    theirs_path = os.path.join(work, "check_torch.npy")
    timed([PY, os.path.join(HERE, "dino_video_loop.py"), "--model", model, "--threads", str(threads),
           "--save-maps", theirs_path, clip, os.path.join(work, "check_torch" + out_ext)])
    theirs = np.load(theirs_path)
    if not ours:
        print(f"check: no [frames, grid_h, grid_w] .npy from --save-attention in {out}: maps not compared")
    else:
        a = ours[0]
        if a.shape != theirs.shape:
            die(f"vitattn's maps are {a.shape}, the PyTorch loop's {theirs.shape}: not the same work")
        diff = float(np.abs(a - theirs).max())
        print(f"check: ViT-S/16 per-frame class-token maps {a.shape}, vitattn vs the PyTorch loop: "
              f"max |diff| {diff:.2e} (max {float(theirs.max()):.2e})")
        if not diff <= 1e-3 * float(theirs.max()):
            die("vitattn and the PyTorch loop draw different maps from the same frames")
    for path in (vitattn_output(out, "clip"), os.path.join(work, "check_torch" + out_ext)):
        info = video_info(path)
        if not info or (info["frames"], info["width"], info["height"]) != \
                (clip_info["frames"], clip_info["width"], clip_info["height"]):
            die(f"{path}: {info} does not match the clip {clip_info}")


def bench(ways, rounds):
    """ways: name → (command, reads its own JSON). Returns name → list of (seconds, cpu, process wall)."""
    names = list(ways)
    got = {n: [] for n in names}
    for rnd in range(rounds + 1):
        order = round_order(names, rnd)
        line = []
        for way in order:
            cmd, out_dir, own = ways[way]
            if out_dir:
                shutil.rmtree(out_dir, ignore_errors=True)
            wall, cpu, stdout = timed(cmd)
            seconds = wall
            if own:  # the loop's own time and CPU, from its JSON line
                res = json.loads(stdout.strip().splitlines()[-1])
                seconds, cpu = res["seconds"], res["cpu_seconds"]
            if rnd > 0:
                got[way].append((seconds, cpu, wall))
            line.append(f"{way} {seconds:.2f}s (cpu {cpu:.2f}s)")
        label = "warm-up" if rnd == 0 else f"round {rnd}"
        print(f"  {label}: " + ", ".join(line), flush=True)
    return got


def main():
    ap = argparse.ArgumentParser(description="Video benchmark: vitattn vs DINO's loop in PyTorch vs the codec floor")
    ap.add_argument("--rounds", type=int, default=5, help="counted rounds (after one warm-up round)")
    ap.add_argument("--threads", type=int, default=os.cpu_count(), help="vitattn -j and torch threads")
    ap.add_argument("--frames", type=int, default=75)
    ap.add_argument("--size", default="640x360")
    ap.add_argument("--photo", default=None, help="photo the clip pans over (default: <shared>/images/rocket.jpg)")
    ap.add_argument("--work", help="folder for the clip, model and outputs (default: a temp folder, removed)")
    args = ap.parse_args()

    check_blas()
    use_openblas_own_kernels()
    vitattn = build_release()
    print(f"vitattn: {vitattn}")
    load = os.getloadavg()[0]
    if load > 0.5:
        print(f"WARNING: 1-minute load average is {load:.2f} before starting: other work on this "
              "machine will make the figures noisy; rerun on a quiet machine.")
    work = args.work or tempfile.mkdtemp(prefix="vitattn-video-bench-")
    os.makedirs(work, exist_ok=True)
    try:
        photo = args.photo or os.path.join(shared_dir(), "images", "rocket.jpg")
        clip = os.path.join(work, "clip.mp4")
        w, h = (int(v) for v in args.size.lower().split("x"))
        write_clip(photo, clip, w, h, args.frames, 25.0)
        clip_info = video_info(clip)
        print(f"clip: {clip_info['frames']} frames {w}x{h} at {clip_info['fps']:g} fps, {clip_info['fourcc']}, "
              f"a pan over {os.path.basename(photo)}")
        model = os.path.join(work, "vit_s16.safetensors")
        if not os.path.exists(model):
            subprocess.run([PY, os.path.join(HERE, "make_vit.py"), work, "--models", "vit_s16"], check=True,
                           stderr=subprocess.DEVNULL)

        video, why = probe_vitattn(vitattn, clip, work, args.threads)
        if video is None:
            print(f"\nvitattn does not read this clip: {why}\n"
                  "(this build has no video input) — timing the PyTorch loop and the floor only, H.264 .mp4")
            out_ext = ".mp4"
        else:
            info = video_info(video)
            out_ext = os.path.splitext(video)[1]
            print(f"vitattn writes {os.path.basename(video)}: {info['fourcc']}, {info['frames']} frames "
                  f"{info['width']}x{info['height']} at {info['fps']:g} fps; the floor and the PyTorch loop "
                  f"write {out_ext} the same way")
            check_same_work(vitattn, model, clip, work, args.threads, clip_info, out_ext)

        o = lambda name: os.path.join(work, f"out_{name}")  # noqa: E731
        ways = {}
        if video is not None:
            ways["seeded"] = ([vitattn, "-q", "-j", str(args.threads), clip, "-o", o("seeded")], o("seeded"), False)
            ways["vits16"] = ([vitattn, "-q", "-j", str(args.threads), "--model", model, clip, "-o", o("vits16")],
                              o("vits16"), False)
        ways["pytorch"] = ([PY, os.path.join(HERE, "dino_video_loop.py"), "--model", model, "--threads",
                            str(args.threads), clip, o("pytorch") + out_ext], None, True)
        ways["floor"] = ([PY, os.path.join(HERE, "video_codec_floor.py"), clip, o("floor") + out_ext], None, True)
        print(f"\ncores: {os.cpu_count()}, vitattn -j {args.threads}, torch threads {args.threads}; "
              f"{args.rounds} rounds after a warm-up, ways in rotating order:")
        got = bench(ways, args.rounds)
        dnnl = run_dnnl_bench.find_products(os.path.dirname(os.path.abspath(vitattn)))
        dnnl_seconds = run_dnnl_bench.products_seconds(dnnl, "vit_s16", args.threads)
        per_frame = dnnl_seconds[0] if dnnl_seconds else None
        print(f"1-minute load average after the rounds: {os.getloadavg()[0]:.2f}")

        n = clip_info["frames"]
        med = {k: statistics.median(s for s, _, _ in v) for k, v in got.items()}
        cpu = {k: statistics.median(c for _, c, _ in v) for k, v in got.items()}
        wall = {k: statistics.median(p for _, _, p in v) for k, v in got.items()}
        timed_as = {"seeded": "whole process", "vits16": "whole process", "pytorch": "frame loop",
                    "floor": "frame loop"}
        print(f"\nmedians over {args.rounds} rounds, {n} frames {w}x{h}:\n")
        if per_frame is not None:
            print(f"oneDNN's products of one ViT-S/16 forward ({args.threads} threads): {1000 * per_frame:.1f} ms per "
                  f"frame (CPU {1000 * dnnl_seconds[1]:.1f} ms), {n * per_frame:.2f} s for the {n} frames\n")
        extra = per_frame is not None
        print("| way | timed | seconds | frames/s | CPU seconds | process wall |" +
              (" oneDNN's products of its forwards |" if extra else ""))
        print("| --- " * (6 + extra) + "|")
        forwards = ("vits16", "pytorch")  # the ways that run the ViT-S/16 forward on every frame
        for k in got:
            dnnl_cell = (f" {n * per_frame:.2f} s |" if k in forwards else " — |") if extra else ""
            print(f"| {k} | {timed_as[k]} | {med[k]:.2f} s | {n / med[k]:.1f} | {cpu[k]:.2f} s | {wall[k]:.2f} s |"
                  + dnnl_cell)
        if "vits16" in got:
            r1, r2 = med["pytorch"] / med["vits16"], med["seeded"] / med["floor"]
            print(f"\nvitattn ViT-S/16 fps / PyTorch loop fps: **{r1:.2f}×**; "
                  f"PyTorch loop CPU seconds / vitattn's: {cpu['pytorch'] / cpu['vits16']:.2f}×")
            print(f"vitattn seeded seconds / codec floor seconds: **{r2:.2f}**; "
                  f"CPU seconds: {cpu['seeded'] / cpu['floor']:.2f}")
        else:
            print(f"\nPyTorch loop / codec floor: {med['pytorch'] / med['floor']:.2f}× the floor's time; "
                  "no vitattn figures (no video input in this build)")
    finally:
        if not args.work:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
