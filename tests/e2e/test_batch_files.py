"""The batch's own files (predictions.csv with --top, index.html with --report) after a
resumed run and across shards: whatever order the batch was done in (interrupted and
resumed, an overlay deleted and redone, every input skipped, shards one after the other or
at once into one folder, shards in their own folders copied together), the output folder
ends with exactly the files of one uninterrupted one-machine run, byte for byte.

The one-machine run is the oracle: its tree is compared file by file with each other way of
doing the same batch. Uses the bundled CIFAR-10 model (models/), which has a classifier.
Environment: VITATTN_BIN.
"""
import json
import os
import shutil
import signal
import subprocess
import time
import unittest
from pathlib import Path

from harness import BIN, REPO, TmpCase, check_sanitizers, photo_like, run, run_process

MODEL = REPO / "models" / "vit_cifar10_tintn.safetensors"
# What is drawn: the trained model's classes (predictions.csv) and pages (index.html).
DRAW = ["--model", MODEL, "--top", "2", "--report", "-r"]
BATCH_FILES = ("predictions.csv", "index.html")
SLURM_VARS = ("SLURM_ARRAY_TASK_ID", "SLURM_ARRAY_TASK_COUNT", "SLURM_ARRAY_TASK_MIN", "SLURM_ARRAY_TASK_MAX",
              "SLURM_ARRAY_TASK_STEP", "JOB_COMPLETION_INDEX")


def tree(folder):
    """{path relative to folder: bytes} of every file below it."""
    folder = Path(folder)
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def default_sigint():
    signal.signal(signal.SIGINT, signal.SIG_DFL)


class BatchFiles(TmpCase):
    tmp_prefix = "vitattn-batch-files-"

    def setUp(self):
        super().setUp()
        self.src = self.dir / "in"
        for i in range(14):  # a sub-folder, and one stem shared by two files (renamed outputs)
            self.write(f"in/{'sub/' if i % 4 == 0 else ''}img{i:02d}.png", photo_like(120, 160, seed=i))
        self.write("in/cat.jpg", photo_like(90, 120, seed=50))
        self.write("in/cat.png", photo_like(90, 120, seed=51))
        self.whole = self.draw("whole")

    def draw(self, out, *extra, expect=0):
        """The batch into self.dir/out (with `extra` options); returns that folder's files."""
        rc, _, err = run(*DRAW, self.src, "-o", self.dir / out, *extra)
        self.assertEqual(rc, expect, err)
        self.err = err
        return tree(self.dir / out)

    def assert_whole(self, got, what):
        """`got` is the one-machine run's tree: the same names, each byte for byte."""
        self.assertEqual(sorted(got), sorted(self.whole), what)
        for name in BATCH_FILES:
            self.assertEqual(got[name].decode(), self.whole[name].decode(), f"{what}: {name}")
        for name, data in self.whole.items():
            self.assertEqual(got[name], data, f"{what}: {name} differs from the one-machine run")

    def test_the_one_machine_run_lists_every_image(self):
        csv = self.whole["predictions.csv"].decode().splitlines()
        self.assertEqual(csv[0], "file,rank,class,label,probability")
        self.assertEqual(len(csv), 1 + 2 * 16, "two rows per image")
        self.assertEqual(self.whole["index.html"].decode().count('class="card"'), 16)

    def test_interrupted_then_resumed_leaves_the_one_machine_files(self):
        out = self.dir / "resumed"
        env = {k: v for k, v in os.environ.items() if k not in SLURM_VARS}
        p = subprocess.Popen([BIN, *map(str, DRAW), str(self.src), "-o", str(out), "-j", "1",
                              "--log-json", str(self.dir / "log.jsonl")], stdout=subprocess.DEVNULL,
                             stderr=subprocess.PIPE, text=True, env=env, preexec_fn=default_sigint)
        log = self.dir / "log.jsonl"
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and p.poll() is None:
            if log.exists() and log.read_bytes().count(b"\n") >= 3:
                break
            time.sleep(0.002)
        p.send_signal(signal.SIGTERM)
        _, err = p.communicate(timeout=60)
        check_sanitizers(["interrupted run"], err)
        self.assertEqual(p.returncode, 143, f"the run was to be stopped by SIGTERM midway\n{err}")
        done = sorted(out.glob("**/*_attn.png"))
        self.assertTrue(0 < len(done) < 16, f"the interruption left {len(done)} of 16 overlays: nothing to resume")
        got = self.draw("resumed", "--skip-existing")
        self.assertIn(f"{len(done)} skipped", self.err)
        self.assert_whole(got, "interrupted, then resumed with --skip-existing")

    def test_one_overlay_deleted_then_resumed_leaves_the_one_machine_files(self):
        shutil.copytree(self.dir / "whole", self.dir / "again")
        (self.dir / "again" / "img03_attn.png").unlink()
        got = self.draw("again", "--skip-existing")
        self.assertIn("1 written", self.err)
        self.assertIn("15 skipped", self.err)
        self.assert_whole(got, "one overlay deleted, then resumed")

    def test_every_input_skipped_still_rebuilds_the_batch_files(self):
        shutil.copytree(self.dir / "whole", self.dir / "again")
        (self.dir / "again" / "index.html").unlink()
        (self.dir / "again" / "predictions.csv").write_text("file,rank,class,label,probability\nstale,1,0,x,1\n")
        got = self.draw("again", "--skip-existing")
        self.assertIn("16 skipped", self.err)
        self.assert_whole(got, "every input skipped")

    def test_shards_write_their_parts_and_the_final_step_the_batch_files(self):
        # Shard by shard into one folder (shared storage): no shard writes a batch file, and
        # each says which step does.
        for k in (2, 3, 1):
            self.draw("shared", "--shard", f"{k}/3")
            self.assertIn("without --shard", self.err, "a shard says the batch files come from the final step")
            for name in BATCH_FILES:
                self.assertFalse((self.dir / "shared" / name).exists(), f"shard {k} wrote {name}")
        # The final step: the same command without --shard, with --skip-existing: nothing redone.
        got = self.draw("shared", "--skip-existing")
        self.assertIn("16 skipped", self.err)
        self.assert_whole(got, "three shards, then the final step")

    def test_shards_at_the_same_time_into_one_folder(self):
        out = self.dir / "concurrent"
        env = {k: v for k, v in os.environ.items() if k not in SLURM_VARS}
        procs = [subprocess.Popen([BIN, *map(str, DRAW), str(self.src), "-o", str(out), "-j", "1", "--shard", f"{k}/4"],
                                  stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env)
                 for k in (1, 2, 3, 4)]
        for p in procs:
            _, err = p.communicate(timeout=300)
            check_sanitizers(["a shard"], err)
            self.assertEqual(p.returncode, 0, err)
        got = self.draw("concurrent", "--skip-existing")
        self.assertIn("16 skipped", self.err)
        self.assert_whole(got, "four shards at once, then the final step")

    def interrupt_midway(self, out, *extra):
        """Runs the batch into `out` with `extra` options at -j 1 and stops it with SIGTERM
        after three images; returns the log's lines ({path: status})."""
        log = self.dir / "interrupted.jsonl"
        env = {k: v for k, v in os.environ.items() if k not in SLURM_VARS}
        p = subprocess.Popen([BIN, *map(str, DRAW), str(self.src), "-o", str(out), "-j", "1", "--log-json", str(log),
                              *map(str, extra)], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                             env=env, preexec_fn=default_sigint)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and p.poll() is None:
            if log.exists() and log.read_bytes().count(b"\n") >= 3:
                break
            time.sleep(0.002)
        p.send_signal(signal.SIGTERM)
        _, err = p.communicate(timeout=60)
        check_sanitizers(["interrupted run"], err)
        self.assertEqual(p.returncode, 143, f"the run was to be stopped by SIGTERM midway\n{err}")
        return {json.loads(line)["path"]: json.loads(line)["status"] for line in log.read_text().splitlines()}

    def test_an_image_that_failed_is_in_no_batch_file(self):
        # The batch again into the same folder after an image became unreadable: that image
        # failed in this run, so neither its part from the earlier run nor anything else of it is left.
        shutil.copytree(self.dir / "whole", self.dir / "again")
        (self.src / "img03.png").write_bytes(b"\x89PNG\r\n\x1a\nno longer an image")
        got = self.draw("again", expect=1)
        self.assertIn("img03.png", self.err)
        self.assertEqual([name for name in got if name.startswith("img03_")], [], "the failed image left files")
        rows = got["predictions.csv"].decode().splitlines()
        self.assertEqual(rows, [r for r in self.whole["predictions.csv"].decode().splitlines() if "img03" not in r])
        self.assertEqual(len(rows), 1 + 2 * 15)
        self.assertNotIn("img03_report.html", got["index.html"].decode())
        self.assertEqual(got["index.html"].decode().count('class="card"'), 15)

    def test_an_interrupted_run_with_other_settings_gathers_only_the_images_it_finished(self):
        # Over the whole batch's outputs, a run with another --layer is stopped midway: the
        # images it did not draw keep parts made with the earlier settings, which its batch
        # files must not gather (nor may a later --skip-existing pass them over).
        shutil.copytree(self.dir / "whole", self.dir / "again")
        status = self.interrupt_midway(self.dir / "again", "--layer", "0")
        finished = [Path(path).name for path, s in status.items() if s == "ok"]
        self.assertTrue(0 < len(finished) < 16, f"{len(finished)} of 16 finished: nothing to check")
        listed = {row.split(",")[0] for row in (self.dir / "again" / "predictions.csv").read_text().splitlines()[1:]}
        self.assertEqual(sorted(Path(f).name for f in listed), sorted(finished),
                         "predictions.csv lists images this run did not finish")
        index = (self.dir / "again" / "index.html").read_text()
        self.assertEqual(index.count('class="card"'), len(finished), "index.html links pages of other settings")
        got = self.draw("again", "--layer", "0", "--skip-existing")
        self.assertIn(f"{len(finished)} skipped (already done), {16 - len(finished)} redone (made with other settings)",
                      self.err)
        fresh = self.draw("fresh", "--layer", "0")
        self.assertEqual(sorted(got), sorted(fresh))
        for name, data in fresh.items():
            self.assertEqual(got[name], data, f"resumed with --layer 0: {name} differs from one run with it")

    def test_shards_in_their_own_folders_copied_together(self):
        # Object storage: each task writes its own folder, the folders are copied into one.
        merged = self.dir / "merged"
        for k in (1, 2):
            self.draw(f"own{k}", "--shard", f"{k}/2")
            shutil.copytree(self.dir / f"own{k}", merged, dirs_exist_ok=True)
        got = self.draw("merged", "--skip-existing")
        self.assertIn("16 skipped", self.err)
        self.assert_whole(got, "two shards' folders copied together, then the final step")


class SettingsAndSharedFolders(TmpCase):
    """--skip-existing against the settings that made the outputs (each image's
    <name>_settings.txt: the model by content, the options that change outputs), and two
    batches into one folder at the same time."""
    tmp_prefix = "vitattn-batch-settings-"

    def photos(self, folder, n, prefix, seed=0):
        for i in range(n):
            self.write(f"{folder}/{prefix}{i:02d}.png", photo_like(60, 80, seed=seed + i))
        return self.dir / folder

    def test_skip_existing_redoes_outputs_made_with_other_settings(self):
        images, out = self.photos("images", 4, "p"), self.dir / "out"
        run_process(images, "-o", out, expect=0)  # the seeded model
        settings = ["--model", MODEL, "--layer", "3", "--colormap", "inferno"]
        err = run_process(*settings, "--skip-existing", images, "-o", out, expect=0).stderr
        self.assertIn("4 written", err)
        self.assertIn("4 redone (made with other settings)", err)
        self.assertNotIn("skipped", err)
        run_process(*settings, images, "-o", self.dir / "fresh", expect=0)
        fresh = tree(self.dir / "fresh")
        self.assertEqual(tree(out), fresh, "redone: every file as one run with these settings writes it")
        self.assertIn("--layer 3\n", fresh["p00_settings.txt"].decode())
        # The same settings: done. -j, -v, --log-json, --shard and the option order change no record.
        err = run_process("--colormap", "inferno", "--model", MODEL, "--layer", "3", "--skip-existing", "-j", "1", "-v",
                          "--log-json", self.dir / "log.jsonl", images, "-o", out, expect=0).stderr
        self.assertIn("4 skipped (already done)", err)
        self.assertNotIn("redone", err)
        err = run_process(*settings, "--skip-existing", "--shard", "1/1", images, "-o", out, expect=0).stderr
        self.assertIn("4 skipped (already done)", err)
        # The model by its content: the same bytes elsewhere are the same model, one byte changed is another.
        moved = self.dir / "elsewhere" / "m.safetensors"
        moved.parent.mkdir()
        shutil.copyfile(MODEL, moved)
        err = run_process("--model", moved, "--layer", "3", "--colormap", "inferno", "--skip-existing", images, "-o",
                          out, expect=0).stderr
        self.assertIn("4 skipped (already done)", err)
        data = bytearray(moved.read_bytes())
        data[-1] ^= 0x01  # the last weight's lowest bits
        moved.write_bytes(bytes(data))
        err = run_process("--model", moved, "--layer", "3", "--colormap", "inferno", "--skip-existing", images, "-o",
                          out, expect=0).stderr
        self.assertIn("4 redone (made with other settings)", err)
        self.assertNotEqual((out / "p00_settings.txt").read_bytes(), fresh["p00_settings.txt"])

    def test_two_batches_at_once_into_one_folder_are_both_in_the_batch_files(self):
        a, b, out = self.photos("a", 17, "a"), self.photos("b", 17, "b", seed=100), self.dir / "conc"
        env = {k: v for k, v in os.environ.items() if k not in SLURM_VARS}
        draw = [BIN, "--model", str(MODEL), "--top", "3", "--report", "-o", str(out)]
        procs = [subprocess.Popen([*draw, str(folder)], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                                  env=env) for folder in (a, b)]
        for p in procs:
            _, err = p.communicate(timeout=300)
            check_sanitizers(["a batch"], err)
            self.assertEqual(p.returncode, 0, err)
        got = tree(out)
        names = [f"{x}{i:02d}" for x in "ab" for i in range(17)]
        self.assertEqual(sorted(n for n in got if n.endswith("_attn.png")), [f"{n}_attn.png" for n in names])
        # predictions.csv: the header, then each image's own rows (its part), every image once.
        rows = got["predictions.csv"].decode().splitlines()
        self.assertEqual(rows[0], "file,rank,class,label,probability")
        parts = [line for n in names for line in got[f"{n}_predictions.csv"].decode().splitlines()[1:]]
        self.assertEqual(len(parts), 3 * 34)
        self.assertEqual(sorted(rows[1:]), sorted(parts))
        index = got["index.html"].decode()
        self.assertEqual(index.count('class="card"'), 34)
        for n in names:
            self.assertIn(f'href="{n}_report.html"', index)
        self.assertFalse((out / ".vitattn-batch-files.lock").exists(), "the lock file is left behind")


if __name__ == "__main__":
    unittest.main()
