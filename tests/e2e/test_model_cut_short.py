#!/usr/bin/env python3
"""A model file cut short while a batch runs, end to end.

vitattn reads a checkpoint's float32 weights in place from the file's mapping, so every forward
pass reads the file's pages (src/files/mapped_file.hpp). Another program truncating the file
then takes those pages away: the image whose forward finds out must fail with one error line
naming the model file, no other image may start (each would fail alike), the process must not
die of SIGBUS, and the outputs of the images before stay as they were written.

How: a batch of images on a small ViT (a few tenths of a second per image), run with -j 1 (and
-j 2); as soon as the first overlay is on disk, the test truncates the model file to its first
4 KiB (the header stays, the weights go). A reference run on an intact copy of the model gives
the bytes every kept output must have.

Needs Debian's python3-numpy and python3-opencv (use /usr/bin/python3).
Environment: VITATTN_BIN. Run: python3 -m pytest tests/e2e/test_model_cut_short.py
"""
import re
import os
import shutil
import subprocess
import time

import cv2
import numpy as np

import harness
from harness import BIN, TmpCase, check_sanitizers

D, P, GRID, LAYERS, MLP, HEADS = 192, 16, 14, 6, 768, 3
N_IMAGES = 24


class ModelCutShort(TmpCase):
    def setUp(self):
        super().setUp()
        self.model = self.dir / "m.safetensors"
        harness.timm_checkpoint(self.model, D, P, GRID, LAYERS, MLP, HEADS, classes=10)
        shutil.copy(self.model, self.dir / "intact.safetensors")
        self.images = self.dir / "images"
        self.images.mkdir()
        rng = np.random.default_rng(4)
        for i in range(N_IMAGES):
            cv2.imwrite(str(self.images / f"img{i:02d}.png"), rng.integers(0, 256, (48, 64, 3), dtype=np.uint8))

    def overlays(self, folder):
        return {p.name: p.read_bytes() for p in sorted(folder.glob("*.png"))}

    def cut_short_during_batch(self, jobs):
        reference = self.dir / "reference"
        p = harness.run_process("--model", self.dir / "intact.safetensors", "-j", jobs, "-o", reference, self.images)
        self.assertEqual(p.returncode, 0, p.stderr)
        expected = self.overlays(reference)
        self.assertEqual(len(expected), N_IMAGES)

        out = self.dir / "out"
        proc = subprocess.Popen([BIN, "--model", str(self.model), "-j", str(jobs), "-o", str(out), str(self.images)],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, stdin=subprocess.DEVNULL)
        deadline = time.monotonic() + 300
        while not (out.is_dir() and any(out.glob("*.png"))):  # an overlay appears whole (temporary + rename)
            self.assertIsNone(proc.poll(), "the batch ended before the test could cut the model short")
            self.assertLess(time.monotonic(), deadline)
            time.sleep(0.002)
        os.truncate(self.model, 4096)
        stdout, stderr = proc.communicate(timeout=300)
        check_sanitizers(["--model", self.model], stderr)
        return proc.returncode, stderr, expected, self.overlays(out)

    def check(self, status, stderr, expected, written, max_errors):
        self.assertEqual(status, 1, f"not a clean failure (a negative status is a signal):\n{stderr}")
        errors = [line for line in stderr.splitlines() if line.startswith("error:")]
        self.assertGreaterEqual(len(errors), 1, stderr)
        self.assertLessEqual(len(errors), max_errors, stderr)
        for line in errors:  # the image that found out, then the model file and what happened to it
            self.assertRegex(line, r"^error: \S+\.png: " + re.escape(f"{self.model}: the model file was cut short "
                                                                        "while the run was reading its weights"))
        self.assertGreaterEqual(len(written), 1)
        self.assertLess(len(written), N_IMAGES, "every image was drawn from a file cut short")
        for name, data in written.items():  # what was written before stays, byte for byte
            self.assertEqual(data, expected[name], name)
        self.assertIn("not started", stderr)
        self.no_temporaries(self.dir / "out")

    def test_one_worker_one_error_line_and_the_earlier_outputs_kept(self):
        self.check(*self.cut_short_during_batch(1), max_errors=1)

    def test_two_workers_each_image_in_flight_fails_no_other_starts(self):
        self.check(*self.cut_short_during_batch(2), max_errors=2)
