#!/usr/bin/env python3
"""End-to-end tests of ViT checkpoints: the options that pick what is drawn, what lands on
disk, and the errors. The numbers themselves are checked against PyTorch in
tests/oracle/test_torch_crosscheck.py; here a tiny timm-named checkpoint written by numpy
is enough.

Needs Debian's python3-numpy and python3-opencv (use /usr/bin/python3).
Environment: VITATTN_BIN, VITATTN_SHARED. Run: python3 -m pytest tests/e2e/test_checkpoints.py
[--shared]; --shared runs only the tests marked shared (the CIFAR-10 model on the photos),
which skip when ../shared is absent (fail under CI=true).
"""
import cv2
import numpy as np
import pytest

import safetensors_io
import harness
from harness import SHARED, TmpCase, dino_mask, need, run

CIFAR = SHARED / "models" / "vit_cifar10_tintn.safetensors"

D, P, GRID, HEADS, LAYERS, MLP = 32, 8, 4, 2, 3, 64


def timm_checkpoint(path, registers=0, heads_in_metadata=True, seed=0, classes=0, embed_scale=1.0):
    """The tiny checkpoint of these tests (harness.timm_checkpoint at D, P, GRID, ...)."""
    harness.timm_checkpoint(path, D, P, GRID, LAYERS, MLP, HEADS, heads_in_metadata, seed, classes, registers,
                            embed_scale)


def tintn_checkpoint(path, embed_scale=1.0, seed=0):
    """tintn's names (tintn/vision-transformer-from-scratch), no ε in the metadata."""
    rng = np.random.default_rng(seed)
    r = lambda *s, scale=0.3: (rng.standard_normal(s) * scale).astype(np.float32)
    e = embed_scale
    t = {"embedding.patch_embeddings.projection.weight": r(D, 3, P, P, scale=0.1 * e),
         "embedding.patch_embeddings.projection.bias": r(D, scale=0.3 * e),
         "embedding.cls_token": r(1, 1, D, scale=0.3 * e),
         "embedding.position_embeddings": r(1, 1 + GRID * GRID, D, scale=0.3 * e)}
    for i in range(LAYERS):
        b = f"encoder.blocks.{i}."
        t.update({b + "layernorm_1.weight": 1 + r(D), b + "layernorm_1.bias": r(D),
                  b + "attention.qkv_projection.weight": r(3 * D, D), b + "attention.qkv_projection.bias": r(3 * D),
                  b + "attention.output_projection.weight": r(D, D), b + "attention.output_projection.bias": r(D),
                  b + "layernorm_2.weight": 1 + r(D), b + "layernorm_2.bias": r(D),
                  b + "mlp.dense_1.weight": r(MLP, D), b + "mlp.dense_1.bias": r(MLP),
                  b + "mlp.dense_2.weight": r(D, MLP), b + "mlp.dense_2.bias": r(D)})
    t["classifier.weight"], t["classifier.bias"] = r(10, D), r(10)
    safetensors_io.write(path, t, {"num_heads": str(HEADS)}, dtype="F32")


def numpy_rollout(layers, fusion, discard_ratio):
    """Attention rollout as jacobgil/vit-explain, rows renormalised: layers [L, H, T, T] -> R [T, T].
    Heads are fused in float32 as the attention came (so that the discarded links are the
    same ones), the rest in float64."""
    t = layers.shape[-1]
    r = np.eye(t)
    for heads in layers:
        heads = heads.astype(np.float32)
        a = {"mean": heads.sum(0, dtype=np.float32) / np.float32(len(heads)), "max": heads.max(0),
             "min": heads.min(0)}[fusion].astype(np.float64)
        flat = a.reshape(-1)
        order = np.lexsort((np.arange(flat.size), flat))[:int(np.floor(t * t * discard_ratio))]
        flat[order[order != 0]] = 0  # the weakest links, never the class token's own
        a = (a + np.eye(t)) / 2
        a = a / a.sum(axis=1, keepdims=True)
        r = a @ r
    return r


def photo(h, w, seed=1):
    rng = np.random.default_rng(seed)
    img = rng.integers(0, 256, (h, w, 3), dtype=np.uint8)
    cv2.circle(img, (w // 3, h // 2), min(h, w) // 4, (30, 220, 60), -1)
    return img


class Checkpoints(TmpCase):
    tmp_prefix = "vitattn-ckpt-"

    def setUp(self):
        super().setUp()
        self.model = self.dir / "tiny.safetensors"
        timm_checkpoint(self.model)
        self.img = self.dir / "img.png"
        cv2.imwrite(str(self.img), photo(45, 70))
        self.out = self.dir / "out"

    def draw(self, *args, model=None, seeded=False):
        chosen = [] if seeded else ["--model", model or self.model]
        code, out, err = run(*chosen, self.img, "-o", self.out, "--save-attention", *args)
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

    def test_threshold_saves_dinos_mask_of_each_drawn_map(self):
        for t in ("0.3", "0.9"):  # asymmetric: t and 1 - t give different masks
            for view in (["--head", "mean"], ["--head", "all"], ["--head", "1", "--layer", "0"], ["--rollout"]):
                label = f"{' '.join(view)} --threshold {t}"
                _, cls, _ = self.draw(*view, "--threshold", t)
                mask = np.load(self.out / "img_mask.npy")
                self.assertEqual((mask.dtype, mask.shape), (np.bool_, cls.shape), label)
                want = np.array([dino_mask(c, float(t)) for c in cls.reshape(-1, GRID, GRID)]).reshape(cls.shape)
                self.assertTrue(want.any() and not want.all(), f"{label}: the test's own mask keeps some, not all")
                np.testing.assert_array_equal(mask, want, f"{label}: not DINO's mask of img_cls.npy")

    def test_rollout_fusions_match_a_numpy_rollout_of_each_layers_attention(self):
        layers = np.array([self.draw("--layer", str(l))[0] for l in range(LAYERS)])  # [L, H, T, T]
        drawn = {}
        for fusion in ("mean", "max", "min"):
            for ratio, upto in (("0", LAYERS), ("0.5", LAYERS), ("0.5", 2)):
                label = f"--rollout --head {fusion} --discard-ratio {ratio} --layer {upto - 1}"
                _, cls, _ = self.draw("--rollout", "--head", fusion, "--layer", str(upto - 1),
                                      *(["--discard-ratio", ratio] if ratio != "0" else []))
                want = numpy_rollout(layers[:upto], fusion, float(ratio))[0, 1:].reshape(GRID, GRID)
                np.testing.assert_allclose(cls, want, atol=2e-6, err_msg=label)
                drawn[fusion, ratio, upto] = cls
        for a, b in (("mean", "max"), ("mean", "min"), ("max", "min")):
            gap = np.abs(drawn[a, "0.5", LAYERS] - drawn[b, "0.5", LAYERS]).max()
            self.assertGreater(gap, 1e-3, f"the test cannot tell --head {a} from --head {b} in a rollout")

    def test_family_defaults_are_the_libraries_own(self):
        # Tiny tokens make LayerNorm's ε visible; another --img-size makes the position resampling run.
        attn = lambda model, *a: self.draw("--img-size", "48", *a, model=model)[0]
        timm = self.dir / "timm.safetensors"
        timm_checkpoint(timm, classes=5, embed_scale=1e-3)
        default = attn(timm, "-v")
        np.testing.assert_array_equal(default, attn(timm, "--eps", "1e-6", "--pos-interp", "bicubic-antialias"),
                                      "timm: ε 1e-6 and timm's antialiased bicubic resampling")
        self.assertGreater(np.abs(default - attn(timm, "--pos-interp", "bicubic")).max(), 1e-4, "resampling shows")
        self.assertGreater(np.abs(default - attn(timm, "--eps", "1e-5")).max(), 1e-4, "ε shows")
        dino = self.dir / "dino.safetensors"
        timm_checkpoint(dino, embed_scale=1e-3)
        default = attn(dino)
        np.testing.assert_array_equal(default, attn(dino, "--eps", "1e-6", "--pos-interp", "bicubic-offset"),
                                      "dino: ε 1e-6 and DINO's interpolate_pos_encoding (offset 0.1)")
        self.assertGreater(np.abs(default - attn(dino, "--pos-interp", "bicubic")).max(), 1e-4, "resampling shows")
        tintn = self.dir / "tintn.safetensors"
        tintn_checkpoint(tintn, embed_scale=1e-3)
        default, err = self.draw(model=tintn)[0], self.draw("-v", model=tintn)[2]
        self.assertIn("family tintn", err)
        np.testing.assert_array_equal(default, self.draw("--eps", "1e-5", model=tintn)[0],
                                      "tintn: nn.LayerNorm's default ε 1e-5")
        self.assertGreater(np.abs(default - self.draw("--eps", "1e-6", model=tintn)[0]).max(), 1e-4, "ε shows")

    def test_skip_existing_counts_the_mask(self):
        code, _, err = run("--model", self.model, self.img, "-o", self.out, "--save-attention", "--head", "all")
        self.assertEqual(code, 0, err)
        code, _, err = run("--model", self.model, self.img, "-o", self.out, "--save-attention", "--head", "all",
                           "--threshold", "0.6", "--skip-existing")
        self.assertEqual(code, 0, err)
        self.assertEqual(np.load(self.out / "img_mask.npy").shape, (HEADS, GRID, GRID), err)

    def test_img_size_and_keep_aspect_change_the_grid(self):
        attn, cls, _ = self.draw("--img-size", "48")
        self.assertEqual(cls.shape, (6, 6))
        self.assertEqual(attn.shape[-1], 1 + 36)
        _, cls, _ = self.draw("--img-size", "32", "--keep-aspect")  # 70×45: shorter 32 → 4, longer 49.8 → 6 patches
        self.assertEqual(cls.shape, (4, 6))
        np.testing.assert_allclose(np.load(self.out / "img_attn.npy").sum(-1), 1, atol=1e-5)

    def test_an_img_size_below_a_useful_grid_is_a_warning(self):
        # --img-size 16 on a /16 model drew a 1×1 grid without a word: one warning now, naming the
        # grid and a size that gives 4×4 patches; from 4×4 on, nothing is said.
        warnings = lambda err: [ln for ln in err.splitlines() if ln.startswith("warning:")]  # noqa: E731
        for size, grid in (("8", "1x1"), ("24", "3x3")):
            with self.subTest(size=size):
                _, cls, err = self.draw("--img-size", size)
                n = int(size) // P
                self.assertEqual(cls.shape, (n, n))
                said = warnings(err)
                self.assertEqual(len(said), 1, err)
                self.assertIn(f"--img-size {size}: ", said[0])
                self.assertIn(f"a {grid} grid", said[0])
                self.assertIn(f"--img-size {4 * P} or more", said[0])
        _, _, err = self.draw("--img-size", "16", "--keep-aspect")  # 70×45: a shorter side of 2 patches
        said = warnings(err)
        self.assertEqual(len(said), 1, err)
        self.assertIn("a shorter side of 2 patches", said[0])
        for args in (["--img-size", str(4 * P)], ["--img-size", str(4 * P), "--keep-aspect"], []):
            with self.subTest(args=args):
                self.assertEqual(warnings(self.draw(*args)[2]), [])

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
        self.assertIn("--heads: ", err)
        self.assertIn("does not say how many heads", err)
        attn, _, _ = self.draw("--heads", "4", model=model)
        self.assertEqual(attn.shape[0], 4)

    def test_bad_choices_exit_2_and_write_nothing(self):
        cases = [
            (["--layer", "3"], "--layer 3: the model has layers 0…2"),
            (["--layer", "-4"], "--layer -4"),
            (["--head", "2"], "--head 2: the model has heads 0…1"),
            (["--head", "first"], "head index"),
            (["--rollout", "--head", "all"], "--rollout fuses heads"),
            (["--discard-ratio", "0.5"], "--discard-ratio is for --method rollout and grad-rollout"),
            (["--img-size", "50"], "not a multiple of the patch size 8"),
            (["--img-size", "1024"], "more than 4096 patches"),
            (["--family", "torchvision"], "does not use the torchvision naming"),
            (["--save-model", self.dir / "x.safetensors"], "--save-model: the single-head layout holds one attention-only block"),
        ]
        for args, message in cases:
            code, _, err = run("--model", self.model, self.img, "-o", self.out, *args)
            self.assertEqual(code, 2, (args, err))
            self.assertIn(message, err, args)
            lines = [l for l in err.strip().splitlines() if l != "Run with --help for more information."]
            self.assertEqual(len(lines), 1, (args, err))
        self.assertFalse(self.out.exists() and any(self.out.iterdir()))
        # The seeded model is one layer of one head: its choices are checked against that.
        for args, message in ((["--layer", "1"], "--layer 1: the model has layers 0…0"),
                              (["--head", "1"], "--head 1: the model has heads 0…0"),
                              (["--heads", "2"], "--heads requires --model")):
            code, _, err = run(self.img, "-o", self.out, *args)
            self.assertEqual(code, 2, args)
            self.assertIn(message, err, args)
        self.assertFalse(self.out.exists() and any(self.out.iterdir()))

    def test_every_view_works_on_the_seeded_model(self):
        # One head, one layer: the views of a checkpoint apply, and agree with each other.
        seeded = ["--img-size", "32", "--patch-size", "8", "--dim", "24", "--d-k", "6", "--seed", "4"]
        attn, cls, _ = self.draw(*seeded, seeded=True)
        self.assertEqual(attn.shape, (17, 17))  # one head: [T, T], as the seeded head always wrote
        for view in (["--head", "0"], ["--head", "max"], ["--head", "all"], ["--layer", "-1"], ["--rollout"]):
            a, c, _ = self.draw(*seeded, *view, seeded=True)
            np.testing.assert_array_equal(a, attn, err_msg=str(view))
            if "--rollout" in view:  # (A + I)/2 of one layer, rows renormalised: the class row is half A's
                np.testing.assert_allclose(c, attn[0, 1:].reshape(4, 4) / 2, atol=1e-6)
            else:
                np.testing.assert_array_equal(c.reshape(4, 4), attn[0, 1:].reshape(4, 4), err_msg=str(view))
        # Another input size resamples the seeded positions; --keep-aspect keeps the 70×45 shape.
        a48, c48, _ = self.draw(*seeded, "--keep-aspect", seeded=True)
        self.assertEqual(c48.shape, (4, 6))
        np.testing.assert_allclose(a48.sum(-1), 1, atol=1e-5)
        _, _, err = self.draw(*seeded, "--threshold", "0.5", seeded=True)
        self.assertTrue((self.out / "img_mask.npy").exists(), err)

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

    @pytest.mark.shared
    def test_shared_cifar_model_on_the_photos(self):
        need(CIFAR.is_file(), f"no {CIFAR}")
        photos = [p for p in sorted((SHARED / "images").glob("*.*")) if p.suffix.lower() in (".png", ".jpg", ".jpeg")]
        code, _, err = run("--model", CIFAR, *photos, "-o", self.out, "--head", "all", "--threshold", "0.6", "-v")
        self.assertEqual(code, 0, err)
        self.assertIn("family tintn: 4 layers, D=48, 4 heads (__metadata__) of 12, P=4, grid 8x8", err)
        self.assertIn("GELU tanh, no final norm, classifier 10 classes", err)
        for p in photos:
            img = cv2.imread(str(p))
            for h in range(4):
                self.assertEqual(cv2.imread(str(self.out / f"{p.stem}_attn_h{h}.png")).shape, img.shape)

