#!/usr/bin/python3
"""Times PyTorch autograd's backward of one class logit against its forward: the baseline of
bench/run_backward_bench.sh for vitattn's backward (core/vit_backward.hpp).

The torchvision model is rebuilt from the safetensors file bench/make_vit.py wrote (the very
weights vitattn runs), on one fixed random 3x224x224 image, torch.set_num_threads(T) and
OpenBLAS's pool at T (as bench/torch_forward.py does, and for the same reasons). Timed, each
N times after W untimed:
  forward            under torch.inference_mode(): what an attention map costs
  grad_forward       with autograd recording, the input requiring grad, the weights frozen
  backward           y_c.backward() of that graph: activations' gradients only, as vitattn
  backward_weights   the same with the weights' gradients too (what a training-style hook
                     setup, e.g. pytorch-grad-cam's, computes)
Prints one JSON line.

  bench/torch_backward.py --model M.safetensors --threads T --repeat N [--warmup W]
"""
import argparse
import json
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))


def timed(fn, seconds, cpu_seconds):
    t0, c0 = time.perf_counter(), time.process_time()
    out = fn()
    seconds.append(time.perf_counter() - t0)
    cpu_seconds.append(time.process_time() - c0)
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", required=True)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--repeat", type=int, default=10)
    ap.add_argument("--warmup", type=int, default=2)
    args = ap.parse_args()
    os.environ["OPENBLAS_NUM_THREADS"] = os.environ["OMP_NUM_THREADS"] = str(args.threads)
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    import torch
    from make_vit import load_torchvision
    torch.set_num_threads(args.threads)
    model, config = load_torchvision(args.model)
    x0 = torch.randn(1, 3, 224, 224, generator=torch.Generator().manual_seed(0))
    with torch.inference_mode():
        c = int(model(x0).argmax())
    times = {k: ([], []) for k in ("forward", "grad_forward", "backward", "backward_weights")}

    for i in range(args.warmup + args.repeat):
        sink = {k: ([], []) for k in times}
        t = times if i >= args.warmup else sink
        with torch.inference_mode():
            timed(lambda: model(x0), *t["forward"])
        for weights in (False, True):
            for p in model.parameters():
                p.requires_grad_(weights)
                p.grad = None
            x = x0.clone().requires_grad_(True)
            logits = timed(lambda: model(x), *(t["grad_forward"] if not weights else sink["grad_forward"]))
            timed(lambda: logits[0, c].backward(), *t["backward_weights" if weights else "backward"])

    out = {"model": args.model, "config": config, "threads": args.threads, "torch": torch.__version__,
           "repeat": args.repeat, "warmup": args.warmup}
    for k, (wall, cpu) in times.items():
        out[k + "_median"] = statistics.median(wall)
        out[k + "_cpu_median"] = statistics.median(cpu)
    print(json.dumps(out))


if __name__ == "__main__":
    main()
