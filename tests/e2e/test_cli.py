#!/usr/bin/env python3
"""End-to-end tests: run the vitattn binary like a user and check what lands on disk.

Needs Debian's python3-numpy and python3-opencv (use /usr/bin/python3).
Environment: VITATTN_BIN (the binary), VITATTN_SHARED (../shared).
Run: python3 -m pytest tests/e2e/test_cli.py [--shared]. Without --shared it runs the tests
that need nothing but the binary; with it, only the tests on the photos in ../shared/images
(marked shared), which skip when they are absent (fail under CI=true; tests/conftest.py).
"""
import os
import re
import struct
import subprocess
import sys
from pathlib import Path

import cv2
import numpy as np
import pytest

import safetensors_io
from harness import PHOTOS, REPO, SHARED, TmpCase, dino_mask, exif_rotated_jpeg, need, photo_like, run


def entropy(p):
    p = p.ravel() / p.sum()
    return float(-(p * np.log(p + 1e-30)).sum())


def splitmix64(seed, n):
    """Vigna's SplitMix64 in numpy uint64 arithmetic (wrapping), independent of the C++."""
    with np.errstate(over="ignore"):
        z = np.uint64(seed) + np.arange(1, n + 1, dtype=np.uint64) * np.uint64(0x9E3779B97F4A7C15)
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        return z ^ (z >> np.uint64(31))


class Cli(TmpCase):
    tmp_prefix = "vitattn-e2e-"

    # --- basics --------------------------------------------------------------------------
    def test_help_is_the_manual(self):
        rc, out, _ = run("--help")
        self.assertEqual(rc, 0)
        for word in ("--model", "--save-attention", "--colormap", "--interp", "--max-pixels", "Exit status", "explain"):
            self.assertIn(word, out)

    def test_readme_names_every_option_of_the_help(self):
        # --help is the reference; the README shows each option in use, by its short or long name.
        readme = (REPO / "README.md").read_text()
        for command in ((), ("explain",), ("forward",), ("serve",), ("eval",)):
            _, out, _ = run(*command, "--help")
            for line in out.splitlines():
                m = re.match(r"^ +(-[^ ]+)", line)  # "  -o,--output DIR=vitattn-out   Output folder"
                names = [n for n in m.group(1).split(",") if n not in ("-h", "--help")] if m else []
                if names:
                    self.assertTrue(any(re.search(re.escape(n) + r"(?![a-z0-9-])", readme) for n in names),
                                    f"README.md names none of {names} ({' '.join(command) or 'vitattn'} --help)")

    def test_each_subcommand_has_its_own_help(self):
        for command, says, not_says in (("explain", ["--heatmap", "--html", "vitattn explain --html"], ["--model", "--colormap"]),
                                        ("forward", ["--model", "--key", "tensors", "vitattn forward --model"],
                                         ["--colormap", "--heatmap", "--seed"]),
                                        ("eval", ["--model", "--masks", "--labels-csv", "--method", "vitattn eval --model"],
                                         ["--colormap", "--heatmap", "--seed"])):
            rc, out, err = run(command, "--help")
            self.assertEqual(rc, 0, err)
            self.assertIn(f"Usage: vitattn {command}", out)
            for word in says:
                self.assertIn(word, out, command)
            for word in not_says:
                self.assertNotIn(word, out, command)
            self.assertNotIn("vitattn -r photos/", out, f"{command} --help shows the main program's examples")

    def test_a_mistyped_command_is_a_usage_error_that_makes_no_folder(self):
        rc, out, err = run("explian", cwd=self.dir)
        self.assertEqual(rc, 2, err)
        self.assertIn("did you mean explain?", err)
        self.assertEqual(len(err.strip().splitlines()), 1, err)
        self.assertEqual(list(self.dir.iterdir()), [], "no vitattn-out/ made")
        # A file of that name is an input like any other.
        ok, png = cv2.imencode(".png", photo_like(20, 20))
        (self.dir / "explian").write_bytes(png.tobytes())
        rc, _, err = run("explian", cwd=self.dir)
        self.assertEqual(rc, 0, err)
        self.assertNotIn("did you mean", err)

    def test_a_usage_error_lists_the_arguments_in_order_and_points_to_its_commands_help(self):
        model = REPO / "models" / "vit_cifar10_tintn.safetensors"
        for args, says in (
                (("serve", "--model", model, "--layer", "3"), "arguments were not expected: --layer 3 (see vitattn serve --help)"),
                (("forward", "--model", model, "--frobnicate", "x.npy"), "(see vitattn forward --help)"),
                (("explain", "--colormap", "jet"), "arguments were not expected: --colormap jet (see vitattn explain --help)"),
                (("--frobnicate", "x.png"), "(see vitattn --help)")):
            rc, _, err = run(*args, cwd=self.dir)
            self.assertEqual(rc, 2, err)
            self.assertEqual(len(err.strip().splitlines()), 1, err)
            self.assertTrue(err.startswith("error: ") and err.strip().endswith(says), err)
        self.assertEqual(list(self.dir.iterdir()), [], "nothing made")

    def test_an_option_before_a_subcommand_is_not_dropped_in_silence(self):
        rc, out, err = run("-o", "elsewhere", "explain", cwd=self.dir)
        self.assertEqual(rc, 2, err)
        self.assertIn("--output goes after explain", err)
        self.assertFalse((self.dir / "elsewhere").exists())
        rc, out, err = run("-q", "explain", cwd=self.dir)  # -q and -v are everyone's
        self.assertEqual(rc, 0, err)


    def test_oversized_file_is_refused_before_reading(self):
        big = self.dir / "big.jpg"
        with open(big, "wb") as f:
            f.truncate(80 * 1024 * 1024)  # sparse: 80 MiB of zeros, nothing really written
        rc, _, err = run(big, "--max-pixels", "1000", "-o", self.dir / "out")
        self.assertEqual(rc, 1)
        self.assertIn("big.jpg: file is 83886080 bytes, over the limit of", err)

    def test_one_image_lands_in_the_default_folder_at_its_own_size(self):
        self.write("cat.jpg", photo_like(300, 451))
        rc, _, err = run("cat.jpg", cwd=self.dir)
        self.assertEqual(rc, 0, err)
        out = cv2.imread(str(self.dir / "vitattn-out/cat_attn.png"))
        self.assertIsNotNone(out)
        self.assertEqual(out.shape, (300, 451, 3))
        self.no_temporaries(self.dir / "vitattn-out")

    def test_overlays_keep_the_original_size_of_odd_images(self):
        cases = {
            "one.png": np.full((1, 1, 3), 200, np.uint8),
            "small.png": photo_like(7, 5),
            "strip.png": photo_like(20, 3000),
            "grey.png": cv2.cvtColor(photo_like(120, 90), cv2.COLOR_BGR2GRAY),
            "rgba.png": cv2.cvtColor(photo_like(64, 80), cv2.COLOR_BGR2BGRA),
            "deep.png": photo_like(50, 70).astype(np.uint16) * 257,
            "deep16.tiff": photo_like(33, 44).astype(np.uint16) * 257,
            "pic.bmp": photo_like(40, 60),
            "pic2.webp": photo_like(40, 61),
        }
        for name, img in cases.items():
            self.write("in/" + name, img)
        rc, _, err = run("in", "-o", "out", cwd=self.dir)
        self.assertEqual(rc, 0, err)
        for name, img in cases.items():
            stem = Path(name).stem
            out = cv2.imread(str(self.dir / "out" / f"{stem}_attn.png"))
            self.assertIsNotNone(out, name)
            self.assertEqual(out.shape, img.shape[:2] + (3,), name)

    def test_exif_orientation_is_applied_as_opencv_does(self):
        p = self.dir / "rot.jpg"
        p.write_bytes(exif_rotated_jpeg(photo_like(60, 100), 6))
        expected = cv2.imread(str(p), cv2.IMREAD_COLOR).shape
        self.assertEqual(expected[:2], (100, 60), "cv2 applies the EXIF rotation")
        rc, _, err = run(p, "-o", self.dir / "out")
        self.assertEqual(rc, 0, err)
        self.assertEqual(cv2.imread(str(self.dir / "out/rot_attn.png")).shape, expected)

    # --- bad input -----------------------------------------------------------------------
    def test_folder_with_bad_files_keeps_the_good_ones(self):
        self.write("in/good1.jpg", photo_like(100, 150, 1))
        self.write("in/good2.png", photo_like(224, 224, 2))
        (self.dir / "in/corrupt.jpg").write_bytes(b"\xff\xd8\xff\xe0" + os.urandom(3000))
        ok, buf = cv2.imencode(".jpg", photo_like(200, 200, 3))
        (self.dir / "in/truncated.jpg").write_bytes(buf.tobytes()[: len(buf) // 2])
        ok, buf = cv2.imencode(".png", photo_like(200, 200, 4))
        (self.dir / "in/truncated.png").write_bytes(buf.tobytes()[: len(buf) // 2])
        (self.dir / "in/empty.png").write_bytes(b"")
        (self.dir / "in/notes.txt").write_text("not an image")
        (self.dir / "in/fake.png").write_text("plain text with an image extension")
        rc, _, err = run("in", "-o", "out", "-j", "2", cwd=self.dir)
        self.assertEqual(rc, 1, err)
        self.assertTrue((self.dir / "out/good1_attn.png").is_file())
        self.assertTrue((self.dir / "out/good2_attn.png").is_file())
        for bad in ("corrupt.jpg", "truncated.jpg", "truncated.png", "empty.png", "fake.png"):
            lines = [l for l in err.splitlines() if bad in l and l.startswith("error:")]
            self.assertEqual(len(lines), 1, f"{bad}: expected one error line in:\n{err}")
            self.assertFalse((self.dir / f"out/{Path(bad).stem}_attn.png").exists())
        self.assertNotIn("notes.txt", err, "non-images in a folder are skipped quietly")
        self.assertIn("empty.png: file is empty", err)
        self.assertIn("truncated.jpg: JPEG data is truncated", err)
        self.assertEqual(sorted(p.name for p in (self.dir / "out").iterdir()), ["good1_attn.png", "good1_settings.txt", "good2_attn.png",
                                                                        "good2_settings.txt"])
        self.no_temporaries(self.dir / "out")

    def test_files_named_directly_are_tried_and_explained(self):
        (self.dir / "notes.txt").write_text("hello")
        self.write("ok.png", photo_like(30, 30))
        rc, _, err = run("notes.txt", "missing.jpg", "ok.png", "-o", "out", cwd=self.dir)
        self.assertEqual(rc, 1)
        self.assertRegex(err, r"error: notes\.txt: not a readable image")
        self.assertRegex(err, r"error: missing\.jpg: No such file or directory")
        self.assertTrue((self.dir / "out/ok_attn.png").is_file())

    def test_huge_image_is_refused_from_its_header(self):
        ok, buf = cv2.imencode(".png", np.zeros((1, 1, 3), np.uint8))
        png = bytearray(buf.tobytes())
        png[16:24] = struct.pack(">II", 60000, 60000)  # IHDR claims 60000x60000, no data for it
        (self.dir / "huge.png").write_bytes(bytes(png))
        self.write("normal.jpg", photo_like(100, 100))
        rc, _, err = run("huge.png", "normal.jpg", "-o", "out", cwd=self.dir)
        self.assertEqual(rc, 1)
        self.assertIn("huge.png: image is 60000x60000 (3600.0 MP), over the pixel limit of 100.0 MP (--max-pixels)", err)
        rc, _, err = run("normal.jpg", "--max-pixels", "5000", "-o", "out2", cwd=self.dir)
        self.assertEqual(rc, 1)
        self.assertIn("normal.jpg: image is 100x100", err)

    def test_paths_with_spaces_and_non_ascii(self):
        self.write("mes photos/chat été 猫.jpg", photo_like(80, 120))
        rc, _, err = run("mes photos", "-o", "sortie à part", cwd=self.dir)
        self.assertEqual(rc, 0, err)
        self.assertTrue((self.dir / "sortie à part/chat été 猫_attn.png").is_file())

    def test_output_folder_that_cannot_be_written(self):
        self.write("a.png", photo_like(30, 30))
        (self.dir / "taken").write_text("a file where the output folder should be")
        rc, _, err = run("a.png", "-o", "taken", cwd=self.dir)
        self.assertEqual(rc, 2)
        self.assertEqual(len(err.strip().splitlines()), 1, err)
        self.assertIn("taken", err)

    def test_usage_and_model_errors_exit_2_and_write_nothing(self):
        self.write("a.png", photo_like(30, 30))
        (self.dir / "bad.safetensors").write_bytes(b"\x10\x00\x00\x00\x00\x00\x00\x00{not json at all}")
        cases = [
            ["--no-such-option", "a.png"],
            ["--alpha", "2", "a.png"],
            ["--interp", "lanczos", "a.png"],  # (bicubic is cubic)
            ["--colormap", "nope", "a.png"],
            ["-j", "0", "a.png"],
            [],
            ["--model", "missing.safetensors", "a.png"],
            ["--model", "bad.safetensors", "a.png"],
            ["--model", "bad.safetensors", "--seed", "3", "a.png"],
            ["--img-size", "100", "a.png"],  # not a multiple of 16
            ["--mean", "1,2", "a.png"],
        ]
        for args in cases:
            rc, _, err = run(*args, "-o", "out", cwd=self.dir)
            self.assertEqual(rc, 2, f"{args}: {err}")
            self.assertTrue(err.strip(), args)
            self.assertFalse((self.dir / "out").exists() and any((self.dir / "out").iterdir()), args)
        rc, _, err = run("--model", "bad.safetensors", "a.png", cwd=self.dir)
        self.assertIn("bad.safetensors: header is not valid JSON", err)

    # --- outputs -------------------------------------------------------------------------
    def test_same_stem_twice_never_shares_an_output(self):
        self.write("in/cat.jpg", photo_like(50, 60, 1))
        self.write("in/cat.png", photo_like(50, 60, 2))
        rc, _, err = run("in", "-o", "out", cwd=self.dir)
        self.assertEqual(rc, 0, err)
        self.assertEqual(sorted(p.name for p in (self.dir / "out").iterdir()), ["cat_jpg_attn.png", "cat_jpg_settings.txt",
                                                                        "cat_png_attn.png", "cat_png_settings.txt"])
        self.assertIn("same name", err)

    def test_recursive_batch_mirrors_sub_folders(self):
        self.write("in/top.png", photo_like(40, 40))
        self.write("in/a/b/deep.jpg", photo_like(40, 40))
        rc, _, _ = run("in", "-o", "out", cwd=self.dir)
        self.assertEqual(rc, 0)
        self.assertFalse((self.dir / "out/a").exists(), "no descent without -r")
        rc, _, err = run("in", "-r", "-o", "out", cwd=self.dir)
        self.assertEqual(rc, 0, err)
        self.assertTrue((self.dir / "out/a/b/deep_attn.png").is_file())
        self.assertTrue((self.dir / "out/top_attn.png").is_file())

    def test_save_attention_writes_numpy_files(self):
        self.write("x.png", photo_like(100, 130))
        rc, _, err = run("x.png", "--save-attention", "-o", "out", cwd=self.dir)
        self.assertEqual(rc, 0, err)
        a = np.load(self.dir / "out/x_attn.npy")
        cls = np.load(self.dir / "out/x_cls.npy")
        self.assertEqual((a.dtype, a.shape), (np.float32, (197, 197)))
        self.assertEqual((cls.dtype, cls.shape), (np.float32, (14, 14)))
        np.testing.assert_allclose(a.sum(axis=1), 1.0, atol=1e-5)
        np.testing.assert_array_equal(cls, a[0, 1:].reshape(14, 14))

    def test_threshold_outlines_and_saves_dinos_mask_for_the_seeded_head(self):
        self.write("x.png", photo_like(100, 130))
        rc, _, err = run("x.png", "--save-attention", "-o", "plain", cwd=self.dir)
        self.assertEqual(rc, 0, err)
        self.assertFalse((self.dir / "plain/x_mask.npy").exists(), "a mask only with --threshold")
        plain = cv2.imread(str(self.dir / "plain/x_attn.png"))
        masks = {}
        for t in ("0.3", "0.9"):  # asymmetric: t and 1 - t give different masks
            rc, _, err = run("x.png", "--save-attention", "--threshold", t, "-o", t, cwd=self.dir)
            self.assertEqual(rc, 0, err)
            cls = np.load(self.dir / t / "x_cls.npy")
            mask = np.load(self.dir / t / "x_mask.npy")
            self.assertEqual((mask.dtype, mask.shape), (np.bool_, (14, 14)))
            want = dino_mask(cls, float(t))
            self.assertTrue(0 < want.sum() < want.size, f"the test's own mask at {t} keeps some patches, not all")
            np.testing.assert_array_equal(mask, want, f"--threshold {t}: not DINO's mask of x_cls.npy")
            masks[t] = mask
            outlined = cv2.imread(str(self.dir / t / "x_attn.png"))
            changed = np.any(outlined != plain, axis=-1)
            self.assertTrue(changed.any(), f"--threshold {t} drew no outline")
            self.assertLess(changed.mean(), 0.5, "an outline, not a fill")
            np.testing.assert_array_equal(outlined[changed], 255, "the outline is white")
        self.assertLess(masks["0.3"].sum(), masks["0.9"].sum())

    def test_skip_existing_counts_the_mask(self):
        self.write("x.png", photo_like(60, 60))
        rc, _, err = run("x.png", "--save-attention", "-o", "out", cwd=self.dir)
        self.assertEqual(rc, 0, err)
        rc, _, err = run("x.png", "--save-attention", "--threshold", "0.6", "--skip-existing", "-o", "out", cwd=self.dir)
        self.assertEqual(rc, 0, err)
        self.assertTrue((self.dir / "out/x_mask.npy").is_file(), "the missing mask was not written: " + err)
        rc, _, err = run("x.png", "--save-attention", "--threshold", "0.6", "--skip-existing", "-o", "out", cwd=self.dir)
        self.assertEqual(rc, 0, err)
        self.assertIn("1 skipped (already done)", err)
        self.no_temporaries(self.dir / "out")

    def test_save_model_then_model_gives_identical_attention(self):
        self.write("x.png", photo_like(100, 130))
        rc, _, err = run("x.png", "--seed", "5", "--save-model", "m.safetensors", "--save-attention", "-o", "a", cwd=self.dir)
        self.assertEqual(rc, 0, err)
        rc, _, err = run("x.png", "--model", "m.safetensors", "--save-attention", "-o", "b", cwd=self.dir)
        self.assertEqual(rc, 0, err)
        for f in ("x_attn.npy", "x_cls.npy", "x_attn.png"):
            self.assertEqual((self.dir / "a" / f).read_bytes(), (self.dir / "b" / f).read_bytes(), f)

    def test_seeded_weights_match_an_independent_generator(self):
        # Re-derive the seeded weights from the documented recipe (SplitMix64, uniform bounds).
        rc, _, err = run("--seed", "9", "--img-size", "32", "--patch-size", "8", "--dim", "24", "--d-k", "6",
                         "--save-model", "m.safetensors", cwd=self.dir)
        self.assertEqual(rc, 0, err)
        t, meta = safetensors_io.read(self.dir / "m.safetensors", only=("F32",))
        S, P, D, dk = 32, 8, 24, 6
        pd, n_tok = 3 * P * P, 1 + (S // P) ** 2
        f32 = np.float32
        plan = [("patch_embed.proj.weight", D * pd, f32(1) / np.sqrt(f32(pd))), ("cls_token", D, f32(1)),
                ("pos_embed", n_tok * D, f32(0.035)), ("attn.q.weight", dk * D, f32(2) / np.sqrt(f32(D))),
                ("attn.k.weight", dk * D, f32(2) / np.sqrt(f32(D))), ("attn.v.weight", dk * D, f32(1) / np.sqrt(f32(D)))]
        z = splitmix64(9, sum(n for _, n, _ in plan))
        u = ((z >> np.uint64(40)).astype(np.int64) - (1 << 23)).astype(np.float32) * np.float32(2.0 ** -23)
        at = 0
        for name, n, bound in plan:
            np.testing.assert_array_equal(t[name].ravel(), (u[at:at + n] * bound).astype(np.float32), name)
            at += n
        for b in ("patch_embed.proj.bias", "attn.q.bias", "attn.k.bias", "attn.v.bias"):
            self.assertFalse(t[b].any(), b)
        self.assertEqual([f32(v) for v in meta["mean"].split(",")], [f32(v) for v in (0.485, 0.456, 0.406)])

    def test_seeds_are_deterministic_and_differ(self):
        self.write("x.png", photo_like(64, 64))
        for out, seed in (("a", 1), ("b", 1), ("c", 2)):
            rc, _, err = run("x.png", "--seed", seed, "--save-attention", "-o", out, cwd=self.dir)
            self.assertEqual(rc, 0, err)
        a, b, c = (np.load(self.dir / o / "x_attn.npy") for o in "abc")
        np.testing.assert_array_equal(a, b)
        self.assertGreater(np.abs(a - c).max(), 1e-4)

    def test_parallel_and_serial_runs_agree(self):
        for i in range(6):
            self.write(f"in/p{i}.png", photo_like(90 + 10 * i, 120, i))
        run("in", "-j", "1", "-o", "s", "--save-attention", cwd=self.dir)
        rc, _, err = run("in", "-j", "4", "-o", "p", "--save-attention", cwd=self.dir)
        self.assertEqual(rc, 0, err)
        for f in sorted((self.dir / "s").iterdir()):
            self.assertEqual(f.read_bytes(), (self.dir / "p" / f.name).read_bytes(), f.name)

    def test_nearest_interpolation_shows_the_patch_grid(self):
        self.write("sq.png", photo_like(448, 448))  # 14 patches of 32 output pixels each way
        rc, _, err = run("sq.png", "--interp", "nearest", "--alpha", "1", "-o", "out", cwd=self.dir)
        self.assertEqual(rc, 0, err)
        heat = cv2.imread(str(self.dir / "out/sq_attn.png")).astype(int)
        cells = heat.reshape(14, 32, 14, 32, 3)
        spread = (cells.max(axis=(1, 3)) - cells.min(axis=(1, 3))).max()
        self.assertEqual(spread, 0, "each patch is one flat colour with nearest upsampling")
        self.assertGreater(len(np.unique(heat.reshape(-1, 3), axis=0)), 10, "the map is not flat")

    @pytest.mark.shared
    def test_photos_no_scale_gives_a_sharper_class_row(self):
        need(PHOTOS, f"no photos in {SHARED / 'images'}")
        for p in PHOTOS:
            rc, _, err = run(p, "--save-attention", "-o", self.dir / "scaled")
            self.assertEqual(rc, 0, err)
            rc, _, err = run(p, "--save-attention", "--no-scale", "-o", self.dir / "raw")
            self.assertEqual(rc, 0, err)
            h_scaled = entropy(np.load(self.dir / "scaled" / f"{p.stem}_cls.npy"))
            h_raw = entropy(np.load(self.dir / "raw" / f"{p.stem}_cls.npy"))
            self.assertLess(h_raw, h_scaled - 0.05, p.name)

    @pytest.mark.shared
    def test_photos_give_structured_maps(self):
        need(PHOTOS, f"no photos in {SHARED / 'images'}")
        rc, _, err = run(*PHOTOS, "--save-attention", "-o", self.dir / "out")
        self.assertEqual(rc, 0, err)
        for p in PHOTOS:
            cls = np.load(self.dir / "out" / f"{p.stem}_cls.npy")
            self.assertGreater(cls.max() / cls.min(), 2.0, f"{p.name}: the seeded map should not be flat")
            self.assertEqual(cv2.imread(str(self.dir / "out" / f"{p.stem}_attn.png")).shape,
                             cv2.imread(str(p)).shape)

    def test_models_readme_snippet_writes_a_model_vitattn_loads(self):
        text = (REPO / "models/README.md").read_text()
        snippet = re.search(r"```python\n(.*?)```", text, re.S).group(1)
        subprocess.run([sys.executable, "-c", snippet], cwd=self.dir, check=True)
        self.write("x.png", photo_like(64, 64))
        rc, _, err = run("--model", "head.safetensors", "x.png", "--save-attention", "-o", "out", cwd=self.dir)
        self.assertEqual(rc, 0, err)
        self.assertEqual(np.load(self.dir / "out/x_attn.npy").shape, (197, 197))

    # --- explain -------------------------------------------------------------------------
    def test_explain_walks_the_examples(self):
        rc, out, err = run("explain", "--heatmap", self.dir / "b.png")
        self.assertEqual(rc, 0, err)
        # (a) weights 0.40, 0.20, 0.40 and output [0.80, 0.60]
        self.assertRegex(out, r"0\.401\s+0\.198\s+0\.401")
        self.assertRegex(out, r"0\.802\s+0\.599")
        # (b) row sums
        m = re.search(r"largest \|row sum − 1\| = ([0-9.e+-]+)", out)
        self.assertTrue(m)
        self.assertLess(float(m.group(1)), 1e-6)
        # (c) the two softmaxes
        self.assertRegex(out, r"softmax\(\[2, 1, 0\]\) = \[0\.665")
        self.assertRegex(out, r"softmax\(\[20, 10, 0\]\) = \[0\.99995")
        # (d) nothing above the diagonal
        self.assertIn("largest weight above the diagonal: 0 ", out)
        # (d) points to the same mask on a real text tower, and how to see it
        self.assertIn("The same mask runs in CLIP's text tower: vitattn --model CLIP --text", out)
        self.assertIn("--report IMAGE", out)
        heat = cv2.imread(str(self.dir / "b.png"))
        self.assertEqual(heat.shape, (256, 256, 3))

