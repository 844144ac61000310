#!/usr/bin/env python3
"""End-to-end tests of what a start of vitattn loads (src/image/codec_module_abi.hpp,
src/lazy/lazy_library.hpp): JPEGs are decoded in the binary with libjpeg-turbo, every other
format goes through libvitattn_codecs.so (OpenCV's imgcodecs with GDAL, GDCM, OpenEXR, …),
loaded only when such a file is met or JPEG/WebP is written; libcurl and libcrypto are loaded
only for a download or a report; the HTTP server (cpp-httplib with OpenSSL and brotli) is a
second executable, vitattn-serve, that `vitattn serve` execs (src/cli/serve_exec.cpp). The pixels of a PNG read through the module and of the same
image as a lossless BMP, and the overlay of a JPEG, are what cv2 makes of them.

Evidence of what is loaded: the dynamic loader's trace (LD_DEBUG=files). Small inputs (the
seeded model at --img-size 32): a few seconds in all.

Needs Debian's python3-numpy and python3-opencv (use /usr/bin/python3).
Environment: VITATTN_BIN (the binary). Run: python3 -m pytest tests/e2e/test_startup_libraries.py
"""
import re

import cv2
import numpy as np

from harness import TmpCase, run_process

HEAVY = ("libopencv_imgcodecs", "libvitattn_codecs", "libgdal", "libcurl", "libcrypto", "libopencv_videoio",
         "libcpp-httplib", "libssl", "libbrotli")


class StartupLibraries(TmpCase):
    tmp_prefix = "vitattn-startup-"

    def loaded(self, *args):
        """(the CompletedProcess, the set of library files the loader opened for the run)."""
        trace = self.dir / "ld-trace"
        p = run_process(*args, env={"LD_DEBUG": "files", "LD_DEBUG_OUTPUT": str(trace)})
        text = "".join(f.read_text(errors="replace") for f in self.dir.glob("ld-trace*"))
        for f in self.dir.glob("ld-trace*"):
            f.unlink()
        self.assertIn("file=", text, "LD_DEBUG=files wrote no trace")
        return p, set(re.findall(r"file=(\S+) \[0\];  (?:needed|dynamically)", text))

    def heavy(self, libs):
        return sorted(l for l in libs if any(h in l for h in HEAVY))

    def test_version_and_a_jpeg_run_load_no_codec_module_curl_or_crypto(self):
        p, libs = self.loaded("--version")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(self.heavy(libs), [])
        self.assertLess(len(libs), 40, f"{len(libs)} libraries for --version: {sorted(libs)}")
        img = np.random.default_rng(1).integers(0, 256, (48, 64, 3), dtype=np.uint8)
        self.assertTrue(cv2.imwrite(str(self.dir / "photo.jpg"), img))
        p, libs = self.loaded("--img-size", "32", self.dir / "photo.jpg", "-o", self.dir / "out")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertTrue((self.dir / "out" / "photo_attn.png").is_file())
        self.assertEqual(self.heavy(libs), [])
        # The same trace shows the module and imgcodecs once a PNG is read: the check above can fail.
        self.assertTrue(cv2.imwrite(str(self.dir / "photo.png"), img))
        p, libs = self.loaded("--img-size", "32", self.dir / "photo.png", "-o", self.dir / "out2")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertTrue(any("libvitattn_codecs" in l for l in libs) and any("libopencv_imgcodecs" in l for l in libs))
        self.assertFalse(any(l.endswith("/libcurl.so.4") for l in libs), "vitattn's libcurl (GDAL's is libcurl-gnutls)")

    def test_formats_through_the_module_and_jpeg_directly_draw_what_cv2_decodes(self):
        img = np.random.default_rng(2).integers(0, 256, (40, 56, 3), dtype=np.uint8)
        folder = self.dir / "in"
        folder.mkdir()
        for ext in ("png", "bmp", "ppm", "tiff"):  # lossless: the same pixels, so the same overlay
            self.assertTrue(cv2.imwrite(str(folder / f"a_{ext}.{ext}"), img))
        jpg = cv2.imencode(".jpg", img)[1].tobytes()
        (folder / "b.jpg").write_bytes(jpg)
        self.assertTrue(cv2.imwrite(str(folder / "b_as_png.png"), cv2.imdecode(np.frombuffer(jpg, np.uint8), 1)))
        out = self.dir / "out"
        p = run_process("--img-size", "32", folder, "-o", out)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(p.stderr.count("error"), 0, p.stderr)
        first = (out / "a_png_attn.png").read_bytes()
        for ext in ("bmp", "ppm", "tiff"):
            self.assertEqual((out / f"a_{ext}_attn.png").read_bytes(), first, ext)
        # The JPEG decoded in the binary draws what cv2's decoding of it (saved losslessly) draws.
        self.assertEqual((out / "b_attn.png").read_bytes(), (out / "b_as_png_attn.png").read_bytes())

    def test_jpeg_and_webp_outputs_load_the_module_and_decode(self):
        img = np.random.default_rng(3).integers(0, 256, (40, 40, 3), dtype=np.uint8)
        self.assertTrue(cv2.imwrite(str(self.dir / "photo.jpg"), img))
        for fmt in ("jpg", "webp"):
            out = self.dir / f"out_{fmt}"
            p, libs = self.loaded("--img-size", "32", "--format", fmt, self.dir / "photo.jpg", "-o", out)
            self.assertEqual(p.returncode, 0, p.stderr)
            self.assertTrue(any("libvitattn_codecs" in l for l in libs), fmt)
            drawn = cv2.imread(str(out / f"photo_attn.{fmt}"), cv2.IMREAD_COLOR)
            self.assertIsNotNone(drawn, fmt)
            self.assertEqual(drawn.shape, (40, 40, 3), fmt)

    def test_without_the_codec_module_other_formats_fail_one_line_each_and_jpegs_are_drawn(self):
        import shutil
        import subprocess

        from harness import BIN
        alone = self.dir / "bin" / "vitattn"  # no libvitattn_codecs.so beside it nor in ../lib/vitattn
        alone.parent.mkdir()
        shutil.copy(BIN, alone)
        img = np.random.default_rng(4).integers(0, 256, (40, 40, 3), dtype=np.uint8)
        folder = self.dir / "in"
        folder.mkdir()
        for name in ("a.jpg", "b.png", "c.bmp"):
            self.assertTrue(cv2.imwrite(str(folder / name), img))
        out = self.dir / "out"
        p = subprocess.run([str(alone), "--img-size", "32", str(folder), "-o", str(out)], capture_output=True, text=True)
        self.assertEqual(p.returncode, 1, p.stderr)  # as for any input that failed
        self.assertEqual(sorted(f.name for f in out.iterdir()), ["a_attn.png", "a_settings.txt"], p.stderr)
        for name in ("b.png", "c.bmp"):
            lines = [l for l in p.stderr.splitlines() if name in l]
            self.assertEqual(len(lines), 1, f"{name}: {lines} in\n{p.stderr}")
            self.assertRegex(lines[0], rf"^error: .*{name}: decoding and encoding of this format is not available: "
                                       r".*libvitattn_codecs\.so: cannot open shared object file")

    def test_serve_execs_the_server_beside_the_binary_or_says_it_is_missing(self):
        import shutil
        import subprocess

        from harness import BIN
        import os
        import signal
        # The server's libraries are its own: a running `vitattn serve` has opened cpp-httplib.
        trace = self.dir / "serve-trace"
        server = subprocess.Popen([str(BIN), "serve", "--port", "0"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                  text=True, env={**os.environ, "LD_DEBUG": "files", "LD_DEBUG_OUTPUT": str(trace)})
        try:
            self.assertRegex(server.stdout.readline(), r"^http://127\.0\.0\.1:\d+")
        finally:
            server.send_signal(signal.SIGTERM)
            server.communicate(timeout=60)
        self.assertEqual(server.returncode, 0)
        text = "".join(f.read_text(errors="replace") for f in self.dir.glob("serve-trace*"))
        self.assertRegex(text, r"file=\S*libcpp-httplib\S* \[0\];  needed", "vitattn serve did not run vitattn-serve")
        alone = self.dir / "alone" / "vitattn"  # no vitattn-serve beside it nor in ../lib/vitattn
        alone.parent.mkdir()
        shutil.copy(BIN, alone)
        p = subprocess.run([str(alone), "serve", "--port", "0"], capture_output=True, text=True, timeout=60)
        self.assertEqual(p.returncode, 2, p.stderr)
        lines = p.stderr.strip().splitlines()
        self.assertEqual(len(lines), 1, p.stderr)
        self.assertRegex(lines[0], r"^error: serve: the server executable vitattn-serve was not found beside vitattn")
