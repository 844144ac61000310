"""PyTorch fixtures of the oracle tests: random torchvision ViTs (make_vit), their weights
under torchvision, timm, HF ViT and HF Dinov2 names (export_*), written as safetensors from
torch's own bytes (write_safetensors, its BF16 rounding included), the reference forward
(torch_reference: every layer's attention from torch.nn.MultiheadAttention, features,
logits; dinov2_reference for layer scale and registers), position embeddings resampled the
way each family's library does (STYLE, interp_pos), and the model input (make_image;
make_shifted_images, a few variants of it; preprocess: cv2 decode, resize, normalise).

Nothing here comes from vitattn. Importing it needs torch and torchvision: without them the
importing test skips (tally.skip: pytest.skip under pytest, exit 77 for a script run on its
own; under CI=true either fails).
"""
import math
from functools import partial

import cv2
import numpy as np

import safetensors_io
from tally import skip

try:
    import torch
    import torch.nn.functional as F
    from torchvision.models.vision_transformer import VisionTransformer
except ImportError as e:  # CI installs python3-torch python3-torchvision (scripts/install-deps.sh)
    skip(f"cannot import torch/torchvision ({e}); install python3-torch python3-torchvision")

IMAGENET = ((0.485, 0.456, 0.406), (0.229, 0.224, 0.225))
HALF = ((0.5, 0.5, 0.5), (0.5, 0.5, 0.5))


# ---------------------------------------------------------------------------
# safetensors writer (F32, F16, BF16) from torch's own bytes, independent of vitattn's
# ---------------------------------------------------------------------------


def tensor_bytes(t, dtype):
    t = t.detach().contiguous().cpu()
    if dtype == "F32":
        return t.to(torch.float32).numpy().astype("<f4").tobytes()
    if dtype == "F16":
        return t.to(torch.float16).numpy().astype("<f2").tobytes()
    if dtype == "BF16":  # torch's own round-to-nearest-even conversion
        return t.to(torch.bfloat16).view(torch.int16).numpy().astype("<i2").tobytes()
    raise ValueError(dtype)


def write_safetensors(path, tensors, dtype="F32", metadata=None):
    safetensors_io.write(path, {name: (dtype, list(t.shape), tensor_bytes(t, dtype)) for name, t in tensors.items()},
                         metadata)


def rounded(t, dtype):
    """The float32 values a file of this dtype stores for t."""
    if dtype == "F16":
        return t.to(torch.float16).to(torch.float32)
    if dtype == "BF16":
        return t.to(torch.bfloat16).to(torch.float32)
    return t.clone()


# ---------------------------------------------------------------------------
# torchvision models and their exports under torchvision, timm, HF ViT and HF Dinov2 names
# ---------------------------------------------------------------------------


def make_vit(image_size, d, heads, mlp, layers, classes, seed, embed_scale=1.0):
    """torchvision ViT-like model with every parameter random (nothing left 0 or 1)."""
    torch.manual_seed(seed)
    m = VisionTransformer(image_size=image_size, patch_size=16, num_layers=layers, num_heads=heads,
                          hidden_dim=d, mlp_dim=mlp, num_classes=classes)
    g = torch.Generator().manual_seed(seed + 1)

    def rnd(shape, std):
        return torch.randn(shape, generator=g) * std

    for name, p in m.named_parameters():
        if "ln" in name and name.endswith("weight"):
            p.copy_(1 + rnd(p.shape, 0.3))
        elif name.endswith("bias"):
            p.copy_(rnd(p.shape, 0.1))
        elif name == "class_token" or name == "encoder.pos_embedding":
            p.copy_(rnd(p.shape, 0.5))
        elif name.endswith("in_proj_weight"):  # peaky attention, so a wrong scale or order shows
            p.copy_(rnd(p.shape, 1.5 / math.sqrt(d)))
        elif name == "heads.head.weight":
            p.copy_(rnd(p.shape, 1.0 / math.sqrt(d)))
    if embed_scale != 1.0:  # tiny token stream: LayerNorm's eps becomes visible
        for name in ("conv_proj.weight", "conv_proj.bias", "class_token", "encoder.pos_embedding"):
            m.get_parameter(name).mul_(embed_scale)
    return m.eval()


def with_eps(model, eps):
    """Same weights, another LayerNorm eps (torchvision's norm_layer argument)."""
    enc = model.encoder
    m = VisionTransformer(image_size=model.image_size, patch_size=model.patch_size, num_layers=len(enc.layers),
                          num_heads=enc.layers[0].num_heads, hidden_dim=model.hidden_dim, mlp_dim=model.mlp_dim,
                          num_classes=model.num_classes, norm_layer=partial(torch.nn.LayerNorm, eps=eps))
    m.load_state_dict(model.state_dict())
    return m.eval()


def with_rounded_weights(model, dtype):
    m = with_eps(model, model.encoder.ln.eps)
    m.load_state_dict({k: rounded(v, dtype) for k, v in model.state_dict().items()})
    return m


def export_torchvision(sd):
    return dict(sd)


def export_timm(sd, n_layers):
    out = {"patch_embed.proj.weight": sd["conv_proj.weight"], "patch_embed.proj.bias": sd["conv_proj.bias"],
           "cls_token": sd["class_token"], "pos_embed": sd["encoder.pos_embedding"]}
    for i in range(n_layers):
        s, t = f"encoder.layers.encoder_layer_{i}.", f"blocks.{i}."
        out.update({t + "norm1.weight": sd[s + "ln_1.weight"], t + "norm1.bias": sd[s + "ln_1.bias"],
                    t + "attn.qkv.weight": sd[s + "self_attention.in_proj_weight"],
                    t + "attn.qkv.bias": sd[s + "self_attention.in_proj_bias"],
                    t + "attn.proj.weight": sd[s + "self_attention.out_proj.weight"],
                    t + "attn.proj.bias": sd[s + "self_attention.out_proj.bias"],
                    t + "norm2.weight": sd[s + "ln_2.weight"], t + "norm2.bias": sd[s + "ln_2.bias"],
                    t + "mlp.fc1.weight": sd[s + "mlp.0.weight"], t + "mlp.fc1.bias": sd[s + "mlp.0.bias"],
                    t + "mlp.fc2.weight": sd[s + "mlp.3.weight"], t + "mlp.fc2.bias": sd[s + "mlp.3.bias"]})
    out.update({"norm.weight": sd["encoder.ln.weight"], "norm.bias": sd["encoder.ln.bias"]})
    if "heads.head.weight" in sd:
        out.update({"head.weight": sd["heads.head.weight"], "head.bias": sd["heads.head.bias"]})
    return out


def split_qkv(w):
    d = w.shape[0] // 3
    return w[:d], w[d:2 * d], w[2 * d:]


def export_hf_dinov2(timm, n_layers):
    """HF Dinov2Model names from a DINOv2 export in timm names (with its blocks' ls1/ls2
    gammas and register_tokens)."""
    d = timm["cls_token"].shape[-1]
    hf = {"embeddings.cls_token": timm["cls_token"], "embeddings.position_embeddings": timm["pos_embed"],
          "embeddings.register_tokens": timm["register_tokens"], "embeddings.mask_token": torch.zeros(1, d),
          "embeddings.patch_embeddings.projection.weight": timm["patch_embed.proj.weight"],
          "embeddings.patch_embeddings.projection.bias": timm["patch_embed.proj.bias"],
          "layernorm.weight": timm["norm.weight"], "layernorm.bias": timm["norm.bias"]}
    for i in range(n_layers):
        s, t = f"blocks.{i}.", f"encoder.layer.{i}."
        for part, w, b in zip(("query", "key", "value"), split_qkv(timm[s + "attn.qkv.weight"]),
                              split_qkv(timm[s + "attn.qkv.bias"])):
            hf[t + f"attention.attention.{part}.weight"] = w
            hf[t + f"attention.attention.{part}.bias"] = b
        for a_, b_ in (("norm1", "norm1"), ("attn.proj", "attention.output.dense"), ("norm2", "norm2"),
                       ("mlp.fc1", "mlp.fc1"), ("mlp.fc2", "mlp.fc2")):
            hf[t + b_ + ".weight"] = timm[s + a_ + ".weight"]
            hf[t + b_ + ".bias"] = timm[s + a_ + ".bias"]
        hf[t + "layer_scale1.lambda1"] = timm[s + "ls1.gamma"]
        hf[t + "layer_scale2.lambda1"] = timm[s + "ls2.gamma"]
    return hf


def export_hf_vit(sd, n_layers):
    e = "vit.embeddings."
    out = {e + "cls_token": sd["class_token"], e + "position_embeddings": sd["encoder.pos_embedding"],
           e + "patch_embeddings.projection.weight": sd["conv_proj.weight"],
           e + "patch_embeddings.projection.bias": sd["conv_proj.bias"]}
    for i in range(n_layers):
        s, t = f"encoder.layers.encoder_layer_{i}.", f"vit.encoder.layer.{i}."
        for part, w, b in zip(("query", "key", "value"), split_qkv(sd[s + "self_attention.in_proj_weight"]),
                              split_qkv(sd[s + "self_attention.in_proj_bias"])):
            out[t + f"attention.attention.{part}.weight"] = w
            out[t + f"attention.attention.{part}.bias"] = b
        out.update({t + "layernorm_before.weight": sd[s + "ln_1.weight"],
                    t + "layernorm_before.bias": sd[s + "ln_1.bias"],
                    t + "attention.output.dense.weight": sd[s + "self_attention.out_proj.weight"],
                    t + "attention.output.dense.bias": sd[s + "self_attention.out_proj.bias"],
                    t + "layernorm_after.weight": sd[s + "ln_2.weight"], t + "layernorm_after.bias": sd[s + "ln_2.bias"],
                    t + "intermediate.dense.weight": sd[s + "mlp.0.weight"],
                    t + "intermediate.dense.bias": sd[s + "mlp.0.bias"],
                    t + "output.dense.weight": sd[s + "mlp.3.weight"], t + "output.dense.bias": sd[s + "mlp.3.bias"]})
    out.update({"vit.layernorm.weight": sd["encoder.ln.weight"], "vit.layernorm.bias": sd["encoder.ln.bias"]})
    if "heads.head.weight" in sd:
        out.update({"classifier.weight": sd["heads.head.weight"], "classifier.bias": sd["heads.head.bias"]})
    return out


# ---------------------------------------------------------------------------
# torch reference outputs
# ---------------------------------------------------------------------------


# How each family's own library resamples position embeddings (vitattn follows the family):
# timm resample_abs_pos_embed (antialias=True), DINO/DINOv2 interpolate_pos_encoding
# (scale_factor with a 0.1 offset), torchvision interpolate_embeddings (align_corners=True),
# HF ViT (size=, align_corners=False).
STYLE = {"torchvision": "corners", "timm": "antialias", "hf-vit": "bicubic", "dinov2": "offset"}


def interp_pos(pos, grid, new_h, new_w, style="bicubic"):
    """[1, 1+g*g, D] -> [1, 1+new_h*new_w, D]; the class position is kept."""
    d = pos.shape[-1]
    patch = pos[:, 1:].reshape(1, grid, grid, d).permute(0, 3, 1, 2)                    # [1, D, g, g]
    if style == "bilinear":
        patch = F.interpolate(patch, size=(new_h, new_w), mode="bilinear", align_corners=False)
    elif style == "offset":
        patch = F.interpolate(patch, scale_factor=((new_h + 0.1) / grid, (new_w + 0.1) / grid), mode="bicubic",
                              align_corners=False)
        assert patch.shape[-2:] == (new_h, new_w), patch.shape
    else:
        patch = F.interpolate(patch, size=(new_h, new_w), mode="bicubic", align_corners=style == "corners",
                              antialias=style == "antialias")
    return torch.cat([pos[:, :1], patch.permute(0, 2, 3, 1).reshape(1, new_h * new_w, d)], dim=1)


def torch_reference(model, x, mode="bicubic"):
    """x [N, 3, H, W] -> (attention [N, L, heads, T, T], features [N, D], logits [N, C]) as float64 numpy.

    Attention: torch's MultiheadAttention on LN1 of each block's input, captured with a hook.
    At the trained size the model's own forward runs; at another size the same modules run
    with the position embedding interpolated bicubically (the model's forward refuses it).
    """
    inputs = [None] * len(model.encoder.layers)
    hooks = [blk.register_forward_hook(lambda mod, inp, out, i=i: inputs.__setitem__(i, inp[0]))
             for i, blk in enumerate(model.encoder.layers)]
    feats = []
    hooks.append(model.encoder.register_forward_hook(lambda mod, inp, out: feats.append(out[:, 0])))
    try:
        n, _, h, w = x.shape
        if h == w == model.image_size:
            logits = model(x)
        else:
            p, grid = model.patch_size, model.image_size // model.patch_size
            tok = model.conv_proj(x).reshape(n, model.hidden_dim, -1).permute(0, 2, 1)   # [N, HW, D]
            tok = torch.cat([model.class_token.expand(n, -1, -1), tok], dim=1)
            saved = model.encoder.pos_embedding
            model.encoder.pos_embedding = torch.nn.Parameter(interp_pos(saved, grid, h // p, w // p, mode))  # mode: a style
            try:
                out = model.encoder(tok)
            finally:
                model.encoder.pos_embedding = saved
            logits = model.heads(out[:, 0])
    finally:
        for hk in hooks:
            hk.remove()
    attn = []
    for blk, xin in zip(model.encoder.layers, inputs):
        y = blk.ln_1(xin)
        attn.append(blk.self_attention(y, y, y, need_weights=True, average_attn_weights=False)[1])  # [N, h, T, T]
    attn = torch.stack(attn, dim=1)
    return (attn.double().numpy(), feats[0].double().numpy(), logits.double().numpy())


def dinov2_reference(model, ls1, ls2, regs, x):
    """DINOv2 block order from torchvision's modules: x += ls1*attn(ln1 x); x += ls2*mlp(ln2 x);
    tokens [cls+pos0, registers (no position), patches+pos]."""
    n, _, h, w = x.shape
    p, grid = model.patch_size, model.image_size // model.patch_size
    pos = model.encoder.pos_embedding
    if (h, w) != (model.image_size, model.image_size):
        pos = interp_pos(pos, grid, h // p, w // p, STYLE["dinov2"])
    tok = model.conv_proj(x).reshape(n, model.hidden_dim, -1).permute(0, 2, 1) + pos[:, 1:]
    cls = model.class_token.expand(n, -1, -1) + pos[:, :1]
    t = torch.cat([cls, regs.expand(n, -1, -1), tok], dim=1)
    attn = []
    for i, blk in enumerate(model.encoder.layers):
        y = blk.ln_1(t)
        o, a = blk.self_attention(y, y, y, need_weights=True, average_attn_weights=False)
        attn.append(a)
        t = t + ls1[i] * o
        t = t + ls2[i] * blk.mlp(blk.ln_2(t))
    t = model.encoder.ln(t)
    logits = model.heads(t[:, 0])
    return torch.stack(attn, 1).double().numpy(), t[:, 0].double().numpy(), logits.double().numpy()


# ---------------------------------------------------------------------------
# the model input
# ---------------------------------------------------------------------------


def make_image(path):
    rng = np.random.default_rng(5)
    h, w = 200, 300
    yy, xx = np.mgrid[0:h, 0:w].astype(np.float32)
    img = np.dstack([255 * xx / w, 255 * yy / h, 128 + 100 * np.sin(xx / 13 + yy / 29)])
    img = np.clip(img + rng.normal(0, 8, img.shape), 0, 255).astype(np.uint8)
    cv2.circle(img, (90, 110), 50, (20, 40, 230), -1)
    cv2.rectangle(img, (180, 30), (280, 120), (240, 230, 30), -1)
    cv2.imwrite(str(path), img)


def make_shifted_images(folder, n):
    """n different pictures of make_image's, folder/img0.png ... img{n-1}.png: picture i rolled
    53·i pixels along the width (wrapping round) and, for odd i, upside down. Returns the paths."""
    paths = []
    for i in range(n):
        p = folder / f"img{i}.png"
        make_image(p)
        img = cv2.imread(str(p))
        cv2.imwrite(str(p), np.roll(img, 53 * i, axis=1)[::(1 if i % 2 == 0 else -1)])
        paths.append(p)
    return paths


def preprocess(path, width, height, norm):
    """cv2 decode, resize (INTER_AREA if both sides shrink, else INTER_LINEAR), RGB, normalise -> [1, 3, h, w]."""
    bgr = cv2.imread(str(path), cv2.IMREAD_COLOR)
    shrink = bgr.shape[1] >= width and bgr.shape[0] >= height
    img = cv2.resize(bgr, (width, height), interpolation=cv2.INTER_AREA if shrink else cv2.INTER_LINEAR)
    rgb = img[:, :, ::-1].astype(np.float32) / np.float32(255)
    x = (rgb - np.asarray(norm[0], np.float32)) / np.asarray(norm[1], np.float32)
    return torch.from_numpy(np.ascontiguousarray(x.transpose(2, 0, 1)))[None]
