#!/usr/bin/env python3
"""End-to-end tests of the class-specific maps on the image, folder and video paths:
--method attention|rollout|chefer|grad-rollout|legrad|gradcam|lrp|all, --class, --legrad-from.

What is checked here is the command line's side: every method writes its overlay and its map
(<name>_cls.npy, float32 [grid_h, grid_w]); the default class is each image's top-1 (the same
bytes as naming that class); a comma list gives one file per class, each the map that class
alone gives; --method all gives one file per method, each the map that method alone gives;
videos; every bad input refused in one `error:` line, exit 2, before any file is written; the
maps byte-identical whatever -j. LabelledClasses: how --class names a class (exact label, any
case, a synonym of Hugging Face's id2label, a whole label with commas, spaces, ambiguity), the
caption on a class's overlay, and forward taking the same --class and --method words. (The maps'
values against torch autograd and re-implementations of each method are
tests/oracle/test_gradients.py's.)

The model: a random timm classifier with 1000 classes (so the built-in ImageNet names label
it), D=32, 2 heads, 3 blocks, 8-pixel patches of 32×32 inputs (a 4×4 grid).
Needs Debian's python3-numpy and python3-opencv (use /usr/bin/python3).
Environment: VITATTN_BIN. Run: python3 -m pytest tests/e2e/test_relevance_cli.py
"""
import json
from pathlib import Path

import cv2
import numpy as np

import safetensors_io
from harness import TmpCase, files_of, outputs_of, photo_like, run_process, timm_checkpoint, timm_tensors

D, P, GRID, LAYERS, MLP, HEADS, CLASSES = 32, 8, 4, 3, 64, 2, 1000
GRADIENT_METHODS = ("chefer", "grad-rollout", "legrad", "gradcam", "lrp")
SIGNED = ("lrp",)  # relevance of either sign; its values at the pixels are <name>_pixels.npy
METHODS = ("attention", "rollout") + GRADIENT_METHODS
COUGAR = 286  # "cougar" in the built-in ImageNet-1k names (data/imagenet1k_classes.txt, 0-based)


class RelevanceCli(TmpCase):
    def setUp(self):
        super().setUp()
        self.model = self.dir / "vit.safetensors"
        timm_checkpoint(self.model, D, P, GRID, LAYERS, MLP, HEADS, seed=3, classes=CLASSES, scale=0.4)
        self.dino = self.dir / "dino.safetensors"  # no classifier: the dino family
        timm_checkpoint(self.dino, D, P, GRID, LAYERS, MLP, HEADS, seed=3)
        (self.dir / "in").mkdir()
        for i, (h, w) in enumerate(((48, 40), (64, 64), (30, 50))):
            cv2.imwrite(str(self.dir / "in" / f"img{i}.png"), photo_like(h, w, i))
        self.n = 0

    def vitattn(self, *args, model=True, ok=True, env=None):
        """Runs the binary on `args` with its own output folder; returns (process, output folder)."""
        self.n += 1
        out = self.dir / f"out{self.n}"
        p = run_process(*(("--model", self.model) if model else ()), *args, "-o", out, cwd=self.dir, env=env)
        if ok:
            self.assertEqual(p.returncode, 0, p.stderr)
        return p, out

    def cls_map(self, path):
        m = np.load(path)
        self.assertEqual(m.dtype, np.float32, path)
        self.assertEqual(m.shape, (GRID, GRID), path)
        self.assertTrue(np.isfinite(m).all(), path)
        return m

    def top1(self, image):
        """The image's most likely class, as --top 1 writes it."""
        _, out = self.vitattn("--top", "1", image)
        rows = (out / "predictions.csv").read_text().splitlines()
        return int(rows[1].split(",")[2])

    def test_each_method_writes_its_overlay_and_its_map(self):
        maps = {}
        for method in METHODS:
            _, out = self.vitattn("--method", method, "--save-attention", "in/img0.png")
            pixels = ["img0_pixels.npy"] if method in SIGNED else []
            self.assertEqual(sorted(outputs_of(out)),
                             sorted(["heads.csv", "img0_attn.npy", "img0_attn.png", "img0_cls.npy", "img0_heads.csv"] +
                                    pixels), method)
            overlay = cv2.imread(str(out / "img0_attn.png"))
            self.assertEqual(overlay.shape, (48, 40, 3), method)
            maps[method] = self.cls_map(out / "img0_cls.npy")
            self.assertGreater(np.ptp(maps[method]), 0, f"{method}: the map is not flat")
            if method in SIGNED:  # the map is the pixels' relevance summed over each patch
                at_pixels = np.load(out / "img0_pixels.npy")
                self.assertEqual(at_pixels.shape, (GRID * P, GRID * P), method)
                np.testing.assert_allclose(at_pixels.reshape(GRID, P, GRID, P).sum(axis=(1, 3)), maps[method],
                                           rtol=1e-4, atol=1e-5 * np.abs(maps[method]).max())
            else:
                self.assertTrue((maps[method] >= 0).all(), f"{method}: relevance is never negative")
        for a in METHODS:  # seven different definitions: no two give the same map
            for b in METHODS:
                if a < b:
                    self.assertFalse(np.array_equal(maps[a], maps[b]), f"{a} and {b} drew the same map")

    def test_keep_aspect_gives_each_method_a_non_square_grid(self):
        """30×50 with --keep-aspect: the shorter side 32, the longer 56, a 4×7 grid on a model trained
        4×4 (positions resampled): every class-specific map on that grid, the same at -j 1 and 2."""
        for method in GRADIENT_METHODS:
            maps = []
            for jobs in ("1", "2"):
                _, out = self.vitattn("--method", method, "--keep-aspect", "--img-size", "32", "--save-attention",
                                      "-j", jobs, "in/img2.png")
                m = np.load(out / "img2_cls.npy")
                self.assertEqual(m.shape, (4, 7), method)
                self.assertTrue(np.isfinite(m).all() and np.ptp(m) > 0, method)
                maps.append((out / "img2_cls.npy").read_bytes())
            self.assertEqual(maps[0], maps[1], f"{method}: -j 1 and -j 2 differ")

    def test_rollout_flag_is_method_rollout(self):
        _, a = self.vitattn("--rollout", "--save-attention", "in/img1.png")
        _, b = self.vitattn("--method", "ROLLOUT", "--save-attention", "in/img1.png")
        self.assertEqual(outputs_of(a), outputs_of(b))

    def test_the_default_class_is_the_images_top1(self):
        top = self.top1("in/img1.png")
        for method in GRADIENT_METHODS:
            _, default = self.vitattn("--method", method, "--save-attention", "in/img1.png")
            _, named = self.vitattn("--method", method, "--class", str(top), "--save-attention", "in/img1.png")
            self.assertEqual(outputs_of(default), outputs_of(named), f"{method}: the default class is the top-1, {top}")
            other = (top + 1) % CLASSES
            _, elsewhere = self.vitattn("--method", method, "--class", str(other), "--save-attention", "in/img1.png")
            self.assertFalse(np.array_equal(np.load(default / "img1_cls.npy"), np.load(elsewhere / "img1_cls.npy")),
                             f"{method}: class {other}'s map is class {top}'s")

    def test_a_list_of_classes_gives_one_file_per_class_each_that_class_alone(self):
        _, out = self.vitattn("--method", "chefer", "--class", "5,Cougar", "--save-attention", "--threshold", "0.5",
                              "in/img0.png")
        self.assertEqual(sorted(outputs_of(out)),
                         ["heads.csv", "img0_attn.npy", "img0_attn.png", f"img0_attn_c{COUGAR}.png", "img0_attn_c5.png",
                          f"img0_cls_c{COUGAR}.npy", "img0_cls_c5.npy", "img0_heads.csv", "img0_mask.npy"])
        self.assertEqual(np.load(out / "img0_mask.npy").shape, (2, GRID, GRID))
        for c in (5, COUGAR):
            _, alone = self.vitattn("--method", "chefer", "--class", str(c), "--save-attention", "--threshold", "0.5",
                                    "in/img0.png")
            self.assertEqual((out / f"img0_cls_c{c}.npy").read_bytes(), (alone / "img0_cls.npy").read_bytes(), c)
            self.assertEqual((out / f"img0_attn_c{c}.png").read_bytes(), (alone / "img0_attn.png").read_bytes(), c)
        self.assertFalse(np.array_equal(np.load(out / "img0_cls_c5.npy"), np.load(out / f"img0_cls_c{COUGAR}.npy")))
        sheet = cv2.imread(str(out / "img0_attn.png"))
        self.assertGreater(sheet.shape[1], 2 * 40, "the sheet holds both overlays side by side")

    def test_method_all_gives_one_file_per_method_each_that_method_alone(self):
        _, out = self.vitattn("--method", "all", "--class", "7", "--save-attention", "in/img2.png")
        self.assertEqual(sorted(outputs_of(out)),
                         sorted(["img2_attn.png", "img2_attn.npy", "img2_heads.csv", "heads.csv"] +
                                [f"img2_attn_{m}.png" for m in METHODS] +
                                [f"img2_cls_{m}.npy" for m in METHODS] + [f"img2_pixels_{m}.npy" for m in SIGNED]))
        for m in METHODS:
            self.cls_map(out / f"img2_cls_{m}.npy")
            _, alone = self.vitattn("--method", m, *(("--class", "7") if m in GRADIENT_METHODS else ()),
                                    "--save-attention", "in/img2.png")
            self.assertEqual((out / f"img2_cls_{m}.npy").read_bytes(), (alone / "img2_cls.npy").read_bytes(), m)

    def test_method_all_and_two_classes_name_both(self):
        _, out = self.vitattn("--method", "all", "--class", "1,2", "in/img2.png")
        expected = ["img2_attn.png", "img2_attn_attention.png", "img2_attn_rollout.png"] + \
            [f"img2_attn_{m}_c{c}.png" for m in GRADIENT_METHODS for c in (1, 2)]
        self.assertEqual(sorted(outputs_of(out)), sorted(expected))

    def test_method_all_without_a_classifier_draws_attention_and_rollout(self):
        p, out = self.vitattn("--model", self.dino, "--method", "all", "in/img0.png", model=False)
        self.assertEqual(sorted(outputs_of(out)), ["img0_attn.png", "img0_attn_attention.png", "img0_attn_rollout.png"])
        self.assertIn("no classifier", p.stderr)

    def test_layer_and_legrad_from_bound_the_layers(self):
        _, last = self.vitattn("--method", "legrad", "--class", "3", "--save-attention", "in/img0.png")
        _, from0 = self.vitattn("--method", "legrad", "--class", "3", "--legrad-from", "0", "--save-attention", "in/img0.png")
        _, layer1 = self.vitattn("--method", "chefer", "--class", "3", "--layer", "1", "--save-attention", "in/img0.png")
        _, layer2 = self.vitattn("--method", "chefer", "--class", "3", "--layer", "-1", "--save-attention", "in/img0.png")
        self.assertFalse(np.array_equal(self.cls_map(last / "img0_cls.npy"), self.cls_map(from0 / "img0_cls.npy")))
        self.assertFalse(np.array_equal(self.cls_map(layer1 / "img0_cls.npy"), self.cls_map(layer2 / "img0_cls.npy")))

    def test_legrad_at_a_layer_below_its_first_is_that_layers_map(self):
        # The default first layer is the last two's (1 of 0…2): --layer 0 sums from layer 0, so the
        # map is layer 0's alone, which a one-block model made of block 0 draws by itself (its
        # LeGrad sums its only layer, read through the same final norm and classifier).
        t = timm_tensors(D, P, GRID, LAYERS, MLP, seed=3, classes=CLASSES, scale=0.4)
        one = {k: v for k, v in t.items() if not k.startswith(("blocks.1.", "blocks.2."))}
        safetensors_io.write(self.dir / "one.safetensors", one, {"num_heads": str(HEADS)}, dtype="F32")
        _, layer0 = self.vitattn("--method", "legrad", "--class", "3", "--layer", "0", "--save-attention", "in/img0.png")
        _, alone = self.vitattn("--model", self.dir / "one.safetensors", "--method", "legrad", "--class", "3",
                                "--save-attention", "in/img0.png", model=False)
        got, want = self.cls_map(layer0 / "img0_cls.npy"), self.cls_map(alone / "img0_cls.npy")
        self.assertGreater(np.ptp(want), 0)
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-7 * np.abs(want).max())

    def test_own_outputs_are_not_taken_as_inputs_and_skip_existing_finds_them_all(self):
        args = ("--method", "all", "--class", "1,2", "--save-attention")
        _, out = self.vitattn(*args, "in")
        first = files_of(out)
        # The output folder as the input: every file in it is a vitattn output, left out.
        p = run_process("--model", self.model, *args, out, "-o", out, cwd=self.dir)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("no images found", p.stderr)
        self.assertEqual(files_of(out), first)
        p = run_process("--model", self.model, *args, "--skip-existing", "-v", "in", "-o", out, cwd=self.dir)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertRegex(p.stderr, r"3 (inputs )?(already done|skipped)|skipped 3|3 already")

    def test_video_maps_per_frame(self):
        clip = self.dir / "clip.avi"
        w = cv2.VideoWriter(str(clip), cv2.CAP_FFMPEG, cv2.VideoWriter_fourcc(*"MJPG"), 5.0, (48, 48))
        self.assertTrue(w.isOpened())
        for t in range(4):
            w.write(photo_like(48, 48, t))
        w.release()
        _, out = self.vitattn("--method", "gradcam", "--save-attention", clip)
        names = sorted(outputs_of(out))
        self.assertEqual(len(names), 2, names)
        maps = np.load(out / "clip_cls.npy")
        self.assertEqual(maps.shape, (4, GRID, GRID))
        self.assertTrue(np.isfinite(maps).all())
        self.assertGreater(np.ptp(maps[0]), 0)
        _, out = self.vitattn("--method", "legrad", "--class", "3,cougar", "--save-attention", clip)
        maps = np.load(out / "clip_cls.npy")
        self.assertEqual(maps.shape, (4, 2, GRID, GRID))
        self.assertFalse(np.array_equal(maps[:, 0], maps[:, 1]))

    def test_bad_input_is_one_error_line_exit_2_and_nothing_written(self):
        cases = {
            "class out of range": (("--method", "chefer", "--class", "1000"), True, "0…999"),
            "unknown label": (("--method", "gradcam", "--class", "cougr"), True, "cougar"),
            "label in a list": (("--method", "legrad", "--class", "3,lyonx"), True, "lynx"),
            "class twice": (("--method", "chefer", "--class", "3,3"), True, "twice"),
            "seeded head": (("--method", "chefer"), False, "no classifier"),
            "DINO backbone": (("--model", self.dino, "--method", "grad-rollout"), False, "no classifier"),
            "class with attention": (("--class", "3"), True, "--class"),
            "class with rollout": (("--rollout", "--class", "3"), True, "--class"),
            "class on a backbone": (("--model", self.dino, "--method", "all", "--class", "3"), False, "no classifier"),
            "legrad-from out of range": (("--method", "legrad", "--legrad-from", "3"), True, "--legrad-from"),
            "legrad-from elsewhere": (("--method", "chefer", "--legrad-from", "0"), True, "--legrad-from"),
            "discard ratio elsewhere": (("--method", "chefer", "--discard-ratio", "0.5"), True, "--discard-ratio"),
            "head all elsewhere": (("--method", "gradcam", "--head", "all"), True, "--head"),
            "one head with all": (("--method", "all", "--head", "1"), True, "fuses heads"),
            "a head with a gradient method": (("--method", "legrad", "--head", "0"), True, "--head"),
            "unknown method": (("--method", "lime"), True, "--method"),
        }
        for name, (args, with_model, says) in cases.items():
            p, out = self.vitattn(*args, "in/img0.png", model=with_model, ok=False)
            self.assertEqual(p.returncode, 2, f"{name}: {p.stderr}")
            lines = p.stderr.strip().splitlines()
            self.assertEqual(len(lines), 1, f"{name}: {p.stderr}")
            self.assertTrue(lines[0].startswith("error: "), f"{name}: {lines[0]}")
            self.assertIn(says, lines[0], name)
            self.assertFalse(out.exists(), f"{name}: the output folder was made")

    def test_maps_are_the_same_bytes_at_any_jobs_count(self):
        args = ("--method", "all", "--class", "1,cougar", "--save-attention", "in")
        _, reference = self.vitattn("-j", "1", *args)
        reference = files_of(reference)
        # per image: the heads, attention and rollout, each class's maps and lrp's pixels
        self.assertEqual(len([n for n in reference if n.endswith(".npy")]),
                         3 * (1 + 2 + 2 * len(GRADIENT_METHODS) + 2 * len(SIGNED)))
        for jobs, env in (("2", None), ("3", None), ("1", {"OMP_NUM_THREADS": "1"}), ("2", {"OPENBLAS_NUM_THREADS": "2"})):
            _, out = self.vitattn("-j", jobs, *args, env=env)
            files = files_of(out)
            self.assertEqual(sorted(files), sorted(reference))
            for name, data in reference.items():
                self.assertTrue(files[name] == data, f"{name} differs at -j {jobs} {env or ''}")


# Hugging Face's id2label spells some ImageNet classes with their synonyms (google/vit-base-patch16-224's
# config.json); the rest here are the built-in names. "Cardigan" the corgi (264) and "cardigan" the
# sweater (474) differ only in case.
CARDIGAN_CORGI, CARDIGAN_SWEATER, JAGUAR, LION = 264, 474, 290, 291
HF_LABELS = {CARDIGAN_CORGI: "Cardigan, Cardigan Welsh corgi",
             COUGAR: "cougar, puma, catamount, mountain lion, painter, panther, Felis concolor",
             JAGUAR: "jaguar, panther, Panthera onca, Felis onca",
             LION: "lion, king of beasts, Panthera leo"}
BUNDLED = Path(__file__).resolve().parents[2] / "models" / "vit_cifar10_tintn.safetensors"  # CIFAR-10: cat is 3


def caption_mask(shape, text, level):
    """Where draw_label's white text lies on an image of `shape` (overlay.hpp: white on a black
    outline at the top left, the font 1/400 of the height, at least 0.3): the pixels of the text
    drawn alone on black at or above `level` in every channel."""
    canvas = np.zeros(shape, np.uint8)
    font = max(0.3, shape[0] / 400.0)
    at = (4, int(18 * font / 0.5))
    cv2.putText(canvas, text, at, cv2.FONT_HERSHEY_SIMPLEX, font, (0, 0, 0), 3, cv2.LINE_AA)
    cv2.putText(canvas, text, at, cv2.FONT_HERSHEY_SIMPLEX, font, (255, 255, 255), 1, cv2.LINE_AA)
    return (canvas >= level).all(axis=2)


class LabelledClasses(TmpCase):
    """--class against ImageNet-like models: one with the built-in names (where "Cardigan" and
    "cardigan" are two classes), one whose labels come from an id2label beside it; and forward's
    --class and --method taking the image command's words."""

    def setUp(self):
        super().setUp()
        (self.dir / "hf").mkdir()
        self.model = self.dir / "hf" / "vit.safetensors"
        timm_checkpoint(self.model, D, P, GRID, LAYERS, MLP, HEADS, seed=3, classes=CLASSES, scale=0.4)
        names = (Path(__file__).resolve().parents[2] / "data" / "imagenet1k_classes.txt").read_text().splitlines()
        self.assertEqual((names[CARDIGAN_CORGI], names[CARDIGAN_SWEATER]), ("Cardigan", "cardigan"))
        id2label = {str(i): HF_LABELS.get(i, name) for i, name in enumerate(names)}
        (self.dir / "hf" / "config.json").write_text(json.dumps({"id2label": id2label}))
        (self.dir / "builtin").mkdir()  # the same weights, no config.json: the built-in names
        self.builtin = self.dir / "builtin" / "vit.safetensors"
        self.builtin.write_bytes(self.model.read_bytes())
        self.image = self.write("wide.png", photo_like(200, 360, 4))  # a caption of 22 characters fits
        self.n = 0

    def vitattn(self, *args, ok=True):
        return self.run_to_new_folder(*args, ok=ok)

    def chefer(self, cls, *more, ok=True, model=None):
        return self.vitattn("--model", model or self.model, "--method", "chefer", "--class", cls, "--save-attention",
                            *more, self.image, ok=ok)

    def test_class_cardigan_draws_the_sweater_and_says_so(self):
        p, out = self.chefer("cardigan", model=self.builtin)
        self.assertIn(f'info: --class: the maps of "cardigan" ({CARDIGAN_SWEATER})', p.stderr)
        by_index = {}
        for c, label in ((CARDIGAN_SWEATER, "cardigan"), (CARDIGAN_CORGI, "Cardigan")):
            q, alone = self.chefer(str(c), model=self.builtin)
            self.assertIn(f'info: --class: the maps of "{label}" ({c})', q.stderr)
            by_index[c] = np.load(alone / "wide_cls.npy")
        drawn = np.load(out / "wide_cls.npy")
        self.assertTrue(np.array_equal(drawn, by_index[CARDIGAN_SWEATER]), "--class cardigan is class 474")
        self.assertFalse(np.array_equal(drawn, by_index[CARDIGAN_CORGI]), "not 264, the corgi")
        # The overlay carries the class's caption, and only it: white text where the caption's text is.
        overlay = cv2.imread(str(out / "wide_attn.png"))
        white = (overlay >= 200).all(axis=2)  # a blend with jet never reaches 200 in all three channels
        core, halo = (caption_mask(overlay.shape, f"chefer: cardigan ({CARDIGAN_SWEATER})", t) for t in (230, 150))
        self.assertGreater(core.sum(), 50)
        self.assertTrue((white >= core).all() and (white <= halo).all(), "the caption names the class drawn")
        corgi = caption_mask(overlay.shape, f"chefer: Cardigan ({CARDIGAN_CORGI})", 230)
        self.assertFalse((white >= corgi).all(), "not the corgi's caption")

    def test_labels_with_synonyms_lists_and_whole_labels(self):
        cases = {
            "puma": [COUGAR],                                      # a synonym of an id2label entry
            "cougar, lion": [COUGAR, LION],                        # spaces around items
            HF_LABELS[COUGAR]: [COUGAR],                           # the whole label, commas and all
            # The sweater's label exactly, then a synonym of the corgi.
            "cardigan,Cardigan Welsh corgi": [CARDIGAN_SWEATER, CARDIGAN_CORGI],
            # A synonym as typed ("Cardigan" of "Cardigan, Cardigan Welsh corgi") comes before the
            # sweater's label in another case.
            "Cardigan": [CARDIGAN_CORGI],
        }
        for value, classes in cases.items():
            p, out = self.chefer(value)
            drawn = sorted(n for n in files_of(out) if n.startswith("wide_cls"))
            expected = ["wide_cls.npy"] if len(classes) == 1 else sorted(f"wide_cls_c{c}.npy" for c in classes)
            self.assertEqual(drawn, expected, value)
            if len(classes) == 1:
                alone = self.chefer(str(classes[0]))[1]
                self.assertEqual((out / "wide_cls.npy").read_bytes(), (alone / "wide_cls.npy").read_bytes(), value)

    def test_the_built_in_names_reach_both_cardigans(self):
        """Without a config.json, a 1000-class model takes the built-in ImageNet names, where the
        corgi's label is "Cardigan" and the sweater's "cardigan": each exactly."""
        builtin = self.builtin
        p, out = self.vitattn("--model", builtin, "--method", "chefer", "--class", "cardigan,Cardigan", self.image)
        self.assertIn(f'"cardigan" ({CARDIGAN_SWEATER}), "Cardigan" ({CARDIGAN_CORGI})', p.stderr)
        self.assertEqual(sorted(outputs_of(out)),
                         sorted(["wide_attn.png", f"wide_attn_c{CARDIGAN_SWEATER}.png", f"wide_attn_c{CARDIGAN_CORGI}.png"]))
        p, out = self.vitattn("--model", builtin, "--method", "chefer", "--class", "CARDIGAN", self.image, ok=False)
        self.assertEqual(p.returncode, 2, p.stderr)
        self.assertIn(f'ambiguous: 2 classes of {builtin} have this label in some case: "Cardigan" ({CARDIGAN_CORGI}), '
                      f'"cardigan" ({CARDIGAN_SWEATER})', p.stderr)

    def test_an_ambiguous_label_is_refused_with_its_candidates(self):
        p, out = self.chefer("panther", ok=False)  # a synonym of the cougar and of the jaguar
        self.assertEqual(p.returncode, 2, p.stderr)
        lines = p.stderr.strip().splitlines()
        self.assertEqual(len(lines), 1, p.stderr)
        self.assertTrue(lines[0].startswith("error: --class panther: ambiguous"), lines[0])
        self.assertIn(f'"{HF_LABELS[COUGAR]}" ({COUGAR})', lines[0])
        self.assertIn(f'"{HF_LABELS[JAGUAR]}" ({JAGUAR})', lines[0])
        self.assertFalse(out.exists())

    # --- forward: the image command's --class and --method words ----------------------------
    def forward(self, *args, ok=True):
        x = self.dir / "x.npy"
        if not x.exists():
            np.save(x, np.random.default_rng(5).standard_normal((2, 3, 32, 32)).astype(np.float32))
        self.n += 1
        out = self.dir / f"fwd{self.n}"
        p = run_process("forward", *args, x, "-o", out, cwd=self.dir)
        if ok:
            self.assertEqual(p.returncode, 0, p.stderr)
        return p, out

    def test_forward_takes_a_label(self):
        p, by_label = self.forward("--model", BUNDLED, "--class", "cat", "--method", "chefer")
        self.assertIn('--class: the gradients of "cat" (3)', p.stderr)
        _, by_index = self.forward("--model", BUNDLED, "--class", "3", "--method", "chefer")
        self.assertEqual(files_of(by_label), files_of(by_index))
        _, other = self.forward("--model", BUNDLED, "--class", "dog", "--method", "chefer")
        self.assertFalse(np.array_equal(np.load(other / "x_grad_blocks.npy"), np.load(by_index / "x_grad_blocks.npy")))
        _, sweater = self.forward("--model", self.model, "--class", "cardigan")
        _, c474 = self.forward("--model", self.model, "--class", str(CARDIGAN_SWEATER))
        self.assertEqual(files_of(sweater), files_of(c474))

    def test_forward_takes_a_list_of_classes_each_its_own_files(self):
        _, both = self.forward("--model", BUNDLED, "--class", "3, dog", "--method", "chefer,legrad")
        grads = ("grad_attention", "grad_blocks", "relevance_chefer", "relevance_legrad")
        for c in (3, 5):
            _, alone = self.forward("--model", BUNDLED, "--class", str(c), "--method", "chefer,legrad")
            for g in grads:
                self.assertEqual((both / f"x_{g}_c{c}.npy").read_bytes(), (alone / f"x_{g}.npy").read_bytes(), (c, g))
        self.assertFalse(any(n in files_of(both) for n in (f"x_{g}.npy" for g in grads)), "no untagged gradients")

    def test_forward_method_all_is_every_method(self):
        _, every = self.forward("--model", BUNDLED, "--class", "cat", "--method", "all")
        _, listed = self.forward("--model", BUNDLED, "--class", "cat", "--method", ",".join(GRADIENT_METHODS))
        self.assertEqual(files_of(every), files_of(listed))
        self.assertEqual(len([n for n in files_of(every) if "_relevance_" in n]), len(GRADIENT_METHODS))

    def test_forward_refuses_a_class_with_the_models_own_range(self):
        for value, says in (("10", "0…9"), ("lion", "closest"), ("3,3", "twice")):
            p, out = self.forward("--model", BUNDLED, "--class", value, ok=False)
            self.assertEqual(p.returncode, 2, p.stderr)
            lines = p.stderr.strip().splitlines()
            self.assertEqual(len(lines), 1, p.stderr)
            self.assertTrue(lines[0].startswith(f"error: --class {value}: "), lines[0])
            self.assertIn(says, lines[0])
            self.assertNotIn("16777216", lines[0])
            self.assertFalse(out.exists())
