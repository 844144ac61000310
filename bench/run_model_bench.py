#!/usr/bin/python3
"""ViT forward benchmark (a script, not a test). Run via bench/run_model_bench.sh.

For ViT-S/16 and ViT-B/16 at 224 px (random weights, bench/make_vit.py) and for each thread
count, times one forward three ways, alternating them within each round so that drift and
other load hit all alike:

  vitattn   build/release/vitattn_forward_bench (full forward: all blocks, norm, head; its own
            GEMM, src/core/gemm.hpp, with --threads threads)
  pytorch   bench/torch_forward.py: torchvision's model, same weights, torch.set_num_threads(T)
  floor     bench/gemm_floor.py: the same forward's matrix products alone, numpy on OpenBLAS

Prints the median seconds per forward of each (pooled over rounds x repeat runs),
pytorch / vitattn, vitattn / floor, and the peak RSS of the vitattn process next to the model
file size (weights are held once).
First, a loading section: per model and round, `cat FILE > /dev/null` and one
vitattn_forward_bench process, alternating, from a warm page cache; medians of their wall and
CPU seconds (load / cat) and of the peak RSS right after loading next to the file size (peak −
file). --load-only stops there. --baseline-bench OLD/vitattn_forward_bench
loads each model with another build too, in the same rounds, alternating (old against new).
Refuses to run unless numpy and torch both use OpenBLAS (not the reference BLAS).
"""
import argparse
import json
import os
import re
import shlex
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
PY = "/usr/bin/python3"
# name: (label, d_model, heads, mlp)
MODELS = {"vit_s16": ("ViT-S/16", 384, 6, 1536), "vit_b16": ("ViT-B/16", 768, 12, 3072)}

BLAS_PROBE = r"""
import json, sys
which = sys.argv[1]
if which == "numpy":
    import numpy as np
    a = np.ones((256, 256), dtype=np.float32); (a @ a).sum(); version = np.__version__
else:
    import torch
    a = torch.ones(256, 256); (a @ a).sum(); version = torch.__version__
libs = sorted({l.split()[-1] for l in open('/proc/self/maps') if 'blas' in l.split()[-1].lower()})
print(json.dumps({'version': version, 'libs': libs}))
"""


def die(msg):
    print(f"run_model_bench: {msg}", file=sys.stderr)
    sys.exit(2)


def run_json(cmd):
    """Runs cmd, returns the JSON object on the last line of its stdout."""
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        die(f"failed ({r.returncode}): {shlex.join(cmd)}\n{r.stderr[-2000:]}")
    return json.loads(r.stdout.strip().splitlines()[-1]), r.stderr


def round_order(names, rnd):
    """The order of round `rnd`: each way first in turn, so that none always runs after the same
    other (a warm cache, a cold one, another's leftover load)."""
    k = rnd % len(names)
    return names[k:] + names[:k]


def json_rounds(ways, rounds, after_round=None):
    """Runs each way's command (one JSON line last, run_json) once per round, in round_order;
    after_round(rnd, {way: result}) if given. Returns {way: [its result of each round]}."""
    names = list(ways)
    results = {n: [] for n in names}
    for rnd in range(rounds):
        this_round = {}
        for way in round_order(names, rnd):
            this_round[way], _ = run_json(ways[way])
            results[way].append(this_round[way])
        if after_round:
            after_round(rnd, this_round)
    return results


def check_blas():
    """Refuse to run unless numpy and torch (/usr/bin/python3) both sit on OpenBLAS."""
    for which in ("numpy", "torch"):
        info, _ = run_json([PY, "-c", BLAS_PROBE, which])
        real = sorted({os.path.realpath(p) for p in info["libs"]})
        print(f"{which} {info['version']}: BLAS mapped after a matmul: " + ", ".join(real or ["none"]))
        blas = [r for r in real if re.search(r"lib(open)?blas[^/]*\.so", r)]
        if not blas or not all("openblas" in r for r in blas):
            die(f"{which} is not using OpenBLAS (the reference BLAS would make the baselines unfairly "
                "slow). Install libopenblas0-pthread and make it the libblas.so.3 alternative:\n"
                "  apt-get install -y libopenblas0-pthread\n"
                "  update-alternatives --display libblas.so.3-$(dpkg-architecture -qDEB_HOST_MULTIARCH)")
    for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "OPENBLAS_CORETYPE"):
        if var in os.environ:
            print(f"  {var}={os.environ[var]} in the environment (each way sets its own thread count)")


def use_openblas_own_kernels():
    """Drops OPENBLAS_CORETYPE for every child (a forced older core, such as Haswell on an AVX-512
    CPU, would be a slow baseline) and prints the core OpenBLAS then picks (OPENBLAS_VERBOSE=2)."""
    forced = os.environ.pop("OPENBLAS_CORETYPE", None)
    probe = subprocess.run([PY, "-c", "import numpy"], capture_output=True, text=True,
                           env=dict(os.environ, OPENBLAS_VERBOSE="2"))
    core = [l for l in probe.stdout.splitlines() + probe.stderr.splitlines() if l.startswith("Core:")]
    dropped = f" (OPENBLAS_CORETYPE={forced} dropped)" if forced else ""
    print(f"OpenBLAS kernels of the baselines: {core[0] if core else 'not reported'}{dropped}")


def build_release():
    """Configures the release preset when needed and brings it up to date (a no-op when it is)."""
    binary = os.environ.get("VITATTN_FORWARD_BENCH")
    if binary:
        if not os.access(binary, os.X_OK):
            die(f"VITATTN_FORWARD_BENCH={binary} is not an executable file")
        return binary, None
    build = os.path.join(REPO, "build", "release")
    if not os.path.exists(os.path.join(build, "build.ninja")):
        subprocess.run(["cmake", "--preset", "release"], cwd=REPO, check=True, stdout=subprocess.DEVNULL)
    r = subprocess.run(["cmake", "--build", "--preset", "release", "--target", "vitattn_forward_bench", "vitattn"],
                       cwd=REPO, capture_output=True, text=True)
    if r.returncode != 0:
        die(f"release build failed:\n{r.stdout[-3000:]}{r.stderr[-2000:]}")
    return os.path.join(build, "vitattn_forward_bench"), os.path.join(build, "vitattn")


def make_models(folder, names):
    missing = [n for n in names if not os.path.exists(os.path.join(folder, f"{n}.safetensors"))]
    if missing:
        print(f"writing {', '.join(missing)} to {folder} …", flush=True)
        subprocess.run([PY, os.path.join(HERE, "make_vit.py"), folder, "--models", *missing], check=True)
    return {n: os.path.join(folder, f"{n}.safetensors") for n in names}


def check_logits(vitattn, model_path, folder):
    """vitattn's logits against PyTorch's on one random input: the two sides run the same model."""
    x = np.random.default_rng(1).standard_normal((1, 3, 224, 224), dtype=np.float32)
    npy = os.path.join(folder, "check_in.npy")
    np.save(npy, x)
    out = os.path.join(folder, "check_out")
    subprocess.run([vitattn, "-q", "forward", "--model", model_path, npy, "-o", out], check=True,
                   stdout=subprocess.DEVNULL)
    ours = np.load(os.path.join(out, "check_in_logits.npy"))
    code = ("import sys, numpy as np, torch; sys.path.insert(0, %r); from make_vit import load_torchvision\n"
            "m, _ = load_torchvision(%r)\n"
            "with torch.inference_mode(): np.save(%r, m(torch.from_numpy(np.load(%r))).numpy())"
            % (HERE, model_path, os.path.join(folder, "check_torch.npy"), npy))
    subprocess.run([PY, "-c", code], check=True)
    theirs = np.load(os.path.join(folder, "check_torch.npy"))
    return float(np.abs(ours - theirs).max()), float(np.abs(theirs).max())


def peak_rss_mb(cmd):
    r = subprocess.run(["/usr/bin/time", "-v"] + cmd, capture_output=True, text=True)
    if r.returncode != 0:
        die(f"{shlex.join(cmd)} failed ({r.returncode}):\n{r.stderr[-2000:]}")
    m = re.search(r"Maximum resident set size \(kbytes\): (\d+)", r.stderr)
    return int(m.group(1)) / 1024.0, json.loads(r.stdout.strip().splitlines()[-1])


def timed_child(cmd, stdout=None):
    """Wall seconds and CPU seconds (user + system) of one child process."""
    import resource
    import time
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    r = subprocess.run(cmd, stdout=stdout, stderr=subprocess.PIPE)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if r.returncode != 0:
        die(f"{shlex.join(cmd)} failed ({r.returncode}): {r.stderr.decode()[-2000:]}")
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def bench_load(name, path, rounds, benches):
    """Model loading against `cat file > /dev/null`, both from a warm page cache, alternating.

    Per round: cat the file (wall and CPU seconds of the whole cat process), numpy.fromfile
    (bench/read_floor.py: the file read into fresh memory, the least any loader that holds
    its own copy of the weights pays), then one
    vitattn_forward_bench process, which reports two things: its load alone (wall and CPU
    around load_tensor_file + load_vit) and the whole process up to a ready model (from just
    before the spawn, through exec, the libraries and the load; CPU from getrusage), and its
    peak RSS right after loading (VmHWM). `benches`: {label: vitattn_forward_bench}, this
    build's and, with --baseline-bench, another's, each run once per round, in turn.
    Returns the medians: {key: seconds} for cat and fromfile, {label: {key: ...}} per build."""
    subprocess.run(["cat", path], stdout=subprocess.DEVNULL, check=True)  # warm the page cache
    got = {k: [] for k in ("cat", "cat_cpu", "fromfile", "fromfile_cpu")}
    per = {label: {k: [] for k in ("load", "load_cpu", "ready", "ready_cpu", "peak")} for label in benches}
    file_mb = 0.0
    for rnd in range(rounds):
        with open(os.devnull, "wb") as null:
            w, c = timed_child(["cat", path], stdout=null)
        got["cat"].append(w)
        got["cat_cpu"].append(c)
        floor, _ = run_json([PY, os.path.join(HERE, "read_floor.py"), path])
        got["fromfile"].append(floor["seconds"])
        got["fromfile_cpu"].append(floor["cpu_seconds"])
        labels = list(benches)
        for label in round_order(labels, rnd):
            env = dict(os.environ, VITATTN_BENCH_SPAWN_NS=str(time.monotonic_ns()))  # CLOCK_MONOTONIC, as steady_clock
            r = subprocess.run([benches[label], "--model", path, "--threads", "1", "--repeat", "1", "--warmup", "0"],
                               capture_output=True, text=True, env=env)
            if r.returncode != 0:
                die(f"{benches[label]} failed ({r.returncode}) on {path}:\n{r.stderr[-2000:]}")
            res = json.loads(r.stdout.strip().splitlines()[-1])
            for k, j in (("load", "load_seconds"), ("load_cpu", "load_cpu_seconds"), ("ready", "ready_seconds"),
                         ("ready_cpu", "ready_cpu_seconds"), ("peak", "rss_peak_loaded_mb")):
                per[label][k].append(res[j])
            file_mb = res["model_file_mb"]
    out = {k: statistics.median(v) for k, v in got.items()}
    out["file_mb"] = file_mb
    out["builds"] = {label: {k: statistics.median(v) for k, v in d.items()} for label, d in per.items()}
    return out


def bench_one(name, path, threads, args, vitattn_bench):
    label, d, heads, mlp = MODELS[name]
    common = ["--threads", str(threads), "--repeat", str(args.repeat), "--warmup", str(args.warmup)]
    ways = {
        "vitattn": [vitattn_bench, "--model", path, *common],
        "pytorch": [PY, os.path.join(HERE, "torch_forward.py"), "--model", path, *common],
        "floor": [PY, os.path.join(HERE, "gemm_floor.py"), "--d-model", str(d), "--heads", str(heads),
                  "--mlp", str(mlp), *common],
    }
    def say(rnd, results):
        print(f"  {label} T={threads} round {rnd + 1}: " + ", ".join(
            f"{way} {res['median']:.3f}s (cpu {res['cpu_median']:.3f}s)" for way, res in results.items()), flush=True)

    results = json_rounds(ways, args.rounds, say)
    kernel = results["vitattn"][-1].get("gemm_kernel")
    if kernel:
        print(f"  vitattn's GEMM kernel: {kernel}")
    med = {n: statistics.median(s for res in r for s in res["seconds"]) for n, r in results.items()}
    cpu_med = {n: statistics.median(res["cpu_median"] for res in r) for n, r in results.items()}  # per-process medians
    return med, cpu_med, results["floor"][-1]["gflop"]


def main():
    ap = argparse.ArgumentParser(description="ViT forward benchmark: vitattn vs PyTorch vs the GEMM floor")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--repeat", type=int, default=10, help="timed forwards per process")
    ap.add_argument("--warmup", type=int, default=2, help="untimed forwards per process first")
    ap.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--models", nargs="+", default=list(MODELS), choices=list(MODELS))
    ap.add_argument("--models-dir", help="where the random checkpoints live (default: a temp folder, removed)")
    ap.add_argument("--load-only", action="store_true", help="only the model-loading section")
    ap.add_argument("--baseline-bench", metavar="PATH",
                    help="another build's vitattn_forward_bench (e.g. main's release build), loaded in the same "
                         "rounds as this build's, alternating, for an old-against-new row per model")
    args = ap.parse_args()

    check_blas()
    if not os.access("/usr/bin/time", os.X_OK):
        die("/usr/bin/time missing: apt-get install -y time")
    vitattn_bench, vitattn = build_release()
    print(f"vitattn: {vitattn_bench}")
    # vitattn does its own products (src/core/gemm.hpp); a BLAS it links directly is an old
    # build. (OpenCV's LAPACK still loads libblas indirectly; vitattn never calls it.)
    dyn = subprocess.run(["readelf", "-d", vitattn_bench], capture_output=True, text=True).stdout
    blas = [l.split()[-1] for l in dyn.splitlines() if "NEEDED" in l and "blas" in l.lower()]
    print("  BLAS linked directly: " + (", ".join(blas) if blas else "none (its own GEMM, src/core/gemm.hpp)"))
    print(f"cores: {os.cpu_count()}, threads {args.threads}, {args.rounds} rounds x {args.repeat} forwards "
          f"(+{args.warmup} warm-up) per way")
    load = os.getloadavg()[0]
    if load > 0.5:
        print(f"WARNING: 1-minute load average is {load:.2f} before starting: other work on this "
              "machine will make the figures noisy; rerun on a quiet machine.")

    folder = args.models_dir or tempfile.mkdtemp(prefix="vitattn-model-bench-")
    os.makedirs(folder, exist_ok=True)
    try:
        paths = make_models(folder, args.models)
        if vitattn:
            diff, scale = check_logits(vitattn, paths[args.models[0]], folder)
            print(f"check: {MODELS[args.models[0]][0]} logits, vitattn vs PyTorch: max |diff| {diff:.2e} "
                  f"(max |logit| {scale:.2f})")
            if not diff <= 1e-3 * max(1.0, scale):
                die("vitattn and PyTorch disagree on the same model: the timings would compare different work")
        print(f"\nloading: {args.rounds} rounds, each `cat FILE > /dev/null` then one vitattn_forward_bench process "
              "(warm page cache; MB = MiB). 'load' is load_tensor_file + load_vit inside the process; 'start → ready' "
              "is the whole process from its spawn to a ready model (exec, libraries, static init, load); "
              "cat is its whole process too:\n")
        benches = {"this build": vitattn_bench}
        if args.baseline_bench:
            if not os.access(args.baseline_bench, os.X_OK):
                die(f"--baseline-bench {args.baseline_bench} is not an executable file")
            benches["baseline"] = args.baseline_bench
            print(f"baseline: {args.baseline_bench}")
        print("| model | build | file | cat, wall (CPU) | numpy.fromfile / cat, wall (CPU) | load, wall (CPU) | "
              "load / cat, wall (CPU) | start → ready, wall (CPU) | start → ready / cat, wall (CPU) | "
              "peak RSS after load | peak − file |")
        print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
        for name in args.models:
            all_builds = bench_load(name, paths[name], args.rounds, benches)
            for label, b in all_builds["builds"].items():
                r = dict(all_builds, **b)
                over = r["peak"] - r["file_mb"]

                def ratio(key):
                    w, c = r[key] / r["cat"], r[key + "_cpu"] / r["cat_cpu"]
                    return f"**{w:.1f}** ({c:.1f})"
                print(f"| {MODELS[name][0]} | {label} | {r['file_mb']:.1f} MiB | {r['cat']:.3f} s ({r['cat_cpu']:.3f} s) | "
                      f"{r['fromfile'] / r['cat']:.1f} ({r['fromfile_cpu'] / r['cat_cpu']:.1f}) | "
                      f"{r['load']:.3f} s ({r['load_cpu']:.3f} s) | {ratio('load')} | "
                      f"{r['ready']:.3f} s ({r['ready_cpu']:.3f} s) | {ratio('ready')} | {r['peak']:.1f} MiB | "
                      f"**{over:+.1f} MiB** |", flush=True)
        print("load / cat and start → ready / cat: each against `cat FILE > /dev/null` from a warm page cache; "
              "peak − file: the peak RSS after loading less the file's size (the peak counts the process's "
              "libraries too)")
        print("numpy.fromfile (bench/read_floor.py) reads the file into fresh memory and does nothing else: what any "
              "loader that holds its own copy of the weights pays at least (cat reuses one small buffer)")
        if args.load_only:
            return
        rows = []
        for name in args.models:
            for t in args.threads:
                med, cpu_med, gflop = bench_one(name, paths[name], t, args, vitattn_bench)
                rows.append((name, t, med, cpu_med, gflop))
        print(f"1-minute load average after the rounds: {os.getloadavg()[0]:.2f}")

        print(f"\nmedian seconds per forward ({args.rounds} rounds x {args.repeat} runs, ways interleaved):\n")
        print("| model | threads | vitattn | PyTorch | GEMM floor (GFLOP/s) | PyTorch / vitattn | vitattn / floor |")
        print("| --- | --- | --- | --- | --- | --- | --- |")
        for name, t, med, _, gflop in rows:
            r1, r2 = med["pytorch"] / med["vitattn"], med["vitattn"] / med["floor"]
            print(f"| {MODELS[name][0]} ({gflop:.1f} GFLOP) | {t} | {med['vitattn']:.3f} s | {med['pytorch']:.3f} s | "
                  f"{med['floor']:.3f} s ({gflop / med['floor']:.0f}) | **{r1:.2f}×** | **{r2:.2f}** |")
        print("\nPyTorch / vitattn: above 1 when vitattn takes less time; vitattn / floor: below 1 when it does")
        for name, t, med, c, _ in rows:
            used = c["floor"] / med["floor"]  # the floor is all BLAS: CPU / wall = cores it really got
            if t > 1 and used < 0.75 * t:
                print(f"note: {MODELS[name][0]} at {t} threads: the GEMM floor got {used:.1f} cores on average "
                      f"(CPU / wall): the other cores were busy, so this row is not a {t}-core figure.")
        # CPU seconds (all threads of the process) are steadier than wall time on a busy
        # machine; at 1 thread they are the work itself. At 2 they include OpenBLAS's spin-waits
        # (PyTorch, floor); vitattn's pool blocks instead of spinning.
        print("\nfor information, median CPU seconds per forward (all threads of the process):\n")
        print("| model | threads | vitattn | PyTorch | GEMM floor | PyTorch / vitattn | vitattn / floor |")
        print("| --- | --- | --- | --- | --- | --- | --- |")
        for name, t, _, c, _ in rows:
            print(f"| {MODELS[name][0]} | {t} | {c['vitattn']:.3f} s | {c['pytorch']:.3f} s | {c['floor']:.3f} s | "
                  f"{c['pytorch'] / c['vitattn']:.2f}× | {c['vitattn'] / c['floor']:.2f} |")

        print("\nmemory of vitattn_forward_bench (/usr/bin/time -v peak; /proc/self/status in the process):\n")
        print("| model | file | RSS after load | RSS after the forwards | peak RSS |")
        print("| --- | --- | --- | --- | --- |")
        for name in args.models:
            peak, res = peak_rss_mb([vitattn_bench, "--model", paths[name], "--threads", str(max(args.threads)),
                                     "--repeat", "3", "--warmup", "0"])
            print(f"| {MODELS[name][0]} | {res['model_file_mb']:.1f} MiB | {res['rss_loaded_mb']:.1f} MiB | "
                  f"{res['rss_end_mb']:.1f} MiB | {peak:.1f} MiB |")
        print("\nRSS after load ≈ the file: the weights are held once. The peak is reached while loading,\n"
              "when the file's bytes and the model's matrices briefly coexist; the forwards add only\n"
              "their few MiB of buffers, the same for every image.")
    finally:
        if not args.models_dir:
            import shutil
            shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
