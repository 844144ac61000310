#!/usr/bin/python3
"""Times vitattn's zero-shot prompt ensemble (`forward --labels … --templates …`) against a
PyTorch script encoding the same prompts as OpenAI's clip/model.py does, on a slice of
ImageNet's 1000 names × 80 templates, and the second, cached run (not a test).

  bench/run_zeroshot_bench.py [--classes 32] [--threads 2] [--rounds 3] [--batch 256]

The model: a random-weight CLIP text tower of ViT-B/32's shape (width 512, 12 layers, 8 heads,
context 77, vocabulary 49,408, embedding 512) beside a tiny image tower, written once to a
temporary safetensors file; both sides read the same weights.
- vitattn: one whole process per round, `--no-text-cache`, `--threads T`: start, model load,
  tokenising, encoding, the ensemble, writing. Its fixed cost is measured by a run of one class
  and one template and taken off before extrapolating to 80,000 prompts.
- PyTorch (Debian's, float32, torch.set_num_threads(T) and OpenBLAS pinned to T threads, as
  bench/torch_forward.py does): CLIP.encode_text as model.py computes it, all 77 positions of
  each prompt under the causal mask (nn.MultiheadAttention, need_weights=False), batches of
  `--batch` prompts, then zeroshot_classifier's normalise, mean, normalise. Timed: the
  encoding and the ensemble only; the prompts' ids come from the tokeniser re-implementation
  in tests/oracle/test_clip_tokenizer.py, untimed (clip.tokenize's own cost left out).
- The cached run: vitattn with the cache, after one run that filled it (median of the rounds).
Both sides' class embeddings are compared (max abs difference printed; the bench stops if it
exceeds 1e-3). Medians of --rounds; wall and CPU seconds; the load average before and after.
"""
import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests" / "pylib"))
sys.path.insert(0, str(REPO / "tests" / "oracle"))

W, LAYERS, HEADS, CONTEXT, VOCAB, EMBED = 512, 12, 8, 77, 49408, 512


def text_tensors(rng):
    import numpy as np
    r = lambda *s, sc=0.02: (rng.standard_normal(s) * sc).astype(np.float32)  # noqa: E731
    t = {"token_embedding.weight": r(VOCAB, W), "positional_embedding": r(CONTEXT, W, sc=0.01),
         "ln_final.weight": 1 + r(W), "ln_final.bias": r(W), "text_projection": r(W, EMBED, sc=W ** -0.5),
         "logit_scale": np.array(np.log(100.0), np.float32)}
    for i in range(LAYERS):
        b = f"transformer.resblocks.{i}."
        t.update({b + "ln_1.weight": 1 + r(W), b + "ln_1.bias": r(W), b + "attn.in_proj_weight": r(3 * W, W),
                  b + "attn.in_proj_bias": r(3 * W), b + "attn.out_proj.weight": r(W, W),
                  b + "attn.out_proj.bias": r(W), b + "ln_2.weight": 1 + r(W), b + "ln_2.bias": r(W),
                  b + "mlp.c_fc.weight": r(4 * W, W), b + "mlp.c_fc.bias": r(4 * W),
                  b + "mlp.c_proj.weight": r(W, 4 * W), b + "mlp.c_proj.bias": r(W)})
    return t


def run_vitattn(binary, model, labels, templates, out, threads, cache=None):
    """One process; returns (wall, cpu) seconds and its stderr."""
    args = [binary, "forward", "--model", model, "--labels", labels, "--templates", templates, "-o", out,
            "--threads", str(threads), "--heads", "3"]  # the tiny image tower's heads (the text tower's: 512 / 64)
    env = dict(os.environ)
    if cache is None:
        args.append("--no-text-cache")
    else:
        env["XDG_CACHE_HOME"] = str(cache)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    p = subprocess.run(args, capture_output=True, text=True, env=env)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if p.returncode != 0:
        sys.exit(f"vitattn failed: {p.stderr[-2000:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, p.stderr


def torch_ensemble(torch, t, ids_per_class, batch):
    """model.py's encode_text over every prompt in batches, then zeroshot_classifier's mean."""
    F = torch.nn.functional
    mask = torch.empty(CONTEXT, CONTEXT).fill_(float("-inf")).triu_(1)  # build_attention_mask
    blocks = []
    for i in range(LAYERS):
        b = f"transformer.resblocks.{i}."
        mha = torch.nn.MultiheadAttention(W, HEADS)
        mha.in_proj_weight.data.copy_(t[b + "attn.in_proj_weight"])
        mha.in_proj_bias.data.copy_(t[b + "attn.in_proj_bias"])
        mha.out_proj.weight.data.copy_(t[b + "attn.out_proj.weight"])
        mha.out_proj.bias.data.copy_(t[b + "attn.out_proj.bias"])
        blocks.append((b, mha))
    ln = lambda v, p: F.layer_norm(v, (W,), t[p + ".weight"], t[p + ".bias"], 1e-5)  # noqa: E731

    def encode_text(text):
        x = F.embedding(text, t["token_embedding.weight"]) + t["positional_embedding"]
        x = x.permute(1, 0, 2)
        for b, mha in blocks:
            y = ln(x, b + "ln_1")
            x = x + mha(y, y, y, need_weights=False, attn_mask=mask)[0]
            h = F.linear(ln(x, b + "ln_2"), t[b + "mlp.c_fc.weight"], t[b + "mlp.c_fc.bias"])
            x = x + F.linear(h * torch.sigmoid(1.702 * h), t[b + "mlp.c_proj.weight"], t[b + "mlp.c_proj.bias"])
        x = ln(x.permute(1, 0, 2), "ln_final")
        return x[torch.arange(x.shape[0]), text.argmax(dim=-1)] @ t["text_projection"]

    flat = torch.cat(ids_per_class)
    embeddings = torch.cat([encode_text(flat[i:i + batch]) for i in range(0, len(flat), batch)])
    embeddings /= embeddings.norm(dim=-1, keepdim=True)
    per_class = embeddings.view(len(ids_per_class), -1, EMBED).mean(dim=1)
    return per_class / per_class.norm(dim=-1, keepdim=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--classes", type=int, default=32, help="the first K ImageNet names, each in the 80 templates")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--batch", type=int, default=256)
    args = ap.parse_args()
    os.environ["OPENBLAS_NUM_THREADS"] = os.environ["OMP_NUM_THREADS"] = str(args.threads)
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    import numpy as np
    import torch
    import safetensors_io
    from clip_reference import openai_tensors
    from test_clip_tokenizer import Reference
    torch.set_num_threads(args.threads)
    binary = os.environ.get("VITATTN_BIN", str(REPO / "build" / "release" / "vitattn"))
    classes = (REPO / "data/clip/imagenet_classes.txt").read_text(encoding="utf-8").splitlines()[:args.classes]
    templates = (REPO / "data/clip/imagenet_templates.txt").read_text(encoding="utf-8").splitlines()
    n_prompts = len(classes) * len(templates)
    print(f"load average before: {os.getloadavg()[0]:.2f}; {len(classes)} classes x {len(templates)} templates = "
          f"{n_prompts} prompts, {args.threads} threads, {args.rounds} rounds")
    with tempfile.TemporaryDirectory() as d:
        d = Path(d)
        text_t = text_tensors(np.random.default_rng(0))
        model = d / "clip_b32_text.safetensors"
        safetensors_io.write(model, {"visual." + k: v for k, v in openai_tensors(seed=1).items()} | text_t)
        (d / "labels.txt").write_text("\n".join(classes) + "\n", encoding="utf-8")
        (d / "one.txt").write_text(classes[0] + "\n", encoding="utf-8")
        (d / "one_template.txt").write_text(templates[0] + "\n", encoding="utf-8")
        tpl = REPO / "data/clip/imagenet_templates.txt"
        fixed = statistics.median(run_vitattn(binary, model, d / "one.txt", d / "one_template.txt", d / "fixed",
                                              args.threads)[0] for _ in range(args.rounds))
        v = [run_vitattn(binary, model, d / "labels.txt", tpl, d / f"o{i}", args.threads) for i in range(args.rounds)]
        v_wall, v_cpu = statistics.median(x[0] for x in v), statistics.median(x[1] for x in v)
        run_vitattn(binary, model, d / "labels.txt", tpl, d / "fill", args.threads, cache=d / "cache")
        c = [run_vitattn(binary, model, d / "labels.txt", tpl, d / f"c{i}", args.threads, cache=d / "cache")
             for i in range(args.rounds)]
        assert all("from the cache" in x[2] for x in c), c[0][2]
        c_wall = statistics.median(x[0] for x in c)
        tok = Reference()
        ids = []
        for name in classes:
            rows = np.zeros((len(templates), CONTEXT), np.int64)
            for i, tp in enumerate(templates):
                row = [49406] + tok.encode(tp.format(name)) + [49407]
                rows[i, :len(row)] = row
            ids.append(torch.from_numpy(rows))
        tt = {k: torch.from_numpy(np.asarray(a)) for k, a in text_t.items()}
        t_wall, t_cpu, ref = [], [], None
        with torch.inference_mode():
            for _ in range(args.rounds):
                t0, c0 = time.perf_counter(), time.process_time()
                ref = torch_ensemble(torch, tt, ids, args.batch)
                t_wall.append(time.perf_counter() - t0)
                t_cpu.append(time.process_time() - c0)
        got = np.load(d / "o0" / "text_embedding.npy")
        diff = float(np.abs(got - ref.numpy()).max())
        if diff > 1e-3:
            sys.exit(f"the two sides' class embeddings differ by {diff:.3g}")
    t_wall, t_cpu = statistics.median(t_wall), statistics.median(t_cpu)
    scale = 80000 / n_prompts
    print(f"class embeddings: max |vitattn - torch| = {diff:.3g}")
    print(f"vitattn, whole process: {v_wall:.2f} s wall, {v_cpu:.2f} s CPU; its fixed cost (1 prompt): {fixed:.2f} s")
    print(f"torch encode_text + ensemble (batch {args.batch}): {t_wall:.2f} s wall, {t_cpu:.2f} s CPU")
    print(f"torch / vitattn (wall): {t_wall / v_wall:.2f}x; (CPU): {t_cpu / v_cpu:.2f}x")
    print(f"extrapolated to 1000 x 80 = 80,000 prompts: vitattn {fixed + (v_wall - fixed) * scale:.0f} s, "
          f"torch {t_wall * scale:.0f} s (wall)")
    print(f"vitattn's second, cached run: {c_wall:.2f} s wall")
    print(f"load average after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
