#!/usr/bin/python3
"""Cross-check of the vitattn binary against the NumPy oracle (reference_pipeline.py).

Run:  /usr/bin/python3 -m pytest tests/oracle/test_crosscheck.py [--shared]
      Without --shared: images made here only. With --shared: the photos in
      ../shared/images and the trained model's reference outputs in ../shared/models;
      skips when ../shared is absent (fails under CI=true).
Env:  VITATTN_BIN     binary to test   (default <repo>/build/dev/vitattn)
      VITATTN_SHARED  shared fixtures  (default <repo>/../shared); its images/ are used if present

It first checks the oracle itself (naive loop versions, safetensors round trips,
OpenCV facts, and the shared pretrained model's layer-0 attention if present),
then runs the binary with --save-attention and compares every _attn.npy and
_cls.npy with the oracle:
  case A  random model files (F32/F16/BF16, with/without biases and metadata)
  case B  the binary's seeded model (saved with --save-model), also with --no-scale
  case C  --mean/--std override (over the file's metadata, and over a preprocessor_config.json)
Each of these is a test; every failed check inside is printed ("FAIL: ...") and listed.
"""

import json
import math
import os
import tempfile
from pathlib import Path

import cv2
import numpy as np

import pytest

import harness
import reference_pipeline as ref
import safetensors_io
from harness import SHARED, need
from tally import Tally

BIN = Path(harness.BIN)
USE_SHARED = harness.USE_SHARED  # tests/conftest.py: --shared
# With --shared every test here runs on the shared photos and model (the crosscheck_numpy_photos entry).
pytestmark = [pytest.mark.shared] if USE_SHARED else []
TOL = 1e-5          # max abs difference allowed against the oracle (the requirement)
ROW_SUM_TOL = 1e-5  # |sum(row) - 1| allowed for a float32 softmax row


T = Tally()

# ---------------------------------------------------------------------------
# test images (made here, in a temp dir)
# ---------------------------------------------------------------------------


def make_images(folder):
    rng = np.random.default_rng(1234)
    paths = []

    # photo-like 451x300 colour image: gradients, shapes, a little noise
    h, w = 300, 451
    yy, xx = np.mgrid[0:h, 0:w].astype(np.float32)
    photo = np.dstack([255 * xx / w, 255 * yy / h, 128 + 100 * np.sin(xx / 17 + yy / 23)])
    photo = np.clip(photo + rng.normal(0, 6, photo.shape), 0, 255).astype(np.uint8)
    cv2.circle(photo, (120, 150), 60, (20, 40, 230), -1)
    cv2.rectangle(photo, (260, 40), (420, 130), (240, 230, 30), -1)
    cv2.ellipse(photo, (330, 220), (80, 40), 30, 0, 360, (30, 200, 60), -1)
    cv2.line(photo, (0, 290), (450, 10), (255, 255, 255), 5)
    paths.append(folder / "photo.png")
    cv2.imwrite(str(paths[-1]), photo)

    # JPEG of the same scene
    paths.append(folder / "photo_q90.jpg")
    cv2.imwrite(str(paths[-1]), photo, [cv2.IMWRITE_JPEG_QUALITY, 90])

    # tiny 5 (wide) x 7 (high): smaller than any patch, upsampled with INTER_LINEAR
    paths.append(folder / "tiny.png")
    cv2.imwrite(str(paths[-1]), rng.integers(0, 256, (7, 5, 3), dtype=np.uint8))

    # wide strip 500x40: w >= S but h < S for S=224/64 (INTER_LINEAR), both >= S for S=32 (INTER_AREA)
    strip = np.dstack([np.tile(np.linspace(0, 255, 500), (40, 1))] * 3).astype(np.uint8)
    strip[:, :, 1] = rng.integers(0, 256, (40, 500), dtype=np.uint8)
    paths.append(folder / "strip.png")
    cv2.imwrite(str(paths[-1]), strip)

    # single-channel grey PNG
    grey = cv2.cvtColor(photo, cv2.COLOR_BGR2GRAY)[::-1].copy()
    paths.append(folder / "grey.png")
    cv2.imwrite(str(paths[-1]), grey)

    # RGBA PNG with a varying alpha channel (IMREAD_COLOR drops alpha)
    rgba = np.dstack([photo[:, ::-1], (255 * yy / h).astype(np.uint8)])
    paths.append(folder / "rgba.png")
    cv2.imwrite(str(paths[-1]), rgba)

    # 16-bit PNG, 260x250 (IMREAD_COLOR converts it to 8 bits)
    deep = rng.integers(0, 65536, (250, 260, 3), dtype=np.uint16)
    deep[60:180, 40:200] = (60000, 1000, 30000)
    paths.append(folder / "deep16.png")
    cv2.imwrite(str(paths[-1]), deep)

    shared_images = SHARED / "images"
    if USE_SHARED:
        paths = []  # the shared run uses the photos only; the synthetic images ran without --shared
        for p in sorted(shared_images.iterdir()):
            if p.suffix.lower() in (".png", ".jpg", ".jpeg") and p.stem not in {q.stem for q in paths}:
                paths.append(p)
    return paths


# ---------------------------------------------------------------------------
# oracle self-checks (no binary involved)
# ---------------------------------------------------------------------------


def naive_attention(X, W_q, b_q, W_k, b_k, scale):
    """Loop version: A[i][j] = softmax_j(q_i . k_j * scale)."""
    n, d = len(X), len(X[0])
    d_k = len(W_q)
    Q = [[sum(X[i][m] * W_q[r][m] for m in range(d)) + b_q[r] for r in range(d_k)] for i in range(n)]
    K = [[sum(X[i][m] * W_k[r][m] for m in range(d)) + b_k[r] for r in range(d_k)] for i in range(n)]
    A = []
    for i in range(n):
        s = [sum(Q[i][r] * K[j][r] for r in range(d_k)) * scale for j in range(n)]
        top = max(s)
        e = [math.exp(v - top) for v in s]
        A.append([v / sum(e) for v in e])
    return np.array(A)


def naive_tokens(image, P, W_E4, b_E, cls, pos):
    """Loop version of patchify + embed: W_E4 is the [D, 3, P, P] conv kernel."""
    S = image.shape[0]
    G, D = S // P, W_E4.shape[0]
    rows = [[cls[d] + pos[0][d] for d in range(D)]]
    for r in range(G):
        for c in range(G):
            row = []
            for d in range(D):
                acc = b_E[d]
                for ch in range(3):
                    for y in range(P):
                        for x in range(P):
                            acc += W_E4[d][ch][y][x] * image[r * P + y][c * P + x][ch]
                row.append(acc + pos[1 + r * G + c][d])
            rows.append(row)
    return np.array(rows)


def self_check(tmp):
    rng = np.random.default_rng(7)

    # 1. attention vs loops, with and without scale, incl. large scores (stability)
    n_tokens, d_model, d_k = 5, 4, 3
    for amp in (1.0, 300.0):
        X = rng.normal(0, amp, (n_tokens, d_model))
        m = {"W_q": rng.normal(size=(d_k, d_model)), "W_k": rng.normal(size=(d_k, d_model)),
             "W_v": rng.normal(size=(d_k, d_model)), "b_q": rng.normal(size=d_k),
             "b_k": rng.normal(size=d_k), "b_v": rng.normal(size=d_k), "d_k": d_k}
        for scale in (True, False):
            A, out = ref.attention(X, m, scale=scale)
            naive = naive_attention(X.tolist(), m["W_q"].tolist(), m["b_q"].tolist(), m["W_k"].tolist(),
                                    m["b_k"].tolist(), 1 / math.sqrt(d_k) if scale else 1.0)
            V = X @ m["W_v"].T + m["b_v"]
            diff = np.abs(A - naive).max()
            T.check(np.all(np.isfinite(A)) and diff < 1e-12 and np.allclose(out, naive @ V, atol=1e-9 * amp),
                    f"oracle attention vs loops (amp={amp}, scale={scale}): max diff {diff:.3g}")

    # 2. patchify + embed vs loops (S=6, P=3, D=2), non-symmetric image
    S, P, D = 6, 3, 2
    image = rng.normal(size=(S, S, 3)).astype(np.float32)
    W_E4 = rng.normal(size=(D, 3, P, P))
    m = {"W_E": W_E4.reshape(D, -1), "b_E": rng.normal(size=D), "cls_token": rng.normal(size=D),
         "pos_embed": rng.normal(size=(1 + (S // P) ** 2, D))}
    X = ref.embed_tokens(ref.patchify(image, P), m)
    naive = naive_tokens(image.astype(np.float64), P, W_E4, m["b_E"], m["cls_token"], m["pos_embed"])
    T.check(X.shape == (5, D) and np.abs(X - naive).max() < 1e-12,
            f"oracle patchify+embed vs loops: max diff {np.abs(X - naive).max():.3g}")

    # 3. safetensors round trips
    tensors = {"a": rng.normal(size=(2, 3, 4)).astype(np.float32), "b": np.array([1.0, -2.0, 0.5], np.float32)}
    meta = {"mean": "0.1,0.2,0.3", "std": "1,2,3"}
    path = tmp / "rt.safetensors"
    safetensors_io.write(path, tensors, meta, dtype="F32")
    got, got_meta = safetensors_io.read(path)
    header_len = int.from_bytes(path.read_bytes()[:8], "little")
    T.check(got_meta == meta and header_len % 8 == 0 and all(np.array_equal(got[k], tensors[k]) for k in tensors),
            "safetensors F32 round trip")
    safetensors_io.write(path, tensors, None, dtype="F16")
    got, _ = safetensors_io.read(path)
    T.check(all(np.array_equal(got[k], tensors[k].astype(np.float16).astype(np.float32)) for k in tensors),
            "safetensors F16 round trip")
    # bf16 facts: 1.0 = 0x3F80, -2.0 = 0xC000, 1+2^-8 ties to even (1.0), 1+3*2^-8 rounds up
    special = np.array([1.0, -2.0, 1 + 2 ** -8, 1 + 3 * 2 ** -8], np.float32)
    safetensors_io.write(path, {"s": special}, None, dtype="BF16")
    raw = path.read_bytes()
    bits = np.frombuffer(raw[8 + int.from_bytes(raw[:8], "little"):], "<u2")
    got, _ = safetensors_io.read(path)
    T.check(bits.tolist() == [0x3F80, 0xC000, 0x3F80, 0x3F82]
            and got["s"].tolist() == [1.0, -2.0, 1.0, 1 + 2 ** -6],
            f"safetensors BF16 bits {[hex(b) for b in bits]} -> {got['s'].tolist()}")

    # 4. cv2 facts the contract relies on
    grey = np.arange(48, dtype=np.uint8).reshape(6, 8)
    cv2.imwrite(str(tmp / "g.png"), grey)
    g3 = cv2.imread(str(tmp / "g.png"), cv2.IMREAD_COLOR)
    deep = np.dstack([np.array([[0, 255, 256, 32767, 32768, 65535]], np.uint16)] * 3)
    cv2.imwrite(str(tmp / "d.png"), deep)
    d8 = cv2.imread(str(tmp / "d.png"), cv2.IMREAD_COLOR)
    T.check(g3.shape == (6, 8, 3) and all(np.array_equal(g3[:, :, c], grey) for c in range(3))
            and d8.dtype == np.uint8 and d8[0, :, 0].tolist() == [0, 0, 1, 127, 128, 255],
            "cv2 IMREAD_COLOR: grey -> 3 equal channels, 16-bit -> value >> 8")

    # 5. preprocess: INTER_AREA 2x downscale is the 2x2 block mean; BGR->RGB; normalisation
    big = np.zeros((8, 8, 3), np.uint8)
    big[:, :, 0] = 200                        # blue (BGR channel 0)
    big[::2, ::2, 2] = 100                    # red on 1 of 4 pixels -> block mean 25
    cv2.imwrite(str(tmp / "b.png"), big)
    x = ref.preprocess(tmp / "b.png", 4, (0.5, 0.25, 0.0), (0.5, 0.5, 0.25))
    want = np.array([(25 / 255 - 0.5) / 0.5, (0 - 0.25) / 0.5, (200 / 255) / 0.25])
    T.check(x.dtype == np.float32 and x.shape == (4, 4, 3) and np.abs(x - want).max() < 1e-6,
            f"preprocess: INTER_AREA block mean, BGR->RGB, normalise (got {x[0, 0].tolist()})")
    tiny = np.full((3, 2, 3), 77, np.uint8)   # smaller than S: INTER_LINEAR of a constant is constant
    cv2.imwrite(str(tmp / "t.png"), tiny)
    x = ref.preprocess(tmp / "t.png", 5, (0, 0, 0), (1, 1, 1))
    T.check(x.shape == (5, 5, 3) and np.abs(x - np.float32(77) / np.float32(255)).max() == 0,
            "preprocess: upsampling a constant image stays constant")

    # 6. the shared pretrained model (different, multi-head architecture): reader + layer-0 attention
    st = SHARED / "models" / "vit_cifar10_tintn.safetensors"
    npz = SHARED / "models" / "vit_cifar10_tintn.reference.npz"
    if USE_SHARED:
        w, meta = safetensors_io.read(st)
        n_params = sum(v.size for v in w.values())
        T.check(len(w) == 54 and n_params == 119098 and meta.get("mean") == "0.5",
                f"read shared safetensors: {len(w)} tensors, {n_params} params")
        golden = np.load(npz)
        pre = "encoder.blocks.0."
        m = {"W_E": w["embedding.patch_embeddings.projection.weight"].astype(np.float64).reshape(48, 48),
             "b_E": w["embedding.patch_embeddings.projection.bias"].astype(np.float64),
             "cls_token": w["embedding.cls_token"].reshape(48).astype(np.float64),
             "pos_embed": w["embedding.position_embeddings"].reshape(65, 48).astype(np.float64)}
        W_qkv = w[pre + "attention.qkv_projection.weight"].astype(np.float64)  # [144, 48]
        b_qkv = w[pre + "attention.qkv_projection.bias"].astype(np.float64)    # [144]
        worst = 0.0
        for i in range(len(golden["inputs"])):
            X = ref.embed_tokens(ref.patchify(golden["inputs"][i].transpose(1, 2, 0), 4), m)  # [65, 48]
            mu, var = X.mean(1, keepdims=True), X.var(1, keepdims=True)
            X = (X - mu) / np.sqrt(var + 1e-5) * w[pre + "layernorm_1.weight"] + w[pre + "layernorm_1.bias"]
            for head in range(4):
                rows = [slice(o + 12 * head, o + 12 * head + 12) for o in (0, 48, 96)]
                hm = {"W_q": W_qkv[rows[0]], "b_q": b_qkv[rows[0]], "W_k": W_qkv[rows[1]],
                      "b_k": b_qkv[rows[1]], "W_v": W_qkv[rows[2]], "b_v": b_qkv[rows[2]], "d_k": 12}
                A, _ = ref.attention(X, hm)
                worst = max(worst, np.abs(A - golden["attention"][i, 0, head]).max())
        T.check(worst <= TOL, f"oracle vs PyTorch golden layer-0 attention ({npz}): max diff {worst:.3g}")


# ---------------------------------------------------------------------------
# running the binary and comparing
# ---------------------------------------------------------------------------


def compare(label, out_dir, images, model, mean=None, std=None, scale=True):
    """Checks every image's _attn.npy / _cls.npy in out_dir against the oracle."""
    n_tokens, grid = 1 + model["grid"] ** 2, model["grid"]
    run_worst = 0.0
    for image in images:
        attn_path = out_dir / f"{image.stem}_attn.npy"
        cls_path = out_dir / f"{image.stem}_cls.npy"
        where = f"{label}: {image.name}"
        if not T.check(attn_path.is_file() and cls_path.is_file(), f"{where}: missing {attn_path} or {cls_path}"):
            continue
        attn, cls = np.load(attn_path), np.load(cls_path)
        if not T.check(attn.dtype == np.float32 and attn.shape == (n_tokens, n_tokens)
                       and cls.dtype == np.float32 and cls.shape == (grid, grid),
                       f"{where}: got attn {attn.dtype}{attn.shape}, cls {cls.dtype}{cls.shape}; "
                       f"want float32 ({n_tokens}, {n_tokens}) and ({grid}, {grid})"):
            continue
        A, _ = ref.run(image, model, mean=mean, std=std, scale=scale)
        diff = np.abs(attn.astype(np.float64) - A)
        run_worst = max(run_worst, diff.max())
        worst = np.unravel_index(diff.argmax(), diff.shape)
        if not T.check(diff.max() <= TOL,
                       f"{where}: attn max abs diff {diff.max():.3g} > {TOL} at {tuple(int(i) for i in worst)} "
                       f"(binary {attn[worst]:.8g}, oracle {A[worst]:.8g}) in {attn_path}"):
            scores = ref.attention_scores(ref.tokens(image, model, mean, std), model, scale)
            print(f"  diagnosis: oracle max |score| {np.abs(scores).max():.4g} "
                  f"(float32 rounding of that alone is {np.abs(scores).max() * 2 ** -24:.2g}); "
                  f"{int((diff > TOL).sum())} of {diff.size} entries over {TOL}")
        row_err = np.abs(attn.astype(np.float64).sum(axis=1) - 1).max()
        T.check(row_err <= ROW_SUM_TOL, f"{where}: a row of {attn_path} sums to 1 +- {row_err:.3g}")
        T.check(np.array_equal(cls, attn[0, 1:].reshape(grid, grid)),
                f"{where}: {cls_path} != attn[0,1:] reshaped, max diff "
                f"{np.abs(cls - attn[0, 1:].reshape(grid, grid)).max():.3g}")
    print(f"{label}: {len(images)} images, max |attn - oracle| = {run_worst:.3g}", flush=True)


def oracle_gap(images, model, **kw_a):
    """Largest difference the oracle itself shows between two option sets (test sensitivity)."""
    gaps = []
    for image in images:
        A0, _ = ref.run(image, model)
        A1, _ = ref.run(image, model, **kw_a)
        gaps.append(np.abs(A0 - A1).max())
    return min(gaps)


def case_a(tmp, images):
    # (img_size, patch, d_model, d_k, dtype, with_bias, metadata)
    meta = {"mean": "0.45,0.5,0.55", "std": "0.2,0.25,0.3"}
    configs = [
        (224, 16, 96, 32, "F32", True, meta), (224, 16, 96, 32, "F16", False, None),
        (224, 16, 96, 32, "BF16", True, None), (64, 8, 48, 16, "F32", False, meta),
        (64, 8, 48, 16, "F16", True, meta), (64, 8, 48, 16, "BF16", False, meta),
        (32, 4, 48, 12, "F32", True, None), (32, 4, 48, 12, "F16", True, meta),
        (32, 4, 48, 12, "BF16", False, None),
    ]
    for i, (S, P, D, d_k, dtype, with_bias, metadata) in enumerate(configs):
        label = f"A[S={S} P={P} D={D} d_k={d_k} {dtype} bias={with_bias} meta={metadata is not None}]"
        path = tmp / f"model{i}.safetensors"
        safetensors_io.write(path, ref.random_model(np.random.default_rng(100 + i), S, P, D, d_k, with_bias),
                             metadata, dtype=dtype)
        model = ref.load_model(path)
        # the test must be able to see a wrong scale factor: attention must be far from uniform
        A, _ = ref.run(images[0], model)
        spread = A[0].max() * (1 + model["grid"] ** 2)
        T.check(spread > 2, f"{label}: oracle class-token attention too flat (max*n_tokens = {spread:.3g})")
        out = tmp / f"outA{i}"
        if harness.run_ok(T, label, ["--model", path, "--save-attention", "-o", out, "-j", "2", *images], timeout=600):
            compare(label, out, images, model)


def case_b(tmp, images):
    for extra in ([], ["--img-size", "64", "--patch-size", "8", "--dim", "48", "--d-k", "16"]):
        label = f"B[--seed 3 {' '.join(extra)}]".replace(" ]", "]")
        saved = tmp / f"seeded{len(extra)}.safetensors"
        out = tmp / f"outB{len(extra)}"
        if not harness.run_ok(T, label, ["--seed", "3", *extra, "--save-model", saved, "--save-attention",
                                  "-o", out, "-j", "2", *images], timeout=600):
            continue
        tensors, _ = safetensors_io.read(saved)
        header = saved.read_bytes()
        header = header[8:8 + int.from_bytes(header[:8], "little")].decode()
        T.check('"F32"' in header and '"F16"' not in header and '"BF16"' not in header,
                f"{label}: --save-model should write F32 ({saved})")
        model = ref.load_model(saved)
        want = (224, 16, 768, 64) if not extra else (64, 8, 48, 16)
        got = (model["img_size"], model["patch_size"], model["d_model"], model["d_k"])
        T.check(got == want, f"{label}: saved model shapes (S, P, D, d_k) = {got}, want {want}")
        compare(label, out, images, model)

        label_ns = label[:-1] + " --no-scale]"
        gap = oracle_gap(images, model, scale=False)
        T.check(gap > 100 * TOL, f"{label_ns}: oracle barely changes without the scale (gap {gap:.3g})")
        out = tmp / f"outBns{len(extra)}"
        if harness.run_ok(T, label_ns, ["--seed", "3", *extra, "--no-scale", "--save-attention", "-o", out, "-j", "2",
                                 *images], timeout=600):
            compare(label_ns, out, images, model, scale=False)


def case_c(tmp, images):
    mean, std = (0.3, 0.4, 0.6), (0.15, 0.2, 0.35)
    cli = ["--mean", ",".join(map(str, mean)), "--std", ",".join(map(str, std))]
    path = tmp / "modelC.safetensors"
    safetensors_io.write(path, ref.random_model(np.random.default_rng(300), 64, 8, 48, 16),
                         {"mean": "0.45,0.5,0.55", "std": "0.2,0.25,0.3"}, dtype="F32")
    model = ref.load_model(path)
    label = f"C[--model (metadata mean/std) {' '.join(cli)}]"
    gap = oracle_gap(images, model, mean=mean, std=std)
    T.check(gap > 100 * TOL, f"{label}: oracle barely changes with the override (gap {gap:.3g})")
    out = tmp / "outC"
    if harness.run_ok(T, label, ["--model", path, *cli, "--save-attention", "-o", out, "-j", "2", *images],
                      timeout=600):
        compare(label, out, images, model, mean=mean, std=std)

    # A model folder whose preprocessor_config.json gives another normalisation: read without
    # the flags (the control: the file is read), and the flags win over it.
    folder = tmp / "modelC_folder"
    folder.mkdir(exist_ok=True)
    safetensors_io.write(folder / "model.safetensors", ref.random_model(np.random.default_rng(300), 64, 8, 48, 16),
                         dtype="F32")
    config_mean, config_std = (0.6, 0.55, 0.5), (0.3, 0.35, 0.4)
    (folder / "preprocessor_config.json").write_text(json.dumps({"image_mean": config_mean, "image_std": config_std}))
    gap = min(np.abs(ref.run(i, model, mean=mean, std=std)[0] - ref.run(i, model, mean=config_mean, std=config_std)[0]).max()
              for i in images)
    T.check(gap > 100 * TOL, f"C[preprocessor_config.json]: the flags' and the config's normalisation barely differ ({gap:.3g})")
    for label, extra, want in (("C[--model (preprocessor_config.json mean/std)]", [], (config_mean, config_std)),
                               (f"C[--model (preprocessor_config.json mean/std) {' '.join(cli)}]", cli, (mean, std))):
        out = tmp / ("outC_config" if not extra else "outC_config_flags")
        if harness.run_ok(T, label,
                          ["--model", folder / "model.safetensors", *extra, "--save-attention", "-o", out, "-j", "2",
                              *images], timeout=600):
            compare(label, out, images, model, mean=want[0], std=want[1])

    label = f"C[--seed 3 --img-size 32 --patch-size 4 --dim 48 --d-k 12 {' '.join(cli)}]"
    saved, out = tmp / "seededC.safetensors", tmp / "outC2"
    if harness.run_ok(T, label, ["--seed", "3", "--img-size", "32", "--patch-size", "4", "--dim", "48", "--d-k", "12",
                          *cli, "--save-model", saved, "--save-attention", "-o", out, "-j", "2", *images], timeout=600):
        compare(label, out, images, ref.load_model(saved), mean=mean, std=std)


@pytest.fixture(scope="module")
def tmp_images():
    if USE_SHARED:
        need((SHARED / "images").is_dir() and (SHARED / "models").is_dir(),
             f"crosscheck --shared: {SHARED} has no images/ and models/")
    with tempfile.TemporaryDirectory(prefix="vitattn-crosscheck-") as tmp:
        tmp = Path(tmp)
        (tmp / "img").mkdir()
        (tmp / "self").mkdir()
        yield tmp, make_images(tmp / "img")


@pytest.fixture()
def binary():
    assert BIN.is_file() and os.access(BIN, os.X_OK), f"binary not found or not executable: {BIN}"


def test_oracle_checks_itself(tmp_images):
    tmp, _ = tmp_images
    with T.section("oracle self-check"):
        self_check(tmp / "self")


def test_case_a_random_model_files(tmp_images, binary):
    with T.section("case A"):
        case_a(*tmp_images)


def test_case_b_seeded_model(tmp_images, binary):
    with T.section("case B"):
        case_b(*tmp_images)


def test_case_c_mean_std_override(tmp_images, binary):
    with T.section("case C"):
        case_c(*tmp_images)
