#!/usr/bin/env python3
"""Hardening tests: big batches from anywhere keep working, lose nothing, stay bounded in
memory and never write outside the output folder.

- Interrupt: SIGINT / SIGTERM in a batch of 300 images stops in well under a few seconds
  with 130 / 143, whole PNGs only, no temporaries, and a summary; --skip-existing resumes.
- OutputSafety: names from odd input paths stay below -o; symlinks inside the output
  folder are refused, never followed; unrelated files there are left byte for byte.
- Corpus: good photos mixed with every kind of bad file; one error line per bad file,
  peak RSS measured and bounded.
- Concurrency: -j 16 on this machine's cores, 200 small images, and one 8000x8000 image
  among small ones all give the same bytes as -j 1.

Needs Debian's python3-numpy, python3-opencv and python3-pil (use /usr/bin/python3).
Environment: VITATTN_BIN (the binary), VITATTN_SHARED (../shared; its photos join the
corpus when present, generated ones stand in otherwise). Prints the figures it measures
(python3 -m pytest -s tests/e2e/test_hardening.py shows them); skips when a module it needs
is missing (fails under CI=true).
"""
import io
import os
import re
import signal
import stat
import struct
import subprocess
import tempfile
import threading
import time
from pathlib import Path

from harness import BIN, PHOTOS, TmpCase, exif_rotated_jpeg, need, photo_like, temporaries

try:
    import cv2
    import numpy as np
    from PIL import Image
except ImportError as e:  # nothing here can run without them
    need(False, f"hardening: {e} (install python3-numpy python3-opencv python3-pil: scripts/install-deps.sh)")

IS_ROOT = os.geteuid() == 0
# Root reads files whatever their permission bits (CAP_DAC_OVERRIDE). Run as root (as CI
# does), the binary is started without that capability, so a chmod 000 file is refused as it
# is for any user (setpriv is util-linux's, in every Debian).
AS_PLAIN_OWNER = ["setpriv", "--bounding-set=-dac_override,-dac_read_search"] if IS_ROOT else []
RSS_LIMIT_MB = 500


def default_sigint():
    # A background job of a non-interactive shell (ctest under `cmd &`) inherits SIGINT
    # ignored, and vitattn rightly leaves an ignored SIGINT alone: start the child with the
    # default disposition, as an interactive shell would.
    signal.signal(signal.SIGINT, signal.SIG_DFL)


GNU_TIME = "/usr/bin/time"  # Debian's `time` package (scripts/install-deps.sh)


def run_measured(*args, cwd=None, timeout=300):
    """Runs the binary; returns (status, stdout, stderr, peak RSS in MB, seconds).

    The peak RSS comes from GNU time, a small C program between us and the binary:
    Linux carries the RSS of the process that execs over into the new program's
    ru_maxrss, so wait4 on a child forked from this (large) Python process would report
    at least Python's own size. Without /usr/bin/time that upper bound is what we get,
    and the figure says so."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err, \
            tempfile.NamedTemporaryFile("r") as rss_file:
        cmd = [*AS_PLAIN_OWNER, BIN, *map(str, args)]
        gnu_time = os.access(GNU_TIME, os.X_OK)
        if gnu_time:
            cmd = [GNU_TIME, "-f", "%M", "-o", rss_file.name, *cmd]
        start = time.monotonic()
        p = subprocess.Popen(cmd, cwd=cwd, stdout=out, stderr=err, stdin=subprocess.DEVNULL,
                             preexec_fn=default_sigint, start_new_session=True)
        timer = threading.Timer(timeout, lambda: os.killpg(p.pid, signal.SIGKILL))
        timer.start()
        try:
            _, status, usage = os.wait4(p.pid, 0)
        finally:
            timer.cancel()
        p.returncode = os.waitstatus_to_exitcode(status)
        seconds = time.monotonic() - start
        if gnu_time:
            rss_mb = int(rss_file.read().split()[-1]) / 1024.0  # "Command exited with ..." may come first
        else:
            rss_mb = usage.ru_maxrss / 1024.0
            print(f"  ({GNU_TIME} missing: RSS figures are upper bounds that include this Python process)")
        out.seek(0)
        err.seek(0)
        return (p.returncode, out.read().decode(), err.read().decode(), rss_mb, seconds)


def png_size(path):
    """(height, width) from a PNG's IHDR, without decoding it."""
    with open(path, "rb") as f:
        head = f.read(24)
    assert head[:8] == b"\x89PNG\r\n\x1a\n", path
    w, h = struct.unpack(">II", head[16:24])
    return h, w


def error_lines(err):
    return [line for line in err.splitlines() if line.startswith("error:")]


def snapshot(folder):
    """Every file below `folder` (not following links): bytes, mtime and inode."""
    out = {}
    for p in sorted(Path(folder).rglob("*")):
        st = p.lstat()
        if stat.S_ISLNK(st.st_mode):
            out[str(p)] = ("link", os.readlink(p), st.st_mtime_ns)
        elif stat.S_ISREG(st.st_mode):
            out[str(p)] = (p.read_bytes(), st.st_mtime_ns, st.st_ino)
        else:
            out[str(p)] = ("dir",)
    return out


class Base(TmpCase):
    tmp_prefix = "vitattn-hard-"


# --- 1 and 2: interruption and resuming ------------------------------------------------
class Interrupt(Base):
    N = 300
    SHAPE = (480, 640)

    @classmethod
    def setUpClass(cls):
        cls.inputs_tmp = tempfile.TemporaryDirectory(prefix="vitattn-hard-in-")
        cls.inputs = Path(cls.inputs_tmp.name)
        rng = np.random.default_rng(1)
        base = cv2.GaussianBlur(rng.integers(0, 256, cls.SHAPE + (3,), dtype=np.uint8), (0, 0), 4)
        for i in range(cls.N):
            cv2.imwrite(str(cls.inputs / f"img{i:03d}.jpg"), np.roll(base, 7 * i, axis=1))

    @classmethod
    def tearDownClass(cls):
        cls.inputs_tmp.cleanup()

    def start(self, out, *extra):
        return subprocess.Popen([BIN, str(self.inputs), "-o", str(out), "-j", "2", *extra], stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True,
                                preexec_fn=default_sigint)

    def wait_for_outputs(self, p, out, count=1, timeout=60):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and p.poll() is None:
            if out.is_dir() and sum(1 for f in out.iterdir() if f.name.endswith("_attn.png")) >= count:
                return
            time.sleep(0.005)
        self.fail(f"no output appeared (status {p.poll()})")

    def interrupt(self, sig, out):
        """Starts the batch, sends `sig` once outputs appear; returns (status, stderr, seconds to stop, written)."""
        p = self.start(out)
        self.wait_for_outputs(p, out, count=10)
        sent = time.monotonic()
        p.send_signal(sig)
        try:
            _, err = p.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            p.kill()
            p.communicate()
            self.fail(f"{sig.name}: still running 30 s after the signal")
        return p.returncode, err, time.monotonic() - sent

    def check_interrupted(self, sig, status, err, stop_seconds, out):
        name = sig.name
        self.assertEqual(status, 128 + sig, f"{name}: exit status\n{err}")
        self.assertLess(stop_seconds, 3.0, f"{name}: took {stop_seconds:.2f} s to stop")
        self.assertEqual(temporaries(out), [], f"{name}: temporary files left")
        pngs = sorted(out.glob("*_attn.png"))
        for png in pngs:  # whole files only: each decodes, at the input's size
            img = cv2.imread(str(png), cv2.IMREAD_UNCHANGED)
            self.assertIsNotNone(img, f"{png.name} does not decode")
            self.assertEqual(img.shape, self.SHAPE + (3,), png.name)
        self.assertEqual(sorted(p.name for p in out.iterdir()),
                         sorted([p.name for p in pngs] + [p.name.replace("_attn.png", "_settings.txt") for p in pngs]),
                         "nothing but overlays and their settings records")
        m = re.search(rf"interrupted by {name} after [0-9.]+ s: (\d+) of {self.N} images written to .*?, "
                      rf"(\d+) failed, (\d+) not started", err)
        self.assertTrue(m, f"{name}: no summary line in:\n{err}")
        written, failed, not_started = map(int, m.groups())
        self.assertEqual(written, len(pngs), "the summary counts what is on disk")
        self.assertEqual(failed, 0)
        self.assertEqual(written + failed + not_started, self.N)
        self.assertGreater(not_started, 0, "the batch stopped early, not at the end")
        print(f"  {name}: stopped {stop_seconds * 1000:.0f} ms after the signal; {written} written, "
              f"{not_started} not started (of {self.N}, -j 2)")
        return written

    def test_sigint_stops_promptly_with_whole_files_and_a_summary(self):
        out = self.dir / "out"
        status, err, secs = self.interrupt(signal.SIGINT, out)
        self.check_interrupted(signal.SIGINT, status, err, secs, out)

    def test_sigterm_stops_promptly_with_whole_files_and_a_summary(self):
        out = self.dir / "out"
        status, err, secs = self.interrupt(signal.SIGTERM, out)
        self.check_interrupted(signal.SIGTERM, status, err, secs, out)

    def test_second_signal_ends_at_once_and_leaves_no_temporaries(self):
        # A batch of large images, so that the first signal's "finish the image in hand"
        # still has work to do when the second arrives.
        big = photo_like(400, 400)
        for i in range(6):
            self.write(f"big/b{i}.jpg", cv2.resize(np.roll(big, 9 * i, axis=0), (4000, 4000)))
        out = self.dir / "out"
        p = subprocess.Popen([BIN, str(self.dir / "big"), "-o", str(out), "-j", "2", "-v"], stderr=subprocess.PIPE,
                             stdin=subprocess.DEVNULL, text=True, preexec_fn=default_sigint)
        # The workers are busy once the batch has announced itself ("-v": "6 images, 2 workers").
        line = ""
        while "workers" not in line:
            line = p.stderr.readline()
            self.assertTrue(line, "the batch did not start")
        time.sleep(0.1)
        p.send_signal(signal.SIGINT)
        time.sleep(0.3)  # two signals close together can merge into one (they do not queue)
        self.assertIsNone(p.poll(), "the images in hand were still being finished")
        sent = time.monotonic()
        p.send_signal(signal.SIGINT)
        _, err = p.communicate(timeout=30)
        secs = time.monotonic() - sent
        self.assertEqual(p.returncode, -signal.SIGINT, f"killed by the second signal\n{err}")
        self.assertLess(secs, 1.0)
        self.assertEqual(temporaries(out), [])
        for png in out.glob("*_attn.png"):
            self.assertEqual(png_size(png), (4000, 4000))
            self.assertIsNotNone(cv2.imread(str(png)), png.name)
        print(f"  second SIGINT: gone {secs * 1000:.0f} ms after it")

    def test_skip_existing_resumes_an_interrupted_batch(self):
        out = self.dir / "out"
        status, err, secs = self.interrupt(signal.SIGINT, out)
        first = self.check_interrupted(signal.SIGINT, status, err, secs, out)
        before = {p.name: (p.stat().st_ino, p.stat().st_mtime_ns) for p in out.iterdir()}
        rc, _, err, _, seconds = run_measured(self.inputs, "-o", out, "-j", "2", "--skip-existing")
        self.assertEqual(rc, 0, err)
        m = re.search(rf"{self.N} images in [0-9.]+ s: (\d+) written to .*, (\d+) skipped \(already done\)", err)
        self.assertTrue(m, err)
        written, skipped = map(int, m.groups())
        self.assertEqual(skipped, first, "every finished image skipped")
        self.assertEqual(written, self.N - first, "only the missing ones done")
        after = {p.name: (p.stat().st_ino, p.stat().st_mtime_ns) for p in out.iterdir()}
        self.assertEqual(len(after), 2 * self.N, "each image's overlay and settings record")
        for name, ident in before.items():
            self.assertEqual(after[name], ident, f"{name} was rewritten")
        for png in out.glob("*_attn.png"):
            self.assertEqual(png_size(png), self.SHAPE)
        print(f"  resume: {skipped} skipped, {written} written in {seconds:.2f} s")
        # Once more: nothing left to do, nothing touched.
        rc, _, err, _, _ = run_measured(self.inputs, "-o", out, "--skip-existing")
        self.assertEqual(rc, 0, err)
        self.assertIn(f"0 written to {out}, {self.N} skipped (already done)", err)
        self.assertEqual({p.name: (p.stat().st_ino, p.stat().st_mtime_ns) for p in out.iterdir()}, after)

    def test_skip_existing_with_save_attention_needs_every_file(self):
        self.write("in/a.png", photo_like(40, 50, 1))
        self.write("in/b.png", photo_like(40, 50, 2))
        out = self.dir / "out"
        rc, _, err, _, _ = run_measured(self.dir / "in/a.png", "-o", out)  # a: PNG only, no .npy
        self.assertEqual(rc, 0, err)
        png_a = (out / "a_attn.png").stat().st_ino
        rc, _, err, _, _ = run_measured(self.dir / "in", "-o", out, "--save-attention", "--skip-existing")
        self.assertEqual(rc, 0, err)
        self.assertIn("2 written", err)
        self.assertNotEqual((out / "a_attn.png").stat().st_ino, png_a, "a lacked its .npy files: done again")
        for f in ("a_attn.npy", "a_cls.npy", "b_attn.npy", "b_cls.npy"):
            self.assertTrue((out / f).is_file(), f)


# --- 3: output safety ----------------------------------------------------------------
class OutputSafety(Base):
    def test_names_from_odd_input_paths_stay_in_the_output_folder(self):
        self.write("x/img.png", photo_like(30, 40, 1))
        self.write("a/b/two.jpg", photo_like(30, 40, 2))
        self.write("abs/three.png", photo_like(30, 40, 3))
        self.write("tree/s1/s2/deep.png", photo_like(30, 40, 4))
        self.write("tree/..dots/odd.png", photo_like(30, 40, 5))
        (self.dir / "work").mkdir()
        before = snapshot(self.dir)
        rc, _, err, _, _ = run_measured("../x/img.png", "../a/b/../b/two.jpg", self.dir / "abs/three.png",
                                        "../tree", "-r", "-o", "out", cwd=self.dir / "work")
        self.assertEqual(rc, 0, err)
        created = sorted(set(snapshot(self.dir)) - set(before))
        out = self.dir / "work/out"
        self.assertEqual([str(Path(p).relative_to(out)) for p in created],
                         [".", "..dots", "..dots/odd_attn.png", "..dots/odd_settings.txt", "img_attn.png",
                          "img_settings.txt", "s1", "s1/s2", "s1/s2/deep_attn.png", "s1/s2/deep_settings.txt",
                          "three_attn.png", "three_settings.txt", "two_attn.png", "two_settings.txt"])
        self.assertEqual({k: v for k, v in snapshot(self.dir).items() if k in before}, before, "inputs untouched")

    def test_symlinked_sub_folder_in_the_output_is_refused(self):
        self.write("in/top.png", photo_like(30, 40, 1))
        self.write("in/sub/x.png", photo_like(30, 40, 2))
        self.write("in/sub/deeper/y.png", photo_like(30, 40, 3))
        (self.dir / "elsewhere").mkdir()
        (self.dir / "out").mkdir()
        (self.dir / "out/sub").symlink_to(self.dir / "elsewhere")
        rc, _, err, _, _ = run_measured("in", "-r", "-o", "out", "-j", "2", cwd=self.dir)
        self.assertEqual(rc, 1, err)
        self.assertEqual(list((self.dir / "elsewhere").iterdir()), [], "written through the link")
        self.assertTrue((self.dir / "out/top_attn.png").is_file())
        self.assertTrue((self.dir / "out/sub").is_symlink())
        errors = error_lines(err)
        self.assertEqual(len(errors), 2, err)
        for f in ("in/sub/x.png", "in/sub/deeper/y.png"):
            lines = [l for l in errors if l.startswith(f"error: {f}: out/sub in the output folder is a symbolic link")]
            self.assertEqual(len(lines), 1, f"{f}:\n{err}")

    def test_symlink_at_an_output_name_is_refused_and_its_target_kept(self):
        self.write("in/img.png", photo_like(30, 40, 1))
        self.write("in/ok.png", photo_like(30, 40, 2))
        victim = self.dir / "etc-something"
        victim.write_text("precious\n")
        os.utime(victim, ns=(1_000_000_000, 1_000_000_000))
        (self.dir / "out").mkdir()
        (self.dir / "out/img_attn.png").symlink_to(victim)
        (self.dir / "out/ok_attn.npy").symlink_to(self.dir / "nowhere/new-file")  # dangling, --save-attention
        rc, _, err, _, _ = run_measured("in", "-o", "out", "--save-attention", cwd=self.dir)
        self.assertEqual(rc, 1, err)
        self.assertEqual(victim.read_text(), "precious\n")
        self.assertEqual(victim.stat().st_mtime_ns, 1_000_000_000)
        self.assertTrue((self.dir / "out/img_attn.png").is_symlink(), "the link itself is kept")
        self.assertTrue((self.dir / "out/ok_attn.npy").is_symlink())
        self.assertFalse((self.dir / "nowhere").exists())
        errors = error_lines(err)
        self.assertEqual(len(errors), 2, err)
        self.assertIn("error: in/img.png: out/img_attn.png is a symbolic link; not replaced", err)
        self.assertIn("error: in/ok.png: out/ok_attn.npy is a symbolic link; not replaced", err)
        self.assertEqual(temporaries(self.dir / "out"), [])

    def test_unrelated_files_in_the_output_folder_are_never_touched(self):
        self.write("in/a.png", photo_like(30, 40, 1))
        self.write("in/sub/b.png", photo_like(30, 40, 2))
        out = self.dir / "out"
        (out / "sub").mkdir(parents=True)
        unrelated = {
            "notes.txt": b"my notes\n",
            ".a_attn.png.tmp-99999-0": b"looks like a temporary of another vitattn, is not ours",
            ".b.png.tmp-1234": b"another tool's temporary",
            "other_attn.png": cv2.imencode(".png", photo_like(5, 5))[1].tobytes(),
            "a.png": b"same name as an input, other folder",
            "sub/keep.bin": os.urandom(100),
        }
        for name, data in unrelated.items():
            (out / name).write_bytes(data)
            os.utime(out / name, ns=(2_000_000_000, 2_000_000_000))
        before = snapshot(out)
        for extra in ((), ("--skip-existing",), ("--save-attention",)):
            rc, _, err, _, _ = run_measured("in", "-r", "-o", "out", *extra, cwd=self.dir)
            self.assertEqual(rc, 0, err)
        after = snapshot(out)
        for name in unrelated:
            self.assertEqual(after[str(out / name)], before[str(out / name)], name)
        self.assertTrue((out / "a_attn.png").is_file() and (out / "sub/b_attn.png").is_file())


# --- 4: the bad-input corpus -----------------------------------------------------------
def png_with_ihdr_size(w, h):
    ok, buf = cv2.imencode(".png", np.zeros((1, 1, 3), np.uint8))
    png = bytearray(buf.tobytes())
    png[16:24] = struct.pack(">II", w, h)  # no pixel data for that size, and a wrong CRC
    return bytes(png)


def jpeg_with_sof_size(w, h):
    ok, buf = cv2.imencode(".jpg", np.zeros((8, 8, 3), np.uint8))
    jpg = bytearray(buf.tobytes())
    i = jpg.index(b"\xff\xc0")  # baseline SOF0: length(2) precision(1) height(2) width(2)
    jpg[i + 5:i + 9] = struct.pack(">HH", h, w)
    return bytes(jpg)


def pil_bytes(img, fmt, **kw):
    b = io.BytesIO()
    img.save(b, fmt, **kw)
    return b.getvalue()


class Corpus(Base):
    def build(self):
        """Returns ({good input name: expected (h, w)}, {bad input name: expected message part}, extra inputs)."""
        c = self.dir / "corpus"
        (c / "sub").mkdir(parents=True)
        good, bad = {}, {}

        photos = PHOTOS[:4]
        if photos:
            for p in photos:
                (c / p.name).write_bytes(p.read_bytes())
            print(f"  corpus: {len(photos)} photos from {photos[0].parent}")
        else:
            for i in range(4):
                self.write(f"corpus/photo{i}.jpg", photo_like(480, 640, i))
            print("  corpus: no ../shared/images, 4 generated photos stand in")
        for p in c.iterdir():
            if p.is_file():
                good[p.name] = cv2.imread(str(p)).shape[:2]

        def add_good(name, img):
            self.write(f"corpus/{name}", img)
            good[name] = cv2.imread(str(c / name), cv2.IMREAD_COLOR).shape[:2]

        add_good("one_pixel.png", np.full((1, 1, 3), 77, np.uint8))
        add_good("strip_1x20000.png", photo_like(1, 20000))
        add_good("grey.png", cv2.cvtColor(photo_like(90, 120), cv2.COLOR_BGR2GRAY))
        add_good("deep16.png", photo_like(60, 80).astype(np.uint16) * 257)
        add_good("rgba.png", cv2.cvtColor(photo_like(64, 48), cv2.COLOR_BGR2BGRA))
        add_good("sub/nested.jpg", photo_like(100, 70))
        (c / "palette.png").write_bytes(pil_bytes(Image.fromarray(photo_like(50, 70)[:, :, ::-1]).convert("P"), "PNG"))
        (c / "cmyk.jpg").write_bytes(pil_bytes(Image.fromarray(photo_like(60, 90)[:, :, ::-1]).convert("CMYK"), "JPEG"))
        (c / "exif_rotated.jpg").write_bytes(exif_rotated_jpeg(photo_like(60, 100), 6))
        (c / "png_named.jpg").write_bytes(cv2.imencode(".png", photo_like(45, 55))[1].tobytes())
        for name in ("palette.png", "cmyk.jpg", "exif_rotated.jpg", "png_named.jpg"):
            img = cv2.imread(str(c / name), cv2.IMREAD_COLOR)
            self.assertIsNotNone(img, f"cv2 reads the generated {name}")
            good[name] = img.shape[:2]
        self.assertEqual(Image.open(c / "cmyk.jpg").mode, "CMYK")
        self.assertEqual(Image.open(c / "palette.png").mode, "P")
        self.assertEqual(good["exif_rotated.jpg"], (100, 60), "cv2 applies the EXIF rotation")

        (c / "corrupt.jpg").write_bytes(b"\xff\xd8\xff\xe0" + os.urandom(3000))
        bad["corrupt.jpg"] = ""
        jpg = cv2.imencode(".jpg", photo_like(200, 200, 3))[1].tobytes()
        (c / "truncated.jpg").write_bytes(jpg[: len(jpg) // 2])
        bad["truncated.jpg"] = "JPEG data is truncated"
        png = cv2.imencode(".png", photo_like(200, 200, 4))[1].tobytes()
        (c / "truncated.png").write_bytes(png[: len(png) // 2])
        bad["truncated.png"] = ""
        (c / "zero.png").write_bytes(b"")
        bad["zero.png"] = "file is empty"
        (c / "text.png").write_text("plain text with an image extension\n")
        bad["text.png"] = "not a readable image"
        (c / "huge_header.png").write_bytes(png_with_ihdr_size(60000, 60000))
        bad["huge_header.png"] = "image is 60000x60000 (3600.0 MP), over the pixel limit"
        (c / "huge_header.jpg").write_bytes(jpeg_with_sof_size(65000, 65000))
        bad["huge_header.jpg"] = "image is 65000x65000"
        (c / "sub/loop.png").symlink_to("loop.png")  # a link to itself
        bad["sub/loop.png"] = "Too many levels of symbolic links"
        (c / "sub/up").symlink_to("..")  # a folder loop for -r: must not be walked
        (c / "sub/dangling.jpg").symlink_to("nothing-here.jpg")
        bad["sub/dangling.jpg"] = "No such file or directory"
        self.write("corpus/unreadable.jpg", photo_like(30, 30))
        (c / "unreadable.jpg").chmod(0)
        bad["unreadable.jpg"] = "Permission denied"
        (c / "not_an_image.txt").write_text("skipped quietly in a folder\n")
        # A FIFO named like an image, given by name: opening it must not wait for a writer.
        os.mkfifo(self.dir / "pipe.png")
        return good, bad, [self.dir / "pipe.png"]

    def test_bad_input_corpus(self):
        good, bad, extra = self.build()
        out = self.dir / "out"
        rc, _, err, rss, secs = run_measured(self.dir / "corpus", *extra, "-r", "-j", "2", "-o", out, timeout=120)
        print(f"  corpus: {len(good)} good + {len(bad) + len(extra)} bad files, -j 2: {secs:.2f} s, "
              f"peak RSS {rss:.1f} MB")
        self.assertEqual(rc, 1, err)
        for name, shape in good.items():
            png = out / Path(name).parent / f"{Path(name).stem}_attn.png"
            self.assertTrue(png.is_file(), f"{name}: no overlay\n{err}")
            self.assertEqual(png_size(png), shape, name)
            self.assertNotIn(Path(name).name, "\n".join(error_lines(err)), f"{name} reported as bad")
        errors = error_lines(err)
        for name, what in bad.items():
            lines = [l for l in errors if l.startswith(f"error: {self.dir / 'corpus' / name}: ")]
            self.assertEqual(len(lines), 1, f"{name}: expected one error line in:\n{err}")
            self.assertIn(what, lines[0], name)
            self.assertFalse((out / Path(name).parent / f"{Path(name).stem}_attn.png").exists(), name)
        lines = [l for l in errors if l.startswith(f"error: {self.dir / 'pipe.png'}: is not a regular file")]
        self.assertEqual(len(lines), 1, err)
        self.assertEqual(len(errors), len(bad) + len(extra), f"one error line per bad file, nothing else:\n{err}")
        self.assertNotIn("not_an_image.txt", err)
        self.assertFalse((out / "sub/up").exists(), "the folder loop was not walked")
        self.assertEqual(temporaries(out), [])
        self.assertLess(rss, RSS_LIMIT_MB)

    def test_huge_headers_alone_stay_small(self):
        (self.dir / "huge.png").write_bytes(png_with_ihdr_size(60000, 60000))
        (self.dir / "huge.jpg").write_bytes(jpeg_with_sof_size(65000, 65000))
        # Refused from the header under the default --max-pixels; with the limit raised the
        # PNG still fails in the decoder before any pixel buffer is filled.
        for name, limit in (("huge.png", ()), ("huge.jpg", ()), ("huge.png", ("--max-pixels", "5000000000"))):
            rc, _, err, rss, _ = run_measured(self.dir / name, "-o", self.dir / "out", *limit, timeout=120)
            print(f"  {name} {' '.join(limit) or '(default --max-pixels)'}: peak RSS {rss:.1f} MB")
            self.assertEqual(rc, 1, err)
            self.assertEqual(len(error_lines(err)), 1, err)
            self.assertTrue(error_lines(err)[0].startswith(f"error: {self.dir / name}: "), err)
            self.assertLess(rss, RSS_LIMIT_MB, name)
        self.assertEqual(list((self.dir / "out").iterdir()), [])


# --- 5: concurrency --------------------------------------------------------------------
class Concurrency(Base):
    def same_bytes(self, a, b):
        fa = sorted(p.relative_to(a) for p in a.rglob("*") if p.is_file())
        fb = sorted(p.relative_to(b) for p in b.rglob("*") if p.is_file())
        self.assertEqual(fa, fb)
        for rel in fa:
            self.assertEqual((a / rel).read_bytes(), (b / rel).read_bytes(), str(rel))
        return len(fa)

    def run_both(self, inputs, label, n, *extra):
        times = {}
        for jobs in ("1", "16"):
            rc, _, err, rss, secs = run_measured(inputs, "-r", "-j", jobs, "-o", self.dir / f"out{jobs}", *extra)
            self.assertEqual(rc, 0, err)
            self.assertIn(f"{n} images in", err)
            self.assertEqual(temporaries(self.dir / f"out{jobs}"), [])
            times[jobs] = (secs, rss)
        files = self.same_bytes(self.dir / "out1", self.dir / "out16")
        print(f"  {label}: {n} images, -j 1 {times['1'][0]:.2f} s ({times['1'][1]:.0f} MB), "
              f"-j 16 on {os.cpu_count()} cores {times['16'][0]:.2f} s ({times['16'][1]:.0f} MB); "
              f"{files} files identical")

    def test_many_small_images_with_more_workers_than_cores(self):
        # 200 images: each of the 16 workers takes a dozen, sharing 2 cores (1,000 took CI 5× as long for no more)
        rng = np.random.default_rng(5)
        base = cv2.GaussianBlur(rng.integers(0, 256, (48, 64, 3), dtype=np.uint8), (0, 0), 2)
        for i in range(200):
            sub = f"d{i % 10}"
            (self.dir / "in" / sub).mkdir(parents=True, exist_ok=True)
            cv2.imwrite(str(self.dir / "in" / sub / f"s{i:04d}.png"), np.roll(base, i, axis=1))
        self.run_both(self.dir / "in", "small batch", 200)
        self.assertEqual(len(list((self.dir / "out16").rglob("*_attn.png"))), 200)

    def test_one_very_large_image_among_small_ones(self):
        big = cv2.resize(photo_like(500, 500, 9), (8000, 8000), interpolation=cv2.INTER_LINEAR)
        self.write("in/big.jpg", big, (cv2.IMWRITE_JPEG_QUALITY, 85))
        del big
        for i in range(60):
            self.write(f"in/small{i:02d}.png", photo_like(60, 80, i))
        self.run_both(self.dir / "in", "one 8000x8000 among 60 small", 61, "--save-attention")
        self.assertEqual(png_size(self.dir / "out16/big_attn.png"), (8000, 8000))

