#!/usr/bin/python3
"""DINO's video_generation.py loop in PyTorch, the baseline of bench/run_video_bench.sh.

    bench/dino_video_loop.py --model M.safetensors IN.mp4 OUT.mp4 [--threads T] [--threshold t]
                             [--save-maps MAPS.npy] [--max-frames M] [--imagenet]

facebookresearch/dino's video_generation.py (VideoGenerator._inference) does, per frame:
read, ToTensor, Resize, Normalize, crop to a multiple of the patch, the model's
get_last_selfattention, the class token's row over the patches per head, DINO's mass mask
(`--threshold`), interpolate the heads to the image, mean over heads, colormap, write. This is
that loop with these changes, each of which makes the baseline faster or the
same, never slower:

- frames are decoded by cv2.VideoCapture and the output written by cv2.VideoWriter as they
  come, in memory (DINO writes every frame as a JPEG, runs the model on the JPEGs through
  PIL, writes the maps as JPEGs with matplotlib, and reads them back to encode the video);
- the resize is cv2.resize to the model's own size (INTER_AREA when shrinking, as vitattn);
- the heads are averaged before the map is interpolated (one resize per frame, not one per head);
- the map is drawn as vitattn draws it: min-max normalised, resized to the frame (bilinear),
  jet, blended 50/50 with the frame; `--threshold t` applies DINO's mask to the drawn map and
  outlines it (DINO computes its masks and never draws them);
- the writer's codec is the one vitattn uses (H.264 `avc1` in .mp4, MJPG in .avi).

The model is DINO's vision_transformer.py structure (Attention returning its weights, Block
with return_attention, get_last_selfattention: every block but the last in full, then the last
block's attention only), built from a timm-layout safetensors file such as bench/make_vit.py
writes, so it holds the very weights vitattn runs. Normalisation: the timm family's 0.5 / 0.5,
which vitattn uses for that file (`--imagenet`: DINO's ImageNet mean and std).

Threads: torch.set_num_threads(T) and OpenBLAS's own pool at T (Debian's torch does its
products in libblas.so.3), passive OpenMP waiting as bench/torch_forward.py explains.
Prints one JSON line: frames, loop seconds and CPU seconds (from the first read to the
writer's release), fps, and the seconds spent before the loop (import torch, model build).
"""
import argparse
import json
import os
import sys
import time

T_START = time.perf_counter()
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "pylib"))

IMAGENET = ((0.485, 0.456, 0.406), (0.229, 0.224, 0.225))
HALF = ((0.5, 0.5, 0.5), (0.5, 0.5, 0.5))
FOURCC = {".mp4": "avc1", ".avi": "MJPG"}


def parse_args():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("input")
    ap.add_argument("output")
    ap.add_argument("--model", required=True, help="timm-layout ViT safetensors (bench/make_vit.py)")
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--threshold", type=float, default=None, help="DINO's mass mask, outlined (e.g. 0.6)")
    ap.add_argument("--max-frames", type=int, default=0, help="0: every frame")
    ap.add_argument("--save-maps", help="also write the drawn maps as one .npy [frames, grid_h, grid_w]")
    ap.add_argument("--imagenet", action="store_true", help="ImageNet mean/std instead of the timm family's 0.5")
    ap.add_argument("--omp-wait-policy", default="PASSIVE", choices=["PASSIVE", "ACTIVE"])
    return ap.parse_args()


ARGS = parse_args()
os.environ["OPENBLAS_NUM_THREADS"] = os.environ["OMP_NUM_THREADS"] = str(ARGS.threads)
os.environ.setdefault("OMP_WAIT_POLICY", ARGS.omp_wait_policy)

import cv2  # noqa: E402
import numpy as np  # noqa: E402
import torch  # noqa: E402
from torch import nn  # noqa: E402

import safetensors_io  # noqa: E402  (tests/pylib: the project's one safetensors reader)


# ---------------------------------------------------------------------------
# The model: DINO's vision_transformer.py structure
# ---------------------------------------------------------------------------


class Attention(nn.Module):
    def __init__(self, dim, num_heads):
        super().__init__()
        self.num_heads = num_heads
        self.scale = (dim // num_heads) ** -0.5
        self.qkv = nn.Linear(dim, dim * 3, bias=True)
        self.proj = nn.Linear(dim, dim)

    def forward(self, x):
        b, n, c = x.shape
        # x (B, N, C) · qkv (C, 3C) → (3, B, heads, N, C/heads)
        qkv = self.qkv(x).reshape(b, n, 3, self.num_heads, c // self.num_heads).permute(2, 0, 3, 1, 4)
        q, k, v = qkv[0], qkv[1], qkv[2]
        attn = ((q @ k.transpose(-2, -1)) * self.scale).softmax(dim=-1)  # (B, heads, N, N)
        x = (attn @ v).transpose(1, 2).reshape(b, n, c)
        return self.proj(x), attn


class Mlp(nn.Module):
    def __init__(self, dim, hidden):
        super().__init__()
        self.fc1, self.act, self.fc2 = nn.Linear(dim, hidden), nn.GELU(), nn.Linear(hidden, dim)

    def forward(self, x):
        return self.fc2(self.act(self.fc1(x)))


class Block(nn.Module):
    def __init__(self, dim, num_heads, hidden):
        super().__init__()
        self.norm1, self.attn = nn.LayerNorm(dim, eps=1e-6), Attention(dim, num_heads)
        self.norm2, self.mlp = nn.LayerNorm(dim, eps=1e-6), Mlp(dim, hidden)

    def forward(self, x, return_attention=False):
        y, attn = self.attn(self.norm1(x))
        if return_attention:
            return attn
        x = x + y
        return x + self.mlp(self.norm2(x))


class PatchEmbed(nn.Module):
    def __init__(self, patch, dim):
        super().__init__()
        self.proj = nn.Conv2d(3, dim, kernel_size=patch, stride=patch)

    def forward(self, x):
        return self.proj(x).flatten(2).transpose(1, 2)  # (B, 3, H, W) → (B, HW/P², D)


class VisionTransformer(nn.Module):
    def __init__(self, patch, dim, depth, num_heads, hidden, n_patches):
        super().__init__()
        self.patch_size = patch
        self.patch_embed = PatchEmbed(patch, dim)
        self.cls_token = nn.Parameter(torch.zeros(1, 1, dim))
        self.pos_embed = nn.Parameter(torch.zeros(1, 1 + n_patches, dim))
        self.blocks = nn.ModuleList(Block(dim, num_heads, hidden) for _ in range(depth))
        self.norm = nn.LayerNorm(dim, eps=1e-6)

    def prepare_tokens(self, x):
        b = x.shape[0]
        x = self.patch_embed(x)
        x = torch.cat((self.cls_token.expand(b, -1, -1), x), dim=1)
        if x.shape[1] != self.pos_embed.shape[1]:
            raise SystemExit("dino_video_loop: only the model's own input size is supported")
        return x + self.pos_embed

    def get_last_selfattention(self, x):
        x = self.prepare_tokens(x)
        for i, blk in enumerate(self.blocks):
            if i < len(self.blocks) - 1:
                x = blk(x)
            else:
                return blk(x, return_attention=True)  # (B, heads, N, N)


def load_vit(path):
    """A timm-layout safetensors file → (model, image size). Heads from __metadata__ num_heads, else D/64."""
    tensors, meta = safetensors_io.read(path, only=("F32",))
    s = safetensors_io.timm_vit_shape(tensors, meta)
    model = VisionTransformer(s["patch"], s["dim"], s["depth"], s["heads"], s["hidden"], s["n_patches"])
    state = {k: torch.from_numpy(v.copy()) for k, v in tensors.items() if not k.startswith("head.")}
    model.load_state_dict(state, strict=True)
    for p in model.parameters():
        p.requires_grad = False
    side = int(round(s["n_patches"] ** 0.5)) * s["patch"]
    return model.eval(), side


# ---------------------------------------------------------------------------
# The loop: VideoGenerator._inference per frame, decoding and writing in memory
# ---------------------------------------------------------------------------


def transform(bgr, side, mean, std):
    """Frame (H, W, 3) BGR u8 → (1, 3, side, side): resize, ToTensor, Normalize."""
    shrink = bgr.shape[1] >= side and bgr.shape[0] >= side
    small = cv2.resize(bgr, (side, side), interpolation=cv2.INTER_AREA if shrink else cv2.INTER_LINEAR)
    img = torch.from_numpy(np.ascontiguousarray(small[:, :, ::-1])).permute(2, 0, 1).float().div_(255)
    return ((img - mean) / std).unsqueeze(0)


def mass_mask(attn, threshold):
    """DINO's mask: the fewest patches holding `threshold` of the mass. attn (n,) → bool (n,)."""
    val, idx = torch.sort(attn)
    val = val / val.sum()
    cumval = torch.cumsum(val, dim=0)
    return (cumval > (1 - threshold))[torch.argsort(idx)]


def draw(frame, grid_map, mask):
    """vitattn's overlay: min-max normalise, resize to the frame, jet, 50/50 blend, mask outline."""
    lo, hi = float(grid_map.min()), float(grid_map.max())
    unit = (grid_map - lo) / (hi - lo) if hi > lo else np.zeros_like(grid_map)
    level = cv2.resize(unit, (frame.shape[1], frame.shape[0]), interpolation=cv2.INTER_LINEAR)
    heat = cv2.applyColorMap(cv2.convertScaleAbs(level, alpha=255.0), cv2.COLORMAP_JET)
    out = cv2.addWeighted(frame, 0.5, heat, 0.5, 0.0)
    if mask is not None:
        big = cv2.resize(mask.astype(np.uint8) * 255, (frame.shape[1], frame.shape[0]),
                         interpolation=cv2.INTER_NEAREST)
        contours, _ = cv2.findContours(big, cv2.RETR_EXTERNAL, cv2.CHAIN_APPROX_SIMPLE)
        cv2.drawContours(out, contours, -1, (255, 255, 255), max(1, min(frame.shape[:2]) // 150))
    return out


def run(model, side, args):
    norm = IMAGENET if args.imagenet else HALF
    mean, std = (torch.tensor(v).view(3, 1, 1) for v in norm)
    cap = cv2.VideoCapture(args.input, cv2.CAP_FFMPEG)
    if not cap.isOpened():
        raise SystemExit(f"dino_video_loop: {args.input}: cannot open")
    fps = cap.get(cv2.CAP_PROP_FPS)
    ext = os.path.splitext(args.output)[1].lower()
    writer, maps, count = None, [], 0
    while not args.max_frames or count < args.max_frames:
        ok, frame = cap.read()
        if not ok:
            break
        if writer is None:
            writer = cv2.VideoWriter(args.output, cv2.CAP_FFMPEG, cv2.VideoWriter_fourcc(*FOURCC[ext]), fps,
                                     (frame.shape[1], frame.shape[0]))
        img = transform(frame, side, mean, std)
        p = model.patch_size
        img = img[:, :, :img.shape[2] - img.shape[2] % p, :img.shape[3] - img.shape[3] % p]
        h_featmap, w_featmap = img.shape[-2] // p, img.shape[-1] // p
        attentions = model.get_last_selfattention(img)       # (1, heads, N, N)
        nh = attentions.shape[1]
        attentions = attentions[0, :, 0, 1:].reshape(nh, -1)   # the class token's row over the patches
        mean_map = attentions.mean(0)                          # (h·w,)
        mask = None
        if args.threshold is not None:
            mask = mass_mask(mean_map, args.threshold).reshape(h_featmap, w_featmap).numpy()
        grid_map = mean_map.reshape(h_featmap, w_featmap).numpy()
        if args.save_maps:
            maps.append(grid_map.copy())
        writer.write(draw(frame, grid_map, mask))
        count += 1
    cap.release()
    if writer is not None:
        writer.release()
    if args.save_maps:
        np.save(args.save_maps, np.stack(maps) if maps else np.zeros((0, 0, 0), np.float32))
    return count


def main():
    torch.set_num_threads(ARGS.threads)
    model, side = load_vit(ARGS.model)
    setup = time.perf_counter() - T_START
    t0, c0 = time.perf_counter(), time.process_time()
    with torch.inference_mode():
        frames = run(model, side, ARGS)
    seconds, cpu = time.perf_counter() - t0, time.process_time() - c0
    if frames == 0:
        raise SystemExit(f"dino_video_loop: {ARGS.input}: no frame decoded")
    print(json.dumps({"way": "pytorch", "frames": frames, "seconds": seconds, "cpu_seconds": cpu,
                      "fps": frames / seconds, "setup_seconds": setup, "threads": ARGS.threads,
                      "torch_threads": torch.get_num_threads(), "torch": torch.__version__,
                      "omp_wait_policy": os.environ["OMP_WAIT_POLICY"], "img_size": side}))


if __name__ == "__main__":
    main()
