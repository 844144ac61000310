#!/usr/bin/env python3
"""End-to-end tests of the typed options (src/cli/options.cpp): every choice is converted to
its enum once, by name and case-insensitively, and only by name; --head and --mean/--std are
parsed once into typed values that reach the model; every number refuses NaN and infinity;
options that need --model, exclude it or need another option say so in one CLI11 line.

Needs Debian's python3-numpy and python3-opencv (use /usr/bin/python3).
Environment: VITATTN_BIN (the binary). Prints "e2e typed options: N passed, M failed".
"""
import re
import sys
import tempfile
import unittest
from pathlib import Path

import cv2
import numpy as np

import safetensors_io
from harness import BIN, REPO, photo_like, run
from harness import small_timm_checkpoint as checkpoint

SEEDED = ["--img-size", "32", "--patch-size", "8", "--dim", "16", "--d-k", "8", "--seed", "4"]


class TypedOptions(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory(prefix="vitattn-typed-")
        self.dir = Path(self.tmp.name)
        cv2.imwrite(str(self.dir / "a.png"), photo_like(40, 56))
        checkpoint(self.dir / "vit.safetensors")
        self.runs = 0

    def tearDown(self):
        self.tmp.cleanup()

    def draw(self, *args, model=None, suffix="png"):
        """The overlay's bytes and the map's (.npy) for `args`, from a fresh output folder."""
        self.runs += 1
        out = self.dir / f"out{self.runs}"
        base = ["--model", model] if model else SEEDED
        rc, _, err = run(*base, *args, "--save-attention", self.dir / "a.png", "-o", out, "-j", "1")
        self.assertEqual(rc, 0, (args, err))
        return (out / f"a_attn.{suffix}").read_bytes() + (out / "a_cls.npy").read_bytes()

    def refused(self, *args, expect=None):
        """Runs `args`, expects exit 2, one error line (naming `expect` when given), nothing written."""
        out = self.dir / "refused"
        rc, stdout, err = run(*map(str, args), self.dir / "a.png", "-o", out)
        self.assertEqual(rc, 2, (args, err))
        lines = err.strip().splitlines()
        self.assertEqual(len(lines), 1, (args, err))
        self.assertTrue(lines[0].startswith("error:"), (args, err))
        if expect:
            self.assertIn(expect, lines[0], args)
        self.assertFalse(out.exists() and any(out.iterdir()), args)
        self.assertEqual(stdout, "")
        return lines[0]

    # --- choices: by name, any case, each its own enum -------------------------------------
    def test_each_choice_is_its_own_value_whatever_its_case(self):
        cases = [
            ("--interp", ["nearest", "linear", "cubic"], None),
            ("--colormap", ["jet", "inferno", "viridis", "bone"], None),
            ("--gelu", ["erf", "tanh"], "vit"),
            ("--head", ["mean", "max", "min", "0", "1"], "vit"),
            ("--pos-interp", ["bicubic", "bicubic-antialias", "bicubic-offset", "bicubic-corners"], "vit"),
        ]
        for option, names, model in cases:
            extra = ["--img-size", "48"] if option == "--pos-interp" else []  # resampled positions
            m = self.dir / "vit.safetensors" if model else None
            drawn = {name: self.draw(*extra, option, name, model=m) for name in names}
            for name in names:  # the same value in capitals (and, once, mixed case)
                self.assertEqual(self.draw(*extra, option, name.upper(), model=m), drawn[name], (option, name))
            self.assertEqual(self.draw(*extra, option, names[0].capitalize(), model=m), drawn[names[0]], option)
            for i, a in enumerate(names):  # and every name a value of its own
                for b in names[i + 1:]:
                    self.assertNotEqual(drawn[a], drawn[b], (option, a, b))

    def test_precision_is_fp32_or_bf16(self):
        line = self.refused("--precision", "fp16", expect="--precision")
        self.assertIn("fp16", line)
        if "avx512_bf16" not in Path("/proc/cpuinfo").read_text():  # a CPU without the instructions says so
            self.refused("--precision", "bf16", expect="AVX512-BF16")
        self.assertEqual(self.draw("--precision", "FP32"), self.draw())  # the default, by name, any case

    def test_format_names_the_file_whatever_its_case(self):
        for name, suffix in (("JPG", "jpg"), ("WebP", "webp"), ("PNG", "png")):
            data = self.draw("--format", name, suffix=suffix)
            data = data[:data.rindex(b"\x93NUMPY")]  # the overlay alone
            self.assertIsNotNone(cv2.imdecode(np.frombuffer(data, np.uint8), cv2.IMREAD_COLOR), name)
            self.assertEqual(data[:4] == b"\x89PNG", suffix == "png", name)

    def test_every_choice_takes_any_case_and_the_common_aliases(self):
        # Every option that --help shows with a set of names {a,b,…}: its last name in capitals
        # is that name (--family on the timm checkpoint: timm). And the aliases users type.
        rc, out, _ = run("--help")
        self.assertEqual(rc, 0)
        choices = dict(re.findall(r"^ +(--[a-z-]+) [A-Z]+:\{([^}]*)\}", out, re.M))
        self.assertTrue({"--interp", "--format", "--family", "--gelu", "--pos-interp", "--report-precision"} <= set(choices),
                        choices)
        vit = self.dir / "vit.safetensors"
        needs = {"--family": ["--model", vit], "--gelu": ["--model", vit], "--report-precision": [*SEEDED, "--report"]}
        for option, names in choices.items():
            # --family on the timm checkpoint: timm; --query on the seeded model: cls (it has no distillation token)
            name = {"--family": "timm", "--query": "cls"}.get(option, names.split(",")[-1])
            base = needs.get(option, SEEDED)
            for given in (name.upper(), name.capitalize()):
                rc, _, err = run(*base, option, given, self.dir / "a.png", "-o", self.dir / "cases", "-j", "1")
                self.assertEqual(rc, 0, f"{option} {given}: {err}")
        jpg = self.draw("--format", "jpg", suffix="jpg")
        for alias in ("jpeg", "JPEG", "Jpeg"):
            self.assertEqual(self.draw("--format", alias, suffix="jpg"), jpg, alias)
        timm = self.draw("--family", "timm", model=vit)
        self.assertEqual(self.draw("--family", "TIMM", model=vit), timm)

    def test_a_choice_is_taken_by_name_only_never_by_its_number(self):
        # CLI11's CheckedTransformer alone also takes the enum's number ("--interp 2" = cubic).
        for option, number in (("--interp", "2"), ("--colormap", "2"), ("--format", "1"), ("--interp", "0")):
            line = self.refused(*SEEDED, option, number, expect=option)
            self.assertIn("not in {", line)
        for option, number in (("--gelu", "1"), ("--pos-interp", "0")):
            self.refused("--model", self.dir / "vit.safetensors", option, number, expect=option)

    def test_help_lists_the_choices_by_name(self):
        rc, out, _ = run("--help")
        self.assertEqual(rc, 0)
        for listed in ("{nearest,linear,cubic}", "{png,jpg,webp}", "{erf,tanh,quick}",
                       "{bicubic,bicubic-antialias,bicubic-offset,bicubic-corners}", "inferno", "=linear", "=jet",
                       "=png", "=mean"):
            self.assertIn(listed, out, listed)
        self.assertNotIn("->", out)  # no enum numbers shown

    # --- --keep-aspect and --top: what they cannot do, said -----------------------------------
    def test_keep_aspect_over_the_patch_cap_says_what_to_change(self):
        # 10000x100 with its aspect ratio kept at 224: a 1400x14 grid, over the cap. The flag
        # already given is not the advice; dropping it (or a smaller input size) is.
        cv2.imwrite(str(self.dir / "wide.png"), photo_like(100, 10000))
        rc, _, err = run("--keep-aspect", self.dir / "wide.png", self.dir / "a.png", "-o", self.dir / "wide")
        self.assertEqual(rc, 1, err)
        line = next(l for l in err.splitlines() if l.startswith("error:"))
        for says in ("wide.png", "10000x100", "1400x14", "19600 patches", "over the cap of 4096",
                     "a smaller input size", "do not keep the aspect ratio (--keep-aspect)"):
            self.assertIn(says, line)
        self.assertNotIn("square input (--keep-aspect)", line)
        self.assertTrue((self.dir / "wide" / "a_attn.png").is_file(), "the other image is drawn")

    def test_verbose_counts_one_patch_one_image(self):
        rc, _, err = run("-v", "--keep-aspect", "--img-size", "16", "--patch-size", "16", "--dim", "16", "--d-k", "8",
                         self.dir / "a.png", "-o", self.dir / "one")
        self.assertEqual(rc, 0, err)
        self.assertIn("shorter side 16 px = 1 patch of 16 px", err)
        self.assertIn("1 image, 1 worker", err)
        for wrong in ("1 patches", "1 images", "1 workers", "1 threads"):
            self.assertNotIn(wrong, err)

    def test_top_above_the_class_count_is_said_once(self):
        cifar = REPO / "models" / "vit_cifar10_tintn.safetensors"  # 10 classes
        cv2.imwrite(str(self.dir / "b.png"), photo_like(30, 50, 2))
        out = self.dir / "top"
        rc, stdout, err = run("--model", cifar, "--top", "20", self.dir / "a.png", self.dir / "b.png", "-o", out)
        self.assertEqual(rc, 0, err)
        said = [l for l in err.splitlines() if "--top" in l]
        self.assertEqual(len(said), 1, err)
        self.assertTrue(said[0].startswith("warning:"), said)
        self.assertIn("--top 20", said[0])
        self.assertIn("10 classes", said[0])
        self.assertEqual(len((out / "predictions.csv").read_text().splitlines()), 1 + 2 * 10)
        rc, _, err = run("--model", cifar, "--top", "10", self.dir / "a.png", "-o", self.dir / "top10")
        self.assertEqual(rc, 0, err)
        self.assertNotIn("--top", err)

    # --- --head: one typed value -------------------------------------------------------------
    def test_head_index_draws_that_head(self):
        out = self.dir / "h"
        model = self.dir / "vit.safetensors"
        for head in ("0", "1"):
            rc, _, err = run("--model", model, "--head", head, "--save-attention", self.dir / "a.png", "-o", out)
            self.assertEqual(rc, 0, err)
            attn, cls = np.load(out / "a_attn.npy"), np.load(out / "a_cls.npy")  # [H, T, T], (grid, grid)
            np.testing.assert_allclose(cls, attn[int(head), 0, 1:].reshape(cls.shape), atol=1e-7)

    def test_head_values_that_are_not_a_head(self):
        vit = ["--model", self.dir / "vit.safetensors"]
        for bad in ("nan", "inf", "1.5", "-1", "+1", "0x1", "123456", "", "mean,max", "1 2"):
            self.refused(*vit, "--head", bad, expect="--head")
        self.refused(*vit, "--head", "2", expect="--head 2: the model has heads 0…1")
        self.refused(*vit, "--rollout", "--head", "1", expect='--rollout fuses heads with --head mean, max or min, not "1"')
        self.refused(*vit, "--rollout", "--head", "ALL", expect='not "all"')

    # --- --mean/--std: a typed triple ------------------------------------------------------
    def test_mean_and_std_reach_the_model_in_rgb_order(self):
        model = self.dir / "m.safetensors"
        rc, _, err = run(*SEEDED, "--mean", " 0.25, 0.5,0.75", "--std", "0.125,2,3e-1", "--save-model", model)
        self.assertEqual(rc, 0, err)
        meta = safetensors_io.read_metadata(model)
        np.testing.assert_allclose([float(v) for v in meta["mean"].split(",")], [0.25, 0.5, 0.75], rtol=1e-6)
        np.testing.assert_allclose([float(v) for v in meta["std"].split(",")], [0.125, 2, 0.3], rtol=1e-6)

    def test_triples_that_are_not_three_finite_numbers(self):
        for option, bad in (("--mean", "1,2"), ("--mean", "1,2,3,4"), ("--mean", "1,,2"), ("--mean", "1;2;3"),
                            ("--mean", "nan,0,0"), ("--mean", "0,-inf,0"), ("--mean", ""), ("--std", "1,1,0"),
                            ("--std", "1,1,-1"), ("--std", "1,inf,1"), ("--std", "1,1")):
            self.refused(*SEEDED, option, bad, expect=option)

    # --- numbers: NaN and infinity refused everywhere -------------------------------------
    def test_no_number_takes_nan_or_infinity(self):
        floats = {"--alpha": [], "--threshold": [], "--eps": ["vit"], "--discard-ratio": ["vit", "--rollout"]}
        ints = ["--img-size", "--patch-size", "--dim", "--d-k", "--jobs", "--seed", "--max-pixels", "--quality",
                "--heads", "--layer"]
        for value in ("nan", "NaN", "inf", "-inf", "Infinity", "1e999"):
            for option, need in floats.items():
                base = (["--model", self.dir / "vit.safetensors"] if "vit" in need else []) + [n for n in need if n != "vit"]
                self.refused(*base, option, value, expect=option)
        for value in ("nan", "inf"):
            for option in ints:
                base = ["--model", self.dir / "vit.safetensors"] if option in ("--heads", "--layer") else []
                extra = ["--format", "jpg"] if option == "--quality" else []
                self.refused(*base, *extra, option, value, expect=option)

    # --- rules between options, stated once ------------------------------------------------
    def test_file_options_need_a_model(self):
        # How to read a model file; the views (--layer, --head, --rollout …) work on the seeded model too.
        for option in (["--gelu", "tanh"], ["--family", "timm"], ["--heads", "2"], ["--eps", "1e-6"],
                       ["--key", "model"]):
            self.refused(*option, expect="requires --model")
        for option in (["--layer", "0"], ["--head", "0"], ["--rollout"], ["--keep-aspect"], ["--pos-interp", "bicubic"]):
            rc, _, err = run(*SEEDED, self.dir / "a.png", "-o", self.dir / "views", *option)
            self.assertEqual(rc, 0, f"{option}: {err}")

    def test_seeded_options_exclude_a_model(self):
        for option in (["--seed", "3"], ["--patch-size", "8"], ["--dim", "16"], ["--d-k", "8"]):
            line = self.refused("--model", self.dir / "vit.safetensors", *option, expect="excludes")
            self.assertIn(option[0], line)
            self.assertIn("--model", line)

    def test_discard_ratio_needs_rollout(self):
        self.refused("--model", self.dir / "vit.safetensors", "--discard-ratio", "0.5",
                     expect="--discard-ratio is for --method rollout and grad-rollout")

    def test_forward_needs_a_model(self):
        np.save(self.dir / "x.npy", np.zeros((3, 32, 32), np.float32))
        rc, _, err = run("forward", self.dir / "x.npy", "-o", self.dir / "f")
        self.assertEqual(rc, 2, err)
        self.assertEqual(len(err.strip().splitlines()), 1, err)
        self.assertIn("forward requires --model", err)

    def test_views_work_on_a_single_head_file(self):
        # The single-head layout is a one-block encoder: every view applies, and its one head bounds --head.
        single = self.dir / "single.safetensors"
        rc, _, err = run(*SEEDED, "--save-model", single)
        self.assertEqual(rc, 0, err)
        for option in (["--layer", "0"], ["--head", "0"], ["--rollout"], ["--keep-aspect"], ["--img-size", "32"],
                       ["--rollout", "--discard-ratio", "0.5"]):
            rc, _, err = run("--model", single, self.dir / "a.png", "-o", self.dir / "single", *option)
            self.assertEqual(rc, 0, f"{option}: {err}")
        self.refused("--model", single, "--head", "1", expect="--head 1: the model has heads 0…0")
        np.save(self.dir / "x.npy", np.zeros((3, 32, 32), np.float32))
        rc, _, err = run("forward", "--model", single, self.dir / "x.npy", "-o", self.dir / "f")
        self.assertEqual(rc, 0, err)

