#!/usr/bin/python3
"""Where one image's forward spends its time, beside oneDNN's products (a script, not a test):

  bench/run_forward_breakdown.py [--bin-dir build/release] [--models vit_s16 vit_b16] [--threads 1 2]
                                 [--repeat 20] [--models-dir DIR]

For each model and thread count: vitattn_forward_bench under `perf record -e cpu-clock` (a
software clock, which works in a container without hardware counters), started after the model
is loaded (`-D`, the load measured by a first run), so every sample falls in a forward. Each
sample's function goes to one part:
  products   the GEMM: its micro-kernels, its packing of a and b, its tiles and their threads
  softmax    softmax_row(s) and expf
  GELU       gelu_row and erf/tanh
  LayerNorm  layer_norm_into
  kernel     the Linux kernel's functions: fresh pages zeroed and mapped, scheduling
  other      the rest: bias rows, residual adds, patchify, copies, allocation
The shares of the samples, times the forward's CPU seconds (vitattn_forward_bench's median
process CPU), are each part's CPU per forward; "waiting" is threads × wall − CPU: the time a
thread of the T had no work (its pool's workers sleep on a condition variable, off the CPU, so
no sample sees them), or was kept off the CPU by other processes. Beside them, the same
forward's products alone through oneDNN at the same threads (vitattn_dnnl_products, f32, per
kind). Prints a table per model and thread count, the load average before and after, and the
parts whose functions it did not know (so a new function shows up rather than hiding in "other").
"""
import argparse
import math
import os
import re
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, HERE)
import run_model_bench as rmb  # noqa: E402
import run_dnnl_bench  # noqa: E402

PARTS = [  # (part, pattern on the function name), first match wins
    ("products", r"gemm|kernel_avx|kernel_portable|transpose_8x8|pack_|edge_tile|\(anonymous namespace\)::run\b|"
                 r"_Function_handler<void \(int\), vitattn::\(anonymous namespace\)::run"),
    ("softmax", r"softmax|expf"),
    ("GELU", r"gelu|erff|tanhf"),
    ("LayerNorm", r"layer_norm"),
]


def part_of(symbol):
    for part, pattern in PARTS:
        if re.search(pattern, symbol):
            return part
    return "other"


def perf_shares(data):
    """{part: share of the samples}, and the 'other' functions with their shares."""
    r = subprocess.run(["perf", "report", "-i", data, "--stdio", "--sort", "sym", "--percent-limit", "0"],
                       capture_output=True, text=True)
    if r.returncode != 0:
        rmb.die(f"perf report failed: {r.stderr[-1000:]}")
    shares, others = {}, {}
    for line in r.stdout.splitlines():
        m = re.match(r"\s*([\d.]+)%\s+\[([.k])\]\s+(.*)$", line)
        if not m:
            continue
        share, symbol = float(m.group(1)) / 100, m.group(3).strip()
        part = "kernel" if m.group(2) == "k" else part_of(symbol)
        shares[part] = shares.get(part, 0.0) + share
        if part == "other":
            others[symbol] = others.get(symbol, 0.0) + share
    return shares, others


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--bin-dir", default=os.path.join(REPO, "build", "release"))
    ap.add_argument("--models", nargs="+", default=list(rmb.MODELS), choices=list(rmb.MODELS))
    ap.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--repeat", type=int, default=20)
    ap.add_argument("--models-dir")
    args = ap.parse_args()
    forward = os.path.join(args.bin_dir, "vitattn_forward_bench")
    dnnl = run_dnnl_bench.find_products(args.bin_dir)
    if not os.access(forward, os.X_OK) or dnnl is None:
        rmb.die(f"{forward} or {run_dnnl_bench.DNNL_EXE} missing in {args.bin_dir} (oneDNN: libdnnl-dev)")
    if shutil.which("perf") is None:
        rmb.die("perf is missing (linux-perf, scripts/install-deps.sh)")
    print("load average before: " + " ".join(f"{x:.2f}" for x in os.getloadavg()))
    work = tempfile.mkdtemp(prefix="vitattn-breakdown-")
    try:
        folder = args.models_dir or work
        paths = rmb.make_models(folder, args.models)
        for name in args.models:
            label = rmb.MODELS[name][0]
            for t in args.threads:
                probe, _ = rmb.run_json([forward, "--model", paths[name], "--threads", str(t), "--repeat", "3"])
                delay = probe["load_seconds"] + 0.5  # past the load, well inside the warm-up
                warmup = math.ceil((delay + 0.5) / probe["median"]) + 1
                data = os.path.join(work, f"{name}_{t}.data")
                cmd = ["perf", "record", "-q", "-e", "cpu-clock", "-F", "1999", "-D", str(int(1000 * delay)),
                       "-o", data, "--", forward, "--model", paths[name], "--threads", str(t),
                       "--repeat", str(args.repeat), "--warmup", str(warmup)]
                res, _ = rmb.run_json(cmd)
                shares, others = perf_shares(data)
                cpu, wall = res["cpu_median"], res["median"]
                dn, _ = rmb.run_json(run_dnnl_bench.products_cmd(dnnl, name, t, 10))
                print(f"\n{label}, {t} thread(s): wall {1000 * wall:.1f} ms, CPU {1000 * cpu:.1f} ms per forward "
                      f"(median of {args.repeat}); oneDNN's products alone: wall {1000 * dn['median']:.1f} ms, "
                      f"CPU {1000 * dn['cpu_median']:.1f} ms; wall by kind: "
                      f"{', '.join(f'{k} {1000 * s:.1f}' for k, s in sorted(dn['by_kind'].items()))} ms")
                print("| part | CPU ms per forward | share of T × wall | oneDNN's products, CPU (wall) |")
                print("| --- | --- | --- | --- |")
                for part in ("products", "softmax", "GELU", "LayerNorm", "kernel", "other"):
                    ms = 1000 * cpu * shares.get(part, 0.0)
                    beside = f"{1000 * dn['cpu_median']:.1f} ms ({1000 * dn['median']:.1f} ms)" if part == "products" else ""
                    print(f"| {part} | {ms:.1f} | {100 * ms / (1000 * t * wall):.0f} % | {beside} |")
                waiting = max(0.0, t * wall - cpu)
                print(f"| waiting (T × wall − CPU) | {1000 * waiting:.1f} | {100 * waiting / (t * wall):.0f} % | |")
                top = sorted(others.items(), key=lambda kv: -kv[1])[:4]
                print("other, largest: " + "; ".join(f"{s} {100 * v:.1f} %" for s, v in top))
        print("\nload average after: " + " ".join(f"{x:.2f}" for x in os.getloadavg()))
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
