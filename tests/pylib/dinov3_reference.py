"""DINOv3 in torch, for the oracle tests: random weights in facebookresearch names
(make_weights) and Hugging Face's (to_hf), the float64 re-implementation of its RoPE forward
(reference), the input (make_photo, preprocess), and hf_folder: a hub-style DINOv3ViTModel
snapshot with the reference's attention on its photo. What each part follows:
tests/oracle/test_family_dinov3.py. Nothing here comes from vitattn.
"""
import json
import math
from pathlib import Path
import numpy as np
import safetensors_io
from harness import need

try:
    import torch
except ImportError as e:  # CI installs python3-torch
    need(False, f"cannot import torch ({e})")


IMAGENET = ((0.485, 0.456, 0.406), (0.229, 0.224, 0.225))
# A small DINOv3: D=64, 4 heads of 16 (4 RoPE periods), 3 blocks, 4 storage tokens, patch 8.
D, HEADS, LAYERS, MLP, REGS, P = 64, 4, 3, 128, 4, 8


def make_weights(seed=3, d=D, layers=LAYERS, mlp=MLP, regs=REGS, p=P):
    """Random weights in facebookresearch/dinov3 names (torch tensors, float32)."""
    g = torch.Generator().manual_seed(seed)

    def rnd(*shape, std=0.2):
        return torch.randn(*shape, generator=g) * std

    w = {"cls_token": rnd(1, 1, d, std=0.5), "storage_tokens": rnd(1, regs, d, std=0.5), "mask_token": torch.zeros(1, d),
         "patch_embed.proj.weight": rnd(d, 3, p, p, std=0.1), "patch_embed.proj.bias": rnd(d, std=0.1),
         "rope_embed.periods": 100.0 ** (2 * torch.arange(d // HEADS // 4, dtype=torch.float32) / (d // HEADS // 2)),
         "norm.weight": 1 + rnd(d, std=0.1), "norm.bias": rnd(d, std=0.1)}
    for i in range(layers):
        b = f"blocks.{i}."
        mask = torch.ones(3 * d)
        mask[d:2 * d] = 0  # init_weights_vit: the key third of bias_mask is zero
        w.update({b + "norm1.weight": 1 + rnd(d, std=0.1), b + "norm1.bias": rnd(d, std=0.1),
                  b + "attn.qkv.weight": rnd(3 * d, d, std=0.25), b + "attn.qkv.bias": rnd(3 * d, std=0.3),
                  b + "attn.qkv.bias_mask": mask,
                  b + "attn.proj.weight": rnd(d, d), b + "attn.proj.bias": rnd(d, std=0.1),
                  b + "ls1.gamma": 0.5 + rnd(d, std=0.1),
                  b + "norm2.weight": 1 + rnd(d, std=0.1), b + "norm2.bias": rnd(d, std=0.1),
                  b + "mlp.fc1.weight": rnd(mlp, d), b + "mlp.fc1.bias": rnd(mlp, std=0.1),
                  b + "mlp.fc2.weight": rnd(d, mlp), b + "mlp.fc2.bias": rnd(d, std=0.1),
                  b + "ls2.gamma": 0.5 + rnd(d, std=0.1)})
    return w


def to_hf(w, layers=LAYERS):
    """The same model in Hugging Face DINOv3ViTModel names (k_proj without a bias)."""
    d = w["cls_token"].shape[-1]
    hf = {"embeddings.cls_token": w["cls_token"], "embeddings.mask_token": w["mask_token"][None],
          "embeddings.register_tokens": w["storage_tokens"],
          "embeddings.patch_embeddings.weight": w["patch_embed.proj.weight"],
          "embeddings.patch_embeddings.bias": w["patch_embed.proj.bias"],
          "norm.weight": w["norm.weight"], "norm.bias": w["norm.bias"]}
    for i in range(layers):
        b, h = f"blocks.{i}.", f"layer.{i}."
        qkv_w, qkv_b = w[b + "attn.qkv.weight"], w[b + "attn.qkv.bias"]
        for j, name in enumerate(("q_proj", "k_proj", "v_proj")):
            hf[h + f"attention.{name}.weight"] = qkv_w[j * d:(j + 1) * d]
            if name != "k_proj":
                hf[h + f"attention.{name}.bias"] = qkv_b[j * d:(j + 1) * d]
        hf.update({h + "norm1.weight": w[b + "norm1.weight"], h + "norm1.bias": w[b + "norm1.bias"],
                   h + "attention.o_proj.weight": w[b + "attn.proj.weight"],
                   h + "attention.o_proj.bias": w[b + "attn.proj.bias"],
                   h + "layer_scale1.lambda1": w[b + "ls1.gamma"], h + "layer_scale2.lambda1": w[b + "ls2.gamma"],
                   h + "norm2.weight": w[b + "norm2.weight"], h + "norm2.bias": w[b + "norm2.bias"],
                   h + "mlp.up_proj.weight": w[b + "mlp.fc1.weight"], h + "mlp.up_proj.bias": w[b + "mlp.fc1.bias"],
                   h + "mlp.down_proj.weight": w[b + "mlp.fc2.weight"],
                   h + "mlp.down_proj.bias": w[b + "mlp.fc2.bias"]})
    return hf


def rope_sin_cos(periods, h, w):
    """rope_position_encoding.py RopePositionEmbedding.forward, normalize_coords="separate", eval mode."""
    coords_h = torch.arange(0.5, h, dtype=periods.dtype) / h
    coords_w = torch.arange(0.5, w, dtype=periods.dtype) / w
    coords = torch.stack(torch.meshgrid(coords_h, coords_w, indexing="ij"), dim=-1).flatten(0, 1)  # [HW, 2]
    coords = 2.0 * coords - 1.0
    angles = 2 * math.pi * coords[:, :, None] / periods[None, None, :]  # [HW, 2, D//4]
    angles = angles.flatten(1, 2).tile(2)                                # [HW, D]
    return torch.sin(angles), torch.cos(angles)


def rotate_half(x, interleaved=False):
    """attention.py rope_rotate_half: [x0 x1 | x2 x3] -> [-x2 -x3 | x0 x1]. interleaved: the planted mistake
    (pairs (x0, x1), (x2, x3) rotated instead, the GPT-J layout)."""
    if interleaved:
        pairs = x.unflatten(-1, (-1, 2))
        return torch.stack([-pairs[..., 1], pairs[..., 0]], dim=-1).flatten(-2)
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat([-x2, x1], dim=-1)


def rope_apply(x, sin, cos, interleaved=False):
    """attention.py rope_apply (sin/cos repeated pairwise for the interleaved mistake)."""
    if interleaved:
        half = sin.shape[-1] // 2
        sin = sin[..., :half].repeat_interleave(2, dim=-1)
        cos = cos[..., :half].repeat_interleave(2, dim=-1)
    return x * cos + rotate_half(x, interleaved) * sin


def layer_norm(x, w, b, eps=1e-5):
    return torch.nn.functional.layer_norm(x, (x.shape[-1],), w, b, eps)


def reference(w, x, heads=HEADS, layers=LAYERS, mistake=None, dtype=torch.float64):
    """x [3, H, W] normalised → (attention [L, heads, T, T], tokens [T, D] after the final norm), as numpy.
    mistake: None, "rope_on_cls" (every token rotated, the prefix's coordinates taken as the first patches'),
    "interleaved" or "unmasked_key_bias"."""
    w = {k: v.to(dtype) for k, v in w.items()}
    x = x.to(dtype)
    d = w["cls_token"].shape[-1]
    p = w["patch_embed.proj.weight"].shape[-1]
    gh, gw = x.shape[1] // p, x.shape[2] // p
    patches = torch.nn.functional.conv2d(x[None], w["patch_embed.proj.weight"], w["patch_embed.proj.bias"], stride=p)
    patches = patches.flatten(2).transpose(1, 2)[0]                             # [HW, D], raster order
    t = torch.cat([w["cls_token"][0], w["storage_tokens"][0], patches], 0)     # [T, D]
    prefix = t.shape[0] - gh * gw
    sin, cos = rope_sin_cos(w["rope_embed.periods"], gh, gw)
    if mistake == "rope_on_cls":  # a table over every token: the prefix gets rotated too
        sin_all, cos_all = rope_sin_cos(w["rope_embed.periods"], gh, gw + 1)
        sin, cos = sin_all[:t.shape[0]], cos_all[:t.shape[0]]
        prefix = 0
    attn = []
    dh = d // heads
    for i in range(layers):
        b = f"blocks.{i}."
        xn = layer_norm(t, w[b + "norm1.weight"], w[b + "norm1.bias"])
        bias = w[b + "attn.qkv.bias"] * (1 if mistake == "unmasked_key_bias" else w[b + "attn.qkv.bias_mask"])
        qkv = (xn @ w[b + "attn.qkv.weight"].T + bias).reshape(-1, 3, heads, dh)
        q, k, v = (qkv[:, j].transpose(0, 1) for j in range(3))                 # [heads, T, dh]
        il = mistake == "interleaved"
        q = torch.cat([q[:, :prefix], rope_apply(q[:, prefix:], sin, cos, il)], 1)
        k = torch.cat([k[:, :prefix], rope_apply(k[:, prefix:], sin, cos, il)], 1)
        a = torch.softmax(q @ k.transpose(1, 2) / math.sqrt(dh), -1)            # [heads, T, T]
        attn.append(a)
        o = (a @ v).transpose(0, 1).reshape(-1, d)
        t = t + w[b + "ls1.gamma"] * (o @ w[b + "attn.proj.weight"].T + w[b + "attn.proj.bias"])
        xn = layer_norm(t, w[b + "norm2.weight"], w[b + "norm2.bias"])
        hid = torch.nn.functional.gelu(xn @ w[b + "mlp.fc1.weight"].T + w[b + "mlp.fc1.bias"])
        t = t + w[b + "ls2.gamma"] * (hid @ w[b + "mlp.fc2.weight"].T + w[b + "mlp.fc2.bias"])
    t = layer_norm(t, w["norm.weight"], w["norm.bias"])
    return torch.stack(attn).numpy(), t.numpy()


def write_st(path, tensors, metadata=None):
    safetensors_io.write(path, {k: v.detach().numpy().astype(np.float32) for k, v in tensors.items()}, metadata)


def make_photo(path, h=56, w=88):
    rng = np.random.default_rng(7)
    yy, xx = np.mgrid[0:h, 0:w].astype(np.float32)
    img = np.dstack([255 * xx / w, 255 * yy / h, 128 + 100 * np.sin(xx / 5 + yy / 9)])
    img = np.clip(img + rng.normal(0, 10, img.shape), 0, 255).astype(np.uint8)
    import cv2
    cv2.imwrite(str(path), img)
    return path


def preprocess(path, width, height, norm=IMAGENET):
    """cv2 decode, resize (INTER_AREA when both sides shrink, else INTER_LINEAR), RGB, normalise → [3, h, w]."""
    import cv2
    bgr = cv2.imread(str(path), cv2.IMREAD_COLOR)
    shrink = bgr.shape[1] >= width and bgr.shape[0] >= height
    img = cv2.resize(bgr, (width, height), interpolation=cv2.INTER_AREA if shrink else cv2.INTER_LINEAR)
    rgb = img[:, :, ::-1].astype(np.float32) / np.float32(255)
    x = (rgb - np.asarray(norm[0], np.float32)) / np.asarray(norm[1], np.float32)
    return torch.from_numpy(np.ascontiguousarray(x.transpose(2, 0, 1)))


HF_IMAGE_SIZE = 64
HF_ROPE_THETA = 50.0  # not the default 100: vitattn must read it from config.json


def hf_weights(seed=11):
    """facebookresearch-named weights whose periods follow HF_ROPE_THETA (for the HF folder's reference)."""
    w = make_weights(seed)
    dh = D // HEADS
    w["rope_embed.periods"] = HF_ROPE_THETA ** (4 * torch.arange(dh // 4, dtype=torch.float32) / dh)
    return w


def hf_folder(path):
    """A Hugging Face-style DINOv3ViTModel snapshot in `path` (model.safetensors, config.json with model_type
    "dinov3_vit", preprocessor_config.json); returns {"image": the photo used, "attention_last": numpy [H, T, T],
    the torch reference's last layer on that photo at image_size}."""
    path = Path(path)
    path.mkdir(parents=True, exist_ok=True)
    w = hf_weights()
    write_st(path / "model.safetensors", to_hf(w))
    (path / "config.json").write_text(json.dumps({
        "model_type": "dinov3_vit", "architectures": ["DINOv3ViTModel"], "hidden_size": D, "num_hidden_layers": LAYERS,
        "num_attention_heads": HEADS, "intermediate_size": MLP, "patch_size": P, "image_size": HF_IMAGE_SIZE,
        "hidden_act": "gelu", "layer_norm_eps": 1e-5, "rope_theta": HF_ROPE_THETA, "num_register_tokens": REGS,
        "query_bias": True, "key_bias": False, "value_bias": True, "use_gated_mlp": False}))
    (path / "preprocessor_config.json").write_text(json.dumps({
        "image_processor_type": "DINOv3ViTImageProcessorFast", "image_mean": list(IMAGENET[0]),
        "image_std": list(IMAGENET[1]), "size": {"height": HF_IMAGE_SIZE, "width": HF_IMAGE_SIZE}}))
    image = make_photo(path.parent / (path.name + "_photo.png"))
    attn, _ = reference(w, preprocess(image, HF_IMAGE_SIZE, HF_IMAGE_SIZE))
    return {"image": image, "attention_last": attn[-1]}
