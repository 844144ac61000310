#!/usr/bin/env python3
"""A parallel batch: 40 small generated images through `vitattn -j 4`, then `-j 1`.

This is the test the ThreadSanitizer build runs (tsan preset); it runs in every build.
Checks: exit 0, one overlay at each input's size and the attention .npy files for every
image, no temporary files, no sanitizer report on stderr, and the parallel outputs identical
byte for byte to a serial run.
Needs Debian's python3-numpy and python3-opencv (use /usr/bin/python3).
Environment: VITATTN_BIN (the binary). Run: python3 -m pytest tests/e2e/test_parallel_batch.py
"""
import tempfile
import unittest
from pathlib import Path

import cv2
import numpy as np

from harness import SANITIZER_MARKS, run_process

N_IMAGES = 40


def image(i):
    """Image i: sizes 17..140 px, colour, grey or RGBA, smooth with a few shapes."""
    rng = np.random.default_rng(i)
    h, w = int(rng.integers(17, 141)), int(rng.integers(17, 141))
    y, x = np.mgrid[0:h, 0:w]
    img = np.stack([(x * 7 + i) % 256, (y * 5 + 3 * i) % 256, ((x + y) * 3) % 256], -1).astype(np.uint8)
    cv2.circle(img, (int(rng.integers(0, w)), int(rng.integers(0, h))), int(rng.integers(3, 20)),
               tuple(int(v) for v in rng.integers(0, 256, 3)), -1)
    if i % 5 == 3:
        img = cv2.cvtColor(img, cv2.COLOR_BGR2GRAY)
    elif i % 5 == 4:
        img = cv2.cvtColor(img, cv2.COLOR_BGR2BGRA)
    return img


class ParallelBatch(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory(prefix="vitattn-batch-")
        cls.dir = Path(cls.tmp.name)
        cls.sizes = {}
        for i in range(N_IMAGES):
            ext = ".jpg" if i % 3 == 0 and i % 5 != 4 else ".png"  # JPEG has no alpha
            img = image(i)
            ok, buf = cv2.imencode(ext, img)
            assert ok
            name = f"img{i:02d}{ext}"
            (cls.dir / "in").mkdir(exist_ok=True)
            (cls.dir / "in" / name).write_bytes(buf.tobytes())
            cls.sizes[f"img{i:02d}"] = img.shape[:2]
        # Small model (S=32, P=8, D=48, d_k=16): the batch, not the matrix products, is under test.
        cls.model = ["--img-size", "32", "--patch-size", "8", "--dim", "48", "--d-k", "16", "--seed", "3"]
        cls.par = run_process("in", "-j", "4", "--save-attention", "-o", "par", *cls.model, cwd=cls.dir)
        cls.ser = run_process("in", "-j", "1", "--save-attention", "-o", "ser", *cls.model, cwd=cls.dir)

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def test_parallel_run_exits_0_without_sanitizer_reports(self):
        self.assertEqual(self.par.returncode, 0, self.par.stderr)
        for mark in SANITIZER_MARKS:
            self.assertNotIn(mark, self.par.stderr)
        self.assertIn(f"{N_IMAGES} images in", self.par.stderr, "the summary line counts every image")
        self.assertIn(f"{N_IMAGES} written", self.par.stderr)

    def test_every_image_has_its_overlay_and_attention(self):
        out = self.dir / "par"
        names = sorted(p.name for p in out.iterdir())
        expected = sorted([f"{s}{suffix}" for s in self.sizes
                           for suffix in ("_attn.png", "_attn.npy", "_cls.npy", "_heads.csv", "_settings.txt")] + ["heads.csv"])
        self.assertEqual(names, expected, "exactly the expected files, no temporaries")
        for stem, (h, w) in self.sizes.items():
            overlay = cv2.imread(str(out / f"{stem}_attn.png"))
            self.assertIsNotNone(overlay, stem)
            self.assertEqual(overlay.shape, (h, w, 3), stem)
            a = np.load(out / f"{stem}_attn.npy")
            self.assertEqual(a.shape, (17, 17), stem)
            np.testing.assert_allclose(a.sum(axis=1), 1.0, atol=1e-5, err_msg=stem)

    def test_parallel_and_serial_outputs_are_identical(self):
        self.assertEqual(self.ser.returncode, 0, self.ser.stderr)
        par, ser = self.dir / "par", self.dir / "ser"
        self.assertEqual(sorted(p.name for p in par.iterdir()), sorted(p.name for p in ser.iterdir()))
        for f in sorted(ser.iterdir()):
            self.assertEqual(f.read_bytes(), (par / f.name).read_bytes(), f.name)

