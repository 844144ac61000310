#!/usr/bin/python3
"""Times a text-prompted legrad map against the plain attention map on a ViT-B/16-shaped CLIP
(not a test): what asking in words costs per image beyond the image forward.

  bench/run_text_map_bench.py [--rounds 3] [--images 8]

The model: random weights in OpenAI CLIP's names, the image tower ViT-B/16's shape (width 768,
12 layers, 12 heads, MLP 3072, 16-pixel patches on 224², a 512-wide projection) and the text
tower ViT-B/32's (bench/run_zeroshot_bench.py text_tensors), written once to a temporary
safetensors file. The images: ../shared/images' photos, copied to --images files.
Each round runs, in this order, four whole processes of the image command (`-j 1`: one image at a
time, its products on every core):
  attention: `--method attention` (one forward per image: the baseline), on 1 image and on all;
  legrad:    `--text "a photo of a cat" --method legrad` (the forward with its tape, LeGrad's
             per-layer backwards for the last two layers), on 1 image and on all.
The per-image cost of each is (all − 1) / (images − 1): the fixed costs (start, model, the text
tower and its one text) cancel. Printed: medians over the rounds, wall seconds, and the ratio
legrad / attention per image; the load average before and after.
"""
import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests" / "pylib"))
sys.path.insert(0, str(REPO / "bench"))

D, LAYERS, HEADS, MLP, P, GRID, EMBED = 768, 12, 12, 3072, 16, 14, 512


def image_tensors(rng):
    """ViT-B/16's image tower under OpenAI's names (without the visual. prefix)."""
    import numpy as np
    r = lambda *s, sc=0.02: (rng.standard_normal(s) * sc).astype(np.float32)  # noqa: E731
    t = {"conv1.weight": r(D, 3, P, P), "class_embedding": r(D), "positional_embedding": r(1 + GRID * GRID, D),
         "ln_pre.weight": 1 + r(D), "ln_pre.bias": r(D), "ln_post.weight": 1 + r(D), "ln_post.bias": r(D),
         "proj": r(D, EMBED, sc=D ** -0.5)}
    for i in range(LAYERS):
        b = f"transformer.resblocks.{i}."
        t.update({b + "ln_1.weight": 1 + r(D), b + "ln_1.bias": r(D), b + "attn.in_proj_weight": r(3 * D, D),
                  b + "attn.in_proj_bias": r(3 * D), b + "attn.out_proj.weight": r(D, D), b + "attn.out_proj.bias": r(D),
                  b + "ln_2.weight": 1 + r(D), b + "ln_2.bias": r(D), b + "mlp.c_fc.weight": r(MLP, D),
                  b + "mlp.c_fc.bias": r(MLP), b + "mlp.c_proj.weight": r(D, MLP), b + "mlp.c_proj.bias": r(D)})
    return t


def run(binary, model, inputs, out, extra):
    args = [binary, "--model", model, "-o", out, "-j", "1", *extra, *inputs]
    t0 = time.perf_counter()
    p = subprocess.run(args, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    if p.returncode != 0:
        sys.exit(f"vitattn failed: {p.stderr[-2000:]}")
    return wall


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--images", type=int, default=8)
    args = ap.parse_args()
    import numpy as np
    import safetensors_io
    from run_zeroshot_bench import text_tensors
    binary = os.environ.get("VITATTN_BIN", str(REPO / "build" / "release" / "vitattn"))
    photos = sorted(p for p in (REPO.parent / "shared" / "images").iterdir() if p.suffix in (".png", ".jpg"))
    if not photos:
        sys.exit("no photos in ../shared/images")
    print(f"load average before: {os.getloadavg()[0]:.2f}; {args.images} images, {os.cpu_count()} cores, "
          f"{args.rounds} rounds")
    methods = {"attention": ["--method", "attention"],
               "legrad": ["--text", "a photo of a cat", "--method", "legrad"]}
    with tempfile.TemporaryDirectory() as d:
        d = Path(d)
        rng = np.random.default_rng(0)
        model = d / "clip_b16.safetensors"
        safetensors_io.write(model, {"visual." + k: v for k, v in image_tensors(rng).items()} | text_tensors(rng))
        inputs = []
        for i in range(args.images):
            copy = d / f"img{i}{photos[i % len(photos)].suffix}"  # a copy: links to one file are one input
            shutil.copyfile(photos[i % len(photos)], copy)
            inputs.append(copy)
        per_image = {m: [] for m in methods}
        for r in range(args.rounds):
            for m, extra in methods.items():
                one = run(binary, model, inputs[:1], d / f"{m}{r}a", extra)
                every = run(binary, model, inputs, d / f"{m}{r}b", extra)
                per_image[m].append((every - one) / (args.images - 1))
    med = {m: statistics.median(v) for m, v in per_image.items()}
    for m, v in med.items():
        print(f"{m}: {v:.3f} s per image (median; rounds {', '.join(f'{x:.3f}' for x in per_image[m])})")
    print(f"legrad with a text / attention, per image: {med['legrad'] / med['attention']:.2f}x")
    print(f"load average after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
