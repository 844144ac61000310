#!/usr/bin/env python3
"""Same bytes on one machine: every output (PNG and .npy) of one build, model and options is
byte-identical whatever -j, whatever the environment says about BLAS and OpenMP threads, and
whatever kernel OPENBLAS_CORETYPE would pick.

vitattn's products are its own (src/core/gemm.hpp): each output element is one chain of
fused multiply-adds in a fixed order, so neither the thread count nor the tiling can change
it, and the environment of a BLAS it no longer uses cannot either. Comparing bytes is right
here because both runs are on the same CPU; across machines the cross-checks compare within
1e-5 (tests/oracle).

Covers the seeded 768-wide model (the default), a small random timm-named checkpoint (per-head
maps, rollout) and `vitattn forward`.
Needs Debian's python3-numpy and python3-opencv (use /usr/bin/python3).
Environment: VITATTN_BIN. Run: python3 -m pytest tests/e2e/test_determinism.py
"""
import os
import re
import tempfile
import unittest
from pathlib import Path

import cv2
import numpy as np

from harness import files_of, photo_like, run_process, timm_checkpoint as timm_vit

# Each changes what OpenBLAS or an OpenMP runtime would do; none may change a byte. The
# machine's own OPENBLAS_CORETYPE (if any) is what the reference run sees; here it is also
# removed and replaced, for one run each.
ENVIRONMENTS = {
    "OPENBLAS_CORETYPE=Haswell": {"OPENBLAS_CORETYPE": "Haswell"},
    "OPENBLAS_CORETYPE unset": {"OPENBLAS_CORETYPE": None},
    "OPENBLAS_CORETYPE=Prescott": {"OPENBLAS_CORETYPE": "Prescott"},
    "OPENBLAS_NUM_THREADS=1": {"OPENBLAS_NUM_THREADS": "1"},
    "OPENBLAS_NUM_THREADS=2": {"OPENBLAS_NUM_THREADS": "2"},
    "OMP_NUM_THREADS=1": {"OMP_NUM_THREADS": "1"},
}

# The small checkpoint: D=96, 3 heads, 2 blocks, 8-pixel patches of 64×64 (65 tokens). Its
# products are large enough to be cut into several tiles and run on several threads.
D, P, GRID, HEADS, LAYERS, MLP = 96, 8, 8, 3, 2, 384


def timm_checkpoint(path, seed=4):
    timm_vit(path, D, P, GRID, LAYERS, MLP, HEADS, seed=seed, classes=10, scale=0.2, patch_scale=0.05)


class Determinism(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory(prefix="vitattn-det-")
        cls.dir = Path(cls.tmp.name)
        (cls.dir / "in").mkdir()
        for i, (h, w, ext) in enumerate(((120, 90, ".png"), (200, 260, ".jpg"), (64, 64, ".png"))):
            cv2.imwrite(str(cls.dir / "in" / f"img{i}{ext}"), photo_like(h, w, i))
        cls.ckpt = cls.dir / "vit.safetensors"
        timm_checkpoint(cls.ckpt)
        x = np.random.default_rng(7).standard_normal((2, 3, GRID * P, GRID * P)).astype(np.float32)
        np.save(cls.dir / "x.npy", x)
        cls.n = 0

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def draw(self, options, jobs, env=None):
        """Runs the image mode on the three images; returns {file: bytes} of what it wrote."""
        Determinism.n += 1
        out = self.dir / f"out{Determinism.n}"
        p = run_process("in", "-j", jobs, "-v", "-o", out, *options, cwd=self.dir, env=env)
        self.assertEqual(p.returncode, 0, p.stderr)
        m = re.search(r"(\d+) workers?, (\d+) threads? each", p.stderr)
        self.assertIsNotNone(m, "-v names the workers and their threads:\n" + p.stderr)
        files = files_of(out)
        self.assertGreaterEqual(len(files), 3, "every image was drawn")
        return files, int(m.group(1)), int(m.group(2))

    def same_bytes(self, reference, files, label):
        self.assertEqual(sorted(reference), sorted(files), label)
        for name, data in reference.items():
            self.assertTrue(data == files[name], f"{name} differs: {label}")

    def check_jobs_and_environments(self, options, label):
        reference, workers, threads = self.draw(options, "1")
        self.assertEqual(workers, 1)
        if (os.cpu_count() or 1) >= 2:
            self.assertGreaterEqual(threads, 2, "-j 1 gives the one worker every core, so its products are threaded")
        for jobs in ("2", "4"):
            files, workers, threads = self.draw(options, jobs)
            self.assertEqual((workers, threads), (min(int(jobs), 3), 1))
            self.same_bytes(reference, files, f"{label}: -j 1 against -j {jobs}")
        for name, env in ENVIRONMENTS.items():
            for jobs in ("1", "2"):
                files, _, _ = self.draw(options, jobs, env)
                self.same_bytes(reference, files, f"{label}: -j 1 against -j {jobs} with {name}")
        kinds = {Path(p).suffix for p in reference}
        self.assertEqual(kinds, {".png", ".npy", ".csv", ".txt"}, "PNGs, .npy files, heads.csv and the records were compared")
        print(f"  {label}: {len(reference)} files identical over -j 1/2/4 and {len(ENVIRONMENTS)} environments")

    def test_seeded_768_wide_model(self):
        self.check_jobs_and_environments(["--save-attention"], "seeded D=768")

    def test_checkpoint_per_head_maps(self):
        self.check_jobs_and_environments(["--model", self.ckpt, "--save-attention", "--head", "all"], "checkpoint, --head all")

    def test_checkpoint_rollout(self):
        self.check_jobs_and_environments(["--model", self.ckpt, "--save-attention", "--rollout", "--head", "max"],
                                         "checkpoint, --rollout --head max")

    def test_forward_outputs(self):
        def forward(n, env=None):
            out = self.dir / f"fwd{n}"
            p = run_process("forward", "--model", self.ckpt, "x.npy", "-o", out, cwd=self.dir, env=env)
            self.assertEqual(p.returncode, 0, p.stderr)
            return files_of(out)

        reference = forward(0)
        self.assertEqual(sorted(str(p) for p in reference),
                         ["x_attention.npy", "x_features.npy", "x_logits.npy", "x_norms.npy", "x_tokens.npy"])
        for i, (name, env) in enumerate(ENVIRONMENTS.items()):
            self.same_bytes(reference, forward(i + 1, env), f"forward with {name}")

    def test_bf16_products_same_bytes_at_any_thread_count(self):
        """--precision bf16 (src/core/gemm_bf16.hpp): the same bytes at 1, 2 and 3 threads (forward)
        and at -j 1 and -j 2 (the image mode), and not fp32's bytes; a CPU without AVX512-BF16
        refuses it in one line."""
        has_bf16 = "avx512_bf16" in Path("/proc/cpuinfo").read_text()

        def forward(threads, *extra):
            out = self.dir / f"bf16_fwd{threads}{len(extra)}"
            p = run_process("forward", "--model", self.ckpt, *extra, "--threads", threads, "x.npy", "-o", out,
                            cwd=self.dir)
            return p, out

        p, _ = forward(1, "--precision", "bf16")
        if not has_bf16:
            lines = p.stderr.strip().splitlines()
            self.assertEqual((p.returncode, len(lines)), (2, 1), p.stderr)
            self.assertTrue(lines[0].startswith("error: --precision bf16:") and "AVX512-BF16" in lines[0], p.stderr)
            return
        self.assertEqual(p.returncode, 0, p.stderr)
        reference = files_of(forward(1, "--precision", "bf16")[1])
        for threads in (2, 3):
            p, out = forward(threads, "--precision", "bf16")
            self.assertEqual(p.returncode, 0, p.stderr)
            self.same_bytes(reference, files_of(out), f"forward --precision bf16 at 1 and {threads} threads")
        p, out = forward(2)
        fp32 = files_of(out)
        self.assertNotEqual(reference["x_attention.npy"], fp32["x_attention.npy"], "bf16 is not fp32")
        options = ["--model", self.ckpt, "--save-attention", "--precision", "bf16"]
        maps, _, _ = self.draw(options, "1")
        self.same_bytes(maps, self.draw(options, "2")[0], "image mode --precision bf16, -j 1 against -j 2")

