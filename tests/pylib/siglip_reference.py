"""SigLIP in torch, for the oracle tests: random weights in Hugging Face's names
(siglip_tensors; with text=True the whole SiglipModel, its text tower too), a model folder with
config.json (write_folder), the float64 re-implementation of modeling_siglip.py (torch_siglip:
every layer's attention, the probe's, the embedding; torch_siglip_text: the text tower's
attention and embeddings; siglip_logits), a folder with the text tower and its spiece.model
(text_model_folder), numpy's rollout of its attention, and hf_folder: a
hub-style snapshot with the reference on its input. What each part follows:
tests/oracle/test_family_siglip.py, tests/oracle/test_siglip_text.py. Nothing here comes from vitattn.
"""
import json
from pathlib import Path
import numpy as np
import safetensors_io
from harness import need

try:
    import torch
    import torch.nn.functional as F
except ImportError as e:  # CI installs python3-torch
    torch = None
    _TORCH_ERROR = str(e)


D, HEADS, LAYERS, MLP, P, GRID = 48, 3, 2, 96, 8, 4  # 32-px native input, 16 patches
EPS = 1e-6
# The text tower (SiglipTextConfig): as wide as the image tower (its head projects to D, the
# image embedding's width), its own head count, 64 positions, and an activation other than the
# vision tower's, so that a text tower read with the image tower's settings shows.
TEXT_HEADS, TEXT_LAYERS, TEXT_MLP, TEXT_CONTEXT, VOCAB = 4, 2, 80, 64, 100
TEXT_ACT = "gelu"  # erf; the vision tower's is gelu_pytorch_tanh


def _need_torch():
    need(torch is not None, "cannot import torch; install python3-torch")


def siglip_tensors(seed=0, text_tower=True, text=False):
    """Random float32 weights in SiglipModel's names (vision_model.*; a token of its text
    tower and logit_scale/bias, which vitattn must leave unread). text=True: the whole text
    tower instead (SiglipTextTransformer's names, VOCAB tokens, TEXT_CONTEXT positions)."""
    rng = np.random.default_rng(seed)
    r = lambda *s, scale=0.2: (rng.standard_normal(s) * scale).astype(np.float32)  # noqa: E731
    v = "vision_model."
    t = {v + "embeddings.patch_embedding.weight": r(D, 3, P, P, scale=0.1),
         v + "embeddings.patch_embedding.bias": r(D),
         v + "embeddings.position_embedding.weight": r(GRID * GRID, D, scale=0.5)}
    for i in range(LAYERS):
        b = f"{v}encoder.layers.{i}."
        for n in ("layer_norm1", "layer_norm2"):
            t[b + n + ".weight"] = (1 + r(D, scale=0.1)).astype(np.float32)
            t[b + n + ".bias"] = r(D, scale=0.1)
        for n in ("q_proj", "k_proj", "v_proj", "out_proj"):
            t[b + f"self_attn.{n}.weight"] = r(D, D, scale=0.3)
            t[b + f"self_attn.{n}.bias"] = r(D, scale=0.1)
        t[b + "mlp.fc1.weight"], t[b + "mlp.fc1.bias"] = r(MLP, D), r(MLP)
        t[b + "mlp.fc2.weight"], t[b + "mlp.fc2.bias"] = r(D, MLP), r(D)
    t[v + "post_layernorm.weight"] = (1 + r(D, scale=0.1)).astype(np.float32)
    t[v + "post_layernorm.bias"] = r(D, scale=0.1)
    h = v + "head."
    t[h + "probe"] = r(1, 1, D, scale=1.0)
    t[h + "attention.in_proj_weight"] = r(3 * D, D, scale=0.4)
    t[h + "attention.in_proj_bias"] = r(3 * D, scale=0.1)
    t[h + "attention.out_proj.weight"], t[h + "attention.out_proj.bias"] = r(D, D), r(D)
    t[h + "layernorm.weight"] = (1 + r(D, scale=0.1)).astype(np.float32)
    t[h + "layernorm.bias"] = r(D, scale=0.1)
    t[h + "mlp.fc1.weight"], t[h + "mlp.fc1.bias"] = r(MLP, D), r(MLP)
    t[h + "mlp.fc2.weight"], t[h + "mlp.fc2.bias"] = r(D, MLP), r(D)
    if text:
        tm = "text_model."
        t[tm + "embeddings.token_embedding.weight"] = r(VOCAB, D, scale=0.5)
        t[tm + "embeddings.position_embedding.weight"] = r(TEXT_CONTEXT, D, scale=0.5)
        for i in range(TEXT_LAYERS):
            b = f"{tm}encoder.layers.{i}."
            for n in ("layer_norm1", "layer_norm2"):
                t[b + n + ".weight"] = (1 + r(D, scale=0.1)).astype(np.float32)
                t[b + n + ".bias"] = r(D, scale=0.1)
            for n in ("q_proj", "k_proj", "v_proj", "out_proj"):
                t[b + f"self_attn.{n}.weight"] = r(D, D, scale=0.3)
                t[b + f"self_attn.{n}.bias"] = r(D, scale=0.1)
            t[b + "mlp.fc1.weight"], t[b + "mlp.fc1.bias"] = r(TEXT_MLP, D), r(TEXT_MLP)
            t[b + "mlp.fc2.weight"], t[b + "mlp.fc2.bias"] = r(D, TEXT_MLP), r(D)
        t[tm + "final_layer_norm.weight"] = (1 + r(D, scale=0.1)).astype(np.float32)
        t[tm + "final_layer_norm.bias"] = r(D, scale=0.1)
        t[tm + "head.weight"], t[tm + "head.bias"] = r(D, D, scale=0.3), r(D, scale=0.1)
        t["logit_scale"] = np.array([np.log(10.0)], np.float32)  # SiglipModel's initial values
        t["logit_bias"] = np.array([-10.0 + 7.5], np.float32)     # some pairs near 0.5, as trained ones are not
    elif text_tower:
        t["text_model.embeddings.token_embedding.weight"] = r(11, D)
        t["logit_scale"], t["logit_bias"] = r(1), r(1)
    return t


def config(model_type="siglip", text=False):
    vision = {"hidden_size": D, "num_attention_heads": HEADS, "num_hidden_layers": LAYERS, "intermediate_size": MLP,
              "image_size": GRID * P, "patch_size": P, "hidden_act": "gelu_pytorch_tanh", "layer_norm_eps": EPS}
    if model_type == "siglip_vision_model":
        return {"model_type": model_type, **vision}
    text_config = {"hidden_size": D}
    if text:  # SiglipTextConfig's keys for the text tower of siglip_tensors(text=True)
        text_config |= {"num_attention_heads": TEXT_HEADS, "num_hidden_layers": TEXT_LAYERS,
                        "intermediate_size": TEXT_MLP, "max_position_embeddings": TEXT_CONTEXT, "vocab_size": VOCAB,
                        "hidden_act": TEXT_ACT, "layer_norm_eps": EPS}
    return {"model_type": model_type, "vision_config": vision, "text_config": text_config}


def write_folder(path, tensors, model_type="siglip", dtype="F32", text=False):
    path = Path(path)
    path.mkdir(parents=True, exist_ok=True)
    safetensors_io.write(path / "model.safetensors", tensors, None, dtype=dtype)
    (path / "config.json").write_text(json.dumps(config(model_type, text)))
    (path / "preprocessor_config.json").write_text(json.dumps(
        {"image_mean": [0.5, 0.5, 0.5], "image_std": [0.5, 0.5, 0.5], "size": {"height": GRID * P, "width": GRID * P}}))
    return path / "model.safetensors"


def text_model_folder(folder, seed=21):
    """A SiglipModel with its text tower as a checkpoint folder holds it: siglip_tensors(seed,
    text=True) in model.safetensors with config.json (write_folder) and a spiece.model beside it
    (siglip_tokenizer_reference's tiny unigram model, SentencePiece's default normaliser, as in
    SigLIP's). Returns (model.safetensors path, tensors, the SentencePiece processor as HF loads it)."""
    from siglip_tokenizer_reference import hf_processor, train_tiny_model
    t = siglip_tensors(seed=seed, text_tower=False, text=True)
    model = write_folder(folder, t, text=True)
    train_tiny_model(Path(folder) / "spiece.model", "nmt_nfkc")
    return model, t, hf_processor(Path(folder) / "spiece.model")


def torch_siglip(t, x, prefix="vision_model."):
    """modeling_siglip.py's vision tower in float64. x (3, H, W) normalised → dict of
    attention [layer] (H, T, T), probe (H, T), embedding (D)."""
    w = {k[len(prefix):]: torch.from_numpy(np.asarray(v, np.float64)) for k, v in t.items() if k.startswith(prefix)}
    xt = torch.from_numpy(np.asarray(x, np.float64))[None]
    # SiglipVisionEmbeddings.forward / interpolate_pos_encoding
    e = F.conv2d(xt, w["embeddings.patch_embedding.weight"], w["embeddings.patch_embedding.bias"], stride=P)
    gh, gw = e.shape[2], e.shape[3]
    e = e.flatten(2).transpose(1, 2)  # (1, T, D)
    pos = w["embeddings.position_embedding.weight"]
    n = pos.shape[0]
    if gh * gw != n or gh != gw:
        g = int(round(n ** 0.5))
        pp = pos.reshape(1, g, g, D).permute(0, 3, 1, 2)
        pp = F.interpolate(pp, size=(gh, gw), mode="bicubic", align_corners=False)
        pos = pp.permute(0, 2, 3, 1).reshape(-1, D)
    h = e + pos
    dh = D // HEADS
    attn = []
    for i in range(LAYERS):  # SiglipEncoderLayer.forward
        b = f"encoder.layers.{i}."
        a = F.layer_norm(h, (D,), w[b + "layer_norm1.weight"], w[b + "layer_norm1.bias"], EPS)
        q, k, v = (F.linear(a, w[b + f"self_attn.{n}.weight"], w[b + f"self_attn.{n}.bias"])
                   .view(1, -1, HEADS, dh).transpose(1, 2) for n in ("q_proj", "k_proj", "v_proj"))
        pr = torch.softmax(q @ k.transpose(2, 3) * dh ** -0.5, dim=-1)  # SiglipAttention.forward (eager)
        attn.append(pr[0].numpy())
        o = (pr @ v).transpose(1, 2).reshape(1, -1, D)
        h = h + F.linear(o, w[b + "self_attn.out_proj.weight"], w[b + "self_attn.out_proj.bias"])
        a = F.layer_norm(h, (D,), w[b + "layer_norm2.weight"], w[b + "layer_norm2.bias"], EPS)
        m = F.gelu(F.linear(a, w[b + "mlp.fc1.weight"], w[b + "mlp.fc1.bias"]), approximate="tanh")  # SiglipMLP
        h = h + F.linear(m, w[b + "mlp.fc2.weight"], w[b + "mlp.fc2.bias"])
    h = F.layer_norm(h, (D,), w["post_layernorm.weight"], w["post_layernorm.bias"], EPS)
    # SiglipMultiheadAttentionPoolingHead.forward, on torch's own nn.MultiheadAttention
    mha = torch.nn.MultiheadAttention(D, HEADS, batch_first=True).double()
    with torch.no_grad():
        mha.in_proj_weight.copy_(w["head.attention.in_proj_weight"])
        mha.in_proj_bias.copy_(w["head.attention.in_proj_bias"])
        mha.out_proj.weight.copy_(w["head.attention.out_proj.weight"])
        mha.out_proj.bias.copy_(w["head.attention.out_proj.bias"])
        y, probe = mha(w["head.probe"], h, h, need_weights=True, average_attn_weights=False)  # probe (1, H, 1, T)
    ln = F.layer_norm(y, (D,), w["head.layernorm.weight"], w["head.layernorm.bias"], EPS)
    mlp = F.linear(F.gelu(F.linear(ln, w["head.mlp.fc1.weight"], w["head.mlp.fc1.bias"]), approximate="tanh"),
                   w["head.mlp.fc2.weight"], w["head.mlp.fc2.bias"])
    pooled = (y + mlp)[0, 0]
    return {"attention": attn, "probe": probe[0, :, 0].detach().numpy(),
            "embedding": (pooled / pooled.norm()).detach().numpy()}


def torch_siglip_text(t, ids):
    """modeling_siglip.py's SiglipTextTransformer in float64, as SiglipModel.get_text_features
    runs it from the processor's ids (padding="max_length", no attention mask): ids (n, 64) int
    → attention (n, layers, heads, 64, 64), embeddings (n, D) L2-normalised."""
    w = {k: torch.from_numpy(np.asarray(v, np.float64)) for k, v in t.items() if k.startswith("text_model.")}
    tm = "text_model."
    ids = torch.as_tensor(np.asarray(ids, np.int64))
    n, ctx = ids.shape
    # SiglipTextEmbeddings.forward: token_embedding(ids) + position_embedding(arange(ctx))
    h = w[tm + "embeddings.token_embedding.weight"][ids] + w[tm + "embeddings.position_embedding.weight"][:ctx][None]
    dh = D // TEXT_HEADS
    act = (lambda x: F.gelu(x)) if TEXT_ACT == "gelu" else (lambda x: F.gelu(x, approximate="tanh"))  # noqa: E731
    attn = []
    for i in range(TEXT_LAYERS):  # SiglipEncoderLayer.forward, attention_mask None
        b = f"{tm}encoder.layers.{i}."
        a = F.layer_norm(h, (D,), w[b + "layer_norm1.weight"], w[b + "layer_norm1.bias"], EPS)
        q, k, v = (F.linear(a, w[b + f"self_attn.{m}.weight"], w[b + f"self_attn.{m}.bias"])
                   .view(n, ctx, TEXT_HEADS, dh).transpose(1, 2) for m in ("q_proj", "k_proj", "v_proj"))
        pr = torch.softmax(q @ k.transpose(2, 3) * dh ** -0.5, dim=-1)  # (n, H, ctx, ctx), no mask
        attn.append(pr.numpy())
        o = (pr @ v).transpose(1, 2).reshape(n, ctx, D)
        h = h + F.linear(o, w[b + "self_attn.out_proj.weight"], w[b + "self_attn.out_proj.bias"])
        a = F.layer_norm(h, (D,), w[b + "layer_norm2.weight"], w[b + "layer_norm2.bias"], EPS)
        h = h + F.linear(act(F.linear(a, w[b + "mlp.fc1.weight"], w[b + "mlp.fc1.bias"])),
                         w[b + "mlp.fc2.weight"], w[b + "mlp.fc2.bias"])
    h = F.layer_norm(h, (D,), w[tm + "final_layer_norm.weight"], w[tm + "final_layer_norm.bias"], EPS)
    pooled = F.linear(h[:, -1, :], w[tm + "head.weight"], w[tm + "head.bias"])  # last_hidden_state[:, -1, :], head
    return np.stack(attn, axis=1), (pooled / pooled.norm(dim=-1, keepdim=True)).numpy()


def siglip_logits(image_embeds, text_embeds, t):
    """SiglipModel.forward: logits_per_text = text_embeds @ image_embedsᵀ · exp(logit_scale) +
    logit_bias; returned as logits_per_image (N, n) and its sigmoid."""
    scale = np.exp(np.float64(np.asarray(t["logit_scale"]).reshape(())))
    bias = np.float64(np.asarray(t["logit_bias"]).reshape(()))
    per_text = np.asarray(text_embeds, np.float64) @ np.asarray(image_embeds, np.float64).T * scale + bias
    per_image = per_text.T
    return per_image, 1.0 / (1.0 + np.exp(-per_image))


def bf16_rounded(t):
    """The float32 values a BF16 file holds (round to nearest even, as safetensors_io writes)."""
    out = {}
    for k, v in t.items():
        bits = safetensors_io.float32_to_bf16_bits(v).astype(np.uint32) << 16
        out[k] = bits.view(np.float32).reshape(v.shape)
    return out


def input_tensor(h, w, seed=1):
    return (np.random.default_rng(seed).standard_normal((3, h, w)) * 0.8).astype(np.float32)


def hf_folder(path):
    """A SigLIP hub snapshot (SiglipModel names, config.json model_type "siglip",
    preprocessor_config.json 0.5/0.5) in `path`, and the torch reference on its input:
    {"image": x.npy path ([3, 32, 32] normalised, for `vitattn forward`), "attention_last":
    [H, T, T], "probe": [H, T], "embedding": [D]}."""
    _need_torch()
    path = Path(path)
    t = siglip_tensors(seed=3)
    write_folder(path, t)
    x = input_tensor(GRID * P, GRID * P, seed=4)
    np.save(path / "x.npy", x)
    ref = torch_siglip(t, x)
    return {"image": str(path / "x.npy"), "attention_last": ref["attention"][-1], "probe": ref["probe"],
            "embedding": ref["embedding"]}


def numpy_rollout(attn):
    """vitattn's rollout (attention_maps.hpp) with discard ratio 0: mean of heads, (A+I)/2, rows
    renormalised, later layers on the left."""
    r = None
    for a in attn:
        f = a.mean(0)
        f = (f + np.eye(f.shape[0])) / 2
        f = f / f.sum(1, keepdims=True)
        r = f if r is None else f @ r
    return r
