#!/usr/bin/python3
"""vitattn batch benchmark (a script, not a test). Run via bench/run_bench.sh.

Times four ways over one folder of 24 photos (0.3-2 MP, JPEG and PNG), alternating
them in rounds so that drift and other load hit all alike:

  vitattn     the C++ binary, -j <cores> (default 2), seeded head   (env VITATTN_BIN)
  numpy       bench/numpy_pipeline.py: the tutorial in numpy on OpenBLAS, then
              cv2 resize, colour map, blend and PNG write, one image after another
  floor       bench/codec_floor.py: cv2 decode + PNG write at OpenCV's default of
              the same images at the same size on one core, nothing else
  vitattn -j 1  for information

Each run's wall time and CPU time (user + system, from wait4's rusage) are kept, and the
script prints the medians, then each ratio with its baseline named:

  numpy / vitattn -j N     (wall; the CPU-time ratio beside it)
  vitattn -j N / floor     (wall; CPU beside it; and against the floor's decode/encode loop alone)
  peak RSS of vitattn -j 1 and -j N on the folder and on the folder 4 times over (96 photos),
  and its growth from the one to the other.
  long batch: the CPU one more image costs (96 vs 24 photos, so no start is counted),
  vitattn -j N's split over N cores, against the floor's.

On a machine shared with other work the wall times carry its load (printed before and
after); the CPU times do not, so read both.
"""
import argparse
import json
import os
import re
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, HERE)
from run_model_bench import round_order  # noqa: E402
PY = "/usr/bin/python3"
NUMPY_SCRIPT = os.path.join(HERE, "numpy_pipeline.py")
FLOOR_SCRIPT = os.path.join(HERE, "codec_floor.py")
PHOTOS_SCRIPT = os.path.join(HERE, "make_photos.py")
MEMORY_COPIES = 4                # the memory runs' big folder: the photos this many times

BLAS_PROBE = r"""
import json, os, numpy as np
a = np.ones((256, 256)); (a @ a).sum()          # make sure BLAS is loaded
libs = sorted({l.split()[-1] for l in open('/proc/self/maps')
               if 'blas' in l.split()[-1].lower()})
print(json.dumps({'numpy': np.__version__, 'libs': libs,
                  'real': sorted({os.path.realpath(p) for p in libs})}))
"""


def die(msg):
    print(f"run_bench: {msg}", file=sys.stderr)
    sys.exit(2)


def find_binary():
    env = os.environ.get("VITATTN_BIN")
    if env:
        if not os.access(env, os.X_OK):
            die(f"VITATTN_BIN={env} is not an executable file")
        return env
    release = os.path.join(REPO, "build", "release", "vitattn")
    if os.access(release, os.X_OK):
        return release
    dev = os.path.join(REPO, "build", "dev", "vitattn")
    if os.access(dev, os.X_OK):
        print(f"WARNING: {release} not built; using {dev}. A dev build may be "
              "unoptimised: build the release preset for real figures.")
        return dev
    die(f"no vitattn binary: build {release} "
        "(cmake --preset release && cmake --build --preset release) or set VITATTN_BIN")


def check_blas():
    """Refuse to run unless numpy (/usr/bin/python3) uses OpenBLAS."""
    out = subprocess.run([PY, "-c", BLAS_PROBE], check=True, capture_output=True,
                         text=True).stdout
    info = json.loads(out.strip().splitlines()[-1])
    print(f"numpy {info['numpy']} ({PY}) BLAS libraries mapped after a matmul:")
    for lib, real in zip(info["libs"], info["real"]):
        print(f"  {lib}" + (f" -> {real}" if real != lib else ""))
    blas = [r for r in info["real"] if re.search(r"lib(open)?blas[^/]*\.so", r)]
    if not blas or not all("openblas" in r for r in blas):
        die("numpy is not using OpenBLAS (reference BLAS would make the numpy "
            "baseline unfairly slow). Install libopenblas0-pthread and make it the "
            "libblas.so.3 alternative:\n  apt-get install -y libopenblas0-pthread\n"
            "  update-alternatives --display libblas.so.3-$(dpkg-architecture -qDEB_HOST_MULTIARCH)")
    if not any("openblas-pthread" in r for r in blas):
        print("  note: OpenBLAS is not the pthread flavour (libopenblas0-pthread)")
    for var in ("OPENBLAS_NUM_THREADS", "OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE", "OMP_NUM_THREADS"):
        if var in os.environ:
            print(f"  {var}={os.environ[var]} (left as the environment has it)")


def count_pngs(folder):
    n = 0
    for _, _, files in os.walk(folder):
        n += sum(f.endswith("_attn.png") for f in files)
    return n


def run_once(cmd):
    """One run of cmd (list): (wall s, CPU s = user + system, peak RSS MB), from wait4."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    stderr = proc.stderr.read()
    _, status, ru = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    proc.returncode = os.waitstatus_to_exitcode(status)
    proc.stderr.close()
    if proc.returncode != 0:
        die(f"{shlex.join(cmd)} failed ({proc.returncode}):\n{stderr.decode(errors='replace')[-2000:]}")
    return wall, ru.ru_utime + ru.ru_stime, ru.ru_maxrss / 1024.0


def png_size(path):
    """(width, height) from a PNG's IHDR."""
    with open(path, "rb") as f:
        head = f.read(24)
    if head[:8] != b"\x89PNG\r\n\x1a\n" or head[12:16] != b"IHDR":
        die(f"{path} is not a PNG")
    return int.from_bytes(head[16:20], "big"), int.from_bytes(head[20:24], "big")


def check_warm_up(outs):
    """The contenders did the same job: vitattn's outputs are the same bytes at -j 1 and -j N,
    and the floor wrote PNGs of the same size as vitattn's overlays."""
    names = sorted(os.listdir(outs["vitattn -j 1"]))
    for name in names:
        one = open(os.path.join(outs["vitattn -j 1"], name), "rb").read()
        for leg, folder in outs.items():
            other = os.path.join(folder, name)
            if not os.path.exists(other):
                die(f"{leg} wrote no {name}")
            if leg.startswith("vitattn") and open(other, "rb").read() != one:
                die(f"{leg} wrote other bytes than vitattn -j 1 for {name}")
            if png_size(other) != png_size(os.path.join(outs["vitattn -j 1"], name)):
                die(f"{leg}'s {name} is {png_size(other)}, vitattn's is "
                    f"{png_size(os.path.join(outs['vitattn -j 1'], name))}")
    print(f"warm-up check: vitattn -j 1 and -j N wrote the same bytes; every output of every "
          f"way has the size of its photo ({len(names)} files)")


def main():
    ap = argparse.ArgumentParser(description="vitattn batch benchmark")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("-j", "--jobs", type=int, default=os.cpu_count(),
                    help="vitattn workers (default: all cores)")
    ap.add_argument("--dir", help="bench folder (default: a fresh temp folder)")
    ap.add_argument("--keep", action="store_true", help="keep the bench folder")
    args = ap.parse_args()

    binary = find_binary()
    print(f"vitattn: {binary}")
    ldd = subprocess.run(["ldd", binary], capture_output=True, text=True).stdout
    blas_lines = [l.strip() for l in ldd.splitlines() if "blas" in l.lower()]
    print("  linked BLAS: " + ("; ".join(blas_lines) if blas_lines else "none (own GEMM)"))
    check_blas()
    print("timer: wall (perf_counter) and CPU = user + system (wait4 rusage) of each run")
    print(f"cores: {os.cpu_count()}, vitattn -j {args.jobs}, rounds: {args.rounds}")
    load_before = os.getloadavg()
    print(f"load average before: {load_before[0]:.2f} {load_before[1]:.2f} {load_before[2]:.2f}")
    if load_before[0] > 0.5:
        print("WARNING: other work on this machine makes the wall times noisy "
              "(the CPU times much less); rerun on a quiet machine for the wall figures.")

    bench = args.dir or tempfile.mkdtemp(prefix="vitattn-bench-")
    os.makedirs(bench, exist_ok=True)
    try:
        photos = os.path.join(bench, "photos")
        shutil.rmtree(photos, ignore_errors=True)
        r = subprocess.run([PY, PHOTOS_SCRIPT, photos], capture_output=True, text=True)
        if r.returncode != 0:
            die(f"make_photos failed:\n{r.stderr}")
        print(r.stdout.strip())
        n_photos = len(os.listdir(photos))

        vit = f"vitattn -j {args.jobs}"
        legs = {
            vit: lambda o: [binary, "-q", "-j", str(args.jobs), "-o", o, photos],
            "numpy": lambda o: [PY, NUMPY_SCRIPT, "-o", o, photos],
            "floor": lambda o: [PY, FLOOR_SCRIPT, "--loop-cpu", loop_file, "-o", o, photos],
            "vitattn -j 1": lambda o: [binary, "-q", "-j", "1", "-o", o, photos],
        }
        names = list(legs)
        out_root = os.path.join(bench, "out")
        loop_file = os.path.join(bench, "floor-loop-cpu.txt")
        floor_loop = []  # CPU s of the floor's decode/encode loop alone, without Python's start
        wall = {n: [] for n in names}
        cpu = {n: [] for n in names}
        # round 0 is a warm-up (page cache, first-run costs): checked, not counted
        for rnd in range(args.rounds + 1):
            order = round_order(names, rnd)
            line = []
            warm_outs = {}
            for name in order:
                out = os.path.join(out_root, f"{name.replace(' ', '')}-r{rnd}")
                shutil.rmtree(out, ignore_errors=True)
                w, c, _ = run_once(legs[name](out))
                got = count_pngs(out)
                if got != n_photos:
                    die(f"{name} wrote {got} PNGs for {n_photos} photos ({out})")
                if rnd == 0 and name != "numpy":
                    warm_outs[name] = out
                else:
                    shutil.rmtree(out, ignore_errors=True)
                if rnd > 0:
                    wall[name].append(w)
                    cpu[name].append(c)
                    if name == "floor":
                        floor_loop.append(float(open(loop_file).read()))
                line.append(f"{name} {w:.3f}s ({c:.3f}s CPU)")
            print(("warm-up: " if rnd == 0 else f"round {rnd}: ") + ", ".join(line), flush=True)
            if rnd == 0:
                check_warm_up(warm_outs)
                for out in warm_outs.values():
                    shutil.rmtree(out, ignore_errors=True)
        load_after = os.getloadavg()
        print(f"load average after: {load_after[0]:.2f} {load_after[1]:.2f} {load_after[2]:.2f}")

        mw = {n: statistics.median(v) for n, v in wall.items()}
        mc = {n: statistics.median(v) for n, v in cpu.items()}
        print(f"\nmedians over {args.rounds} rounds, {n_photos} photos:")
        print(f"  {'':16s} {'wall s':>8s} {'(min-max)':>15s} {'CPU s':>8s}")
        for n in names:
            print(f"  {n:16s} {mw[n]:8.3f} {f'({min(wall[n]):.2f}-{max(wall[n]):.2f})':>15s} {mc[n]:8.3f}")

        mloop = statistics.median(floor_loop)
        print(f"  {'floor loop only':16s} {'':8s} {'':15s} {mloop:8.3f}   (decode + encode, "
              f"without starting Python and cv2: {mc['floor'] - mloop:.3f} s)")

        # Memory: peak RSS at -j 1 and -j N, on the folder and on the folder MEMORY_COPIES times.
        many = os.path.join(bench, f"photos{MEMORY_COPIES}x")
        shutil.rmtree(many, ignore_errors=True)
        os.makedirs(many)
        for f in sorted(os.listdir(photos)):
            stem, ext = os.path.splitext(f)
            for k in range(MEMORY_COPIES):
                shutil.copy(os.path.join(photos, f), os.path.join(many, f"{stem}_{k}{ext}"))
        jobs = sorted({1, args.jobs})
        rss, run_cpu = {}, {}
        for folder, count in ((photos, n_photos), (many, MEMORY_COPIES * n_photos)):
            for j in jobs:
                out = os.path.join(out_root, f"rss-j{j}")
                shutil.rmtree(out, ignore_errors=True)
                _, run_cpu[(j, count)], rss[(j, count)] = run_once([binary, "-q", "-j", str(j), "-o", out, folder])
                shutil.rmtree(out, ignore_errors=True)
            out = os.path.join(out_root, "floor-many")
            run_cpu[("floor", count)] = run_once([PY, FLOOR_SCRIPT, "-o", out, folder])[1]
            shutil.rmtree(out, ignore_errors=True)
        out = os.path.join(out_root, "rss-numpy")
        rss_numpy = run_once([PY, NUMPY_SCRIPT, "-o", out, photos])[2]
        shutil.rmtree(out, ignore_errors=True)
        small, big = n_photos, MEMORY_COPIES * n_photos
        print(f"\npeak RSS (wait4 ru_maxrss), MB:")
        print(f"  {'':16s} {f'{small} photos':>12s} {f'{big} photos':>12s}")
        for j in jobs:
            print(f"  {f'vitattn -j {j}':16s} {rss[(j, small)]:12.1f} {rss[(j, big)]:12.1f}")
        print(f"  {'numpy':16s} {rss_numpy:12.1f}")

        # A long batch: what one more image costs, from the runs on 24 and 96 photos (one each),
        # so that neither vitattn's nor Python's start is counted.
        extra = big - small
        per = {k: 1000 * (run_cpu[(k, big)] - run_cpu[(k, small)]) / extra for k in [*jobs, "floor"]}
        print(f"\nCPU per extra image, {small} -> {big} photos (one run each; starts not counted):")
        for j in jobs:
            print(f"  vitattn -j {j:<6d} {per[j]:7.1f} ms")
        print(f"  {'floor':16s} {per['floor']:7.1f} ms")

        r_numpy_w, r_numpy_c = mw["numpy"] / mw[vit], mc["numpy"] / mc[vit]
        r_floor_w, r_floor_c = mw[vit] / mw["floor"], mc[vit] / mc["floor"]
        per_worker = (rss[(jobs[-1], small)] - rss[(1, small)]) / max(1, jobs[-1] - 1)
        print(f"\neach ratio, its baseline named:")
        print(f"  numpy / {vit}   wall {r_numpy_w:5.2f}x   (CPU time: {r_numpy_c:.2f}x)")
        print(f"  {vit} / floor   wall {r_floor_w:5.2f}x   (CPU time: {r_floor_c:.2f}x)")
        print(f"  {vit} / floor loop only   CPU {mc[vit] / mloop:.2f}x   (the floor without "
              "Python's start; vitattn's own start is counted)")
        print(f"  long batch: {vit} CPU per image / {jobs[-1]} cores / floor CPU per image = "
              f"{per[jobs[-1]] / jobs[-1] / per['floor']:.2f}x   (an estimate of the wall ratio "
              "to the floor on a quiet machine)")
        growth = ", ".join(f"-j {j} {100 * (rss[(j, big)] / rss[(j, small)] - 1):+.1f}%" for j in jobs)
        print(f"  peak RSS, {big} photos against {small}: {growth}   (per extra worker, {small} photos: "
              f"{per_worker:+.1f} MB)")
        print(f"  for information: numpy / vitattn -j 1 = {mw['numpy'] / mw['vitattn -j 1']:.2f}x wall, "
              f"{mc['numpy'] / mc['vitattn -j 1']:.2f}x CPU; "
              f"floor / vitattn -j 1 = {mc['floor'] / mc['vitattn -j 1']:.2f}x CPU")
    finally:
        if args.keep or args.dir:
            print(f"\nbench folder kept: {bench}")
        else:
            shutil.rmtree(bench, ignore_errors=True)


if __name__ == "__main__":
    main()
