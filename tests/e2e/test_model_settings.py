#!/usr/bin/env python3
"""Settings that made a wrong map with exit 0, end to end:

- the head count: where the file's __metadata__, config.json and --heads disagree, the file
  against config.json is an error naming both; --heads over either is a warning naming both
  (the command line wins). A config.json whose sizes are not the file's is an error.
- normalisation: a --std or --mean that cannot be one is refused (exit 2, one line); a mean
  above 1 (the 0–255 scale?) is a warning.
- whatever the options, an image whose activations become non-finite fails with one line
  naming the image (exit 1), and no file holds a NaN: images, --top, `vitattn forward`.

Needs Debian's python3-numpy and python3-opencv (use /usr/bin/python3).
Environment: VITATTN_BIN. Run: python3 -m pytest tests/e2e/test_model_settings.py
"""
import json

import cv2
import numpy as np

import safetensors_io
from harness import TmpCase, run, timm_tensors

D, P, GRID, LAYERS, MLP = 16, 4, 2, 2, 32


class Settings(TmpCase):
    tmp_prefix = "vitattn-settings-"

    def setUp(self):
        super().setUp()
        ok, buf = cv2.imencode(".png", np.full((24, 20, 3), 100, np.uint8))
        (self.dir / "img.png").write_bytes(buf.tobytes())

    def model(self, heads=None, config=None, classes=0, huge=False):
        meta = {"num_heads": str(heads)} if heads else None
        t = timm_tensors(D, P, GRID, LAYERS, MLP, classes=classes)
        if huge:  # finite weights (float32's largest is 3.4e38) whose sum, class token + position, is not
            for name in ("cls_token", "pos_embed", "patch_embed.proj.bias"):
                t[name] = np.full_like(t[name], 3e38)
        safetensors_io.write(self.dir / "m.safetensors", t, meta, dtype="F32")
        if config is not None:
            (self.dir / "config.json").write_text(json.dumps(config))
        return "m.safetensors"

    def vitattn(self, *args):
        return run(*args, cwd=self.dir)

    def one_error(self, rc, err, status=2):
        self.assertEqual(rc, status, err)
        lines = [ln for ln in err.splitlines() if not ln.startswith("info:")]  # the summary
        self.assertEqual(len(lines), 1, err)
        self.assertTrue(lines[0].startswith("error: "), lines[0])
        return lines[0]

    # --- heads -----------------------------------------------------------------------------
    def test_file_and_config_disagreeing_on_heads_is_an_error_naming_both(self):
        self.model(heads=2, config={"num_attention_heads": 4})
        rc, _, err = self.vitattn("--model", "m.safetensors", "img.png", "-o", "out")
        line = self.one_error(rc, err)
        self.assertIn("m.safetensors", line)
        self.assertIn("__metadata__", line)
        self.assertIn("config.json", line)
        self.assertNotIn("--heads", line)  # nobody gave --heads
        self.assertFalse((self.dir / "out").exists())

    def test_heads_on_the_command_line_override_the_file_with_a_warning(self):
        self.model(heads=2)
        rc, _, err = self.vitattn("--model", "m.safetensors", "img.png", "-o", "out", "--heads", "4", "-v",
                              "--save-attention")
        self.assertEqual(rc, 0, err)
        warnings = [ln for ln in err.splitlines() if ln.startswith("warning:")]
        self.assertEqual(len(warnings), 1, err)
        self.assertIn("--heads 4", warnings[0])
        self.assertIn("__metadata__", warnings[0])
        self.assertIn("2", warnings[0])
        self.assertEqual(np.load(self.dir / "out/img_attn.npy").shape[0], 4)

    def test_heads_on_the_command_line_override_the_config_with_a_warning(self):
        self.model(config={"num_attention_heads": 4})
        rc, _, err = self.vitattn("--model", "m.safetensors", "img.png", "-o", "out", "--heads", "2", "--save-attention")
        self.assertEqual(rc, 0, err)
        warnings = [ln for ln in err.splitlines() if ln.startswith("warning:")]
        self.assertEqual(len(warnings), 1, err)
        self.assertIn("--heads 2", warnings[0])
        self.assertIn("config.json", warnings[0])
        self.assertEqual(np.load(self.dir / "out/img_attn.npy").shape[0], 2)

    def test_agreeing_sources_say_nothing(self):
        self.model(heads=2, config={"num_attention_heads": 2, "hidden_size": D, "num_hidden_layers": LAYERS})
        rc, _, err = self.vitattn("--model", "m.safetensors", "img.png", "-o", "out", "--heads", "2")
        self.assertEqual(rc, 0, err)
        self.assertEqual([ln for ln in err.splitlines() if not ln.startswith("info:")], [])

    def test_a_config_of_another_model_is_an_error(self):
        for key, value in (("hidden_size", 192), ("num_hidden_layers", 12), ("intermediate_size", 768)):
            with self.subTest(key=key):
                self.model(config={"num_attention_heads": 4, key: value})
                rc, _, err = self.vitattn("--model", "m.safetensors", "img.png", "-o", "out")
                line = self.one_error(rc, err)
                self.assertIn("config.json", line)
                self.assertIn(f"{key} {value}", line)

    # --- normalisation ---------------------------------------------------------------------
    def test_a_std_or_mean_that_cannot_be_a_normalisation_is_refused(self):
        self.model(heads=2)
        for flag, value in (("--std", "1e-45,1,1"), ("--std", "1e-7,1,1"), ("--mean", "1e38,0,0"),
                            ("--mean", "0,-2000,0")):
            with self.subTest(flag=flag, value=value):
                rc, _, err = self.vitattn("--model", "m.safetensors", "img.png", "-o", "out", flag, value)
                line = self.one_error(rc, err)
                self.assertIn(flag, line)
                self.assertFalse((self.dir / "out").exists())

    def test_a_mean_above_one_is_a_warning(self):
        self.model(heads=2)
        rc, _, err = self.vitattn("--model", "m.safetensors", "img.png", "-o", "out", "--mean", "124,116,104",
                              "--std", "58,57,57")
        self.assertEqual(rc, 0, err)
        lines = [ln for ln in err.splitlines() if not ln.startswith("info:")]
        self.assertEqual(len(lines), 1, err)
        self.assertTrue(lines[0].startswith("warning: --mean"), lines[0])
        self.assertIn("0–255", lines[0])

    # --- non-finite activations ------------------------------------------------------------
    def huge_model(self, classes=0):
        return self.model(heads=2, classes=classes, huge=True)

    def test_an_image_whose_activations_overflow_fails_naming_it(self):
        self.huge_model()
        for args in ([], ["--rollout"], ["--head", "all"], ["--layer", "0"]):
            with self.subTest(args=args):
                rc, _, err = self.vitattn("--model", "m.safetensors", "img.png", "-o", "out", "--save-attention", *args)
                line = self.one_error(rc, err, status=1)
                self.assertTrue(line.startswith("error: img.png: "), line)
                self.assertIn("non-finite", line)
                self.assertEqual(list((self.dir / "out").glob("img*")), [])

    def test_top_classes_of_an_overflowing_model_fail_too(self):
        self.huge_model(classes=5)
        rc, out, err = self.vitattn("--model", "m.safetensors", "img.png", "-o", "out", "--top", "2")
        self.assertEqual(rc, 1, err)
        self.assertIn("error: img.png: ", err)
        self.assertNotIn("nan %", (out + err).lower())  # before: "img.png: 0 -nan%, 1 -nan%"
        self.assertNotIn("nan%", (out + err).lower())
        csv = self.dir / "out/predictions.csv"
        self.assertFalse(csv.exists() and "nan" in csv.read_text().lower(), "predictions.csv holds a NaN")

    def test_forward_of_an_overflowing_model_fails_and_writes_no_nan(self):
        self.huge_model()
        np.save(self.dir / "x.npy", np.ones((1, 3, GRID * P, GRID * P), np.float32))
        rc, _, err = self.vitattn("forward", "--model", "m.safetensors", "x.npy", "-o", "fwd")
        self.assertEqual(rc, 1, err)
        self.assertIn("x.npy", err)
        self.assertIn("non-finite", err)
        for f in (self.dir / "fwd").glob("*.npy") if (self.dir / "fwd").exists() else []:
            self.assertTrue(np.isfinite(np.load(f)).all(), f"{f.name} holds a NaN")
