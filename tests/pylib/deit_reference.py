"""Distilled DeiT, timm's average-pooled and pre-norm ViTs and HF Dinov2ForImageClassification in
torch, for the oracle tests: random weights in each family's names (deit_distilled, timm_avg,
with_norm_pre, hf_dinov2_classifier), written as F32 safetensors (write), the float64
re-implementation of their forwards and gradients (Ref, gradients), the input (image,
preprocessed), and hf_folder: a hub-style Dinov2ForImageClassification snapshot with the
reference on its image. What each part follows: tests/oracle/test_family_deit.py. Nothing here
comes from vitattn.
"""
import json
import math
from pathlib import Path
import numpy as np
import harness
import safetensors_io
from harness import need

try:
    import cv2
    import torch
    import torch.nn.functional as F
except ImportError as e:  # CI installs python3-torch
    need(False, f"cannot import torch/cv2 ({e})")


D, HEADS, MLP, P, GRID, LAYERS, CLASSES = 32, 2, 64, 8, 4, 2, 7
IMAGENET = ((0.485, 0.456, 0.406), (0.229, 0.224, 0.225))
HALF = ((0.5, 0.5, 0.5), (0.5, 0.5, 0.5))


def deit_distilled(seed=1):
    """timm VisionTransformerDistilled's names: dist_token, head_dist, pos_embed [1, 2 + N, D]."""
    t = harness.timm_tensors(D, P, GRID, LAYERS, MLP, seed=seed, classes=CLASSES)
    rng = np.random.default_rng(seed + 50)
    t["dist_token"] = (rng.standard_normal((1, 1, D)) * 0.3).astype(np.float32)
    t["pos_embed"] = (rng.standard_normal((1, 2 + GRID * GRID, D)) * 0.3).astype(np.float32)
    t["head_dist.weight"] = (rng.standard_normal((CLASSES, D)) * 0.3).astype(np.float32)
    t["head_dist.bias"] = (rng.standard_normal(CLASSES) * 0.3).astype(np.float32)
    return t


def timm_avg(seed=2, registers=0):
    """timm global_pool='avg': fc_norm.*, no norm.* (Identity); registers DINOv2-style when asked."""
    t = harness.timm_tensors(D, P, GRID, LAYERS, MLP, seed=seed, classes=CLASSES, registers=registers)
    t["fc_norm.weight"], t["fc_norm.bias"] = t.pop("norm.weight"), t.pop("norm.bias")
    return t


def with_norm_pre(t, seed):
    """timm pre_norm=True: norm_pre.weight / .bias, and no patch embedding bias (timm's CLIP towers)."""
    t = dict(t)
    rng = np.random.default_rng(seed + 70)
    t["norm_pre.weight"] = (1 + rng.standard_normal(D) * 0.3).astype(np.float32)
    t["norm_pre.bias"] = (rng.standard_normal(D) * 0.3).astype(np.float32)
    del t["patch_embed.proj.bias"]
    return t


def hf_dinov2_classifier(seed=3, registers=0):
    """HF Dinov2ForImageClassification (Dinov2WithRegisters… with registers): dinov2.* (or
    dinov2_with_registers.*) and classifier [C, 2D]."""
    t = harness.timm_tensors(D, P, GRID, LAYERS, MLP, seed=seed, registers=registers)
    hf = harness.renamed_from_timm(t, "hf-dinov2", D, LAYERS)
    prefix = "dinov2_with_registers." if registers else "dinov2."
    out = {prefix + k: v for k, v in hf.items()}
    rng = np.random.default_rng(seed + 60)
    out["classifier.weight"] = (rng.standard_normal((CLASSES, 2 * D)) * 0.3).astype(np.float32)
    out["classifier.bias"] = (rng.standard_normal(CLASSES) * 0.3).astype(np.float32)
    return out, t


def T64(a):
    return torch.from_numpy(np.asarray(a, np.float64))


def resample(pos, n_in, gh, gw, offset):
    """pos [n_in², D] → [gh·gw, D]: timm's resample_abs_pos_embed (antialias) or DINOv2's offset form."""
    if (gh, gw) == (n_in, n_in):
        return pos
    g = pos.reshape(1, n_in, n_in, -1).permute(0, 3, 1, 2)
    if offset:
        g = F.interpolate(g, scale_factor=((gh + 0.1) / n_in, (gw + 0.1) / n_in), mode="bicubic", align_corners=False)
        assert g.shape[-2:] == (gh, gw)
    else:
        g = F.interpolate(g, size=(gh, gw), mode="bicubic", antialias=True, align_corners=False)
    return g.permute(0, 2, 3, 1).reshape(gh * gw, -1)


class Ref:
    """One family's forward in float64. kind: token (timm's class-token head) | distilled | avg |
    hf_cls. t: timm-named tensors; with norm_pre.* the pre-norm applies (timm pre_norm=True).
    After forward, self.tokens holds the final tokens (after the final norm)."""

    def __init__(self, kind, t, eps=1e-6, extra=None):
        self.kind, self.t, self.eps, self.extra = kind, {k: T64(v) for k, v in t.items()}, eps, extra or {}
        self.registers = t["register_tokens"].shape[1] if "register_tokens" in t else 0
        self.lead = 2 if kind == "distilled" else 1
        self.first = self.lead + self.registers

    def ln(self, x, stem):
        return F.layer_norm(x, (D,), self.t[stem + ".weight"], self.t[stem + ".bias"], self.eps)

    def embed(self, img):  # img [3, H, W] float64
        t = self.t
        gh, gw = img.shape[1] // P, img.shape[2] // P
        x = F.conv2d(img[None], t["patch_embed.proj.weight"], t.get("patch_embed.proj.bias"), stride=P)
        x = x.flatten(2).transpose(1, 2)[0]  # [N, D]
        pos = t["pos_embed"][0]
        lead = pos[:self.lead]
        x = x + resample(pos[self.lead:], GRID, gh, gw, offset=self.kind == "hf_cls")
        tokens = [t["cls_token"][0]]
        if self.kind == "distilled":
            tokens.append(t["dist_token"][0])
        x = torch.cat([torch.stack(tokens).reshape(-1, D) + lead, x])
        if self.registers:  # DINOv2: after the class token, no positions
            x = torch.cat([x[:1], t["register_tokens"][0], x[1:]])
        if "norm_pre.weight" in t:  # forward_features: _pos_embed, patch_drop (eval: none), norm_pre
            x = self.ln(x, "norm_pre")
        return x

    def forward(self, img, keep=False):
        """→ (logits [C], attention [L][H, T, T], block inputs [L] (leaves when keep))."""
        t = self.t
        x = self.embed(img)
        attn, inputs = [], []
        for i in range(LAYERS):
            b = f"blocks.{i}."
            if keep:
                x = x.detach().requires_grad_(True) if i == 0 else x
                x.retain_grad()
            inputs.append(x)
            h = self.ln(x, b + "norm1")
            qkv = (h @ t[b + "attn.qkv.weight"].T + t[b + "attn.qkv.bias"]).reshape(-1, 3, HEADS, D // HEADS)
            q, k, v = qkv.permute(1, 2, 0, 3)  # [H, T, dh] each
            a = torch.softmax(q @ k.transpose(-1, -2) / math.sqrt(D // HEADS), dim=-1)
            if keep:
                a.retain_grad()
            attn.append(a)
            o = (a @ v).transpose(0, 1).reshape(-1, D) @ t[b + "attn.proj.weight"].T + t[b + "attn.proj.bias"]
            x = x + (o * t[b + "ls1.gamma"] if b + "ls1.gamma" in t else o)
            h = self.ln(x, b + "norm2")
            m = F.gelu(h @ t[b + "mlp.fc1.weight"].T + t[b + "mlp.fc1.bias"]) @ t[b + "mlp.fc2.weight"].T + t[b + "mlp.fc2.bias"]
            x = x + (m * t[b + "ls2.gamma"] if b + "ls2.gamma" in t else m)
        if "norm.weight" in t:
            x = self.ln(x, "norm")
        self.tokens = x
        if self.kind == "token":  # none for a backbone
            logits = x[0] @ t["head.weight"].T + t["head.bias"] if "head.weight" in t else None
        elif self.kind == "distilled":
            logits = ((x[0] @ t["head.weight"].T + t["head.bias"]) + (x[1] @ t["head_dist.weight"].T + t["head_dist.bias"])) / 2
        elif self.kind == "avg":
            logits = self.ln(x[self.first:].mean(0), "fc_norm") @ t["head.weight"].T + t["head.bias"]
        else:
            w, bias = T64(self.extra["classifier.weight"]), T64(self.extra["classifier.bias"])
            logits = torch.cat([x[0], x[self.first:].mean(0)]) @ w.T + bias
        return logits, attn, inputs


def gradients(ref, img, c):
    logits, attn, inputs = ref.forward(img, keep=True)
    logits[c].backward()
    return (np.stack([a.grad.numpy() for a in attn]), np.stack([x.grad.numpy() for x in inputs]),
            logits.detach().numpy(), np.stack([a.detach().numpy() for a in attn]), ref.tokens.detach().numpy())


def write(path, tensors, heads=HEADS):
    safetensors_io.write(path, tensors, {"num_heads": str(heads)}, dtype="F32")


def image(path, size=GRID * P, seed=4):
    rng = np.random.default_rng(seed)
    cv2.imwrite(str(path), rng.integers(0, 256, (size, size, 3), dtype=np.uint8))
    return path


def preprocessed(path, norm):
    rgb = cv2.imread(str(path))[:, :, ::-1].astype(np.float32) / np.float32(255)
    x = (rgb - np.asarray(norm[0], np.float32)) / np.asarray(norm[1], np.float32)
    return T64(x.transpose(2, 0, 1))


def hf_folder(path):
    """A Hugging Face snapshot of a Dinov2ForImageClassification (model.safetensors, config.json
    with model_type "dinov2", preprocessor_config.json); → {"image": the PNG used,
    "attention_last": torch's last-layer attention [H, T, T] on it, "probs": torch's softmax}."""
    path = Path(path)
    path.mkdir(parents=True, exist_ok=True)
    hf, t = hf_dinov2_classifier()
    safetensors_io.write(path / "model.safetensors", hf, None, dtype="F32")
    mean, std = (0.45, 0.4, 0.35), (0.3, 0.25, 0.2)
    (path / "config.json").write_text(json.dumps({
        "model_type": "dinov2", "architectures": ["Dinov2ForImageClassification"], "hidden_size": D,
        "num_attention_heads": HEADS, "num_hidden_layers": LAYERS, "intermediate_size": MLP, "patch_size": P,
        "image_size": GRID * P, "layer_norm_eps": 1e-6, "hidden_act": "gelu", "layerscale_value": 1.0,
        "id2label": {str(i): f"class{i}" for i in range(CLASSES)}}))
    (path / "preprocessor_config.json").write_text(json.dumps({"image_mean": mean, "image_std": std}))
    img = image(path.parent / f"{path.name}_image.png", seed=9)
    ref = Ref("hf_cls", t, extra=hf)
    logits, attn, _ = ref.forward(preprocessed(img, (mean, std)))
    return {"image": img, "attention_last": attn[-1].detach().numpy(),
            "probs": torch.softmax(logits, -1).detach().numpy()}
