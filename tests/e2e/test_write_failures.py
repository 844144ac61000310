"""A write that fails is an error, said once, and the exit status says what the README says.

- Standard output on /dev/full (every write fails with ENOSPC): `--log-json -` and `--top`
  exit 1 with one error line naming standard output; the images are still written.
- The log on a full file system: exit 1, one error line naming the log; the images written.
- A nearly full disk: a small tmpfs mounted for the test (root only; the test skips without
  it, fails under CI=true) holding the output folder, filled to leave 0, 1, 2, … pages free.
  At every level the run exits 0 (everything written) or 1 (what failed named on error
  lines, and the summary line), never 2, which means that nothing was written.
Environment: VITATTN_BIN.
"""
import contextlib
import json
import os
import subprocess
import tempfile
import unittest
from pathlib import Path

from harness import REPO, TmpCase, need, photo_like, run, temporaries

MODEL = REPO / "models" / "vit_cifar10_tintn.safetensors"
PAGE = 4096


def error_lines(err):
    return [line for line in err.splitlines() if line.startswith("error:")]


@contextlib.contextmanager
def small_tmpfs(kib):
    """A tmpfs of `kib` KiB mounted on a temporary folder; skips the test when it cannot be mounted."""
    folder = tempfile.mkdtemp(prefix="vitattn-full-")
    p = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={kib}k,mode=0755", "tmpfs", folder],
                       capture_output=True, text=True)
    if p.returncode != 0:
        os.rmdir(folder)
        need(False, f"cannot mount a tmpfs (needs root): {p.stderr.strip()}")
    try:
        yield Path(folder)
    finally:
        subprocess.run(["umount", folder], check=True)
        os.rmdir(folder)


def fill(folder, pages_free):
    """Fills the file system of `folder` up to `pages_free` free pages; returns the filler."""
    filler = folder / "filler"
    fd = os.open(filler, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        while os.write(fd, b"\0" * PAGE) == PAGE:
            pass
    except OSError:  # ENOSPC: full
        pass
    finally:
        os.close(fd)
    size = filler.stat().st_size
    os.truncate(filler, max(0, size - pages_free * PAGE))
    st = os.statvfs(folder)
    assert st.f_bavail * st.f_frsize // PAGE == pages_free, (st.f_bavail, pages_free)
    return filler


class WriteFailures(TmpCase):
    tmp_prefix = "vitattn-write-failures-"

    def setUp(self):
        super().setUp()
        for i in range(3):
            self.write(f"in/a{i}.png", photo_like(40, 48, seed=i))

    def overlays(self, out):
        return sorted(p.name for p in Path(out).glob("*_attn.*"))

    def assert_one_error(self, err, *words):
        lines = error_lines(err)
        self.assertEqual(len(lines), 1, err)
        for w in words:
            self.assertIn(w, lines[0])

    def test_log_to_standard_output_on_dev_full(self):
        with open("/dev/full", "w") as full:
            rc, _, err = run(self.dir / "in", "-o", self.dir / "out", "--log-json", "-", stdout=full)
        self.assertEqual(rc, 1, err)
        self.assert_one_error(err, "standard output", "No space left on device")
        self.assertIn("3 written", err, "the summary line")
        self.assertEqual(len(self.overlays(self.dir / "out")), 3)

    def test_top_classes_to_standard_output_on_dev_full(self):
        with open("/dev/full", "w") as full:
            rc, _, err = run("--model", MODEL, "--top", "1", self.dir / "in", "-o", self.dir / "out", stdout=full)
        self.assertEqual(rc, 1, err)
        self.assert_one_error(err, "standard output", "No space left on device")
        self.assertEqual(len(self.overlays(self.dir / "out")), 3)
        self.assertTrue((self.dir / "out" / "predictions.csv").is_file())

    def test_log_on_a_full_file_system(self):
        with small_tmpfs(64) as mnt:
            fill(mnt, 0)
            rc, _, err = run(self.dir / "in", "-o", self.dir / "out", "--log-json", mnt / "log.jsonl",
                             stdout=subprocess.DEVNULL)
        self.assertEqual(rc, 1, err)
        self.assert_one_error(err, "log.jsonl", "No space left on device")
        self.assertIn("3 written", err, "the summary line")
        self.assertEqual(len(self.overlays(self.dir / "out")), 3)

    def test_a_nearly_full_disk_never_exits_2(self):
        """The brief's case and its neighbours: one image (and a batch) with --top and JPEG
        overlays on a disk filled to leave 0…7 pages free."""
        seen = set()
        for inputs in ([self.dir / "in" / "a0.png"], [self.dir / "in"]):
            for free in range(8):
                with small_tmpfs(128) as mnt:
                    out = mnt / "out"
                    out.mkdir()
                    fill(mnt, free)
                    rc, _, err = run("--model", MODEL, "--top", "1", "--format", "jpg", *inputs, "-o", out,
                                     stdout=subprocess.DEVNULL)
                    what = f"{len(inputs)} input(s), {free} pages free: exit {rc}\n{err}"
                    seen.add(rc)
                    self.assertIn(rc, (0, 1), what)
                    self.assertTrue(any(" written to " in line for line in err.splitlines()), f"no summary; {what}")
                    if rc == 1:
                        self.assertGreaterEqual(len(error_lines(err)), 1, what)
                        for line in error_lines(err):
                            self.assertIn("No space left on device", line, what)
                    else:
                        self.assertEqual(error_lines(err), [], what)
                        self.assertTrue((out / "predictions.csv").is_file(), what)
                    self.assertEqual(temporaries(out), [], f"temporaries left; {what}")
        self.assertEqual(seen, {0, 1}, "the levels span a failed and a complete run")

    def test_an_image_that_failed_on_a_full_disk_leaves_no_outputs_and_no_parts(self):
        """An image whose outputs did not all fit leaves none: not its part of predictions.csv
        (written before the overlay), nor anything else under its name; its log line says
        "outputs":[], and the images written have every output."""
        failed_images = 0
        for free in range(12):
            with small_tmpfs(128) as mnt:
                out = mnt / "out"
                out.mkdir()
                fill(mnt, free)
                log = self.dir / f"log{free}.jsonl"
                rc, _, err = run("--model", MODEL, "--top", "1", "--format", "jpg", self.dir / "in", "-o", out,
                                 "--log-json", log, stdout=subprocess.DEVNULL)
                what = f"{free} pages free: exit {rc}\n{err}"
                self.assertIn(rc, (0, 1), what)
                left = sorted(p.name for p in out.iterdir())
                for line in log.read_text().splitlines():
                    entry = json.loads(line)
                    stem = Path(entry["path"]).stem
                    mine = [name for name in left if name.startswith(stem + "_")]
                    if entry["status"] == "failed":
                        failed_images += 1
                        self.assertEqual(entry["outputs"], [], what)
                        self.assertEqual(mine, [], f"{stem} failed and left files; {what}")
                    else:
                        self.assertEqual(sorted(Path(o).name for o in entry["outputs"]), mine, what)
                self.assertEqual(temporaries(out), [], f"temporaries left; {what}")
        self.assertGreater(failed_images, 0, "no level made an image fail: nothing was checked")


if __name__ == "__main__":
    unittest.main()
