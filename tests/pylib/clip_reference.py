"""CLIP's image towers in torch, for the oracle tests: random weights in OpenAI/OpenCLIP names
(openai_tensors, text_tower) and Hugging Face's (hf_names, hf_text_tower), the float64
re-implementations of clip/model.py (openai_clip_forward) and modeling_clip.py
(hf_clip_forward), the inputs (images), and hf_folder: a hub-style CLIPVisionModelWithProjection
snapshot with the reference's attention on its input. What each part follows:
tests/oracle/test_family_clip.py. Nothing here comes from vitattn.
"""
import json
from pathlib import Path
import numpy as np
import safetensors_io
from harness import need

try:
    import torch
    import torch.nn.functional as F
except ImportError as e:  # CI installs python3-torch (scripts/install-deps.sh)
    need(False, f"cannot import torch ({e}); install python3-torch")


# Tiny towers: D = 48, 3 heads of 16, MLP 96, 8-pixel patches on a trained 4×4 grid, 2 layers,
# a 24-wide joint embedding. The text tower is narrower (32) so no shape of it fits the image's.
D, HEADS, MLP, P, GRID, LAYERS, EMBED = 48, 3, 96, 8, 4, 2, 24
SQUARE, WIDE = (GRID, GRID), (3, 5)
CLIP_MEAN = (0.48145466, 0.4578275, 0.40821073)
CLIP_STD = (0.26862954, 0.26130258, 0.27577711)


def openai_tensors(seed=0, scale=0.3):
    """A random image tower under OpenAI CLIP's names, without the "visual." prefix: {name: float32}."""
    rng = np.random.default_rng(seed)
    r = lambda *s, sc=scale: (rng.standard_normal(s) * sc).astype(np.float32)  # noqa: E731
    t = {"conv1.weight": r(D, 3, P, P, sc=0.1), "class_embedding": r(D), "positional_embedding": r(1 + GRID * GRID, D),
         "ln_pre.weight": 1 + r(D), "ln_pre.bias": r(D), "ln_post.weight": 1 + r(D), "ln_post.bias": r(D),
         "proj": r(D, EMBED)}
    for i in range(LAYERS):
        b = f"transformer.resblocks.{i}."
        t.update({b + "ln_1.weight": 1 + r(D), b + "ln_1.bias": r(D), b + "attn.in_proj_weight": r(3 * D, D),
                  b + "attn.in_proj_bias": r(3 * D), b + "attn.out_proj.weight": r(D, D), b + "attn.out_proj.bias": r(D),
                  b + "ln_2.weight": 1 + r(D), b + "ln_2.bias": r(D), b + "mlp.c_fc.weight": r(MLP, D),
                  b + "mlp.c_fc.bias": r(MLP), b + "mlp.c_proj.weight": r(D, MLP), b + "mlp.c_proj.bias": r(D)})
    return t


def text_tower(seed=9):
    """A whole CLIP state dict's text side (clip/model.py CLIP: token_embedding, positional_embedding
    at the top, transformer.resblocks, ln_final, text_projection, logit_scale): 32 wide, 1 block."""
    rng = np.random.default_rng(seed)
    r = lambda *s: (rng.standard_normal(s) * 0.1).astype(np.float32)  # noqa: E731
    w, b = 32, "transformer.resblocks.0."
    return {"token_embedding.weight": r(50, w), "positional_embedding": r(7, w), "ln_final.weight": r(w),
            "ln_final.bias": r(w), "text_projection": r(w, EMBED), "logit_scale": np.array([4.6], np.float32),
            b + "ln_1.weight": r(w), b + "ln_1.bias": r(w), b + "attn.in_proj_weight": r(3 * w, w),
            b + "attn.in_proj_bias": r(3 * w), b + "attn.out_proj.weight": r(w, w), b + "attn.out_proj.bias": r(w),
            b + "ln_2.weight": r(w), b + "ln_2.bias": r(w), b + "mlp.c_fc.weight": r(4 * w, w),
            b + "mlp.c_fc.bias": r(4 * w), b + "mlp.c_proj.weight": r(w, 4 * w), b + "mlp.c_proj.bias": r(w)}


def hf_block_names(t, prefix, layers, width):
    """OpenAI's transformer.resblocks.{i}.* → HF's <prefix>encoder.layers.{i}.* (both towers name
    their blocks alike): the packed in_proj split into q_proj, k_proj, v_proj of `width` rows."""
    out = {}
    for i in range(layers):
        s, d = f"transformer.resblocks.{i}.", f"{prefix}encoder.layers.{i}."
        for k, part in enumerate(("q_proj", "k_proj", "v_proj")):
            out[d + f"self_attn.{part}.weight"] = t[s + "attn.in_proj_weight"][k * width:(k + 1) * width]
            out[d + f"self_attn.{part}.bias"] = t[s + "attn.in_proj_bias"][k * width:(k + 1) * width]
        for a, b in (("ln_1", "layer_norm1"), ("ln_2", "layer_norm2"), ("attn.out_proj", "self_attn.out_proj"),
                     ("mlp.c_fc", "mlp.fc1"), ("mlp.c_proj", "mlp.fc2")):
            out[d + b + ".weight"], out[d + b + ".bias"] = t[s + a + ".weight"], t[s + a + ".bias"]
    return out


def hf_names(t):
    """OpenAI names → CLIPVisionModelWithProjection's (convert_clip_original_pytorch_to_hf.py's mapping):
    the packed in_proj split into q_proj, k_proj, v_proj; visual_projection = projᵀ."""
    v = "vision_model."
    out = {v + "embeddings.patch_embedding.weight": t["conv1.weight"],
           v + "embeddings.class_embedding": t["class_embedding"],
           v + "embeddings.position_embedding.weight": t["positional_embedding"],
           v + "pre_layrnorm.weight": t["ln_pre.weight"], v + "pre_layrnorm.bias": t["ln_pre.bias"],
           v + "post_layernorm.weight": t["ln_post.weight"], v + "post_layernorm.bias": t["ln_post.bias"],
           "visual_projection.weight": np.ascontiguousarray(t["proj"].T)}
    out.update(hf_block_names(t, v, LAYERS, D))
    return out


def as_torch(t):
    return {k: torch.from_numpy(np.asarray(v, np.float64)) for k, v in t.items()}


def bf16_rounded(t):
    """The values a BF16 file holds: float32 rounded to nearest even on the top 16 bits."""
    out = {}
    for k, v in t.items():
        bits = np.asarray(v, np.float32).view(np.uint32).astype(np.uint64)
        bits = (bits + 0x7FFF + ((bits >> 16) & 1)) & 0xFFFF0000
        out[k] = bits.astype(np.uint32).view(np.float32)
    return out


def quick_gelu(x):
    return x * torch.sigmoid(1.702 * x)  # clip/model.py QuickGELU


def openai_clip_forward(t, x, act=quick_gelu):
    """OpenAI CLIP / open_clip VisionTransformer.forward (see the module comment) on OpenAI-named
    float64 tensors; x [N, 3, H, W] → (attention [N, L, H, T, T], embedding [N, E] L2-normalised)."""
    n, _, h, w = x.shape
    gh, gw = h // P, w // P
    z = F.conv2d(x, t["conv1.weight"], stride=P).flatten(2).transpose(1, 2)  # [N, gh·gw, D]
    z = torch.cat([t["class_embedding"].expand(n, 1, D), z], dim=1)
    pos = t["positional_embedding"]
    if (gh, gw) != SQUARE:  # open_clip resize_pos_embed
        grid = pos[1:].reshape(1, GRID, GRID, D).permute(0, 3, 1, 2)
        grid = F.interpolate(grid, size=(gh, gw), mode="bicubic", antialias=True, align_corners=False)
        pos = torch.cat([pos[:1], grid.permute(0, 2, 3, 1).reshape(gh * gw, D)])
    z = z + pos
    ln = lambda v, p: F.layer_norm(v, (D,), t[p + ".weight"], t[p + ".bias"], 1e-5)  # noqa: E731
    z = ln(z, "ln_pre").transpose(0, 1)  # [T, N, D]: clip/model.py runs the transformer sequence-first
    attention = []
    for i in range(LAYERS):
        b = f"transformer.resblocks.{i}."
        mha = torch.nn.MultiheadAttention(D, HEADS).double()
        mha.in_proj_weight.copy_(t[b + "attn.in_proj_weight"])
        mha.in_proj_bias.copy_(t[b + "attn.in_proj_bias"])
        mha.out_proj.weight.copy_(t[b + "attn.out_proj.weight"])
        mha.out_proj.bias.copy_(t[b + "attn.out_proj.bias"])
        y = ln(z, b + "ln_1")
        o, a = mha(y, y, y, need_weights=True, average_attn_weights=False)  # a [N, H, T, T]
        z = z + o
        m = act(F.linear(ln(z, b + "ln_2"), t[b + "mlp.c_fc.weight"], t[b + "mlp.c_fc.bias"]))
        z = z + F.linear(m, t[b + "mlp.c_proj.weight"], t[b + "mlp.c_proj.bias"])
        attention.append(a)
    pooled = ln(z.transpose(0, 1)[:, 0], "ln_post") @ t["proj"]  # [N, E]
    return torch.stack(attention, 1).numpy(), F.normalize(pooled, dim=-1).numpy()


def hf_clip_forward(t, x, act=quick_gelu):
    """HF CLIPVisionModelWithProjection (see the module comment) on HF-named float64 tensors, with
    interpolate_pos_encoding=True; x [N, 3, H, W] → (attention [N, L, H, T, T], embedding [N, E])."""
    v = "vision_model."
    n, _, h, w = x.shape
    gh, gw = h // P, w // P
    patches = F.conv2d(x, t[v + "embeddings.patch_embedding.weight"], stride=P).flatten(2).transpose(1, 2)
    z = torch.cat([t[v + "embeddings.class_embedding"].expand(n, 1, D), patches], dim=1)
    pos = t[v + "embeddings.position_embedding.weight"]
    if (gh, gw) != SQUARE:  # CLIPVisionEmbeddings.interpolate_pos_encoding
        grid = pos[1:].reshape(1, GRID, GRID, D).permute(0, 3, 1, 2)
        grid = F.interpolate(grid, size=(gh, gw), mode="bicubic", align_corners=False)
        pos = torch.cat([pos[:1], grid.permute(0, 2, 3, 1).reshape(gh * gw, D)])
    z = z + pos
    ln = lambda u, p: F.layer_norm(u, (D,), t[p + ".weight"], t[p + ".bias"], 1e-5)  # noqa: E731
    lin = lambda u, p: F.linear(u, t[p + ".weight"], t[p + ".bias"])  # noqa: E731
    z = ln(z, v + "pre_layrnorm")
    d_head, attention = D // HEADS, []
    for i in range(LAYERS):
        b = f"{v}encoder.layers.{i}."
        y = ln(z, b + "layer_norm1")
        q, k, vv = (lin(y, b + f"self_attn.{p}").view(n, -1, HEADS, d_head).transpose(1, 2)
                    for p in ("q_proj", "k_proj", "v_proj"))
        a = torch.softmax((q @ k.transpose(-1, -2)) * d_head ** -0.5, dim=-1)  # eager_attention_forward
        z = z + lin((a @ vv).transpose(1, 2).reshape(n, -1, D), b + "self_attn.out_proj")
        z = z + lin(act(lin(ln(z, b + "layer_norm2"), b + "mlp.fc1")), b + "mlp.fc2")
        attention.append(a)
    pooled = ln(z[:, 0], v + "post_layernorm")
    e = F.linear(pooled, t["visual_projection.weight"])
    return torch.stack(attention, 1).numpy(), F.normalize(e, dim=-1).numpy()


def images(grid, n=1, seed=0):
    """Preprocessed inputs [N, 3, gh·P, gw·P] (what `vitattn forward` reads), float32."""
    rng = np.random.default_rng(seed + grid[0] * 10 + grid[1])
    return rng.standard_normal((n, 3, grid[0] * P, grid[1] * P)).astype(np.float32)


def hf_folder(path, hidden_act="quick_gelu", seed=4):
    """An HF CLIPVisionModelWithProjection snapshot folder at `path`: model.safetensors, config.json
    (model_type clip_vision_model, its sizes, hidden_act, layer_norm_eps, projection_dim) and
    preprocessor_config.json (CLIP's mean and std). Returns {"image": the preprocessed input
    [3, 32, 32] float32 (what `vitattn forward` reads as a .npy), "attention_last": the last
    layer's attention [H, T, T] of hf_clip_forward on it, "embedding": [E]}."""
    path = Path(path)
    path.mkdir(parents=True, exist_ok=True)
    t = hf_names(openai_tensors(seed=seed))
    safetensors_io.write(path / "model.safetensors", t)
    (path / "config.json").write_text(json.dumps({
        "architectures": ["CLIPVisionModelWithProjection"], "model_type": "clip_vision_model", "hidden_size": D,
        "intermediate_size": MLP, "num_attention_heads": HEADS, "num_hidden_layers": LAYERS, "image_size": GRID * P,
        "patch_size": P, "hidden_act": hidden_act, "layer_norm_eps": 1e-5, "projection_dim": EMBED}))
    (path / "preprocessor_config.json").write_text(json.dumps({
        "image_processor_type": "CLIPImageProcessor", "image_mean": list(CLIP_MEAN), "image_std": list(CLIP_STD),
        "crop_size": {"height": GRID * P, "width": GRID * P}, "size": {"shortest_edge": GRID * P}}))
    x = images(SQUARE, seed=seed)
    act = quick_gelu if hidden_act == "quick_gelu" else F.gelu
    attention, embedding = hf_clip_forward(as_torch(t), torch.from_numpy(x.astype(np.float64)), act=act)
    return {"image": x[0], "attention_last": attention[0, -1], "embedding": embedding[0]}


def hf_text_tower(seed=8):
    """CLIPModel's text side and shared scalars (modeling_clip.py CLIPTextTransformer, CLIPModel): 32 wide, 1 layer."""
    rng = np.random.default_rng(seed)
    r = lambda *s: (rng.standard_normal(s) * 0.1).astype(np.float32)  # noqa: E731
    w, b = 32, "text_model.encoder.layers.0."
    t = {"text_model.embeddings.token_embedding.weight": r(50, w),
         "text_model.embeddings.position_embedding.weight": r(7, w),
         "text_model.embeddings.position_ids": np.arange(7, dtype=np.int64)[None],
         "text_model.final_layer_norm.weight": r(w), "text_model.final_layer_norm.bias": r(w),
         "text_projection.weight": r(EMBED, w), "logit_scale": np.array(2.6592, np.float32)}
    for name, shape in (("layer_norm1", (w,)), ("layer_norm2", (w,)), ("self_attn.q_proj", (w, w)),
                        ("self_attn.k_proj", (w, w)), ("self_attn.v_proj", (w, w)), ("self_attn.out_proj", (w, w)),
                        ("mlp.fc1", (4 * w, w)), ("mlp.fc2", (w, 4 * w))):
        t[b + name + ".weight"], t[b + name + ".bias"] = r(*shape), r(shape[0])
    return t


# A text tower the real tokeniser's ids fit: CLIP's vocabulary (49408) and context (77), 128 wide
# (2 heads of 64, OpenAI's width // 64), 2 layers, projecting to the image towers' EMBED.
VOCAB, CONTEXT, TEXT_W, TEXT_LAYERS = 49408, 77, 128, 2


def openai_text_tensors(seed=11, width=TEXT_W):
    """A random text tower under OpenAI CLIP's names (clip/model.py CLIP: token_embedding,
    positional_embedding, transformer.resblocks, ln_final, text_projection [W, E], logit_scale)."""
    rng = np.random.default_rng(seed)
    r = lambda *s, sc=0.3: (rng.standard_normal(s) * sc).astype(np.float32)  # noqa: E731
    w = width
    t = {"token_embedding.weight": r(VOCAB, w), "positional_embedding": r(CONTEXT, w), "ln_final.weight": 1 + r(w),
         "ln_final.bias": r(w), "text_projection": r(w, EMBED), "logit_scale": np.array(np.log(1 / 0.07), np.float32)}
    for i in range(TEXT_LAYERS):
        b = f"transformer.resblocks.{i}."
        t.update({b + "ln_1.weight": 1 + r(w), b + "ln_1.bias": r(w), b + "attn.in_proj_weight": r(3 * w, w),
                  b + "attn.in_proj_bias": r(3 * w), b + "attn.out_proj.weight": r(w, w), b + "attn.out_proj.bias": r(w),
                  b + "ln_2.weight": 1 + r(w), b + "ln_2.bias": r(w), b + "mlp.c_fc.weight": r(4 * w, w),
                  b + "mlp.c_fc.bias": r(4 * w), b + "mlp.c_proj.weight": r(w, 4 * w), b + "mlp.c_proj.bias": r(w)})
    return t


def hf_text_names(t, width=TEXT_W):
    """OpenAI text names → CLIPModel's (convert_clip_original_pytorch_to_hf.py's mapping): text_model.*,
    in_proj split into q/k/v_proj, text_projection.weight = text_projectionᵀ."""
    m = "text_model."
    out = {m + "embeddings.token_embedding.weight": t["token_embedding.weight"],
           m + "embeddings.position_embedding.weight": t["positional_embedding"],
           m + "final_layer_norm.weight": t["ln_final.weight"], m + "final_layer_norm.bias": t["ln_final.bias"],
           "text_projection.weight": np.ascontiguousarray(t["text_projection"].T), "logit_scale": t["logit_scale"]}
    out.update(hf_block_names(t, m, TEXT_LAYERS, width))
    return out


def openai_encode_text(t, text, heads, act=quick_gelu):
    """OpenAI clip/model.py CLIP.encode_text on OpenAI-named float64 tensors, text [n, ctx] int64:
    x = token_embedding(text) + positional_embedding; the transformer sequence-first with
    attn_mask = build_attention_mask() (−inf strictly above the diagonal, 0 elsewhere); ln_final;
    x[arange(n), text.argmax(-1)] @ text_projection. Returns (attention [n, L, H, ctx, ctx], the
    embedding [n, E] L2-normalised as CLIP.forward normalises it)."""
    n, ctx = text.shape
    w = t["token_embedding.weight"].shape[1]
    mask = torch.empty(ctx, ctx, dtype=torch.float64).fill_(float("-inf")).triu_(1)  # build_attention_mask
    x = F.embedding(text, t["token_embedding.weight"]) + t["positional_embedding"]
    x = x.permute(1, 0, 2)  # NLD -> LND
    ln = lambda v, p: F.layer_norm(v, (w,), t[p + ".weight"], t[p + ".bias"], 1e-5)  # noqa: E731
    attention, i = [], 0
    while f"transformer.resblocks.{i}.ln_1.weight" in t:
        b = f"transformer.resblocks.{i}."
        mha = torch.nn.MultiheadAttention(w, heads).double()
        mha.in_proj_weight.copy_(t[b + "attn.in_proj_weight"])
        mha.in_proj_bias.copy_(t[b + "attn.in_proj_bias"])
        mha.out_proj.weight.copy_(t[b + "attn.out_proj.weight"])
        mha.out_proj.bias.copy_(t[b + "attn.out_proj.bias"])
        y = ln(x, b + "ln_1")
        o, a = mha(y, y, y, need_weights=True, attn_mask=mask, average_attn_weights=False)  # a [n, H, ctx, ctx]
        x = x + o
        x = x + F.linear(act(F.linear(ln(x, b + "ln_2"), t[b + "mlp.c_fc.weight"], t[b + "mlp.c_fc.bias"])),
                         t[b + "mlp.c_proj.weight"], t[b + "mlp.c_proj.bias"])
        attention.append(a)
        i += 1
    x = ln(x.permute(1, 0, 2), "ln_final")
    e = x[torch.arange(n), text.argmax(dim=-1)] @ t["text_projection"]
    return torch.stack(attention, 1).numpy(), F.normalize(e, dim=-1).numpy()


def clip_logits(image_embedding, text_embedding, logit_scale):
    """CLIP.forward's logits_per_image: logit_scale.exp() · image_features @ text_features.t() (both normalised)."""
    return np.exp(np.float64(logit_scale)) * (np.asarray(image_embedding, np.float64) @ np.asarray(text_embedding, np.float64).T)



def openai_clip_graph(t, x, act=quick_gelu):
    """OpenAI CLIP's image tower on float64 tensors t (OpenAI names), x [3, H, W], with the
    attention written out (ResidualAttentionBlock, nn.MultiheadAttention's equations) so that
    gradients reach A_l, as the hooks of Chefer's CLIP notebook and of LeGrad read it. Returns
    (the blocks' attention probabilities [H, T, T] each, the blocks' outputs [T, D] each: LeGrad's
    feat_post_mlp, the blocks' ln_1 outputs [T, D] each: Grad-CAM's target)."""
    x = x.detach().requires_grad_(True)  # a graph from the input on: every A_l has a gradient
    gh, gw = x.shape[1] // P, x.shape[2] // P
    z = F.conv2d(x[None], t["conv1.weight"], stride=P).flatten(2).transpose(1, 2)[0]  # [gh·gw, D]
    z = torch.cat([t["class_embedding"][None], z])
    pos = t["positional_embedding"]
    if (gh, gw) != SQUARE:  # open_clip resize_pos_embed, as openai_clip_forward
        grid = pos[1:].reshape(1, GRID, GRID, D).permute(0, 3, 1, 2)
        grid = F.interpolate(grid, size=(gh, gw), mode="bicubic", antialias=True, align_corners=False)
        pos = torch.cat([pos[:1], grid.permute(0, 2, 3, 1).reshape(gh * gw, D)])
    ln = lambda v, n: F.layer_norm(v, (D,), t[n + ".weight"], t[n + ".bias"], 1e-5)  # noqa: E731
    z = ln(z + pos, "ln_pre")
    attention, outputs, norms, dh = [], [], [], D // HEADS
    for i in range(LAYERS):
        b = f"transformer.resblocks.{i}."
        y = ln(z, b + "ln_1")
        qkv = F.linear(y, t[b + "attn.in_proj_weight"], t[b + "attn.in_proj_bias"])
        q, k, v = (qkv[:, j * D:(j + 1) * D].reshape(-1, HEADS, dh).transpose(0, 1) for j in range(3))
        a = torch.softmax(q @ k.transpose(1, 2) / dh ** 0.5, dim=-1)  # [H, T, T]
        o = (a @ v).transpose(0, 1).reshape(-1, D)
        z = z + F.linear(o, t[b + "attn.out_proj.weight"], t[b + "attn.out_proj.bias"])
        m = act(F.linear(ln(z, b + "ln_2"), t[b + "mlp.c_fc.weight"], t[b + "mlp.c_fc.bias"]))
        z = z + F.linear(m, t[b + "mlp.c_proj.weight"], t[b + "mlp.c_proj.bias"])
        attention.append(a)
        outputs.append(z)
        norms.append(y)
    return attention, outputs, norms


def openai_word_relevance(t, text, heads, image_embedding, start_layer, act=quick_gelu):
    """Transformer-MM-Explainability's CLIP notebook (CLIP_explainability.ipynb, interpret's text
    part) on OpenAI-named float64 tensors, with autograd: the text tower as clip/model.py's
    encode_text (ResidualAttentionBlock: x + attn(ln_1(x)) under build_attention_mask, x +
    mlp(ln_2(x))), its attention probabilities kept in the graph; the target
    logit_scale.exp()·cos(image, text), the image embedding given; per layer from start_layer on
    (−1: the last alone, the notebook's default) cam = mean over heads of (∂logit/∂A ⊙ A).clamp(min=0),
    R = I, R ← R + cam·R; returns show_heatmap_on_text's R[EOT, 1:EOT], one array per text (its
    prompt's tokens). text [n, ctx] int64, image_embedding [E] L2-normalised."""
    layers = sum(1 for k in t if k.endswith(".ln_1.weight"))
    start = layers + start_layer if start_layer < 0 else start_layer
    u = torch.as_tensor(np.asarray(image_embedding, np.float64))
    with torch.enable_grad():  # a test module may have turned autograd off
        return [_word_relevance_row(t, row, heads, u, range(start, layers), act) for row in text]


def _word_relevance_row(t, row, heads, u, rollout_layers, act):
    """openai_word_relevance for one text row [ctx]."""
    ctx = row.shape[0]
    w = t["token_embedding.weight"].shape[1]
    d = w // heads
    mask = torch.empty(ctx, ctx, dtype=torch.float64).fill_(float("-inf")).triu_(1)  # build_attention_mask
    ln = lambda v, p: F.layer_norm(v, (w,), t[p + ".weight"], t[p + ".bias"], 1e-5)  # noqa: E731
    x = F.embedding(row, t["token_embedding.weight"]) + t["positional_embedding"]  # [ctx, W]
    x.requires_grad_(True)  # so that the graph is recorded (the weights are plain tensors)
    probs, i = [], 0
    while f"transformer.resblocks.{i}.ln_1.weight" in t:
        b = f"transformer.resblocks.{i}."
        qkv = F.linear(ln(x, b + "ln_1"), t[b + "attn.in_proj_weight"], t[b + "attn.in_proj_bias"])
        q, k, v = (qkv[:, j * w:(j + 1) * w].reshape(ctx, heads, d).transpose(0, 1) for j in range(3))
        a = torch.softmax(q @ k.transpose(-1, -2) / d ** 0.5 + mask, dim=-1)  # [H, ctx, ctx], nn.MultiheadAttention's
        probs.append(a)
        x = x + F.linear((a @ v).transpose(0, 1).reshape(ctx, w), t[b + "attn.out_proj.weight"],
                         t[b + "attn.out_proj.bias"])
        x = x + F.linear(act(F.linear(ln(x, b + "ln_2"), t[b + "mlp.c_fc.weight"], t[b + "mlp.c_fc.bias"])),
                         t[b + "mlp.c_proj.weight"], t[b + "mlp.c_proj.bias"])
        i += 1
    eot = int(row.argmax())
    e = ln(x, "ln_final")[eot] @ t["text_projection"]
    logit = t["logit_scale"].exp() * (u @ (e / e.norm()))
    grads = torch.autograd.grad(logit, probs)
    r = torch.eye(ctx, dtype=torch.float64)
    for i in rollout_layers:
        cam = (grads[i] * probs[i]).clamp(min=0).mean(dim=0)  # mean over heads
        r = r + cam @ r
    return r[eot, 1:eot].detach().numpy()
