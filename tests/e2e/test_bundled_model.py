#!/usr/bin/env python3
"""The trained model shipped in models/: intact, documented, and drawing maps from a fresh clone.

Without arguments: needs only the binary and the repository (no ../shared, no network).
With --shared: checks that the bundled file is byte for byte the shared fixture whose golden
outputs from the original code crosscheck_torch_shared compares vitattn against; skips when
../shared is absent (fails under CI=true).
Run: python3 -m pytest tests/e2e/test_bundled_model.py [--shared]
"""
import hashlib
import re
import subprocess
import tempfile
from pathlib import Path

import cv2
import numpy as np
import pytest

import safetensors_io
from harness import BIN, REPO, SHARED, need
from tally import Tally

MODEL = REPO / "models" / "vit_cifar10_tintn.safetensors"
CLASSES = "plane,car,bird,cat,deer,dog,frog,horse,ship,truck"


def documented_sha256():
    """The sha256 that models/README.md gives for the bundled file."""
    text = (REPO / "models" / "README.md").read_text()
    m = re.search(r"482,864 bytes, sha256 `([0-9a-f]{64})`", text)
    return m.group(1) if m else None


def test_bundled_model_is_intact_and_draws_maps():
    t = Tally()
    data = MODEL.read_bytes()
    t.check(hashlib.sha256(data).hexdigest() == documented_sha256(),
            "models/vit_cifar10_tintn.safetensors has the sha256 models/README.md documents")
    t.check((REPO / "models" / "vit_cifar10_tintn.LICENSE.txt").read_text().count("MIT License") >= 2,
            "the licence file holds both upstream MIT licences")
    meta = safetensors_io.read_metadata(MODEL)
    t.check(meta.get("classes") == CLASSES, f"class names in __metadata__: {meta.get('classes')!r}")

    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "out"
        p = subprocess.run([BIN, "--model", str(MODEL), "-v", "--save-attention", "-o", str(out),
                            str(REPO / "images")], capture_output=True, text=True, stdin=subprocess.DEVNULL)
        t.check(p.returncode == 0, f"vitattn --model models/... images/ exits 0 (got {p.returncode}): {p.stderr[-2000:]}")
        t.check("family tintn: 4 layers, D=48, 4 heads" in p.stderr, "recognised as the tintn family, 4 layers, 4 heads")
        photos = sorted(q for q in (REPO / "images").iterdir() if q.suffix.lower() in (".png", ".jpg"))
        t.check(len(photos) == 4, f"four sample photos in images/ ({len(photos)})")
        seeded = {}
        for photo in photos:
            png = out / f"{photo.stem}_attn.png"
            src = cv2.imread(str(photo))
            over = cv2.imread(str(png))
            t.check(over is not None and over.shape == src.shape, f"{png.name}: an overlay at the photo's size")
            cls = np.load(out / f"{photo.stem}_cls.npy")
            attn = np.load(out / f"{photo.stem}_attn.npy")
            t.check(cls.shape == (8, 8), f"{photo.stem}: an 8x8 map ({cls.shape})")
            t.check(attn.shape == (4, 65, 65), f"{photo.stem}: last layer's 4 heads over 65 tokens ({attn.shape})")
            t.check(np.allclose(attn.sum(-1), 1, atol=1e-5), f"{photo.stem}: rows are probabilities")
            # The default map is the mean over heads of the class token's row over the patches.
            t.check(np.allclose(cls, attn[:, 0, 1:].mean(0).reshape(8, 8), atol=1e-6),
                    f"{photo.stem}: the map is the class token's mean-over-heads row")
            seeded[photo.stem] = cls
        # A trained map is not the seeded head's map of the same photo.
        p2 = subprocess.run([BIN, "--save-attention", "-o", str(Path(tmp) / "seeded"), str(REPO / "images")],
                            capture_output=True, text=True, stdin=subprocess.DEVNULL)
        t.check(p2.returncode == 0, f"seeded run exits 0: {p2.stderr[-1000:]}")
        for stem, cls in seeded.items():
            s = np.load(Path(tmp) / "seeded" / f"{stem}_cls.npy")
            t.check(s.shape != cls.shape, f"{stem}: seeded grid {s.shape} differs from the trained model's 8x8")
    t.assert_clean()


@pytest.mark.shared
def test_bundled_model_is_the_shared_fixture():
    t = Tally()
    fixture = SHARED / "models" / "vit_cifar10_tintn.safetensors"
    need(fixture.is_file(), f"bundled --shared: no {fixture}")
    t.check(fixture.read_bytes() == MODEL.read_bytes(),
            "the bundled model is byte for byte the shared fixture checked against the original code's outputs")
    t.assert_clean()
