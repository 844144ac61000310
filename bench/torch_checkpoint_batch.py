#!/usr/bin/python3
"""The PyTorch script an ML engineer writes to draw a checkpoint's attention over a folder of photos:
the baseline of bench/run_checkpoint_batch.py.

    bench/torch_checkpoint_batch.py --model M.safetensors PHOTOS_DIR OUT_DIR [--batch 8] [--threads 2]
                                    [--save-maps MAPS.npz]

Written as a user would: a timm-style eager ViT (its Attention keeps the last weights it
computed, the usual way to get at them), the weights loaded from the timm-layout safetensors
file bench/make_vit.py writes (the very file vitattn reads), then, 8 photos at a time:
cv2.imread, resize to the model's size (INTER_AREA when shrinking), RGB, the timm family's
0.5 / 0.5 normalisation, one forward of the batch under torch.inference_mode(), the last block's
class-token row over the patches, mean over heads, min-max normalised, resized to the photo
(bilinear), cv2's jet colour map, a 50/50 blend with the photo, cv2.imwrite of a PNG
(`<stem>_attn.png`). The forward is the whole model (logits too), as `model(x)` is.

Threads: torch.set_num_threads(T), OpenBLAS's pool at T (Debian's torch does its products in
libblas.so.3), OpenMP waiting passively (busy-waiting OpenMP threads fight OpenBLAS's for the
cores; the passive setting is PyTorch's faster one here, see docs/performance.md).
`--save-maps`: the maps before drawing, [grid_h, grid_w] float32 per photo stem, for the check
against vitattn's `--save-attention`. Prints one JSON line (photos, seconds and CPU seconds from
the model load to the last PNG, the seconds before it, the forwards' own wall and CPU seconds).
"""
import argparse
import json
import os
import sys
import time

T_START = time.perf_counter()
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "pylib"))

EXTENSIONS = (".jpg", ".jpeg", ".png", ".webp", ".bmp", ".tif", ".tiff")


def parse_args():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("photos")
    ap.add_argument("out")
    ap.add_argument("--model", required=True, help="timm-layout ViT safetensors (bench/make_vit.py)")
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--save-maps", help="write the maps [grid_h, grid_w] per photo stem to this .npz")
    return ap.parse_args()


ARGS = parse_args()
os.environ["OPENBLAS_NUM_THREADS"] = os.environ["OMP_NUM_THREADS"] = str(ARGS.threads)
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import cv2  # noqa: E402
import numpy as np  # noqa: E402
import torch  # noqa: E402
from torch import nn  # noqa: E402

import safetensors_io  # noqa: E402  (the project's safetensors reader; Debian has no python3-safetensors)


class Attention(nn.Module):
    def __init__(self, dim, heads):
        super().__init__()
        self.heads, self.scale = heads, (dim // heads) ** -0.5
        self.qkv, self.proj = nn.Linear(dim, 3 * dim), nn.Linear(dim, dim)
        self.attn = None  # the last attention weights computed, (B, heads, N, N)

    def forward(self, x):
        b, n, c = x.shape
        qkv = self.qkv(x).reshape(b, n, 3, self.heads, c // self.heads).permute(2, 0, 3, 1, 4)
        q, k, v = qkv[0], qkv[1], qkv[2]                                  # (B, heads, N, C/heads)
        attn = ((q @ k.transpose(-2, -1)) * self.scale).softmax(dim=-1)   # (B, heads, N, N)
        self.attn = attn
        return self.proj((attn @ v).transpose(1, 2).reshape(b, n, c))


class Block(nn.Module):
    def __init__(self, dim, heads, hidden):
        super().__init__()
        self.norm1, self.attn = nn.LayerNorm(dim, eps=1e-6), Attention(dim, heads)
        self.norm2 = nn.LayerNorm(dim, eps=1e-6)
        self.mlp = nn.Sequential()
        self.mlp.fc1, self.mlp.act, self.mlp.fc2 = nn.Linear(dim, hidden), nn.GELU(), nn.Linear(hidden, dim)

    def forward(self, x):
        x = x + self.attn(self.norm1(x))
        return x + self.mlp(self.norm2(x))


class ViT(nn.Module):
    def __init__(self, patch, dim, depth, heads, hidden, n_patches, classes):
        super().__init__()
        self.patch_embed = nn.Module()
        self.patch_embed.proj = nn.Conv2d(3, dim, kernel_size=patch, stride=patch)
        self.cls_token = nn.Parameter(torch.zeros(1, 1, dim))
        self.pos_embed = nn.Parameter(torch.zeros(1, 1 + n_patches, dim))
        self.blocks = nn.ModuleList(Block(dim, heads, hidden) for _ in range(depth))
        self.norm = nn.LayerNorm(dim, eps=1e-6)
        self.head = nn.Linear(dim, classes)

    def forward(self, x):                                              # (B, 3, S, S)
        x = self.patch_embed.proj(x).flatten(2).transpose(1, 2)        # (B, N-1, D)
        x = torch.cat((self.cls_token.expand(x.shape[0], -1, -1), x), dim=1) + self.pos_embed
        for blk in self.blocks:
            x = blk(x)
        return self.head(self.norm(x)[:, 0])                           # (B, classes)


def load(path):
    tensors, meta = safetensors_io.read(path, only=("F32",))
    s = safetensors_io.timm_vit_shape(tensors, meta)
    model = ViT(s["patch"], s["dim"], s["depth"], s["heads"], s["hidden"], s["n_patches"], tensors["head.weight"].shape[0])
    model.load_state_dict({k: torch.from_numpy(v.copy()) for k, v in tensors.items()}, strict=True)
    return model.eval(), s["patch"], int(round(s["n_patches"] ** 0.5))


def preprocess(bgr, side):
    shrink = bgr.shape[1] >= side and bgr.shape[0] >= side
    small = cv2.resize(bgr, (side, side), interpolation=cv2.INTER_AREA if shrink else cv2.INTER_LINEAR)
    rgb = cv2.cvtColor(small, cv2.COLOR_BGR2RGB)
    return (torch.from_numpy(rgb).permute(2, 0, 1).float() / 255.0 - 0.5) / 0.5  # (3, S, S)


def draw(bgr, grid_map):
    lo, hi = float(grid_map.min()), float(grid_map.max())
    unit = (grid_map - lo) / (hi - lo) if hi > lo else np.zeros_like(grid_map)
    level = cv2.resize(unit, (bgr.shape[1], bgr.shape[0]), interpolation=cv2.INTER_LINEAR)
    heat = cv2.applyColorMap(cv2.convertScaleAbs(level, alpha=255.0), cv2.COLORMAP_JET)
    return cv2.addWeighted(bgr, 0.5, heat, 0.5, 0.0)


def main():
    torch.set_num_threads(ARGS.threads)
    t0, c0 = time.perf_counter(), time.process_time()
    model, patch, grid = load(ARGS.model)
    side = grid * patch
    os.makedirs(ARGS.out, exist_ok=True)
    paths = sorted(os.path.join(ARGS.photos, f) for f in os.listdir(ARGS.photos) if f.lower().endswith(EXTENSIONS))
    maps, forward_seconds, forward_cpu = {}, 0.0, 0.0
    with torch.inference_mode():
        for start in range(0, len(paths), ARGS.batch):
            chunk = paths[start:start + ARGS.batch]
            images = [cv2.imread(p, cv2.IMREAD_COLOR) for p in chunk]
            batch = torch.stack([preprocess(img, side) for img in images])  # (B, 3, S, S)
            f0, fc0 = time.perf_counter(), time.process_time()
            model(batch)
            forward_seconds += time.perf_counter() - f0
            forward_cpu += time.process_time() - fc0
            cls = model.blocks[-1].attn.attn[:, :, 0, 1:].mean(1)        # (B, N-1)
            for p, img, row in zip(chunk, images, cls):
                stem = os.path.splitext(os.path.basename(p))[0]
                grid_map = row.reshape(grid, grid).numpy()              # (grid_h, grid_w)
                if ARGS.save_maps:
                    maps[stem] = grid_map.copy()
                cv2.imwrite(os.path.join(ARGS.out, f"{stem}_attn.png"), draw(img, grid_map))
    if ARGS.save_maps:
        np.savez(ARGS.save_maps, **maps)
    print(json.dumps({"way": "pytorch", "photos": len(paths), "seconds": time.perf_counter() - t0,
                      "cpu_seconds": time.process_time() - c0, "setup_seconds": t0 - T_START,
                      "forward_seconds": forward_seconds, "forward_cpu_seconds": forward_cpu,
                      "torch": torch.__version__, "threads": torch.get_num_threads(), "batch": ARGS.batch,
                      "omp_wait_policy": os.environ["OMP_WAIT_POLICY"]}))


if __name__ == "__main__":
    main()
