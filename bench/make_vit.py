#!/usr/bin/python3
"""Writes random-weight ViT-S/16 and ViT-B/16 checkpoints for bench/run_model_bench.sh.

Builds torchvision's VisionTransformer (224 px, 16-px patches, 1000 classes, seeded random
weights) and saves its state dict as F32 safetensors in timm naming, which vitattn reads:

  vit_s16.safetensors  D=384, 6 heads,  12 layers, MLP 1536  (~88 MB)
  vit_b16.safetensors  D=768, 12 heads, 12 layers, MLP 3072  (~346 MB)

bench/torch_forward.py rebuilds the same torchvision model from the same file, so both
sides run identical weights. Never commit the outputs.

  bench/make_vit.py OUT_DIR [--models vit_s16 vit_b16]
"""
import argparse
import os
import re
import sys

import numpy as np

# The project's one safetensors writer and reader (tests/pylib/safetensors_io.py).
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "pylib"))
import safetensors_io  # noqa: E402

# name: (hidden_dim D, heads, layers, mlp_dim)
CONFIGS = {
    "vit_s16": (384, 6, 12, 1536),
    "vit_b16": (768, 12, 12, 3072),
}
PATCH, IMAGE, CLASSES = 16, 224, 1000


def build_torchvision(name, seed=0):
    import torch
    from torchvision.models.vision_transformer import VisionTransformer
    d, heads, layers, mlp = CONFIGS[name]
    torch.manual_seed(seed)
    model = VisionTransformer(image_size=IMAGE, patch_size=PATCH, num_layers=layers, num_heads=heads,
                              hidden_dim=d, mlp_dim=mlp, num_classes=CLASSES)
    # torchvision zero-initialises the classifier; random values make the logits a real check
    torch.nn.init.normal_(model.heads.head.weight, std=0.02)
    torch.nn.init.normal_(model.heads.head.bias, std=0.02)
    return model.eval()


# torchvision name → timm name; blocks are "encoder.layers.encoder_layer_{i}." → "blocks.{i}."
FIXED_NAMES = {
    "class_token": "cls_token",
    "encoder.pos_embedding": "pos_embed",
    "conv_proj.weight": "patch_embed.proj.weight",
    "conv_proj.bias": "patch_embed.proj.bias",
    "encoder.ln.weight": "norm.weight",
    "encoder.ln.bias": "norm.bias",
    "heads.head.weight": "head.weight",
    "heads.head.bias": "head.bias",
}
BLOCK_NAMES = {  # within a block; the rest of the name ("weight", "bias") is kept
    "ln_1.": "norm1.",
    "self_attention.in_proj_": "attn.qkv.",
    "self_attention.out_proj.": "attn.proj.",
    "ln_2.": "norm2.",
    "mlp.0.": "mlp.fc1.",
    "mlp.3.": "mlp.fc2.",
}
TV_BLOCK = re.compile(r"encoder\.layers\.encoder_layer_(\d+)\.(.*)")
TIMM_BLOCK = re.compile(r"blocks\.(\d+)\.(.*)")


def rename(name, fixed, block_re, block_names, block_prefix):
    if name in fixed:
        return fixed[name]
    m = block_re.fullmatch(name)
    if m:
        index, rest = m.groups()
        for old, new in block_names.items():
            if rest.startswith(old):
                return block_prefix.format(index) + new + rest[len(old):]
    raise ValueError(f"unexpected tensor {name}")


def timm_name(tv_name):
    """torchvision VisionTransformer state-dict name → timm name."""
    return rename(tv_name, FIXED_NAMES, TV_BLOCK, BLOCK_NAMES, "blocks.{}.")


def tv_name_of(timm):
    """timm name → torchvision name (the inverse of timm_name)."""
    return rename(timm, {v: k for k, v in FIXED_NAMES.items()}, TIMM_BLOCK,
                  {v: k for k, v in BLOCK_NAMES.items()}, "encoder.layers.encoder_layer_{}.")


def load_torchvision(path):
    """Rebuilds the torchvision model saved by this script from its safetensors file."""
    import torch
    tensors, meta = safetensors_io.read(path, only=("F32",))
    model = build_torchvision(meta["config"])
    state = {tv_name_of(k): torch.from_numpy(v.copy()) for k, v in tensors.items()}
    model.load_state_dict(state, strict=True)
    return model.eval(), meta["config"]


def make(name, out_dir):
    path = os.path.join(out_dir, f"{name}.safetensors")
    model = build_torchvision(name)
    tensors = [(timm_name(k), np.ascontiguousarray(v.detach().numpy(), dtype=np.float32))
               for k, v in model.state_dict().items()]
    d, heads, layers, mlp = CONFIGS[name]
    safetensors_io.write(path, tensors, {"config": name, "num_heads": str(heads),
                                         "source": "bench/make_vit.py (torchvision VisionTransformer, random)"})
    return path


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("out_dir")
    ap.add_argument("--models", nargs="+", default=list(CONFIGS), choices=list(CONFIGS))
    args = ap.parse_args()
    os.makedirs(args.out_dir, exist_ok=True)
    for name in args.models:
        path = make(name, args.out_dir)
        print(f"{path}: {os.path.getsize(path) / 1e6:.1f} MB", file=sys.stderr)


if __name__ == "__main__":
    main()
