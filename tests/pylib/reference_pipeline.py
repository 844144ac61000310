"""Reference (oracle) implementation of the vitattn pipeline in NumPy.

This module is written independently of the C++ binary and shares no code with
it. It follows the pipeline contract step by step:

    read model  ->  preprocess image  ->  patchify  ->  embed tokens
                ->  single-head attention  ->  class-token map

All maths after preprocessing is done in float64, so the result can serve as
the oracle for the float32 binary. Preprocessing stays in float32 because the
contract defines the normalised pixels as float32 values.

Notation (shapes in comments):
    img_size   S        side of the square network input, in pixels
    patch_size P        side of one square patch
    grid       G = S/P  patches per row / column
    n_patches  N = G*G
    n_tokens   1 + N    class token followed by the patch tokens
    d_model    D        token width
    d_k                 query/key/value width of the single head
"""

import cv2
import numpy as np

# The tests' one safetensors reader (tests/pylib), independent of the C++ reader too.
from safetensors_io import read as read_safetensors

IMAGENET_MEAN = (0.485, 0.456, 0.406)
IMAGENET_STD = (0.229, 0.224, 0.225)


# ---------------------------------------------------------------------------
# model
# ---------------------------------------------------------------------------

def _parse_triple(text):
    values = [float(v) for v in text.split(",")]
    if len(values) != 3:
        raise ValueError(f"expected 'r,g,b', got {text!r}")
    return tuple(values)


def load_model(path):
    """Reads a native-layout single-head model into a dict of float64 arrays."""
    tensors, metadata = read_safetensors(path)
    conv = tensors["patch_embed.proj.weight"].astype(np.float64)   # [D, 3, P, P]
    d_model, channels, patch_size, patch_w = conv.shape
    assert channels == 3 and patch_size == patch_w, conv.shape
    pos_embed = tensors["pos_embed"].astype(np.float64).reshape(-1, d_model)  # [1+N, D]
    n_patches = pos_embed.shape[0] - 1
    grid = int(round(np.sqrt(n_patches)))
    assert grid * grid == n_patches, f"N={n_patches} is not a square"
    d_k = tensors["attn.q.weight"].shape[0]

    def bias(name, size):
        if name in tensors:
            return tensors[name].astype(np.float64).reshape(size)
        return np.zeros(size)

    return {
        "img_size": grid * patch_size,                                  # S
        "patch_size": patch_size,                                       # P
        "grid": grid,                                                   # G
        "d_model": d_model,                                             # D
        "d_k": d_k,
        "W_E": conv.reshape(d_model, 3 * patch_size * patch_size),      # [D, 3*P*P]
        "b_E": bias("patch_embed.proj.bias", d_model),                  # [D]
        "cls_token": tensors["cls_token"].astype(np.float64).reshape(d_model),  # [D]
        "pos_embed": pos_embed,                                         # [1+N, D]
        "W_q": tensors["attn.q.weight"].astype(np.float64),             # [d_k, D]
        "W_k": tensors["attn.k.weight"].astype(np.float64),             # [d_k, D]
        "W_v": tensors["attn.v.weight"].astype(np.float64),             # [d_k, D]
        "b_q": bias("attn.q.bias", d_k),                                # [d_k]
        "b_k": bias("attn.k.bias", d_k),                                # [d_k]
        "b_v": bias("attn.v.bias", d_k),                                # [d_k]
        "mean": _parse_triple(metadata["mean"]) if "mean" in metadata else None,
        "std": _parse_triple(metadata["std"]) if "std" in metadata else None,
    }


def random_model(rng, img_size, patch_size, d_model, d_k, with_bias=True):
    """Random tensors in the native layout, scaled so attention is not flat."""
    n_patches = (img_size // patch_size) ** 2
    fan_in_patch = 3 * patch_size * patch_size
    model = {
        "patch_embed.proj.weight":
            rng.normal(0, 1 / np.sqrt(fan_in_patch), (d_model, 3, patch_size, patch_size)),
        "cls_token": rng.normal(0, 0.5, (1, 1, d_model)),
        "pos_embed": rng.normal(0, 0.5, (1, 1 + n_patches, d_model)),
    }
    for name in ("q", "k", "v"):
        model[f"attn.{name}.weight"] = rng.normal(0, 1.5 / np.sqrt(d_model), (d_k, d_model))
    if with_bias:
        model["patch_embed.proj.bias"] = rng.normal(0, 0.1, (d_model,))
        for name in ("q", "k", "v"):
            model[f"attn.{name}.bias"] = rng.normal(0, 0.1, (d_k,))
    return {name: value.astype(np.float32) for name, value in model.items()}


# ---------------------------------------------------------------------------
# image preprocessing (float32, exactly as the contract states)
# ---------------------------------------------------------------------------

def preprocess(path, img_size, mean, std):
    """Image file -> normalised RGB float32 array [S, S, 3] (height, width, channel)."""
    bgr = cv2.imread(str(path), cv2.IMREAD_COLOR)                   # [h, w, 3] uint8 BGR
    if bgr is None:
        raise ValueError(f"{path}: cv2.imread could not decode it")
    height, width = bgr.shape[:2]
    shrinking = width >= img_size and height >= img_size
    interpolation = cv2.INTER_AREA if shrinking else cv2.INTER_LINEAR
    resized = cv2.resize(bgr, (img_size, img_size), interpolation=interpolation)  # [S, S, 3]
    rgb = resized[:, :, ::-1]                                       # [S, S, 3] uint8 RGB
    mean32 = np.asarray(mean, dtype=np.float32)                     # [3]
    std32 = np.asarray(std, dtype=np.float32)                       # [3]
    return (rgb.astype(np.float32) / np.float32(255.0) - mean32) / std32  # [S, S, 3] float32


# ---------------------------------------------------------------------------
# network
# ---------------------------------------------------------------------------

def patchify(image, patch_size):
    """[S, S, 3] image -> [N, 3*P*P]; patches in raster order, each in (c, y, x) order."""
    img_size = image.shape[0]
    grid = img_size // patch_size
    chw = np.asarray(image, dtype=np.float64).transpose(2, 0, 1)    # [3, S, S]
    blocks = chw.reshape(3, grid, patch_size, grid, patch_size)     # [3, G, P, G, P]
    blocks = blocks.transpose(1, 3, 0, 2, 4)                        # [G_row, G_col, 3, P, P]
    return blocks.reshape(grid * grid, 3 * patch_size * patch_size)  # [N, 3*P*P]


def embed_tokens(patches, model):
    """[N, 3*P*P] -> X [1+N, D]: class token first, then projected patches, plus positions."""
    patch_tokens = patches @ model["W_E"].T + model["b_E"]          # [N, D]
    cls_row = model["cls_token"][None, :]                           # [1, D]
    tokens = np.concatenate([cls_row, patch_tokens], axis=0)        # [1+N, D]
    return tokens + model["pos_embed"]                              # [1+N, D]


def softmax_rows(scores):
    """Numerically stable softmax over each row."""
    shifted = scores - scores.max(axis=1, keepdims=True)            # [rows, cols], max 0
    weights = np.exp(shifted)
    return weights / weights.sum(axis=1, keepdims=True)


def attention_scores(X, model, scale=True):
    """Q·Kᵀ (divided by sqrt(d_k) unless scale is False): [1+N, 1+N], rows = queries."""
    Q = X @ model["W_q"].T + model["b_q"]                           # [1+N, d_k]
    K = X @ model["W_k"].T + model["b_k"]                           # [1+N, d_k]
    scores = Q @ K.T                                                # [1+N, 1+N]
    return scores / np.sqrt(model["d_k"]) if scale else scores


def attention(X, model, scale=True):
    """Single-head self-attention. Returns (A [1+N, 1+N], out [1+N, d_k])."""
    V = X @ model["W_v"].T + model["b_v"]                           # [1+N, d_k]
    A = softmax_rows(attention_scores(X, model, scale))             # [1+N, 1+N], rows sum to 1
    return A, A @ V                                                 # out: [1+N, d_k]


def cls_map(A, grid):
    """Attention of the class token to every patch, as a [G, G] grid (not renormalised)."""
    return A[0, 1:].reshape(grid, grid)                             # [G, G]


def normalisation(model, mean=None, std=None):
    """Chooses mean/std: explicit override, else model metadata, else ImageNet."""
    mean = mean if mean is not None else (model["mean"] or IMAGENET_MEAN)
    std = std if std is not None else (model["std"] or IMAGENET_STD)
    return tuple(mean), tuple(std)


def tokens(path, model, mean=None, std=None):
    """Image file -> token matrix X [1+N, D] (steps 1 to 5 of the contract)."""
    mean, std = normalisation(model, mean, std)
    image = preprocess(path, model["img_size"], mean, std)          # [S, S, 3] float32
    patches = patchify(image, model["patch_size"])                  # [N, 3*P*P]
    return embed_tokens(patches, model)                             # [1+N, D]


def run(path, model, mean=None, std=None, scale=True):
    """Whole pipeline for one image: returns (A [1+N, 1+N] float64, map [G, G] float64)."""
    X = tokens(path, model, mean, std)                              # [1+N, D]
    A, _ = attention(X, model, scale=scale)                         # [1+N, 1+N]
    return A, cls_map(A, model["grid"])
