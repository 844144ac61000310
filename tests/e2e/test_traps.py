#!/usr/bin/env python3
"""End-to-end tests of the traps a new user falls into: outputs that would replace inputs,
runs that eat their own outputs, option values that are not checked, a grid -v does not
show, a guessed head count, parser errors over several lines, a photo given as --model.

Each test runs the binary like a user would. Needs Debian's python3-numpy and
python3-opencv (use /usr/bin/python3). Environment: VITATTN_BIN.
Run: python3 -m pytest tests/e2e/test_traps.py
"""
import re
import shutil
import zipfile

import cv2
import numpy as np

import safetensors_io
from harness import REPO, TmpCase, files_of, photo_like, run, timm_checkpoint
from harness import small_timm_checkpoint as checkpoint

# The runs that ask for a huge buffer: 3 GiB of address space, so that a request for 10 GB fails at
# once instead of swapping the machine (harness.run_process: not under a sanitizer).
MEMORY_LIMIT = 3 << 30


class Traps(TmpCase):
    tmp_prefix = "vitattn-traps-"

    def one_error_line(self, err, *needles):
        lines = err.strip().splitlines()
        self.assertEqual(len(lines), 1, f"expected one line on stderr, got:\n{err}")
        self.assertTrue(lines[0].startswith("error: "), lines[0])
        for n in needles:
            self.assertIn(n, lines[0])
        return lines[0]

    # --- 1. an output never replaces an input ----------------------------------------------
    def test_save_model_never_replaces_an_input_or_a_file_of_another_kind(self):
        photo = self.write("photo.jpg", photo_like(60, 80))
        before = photo.read_bytes()
        rc, _, err = run("photo.jpg", "--save-model", "photo.jpg", "-o", "out", cwd=self.dir)
        self.assertEqual(rc, 2, err)
        self.one_error_line(err, "--save-model photo.jpg", "input")
        self.assertEqual(photo.read_bytes(), before)
        self.assertFalse((self.dir / "out").exists(), "refused before any work")
        # Not an input, but a JPEG: what it is is said, and it is left alone.
        self.write("other.jpg", photo_like(30, 30, 1))
        other = (self.dir / "other.jpg").read_bytes()
        rc, _, err = run("--save-model", "other.jpg", cwd=self.dir)
        self.assertEqual(rc, 2, err)
        self.one_error_line(err, "other.jpg", "JPEG image", "not a safetensors file")
        self.assertEqual((self.dir / "other.jpg").read_bytes(), other)
        # The content decides, not the name: a JPEG called .safetensors is not replaced either.
        shutil.copy(self.dir / "other.jpg", self.dir / "renamed.safetensors")
        rc, _, err = run("--save-model", "renamed.safetensors", cwd=self.dir)
        self.assertEqual(rc, 2, err)
        self.one_error_line(err, "JPEG image")
        # A safetensors file is replaced, as asked.
        rc, _, err = run("--save-model", "m.safetensors", "--seed", "1", cwd=self.dir)
        self.assertEqual(rc, 0, err)
        first = (self.dir / "m.safetensors").read_bytes()
        rc, _, err = run("--save-model", "m.safetensors", "--seed", "2", cwd=self.dir)
        self.assertEqual(rc, 0, err)
        self.assertNotEqual((self.dir / "m.safetensors").read_bytes(), first)
        # Nor the model being read, nor where an image's output goes.
        rc, _, err = run("--model", "m.safetensors", "--save-model", "m.safetensors", "photo.jpg", "-o", "o2",
                         cwd=self.dir)
        self.assertEqual(rc, 2, err)
        self.one_error_line(err, "--save-model m.safetensors", "is the model file")
        rc, _, err = run("photo.jpg", "--save-model", "o3/photo_attn.png", "-o", "o3", cwd=self.dir)
        self.assertEqual(rc, 2, err)
        self.one_error_line(err, "o3/photo_attn.png", "output of photo.jpg")
        self.assertFalse((self.dir / "o3").exists())

    def test_no_two_outputs_are_one_file(self):
        """The log, the saved model and the batch's own files (predictions.csv, index.html) are
        outputs like the images': two of them at one file is refused before any image."""
        timm_checkpoint(self.dir / "cls.safetensors", 32, 8, 4, 2, 64, 2, classes=5)
        self.write("a.png", photo_like(40, 40))
        for args, says in ((["--model", "cls.safetensors", "--top", "2", "--log-json", "out/predictions.csv"],
                            ["--log-json out/predictions.csv", "is where the predictions file goes too"]),
                           (["--report", "--img-size", "32", "--patch-size", "8", "--dim", "16", "--d-k", "8",
                             "--log-json", "out/./index.html"],
                            ["--log-json out/./index.html", "is where the gallery page goes too"]),
                           (["--save-model", "same.x", "--log-json", "same.x"],
                            ["--save-model same.x", "is where the log goes too"])):
            rc, out, err = run("a.png", *args, "-o", "out", cwd=self.dir)
            self.assertEqual(rc, 2, err)
            self.one_error_line(err, *says)
            self.assertEqual(out, "")
            self.assertFalse((self.dir / "out").exists(), "refused before any image")
            self.assertFalse((self.dir / "same.x").exists())

    def test_explain_heatmap_replaces_only_a_png(self):
        self.write("photo.jpg", photo_like(40, 50))
        before = (self.dir / "photo.jpg").read_bytes()
        rc, out, err = run("explain", "--heatmap", "photo.jpg", cwd=self.dir)
        self.assertEqual(rc, 2, err)
        self.one_error_line(err, "photo.jpg", ".png")
        self.assertEqual(out, "", "refused before anything is printed")
        self.assertEqual((self.dir / "photo.jpg").read_bytes(), before)
        shutil.copy(self.dir / "photo.jpg", self.dir / "photo.png")  # JPEG bytes under a PNG name
        rc, _, err = run("explain", "--heatmap", "photo.png", cwd=self.dir)
        self.assertEqual(rc, 2, err)
        self.one_error_line(err, "photo.png", "JPEG image")
        self.assertEqual((self.dir / "photo.png").read_bytes(), before)
        self.write("old.png", photo_like(10, 10))
        rc, _, err = run("explain", "--heatmap", "old.png", cwd=self.dir)
        self.assertEqual(rc, 0, err)
        self.assertEqual(cv2.imread(str(self.dir / "old.png")).shape, (256, 256, 3), "a PNG is replaced")

    def test_explain_html_replaces_only_a_page_vitattn_wrote(self):
        # Someone's own page, with or without a doctype, is refused and named as what it is; a
        # text file too; a page vitattn wrote (its generator mark) is replaced.
        for name, text, found in (("notes.html", "<html>my notes</html>", "an HTML page that vitattn did not write"),
                                  ("doc.html", "<!DOCTYPE html>\n<html><body>mine</body></html>",
                                   "an HTML page that vitattn did not write"),
                                  ("list.html", "milk, eggs\n", "not a page vitattn wrote")):
            page = self.dir / name
            page.write_text(text)
            rc, out, err = run("explain", "--html", name, cwd=self.dir)
            self.assertEqual(rc, 2, err)
            self.one_error_line(err, f"--html {name}", found, "not replaced")
            self.assertEqual(out, "", "refused before anything is printed")
            self.assertEqual(page.read_text(), text)
        rc, _, err = run("explain", "--html", "ours.html", cwd=self.dir)
        self.assertEqual(rc, 0, err)
        self.assertIn('<meta name="generator" content="vitattn', (self.dir / "ours.html").read_text()[:1024])
        (self.dir / "ours.html").write_text((self.dir / "ours.html").read_text().replace("</body>", "<p>old</p></body>"))
        rc, _, err = run("explain", "--html", "ours.html", cwd=self.dir)
        self.assertEqual(rc, 0, err)
        self.assertNotIn("<p>old</p>", (self.dir / "ours.html").read_text(), "vitattn's own page is replaced")

    def test_no_output_of_any_kind_replaces_an_input_named_on_the_command_line(self):
        checkpoint(self.dir / "m.safetensors")
        x = self.write("x.png", photo_like(40, 40))
        for victim, args in (("x_attn.png", []), ("x_attn_h1.png", ["--model", "m.safetensors", "--head", "all"]),
                             ("x_cls.npy", ["--save-attention"])):
            v = self.write(victim, photo_like(20, 20, 3)) if victim.endswith(".png") else self.dir / victim
            if not victim.endswith(".png"):
                v.write_bytes(b"\x93NUMPY user data")
            before = v.read_bytes()
            rc, _, err = run("x.png", victim, *args, "-o", ".", cwd=self.dir)
            self.assertEqual(rc, 2, f"{victim}: {err}")
            self.one_error_line(err, victim, "x.png")
            self.assertEqual(v.read_bytes(), before, victim)
            self.assertEqual(sorted(p.name for p in self.dir.iterdir()), sorted(["m.safetensors", "x.png", victim]),
                             "refused before any work")
            v.unlink()
        self.assertTrue(x.exists())

    def test_forward_outputs_never_replace_its_inputs(self):
        checkpoint(self.dir / "m.safetensors")
        x = np.random.default_rng(0).standard_normal((3, 32, 32)).astype(np.float32)
        np.save(self.dir / "x.npy", x)
        np.save(self.dir / "x_features.npy", x)
        before = (self.dir / "x_features.npy").read_bytes()
        rc, _, err = run("forward", "--model", "m.safetensors", "x.npy", "x_features.npy", "-o", ".", cwd=self.dir)
        self.assertEqual(rc, 2, err)
        self.one_error_line(err, "x_features.npy")
        self.assertEqual((self.dir / "x_features.npy").read_bytes(), before)
        self.assertFalse((self.dir / "x_attention.npy").exists(), "refused before any work")
        # Two inputs of the same name in different folders would share their outputs.
        (self.dir / "a").mkdir()
        (self.dir / "b").mkdir()
        np.save(self.dir / "a/t.npy", x)
        np.save(self.dir / "b/t.npy", x)
        rc, _, err = run("forward", "--model", "m.safetensors", "a/t.npy", "b/t.npy", "-o", "out", cwd=self.dir)
        self.assertEqual(rc, 2, err)
        self.one_error_line(err, "a/t.npy", "b/t.npy")

    def test_every_file_a_run_writes_counts_for_skip_existing_symlinks_and_inputs(self):
        """Whatever writes a file, the one list of a job's outputs must hold it: delete any one
        file and --skip-existing must redo the image; put a symlink there and it must be
        refused; name it as an input and the run must be refused. A batch file
        (predictions.csv, heads.csv) is rebuilt from the image's part without redoing the image."""
        checkpoint(self.dir / "m.safetensors", heads=3, d=48)
        checkpoint(self.dir / "one.safetensors", heads=1, d=32)
        self.write("in/x.png", photo_like(50, 70))
        cases = [[], ["--save-attention"],
                 ["--model", "m.safetensors", "--head", "all", "--save-attention", "--threshold", "0.6"],
                 ["--model", "m.safetensors", "--rollout", "--save-attention", "--threshold", "0.3"],
                 ["--model", "one.safetensors", "--head", "all", "--save-attention"],
                 ["--model", str(REPO / "models" / "vit_cifar10_tintn.safetensors"), "--top", "2"]]
        batch_files = {"predictions.csv", "index.html", "heads.csv"}
        for args in cases:
            out = self.dir / "out"
            shutil.rmtree(out, ignore_errors=True)
            rc, _, err = run("in/x.png", *args, "-o", "out", cwd=self.dir)
            self.assertEqual(rc, 0, f"{args}: {err}")
            written = sorted(p.name for p in out.iterdir())
            self.assertIn("x_attn.png", written)
            rc, _, err = run("in/x.png", *args, "-o", "out", "--skip-existing", cwd=self.dir)
            self.assertEqual(rc, 0, err)
            self.assertIn("1 skipped", err, f"{args}: all there, nothing to do")
            for name in written:
                (out / name).unlink()
                rc, _, err = run("in/x.png", *args, "-o", "out", "--skip-existing", cwd=self.dir)
                self.assertEqual(rc, 0, err)
                if name in batch_files:
                    self.assertIn("1 skipped", err, f"{args}: {name} is rebuilt from the parts, nothing redone")
                else:
                    self.assertNotIn("skipped", err, f"{args}: {name} was missing, the image must be redone")
                self.assertEqual(sorted(p.name for p in out.iterdir()), written, f"{args}: {name}")
            victim = self.dir / "victim.txt"
            for name in written:
                victim.write_text("not yours")
                (out / name).unlink()
                (out / name).symlink_to(victim)
                rc, _, err = run("in/x.png", *args, "-o", "out", cwd=self.dir)
                self.assertEqual(rc, 1, f"{args}: a symlink at {name} must be refused: {err}")
                self.assertIn(f"{name}: is a symbolic link" if name in batch_files else f"{name} is a symbolic link", err)
                self.assertEqual(victim.read_text(), "not yours")
                self.assertTrue((out / name).is_symlink(), f"{args}: {name}")
                (out / name).unlink()
                run("in/x.png", *args, "-o", "out", cwd=self.dir)
            for name in written:  # an input where an output goes
                shutil.copy(self.dir / "in/x.png", self.dir / "in" / name)
                rc, _, err = run("in/x.png", f"in/{name}", *args, "-o", "in", cwd=self.dir)
                self.assertEqual(rc, 2, f"{args}: in/{name} is an input: {err}")
                self.assertEqual((self.dir / "in" / name).read_bytes(), (self.dir / "in/x.png").read_bytes())
                (self.dir / "in" / name).unlink()

    # --- 2. the tool never eats its own outputs --------------------------------------------
    def check_run_twice(self, folder_args, *extra, cwd):
        rc, _, err = run(*folder_args, *extra, cwd=cwd)
        self.assertEqual(rc, 0, err)
        once = files_of(cwd)
        rc, _, err2 = run(*folder_args, *extra, "-v", cwd=cwd)
        self.assertEqual(rc, 0, err2)
        self.assertEqual(files_of(cwd), once, f"{folder_args} {extra}: the second run changed the files")
        rc, _, err3 = run(*folder_args, *extra, "--skip-existing", cwd=cwd)
        self.assertEqual(rc, 0, err3)
        self.assertEqual(files_of(cwd), once)
        return once, err, err2, err3

    def test_running_twice_in_place_leaves_the_same_files(self):
        d = self.dir / "photos"
        for i, name in enumerate(["a.jpg", "b.png", "c.webp", "d.bmp"]):
            self.write(f"photos/{name}", photo_like(40 + i, 50, i))
        once, _, verbose, skipping = self.check_run_twice([".", "-o", "."], cwd=d)
        self.assertEqual(sorted(once), ["a.jpg", "a_attn.png", "a_settings.txt", "b.png", "b_attn.png", "b_settings.txt",
                                        "c.webp", "c_attn.png", "c_settings.txt", "d.bmp", "d_attn.png", "d_settings.txt"])
        for name in ("a_attn.png", "b_attn.png", "c_attn.png", "d_attn.png"):
            self.assertRegex(verbose, rf"debug: left out \./{name}: a vitattn output")
        self.assertIn("4 images", skipping)
        self.assertIn("4 skipped", skipping, "every image is done")

    def test_running_twice_recursively_with_sub_folders_and_every_output(self):
        checkpoint(self.dir / "m.safetensors", heads=2)
        self.write("p/top.png", photo_like(40, 50, 1))
        self.write("p/sub/deep.jpg", photo_like(45, 40, 2))
        self.write("p/sub/more/deeper.png", photo_like(30, 60, 3))
        args = ["--model", str(self.dir / "m.safetensors"), "--head", "all", "--save-attention"]
        once, _, _, skipping = self.check_run_twice(["-r", ".", "-o", "."], *args, cwd=self.dir / "p")
        self.assertEqual(len(once), 3 + 3 * 7 + 1)  # each image: sheet, 2 heads, 2 .npy, heads.csv part, record; heads.csv
        self.assertIn("sub/more/deeper_attn_h1.png", once)
        self.assertIn("3 skipped", skipping)
        # The output folder inside the inputs, mirrored: the same.
        shutil.rmtree(self.dir / "p")
        self.write("p/top.png", photo_like(40, 50, 1))
        self.write("p/sub/deep.jpg", photo_like(45, 40, 2))
        self.check_run_twice(["-r", "p", "-o", "p/maps"], cwd=self.dir)
        self.assertEqual(sorted(files_of(self.dir / "p")),
                         ["maps/sub/deep_attn.png", "maps/sub/deep_settings.txt", "maps/top_attn.png",
                          "maps/top_settings.txt", "sub/deep.jpg", "top.png"])

    def test_an_image_named_like_an_output_elsewhere_is_still_drawn(self):
        self.write("in/beach_attn.png", photo_like(40, 40))
        rc, _, err = run("in", "-o", "out", cwd=self.dir)
        self.assertEqual(rc, 0, err)
        self.assertTrue((self.dir / "out/beach_attn_attn.png").is_file(), "outside the output folder it is an input")

    # --- 3. every option value is checked before any image is touched ----------------------
    def test_every_bad_option_value_is_one_error_line_and_exit_2(self):
        checkpoint(self.dir / "m.safetensors")
        self.write("a.png", photo_like(40, 40))
        seeded = [
            ["--alpha", "nan"], ["--alpha", "inf"], ["--alpha", "-inf"], ["--alpha", "1.5"], ["--alpha", "-0.1"],
            ["--alpha", "NaN"], ["--alpha", "x"], ["--threshold", "nan"], ["--threshold", "0"], ["--threshold", "2"],
            ["--img-size", "0"], ["--img-size", "-16"], ["--img-size", "100000"], ["--img-size", "nan"],
            ["--img-size", "100"], ["--patch-size", "0"], ["--patch-size", "1"], ["--patch-size", "2"],
            ["--dim", "0"], ["--dim", "100000"], ["--dim", "8192", "--patch-size", "224"], ["--d-k", "0"],
            ["--d-k", "nan"], ["-j", "0"], ["-j", "100000"], ["-j", "nan"], ["--seed", "-1"], ["--seed", "nan"],
            ["--seed", "1.5"], ["--max-pixels", "0"], ["--max-pixels", "-1"], ["--max-pixels", "nan"],
            ["--mean", "nan,0,0"], ["--mean", "inf,0,0"], ["--mean", "1,2"],
            ["--std", "0,1,1"], ["--std", "-1,1,1"], ["--std", "nan,1,1"], ["--interp", "bogus"],
            ["--colormap", "bogus"], ["-o", ""], ["--model", ""], ["--save-model", ""],
        ]
        encoder = [
            ["--eps", "nan"], ["--eps", "0"], ["--eps", "inf"], ["--eps", "2"], ["--discard-ratio", "nan", "--rollout"],
            ["--discard-ratio", "1", "--rollout"], ["--heads", "0"], ["--heads", "nan"], ["--layer", "99999"],
            ["--layer", "nan"], ["--head", "x"], ["--head", "-1"], ["--head", "nan"], ["--family", "x"],
            ["--gelu", "x"], ["--pos-interp", "x"], ["--img-size", "1024"], ["--img-size", "36"],
        ]
        cases = [(a, a) for a in seeded] + [(a, ["--model", "m.safetensors", *a]) for a in encoder]
        for shown, args in cases:
            out = self.dir / "out"
            rc, stdout, err = run(*args, "a.png", "-o", "out", cwd=self.dir, address_space=MEMORY_LIMIT)
            self.assertEqual(rc, 2, f"{shown}: {err}")
            line = self.one_error_line(err)
            option = next(a for a in shown if a.startswith("-"))
            self.assertIn(option if option != "-o" else "--output", line, shown)
            self.assertFalse(out.exists() and any(out.iterdir()), f"{shown}: something was written")
            self.assertEqual(stdout, "")

    def test_a_nan_alpha_used_to_draw_black_overlays(self):
        self.write("a.png", photo_like(40, 40))
        rc, _, err = run("--alpha", "nan", "a.png", "-o", "out", cwd=self.dir)
        self.assertEqual(rc, 2, err)
        self.assertFalse((self.dir / "out/a_attn.png").exists())

    def test_a_single_head_model_file_with_too_many_patches_is_refused(self):
        rng = np.random.default_rng(0)
        d, p, n = 4, 1, 65 * 65  # one more row of patches than the cap of 64×64
        t = {"patch_embed.proj.weight": rng.standard_normal((d, 3, p, p)).astype(np.float32),
             "cls_token": np.zeros((1, 1, d), np.float32), "pos_embed": np.zeros((1, 1 + n, d), np.float32),
             "attn.q.weight": np.eye(d, dtype=np.float32), "attn.k.weight": np.eye(d, dtype=np.float32),
             "attn.v.weight": np.eye(d, dtype=np.float32)}
        safetensors_io.write(self.dir / "big.safetensors", t, dtype="F32")
        self.write("a.png", photo_like(40, 40))
        rc, _, err = run("--model", "big.safetensors", "a.png", "-o", "out", cwd=self.dir, address_space=MEMORY_LIMIT)
        self.assertEqual(rc, 2, err)
        self.one_error_line(err, "big.safetensors", "4225 patches", "4096")

    # --- 4. -v shows the grid used -----------------------------------------------------------
    def test_verbose_shows_the_grid_actually_used(self):
        checkpoint(self.dir / "m.safetensors")  # P = 8, its own grid 4×4
        self.write("wide.png", photo_like(45, 70))
        self.write("tall.png", photo_like(90, 30))
        base = ["--model", "m.safetensors", "-v", "--save-attention", "-o", "out"]
        _, _, err = run(*base, "wide.png", cwd=self.dir)
        self.assertRegex(err, r"debug: grid 4x4 patches of 8 px \(input 32x32, the checkpoint's own\)")
        _, _, err = run(*base, "--img-size", "48", "wide.png", cwd=self.dir)
        self.assertRegex(err, r"debug: grid 6x6 patches of 8 px \(input 48x48, --img-size\)")
        self.assertEqual(np.load(self.dir / "out/wide_cls.npy").shape, (6, 6))
        rc, _, err = run(*base, "--img-size", "32", "--keep-aspect", "wide.png", "tall.png", cwd=self.dir)
        self.assertEqual(rc, 0, err)
        # The grid printed for each image is the grid its map has.
        for name, (w, h) in (("wide", (6, 4)), ("tall", (4, 12))):
            m = re.search(rf"debug: {name}\.png: (\d+)x(\d+) image, input (\d+)x(\d+), grid (\d+)x(\d+)", err)
            self.assertIsNotNone(m, err)
            self.assertEqual((int(m[5]), int(m[6])), (w, h), name)
            self.assertEqual((int(m[3]), int(m[4])), (8 * w, 8 * h), name)
            self.assertEqual(np.load(self.dir / f"out/{name}_cls.npy").shape, (h, w), name)
        _, _, err = run("-v", "wide.png", "--img-size", "64", "--patch-size", "8", "-o", "out", cwd=self.dir)
        self.assertRegex(err, r"debug: grid 8x8 patches of 8 px \(input 64x64\)")

    # --- 5. a head count guessed as D/64 is a warning ----------------------------------------
    def test_a_guessed_head_count_is_a_warning_naming_the_file(self):
        checkpoint(self.dir / "tv128.safetensors", d=128, heads=4, heads_in_metadata=False)
        self.write("a.png", photo_like(40, 40))
        rc, _, err = run("--model", "tv128.safetensors", "a.png", "--save-attention", "-o", "out", cwd=self.dir)
        self.assertEqual(rc, 0, err)
        warnings = [l for l in err.splitlines() if l.startswith("warning:")]
        self.assertEqual(len(warnings), 1, err)
        self.assertIn("tv128.safetensors", warnings[0])
        self.assertIn("D/64 = 2", warnings[0])
        self.assertIn("--heads", warnings[0])
        self.assertEqual(np.load(self.dir / "out/a_attn.npy").shape[0], 2)
        rc, _, err = run("--model", "tv128.safetensors", "--heads", "4", "a.png", "--save-attention", "-o", "out",
                         cwd=self.dir)
        self.assertEqual(rc, 0, err)
        self.assertNotIn("warning", err)
        self.assertEqual(np.load(self.dir / "out/a_attn.npy").shape[0], 4)
        checkpoint(self.dir / "said.safetensors", d=128, heads=4)
        rc, _, err = run("--model", "said.safetensors", "a.png", "-o", "out", cwd=self.dir)
        self.assertNotIn("warning", err)

    # --- 6. --version, one-line parser errors, a model file that is not one ------------------
    def test_version(self):
        rc, out, err = run("--version")
        self.assertEqual(rc, 0, err)
        version = re.search(r"project\(vitattn VERSION ([0-9.]+)", (REPO / "CMakeLists.txt").read_text())[1]
        self.assertEqual(out.strip(), f"vitattn {version}")

    def test_parser_errors_are_one_line(self):
        self.write("a.png", photo_like(40, 40))
        for args in (["--no-such-option", "a.png"], ["a.png", "--alpha"], ["explain", "--nope"], ["forward"],
                     ["--head"], ["-j", "two", "a.png"], ["--discard-ratio", "0.5", "--model", "x", "a.png"]):
            rc, out, err = run(*args, cwd=self.dir)
            self.assertEqual(rc, 2, f"{args}: {err}")
            self.one_error_line(err)
            self.assertEqual(out, "", args)

    def test_a_model_file_that_is_not_safetensors_says_so(self):
        self.write("a.png", photo_like(40, 40))
        self.write("photo.jpg", photo_like(40, 40))
        self.write("pic.png", photo_like(40, 40))
        with zipfile.ZipFile(self.dir / "weights.pth", "w") as z:
            z.writestr("archive/data.pkl", b"\x80\x02}q\x00.")
        (self.dir / "notes.txt").write_text("these are not weights, just some text that is long enough\n")
        for model, says in (("photo.jpg", "not a safetensors file (it is a JPEG image)"),
                            ("pic.png", "not a safetensors file (it is a PNG image)"),
                            # A zip goes to the native .pth reader, which says what it lacks.
                            ("weights.pth", "no tensors in the file"),
                            ("notes.txt", "not a safetensors file"),
                            ("missing.safetensors", "missing.safetensors: no such file")):
            rc, _, err = run("--model", model, "a.png", "-o", "out", cwd=self.dir)
            self.assertEqual(rc, 2, err)
            self.one_error_line(err, model, says)
            self.assertNotRegex(err, r"\d{12,}", "no header size read from a file that has none")

