#!/usr/bin/env python3
"""Damaged checkpoints in every family's layout, end to end: a state dict with tensors
missing, a block numbering with a gap, a weight without its bias, a norm half present, a
tensor of the encoder's names that the layout does not use. Each is one `error:` line naming
the tensors, exit 2, nothing written; before, each loaded as a smaller or different model and
drew a wrong map with exit 0. Tensors outside the encoder (DINO's projection head, an HF
pooler, an optimizer's state) are listed by -v and otherwise left alone.

Also what a model file is, by its bytes rather than its name (safetensors named .pth, a zip
named .safetensors), and the `module.` prefix of a DataParallel state dict in safetensors.

The files come from harness.timm_tensors, renamed to each family by harness.renamed_from_timm.
Needs Debian's python3-numpy and python3-opencv, and torch for the .pth cases (use /usr/bin/python3).
Environment: VITATTN_BIN. Run: python3 -m pytest tests/e2e/test_model_layouts.py
"""
import io
import zipfile

import cv2
import numpy as np

import safetensors_io
from harness import TmpCase, renamed_from_timm, run, timm_tensors

D, P, GRID, LAYERS, MLP, HEADS = 16, 4, 2, 3, 32, 2

# Per family: the block prefix, the final norm's weight, block 1's fc1 bias, the classifier's bias.
LAYOUT = {
    "timm": ("blocks.{}.", "norm.weight", "mlp.fc1.bias", "head.bias"),
    "dino": ("blocks.{}.", "norm.weight", "mlp.fc1.bias", None),
    "dinov2": ("blocks.{}.", "norm.weight", "mlp.fc1.bias", None),
    "hf-vit": ("vit.encoder.layer.{}.", "vit.layernorm.weight", "intermediate.dense.bias", "classifier.bias"),
    "hf-dinov2": ("encoder.layer.{}.", "layernorm.weight", "mlp.fc1.bias", None),
    "torchvision": ("encoder.layers.encoder_layer_{}.", "encoder.ln.weight", "mlp.0.bias", "heads.head.bias"),
    "tintn": ("encoder.blocks.{}.", None, "mlp.dense_1.bias", "classifier.bias"),
}


def family_tensors(family):
    classes = 5 if LAYOUT[family][3] else 0
    registers = 2 if family in ("dinov2", "hf-dinov2") else 0
    return renamed_from_timm(timm_tensors(D, P, GRID, LAYERS, MLP, classes=classes, registers=registers), family, D,
                             LAYERS)


def pth_bytes(tensors, wrap=None):
    import torch
    state = {k: torch.from_numpy(np.ascontiguousarray(v)) for k, v in tensors.items()}
    buf = io.BytesIO()
    torch.save(wrap(state) if wrap else state, buf)
    return buf.getvalue()


class Layouts(TmpCase):
    tmp_prefix = "vitattn-layouts-"

    def setUp(self):
        super().setUp()
        ok, buf = cv2.imencode(".png", np.full((24, 20, 3), 100, np.uint8))
        (self.dir / "img.png").write_bytes(buf.tobytes())

    def write_model(self, tensors, name="m.safetensors"):
        safetensors_io.write(self.dir / name, tensors, {"num_heads": str(HEADS)}, dtype="F32")
        return name

    def draws(self, model, *extra):
        rc, _, err = run("--model", model, "img.png", "-o", "out", *extra, cwd=self.dir)
        self.assertEqual(rc, 0, err)
        self.assertTrue((self.dir / "out/img_attn.png").is_file())
        return err

    def refused(self, model, *names, family=None, extra=()):
        """Exit 2, one line naming the file and every tensor in `names`, nothing written."""
        rc, _, err = run("--model", model, "img.png", "-o", "out", *extra, cwd=self.dir)
        self.assertEqual(rc, 2, err)
        lines = err.splitlines()
        self.assertEqual(len(lines), 1, err)
        self.assertTrue(lines[0].startswith(f"error: {model}: "), lines[0])
        for n in names:
            self.assertIn(n, lines[0])
        if family:
            self.assertIn(family, lines[0])
        self.assertFalse((self.dir / "out").exists(), "something was written")
        return lines[0]

    def each_family(self, damage):
        """damage(family, tensors) → the names the error must give, or None to skip the family."""
        for family in LAYOUT:
            with self.subTest(family=family):
                t = family_tensors(family)
                names = damage(family, t)
                if names is None:
                    continue
                self.refused(self.write_model(t, f"{family}.safetensors"), *names, family=family)

    # --- complete models load ---------------------------------------------------------------
    def test_control_every_family_loads_complete(self):
        for family in LAYOUT:
            with self.subTest(family=family):
                model = self.write_model(family_tensors(family), f"{family}.safetensors")
                err = self.draws(model, "-v")
                self.assertRegex(err, f"family {family}( prefix [a-z.]+)?: {LAYERS} layers")

    # --- missing -----------------------------------------------------------------------------
    def test_a_block_missing_from_the_middle(self):
        def damage(family, t):
            block = LAYOUT[family][0].format(1)
            for k in [k for k in t if k.startswith(block)]:
                del t[k]
            return [block]  # the gap, by its prefix
        self.each_family(damage)

    def test_the_final_norm_half_present(self):
        def damage(family, t):
            if not LAYOUT[family][1]:
                return None
            del t[LAYOUT[family][1]]
            return [LAYOUT[family][1]]
        self.each_family(damage)

    def test_the_final_norm_missing(self):
        def damage(family, t):
            if not LAYOUT[family][1]:
                return None
            w = LAYOUT[family][1]
            del t[w], t[w[:-len("weight")] + "bias"]
            return [w]
        self.each_family(damage)

    def test_one_blocks_mlp_bias_missing(self):
        def damage(family, t):
            name = LAYOUT[family][0].format(1) + LAYOUT[family][2]
            del t[name]
            return [name]
        self.each_family(damage)

    def test_the_classifiers_bias_missing(self):
        def damage(family, t):
            if not LAYOUT[family][3]:
                return None
            del t[LAYOUT[family][3]]
            return [LAYOUT[family][3]]
        self.each_family(damage)

    def test_a_bias_without_its_weight(self):
        def damage(family, t):
            name = LAYOUT[family][0].format(2) + LAYOUT[family][2][:-len("bias")] + "weight"
            del t[name]
            return [name]
        self.each_family(damage)

    def test_one_blocks_qkv_bias_missing(self):
        # A model may have no qkv bias at all (timm's qkv_bias=False), never in one block only.
        def damage(family, t):
            block = LAYOUT[family][0].format(0)
            name = next(k for k in t if k.startswith(block) and k.endswith("bias") and ("qkv" in k or "in_proj" in k
                                                                                       or "attention.query" in k))
            del t[name]
            return [name]
        self.each_family(damage)

    # --- left over ---------------------------------------------------------------------------
    def test_a_block_past_the_last_one(self):
        def damage(family, t):
            last, extra = LAYOUT[family][0].format(LAYERS - 1), LAYOUT[family][0].format(LAYERS + 1)
            for k in [k for k in t if k.startswith(last)]:
                t[extra + k[len(last):]] = t[k]
            return [LAYOUT[family][0].format(LAYERS)]  # the block missing before it
        self.each_family(damage)

    def test_a_misnamed_tensor_inside_a_block(self):
        def damage(family, t):
            name = LAYOUT[family][0].format(1) + LAYOUT[family][2]
            misnamed = name.replace("bias", "biass")
            t[misnamed] = t.pop(name)
            return [name, misnamed]
        self.each_family(damage)

    def test_an_extra_tensor_of_the_encoders_names(self):
        def damage(family, t):
            name = LAYOUT[family][0].format(1) + "attn.q_norm.weight"
            t[name] = np.ones(D, np.float32)
            return [name]
        self.each_family(damage)

    def test_tensors_outside_the_encoder_are_listed_and_left_alone(self):
        for family in LAYOUT:
            with self.subTest(family=family):
                t = family_tensors(family)
                t["dino_head.mlp.0.weight"] = np.ones((4, D), np.float32)
                t["pooler.dense.weight"] = np.ones((D, D), np.float32)
                err = self.draws(self.write_model(t, f"{family}.safetensors"), "-v")
                line = next((ln for ln in err.splitlines() if "outside the encoder" in ln), "")
                self.assertIn("dino_head.mlp.0.weight", line, err)
                self.assertIn("pooler.dense.weight", line, err)
                rc, _, plain = run("--model", f"{family}.safetensors", "img.png", "-o", "out", cwd=self.dir)
                self.assertEqual(rc, 0, plain)
                self.assertEqual([ln for ln in plain.splitlines() if not ln.startswith("info:")], [])

    def test_dinos_full_checkpoint_with_its_projection_head(self):
        t = family_tensors("dino")
        t.update({"head.mlp.0.weight": np.ones((8, D), np.float32), "head.mlp.0.bias": np.ones(8, np.float32),
                  "head.last_layer.weight_g": np.ones((9, 1), np.float32),
                  "head.last_layer.weight_v": np.ones((9, 8), np.float32)})
        err = self.draws(self.write_model(t), "-v")
        self.assertIn("family dino:", err)
        self.assertIn("head.last_layer.weight_g", err)

    # --- a family asked for by name ------------------------------------------------------------
    def test_a_family_asked_for_must_read_what_other_families_would(self):
        # --family dinov3 on a timm ViT ran without its positions and said, under --top, that the
        # model had no classifier; on a DINOv2 file, without positions and registers. Each is one
        # error naming the file, the family asked for and the tensors it would leave unread.
        vit = timm_tensors(D, P, GRID, LAYERS, MLP, classes=5)
        dinov2 = family_tensors("dinov2")
        deit = dict(vit, dist_token=np.ones((1, 1, D), np.float32), **{
            "pos_embed": np.ones((1, 2 + GRID * GRID, D), np.float32),
            "head_dist.weight": np.ones((5, D), np.float32), "head_dist.bias": np.ones(5, np.float32)})
        cases = {  # file, family asked for → the tensors named
            ("vit", "dinov3"): (vit, ["pos_embed", "head.weight", "head.bias"]),
            ("dinov2", "dinov3"): (dinov2, ["pos_embed", "register_tokens"]),
            ("deit", "timm"): (deit, ["dist_token", "head_dist.weight", "head_dist.bias"]),
            ("deit", "dino"): (deit, ["dist_token", "head_dist.weight", "head_dist.bias"]),
        }
        for (name, family), (t, names) in cases.items():
            with self.subTest(file=name, family=family):
                model = self.write_model(t, f"{name}.safetensors")
                line = self.refused(model, *names, extra=("--family", family, "--top", "3"))
                self.assertIn(f"not a {family} model", line)
                self.assertNotIn("--top", line)
        # Control: the family each file is recognised as, asked for by name, draws.
        for name, t, family in (("vit", vit, "timm"), ("dinov2", dinov2, "dinov2"), ("deit", deit, "deit-distilled")):
            with self.subTest(file=name, family=family):
                self.assertIn(f"family {family}:", self.draws(self.write_model(t, f"{name}.safetensors"), "-v",
                                                             "--family", family))

    # --- what the file is, by its bytes --------------------------------------------------------
    def test_safetensors_named_pth_loads(self):
        (self.dir / "m.pth").write_bytes(safetensors_io.encode(family_tensors("timm"), {"num_heads": str(HEADS)},
                                                               dtype="F32"))
        self.assertIn("family timm:", self.draws("m.pth", "-v"))

    def test_pth_named_safetensors_loads(self):
        (self.dir / "m.safetensors").write_bytes(pth_bytes(family_tensors("timm")))
        self.assertIn("family timm:", self.draws("m.safetensors", "--heads", str(HEADS), "-v"))

    def test_a_zip_that_is_no_pth_named_safetensors(self):
        buf = io.BytesIO()
        with zipfile.ZipFile(buf, "w") as z:
            z.writestr("readme.txt", "not a model")
        (self.dir / "m.safetensors").write_bytes(buf.getvalue())
        self.assertIn("data.pkl", self.refused("m.safetensors"))

    # --- prefixes -------------------------------------------------------------------------------
    def test_module_prefix_is_removed_in_safetensors_as_in_pth(self):
        t = {"module." + k: v for k, v in family_tensors("timm").items()}
        self.assertIn("family timm:", self.draws(self.write_model(t), "-v"))
        (self.dir / "m.pth").write_bytes(pth_bytes(t))
        self.assertIn("family timm:", self.draws("m.pth", "--heads", str(HEADS), "-v"))

    def test_damaged_pth_is_refused_the_same(self):
        t = family_tensors("torchvision")
        del t["encoder.layers.encoder_layer_1.mlp.0.bias"]
        (self.dir / "m.pth").write_bytes(pth_bytes(t, wrap=lambda s: {"model": s}))
        self.refused("m.pth", "encoder.layers.encoder_layer_1.mlp.0.bias", extra=("--heads", str(HEADS)))
