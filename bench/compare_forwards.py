#!/usr/bin/python3
"""One image's forward in several builds, side by side in one run (a script, not a test):

  bench/compare_forwards.py BUILD_DIR [BUILD_DIR ...] [--models vit_s16 vit_b16] [--threads 1 2]
                            [--rounds 5] [--repeat 20] [--models-dir DIR]

Each build dir holds vitattn_forward_bench (a release build). For each model (bench/make_vit.py,
random weights) and thread count, every round runs each build's bench once (--repeat forwards
after 3 untimed), the builds in an order that rotates round by round so that a change in
machine load hits all alike; the first round is a warm-up and not counted. Prints, per build,
the median over rounds of the bench's median forward wall time and of its median process CPU
time per forward, and their ratios to the first build (below 1 is faster), with the load
average before and after. Unlike bench/compare_builds.sh it does not require equal outputs: for
a change meant to alter the last bits (a new exp), where compare_builds.sh would stop.
"""
import argparse
import os
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import run_model_bench as rmb  # noqa: E402  (run_json, round_order)


def load_average():
    with open("/proc/loadavg") as f:
        return " ".join(f.read().split()[:3])


def one_run(build, model, threads, repeat):
    r, _ = rmb.run_json([os.path.join(build, "vitattn_forward_bench"), "--model", model, "--threads", str(threads),
                         "--repeat", str(repeat), "--warmup", "3"])
    return r["median"], r["cpu_median"]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("builds", nargs="+")
    ap.add_argument("--models", nargs="+", default=["vit_s16", "vit_b16"])
    ap.add_argument("--threads", nargs="+", type=int, default=[1, 2])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--repeat", type=int, default=20)
    ap.add_argument("--models-dir", help="where make_vit.py's checkpoints are (made here when absent)")
    args = ap.parse_args()
    builds = [os.path.realpath(b) for b in args.builds]
    for b in builds:
        if not os.access(os.path.join(b, "vitattn_forward_bench"), os.X_OK):
            sys.exit(f"compare_forwards: {b}/vitattn_forward_bench missing (cmake --build --preset release "
                     "--target vitattn_forward_bench)")
    tmp = None
    models_dir = args.models_dir
    if models_dir is None:
        tmp = tempfile.TemporaryDirectory()
        models_dir = tmp.name
    missing = [m for m in args.models if not os.path.exists(os.path.join(models_dir, f"{m}.safetensors"))]
    if missing:
        subprocess.run([sys.executable, os.path.join(HERE, "make_vit.py"), models_dir, "--models", *missing], check=True,
                       stdout=subprocess.DEVNULL)
    print(f"load average before: {load_average()}")
    for i, b in enumerate(builds):
        print(f"build {i}: {b}")
    print(f"{args.rounds} rounds after one warm-up round, builds in rotating order; {args.repeat} forwards per run")
    print(f"{'model':8} {'threads':>7} {'build':>5} {'wall ms':>8} {'cpu ms':>8} {'wall/b0':>8} {'cpu/b0':>8}")
    for model in args.models:
        path = os.path.join(models_dir, f"{model}.safetensors")
        for threads in args.threads:
            times = [[] for _ in builds]
            for r in range(args.rounds + 1):
                order = rmb.round_order(list(range(len(builds))), r)
                for k in order:
                    t = one_run(builds[k], path, threads, args.repeat)
                    if r > 0:
                        times[k].append(t)
            med = [(statistics.median(w for w, _ in ts), statistics.median(c for _, c in ts)) for ts in times]
            for k, (wall, cpu) in enumerate(med):
                print(f"{model:8} {threads:7d} {k:5d} {wall * 1e3:8.1f} {cpu * 1e3:8.1f} "
                      f"{wall / med[0][0]:8.3f} {cpu / med[0][1]:8.3f}", flush=True)
    print(f"load average after: {load_average()}")


if __name__ == "__main__":
    main()
