#!/usr/bin/python3
"""Times torchvision's VisionTransformer forward on one fixed random 3x224x224 image.

The baseline for bench/run_model_bench.sh: the model is rebuilt from the safetensors file
that bench/make_vit.py wrote (so it holds the very weights vitattn runs), then timed with
torch.set_num_threads(T) (and OpenBLAS's own pool at T) under torch.inference_mode(), W warm-up runs, then N timed runs.
Prints one JSON line like vitattn_forward_bench.

  bench/torch_forward.py --model M.safetensors --threads T --repeat N [--warmup W] [--precision fp32|bf16]

--precision bf16 runs the forward under torch.autocast('cpu', dtype=torch.bfloat16), PyTorch's
own mixed precision (its linear layers in bf16, through oneDNN where torch has it).
"""
import argparse
import json
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", required=True)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--repeat", type=int, default=10)
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--omp-wait-policy", default="PASSIVE", choices=["PASSIVE", "ACTIVE"])
    ap.add_argument("--precision", default="fp32", choices=["fp32", "bf16"])
    args = ap.parse_args()

    # Debian's torch does its matrix products in libblas.so.3 (OpenBLAS pthread), whose own
    # pool ignores torch.set_num_threads: pin it too, before torch loads it, so T means T.
    os.environ["OPENBLAS_NUM_THREADS"] = os.environ["OMP_NUM_THREADS"] = str(args.threads)
    # With set_num_threads(2), torch's OpenMP workers spin between parallel regions (GNU
    # OpenMP's default) and fight OpenBLAS's own threads for the 2 cores: a forward then takes
    # several times as long (docs/performance.md). Passive waiting is PyTorch at its best, the
    # honest baseline; --omp-wait-policy ACTIVE (or the environment) restores the default.
    os.environ.setdefault("OMP_WAIT_POLICY", args.omp_wait_policy)
    import torch
    from make_vit import load_torchvision
    torch.set_num_threads(args.threads)
    model, config = load_torchvision(args.model)
    x = torch.randn(1, 3, 224, 224, generator=torch.Generator().manual_seed(0))
    seconds, cpu_seconds = [], []
    bf16 = args.precision == "bf16"
    autocast = torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16)
    # torch 1.13's fused attention (the fast path nn.MultiheadAttention takes without autograd)
    # fails under autocast ("expected scalar type BFloat16 but found Float"): the bf16 run keeps
    # autograd on, which sends it through the unfused path, and records a graph it never uses.
    if bf16:
        model.requires_grad_(True)
    with (torch.enable_grad() if bf16 else torch.inference_mode()), autocast:
        for _ in range(args.warmup):
            model(x)
        for _ in range(args.repeat):
            t0, c0 = time.perf_counter(), time.process_time()
            model(x)
            seconds.append(time.perf_counter() - t0)
            cpu_seconds.append(time.process_time() - c0)
    print(json.dumps({"model": args.model, "config": config, "threads": args.threads,
                      "torch_threads": torch.get_num_threads(),
                      "omp_wait_policy": os.environ["OMP_WAIT_POLICY"], "torch": torch.__version__,
                      "precision": args.precision,
                      "warmup": args.warmup, "repeat": args.repeat, "seconds": seconds,
                      "median": statistics.median(seconds),
                      "cpu_median": statistics.median(cpu_seconds)}))


if __name__ == "__main__":
    main()
