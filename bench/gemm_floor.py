#!/usr/bin/python3
"""The GEMM floor of a ViT forward: its matrix products alone, numpy float32 on OpenBLAS.

For a ViT with D = d_model, H heads of d = D/H, L layers, MLP width M, n = 197 tokens
(196 patches + class token) at 224 px, one forward holds these products:

  patch embedding  (196, 768) . (768, D)
  per layer        qkv  (n, D) . (D, 3D)
                   per head  Q.K^T (n, d) . (d, n)   and   A.V (n, n) . (n, d)
                   proj (n, D) . (D, D)
                   fc1  (n, D) . (D, M)
                   fc2  (n, M) . (M, D)
  head             (1, D) . (D, 1000)

Every output is preallocated and written with np.matmul(..., out=...), so a timed run is
GEMMs only: no norms, softmax, GELU, bias or allocation. Weights are stored (out, in) as
nn.Linear and safetensors hold them and read as transposed views, the layout vitattn and
PyTorch multiply (on this machine it is also a little faster than (in, out)). No implementation of the forward
can do less arithmetic, so vitattn / floor says how much time goes to everything else.
OPENBLAS_NUM_THREADS is set from --threads before numpy is imported. Prints one JSON line.

  bench/gemm_floor.py --d-model D --heads H --mlp M [--layers 12] --threads T --repeat N [--warmup W]
"""
import argparse
import json
import os
import statistics
import sys
import time


def parse():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--d-model", type=int, required=True)
    ap.add_argument("--heads", type=int, required=True)
    ap.add_argument("--mlp", type=int, required=True)
    ap.add_argument("--layers", type=int, default=12)
    ap.add_argument("--classes", type=int, default=1000)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--repeat", type=int, default=10)
    ap.add_argument("--warmup", type=int, default=2)
    return ap.parse_args()


def plan(np, rng, d, heads, mlp, layers, classes, n_patches=196, patch_dim=3 * 16 * 16):
    """The forward's products as (a, b, out) triples, operands random, outputs preallocated.
    Each layer has its own weights (as the real model), so the caches see the same traffic."""
    f32 = np.float32
    n, dh = n_patches + 1, d // heads

    def rand(*shape):
        return rng.standard_normal(shape, dtype=f32)

    def empty(*shape):
        return np.empty(shape, dtype=f32)

    def weight_t(d_out, d_in):
        return rand(d_out, d_in).T  # (d_in, d_out) view of an (out, in) weight

    steps = [(rand(n_patches, patch_dim), weight_t(d, patch_dim), empty(n_patches, d))]
    x, xm, hidden = rand(n, d), rand(n, mlp), empty(n, mlp)
    for _ in range(layers):
        qkv = empty(n, 3 * d)
        steps.append((x, weight_t(3 * d, d), qkv))
        q, k, v = rand(heads, n, dh), rand(heads, n, dh), rand(heads, n, dh)
        kt = k.transpose(0, 2, 1)                    # (d, n) views: BLAS reads them transposed
        for h in range(heads):
            scores, out = empty(n, n), empty(n, dh)
            steps.append((q[h], kt[h], scores))      # (n, d) . (d, n)
            steps.append((rand(n, n), v[h], out))    # (n, n) . (n, d)
        steps.append((x, weight_t(d, d), empty(n, d)))     # proj
        steps.append((x, weight_t(mlp, d), hidden))        # fc1
        steps.append((xm, weight_t(d, mlp), empty(n, d)))  # fc2
    steps.append((x[:1], weight_t(classes, d), empty(1, classes)))
    return steps


def gflop(steps):
    return sum(2.0 * a.shape[0] * a.shape[1] * b.shape[1] for a, b, _ in steps) / 1e9


def main():
    args = parse()
    os.environ["OPENBLAS_NUM_THREADS"] = str(args.threads)  # before numpy loads OpenBLAS
    import numpy as np
    steps = plan(np, np.random.default_rng(0), args.d_model, args.heads, args.mlp, args.layers, args.classes)
    matmul = np.matmul

    def run():
        for a, b, out in steps:
            matmul(a, b, out=out)

    for _ in range(args.warmup):
        run()
    seconds, cpu_seconds = [], []
    for _ in range(args.repeat):
        t0, c0 = time.perf_counter(), time.process_time()
        run()
        seconds.append(time.perf_counter() - t0)
        cpu_seconds.append(time.process_time() - c0)
    med = statistics.median(seconds)
    work = gflop(steps)
    print(json.dumps({"d_model": args.d_model, "heads": args.heads, "mlp": args.mlp, "layers": args.layers,
                      "threads": args.threads, "products": len(steps), "gflop": work,
                      "warmup": args.warmup, "repeat": args.repeat, "seconds": seconds, "median": med,
                      "cpu_median": statistics.median(cpu_seconds),
                      "gflops_per_s": work / med}))


if __name__ == "__main__":
    main()
