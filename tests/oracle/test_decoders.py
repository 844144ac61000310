#!/usr/bin/env python3
"""vitattn's own image decoding (src/image/jpeg_decoder.cpp: libjpeg-turbo, no imgcodecs)
against python3-opencv's cv2.imdecode(IMREAD_COLOR), the decoder it replaces: the same
pixels, bit for bit, and the same EXIF orientation.

    VITATTN_DECODE_TOOL=build/dev/tests/decode_tool python3 -m pytest tests/oracle/test_decoders.py

Cases: the JPEGs of ../shared/images; generated JPEGs: baseline at qualities 30/75/95, chroma
4:4:4, 4:2:2 and 4:2:0 (Pillow), progressive, grey, CMYK (Pillow, Adobe), odd sizes (1x1, 17x3,
333x251), restart markers, all eight EXIF orientations, big-endian EXIF; a JPEG with corrupt
entropy data (a warning naming the file, the image still decoded as cv2 does); and data libjpeg
rejects (one error line naming the file). Every failed check is printed ("FAIL: ...").
"""
import io
import os
import struct
import subprocess
import tempfile
from pathlib import Path

import cv2
import numpy as np
from PIL import Image

from harness import REPO, SHARED
from tally import Tally

TOOL = os.environ.get("VITATTN_DECODE_TOOL", str(REPO / "build/dev/tests/decode_tool"))


def photo(h, w, seed=0):
    """Smooth colour gradients plus noise: what a JPEG encoder is made for, and every block differs."""
    rng = np.random.default_rng(seed)
    y, x = np.mgrid[0:h, 0:w]
    img = np.stack([(x * 255 // max(w, 1)), (y * 255 // max(h, 1)), ((x + y) * 3) % 256], -1).astype(np.int32)
    return np.clip(img + rng.integers(-20, 21, img.shape), 0, 255).astype(np.uint8)


def pil_jpeg(img_rgb_or_grey, mode=None, **kw):
    im = Image.fromarray(img_rgb_or_grey)
    if mode:
        im = im.convert(mode)
    buf = io.BytesIO()
    im.save(buf, "JPEG", **kw)
    return buf.getvalue()


def with_exif(jpg, orientation, big_endian=False):
    e = ">" if big_endian else "<"
    tiff = (b"MM\x00*" if big_endian else b"II*\x00") + struct.pack(e + "I", 8) + struct.pack(e + "H", 1)
    tiff += struct.pack(e + "HHI", 0x0112, 3, 1) + struct.pack(e + "HH", orientation, 0) + struct.pack(e + "I", 0)
    payload = b"Exif\x00\x00" + tiff
    return jpg[:2] + b"\xff\xe1" + struct.pack(">H", len(payload) + 2) + payload + jpg[2:]


def cases():
    out = {}
    for p in sorted(Path(SHARED / "images").glob("*.jp*g")):
        out["shared_" + p.name] = p.read_bytes()
    img = photo(251, 333)
    for q in (30, 75, 95):
        out[f"cv2_q{q}.jpg"] = cv2.imencode(".jpg", img, [cv2.IMWRITE_JPEG_QUALITY, q])[1].tobytes()
    for name, sub in (("444", 0), ("422", 1), ("420", 2)):
        out[f"pil_{name}.jpg"] = pil_jpeg(img[:, :, ::-1].copy(), subsampling=sub, quality=85)
    out["progressive.jpg"] = cv2.imencode(".jpg", img, [cv2.IMWRITE_JPEG_PROGRESSIVE, 1])[1].tobytes()
    out["pil_progressive_420.jpg"] = pil_jpeg(img[:, :, ::-1].copy(), progressive=True, subsampling=2)
    out["grey.jpg"] = cv2.imencode(".jpg", cv2.cvtColor(img, cv2.COLOR_BGR2GRAY))[1].tobytes()
    out["cmyk.jpg"] = pil_jpeg(img[:, :, ::-1].copy(), mode="CMYK", quality=90)
    out["restart.jpg"] = cv2.imencode(".jpg", img, [cv2.IMWRITE_JPEG_RST_INTERVAL, 3])[1].tobytes()
    for h, w in ((1, 1), (3, 17), (17, 3), (9, 1001)):
        out[f"odd_{h}x{w}.jpg"] = cv2.imencode(".jpg", photo(h, w, h + w))[1].tobytes()
    small = cv2.imencode(".jpg", photo(20, 36, 5))[1].tobytes()
    for o in range(1, 9):
        out[f"exif_{o}.jpg"] = with_exif(small, o)
    out["exif_6_big_endian.jpg"] = with_exif(small, 6, big_endian=True)
    out["exif_9_ignored.jpg"] = with_exif(small, 9)
    return out


def decode(path, scratch):
    raw = scratch / "out.raw"
    r = subprocess.run([TOOL, str(path), str(raw)], capture_output=True, text=True, check=False)
    if r.returncode != 0:
        return None, r
    w, h = map(int, r.stdout.split("\n")[-2].split())
    return np.frombuffer(raw.read_bytes(), np.uint8).reshape(h, w, 3), r


def test_pixels_equal_opencv():
    t = Tally()
    with tempfile.TemporaryDirectory(prefix="vitattn-decoders-") as d:
        scratch = Path(d)
        for name, data in cases().items():
            path = scratch / name
            path.write_bytes(data)
            want = cv2.imdecode(np.frombuffer(data, np.uint8), cv2.IMREAD_COLOR)
            got, r = decode(path, scratch)
            if not t.check(got is not None, f"{name}: decoded ({r.stderr.strip()})"):
                continue
            if not t.check(got.shape == want.shape, f"{name}: shape {got.shape} == cv2's {want.shape}"):
                continue
            diff = int(np.abs(got.astype(int) - want.astype(int)).max())
            t.check(diff == 0, f"{name}: pixels equal cv2's (max difference {diff})")
            t.check(r.stdout.count("\n") == 1 and r.stderr == "", f"{name}: nothing said ({r.stdout!r} {r.stderr!r})")
        print(f"{len(cases())} JPEGs compared with cv2.imdecode")
    t.assert_clean()


def test_damage_is_attributed_to_the_file():
    t = Tally()
    with tempfile.TemporaryDirectory(prefix="vitattn-decoders-") as d:
        scratch = Path(d)
        jpg = bytearray(cv2.imencode(".jpg", photo(64, 64))[1].tobytes())
        sos = jpg.index(b"\xff\xda")
        for i in range(sos + 40, sos + 60):  # entropy-coded bytes scrambled (no marker made): damage
            jpg[i] = 0 if jpg[i] ^ 0x5A == 0xFF or jpg[i] == 0xFF else jpg[i] ^ 0x5A
        path = scratch / "damaged.jpg"
        path.write_bytes(bytes(jpg))
        want = cv2.imdecode(np.frombuffer(bytes(jpg), np.uint8), cv2.IMREAD_COLOR)
        got, r = decode(path, scratch)
        t.check(got is not None and want is not None and np.array_equal(got, want), "damaged: decoded as cv2 does")
        lines = [l for l in r.stdout.splitlines() if l.startswith("warning:")]
        t.check(len(lines) == 1 and "damaged.jpg: damaged JPEG data (libjpeg: Corrupt JPEG data" in lines[0],
                f"damaged: one warning naming the file and libjpeg's words ({lines})")
        t.check(r.stderr == "", f"damaged: nothing on stderr ({r.stderr!r})")

        bad = bytearray(cv2.imencode(".jpg", photo(16, 16))[1].tobytes())
        sof = bad.index(b"\xff\xc0")
        bad[sof + 9] = 7  # 7 components in the frame header: libjpeg refuses
        path = scratch / "bad_frame.jpg"
        path.write_bytes(bytes(bad))
        got, r = decode(path, scratch)
        errs = r.stderr.splitlines()
        t.check(got is None and r.returncode == 1, f"bad frame: refused (exit {r.returncode})")
        t.check(len(errs) == 1 and errs[0].startswith("error: ") and "bad_frame.jpg: corrupt JPEG data (libjpeg: " in errs[0],
                f"bad frame: one error line naming the file and libjpeg's words ({errs})")
    t.assert_clean()
