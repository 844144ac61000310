#!/usr/bin/env python3
"""End-to-end tests of splitting a batch over machines: --shard K/N and auto, --files-from
(lines, -0, standard input, missing files) and --log-json (one valid JSON line per input,
also when the run is stopped).

The shard of each input is predicted here by the test's own FNV-1a 64 + fmix64, written from
the algorithm in src/core/shard.hpp, so the binary is checked against the documented
assignment and not only against itself. Needs Debian's python3-numpy and python3-opencv
(use /usr/bin/python3). Environment: VITATTN_BIN.
Prints a closing line "scale_out: N passed, M failed"; exits 1 on any failure.
"""
import json
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import unittest
from pathlib import Path

import cv2
import numpy as np

import harness
from harness import BIN, photo_like

HERE = Path(__file__).resolve().parent

MASK = (1 << 64) - 1
SLURM_VARS = ("SLURM_ARRAY_TASK_ID", "SLURM_ARRAY_TASK_COUNT", "SLURM_ARRAY_TASK_MIN", "SLURM_ARRAY_TASK_MAX",
              "SLURM_ARRAY_TASK_STEP", "JOB_COMPLETION_INDEX")


def shard_of(key: bytes, n: int) -> int:
    """1 + fmix64(fnv1a64(key)) mod n, in Python's big integers."""
    h = 0xcbf29ce484222325
    for byte in key:
        h = ((h ^ byte) * 0x100000001b3) & MASK
    h ^= h >> 33
    h = (h * 0xff51afd7ed558ccd) & MASK
    h ^= h >> 33
    h = (h * 0xc4ceb9fe1a85ec53) & MASK
    h ^= h >> 33
    return 1 + h % n


# A small seeded model: these tests are about which inputs run where, not about attention.
SMALL_MODEL = ("--img-size", "96", "--dim", "96", "--d-k", "32")
NO_SLURM = {k: None for k in SLURM_VARS}


def run(*args, cwd=None, env_extra=None, stdin=None):
    """harness.run on SMALL_MODEL, with this environment's scheduler variables removed (the
    test's own choice, not CI's) and `env_extra` set; `stdin`: text for its standard input."""
    return harness.run(*args, *SMALL_MODEL, cwd=cwd, env={**NO_SLURM, **(env_extra or {})}, stdin=stdin, timeout=300)


def files(folder):
    """{path relative to folder: bytes} of every file below it."""
    folder = Path(folder)
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def read_log(path):
    """The log's lines, each parsed; fails on a line that is not one JSON object."""
    lines = Path(path).read_bytes().split(b"\n")
    assert lines[-1] == b"", "the log ends with a newline"
    return [json.loads(line) for line in lines[:-1]]


class ScaleOut(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory(prefix="vitattn-scale-")
        self.dir = Path(self.tmp.name)

    def tearDown(self):
        self.tmp.cleanup()

    def image(self, rel, seed=0, size=(36, 44)):
        p = self.dir / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        ok, buf = cv2.imencode(p.suffix, photo_like(*size, seed=seed))
        self.assertTrue(ok)
        p.write_bytes(buf.tobytes())
        return p

    def folder(self, name="in", n=48):
        """n images in a tree, with a stem shared by two files (cat.jpg, cat.png: renamed outputs)."""
        for i in range(n):
            self.image(f"{name}/{'sub/' if i % 3 == 0 else ''}img{i:03d}.png", seed=i)
        self.image(f"{name}/cat.jpg", seed=100)
        self.image(f"{name}/cat.png", seed=101)
        return self.dir / name

    def one_error_line(self, err, *words):
        lines = [l for l in err.splitlines() if l.startswith("error:")]
        self.assertEqual(len(lines), 1, err)
        for w in words:
            self.assertIn(w, lines[0])
        return lines[0]

    # --- --shard K/N --------------------------------------------------------------------
    def test_shards_together_are_the_whole_batch_once_and_byte_identical(self):
        src = self.folder()
        rc, _, err = run(src, "-r", "-o", self.dir / "all", "-j", "2", "--save-attention")
        self.assertEqual(rc, 0, err)
        whole = files(self.dir / "all")
        self.assertGreater(len(whole), 100)
        union = {}
        for k in (1, 2, 3):
            out = self.dir / f"shard{k}"
            rc, _, err = run(src, "-r", "-o", out, "-j", "2", "--save-attention", "--shard", f"{k}/3",
                             "--log-json", self.dir / f"log{k}.jsonl")
            self.assertEqual(rc, 0, err)
            part = files(out)
            self.assertGreater(len(part), 0, f"shard {k} got nothing")
            self.assertFalse(set(part) & set(union), f"shard {k} repeats another shard's outputs")
            union.update(part)
            # The documented hash, computed here, says which inputs this shard takes.
            taken = sorted(Path(l["path"]).relative_to(src).as_posix() for l in read_log(self.dir / f"log{k}.jsonl"))
            every = sorted(p.relative_to(src).as_posix() for p in src.rglob("*.*"))
            self.assertEqual(taken, [r for r in every if shard_of(r.encode(), 3) == k], f"shard {k}'s inputs")
        # heads.csv, a batch file, is written by the run without --shard (batch_files.hpp).
        self.assertEqual(sorted(union), sorted(set(whole) - {"heads.csv"}), "the shards' outputs are the one-machine run's names")
        for name, data in union.items():
            self.assertEqual(whole[name], data, f"{name} differs from the one-machine run")
        # The same shards into one shared folder, as on shared storage, then the run without
        # --shard with --skip-existing (it draws nothing, writes heads.csv), leave the same files.
        for k in (3, 1, 2):
            rc, _, err = run(src, "-r", "-o", self.dir / "shared", "--save-attention", "--shard", f"{k}/3")
            self.assertEqual(rc, 0, err)
        rc, _, err = run(src, "-r", "-o", self.dir / "shared", "--save-attention", "--skip-existing")
        self.assertEqual(rc, 0, err)
        self.assertIn("skipped", err)
        self.assertEqual(files(self.dir / "shared"), whole)

    def test_adding_files_or_moving_the_folder_moves_no_input_between_shards(self):
        src = self.folder(n=40)

        def assignment(folder, tag):
            got = {}
            for k in (1, 2, 3, 4):
                log = self.dir / f"{tag}{k}.jsonl"
                rc, _, err = run(folder, "-r", "-o", self.dir / f"{tag}-out{k}", "--shard", f"{k}/4", "--log-json", log)
                self.assertEqual(rc, 0, err)
                got.update({Path(l["path"]).relative_to(folder).as_posix(): k for l in read_log(log)})
            return got

        before = assignment(src, "a")
        # New files, eight of which rename an old input's output (img005.jpg next to img005.png
        # makes it img005_png_attn.png): the shard follows the input's path, not its output's name.
        for i in range(40, 80):
            self.image(f"in/new{i:03d}.png", seed=i)
        siblings = [i for i in range(40) if i % 3][:8]  # top-level inputs
        for i in siblings:
            self.image(f"in/img{i:03d}.jpg", seed=i)
        after = assignment(src, "b")
        self.assertEqual({r: after[r] for r in before}, before, "an old input changed shard")
        self.assertEqual(len(after), len(before) + 48)
        # The key is the path below the folder given: another place for the same tree keeps it.
        moved = self.dir / "elsewhere" / "deeper"
        moved.parent.mkdir()
        shutil.move(str(src), str(moved))
        self.assertEqual(assignment(moved, "c"), after)

    def test_shard_auto_reads_slurm_and_kubernetes(self):
        src = self.folder(n=30)
        expected = {}
        for k in (1, 2, 3):
            rc, _, err = run(src, "-r", "-o", self.dir / f"kn{k}", "--shard", f"{k}/3")
            self.assertEqual(rc, 0, err)
            expected[k] = files(self.dir / f"kn{k}")
        for k in (1, 2, 3):
            # sbatch --array=0-2: task ids 0…2.
            slurm = {"SLURM_ARRAY_TASK_ID": str(k - 1), "SLURM_ARRAY_TASK_COUNT": "3", "SLURM_ARRAY_TASK_MIN": "0",
                     "SLURM_ARRAY_TASK_MAX": "2", "SLURM_ARRAY_TASK_STEP": "1"}
            rc, _, err = run(src, "-r", "-o", self.dir / f"slurm{k}", "--shard", "auto", env_extra=slurm)
            self.assertEqual(rc, 0, err)
            self.assertEqual(files(self.dir / f"slurm{k}"), expected[k], f"Slurm task {k - 1}")
            rc, _, err = run(src, "-r", "-o", self.dir / f"k8s{k}", "--shard", "auto", "--shard-count", "3",
                             env_extra={"JOB_COMPLETION_INDEX": str(k - 1)})
            self.assertEqual(rc, 0, err)
            self.assertEqual(files(self.dir / f"k8s{k}"), expected[k], f"Kubernetes index {k - 1}")

    def test_shard_auto_without_or_with_a_wrong_environment_is_one_line_and_exit_2(self):
        src = self.folder(n=3)
        cases = [({}, ["--shard", "auto"], ("SLURM_ARRAY_TASK_ID", "JOB_COMPLETION_INDEX")),
                 ({"JOB_COMPLETION_INDEX": "1"}, ["--shard", "auto"], ("--shard-count",)),
                 ({"JOB_COMPLETION_INDEX": "3"}, ["--shard", "auto", "--shard-count", "3"], ("not below",)),
                 ({"SLURM_ARRAY_TASK_ID": "2", "SLURM_ARRAY_TASK_COUNT": "3"}, ["--shard", "auto"],
                  ("SLURM_ARRAY_TASK_MIN",)),
                 ({"SLURM_ARRAY_TASK_ID": "5", "SLURM_ARRAY_TASK_COUNT": "3", "SLURM_ARRAY_TASK_MIN": "1",
                   "SLURM_ARRAY_TASK_MAX": "5"}, ["--shard", "auto"], ("consecutive",)),
                 ({"SLURM_ARRAY_TASK_ID": "1", "SLURM_ARRAY_TASK_COUNT": "3", "SLURM_ARRAY_TASK_MIN": "1"},
                  ["--shard", "auto", "--shard-count", "4"], ("disagrees",))]
        for env, args, words in cases:
            rc, _, err = run(src, "-o", self.dir / "out", *args, env_extra=env)
            self.assertEqual(rc, 2, (env, err))
            self.one_error_line(err, "--shard auto", *words)
            self.assertFalse((self.dir / "out").exists(), "nothing done")
        for args, word in ((["--shard", "0/4"], "numbered from 1"), (["--shard", "5/4"], "numbered from 1"),
                           (["--shard", "1-4"], "K/N"), (["--shard", "2/4", "--shard-count", "4"], "--shard auto"),
                           (["-0"], "--files-from")):
            rc, _, err = run(src, "-o", self.dir / "out", *args)
            self.assertEqual(rc, 2, (args, err))
            self.one_error_line(err, word)

    # --- --files-from -------------------------------------------------------------------
    def test_files_from_lines_relative_to_the_current_folder_with_a_missing_file(self):
        self.image("data/a.png", seed=1)
        self.image("data/b c.png", seed=2)
        absolute = self.image("abs/d.png", seed=3)
        work = self.dir / "work"
        work.mkdir()
        listing = self.dir / "lists" / "list.txt"  # not in the folder the paths are relative to
        listing.parent.mkdir()
        listing.write_text(f"../data/a.png\n\n../data/b c.png\r\n../data/missing.png\n{absolute}\n")
        rc, _, err = run("--files-from", listing, "-o", "out", "--log-json", "log.jsonl", cwd=work)
        self.assertEqual(rc, 1, err)
        self.one_error_line(err, "missing.png")
        self.assertEqual(sorted(files(work / "out")), ["a_attn.png", "a_settings.txt", "b c_attn.png", "b c_settings.txt",
                                                       "d_attn.png", "d_settings.txt"])
        log = {l["path"]: l for l in read_log(work / "log.jsonl")}
        self.assertEqual(sorted(log), sorted(["../data/a.png", "../data/b c.png", "../data/missing.png", str(absolute)]))
        self.assertEqual(log["../data/missing.png"]["status"], "failed")
        self.assertIn("missing.png", log["../data/missing.png"]["error"])
        # The same images named on the command line give the same bytes.
        rc, _, err = run("../data/a.png", "../data/b c.png", absolute, "-o", "out2", cwd=work)
        self.assertEqual(rc, 0, err)
        self.assertEqual(files(work / "out2"), files(work / "out"))

    def test_files_from_nul_separated_and_standard_input(self):
        odd = self.image("data/new\nline.png", seed=4)
        plain = self.image("data/plain.png", seed=5)
        rc, _, err = run("--files-from", "-", "-0", "-o", self.dir / "nul", stdin=f"{odd}\0{plain}\0")
        self.assertEqual(rc, 0, err)
        self.assertEqual(sorted(files(self.dir / "nul")), ["new\nline_attn.png", "new\nline_settings.txt", "plain_attn.png",
                                                           "plain_settings.txt"])
        rc, _, err = run("--files-from", "-", "-o", self.dir / "lines", stdin=f"{plain}\n")
        self.assertEqual(rc, 0, err)
        self.assertEqual(files(self.dir / "lines")["plain_attn.png"], files(self.dir / "nul")["plain_attn.png"])
        # A NUL-separated list read as lines is refused whole, not cut into wrong names.
        rc, _, err = run("--files-from", "-", "-o", self.dir / "wrong", stdin=f"{plain}\0{odd}\0")
        self.assertEqual(rc, 2, err)
        self.one_error_line(err, "standard input", "NUL byte", "-0")
        rc, _, err = run("--files-from", self.dir / "nolist.txt", "-o", self.dir / "wrong")
        self.assertEqual(rc, 2, err)
        self.one_error_line(err, "nolist.txt", "cannot read the file list")
        # An empty list is an empty batch.
        rc, _, err = run("--files-from", "-", "-o", self.dir / "empty", stdin="\n\n")
        self.assertEqual(rc, 0, err)

    def test_files_from_with_shards_splits_the_list(self):
        src = self.folder(n=30)
        listing = self.dir / "list.txt"
        paths = sorted(str(p) for p in src.rglob("*.*"))
        listing.write_text("\n".join(paths) + "\n")
        rc, _, err = run("--files-from", listing, "-o", self.dir / "all")
        self.assertEqual(rc, 0, err)
        union = {}
        for k in (1, 2):
            rc, _, err = run("--files-from", listing, "-o", self.dir / f"s{k}", "--shard", f"{k}/2")
            self.assertEqual(rc, 0, err)
            part = files(self.dir / f"s{k}")
            self.assertFalse(set(part) & set(union))
            union.update(part)
        self.assertEqual(union, files(self.dir / "all"))

    # --- --log-json ---------------------------------------------------------------------
    def test_log_has_one_line_per_input_with_its_status(self):
        src = self.folder(n=6)
        (src / "broken.png").write_bytes(b"\x89PNG\r\n\x1a\nnot really")
        log = self.dir / "log.jsonl"
        rc, _, err = run(src, "-r", "-o", self.dir / "out", "--log-json", log)
        self.assertEqual(rc, 1, err)
        lines = read_log(log)
        self.assertEqual(len(lines), 9)
        for l in lines:
            self.assertEqual(list(l), ["path", "status", "error", "outputs", "ms"])
            self.assertIsInstance(l["ms"], int)
            self.assertGreaterEqual(l["ms"], 0)
            if l["path"].endswith("broken.png"):
                self.assertEqual(l["status"], "failed")
                self.assertIn("broken.png", l["error"])
                self.assertEqual(l["outputs"], [])
            else:
                self.assertEqual(l["status"], "ok", l)
                self.assertIsNone(l["error"])
                self.assertEqual(len(l["outputs"]), 2, "the overlay and the settings record")
                self.assertTrue(l["outputs"][1].endswith("_settings.txt"), l)
                for output in l["outputs"]:
                    self.assertTrue(Path(output).is_file(), l)
        self.assertEqual(sorted(l["outputs"][0] for l in lines if l["outputs"]),
                         sorted(str(p) for p in (self.dir / "out").rglob("*.png")))
        # Resumed: what is done is "skipped" with its outputs, a deleted output is redone.
        (self.dir / "out" / "img001_attn.png").unlink()
        rc, _, err = run(src, "-r", "-o", self.dir / "out", "--log-json", log, "--skip-existing")
        self.assertEqual(rc, 1, err)
        status = {Path(l["path"]).name: l["status"] for l in read_log(log)}
        self.assertEqual(status.pop("img001.png"), "ok")
        self.assertEqual(status.pop("broken.png"), "failed")
        self.assertEqual(set(status.values()), {"skipped"})
        # To standard output, for a log collector.
        rc, out, err = run(src / "img002.png", "-o", self.dir / "out3", "--log-json", "-")
        self.assertEqual(rc, 0, err)
        self.assertEqual([json.loads(l)["status"] for l in out.splitlines()], ["ok"])

    def test_log_never_replaces_an_input_an_output_or_another_kind_of_file(self):
        src = self.folder(n=2)
        self.image("photo.jpg", seed=9)
        for target, says in ((src / "img001.png", "input of this run"), (self.dir / "photo.jpg", "JPEG image"),
                             (self.dir / "out" / "img001_attn.png", "is where the output of")):
            before = target.read_bytes() if target.exists() else None
            rc, _, err = run(src, "-o", self.dir / "out", "--log-json", target)
            self.assertEqual(rc, 2, err)
            self.one_error_line(err, "--log-json", says)
            self.assertEqual(target.read_bytes() if target.exists() else None, before)

    def test_log_of_a_stopped_run_is_valid_and_names_every_input(self):
        src = self.dir / "many"
        src.mkdir()
        rng = np.random.default_rng(2)
        base = cv2.GaussianBlur(rng.integers(0, 256, (240, 320, 3), dtype=np.uint8), (0, 0), 4)
        n = 150
        for i in range(n):
            cv2.imwrite(str(src / f"img{i:03d}.jpg"), np.roll(base, 7 * i, axis=1))
        for sig in (signal.SIGTERM, signal.SIGKILL):
            out, log = self.dir / f"out-{sig.name}", self.dir / f"{sig.name}.jsonl"
            p = subprocess.Popen([BIN, src, "-o", out, "-j", "2", "--log-json", log], env=harness.changed_env(NO_SLURM),
                                 stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline and p.poll() is None and \
                    (not log.exists() or log.read_bytes().count(b"\n") < 10):
                time.sleep(0.005)
            p.send_signal(sig)
            p.communicate(timeout=60)
            lines = read_log(log)
            ok = [l for l in lines if l["status"] == "ok"]
            self.assertGreaterEqual(len(ok), 10)
            for l in ok:
                self.assertTrue(all(Path(o).is_file() for o in l["outputs"]), l)
            self.assertEqual(len({l["path"] for l in lines}), len(lines), "one line per input")
            if sig == signal.SIGTERM:
                self.assertEqual(p.returncode, 143)
                self.assertEqual(len(lines), n, "every input has its line")
                not_started = [l for l in lines if l["status"] == "skipped"]
                self.assertGreater(len(not_started), 0)
                self.assertTrue(all("interrupted by SIGTERM" in l["error"] for l in not_started))
                self.assertEqual(len(ok) + len(not_started), n)
            else:
                self.assertEqual(p.returncode, -signal.SIGKILL)
                self.assertLess(len(lines), n)
            # Retrying from the log: the inputs without an ok line, then the set is complete.
            retry = "".join(l["path"] + "\n" for l in lines if l["status"] != "ok")
            if sig == signal.SIGKILL:
                done = {l["path"] for l in ok}
                retry = "".join(f"{q}\n" for q in sorted(map(str, src.iterdir())) if q not in done)
            rc, _, err = run("--files-from", "-", "-o", out, stdin=retry)
            self.assertEqual(rc, 0, err)
            self.assertEqual(len(list(out.glob("*_attn.png"))), n)

