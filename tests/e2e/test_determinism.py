#!/usr/bin/env python3
"""Same bytes on one machine: every output (PNG and .npy) of one build, model and options is
byte-identical whatever -j, whatever the environment says about BLAS and OpenMP threads, and
whatever kernel OPENBLAS_CORETYPE would pick.

vitattn's products are its own (src/core/gemm.hpp): each output element is one chain of
fused multiply-adds in a fixed order, so neither the thread count nor the tiling can change
it, and the environment of a BLAS it no longer uses cannot either. Comparing bytes is right
here because both runs are on the same CPU; across machines the cross-checks compare within
1e-5 (tests/python).

Covers the seeded 768-wide model (the default), a small random timm-named checkpoint (per-head
maps, rollout) and `vitattn forward`.
Needs Debian's python3-numpy and python3-opencv (use /usr/bin/python3).
Environment: VITATTN_BIN. Prints "determinism: N passed, M failed".
"""
import json
import os
import re
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
SANITIZER_MARKS = ("ERROR: AddressSanitizer", "ERROR: LeakSanitizer", "WARNING: ThreadSanitizer",
                   "runtime error:", "UndefinedBehaviorSanitizer")

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


def run(*args, cwd, env=None):
    full_env = dict(os.environ)
    for k, v in (env or {}).items():
        if v is None:
            full_env.pop(k, None)
        else:
            full_env[k] = v
    p = subprocess.run([BIN, *map(str, args)], cwd=cwd, env=full_env, capture_output=True, text=True,
                       stdin=subprocess.DEVNULL)
    for mark in SANITIZER_MARKS:
        if mark in p.stderr:
            raise AssertionError(f"sanitizer report from {args}:\n{p.stderr[-4000:]}")
    return p


def write_safetensors(path, tensors, metadata):
    header, blobs, offset = {"__metadata__": metadata}, [], 0
    for name, a in tensors.items():
        b = np.ascontiguousarray(a, dtype="<f4").tobytes()
        header[name] = {"dtype": "F32", "shape": list(a.shape), "data_offsets": [offset, offset + len(b)]}
        blobs.append(b)
        offset += len(b)
    h = json.dumps(header).encode()
    h += b" " * (-len(h) % 8)
    Path(path).write_bytes(struct.pack("<Q", len(h)) + h + b"".join(blobs))


def timm_checkpoint(path, seed=4):
    rng = np.random.default_rng(seed)
    r = lambda *s, scale=0.2: (rng.standard_normal(s) * scale).astype(np.float32)
    t = {"patch_embed.proj.weight": r(D, 3, P, P, scale=0.05), "patch_embed.proj.bias": r(D),
         "cls_token": r(1, 1, D), "pos_embed": r(1, 1 + GRID * GRID, D)}
    for i in range(LAYERS):
        b = f"blocks.{i}."
        t.update({b + "norm1.weight": 1 + r(D), b + "norm1.bias": r(D), b + "attn.qkv.weight": r(3 * D, D),
                  b + "attn.qkv.bias": r(3 * D), b + "attn.proj.weight": r(D, D), b + "attn.proj.bias": r(D),
                  b + "norm2.weight": 1 + r(D), b + "norm2.bias": r(D), b + "mlp.fc1.weight": r(MLP, D),
                  b + "mlp.fc1.bias": r(MLP), b + "mlp.fc2.weight": r(D, MLP), b + "mlp.fc2.bias": r(D)})
    t["norm.weight"], t["norm.bias"] = 1 + r(D), r(D)
    t["head.weight"], t["head.bias"] = r(10, D), r(10)
    write_safetensors(path, t, {"num_heads": str(HEADS)})


def photo_like(h, w, seed):
    rng = np.random.default_rng(seed)
    y, x = np.mgrid[0:h, 0:w]
    img = np.stack([x * 255 // (w - 1), y * 255 // (h - 1), (x + y) * 127 // (h + w - 2)], -1).astype(np.uint8)
    cv2.circle(img, (w // 3, h // 2), min(h, w) // 5, (20, 200, 40), -1)
    return np.clip(img.astype(int) + rng.integers(-8, 9, img.shape), 0, 255).astype(np.uint8)


def files_of(folder):
    return {p.relative_to(folder): p.read_bytes() for p in sorted(Path(folder).rglob("*")) if p.is_file()}


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
        p = run("in", "-j", jobs, "-v", "-o", out, *options, cwd=self.dir, env=env)
        self.assertEqual(p.returncode, 0, p.stderr)
        m = re.search(r"(\d+) workers, (\d+) threads each", p.stderr)
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
        kinds = {p.suffix for p in reference}
        self.assertEqual(kinds, {".png", ".npy"}, "PNGs and .npy files were compared")
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
            p = run("forward", "--model", self.ckpt, "x.npy", "-o", out, cwd=self.dir, env=env)
            self.assertEqual(p.returncode, 0, p.stderr)
            return files_of(out)

        reference = forward(0)
        self.assertEqual(sorted(str(p) for p in reference), ["x_attention.npy", "x_features.npy", "x_logits.npy"])
        for i, (name, env) in enumerate(ENVIRONMENTS.items()):
            self.same_bytes(reference, forward(i + 1, env), f"forward with {name}")


if __name__ == "__main__":
    if not Path(BIN).is_file():
        print(f"determinism: binary {BIN} not found", file=sys.stderr)
        sys.exit(1)
    suite = unittest.defaultTestLoader.loadTestsFromTestCase(Determinism)
    result = unittest.TextTestRunner(verbosity=2, stream=sys.stdout).run(suite)
    failed = len(result.failures) + len(result.errors)
    passed = result.testsRun - failed - len(result.skipped)
    print(f"determinism: {passed} passed, {failed} failed")
    sys.exit(1 if failed else 0)
