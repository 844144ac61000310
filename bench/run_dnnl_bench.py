#!/usr/bin/python3
"""vitattn's forward beside oneDNN, OpenBLAS and PyTorch, side by side in one run (a script, not a test):

  bench/run_dnnl_bench.py [--bin-dir build/release] [--rounds 3] [--repeat 5] [--warmup 2]
                          [--models vit_s16 vit_b16] [--threads 1 2] [--models-dir DIR] [--no-bf16]

For ViT-S/16 and ViT-B/16 at 224 px (random weights, bench/make_vit.py) and 1 and 2 threads,
per round, in turn (each first in turn, so drift and other load hit all alike):
  vitattn   vitattn_forward_bench: vitattn's whole forward (norms, softmax, GELU and all)
  onednn    vitattn_dnnl_products: the forward's matrix products alone, dnnl_sgemm (f32), in the
            forward's own layouts: the machine's GEMM limit
  bf16      the same products through dnnl_gemm_bf16bf16f32 (bf16 operands, f32 accumulation;
            AVX512-BF16 where the CPU has it), operands converted before the timing
  openblas  bench/gemm_floor.py: the same products alone, numpy on OpenBLAS
  pytorch   bench/torch_forward.py: torchvision's forward, passive OpenMP waiting
  vitattn-bf16  vitattn_forward_bench --precision bf16 (the MLP's products in bf16, gemm_bf16.hpp)
  pytorch-bf16  torch_forward.py --precision bf16: under torch.autocast("cpu", dtype=torch.bfloat16)
each with T threads (the bf16 ways unless --no-bf16). Prints the medians, the ratios vitattn / oneDNN (how far the whole forward
is from the products alone at the machine's limit), OpenBLAS / oneDNN and PyTorch / vitattn,
the share of the measured FMA peak (vitattn_fma_peak, per core × T; the bf16 products against
the AVX512-BF16 dot-product peak) that each products-only run reaches, and the load average
before and after; then the same in CPU seconds (every thread's), which hold up under other load
where wall times do not. vitattn_forward_bench, vitattn_fma_peak and vitattn_dnnl_products are taken
from --bin-dir (vitattn_dnnl_products is built only where oneDNN is installed: Debian's
libdnnl-dev, scripts/install-deps.sh). Refuses to run unless numpy and torch use OpenBLAS; drops
OPENBLAS_CORETYPE so OpenBLAS picks its kernels for this CPU (printed).

run_video_bench.py and run_checkpoint_batch.py print oneDNN's products of one forward beside
their figures through products_seconds() below.
"""
import argparse
import os
import statistics
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, HERE)
import run_model_bench as rmb  # noqa: E402  (check_blas, make_models, MODELS, run_json)

DNNL_EXE = "vitattn_dnnl_products"


def products_cmd(exe, model, threads, repeat, warmup=2, dtype="f32"):
    """vitattn_dnnl_products's command for one of rmb.MODELS (its shapes: d_model, heads, MLP width).
    Its GNU OpenMP threads wait passively (OMP_WAIT_POLICY, unless the environment sets it), as
    torch_forward.py's do: workers spinning on a shared 2-core machine take time slices from each
    other and from other processes. OMP_WAIT_POLICY=ACTIVE in the environment times them spinning."""
    _, d, heads, mlp = rmb.MODELS[model]
    policy = os.environ.get("OMP_WAIT_POLICY", "PASSIVE")
    return ["env", f"OMP_WAIT_POLICY={policy}", exe, "--d-model", str(d), "--heads", str(heads), "--mlp", str(mlp),
            "--threads", str(threads),
            "--repeat", str(repeat), "--warmup", str(warmup), "--dtype", dtype]


def find_products(bin_dir):
    """vitattn_dnnl_products in bin_dir, or None when this build has none (no oneDNN)."""
    exe = os.path.join(bin_dir, DNNL_EXE)
    return exe if os.access(exe, os.X_OK) else None


def products_seconds(exe, model, threads, repeat=10):
    """(wall, CPU) median seconds of one forward's products through oneDNN (f32) at `threads`, or
    None without exe."""
    if exe is None:
        return None
    res, _ = rmb.run_json(products_cmd(exe, model, threads, repeat))
    return res["median"], res["cpu_median"]


def mlp_split(by_kind):
    """Wall seconds of oneDNN's products split as vitattn's bf16 forward is: fc1 and fc2 in bf16,
    every other product f32 (from the per-kind medians of both runs)."""
    f32, b16 = by_kind["onednn"], by_kind["bf16"]
    return sum(s for k, s in f32.items() if k not in ("fc1", "fc2")) + sum(b16.get(k, 0.0) for k in ("fc1", "fc2"))


def print_bf16_tables(rows):
    """vitattn's bf16 forward beside oneDNN's bf16 products and PyTorch's bf16 autocast, wall and CPU."""
    print("\nbf16, wall (medians): oneDNN's products all in bf16, and split as vitattn's bf16 (fc1, fc2 bf16; "
          "the rest f32, from the per-product medians):\n")
    print("| model | T | vitattn bf16 forward (/ vitattn fp32) | oneDNN bf16 products | oneDNN, MLP bf16 | "
          "PyTorch bf16 autocast (/ PyTorch fp32) | vitattn bf16 / oneDNN MLP bf16 | PyTorch bf16 / vitattn bf16 |")
    print("| --- " * 8 + "|")
    for label, t, med, _, _, by_kind in rows:
        split = mlp_split(by_kind)
        print(f"| {label} | {t} | {med['vitattn-bf16']:.4f} s ({med['vitattn-bf16'] / med['vitattn']:.2f}×) | "
              f"{med['bf16']:.4f} s | {split:.4f} s | {med['pytorch-bf16']:.4f} s "
              f"({med['pytorch-bf16'] / med['pytorch']:.2f}×) | **{med['vitattn-bf16'] / split:.2f}** | "
              f"**{med['pytorch-bf16'] / med['vitattn-bf16']:.2f}×** |")
    print("\nbf16, CPU seconds (every thread's), medians of the rounds' medians:\n")
    print("| model | T | vitattn bf16 forward (/ vitattn fp32) | oneDNN bf16 products | "
          "PyTorch bf16 autocast (/ PyTorch fp32) | vitattn bf16 / oneDNN bf16 | PyTorch bf16 / vitattn bf16 |")
    print("| --- " * 7 + "|")
    for label, t, _, cpu, _, _ in rows:
        print(f"| {label} | {t} | {cpu['vitattn-bf16']:.4f} s ({cpu['vitattn-bf16'] / cpu['vitattn']:.2f}×) | "
              f"{cpu['bf16']:.4f} s | {cpu['pytorch-bf16']:.4f} s ({cpu['pytorch-bf16'] / cpu['pytorch']:.2f}×) | "
              f"{cpu['vitattn-bf16'] / cpu['bf16']:.2f} | {cpu['pytorch-bf16'] / cpu['vitattn-bf16']:.2f}× |")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--bin-dir", default=os.path.join(REPO, "build", "release"))
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--models", nargs="+", default=list(rmb.MODELS), choices=list(rmb.MODELS))
    ap.add_argument("--models-dir")
    ap.add_argument("--no-bf16", action="store_true", help="leave out the bf16 products")
    args = ap.parse_args()
    forward, fma_peak = (os.path.join(args.bin_dir, n) for n in ("vitattn_forward_bench", "vitattn_fma_peak"))
    dnnl = find_products(args.bin_dir)
    if dnnl is None:
        rmb.die(f"{os.path.join(args.bin_dir, DNNL_EXE)} is missing: it is built only where oneDNN is installed "
                "(libdnnl-dev, scripts/install-deps.sh); then cmake --build --preset release")
    for exe in (forward, fma_peak):
        if not os.access(exe, os.X_OK):
            rmb.die(f"{exe} is not an executable file (cmake --preset release && cmake --build --preset release)")
    rmb.check_blas()
    rmb.use_openblas_own_kernels()
    peak, _ = rmb.run_json([fma_peak])
    print(f"FMA peak per core (measured): AVX2 {peak['avx2_gflops_per_core']:.1f} GFLOP/s, AVX-512 "
          f"{peak['avx512_gflops_per_core']:.1f} GFLOP/s, AVX512-BF16 dot products "
          f"{peak.get('avx512_bf16_gflops_per_core', 0.0):.1f} GFLOP/s")
    bf16 = not args.no_bf16
    if bf16 and not peak.get("avx512_bf16_gflops_per_core"):
        print("this CPU has no AVX512-BF16: oneDNN's bf16 products emulate it (timed all the same)")
    load_before = os.getloadavg()
    print("load average before: " + " ".join(f"{x:.2f}" for x in load_before))
    folder = args.models_dir or tempfile.mkdtemp(prefix="vitattn-dnnl-bench-")
    os.makedirs(folder, exist_ok=True)
    paths = rmb.make_models(folder, args.models)
    rows = []
    for name in args.models:
        label, d, heads, mlp = rmb.MODELS[name]
        for t in args.threads:
            common = ["--threads", str(t), "--repeat", str(args.repeat), "--warmup", str(args.warmup)]
            ways = {
                "vitattn": [forward, "--model", paths[name], *common],
                "onednn": products_cmd(dnnl, name, t, args.repeat, args.warmup),
                "openblas": [rmb.PY, os.path.join(HERE, "gemm_floor.py"), "--d-model", str(d), "--heads", str(heads),
                             "--mlp", str(mlp), *common],
                "pytorch": [rmb.PY, os.path.join(HERE, "torch_forward.py"), "--model", paths[name], *common],
            }
            if bf16:
                ways["bf16"] = products_cmd(dnnl, name, t, args.repeat, args.warmup, "bf16")
                ways["vitattn-bf16"] = [*ways["vitattn"], "--precision", "bf16"]
                ways["pytorch-bf16"] = [*ways["pytorch"], "--precision", "bf16"]
            names = list(ways)
            results = rmb.json_rounds(ways, args.rounds)
            kernel, gflop = results["vitattn"][-1]["gemm_kernel"], results["onednn"][-1]["gflop"]
            med = {n: statistics.median(s for res in r for s in res["seconds"]) for n, r in results.items()}
            cpu = {n: statistics.median(res["cpu_median"] for res in r) for n, r in results.items()}
            by_kind = {w: {k: statistics.median(res["by_kind"][k] for res in results[w]) for k in results[w][0]["by_kind"]}
                       for w in ("onednn", "bf16") if w in results}
            print(f"{label} T={t}: " + ", ".join(f"{n} {med[n]:.4f} s" for n in names) +
                  f"; vitattn's kernel: {kernel}", flush=True)
            for way, ks in by_kind.items():
                if ks:
                    print(f"  {way} by product: " + ", ".join(f"{k} {1000 * s:.1f} ms" for k, s in sorted(ks.items())))
            rows.append((label, t, med, cpu, gflop, by_kind))
    load_after = os.getloadavg()
    print("load average after: " + " ".join(f"{x:.2f}" for x in load_after) + "\n")
    p32 = peak["avx512_gflops_per_core"] or peak["avx2_gflops_per_core"]
    p16 = peak.get("avx512_bf16_gflops_per_core") or p32
    print("| model (GFLOP) | T | vitattn forward | oneDNN f32 products (share of peak) | "
          + ("oneDNN bf16 products (share of bf16 peak) | " if bf16 else "")
          + "OpenBLAS products | PyTorch forward | vitattn / oneDNN | OpenBLAS / oneDNN | PyTorch / vitattn |")
    print("| --- " * (9 + bf16) + "|")
    for label, t, med, _, gflop, _ in rows:
        share = lambda s, per_core: f"{100 * gflop / s / (per_core * t):.0f} %"  # noqa: E731
        cells = [f"{label} ({gflop:.1f})", str(t), f"{med['vitattn']:.4f} s",
                 f"{med['onednn']:.4f} s ({share(med['onednn'], p32)})"]
        if bf16:
            cells.append(f"{med['bf16']:.4f} s ({share(med['bf16'], p16)})")
        cells += [f"{med['openblas']:.4f} s", f"{med['pytorch']:.4f} s",
                  f"**{med['vitattn'] / med['onednn']:.2f}**", f"{med['openblas'] / med['onednn']:.2f}",
                  f"**{med['pytorch'] / med['vitattn']:.2f}×**"]
        print("| " + " | ".join(cells) + " |")
    # CPU seconds (every thread's) hold up under other load, where a 2-thread run seldom has
    # both cores: the products' CPU against the peak per core is their share of it when they run.
    print("\nCPU seconds per forward (process CPU, every thread), medians of the rounds' medians:\n")
    print("| model | T | vitattn forward | oneDNN f32 products (share of peak) | "
          + ("oneDNN bf16 products (share of bf16 peak) | " if bf16 else "")
          + "OpenBLAS products | PyTorch forward | vitattn / oneDNN | PyTorch / vitattn |")
    print("| --- " * (8 + bf16) + "|")
    for label, t, _, cpu, gflop, _ in rows:
        share = lambda s, per_core: f"{100 * gflop / s / per_core:.0f} %"  # noqa: E731
        cells = [label, str(t), f"{cpu['vitattn']:.4f} s", f"{cpu['onednn']:.4f} s ({share(cpu['onednn'], p32)})"]
        if bf16:
            cells.append(f"{cpu['bf16']:.4f} s ({share(cpu['bf16'], p16)})")
        cells += [f"{cpu['openblas']:.4f} s", f"{cpu['pytorch']:.4f} s", f"**{cpu['vitattn'] / cpu['onednn']:.2f}**",
                  f"{cpu['pytorch'] / cpu['vitattn']:.2f}×"]
        print("| " + " | ".join(cells) + " |")
    if bf16:
        print_bf16_tables(rows)
    if not args.models_dir:
        import shutil
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
