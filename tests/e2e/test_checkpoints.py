#!/usr/bin/env python3
"""End-to-end tests of ViT checkpoints: the options that pick what is drawn, what lands on
disk, and the errors. The numbers themselves are checked against PyTorch in
tests/python/test_torch_crosscheck.py; here a tiny timm-named checkpoint written by numpy
is enough.

Needs Debian's python3-numpy and python3-opencv (use /usr/bin/python3).
Environment: VITATTN_BIN, VITATTN_SHARED. With --shared it runs only test_shared_* (the
CIFAR-10 model on the photos) and exits 77 when ../shared is absent.
Prints a closing line "checkpoints: N passed, M failed"; exits 1 on any failure.
"""
import json
import os
import struct
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path

import cv2
import numpy as np

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
BIN = str(Path(os.environ.get("VITATTN_BIN", str(REPO / "build/dev/vitattn"))).resolve())
SHARED = Path(os.environ.get("VITATTN_SHARED", str(REPO.parent / "shared")))
CIFAR = SHARED / "models" / "vit_cifar10_tintn.safetensors"

D, P, GRID, HEADS, LAYERS, MLP = 32, 8, 4, 2, 3, 64


def run(*args):
    p = subprocess.run([BIN, *map(str, args)], capture_output=True, text=True, stdin=subprocess.DEVNULL)
    return p.returncode, p.stdout, p.stderr


def write_safetensors(path, tensors, metadata=None):
    header, blobs, offset = {}, [], 0
    if metadata:
        header["__metadata__"] = metadata
    for name, a in tensors.items():
        b = np.ascontiguousarray(a, dtype="<f4").tobytes()
        header[name] = {"dtype": "F32", "shape": list(a.shape), "data_offsets": [offset, offset + len(b)]}
        blobs.append(b)
        offset += len(b)
    h = json.dumps(header).encode()
    h += b" " * (-len(h) % 8)
    Path(path).write_bytes(struct.pack("<Q", len(h)) + h + b"".join(blobs))


def timm_checkpoint(path, registers=0, heads_in_metadata=True, seed=0):
    rng = np.random.default_rng(seed)
    r = lambda *s, scale=0.3: (rng.standard_normal(s) * scale).astype(np.float32)
    t = {"patch_embed.proj.weight": r(D, 3, P, P, scale=0.1), "patch_embed.proj.bias": r(D),
         "cls_token": r(1, 1, D), "pos_embed": r(1, 1 + GRID * GRID, D)}
    if registers:
        t["register_tokens"] = r(1, registers, D)
    for i in range(LAYERS):
        b = f"blocks.{i}."
        t.update({b + "norm1.weight": 1 + r(D), b + "norm1.bias": r(D), b + "attn.qkv.weight": r(3 * D, D),
                  b + "attn.qkv.bias": r(3 * D), b + "attn.proj.weight": r(D, D), b + "attn.proj.bias": r(D),
                  b + "norm2.weight": 1 + r(D), b + "norm2.bias": r(D), b + "mlp.fc1.weight": r(MLP, D),
                  b + "mlp.fc1.bias": r(MLP), b + "mlp.fc2.weight": r(D, MLP), b + "mlp.fc2.bias": r(D)})
        if registers:
            t[b + "ls1.gamma"] = r(D)
            t[b + "ls2.gamma"] = r(D)
    t["norm.weight"], t["norm.bias"] = 1 + r(D), r(D)
    write_safetensors(path, t, {"num_heads": str(HEADS)} if heads_in_metadata else None)


def photo(h, w, seed=1):
    rng = np.random.default_rng(seed)
    img = rng.integers(0, 256, (h, w, 3), dtype=np.uint8)
    cv2.circle(img, (w // 3, h // 2), min(h, w) // 4, (30, 220, 60), -1)
    return img


class Checkpoints(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory(prefix="vitattn-ckpt-")
        self.dir = Path(self.tmp.name)
        self.model = self.dir / "tiny.safetensors"
        timm_checkpoint(self.model)
        self.img = self.dir / "img.png"
        cv2.imwrite(str(self.img), photo(45, 70))
        self.out = self.dir / "out"

    def tearDown(self):
        self.tmp.cleanup()

    def draw(self, *args, model=None):
        code, out, err = run("--model", model or self.model, self.img, "-o", self.out, "--save-attention", *args)
        self.assertEqual(code, 0, err)
        return np.load(self.out / "img_attn.npy"), np.load(self.out / "img_cls.npy"), err

    def test_default_is_the_last_layers_mean_over_heads_at_the_images_size(self):
        attn, cls, _ = self.draw()
        n_tokens = 1 + GRID * GRID
        self.assertEqual(attn.shape, (HEADS, n_tokens, n_tokens))
        np.testing.assert_allclose(attn.sum(-1), 1, atol=1e-5)
        np.testing.assert_allclose(cls, attn[:, 0, 1:].mean(0).reshape(GRID, GRID), atol=1e-6)
        self.assertEqual(cv2.imread(str(self.out / "img_attn.png")).shape, (45, 70, 3))

    def test_head_index_and_fusions_draw_the_matching_rows(self):
        attn, cls, _ = self.draw("--head", "1", "--layer", "0")
        np.testing.assert_array_equal(cls, attn[1, 0, 1:].reshape(GRID, GRID))
        attn0, _, _ = self.draw("--layer", "-3")  # −3 counts from the end: layer 0
        np.testing.assert_array_equal(attn0, attn)
        _, last, _ = self.draw("--layer", "-1")
        self.assertFalse(np.allclose(last, cls), "layer 0 and the last layer drew the same map")
        for fusion, f in (("max", np.max), ("min", np.min), ("mean", np.mean)):
            a, c, _ = self.draw("--head", fusion)
            np.testing.assert_allclose(c, f(a[:, 0, 1:], axis=0).reshape(GRID, GRID), atol=1e-6, err_msg=fusion)

    def test_head_all_writes_one_overlay_per_head_and_a_sheet(self):
        attn, cls, _ = self.draw("--head", "all")
        self.assertEqual(cls.shape, (HEADS, GRID, GRID))
        for h in range(HEADS):
            np.testing.assert_array_equal(cls[h], attn[h, 0, 1:].reshape(GRID, GRID))
            self.assertEqual(cv2.imread(str(self.out / f"img_attn_h{h}.png")).shape, (45, 70, 3))
        sheet = cv2.imread(str(self.out / "img_attn.png"))
        self.assertEqual(sheet.shape[1], 2 * 512)  # two tiles side by side, each 512 wide
        self.assertNotEqual(sheet.shape[:2], (45, 70))

    def test_rollout_differs_from_the_last_layer_and_sums_like_a_distribution(self):
        _, plain, _ = self.draw()
        _, roll, _ = self.draw("--rollout")
        _, dropped, _ = self.draw("--rollout", "--discard-ratio", "0.8")
        self.assertEqual(roll.shape, (GRID, GRID))
        self.assertFalse(np.allclose(roll, plain))
        self.assertFalse(np.allclose(roll, dropped))
        self.assertTrue(0 < roll.sum() < 1)  # R[0, 1:]: the class token's own share is left out

    def test_threshold_draws_a_white_outline(self):
        run("--model", self.model, self.img, "-o", self.out)
        plain = cv2.imread(str(self.out / "img_attn.png"))
        code, _, err = run("--model", self.model, self.img, "-o", self.out, "--threshold", "0.5")
        self.assertEqual(code, 0, err)
        outlined = cv2.imread(str(self.out / "img_attn.png"))
        changed = np.any(outlined != plain, axis=-1)
        self.assertTrue(changed.any())
        self.assertLess(changed.mean(), 0.5, "an outline, not a fill")
        np.testing.assert_array_equal(outlined[changed], 255, "the outline is white")

    def test_img_size_and_keep_aspect_change_the_grid(self):
        attn, cls, _ = self.draw("--img-size", "48")
        self.assertEqual(cls.shape, (6, 6))
        self.assertEqual(attn.shape[-1], 1 + 36)
        _, cls, _ = self.draw("--img-size", "32", "--keep-aspect")  # 70×45: shorter 32 → 4, longer 49.8 → 6 patches
        self.assertEqual(cls.shape, (4, 6))
        np.testing.assert_allclose(np.load(self.out / "img_attn.npy").sum(-1), 1, atol=1e-5)

    def test_registers_are_skipped_and_the_family_is_reported(self):
        model = self.dir / "reg.safetensors"
        timm_checkpoint(model, registers=3)
        attn, cls, err = self.draw("-v", model=model)
        self.assertEqual(attn.shape[-1], 1 + 3 + GRID * GRID)
        np.testing.assert_allclose(cls, attn[:, 0, 4:].mean(0).reshape(GRID, GRID), atol=1e-6)
        self.assertIn("family dinov2", err)
        self.assertIn("3 registers", err)

    def test_heads_come_from_the_option_when_the_file_is_silent(self):
        model = self.dir / "silent.safetensors"
        timm_checkpoint(model, heads_in_metadata=False)
        code, _, err = run("--model", model, self.img, "-o", self.out)
        self.assertEqual(code, 2)
        self.assertIn("give --heads", err)
        attn, _, _ = self.draw("--heads", "4", model=model)
        self.assertEqual(attn.shape[0], 4)

    def test_bad_choices_exit_2_and_write_nothing(self):
        cases = [
            (["--layer", "3"], "--layer 3: the model has layers 0…2"),
            (["--layer", "-4"], "--layer -4"),
            (["--head", "2"], "--head 2: the model has heads 0…1"),
            (["--head", "first"], "head index"),
            (["--rollout", "--head", "all"], "--rollout fuses heads"),
            (["--discard-ratio", "0.5"], "--discard-ratio needs --rollout"),
            (["--img-size", "50"], "not a multiple of the patch size 8"),
            (["--img-size", "1024"], "more than 4096 patches"),
            (["--family", "torchvision"], "does not use the torchvision naming"),
            (["--save-model", self.dir / "x.safetensors"], "--save-model writes the single-head layout"),
        ]
        for args, message in cases:
            code, _, err = run("--model", self.model, self.img, "-o", self.out, *args)
            self.assertEqual(code, 2, (args, err))
            self.assertIn(message, err, args)
            lines = [l for l in err.strip().splitlines() if l != "Run with --help for more information."]
            self.assertEqual(len(lines), 1, (args, err))
        self.assertFalse(self.out.exists() and any(self.out.iterdir()))
        for option in (["--layer", "1"], ["--head", "all"], ["--rollout"], ["--keep-aspect"]):
            code, _, err = run(self.img, "-o", self.out, *option)
            self.assertEqual(code, 2, option)
            self.assertIn("needs --model", err)

    def test_forward_writes_every_layer(self):
        x = np.random.default_rng(3).standard_normal((2, 3, 32, 40)).astype(np.float32)
        np.save(self.dir / "x.npy", x)
        code, _, err = run("forward", "--model", self.model, self.dir / "x.npy", "-o", self.out)
        self.assertEqual(code, 0, err)
        a = np.load(self.out / "x_attention.npy")
        self.assertEqual(a.shape, (2, LAYERS, HEADS, 1 + 4 * 5, 1 + 4 * 5))
        self.assertEqual(np.load(self.out / "x_features.npy").shape, (2, D))
        self.assertFalse((self.out / "x_logits.npy").exists())  # no classifier in this checkpoint
        np.save(self.dir / "bad.npy", x[:, :2])
        code, _, err = run("forward", "--model", self.model, self.dir / "bad.npy", "-o", self.out)
        self.assertEqual(code, 1)
        self.assertIn("bad.npy: expected [3, H, W] or [N, 3, H, W]", err)

    def test_shared_cifar_model_on_the_photos(self):
        photos = [p for p in sorted((SHARED / "images").glob("*.*")) if p.suffix.lower() in (".png", ".jpg", ".jpeg")]
        code, _, err = run("--model", CIFAR, *photos, "-o", self.out, "--head", "all", "--threshold", "0.6", "-v")
        self.assertEqual(code, 0, err)
        self.assertIn("family tintn: 4 layers, D=48, 4 heads (__metadata__) of 12, P=4, grid 8x8", err)
        self.assertIn("GELU tanh, no final norm, classifier 10 classes", err)
        for p in photos:
            img = cv2.imread(str(p))
            for h in range(4):
                self.assertEqual(cv2.imread(str(self.out / f"{p.stem}_attn_h{h}.png")).shape, img.shape)


if __name__ == "__main__":
    if not Path(BIN).is_file():
        print(f"checkpoints: binary {BIN} not found", file=sys.stderr)
        sys.exit(1)
    shared = "--shared" in sys.argv[1:]
    if shared and not CIFAR.is_file():
        print(f"checkpoints --shared: skipped, no {CIFAR}")
        sys.exit(77)
    names = [n for n in unittest.defaultTestLoader.getTestCaseNames(Checkpoints) if n.startswith("test_shared_") == shared]
    result = unittest.TextTestRunner(verbosity=2, stream=sys.stdout).run(unittest.TestSuite(Checkpoints(n) for n in names))
    failed = len(result.failures) + len(result.errors)
    print(f"checkpoints{' --shared' if shared else ''}: {result.testsRun - failed - len(result.skipped)} passed, {failed} failed")
    sys.exit(1 if failed else 0)
