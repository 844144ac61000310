#!/usr/bin/python3
"""The forward of two builds beside PyTorch and the GEMM floor, side by side in one run (a script, not a test):

  bench/run_packing_bench.py BEFORE/vitattn_forward_bench AFTER/vitattn_forward_bench AFTER/vitattn_fma_peak
                             [--rounds 3] [--repeat 5] [--models vit_s16 vit_b16] [--threads 1 2]

For ViT-S/16 and ViT-B/16 at 224 px (random weights, bench/make_vit.py) and 1 and 2 threads,
per round, in turn (each first in turn, so drift hits all alike):
  before   one build's vitattn_forward_bench (e.g. main's: weights packed per tile)
  after    another's (e.g. weights packed once, kept)
  pytorch  bench/torch_forward.py, OMP_WAIT_POLICY=PASSIVE, torch.set_num_threads(T)
  floor    bench/gemm_floor.py: the same products alone, numpy on OpenBLAS (T threads)
Prints median seconds per forward, the ratios after / before, after / floor and PyTorch / after,
the kernel each vitattn build ran, and the share of the CPU's FMA peak (measured by
vitattn_fma_peak, per core × T) that the forward's GEMM flops reach in the forward's wall time
(an under-estimate of the GEMMs' own share: the norms, softmax and GELU are in that time too).
Refuses to run unless numpy and torch use OpenBLAS (run_model_bench.check_blas). PyTorch and
the floor run without OPENBLAS_CORETYPE, so OpenBLAS picks its kernels from the CPU (a forced
older core, such as Haswell on an AVX-512 CPU, would be a slow baseline); the core it picked is
printed (OPENBLAS_VERBOSE=2).
"""
import argparse
import os
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import run_model_bench as rmb  # noqa: E402  (check_blas, make_models, MODELS, run_json)



def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("before")
    ap.add_argument("after")
    ap.add_argument("fma_peak")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--models", nargs="+", default=list(rmb.MODELS), choices=list(rmb.MODELS))
    ap.add_argument("--models-dir")
    args = ap.parse_args()
    for exe in (args.before, args.after, args.fma_peak):
        if not os.access(exe, os.X_OK):
            rmb.die(f"{exe} is not an executable file")
    rmb.check_blas()
    os.environ.pop("OPENBLAS_CORETYPE", None)  # OpenBLAS's own choice for this CPU, for both baselines
    probe = subprocess.run([rmb.PY, "-c", "import numpy"], capture_output=True, text=True,
                           env=dict(os.environ, OPENBLAS_VERBOSE="2"))
    core = [l for l in probe.stdout.splitlines() + probe.stderr.splitlines() if l.startswith("Core:")]
    print(f"OpenBLAS kernels (PyTorch and the floor): {core[0] if core else 'not reported'}")
    peak, _ = rmb.run_json([args.fma_peak])
    print(f"FMA peak per core (measured): AVX2 {peak['avx2_gflops_per_core']:.1f} GFLOP/s, "
          f"AVX-512 {peak['avx512_gflops_per_core']:.1f} GFLOP/s")
    print(f"load average before: {os.getloadavg()[0]:.2f}")
    folder = args.models_dir or tempfile.mkdtemp(prefix="vitattn-packing-bench-")
    os.makedirs(folder, exist_ok=True)
    paths = rmb.make_models(folder, args.models)
    rows = []
    for name in args.models:
        label, d, heads, mlp = rmb.MODELS[name]
        for t in args.threads:
            common = ["--threads", str(t), "--repeat", str(args.repeat), "--warmup", str(args.warmup)]
            ways = {
                "before": [args.before, "--model", paths[name], *common],
                "after": [args.after, "--model", paths[name], *common],
                "pytorch": [rmb.PY, os.path.join(HERE, "torch_forward.py"), "--model", paths[name], *common],
                "floor": [rmb.PY, os.path.join(HERE, "gemm_floor.py"), "--d-model", str(d), "--heads", str(heads),
                          "--mlp", str(mlp), *common],
            }
            names = list(ways)
            results = rmb.json_rounds(ways, args.rounds)
            kernels = {w: r[-1]["gemm_kernel"] for w, r in results.items() if "gemm_kernel" in r[-1]}
            gflop, policy = results["floor"][-1]["gflop"], results["pytorch"][-1].get("omp_wait_policy", "?")
            med = {n: statistics.median(s for res in r for s in res["seconds"]) for n, r in results.items()}
            print(f"{label} T={t}: " + ", ".join(f"{n} {med[n]:.4f} s" for n in names) +
                  f"; kernels: {kernels}; PyTorch OMP_WAIT_POLICY={policy}", flush=True)
            rows.append((label, t, med, gflop, kernels))
    print(f"load average after: {os.getloadavg()[0]:.2f}\n")
    print("| model | T | before | after | after / before | PyTorch | floor | after / floor | PyTorch / after | "
          "GEMM flops / wall, share of FMA peak: after, floor |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for label, t, med, gflop, kernels in rows:
        wide = "avx512" in kernels.get("after", "")
        per_core = peak["avx512_gflops_per_core" if wide else "avx2_gflops_per_core"]
        share = gflop / med["after"] / (per_core * t)
        share_floor = gflop / med["floor"] / (per_core * t)
        r_floor, r_torch = med["after"] / med["floor"], med["pytorch"] / med["after"]
        print(f"| {label} ({gflop:.1f} GFLOP) | {t} | {med['before']:.4f} s | {med['after']:.4f} s | "
              f"{med['after'] / med['before']:.2f} | {med['pytorch']:.4f} s | {med['floor']:.4f} s | "
              f"**{r_floor:.2f}** | **{r_torch:.2f}×** | {100 * share:.0f} %, "
              f"{100 * share_floor:.0f} % |")
    if not args.models_dir:
        import shutil
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
