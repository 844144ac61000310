#!/usr/bin/env python3
"""End-to-end tests of the video module (src/video/video_module.cpp): OpenCV's videoio and the
hundred libraries it pulls in (FFmpeg, GStreamer, …) live in libvitattn_video.so, which the
binary loads only for a batch with a video; without the module, videos fail one line each and
the images are still drawn.

Evidence of what is loaded: the dynamic loader's own trace (LD_DEBUG=files, written to files
by LD_DEBUG_OUTPUT), which lists every library the process opens, at start or by dlopen.
Small inputs (32×32, a 4-frame clip, the seeded model at --img-size 32): seconds in all.

Needs Debian's python3-numpy and python3-opencv (use /usr/bin/python3).
Environment: VITATTN_BIN (the binary). Run: python3 -m pytest tests/e2e/test_video_module.py
"""
import subprocess

import cv2
import numpy as np

from harness import TmpCase, run_process


def write_clip(path, n=4, size=32):
    w = cv2.VideoWriter(str(path), cv2.CAP_FFMPEG, cv2.VideoWriter_fourcc(*"MJPG"), 10.0, (size, size))
    assert w.isOpened(), f"cv2 cannot write MJPG to {path}"
    for t in range(n):
        w.write(np.full((size, size, 3), 40 * t, np.uint8))
    w.release()
    return path


class VideoModule(TmpCase):
    tmp_prefix = "vitattn-vmod-"

    def setUp(self):
        super().setUp()
        self.inputs = self.dir / "in"
        self.inputs.mkdir()
        self.write("in/photo.png", np.random.default_rng(0).integers(0, 256, (32, 32, 3), dtype=np.uint8))

    def vitattn(self, *args, env=None):
        return run_process("--img-size", "32", *args, env=env)

    def loaded_libraries(self, *args):
        """(the CompletedProcess, every library file the dynamic loader opened for the run)."""
        trace = self.dir / "ld-trace"
        p = self.vitattn(*args, env={"LD_DEBUG": "files", "LD_DEBUG_OUTPUT": str(trace)})
        text = "".join(f.read_text(errors="replace") for f in self.dir.glob("ld-trace*"))
        for f in self.dir.glob("ld-trace*"):
            f.unlink()
        self.assertIn("file=", text, "LD_DEBUG=files wrote no trace")
        return p, text

    def test_images_alone_never_load_videoio_and_a_video_does(self):
        p, trace = self.loaded_libraries(self.inputs / "photo.png", "-o", self.dir / "out1")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertTrue((self.dir / "out1" / "photo_attn.png").is_file())
        self.assertNotIn("libopencv_videoio", trace)
        self.assertNotIn("libvitattn_video", trace)
        # The same trace does show them once there is a video: the check above can fail.
        write_clip(self.inputs / "clip.avi")
        p, trace = self.loaded_libraries(self.inputs, "-o", self.dir / "out2")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("libvitattn_video", trace)
        self.assertIn("libopencv_videoio", trace)
        self.assertTrue((self.dir / "out2" / "clip_attn.mp4").is_file() or (self.dir / "out2" / "clip_attn.avi").is_file())

    def test_without_the_module_each_video_fails_one_line_and_images_are_drawn(self):
        write_clip(self.inputs / "clip.avi")
        write_clip(self.inputs / "other.mkv")
        out = self.dir / "out"
        missing = self.dir / "nowhere" / "libvitattn_video.so"
        p = self.vitattn(self.inputs, "-o", out, env={"VITATTN_VIDEO_MODULE": str(missing)})
        self.assertEqual(p.returncode, 1, p.stderr)  # as for any input that failed
        self.assertTrue((out / "photo_attn.png").is_file(), p.stderr)
        self.assertEqual(sorted(f.name for f in out.iterdir()), ["photo_attn.png", "photo_settings.txt"])
        for name in ("clip.avi", "other.mkv"):
            lines = [l for l in p.stderr.splitlines() if name in l]
            self.assertEqual(len(lines), 1, f"{name}: {lines} in\n{p.stderr}")
            self.assertRegex(lines[0], rf"^error: .*{name}: video support is not available: {missing}: cannot open shared object file")

    def test_a_file_that_is_not_the_module_is_refused_with_the_loaders_reason(self):
        write_clip(self.inputs / "clip.avi")
        not_a_module = self.inputs / "photo.png"
        p = self.vitattn(self.inputs / "clip.avi", "-o", self.dir / "out", env={"VITATTN_VIDEO_MODULE": str(not_a_module)})
        self.assertEqual(p.returncode, 1, p.stderr)
        self.assertRegex(p.stderr, rf"clip\.avi: video support is not available: {not_a_module}: .*(ELF|too short)")

    def test_a_module_of_another_version_is_refused(self):
        # A module whose table says version 999: built here from three lines of C.
        source = self.dir / "stale.c"
        source.write_text("struct table { int version; };\n"
                          "static const struct table t = {999};\n"
                          "const struct table* vitattn_video_module(void) { return &t; }\n")
        stale = self.dir / "libvitattn_video.so"
        subprocess.run(["cc", "-shared", "-fPIC", "-o", str(stale), str(source)], check=True)
        write_clip(self.inputs / "clip.avi")
        p = self.vitattn(self.inputs / "clip.avi", "-o", self.dir / "out", env={"VITATTN_VIDEO_MODULE": str(stale)})
        self.assertEqual(p.returncode, 1, p.stderr)
        self.assertRegex(p.stderr, rf"clip\.avi: video support is not available: {stale} is of version 999, "
                                   r"this vitattn needs version \d+")
