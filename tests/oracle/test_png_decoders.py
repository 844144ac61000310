#!/usr/bin/env python3
"""vitattn's PNG encoder read back by two independent decoders: libpng (cv2.imread with
IMREAD_UNCHANGED) and Pillow. Every file must decode to exactly the pixels that went in.

    VITATTN_PNG_TOOL=build/dev/tests/png_encode_tool python3 -m pytest tests/oracle/test_png_decoders.py

Cases: 1x1, odd widths (1, 3, 17, 1001), 8000x3, a few taller ones; grey, BGR and BGRA;
random, flat and gradient contents, bytes whose Huffman code would be 16 bits deep; every filter, the own Huffman-only deflate (level -1) and libdeflate levels 0-3, IDAT cut small and large; and
the options vitattn writes overlays with. Plus seeded random sizes (the property test).
Every failed check is printed ("FAIL: ..."); the test fails with their list.
"""
import os
import subprocess
import tempfile
from pathlib import Path

import cv2
import numpy as np
from PIL import Image

from harness import REPO
from tally import Tally

T = Tally()
TOOL = os.environ.get("VITATTN_PNG_TOOL", str(REPO / "build/dev/tests/png_encode_tool"))
FILTERS = ["none", "sub", "up", "paeth", "adaptive", "default"]


def content(kind, h, w, c, rng):
    if kind == "random":
        return rng.integers(0, 256, (h, w, c), dtype=np.uint8)
    if kind == "flat":
        return np.full((h, w, c), rng.integers(0, 256), dtype=np.uint8)
    y, x, ch = np.mgrid[0:h, 0:w, 0:c]
    return ((x * 3 + y * 5 + ch * 40 + int(rng.integers(0, 256))) % 256).astype(np.uint8)


def deep_code_bytes(rng):
    """4368x15 grey bytes that, behind None's 15 filter-type zeros, hold value 0 2^15 times and
    value v = 1…15 2^(v−1) times: with the end-of-block symbol, Huffman's own code for them is
    16 bits deep, one more than deflate allows (RFC 1951 §3.2.7), so the encoder must flatten it."""
    h, w = 15, 4368
    values = np.concatenate([np.zeros(2**15 - h, np.uint8)] + [np.full(2**(v - 1), v, np.uint8) for v in range(1, 16)])
    assert values.size == h * w
    return rng.permutation(values).reshape(h, w, 1)


def cases(rng):
    sizes = [(1, 1), (1, 5), (3, 4), (17, 9), (1001, 3), (8000, 3), (64, 48)]
    sizes += [(int(rng.integers(1, 300)), int(rng.integers(1, 40))) for _ in range(12)]  # seeded random sizes
    n = 0
    for w, h in sizes:
        for c in (1, 3, 4):
            for kind in ("random", "flat", "gradient"):
                for f in FILTERS:
                    level = n % 5 - 1  # -1: the own Huffman-only deflate; 0-3: libdeflate
                    idat = 1 << 20 if n % 3 else 97  # several IDAT chunks every third case
                    yield f"c{n:04d}_{w}x{h}x{c}_{kind}_{f}_l{level}", content(kind, h, w, c, rng), f, level, idat
                    n += 1
    # The own deflate on bytes whose unlimited Huffman code is 16 deep: its code lengths must be limited to 15.
    yield f"c{n:04d}_deep_code_4368x15x1_none_l-1", deep_code_bytes(rng), "none", -1, 1 << 20


def test_png_decoders_read_back_every_pixel():
    with T.section("png decoders"):
        check_decoders(TOOL)


def check_decoders(tool):
    rng = np.random.default_rng(2026)
    with tempfile.TemporaryDirectory(prefix="vitattn-png-") as tmp:
        tmp = Path(tmp)
        lines, expected = [], {}
        for name, img, f, level, idat in cases(rng):
            raw = tmp / f"{name}.raw"
            raw.write_bytes(np.ascontiguousarray(img).tobytes())
            h, w, c = img.shape
            lines.append(f"{raw} {w} {h} {c} {f} {level} {idat} {tmp / (name + '.png')}")
            expected[name] = img
        (tmp / "manifest").write_text("\n".join(lines) + "\n")
        p = subprocess.run([tool, str(tmp / "manifest")], capture_output=True, text=True)
        if not T.check(p.returncode == 0, f"{tool} failed: {p.stderr.strip()}"):
            return
        for name, img in expected.items():
            path = tmp / f"{name}.png"
            c = img.shape[2]
            by_cv = cv2.imread(str(path), cv2.IMREAD_UNCHANGED)
            if T.check(by_cv is not None, f"{name}: libpng cannot read it"):
                got = by_cv if by_cv.ndim == 3 else by_cv[:, :, None]
                T.check(got.shape == img.shape and np.array_equal(got, img),
                        f"{name}: libpng decodes other pixels ({got.shape} vs {img.shape})")
            try:
                with Image.open(path) as im:
                    im.load()
                    mode = im.mode
                    arr = np.asarray(im)
            except Exception as e:  # Pillow's own error is the finding
                T.check(False, f"{name}: Pillow cannot read it: {e}")
                continue
            T.check(mode == {1: "L", 3: "RGB", 4: "RGBA"}[c], f"{name}: Pillow reads mode {mode}")
            rgb = img[:, :, 0] if c == 1 else img[:, :, [2, 1, 0] + ([3] if c == 4 else [])]
            T.check(arr.shape == rgb.shape and np.array_equal(arr, rgb), f"{name}: Pillow decodes other pixels")
