#!/usr/bin/python3
"""--top K against torch: the K most likely classes and their probabilities, printed and in
<out>/predictions.csv, equal to torch.softmax of torch-computed logits (1e-5) on the same
model and the same preprocessed image.

Run:  /usr/bin/python3 tests/oracle/test_top_classes.py
Env:  VITATTN_BIN  binary to test (default <repo>/build/dev/vitattn)

  case T  a random torchvision ViT with a 10-way head, exported under timm names: probabilities
          and ranking vs torch, labels from __metadata__ / HF id2label / timm label_names
          (config.json beside the file) / none (indices), the CSV in input order and
          byte-identical at -j 1 and -j 3, --layer 0 still classifying with every block
  case N  a 1000-way head without names: the ImageNet-1k names, checked against torchvision's own list
  case B  the bundled CIFAR-10 model (models/), re-implemented in torch here (and that torch
          code checked against the original code's golden logits when ../shared is there): labels
          from its __metadata__
  case E  a backbone without classifier, the seeded model: one-line usage error, exit 2
Prints "top: <passed> passed, <failed> failed"; exits 1 if anything failed.
"""
import csv
import io
import json
import os
import sys
import tempfile
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "pylib"))  # harness, tally, torch_reference
from tally import Tally, skip  # noqa: E402
from harness import run_checked  # noqa: E402

try:
    import torch
    import torch.nn.functional as F
    from torchvision.models._meta import _IMAGENET_CATEGORIES
except ImportError as e:
    skip(f"cannot import torch/torchvision ({e})")

import torch_reference as tr  # noqa: E402  (torchvision ViTs, their exports, torch references, the input)
import reference_pipeline as ref  # noqa: E402

REPO = HERE.parents[1]
BIN = Path(os.environ.get("VITATTN_BIN", REPO / "build" / "dev" / "vitattn"))
SHARED = Path(os.environ.get("VITATTN_SHARED", REPO.parent / "shared"))
TOL = 1e-5
T = Tally()
torch.set_grad_enabled(False)


def write_model(path, sd, heads, metadata=None):
    tr.write_safetensors(path, sd, metadata={"num_heads": heads, **(metadata or {})})


def read_csv(path):
    if not T.check(Path(path).is_file(), f"{path} written"):
        return [], []
    with open(path, newline="", encoding="utf-8") as f:
        rows = list(csv.reader(f))
    return rows[0], rows[1:]


def check_against(label, rows, images, probs_by_image, names, k):
    """rows: CSV rows; probs_by_image: torch probabilities [n_classes] per image, in input order."""
    want_files = [str(p) for p in images for _ in range(k)]
    T.check([r[0] for r in rows] == want_files, f"{label}: file column in input order: {[r[0] for r in rows]}")
    worst = 0.0
    for i, p in enumerate(probs_by_image):
        order = np.argsort(-p, kind="stable")[:k]
        got = rows[i * k:(i + 1) * k]
        T.check([int(r[1]) for r in got] == list(range(1, k + 1)), f"{label}: ranks of image {i}")
        T.check([int(r[2]) for r in got] == [int(c) for c in order], f"{label}: image {i} classes {[r[2] for r in got]}, torch {list(order)}")
        for r in got:
            c = int(r[2])
            worst = max(worst, abs(float(r[4]) - float(p[c])))
            want_name = names[c] if names is not None else str(c)
            T.check(r[3] == want_name, f"{label}: label of class {c} is {r[3]!r}, expected {want_name!r}")
    T.check(worst <= TOL, f"{label}: probabilities differ from torch by {worst:.3g} > {TOL}")
    return worst


def torch_probs(model, images, norm):
    out = []
    for path in images:
        x = tr.preprocess(path, model.image_size, model.image_size, norm)
        out.append(F.softmax(model(x).double(), dim=-1)[0].numpy())
    return out


def make_images(tmp, n):
    paths = []
    for i in range(n):
        p = tmp / f"img{i}.png"
        tr.make_image(p)
        import cv2
        img = cv2.imread(str(p))
        cv2.imwrite(str(p), np.roll(img, 37 * i, axis=1)[:, ::(1 if i % 2 == 0 else -1)])  # different pictures
        paths.append(p)
    return paths


def case_t(tmp):
    model = tr.make_vit(64, 96, 3, 192, 3, 10, seed=21)
    images = make_images(tmp, 5)
    probs = torch_probs(model, images, tr.HALF)  # timm names with a head: the family's 0.5/0.5
    sd = tr.export_timm(model.state_dict(), 3)
    names = [f"class {c}, \"quoted\"" for c in range(10)]  # commas and quotes: the CSV must quote them

    meta_dir = tmp / "meta"
    meta_dir.mkdir()
    write_model(meta_dir / "m.safetensors", sd, 3, {"classes": ",".join(f"c{i}" for i in range(10))})
    out = tmp / "out_meta"
    p = run_checked(T, "--model", meta_dir / "m.safetensors", "--top", 3, "-j", 3, "-o", out, *images)
    header, rows = read_csv(out / "predictions.csv")
    T.check(header == ["file", "rank", "class", "label", "probability"], f"CSV header {header}")
    w = check_against("T[metadata]", rows, images, probs, [f"c{i}" for i in range(10)], 3)
    lines = p.stdout.strip().splitlines()
    T.check(len(lines) == len(images) and all(l.startswith(str(im) + ":") for l, im in zip(lines, images)),
            f"T: one printed line per image in input order: {lines}")
    top1 = int(np.argmax(probs[0]))
    T.check(f"c{top1} {100 * probs[0][top1]:.2f}%" in lines[0], f"T: printed top class of image 0: {lines[0]}")

    out1 = tmp / "out_j1"
    run_checked(T, "--model", meta_dir / "m.safetensors", "--top", 3, "-j", 1, "-o", out1, *images)
    T.check((out1 / "predictions.csv").read_bytes() == (out / "predictions.csv").read_bytes(), "T: CSV identical at -j 1 and -j 3")

    out_l = tmp / "out_layer0"
    run_checked(T, "--model", meta_dir / "m.safetensors", "--top", 3, "--layer", 0, "-o", out_l, *images)
    T.check((out_l / "predictions.csv").read_bytes() == (out / "predictions.csv").read_bytes(),
            "T: --layer 0 draws layer 0 but classifies with every block")

    for kind, config in [("hf-id2label", {"id2label": {str(i): n for i, n in enumerate(names)}}),
                         ("timm-label_names", {"architecture": "vit", "label_names": names})]:
        d = tmp / kind
        d.mkdir()
        write_model(d / "model.safetensors", sd, 3)
        (d / "config.json").write_text(json.dumps(config))
        out = tmp / f"out_{kind}"
        run_checked(T, "--model", d / "model.safetensors", "--top", 10, "-o", out, *images[:2])
        w = max(w, check_against(f"T[{kind}]", read_csv(out / "predictions.csv")[1], images[:2], probs[:2], names, 10))

    plain = tmp / "plain"
    plain.mkdir()
    write_model(plain / "model.safetensors", sd, 3)
    out = tmp / "out_plain"
    run_checked(T, "--model", plain / "model.safetensors", "--top", 20, "-o", out,
                images[0])  # K over n_classes: all 10
    w = max(w, check_against("T[indices]", read_csv(out / "predictions.csv")[1], images[:1], probs[:1], None, 10))
    print(f"T: 10-way head vs torch softmax: max |d| {w:.3g}", flush=True)

    bad = tmp / "bad"
    bad.mkdir()
    write_model(bad / "model.safetensors", sd, 3)
    (bad / "config.json").write_text(json.dumps({"id2label": {"0": "a", "1": "b"}}))
    p = run_checked(T, "--model", bad / "model.safetensors", "--top", 3, "-o", tmp / "out_bad", images[0], expect=2)
    T.check(len(p.stderr.strip().splitlines()) == 1 and "config.json" in p.stderr and "10" in p.stderr,
            f"T: id2label of 2 names for 10 classes: one line naming the file: {p.stderr!r}")


def case_n(tmp):
    model = tr.make_vit(32, 64, 2, 128, 2, 1000, seed=5)
    images = make_images(tmp, 2)
    probs = torch_probs(model, images, tr.HALF)  # timm names with a head: the family's 0.5/0.5
    d = tmp / "in1k"
    d.mkdir()
    write_model(d / "model.safetensors", tr.export_timm(model.state_dict(), 2), 2)
    out = tmp / "out_in1k"
    run_checked(T, "--model", d / "model.safetensors", "--top", 5, "-o", out, *images)
    w = check_against("N[imagenet]", read_csv(out / "predictions.csv")[1], images, probs, list(_IMAGENET_CATEGORIES), 5)
    print(f"N: 1000-way head, ImageNet names: max |d| {w:.3g}", flush=True)


def tintn_logits(t, x):
    """The bundled model's forward in torch (tintn's vit.py): pre-norm blocks, packed qkv,
    tanh GELU, LayerNorm eps 1e-5, no final norm, classifier on the class token. x [N, 3, 32, 32]."""
    g = {k: torch.from_numpy(v).double() for k, v in t.items()}
    x = x.double()
    n = x.shape[0]
    tok = F.conv2d(x, g["embedding.patch_embeddings.projection.weight"], g["embedding.patch_embeddings.projection.bias"], stride=4)
    tok = tok.flatten(2).transpose(1, 2)
    tok = torch.cat([g["embedding.cls_token"].expand(n, -1, -1), tok], 1) + g["embedding.position_embeddings"]
    d, heads = 48, 4
    for i in range(4):
        b = f"encoder.blocks.{i}."
        y = F.layer_norm(tok, (d,), g[b + "layernorm_1.weight"], g[b + "layernorm_1.bias"], 1e-5)
        qkv = F.linear(y, g[b + "attention.qkv_projection.weight"], g[b + "attention.qkv_projection.bias"])
        q, k, v = (z.reshape(n, -1, heads, d // heads).transpose(1, 2) for z in qkv.split(d, -1))
        a = torch.softmax(q @ k.transpose(-1, -2) / (d // heads) ** 0.5, -1)
        o = (a @ v).transpose(1, 2).reshape(n, -1, d)
        tok = tok + F.linear(o, g[b + "attention.output_projection.weight"], g[b + "attention.output_projection.bias"])
        y = F.layer_norm(tok, (d,), g[b + "layernorm_2.weight"], g[b + "layernorm_2.bias"], 1e-5)
        y = F.gelu(F.linear(y, g[b + "mlp.dense_1.weight"], g[b + "mlp.dense_1.bias"]), approximate="tanh")
        tok = tok + F.linear(y, g[b + "mlp.dense_2.weight"], g[b + "mlp.dense_2.bias"])
    return F.linear(tok[:, 0], g["classifier.weight"], g["classifier.bias"])


def case_b(tmp):
    path = REPO / "models" / "vit_cifar10_tintn.safetensors"
    tensors, meta = ref.read_safetensors(path)
    golden = SHARED / "models" / "vit_cifar10_tintn.reference.npz"
    if golden.is_file():  # the torch code above is the original's: same logits on its golden inputs
        gz = np.load(golden)
        d = np.abs(tintn_logits(tensors, torch.from_numpy(gz["inputs"])).numpy() - gz["logits"]).max()
        T.check(d < 1e-4, f"B: the torch re-implementation differs from the original's golden logits by {d:.3g}")
    images = make_images(tmp, 3)
    photos = sorted((SHARED / "images").glob("*.png")) if (SHARED / "images").is_dir() else []
    images += photos
    probs = [F.softmax(tintn_logits(tensors, tr.preprocess(p, 32, 32, tr.HALF)), -1)[0].numpy() for p in images]
    out = tmp / "out_bundled"
    run_checked(T, "--model", path, "--top", 10, "-o", out, *images)
    w = check_against("B[bundled]", read_csv(out / "predictions.csv")[1], images, probs, meta["classes"].split(","), 10)
    print(f"B: bundled CIFAR-10 model on {len(images)} images: max |d| {w:.3g}", flush=True)


def case_e(tmp):
    model = tr.make_vit(32, 64, 2, 128, 2, 10, seed=3)
    sd = {k: v for k, v in tr.export_timm(model.state_dict(), 2).items() if not k.startswith("head.")}
    write_model(tmp / "backbone.safetensors", sd, 2)
    img = make_images(tmp, 1)[0]
    for args, what in [(["--model", tmp / "backbone.safetensors"], "backbone"), ([], "seeded")]:
        p = run_checked(T, *args, "--top", 3, "-o", tmp / f"out_e_{what}", img, expect=2)
        lines = p.stderr.strip().splitlines()
        T.check(len(lines) == 1 and "--top" in lines[0] and "classifier" in lines[0], f"E[{what}]: one line: {lines}")
        T.check(not (tmp / f"out_e_{what}" / "predictions.csv").exists(), f"E[{what}]: no CSV written")


def main():
    if not BIN.is_file():
        print(f"FAIL: binary {BIN} not found")
        return 1
    with tempfile.TemporaryDirectory(prefix="vitattn_top_") as d:
        tmp = Path(d)
        for case in (case_t, case_n, case_b, case_e):
            sub = tmp / case.__name__
            sub.mkdir()
            case(sub)
    print(f"top: {T.passed} passed, {T.failed} failed")
    return 1 if T.failed else 0


if __name__ == "__main__":
    sys.exit(main())
