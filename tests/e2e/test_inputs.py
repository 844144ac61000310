#!/usr/bin/env python3
"""End-to-end: every line vitattn prints on stderr is its own and names its file, and nothing
found in a folder is skipped in silence.

- libjpeg's, libpng's and OpenCV's own messages are caught while decoding and reported as
  vitattn's lines naming the file decoded, also with -j 4: each damaged JPEG gets the very
  message libjpeg gives for it (the oracle is cv2.imread in a process of its own, whose stderr
  holds only that file's message).
- A damaged JPEG that still decodes is a warning and is drawn; with --strict it fails.
- In a folder: a second name for the same file (a symlink, not the file it leads to), a FIFO
  named x.jpg, refused formats (EXR, GIF) and a symlinked sub-folder under -r each get a
  warning naming the entry; .pam and .pfm are read; other files stay quiet unless -v.

Uses tests/pylib/harness.py. Run: python3 -m pytest tests/e2e/test_inputs.py
"""
import os
import re
import subprocess
import sys

import cv2
import numpy as np
from PIL import Image

from harness import TmpCase, photo_like, run

OWN_LINE = re.compile(r"^(error|warning|info|debug): ")


def foreign_lines(err):
    return [l for l in err.splitlines() if l.strip() and not OWN_LINE.match(l)]


def lines_naming(err, path):
    return [l for l in err.splitlines() if f" {path}:" in l]


def jpeg_with_damage(seed, h, w):
    """A JPEG with 8 bytes of its entropy-coded data flipped (never making a 0xFF)."""
    rng = np.random.default_rng(seed)
    img = cv2.GaussianBlur((rng.random((h, w, 3)) * 255).astype(np.uint8), (5, 5), 0)
    b = bytearray(cv2.imencode(".jpg", img, [cv2.IMWRITE_JPEG_QUALITY, 90])[1].tobytes())
    sos = b.index(b"\xff\xda")
    start = sos + 2 + (b[sos + 2] << 8 | b[sos + 3])
    k = start + (len(b) - start) // 3
    for j in range(k, k + 8):
        if b[j] != 0xFF and b[j - 1] != 0xFF:
            b[j] ^= 0x55 if b[j] ^ 0x55 != 0xFF else 0x0F
    return bytes(b)


_SAYS = r"""
import os, sys, cv2
for path in sys.argv[1:]:
    os.write(2, b"\0" + path.encode() + b"\n")  # fd 2 directly: libjpeg writes there unbuffered
    print(cv2.imread(path) is not None, flush=True)
"""


def libjpeg_says(paths):
    """{path: (decodes, what libjpeg prints)} for each file, from cv2 alone in a process of its
    own (one for all: importing cv2 takes seconds), each file's stderr cut out between marks."""
    paths = [str(p) for p in paths]
    p = subprocess.run([sys.executable, "-c", _SAYS, *paths], capture_output=True, text=True)
    decodes = p.stdout.split()
    said = {}
    for part in p.stderr.split("\0")[1:]:
        name, _, text = part.partition("\n")
        said[name] = text.strip()
    assert len(decodes) == len(paths) and sorted(said) == sorted(paths), (p.stdout, p.stderr)
    return {path: (d == "True", said[path]) for path, d in zip(paths, decodes)}


def png_with_bad_filter(h=16, w=20):
    """A PNG whose rows use filter type 9 (0-4 exist): libpng fails with "bad adaptive filter value"."""
    import struct
    import zlib
    img = photo_like(h, w)
    raw = b"".join(b"\x09" + img[r, :, ::-1].tobytes() for r in range(h))
    chunk = lambda t, d: struct.pack(">I", len(d)) + t + d + struct.pack(">I", zlib.crc32(t + d))
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0)) +
            chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b""))


class Base(TmpCase):
    def write(self, rel, img):
        """Through cv2.imwrite, whose writers (.pam, .pfm) the tests rely on."""
        p = self.dir / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        self.assertTrue(cv2.imwrite(str(p), img), rel)
        return p

    def assert_own_lines(self, err):
        self.assertEqual(foreign_lines(err), [], f"lines on stderr that are not vitattn's:\n{err}")


class DecoderMessages(Base):
    def damaged_folder(self):
        """in/: damaged JPEGs, each with its own libjpeg message, and clean ones. Returns
        ({damaged path: message}, [clean paths])."""
        damaged, clean = {}, []
        for s in range(16):
            p = self.dir / f"in/d{s:02d}.jpg"
            p.parent.mkdir(parents=True, exist_ok=True)
            p.write_bytes(jpeg_with_damage(s, 60 + 8 * s, 80 + 4 * s))
        for i in range(4):
            clean.append(self.write(f"in/clean{i}.jpg", photo_like(50 + 10 * i, 70)))
        says = libjpeg_says(sorted((self.dir / "in").iterdir()))
        for s in range(16):
            p = self.dir / f"in/d{s:02d}.jpg"
            decodes, said = says[str(p)]
            self.assertTrue(decodes, p)
            if said and said not in damaged.values():
                damaged[p] = said
            else:
                p.unlink()
        for p in clean:
            self.assertEqual(says[str(p)], (True, ""))
        self.assertGreaterEqual(len(damaged), 6, "enough damaged files with distinct messages")
        return damaged, clean

    def test_library_messages_are_vitattns_lines_naming_their_file(self):
        damaged, clean = self.damaged_folder()
        (self.dir / "in/bad_filter.png").write_bytes(png_with_bad_filter())
        pam = cv2.imencode(".pam", photo_like(40, 50))[1].tobytes()
        (self.dir / "in/short.pam").write_bytes(pam[: len(pam) // 2])  # OpenCV's own "can't read data" line
        jp2 = cv2.imencode(".jp2", photo_like(40, 50))[1].tobytes()
        (self.dir / "in/cut.jp2").write_bytes(jp2[: len(jp2) // 2])  # OpenJPEG's lines, through OpenCV's logger
        for jobs in ("1", "4"):
            out = self.dir / f"out{jobs}"
            rc, _, err = run(self.dir / "in", "-j", jobs, "-o", out)
            self.assertEqual(rc, 1, err)
            self.assert_own_lines(err)
            for p, said in damaged.items():
                self.assertEqual(lines_naming(err, p),
                                 [f"warning: {p}: damaged JPEG data (libjpeg: {said}); decoded anyway, "
                                  "parts may look smeared or grey"], f"-j {jobs}\n{err}")
                self.assertTrue((out / f"{p.stem}_attn.png").is_file(), p)
            for p in clean:
                self.assertEqual(lines_naming(err, p), [], err)
                self.assertTrue((out / f"{p.stem}_attn.png").is_file(), p)
            self.assertEqual(lines_naming(err, self.dir / "in/bad_filter.png"),
                             [f"error: {self.dir / 'in/bad_filter.png'}: corrupt PNG data "
                              "(libpng error: bad adaptive filter value)"], err)
            pam_lines = lines_naming(err, self.dir / "in/short.pam")
            self.assertEqual(len(pam_lines), 1, err)
            self.assertRegex(pam_lines[0], r"^error: .*short\.pam: corrupt PAM data \(OpenCV: can't read data: ")
            jp2_lines = lines_naming(err, self.dir / "in/cut.jp2")
            self.assertEqual(len(jp2_lines), 1, err)
            self.assertRegex(jp2_lines[0], r"^error: .*cut\.jp2: corrupt JPEG 2000 data \(OpenCV: OpenJPEG2000: ")

    def test_strict_fails_a_damaged_jpeg_and_writes_nothing_for_it(self):
        damaged, clean = self.damaged_folder()
        out = self.dir / "out"
        rc, _, err = run(self.dir / "in", "--strict", "-j", "4", "-o", out)
        self.assertEqual(rc, 1, err)
        self.assert_own_lines(err)
        for p, said in damaged.items():
            self.assertEqual(lines_naming(err, p),
                             [f"error: {p}: damaged JPEG data (libjpeg: {said}); refused as damaged (--strict)"], err)
            self.assertFalse((out / f"{p.stem}_attn.png").exists(), p)
        for p in clean:
            self.assertTrue((out / f"{p.stem}_attn.png").is_file(), p)
        self.assertRegex(err, rf"info: {len(damaged) + len(clean)} images .*: {len(clean)} written .*, "
                              rf"{len(damaged)} failed")
        rc, _, err = run(*clean, "--strict", "-o", self.dir / "clean")
        self.assertEqual((rc, err.count("warning"), err.count("error")), (0, 0, 0), err)


class FolderScan(Base):
    def test_a_second_name_for_the_same_file_is_a_warning(self):
        target = self.write("photos/cat.jpg", photo_like(40, 60))
        (self.dir / "in").mkdir()
        (self.dir / "in/a_link.jpg").symlink_to(target)
        (self.dir / "in/b_link.jpg").symlink_to(target)
        for verbose in ((), ("-v",)):
            rc, _, err = run(self.dir / "in", "-o", self.dir / "out", *verbose)
            self.assertEqual(rc, 0, err)
            self.assert_own_lines(err)
            self.assertEqual(sorted(p.name for p in (self.dir / "out").iterdir()), ["a_link_attn.png", "a_link_settings.txt"])
            self.assertEqual(lines_naming(err, self.dir / "in/b_link.jpg"),
                             [f"warning: {self.dir / 'in/b_link.jpg'}: skipped, the same file as "
                              f"{self.dir / 'in/a_link.jpg'} (done once)"], err)

    def test_a_symlink_beside_its_file_is_the_name_dropped(self):
        # alias.jpg sorts before photo.jpg: the file's own name is kept all the same.
        self.write("in/photo.jpg", photo_like(40, 60))
        (self.dir / "in/alias.jpg").symlink_to("photo.jpg")
        rc, _, err = run(self.dir / "in", "-o", self.dir / "out")
        self.assertEqual(rc, 0, err)
        self.assert_own_lines(err)
        self.assertEqual(sorted(p.name for p in (self.dir / "out").iterdir()), ["photo_attn.png", "photo_settings.txt"])
        self.assertEqual(lines_naming(err, self.dir / "in/alias.jpg"),
                         [f"warning: {self.dir / 'in/alias.jpg'}: skipped, the same file as "
                          f"{self.dir / 'in/photo.jpg'} (done once)"], err)
        self.assertEqual(lines_naming(err, self.dir / "in/photo.jpg"), [], "the file itself is not warned about")

    def test_a_name_holding_a_newline_is_one_quoted_line_not_two(self):
        # Unquoted, "evil\nerror: fake.png: …" would print as a second line that reads like
        # an error of its own about a file that does not exist.
        (self.dir / "in").mkdir()
        self.write("in/good.png", photo_like(32, 48))
        (self.dir / "in" / "evil\nerror: fake.png").write_bytes(b"\x89PNG\r\n\x1a\n not really")
        rc, _, err = run(self.dir / "in", "-o", self.dir / "out")
        self.assertEqual(rc, 1, err)
        self.assert_own_lines(err)
        naming = [l for l in err.splitlines() if "fake.png" in l]
        self.assertEqual(len(naming), 1, err)
        self.assertTrue(naming[0].startswith(f'error: "{self.dir / "in"}/evil\\x0Aerror: fake.png": '), naming[0])
        self.assertTrue((self.dir / "out/good_attn.png").exists())

    def test_a_fifo_named_like_an_image_is_not_a_regular_file(self):
        self.write("in/ok.png", photo_like(30, 30))
        os.mkfifo(self.dir / "in/x.jpg")
        rc, _, err = run(self.dir / "in", "-v", "-o", self.dir / "out")
        self.assertEqual(rc, 0, err)
        self.assert_own_lines(err)
        self.assertEqual(lines_naming(err, self.dir / "in/x.jpg"),
                         [f"warning: {self.dir / 'in/x.jpg'}: skipped, not a regular file (a FIFO)"], err)
        self.assertNotIn("by its extension", err)

    def test_the_scan_takes_exactly_what_the_decoder_reads(self):
        self.write("in/a.pam", photo_like(30, 40))
        (self.dir / "in/b.pfm").write_bytes(cv2.imencode(".pfm", photo_like(20, 30).astype(np.float32) / 255)[1].tobytes())
        # OpenEXR's magic number and some bytes: OpenCV would try it; vitattn refuses EXR.
        (self.dir / "in/c.exr").write_bytes(b"\x76\x2f\x31\x01\x02\x00\x00\x00" + bytes(200))
        frames = [Image.fromarray(photo_like(24, 24, s)).convert("P") for s in range(3)]
        frames[0].save(self.dir / "in/d.gif", save_all=True, append_images=frames[1:], duration=100, loop=0)
        (self.dir / "in/notes.txt").write_text("not an image\n")
        rc, _, err = run(self.dir / "in", "-o", self.dir / "out")
        self.assertEqual(rc, 0, err)
        self.assert_own_lines(err)
        self.assertEqual(sorted(p.name for p in (self.dir / "out").iterdir()), ["a_attn.png", "a_settings.txt", "b_attn.png",
                                                                        "b_settings.txt"])
        self.assertEqual(lines_naming(err, self.dir / "in/c.exr"),
                         [f"warning: {self.dir / 'in/c.exr'}: skipped, format not supported (OpenEXR)"], err)
        self.assertEqual(lines_naming(err, self.dir / "in/d.gif"),
                         [f"warning: {self.dir / 'in/d.gif'}: skipped, format not supported (GIF)"], err)
        self.assertNotIn("notes.txt", err, "other files stay quiet without -v")
        _, _, err = run(self.dir / "in", "-v", "-o", self.dir / "out2")
        self.assertIn(f"debug: {self.dir / 'in/notes.txt'}: skipped, not an image by its extension", err)

        # Named directly they are jobs, and the decoder gives the same verdict from their bytes.
        rc, _, err = run(self.dir / "in/c.exr", self.dir / "in/d.gif", "-o", self.dir / "out3")
        self.assertEqual(rc, 1, err)
        self.assert_own_lines(err)
        for name, fmt in (("c.exr", "OpenEXR"), ("d.gif", "GIF")):
            lines = lines_naming(err, self.dir / "in" / name)
            self.assertEqual(len(lines), 1, err)
            self.assertTrue(lines[0].startswith(f"error: {self.dir / 'in' / name}: format not supported ({fmt}; "
                                                "vitattn reads JPEG, PNG"), lines[0])
            self.assertNotIn("corrupt", lines[0])

    def test_a_symlinked_folder_is_not_followed_and_says_so_under_r(self):
        self.write("elsewhere/far.jpg", photo_like(30, 30))
        self.write("in/near.jpg", photo_like(30, 30))
        (self.dir / "in/linked").symlink_to(self.dir / "elsewhere")
        rc, _, err = run(self.dir / "in", "-r", "-o", self.dir / "out")
        self.assertEqual(rc, 0, err)
        self.assertEqual(lines_naming(err, self.dir / "in/linked"),
                         [f"warning: {self.dir / 'in/linked'}: skipped, a symbolic link to a folder is not followed"],
                         err)
        self.assertEqual(sorted(p.name for p in (self.dir / "out").iterdir()), ["near_attn.png", "near_settings.txt"])

