#!/usr/bin/python3
"""vitattn speed benchmark (a script, not a test). Run via bench/run_bench.sh.

Times three ways of drawing the class-token attention over a folder of ~24
photos (0.3-2 MP), alternating them in rounds so that drift hits all alike:

  vitattn   the C++ binary with -j <cores>            (env VITATTN_BIN)
  numpy     bench/numpy_pipeline.py (tutorial numpy, one image after another)
  floor     bench/numpy_pipeline.py --constant-map (decode/resize/encode only)
  (plus vitattn -j 1, for information)

Prints the median wall time of each, numpy/vitattn (target >= 1.8) and
vitattn/floor (target <= 0.6), then the peak RSS of vitattn at -j 1 and -j N
on the folder and on the folder doubled.
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
PY = "/usr/bin/python3"
NUMPY_SCRIPT = os.path.join(HERE, "numpy_pipeline.py")
PHOTOS_SCRIPT = os.path.join(HERE, "make_photos.py")
TARGET_NUMPY_OVER_VITATTN = 1.8
TARGET_VITATTN_OVER_FLOOR = 0.6

BLAS_PROBE = r"""
import os, numpy as np
a = np.ones((256, 256)); (a @ a).sum()          # make sure BLAS is loaded
libs = sorted({l.split()[-1] for l in open('/proc/self/maps')
               if 'blas' in l.split()[-1].lower()})
print(json.dumps({'numpy': np.__version__, 'libs': libs,
                  'real': sorted({os.path.realpath(p) for p in libs})}))
""".replace("import os", "import json, os")


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
    for var in ("OPENBLAS_NUM_THREADS", "OPENBLAS_CORETYPE", "OMP_NUM_THREADS"):
        if var in os.environ:
            print(f"  {var}={os.environ[var]} (left as the environment has it)")


def count_pngs(folder):
    n = 0
    for _, _, files in os.walk(folder):
        n += sum(f.endswith("_attn.png") for f in files)
    return n


def time_once(cmd, hyperfine):
    """Wall time of one run of cmd (list); hyperfine if present."""
    if hyperfine:
        with tempfile.NamedTemporaryFile(suffix=".json") as js:
            r = subprocess.run([hyperfine, "--runs", "1", "--style", "none", "-N",
                                "--export-json", js.name, shlex.join(cmd)],
                               stdout=subprocess.DEVNULL)
            if r.returncode != 0:
                die(f"failed: {shlex.join(cmd)}")
            return json.load(open(js.name))["results"][0]["mean"]
    t0 = time.perf_counter()
    if subprocess.run(cmd, stdout=subprocess.DEVNULL).returncode != 0:
        die(f"failed: {shlex.join(cmd)}")
    return time.perf_counter() - t0


def peak_rss_mb(cmd):
    r = subprocess.run(["/usr/bin/time", "-v"] + cmd, capture_output=True, text=True)
    if r.returncode != 0:
        die(f"{shlex.join(cmd)} failed ({r.returncode}):\n{r.stderr[-2000:]}")
    m = re.search(r"Maximum resident set size \(kbytes\): (\d+)", r.stderr)
    return int(m.group(1)) / 1024.0


def main():
    ap = argparse.ArgumentParser(description="vitattn speed benchmark")
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
    print("  linked BLAS: " + ("; ".join(blas_lines) if blas_lines else "none (Eigen or own kernels)"))
    check_blas()
    hyperfine = shutil.which("hyperfine")
    print(f"timer: {'hyperfine ' + hyperfine if hyperfine else 'own loop (time.perf_counter)'}")
    if not os.access("/usr/bin/time", os.X_OK):
        die("/usr/bin/time missing: apt-get install -y time")
    print(f"cores: {os.cpu_count()}, vitattn -j {args.jobs}, rounds: {args.rounds}")
    load = os.getloadavg()[0]
    if load > 0.5:
        print(f"WARNING: 1-minute load average is {load:.2f} before starting: other work "
              "on this machine will make the figures noisy; rerun on a quiet machine.")

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

        legs = {
            "vitattn": lambda o: [binary, "-q", "-j", str(args.jobs), "-o", o, photos],
            "numpy": lambda o: [PY, NUMPY_SCRIPT, "-o", o, photos],
            "floor": lambda o: [PY, NUMPY_SCRIPT, "--constant-map", "-o", o, photos],
            "vitattn-j1": lambda o: [binary, "-q", "-j", "1", "-o", o, photos],
        }
        names = list(legs)
        out_root = os.path.join(bench, "out")
        times = {n: [] for n in names}
        # round 0 is a warm-up (page cache, first-run costs): checked, not counted
        for rnd in range(args.rounds + 1):
            order = names[rnd % len(names):] + names[:rnd % len(names)]
            line = []
            for name in order:
                out = os.path.join(out_root, f"{name}-r{rnd}")
                shutil.rmtree(out, ignore_errors=True)
                t = time_once(legs[name](out), hyperfine)
                got = count_pngs(out)
                if got != n_photos:
                    die(f"{name} wrote {got} heat-maps for {n_photos} photos ({out})")
                shutil.rmtree(out, ignore_errors=True)
                if rnd > 0:
                    times[name].append(t)
                line.append(f"{name} {t:.3f}s")
            print(("warm-up: " if rnd == 0 else f"round {rnd}: ") + ", ".join(line), flush=True)

        med = {n: statistics.median(v) for n, v in times.items()}
        print(f"1-minute load average after the rounds: {os.getloadavg()[0]:.2f}")
        print(f"\nmedian wall time over {args.rounds} rounds ({n_photos} photos):")
        for n in names:
            label = {"vitattn": f"vitattn -j {args.jobs}", "vitattn-j1": "vitattn -j 1",
                     "numpy": "numpy pipeline", "floor": "floor (--constant-map)"}[n]
            print(f"  {label:24s} {med[n]:7.3f} s   (min {min(times[n]):.3f}, max {max(times[n]):.3f})")
        r1 = med["numpy"] / med["vitattn"]
        r2 = med["vitattn"] / med["floor"]
        ok1 = "OK" if r1 >= TARGET_NUMPY_OVER_VITATTN else "MISSED"
        ok2 = "OK" if r2 <= TARGET_VITATTN_OVER_FLOOR else "MISSED"
        print(f"  numpy / vitattn   = {r1:.2f}   (target >= {TARGET_NUMPY_OVER_VITATTN})  {ok1}")
        print(f"  vitattn / floor   = {r2:.2f}   (target <= {TARGET_VITATTN_OVER_FLOOR})  {ok2}")
        print(f"  numpy / vitattn -j 1 = {med['numpy'] / med['vitattn-j1']:.2f}   (information)")

        doubled = os.path.join(bench, "photos2x")
        shutil.rmtree(doubled, ignore_errors=True)
        os.makedirs(doubled)
        for f in sorted(os.listdir(photos)):
            stem, ext = os.path.splitext(f)
            shutil.copy(os.path.join(photos, f), os.path.join(doubled, f))
            shutil.copy(os.path.join(photos, f), os.path.join(doubled, f"{stem}_copy{ext}"))
        print("\npeak RSS (/usr/bin/time -v):")
        jobs = sorted({1, 2, args.jobs})
        for folder, label in ((photos, f"folder ({n_photos} photos)"),
                              (doubled, f"folder doubled ({2 * n_photos} photos)")):
            for j in jobs:
                out = os.path.join(out_root, f"rss-j{j}")
                shutil.rmtree(out, ignore_errors=True)
                mb = peak_rss_mb([binary, "-q", "-j", str(j), "-o", out, folder])
                shutil.rmtree(out, ignore_errors=True)
                print(f"  vitattn -j {j}  {label:28s} {mb:7.1f} MB")
        out = os.path.join(out_root, "rss-numpy")
        mb = peak_rss_mb([PY, NUMPY_SCRIPT, "-o", out, photos])
        shutil.rmtree(out, ignore_errors=True)
        print(f"  numpy pipeline {'folder (%d photos)' % n_photos:28s} {mb:7.1f} MB (information)")
    finally:
        if args.keep or args.dir:
            print(f"\nbench folder kept: {bench}")
        else:
            shutil.rmtree(bench, ignore_errors=True)


if __name__ == "__main__":
    main()
