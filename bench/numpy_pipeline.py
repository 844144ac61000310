#!/usr/bin/python3
"""Plain-Python baseline for the vitattn speed benchmark (not a test).

What a reader of the tutorial would write: one image after another, OpenCV for
the codecs and resizing, numpy for the model (seeded random weights, default
shapes S=224, P=16, D=768, d_k=64), the tutorial's self_attention() function,
then heat-map, colour map, blend and PNG write.

    numpy_pipeline.py [--constant-map] -o OUT images-or-folders...

--constant-map skips the patch embedding and the attention and draws a
constant map instead: the codec/resize-only floor of the pipeline.

Run it with /usr/bin/python3 (Debian numpy + cv2), never a pyenv python.
"""
import argparse
import os
import sys

import cv2
import numpy as np

S, P, D, D_K = 224, 16, 768, 64
G = S // P                      # patches per side
N = G * G                       # number of patches
MEAN = np.array([0.485, 0.456, 0.406], dtype=np.float32)
STD = np.array([0.229, 0.224, 0.225], dtype=np.float32)
IMAGE_EXTS = {".jpg", ".jpeg", ".png", ".bmp", ".tif", ".tiff", ".webp",
              ".pbm", ".pgm", ".ppm", ".pnm", ".jp2"}


def make_weights(rng):
    """Seeded random weights in float32, the way a tutorial sets them up."""
    def rand(*shape):
        return (rng.standard_normal(shape) * 0.02).astype(np.float32)
    return {
        "W_E": rand(3 * P * P, D),      # patch embedding (x @ W_E layout)
        "b_E": rand(D),
        "cls": rand(1, D),
        "pos": rand(1 + N, D),
        "W_q": rand(D, D_K),
        "W_k": rand(D, D_K),
        "W_v": rand(D, D_K),
    }


def softmax(z):
    z = z - z.max(axis=-1, keepdims=True)   # numerically stable
    e = np.exp(z)
    return e / e.sum(axis=-1, keepdims=True)


def self_attention(X, W_q, W_k, W_v):
    """The tutorial's single-head self-attention."""
    Q = X @ W_q
    K = X @ W_k
    V = X @ W_v
    d_k = W_k.shape[1]
    scores = Q @ K.T / np.sqrt(d_k)
    weights = softmax(scores)
    return weights @ V, weights


def preprocess(img_bgr):
    h, w = img_bgr.shape[:2]
    interp = cv2.INTER_AREA if (w >= S and h >= S) else cv2.INTER_LINEAR
    small = cv2.resize(img_bgr, (S, S), interpolation=interp)
    rgb = cv2.cvtColor(small, cv2.COLOR_BGR2RGB)
    x = (rgb.astype(np.float32) / 255.0 - MEAN) / STD           # (S, S, 3)
    # patches in raster order, each flattened in (channel, y, x) order
    patches = (x.transpose(2, 0, 1)                               # (3, S, S)
                .reshape(3, G, P, G, P)
                .transpose(1, 3, 0, 2, 4)                         # (G, G, 3, P, P)
                .reshape(N, 3 * P * P))
    return patches


def attention_map(patches, wts):
    tokens = patches @ wts["W_E"] + wts["b_E"]                    # (N, D)
    X = np.concatenate([wts["cls"], tokens], axis=0) + wts["pos"]  # (1+N, D)
    _, A = self_attention(X, wts["W_q"], wts["W_k"], wts["W_v"])
    return A[0, 1:].reshape(G, G)


def process(path, out_dir, wts, constant_map):
    img = cv2.imread(path, cv2.IMREAD_COLOR)
    if img is None:
        raise RuntimeError("cannot decode")
    h, w = img.shape[:2]
    patches = preprocess(img)
    if constant_map:
        cls_map = np.full((G, G), 1.0 / N, dtype=np.float32)
    else:
        cls_map = attention_map(patches, wts)
    lo, hi = float(cls_map.min()), float(cls_map.max())
    norm = (cls_map - lo) / (hi - lo) if hi > lo else np.zeros_like(cls_map)
    heat = cv2.resize(norm.astype(np.float32), (w, h), interpolation=cv2.INTER_LINEAR)
    heat_u8 = np.clip(heat * 255.0 + 0.5, 0, 255).astype(np.uint8)
    colour = cv2.applyColorMap(heat_u8, cv2.COLORMAP_JET)
    blended = cv2.addWeighted(img, 0.5, colour, 0.5, 0.0)
    stem = os.path.splitext(os.path.basename(path))[0]
    out_path = os.path.join(out_dir, stem + "_attn.png")
    if not cv2.imwrite(out_path, blended):
        raise RuntimeError("cannot write " + out_path)


def expand(inputs):
    files = []
    for p in inputs:
        if os.path.isdir(p):
            for name in sorted(os.listdir(p)):
                full = os.path.join(p, name)
                if os.path.isfile(full) and os.path.splitext(name)[1].lower() in IMAGE_EXTS:
                    files.append(full)
        else:
            files.append(p)
    return files


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--constant-map", action="store_true",
                    help="skip embedding + attention (codec-only floor)")
    ap.add_argument("-o", "--output", required=True, help="output folder")
    ap.add_argument("inputs", nargs="+", help="image files or folders")
    args = ap.parse_args()

    os.makedirs(args.output, exist_ok=True)
    wts = None if args.constant_map else make_weights(np.random.default_rng(0))
    failed = 0
    for path in expand(args.inputs):
        try:
            process(path, args.output, wts, args.constant_map)
        except Exception as exc:  # one line per failed file, keep going
            print(f"{path}: {exc}", file=sys.stderr)
            failed += 1
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
