#!/usr/bin/python3
"""The backward pass's cost against the forward's, vitattn beside PyTorch autograd.

For ViT-S/16 and ViT-B/16 (random weights, bench/make_vit.py) at 1 and 2 threads, alternating
the two sides each round: vitattn_backward_bench (release build) and bench/torch_backward.py.
Prints the medians over rounds of each process's medians (CPU seconds: every thread) and the
ratios backward / forward, then the peak resident memory of a gradient run against a plain
forward run (two vitattn_backward_bench processes, --mode forward and --mode gradient).

  bench/run_backward_bench.sh [--rounds 3] [--repeat 5] [--threads 1 2] [--models vit_s16 vit_b16]
"""
import argparse
import os
import statistics
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import run_model_bench as rmb  # noqa: E402  (its helpers: OpenBLAS check, models, JSON runs)


def build_bench():
    build = os.path.join(rmb.REPO, "build", "release")
    if not os.path.exists(os.path.join(build, "build.ninja")):
        rmb.subprocess.run(["cmake", "--preset", "release"], cwd=rmb.REPO, check=True, stdout=rmb.subprocess.DEVNULL)
    rmb.subprocess.run(["cmake", "--build", "--preset", "release", "--target", "vitattn_backward_bench"], cwd=rmb.REPO,
                       check=True, stdout=rmb.subprocess.DEVNULL)
    return os.path.join(build, "vitattn_backward_bench")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--models", nargs="+", default=["vit_s16", "vit_b16"])
    ap.add_argument("--models-dir", help="where the random checkpoints live (default: a temp folder)")
    args = ap.parse_args()
    rmb.check_blas()
    bench = build_bench()
    import tempfile
    with tempfile.TemporaryDirectory() as tmp:
        models = rmb.make_models(args.models_dir or tmp, args.models)
        print("\n| model | threads | vitattn forward | vitattn taped forward | vitattn backward | backward / forward "
              "| torch forward (inference) | torch forward (autograd) | torch backward | torch backward / forward "
              "| torch backward with weights' grads / forward |")
        print("|---|---|---|---|---|---|---|---|---|---|---|")
        for name, path in models.items():
            for t in args.threads:
                ours, theirs = [], []
                for _ in range(args.rounds):
                    common = ["--model", path, "--threads", str(t), "--repeat", str(args.repeat), "--warmup", "1"]
                    ours.append(rmb.run_json([bench, *common])[0])
                    theirs.append(rmb.run_json([rmb.PY, os.path.join(HERE, "torch_backward.py"), *common])[0])
                m = lambda rows, k: statistics.median(r[k + "_cpu_median"] for r in rows)  # noqa: E731
                f, tf, b = m(ours, "forward"), m(ours, "taped_forward"), m(ours, "backward")
                pf, pgf, pb, pbw = (m(theirs, k) for k in ("forward", "grad_forward", "backward", "backward_weights"))
                print(f"| {name} | {t} | {f:.3f} s | {tf:.3f} s | {b:.3f} s | {b / f:.2f} | {pf:.3f} s | {pgf:.3f} s "
                      f"| {pb:.3f} s | {pb / pf:.2f} | {pbw / pf:.2f} |", flush=True)
        print("\n| model | peak RSS, forward only | peak RSS, gradient run | difference |")
        print("|---|---|---|---|")
        for name, path in models.items():
            common = ["--model", path, "--threads", "1", "--repeat", "1", "--warmup", "0"]
            plain, _ = rmb.peak_rss_mb([bench, *common, "--mode", "forward"])
            grad, _ = rmb.peak_rss_mb([bench, *common, "--mode", "gradient"])
            print(f"| {name} | {plain:.0f} MiB | {grad:.0f} MiB | +{grad - plain:.0f} MiB |", flush=True)
    print("\nCPU seconds (user + system, every thread), medians over rounds of per-process medians.")


if __name__ == "__main__":
    main()
