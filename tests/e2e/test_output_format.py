#!/usr/bin/env python3
"""End-to-end tests of what the overlays are written as: vitattn's own PNG encoder (the
default) and --format jpg|webp with --quality.

Needs Debian's python3-numpy, python3-opencv and python3-pil (use /usr/bin/python3).
Environment: VITATTN_BIN (the binary). Run: python3 -m pytest tests/e2e/test_output_format.py
"""
import cv2
import numpy as np
from PIL import Image

from harness import TmpCase, photo_like, run


def expected_overlay(image, cls_map, alpha=0.5):
    """The overlay as vitattn renders it (src/image/overlay.cpp), redone with cv2 from the map
    it saved: min-max normalise, bilinear upsampling, x255 to 8 bits, jet, blend."""
    m = cls_map.astype(np.float32)
    lo, hi = m.min(), m.max()
    unit = (m - lo) / np.float32(hi - lo) if hi > lo else np.zeros_like(m)
    big = cv2.resize(unit, (image.shape[1], image.shape[0]), interpolation=cv2.INTER_LINEAR)
    level = np.clip(np.rint(big * np.float32(255.0)), 0, 255).astype(np.uint8)
    heat = cv2.applyColorMap(level, cv2.COLORMAP_JET)
    return cv2.addWeighted(image, 1.0 - alpha, heat, alpha, 0.0)


class OutputFormat(TmpCase):
    tmp_prefix = "vitattn-format-"

    def test_png_overlays_hold_exactly_the_rendered_pixels(self):
        # The PNG is lossless, so the pixels must be the rendered overlay's, byte for byte: the
        # same as OpenCV's writer gave before. Odd sizes, a 1-pixel-wide and a wide image.
        sizes = [(37, 53), (224, 224), (1, 90), (9, 1001)]
        for i, (h, w) in enumerate(sizes):
            self.write(f"in/p{i}.png", photo_like(h, w, seed=i))
        rc, _, err = run(self.dir / "in", "-o", self.dir / "out", "--save-attention", "-q")
        self.assertEqual(rc, 0, err)
        for i, (h, w) in enumerate(sizes):
            image = cv2.imread(str(self.dir / f"in/p{i}.png"), cv2.IMREAD_COLOR)
            cls_map = np.load(self.dir / f"out/p{i}_cls.npy")
            want = expected_overlay(image, cls_map)
            path = self.dir / f"out/p{i}_attn.png"
            by_libpng = cv2.imread(str(path), cv2.IMREAD_UNCHANGED)
            self.assertEqual(by_libpng.shape, (h, w, 3))
            diff = np.abs(by_libpng.astype(int) - want.astype(int))
            self.assertEqual(int(diff.max()), 0, f"p{i}: {int((diff > 0).sum())} bytes differ from the rendered overlay")
            with Image.open(path) as im:
                self.assertEqual(im.mode, "RGB")
                self.assertTrue(np.array_equal(np.asarray(im), by_libpng[:, :, ::-1]), f"p{i}: Pillow disagrees")

    def test_png_output_is_the_same_bytes_every_run(self):
        self.write("in/a.png", photo_like(61, 83))
        for out in ("o1", "o2"):
            rc, _, err = run(self.dir / "in", "-o", self.dir / out, "-q")
            self.assertEqual(rc, 0, err)
        self.assertEqual((self.dir / "o1/a_attn.png").read_bytes(), (self.dir / "o2/a_attn.png").read_bytes())

    def test_jpg_and_webp_write_decodable_previews_with_their_extension(self):
        img = photo_like(120, 160)
        self.write("in/cat.png", img)
        rc, _, err = run(self.dir / "in/cat.png", "-o", self.dir / "png", "-q")
        self.assertEqual(rc, 0, err)
        lossless = cv2.imread(str(self.dir / "png/cat_attn.png"))
        for fmt, magic in (("jpg", b"\xff\xd8\xff"), ("webp", b"RIFF")):
            out = self.dir / fmt
            rc, _, err = run(self.dir / "in/cat.png", "-o", out, "--format", fmt, "--quality", "80", "-q")
            self.assertEqual(rc, 0, err)
            self.assertEqual(sorted(p.name for p in out.iterdir()), [f"cat_attn.{fmt}", "cat_settings.txt"])
            path = out / f"cat_attn.{fmt}"
            self.assertTrue(path.read_bytes().startswith(magic), fmt)
            decoded = cv2.imread(str(path))
            self.assertIsNotNone(decoded, fmt)
            self.assertEqual(decoded.shape, img.shape)
            # A lossy copy of the same overlay: close on average, not equal.
            self.assertLess(float(np.abs(decoded.astype(float) - lossless).mean()), 6.0, fmt)
            with Image.open(path) as im:
                self.assertEqual(im.size, (160, 120))

    def test_quality_changes_the_jpg(self):
        self.write("in/a.png", photo_like(90, 120))
        sizes = {}
        for q in ("10", "95"):
            rc, _, err = run(self.dir / "in/a.png", "-o", self.dir / q, "--format", "JPG", "--quality", q, "-q")
            self.assertEqual(rc, 0, err)
            sizes[q] = (self.dir / q / "a_attn.jpg").stat().st_size
        self.assertLess(sizes["10"], sizes["95"])

    def test_quality_and_format_are_validated(self):
        self.write("in/a.png", photo_like(20, 20))
        for args in (["--format", "jpg", "--quality", "0"], ["--format", "jpg", "--quality", "101"],
                     ["--format", "webp", "--quality", "nan"], ["--format", "gif"], ["--quality", "50"]):
            out = self.dir / "out"
            rc, _, err = run(self.dir / "in/a.png", "-o", out, *args)
            self.assertEqual(rc, 2, f"{args}: {err}")
            self.assertFalse(out.exists() and any(out.iterdir()), f"{args} wrote something")
            self.assertIn("--", err)

    def test_skip_existing_looks_for_the_format_written(self):
        self.write("in/a.png", photo_like(30, 40))
        self.write("in/b.png", photo_like(30, 40, seed=1))
        out = self.dir / "out"
        rc, _, err = run(self.dir / "in", "-o", out, "-q")
        self.assertEqual(rc, 0, err)
        # PNGs there do not make the JPEGs done
        rc, _, err = run(self.dir / "in", "-o", out, "--format", "jpg", "--skip-existing")
        self.assertEqual(rc, 0, err)
        self.assertTrue((out / "a_attn.jpg").is_file() and (out / "b_attn.jpg").is_file())
        self.assertNotIn("skipped", err)
        (out / "b_attn.jpg").unlink()
        before = (out / "a_attn.jpg").stat().st_mtime_ns
        rc, _, err = run(self.dir / "in", "-o", out, "--format", "jpg", "--skip-existing")
        self.assertEqual(rc, 0, err)
        self.assertIn("1 skipped", err)
        self.assertTrue((out / "b_attn.jpg").is_file())
        self.assertEqual((out / "a_attn.jpg").stat().st_mtime_ns, before)

    def test_an_input_named_like_the_jpg_output_is_never_overwritten(self):
        # Writing into the input folder: x_attn.jpg is an input, and would be x.png's output.
        self.write("d/x.png", photo_like(30, 30))
        victim = self.write("d/x_attn.jpg", photo_like(30, 30, seed=5))
        original = victim.read_bytes()
        rc, _, err = run(self.dir / "d/x.png", victim, "-o", self.dir / "d", "--format", "jpg")
        # The run is refused before any work (exit 2), naming the input in the way.
        self.assertEqual(rc, 2, err)
        self.assertIn("x_attn.jpg: is an input of this run", err)
        self.assertEqual(victim.read_bytes(), original)
        self.assertEqual(sorted(p.name for p in (self.dir / "d").iterdir()), ["x.png", "x_attn.jpg"])
        # In a folder scan, the same file is an earlier run's output: left out, then redrawn.
        rc, _, err = run(self.dir / "d", "-o", self.dir / "d", "--format", "jpg", "-v")
        self.assertEqual(rc, 0, err)
        self.assertIn("left out", err)
        self.assertNotEqual(victim.read_bytes(), original)  # x.png's own output, now drawn
        self.assertEqual(sorted(p.name for p in (self.dir / "d").iterdir()), ["x.png", "x_attn.jpg", "x_settings.txt"])

