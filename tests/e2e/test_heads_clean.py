#!/usr/bin/env python3
"""End-to-end tests of heads.csv, the artifact rule and --clean (core/token_diagnostics.hpp,
pipeline/heads_part.hpp).

- heads.csv's columns recomputed in numpy from `--save-attention`'s matrices (_attn.npy holds the
  drawn layer only: one run per --layer), on a non-square grid (--keep-aspect: 4×7 patches on
  a 4×4 model), for a timm-named model without registers and a DINOv2-style one with registers
  and layer scale, and for the seeded head. flagged_share needs the flags: the token norms are
  recomputed independently (a float64 torch forward of the same weights; numpy for the seeded
  head, whose weights --save-model writes) and the median rule applied to them.
- A planted artifact: a timm-named model whose weights give ONE patch token 10× the median
  patch norm after block 1 and not after blocks 0 or 2 (a position-embedding channel only that
  token has, read by block 1's MLP that writes a large value into it and by block 2's MLP that
  removes it; the norms checked in torch). heads.csv's flagged_share is the class token's
  attention to it at layer 1 and 0 elsewhere; --clean removes exactly that cell from the map,
  the rest rescaled to the same total, and nothing else changes; -v says so.
- heads.csv and the cleaned maps the same bytes at -j 1 and -j 2, rows in input order.
- --artifact-ratio 0, nan, 1: one `error:` line, exit 2, nothing written.

Needs Debian's python3-numpy, python3-opencv and python3-torch (use /usr/bin/python3).
Environment: VITATTN_BIN. Run: python3 -m pytest tests/e2e/test_heads_clean.py
"""
import csv
import io
import math

import cv2
import numpy as np

import harness
import reference_pipeline
import safetensors_io
from harness import TmpCase, dino_mask, files_of, outputs_of, photo_like, run_process

try:
    import torch
    import torch.nn.functional as F
except ImportError as e:  # CI installs python3-torch (scripts/install-deps.sh)
    harness.need(False, f"cannot import torch ({e}); install python3-torch")

D, P, GRID, LAYERS, MLP, HEADS = 32, 8, 4, 3, 64, 2
HEADER = ["image", "layer", "head", "entropy", "distance_px", "mask_share", "flagged_share"]
MEAN = np.array([0.485, 0.456, 0.406], np.float32)
STD = np.array([0.229, 0.224, 0.225], np.float32)
TOL = 1e-6  # heads.csv against numpy on the binary's own float32 matrices

# The planted artifact: patch token PLANTED (cell PLANTED − 1 of the 4×4 grid) is flagged at
# layer ARTIFACT_LAYER only; channel MARK carries it, MLP row SCRATCH writes and removes it.
PLANTED, ARTIFACT_LAYER, MARK, SCRATCH, MARKER = 7, 1, D - 1, MLP - 1, 4.0


# ---------------------------------------------------------------------------
# The oracle: a float64 torch forward of timm-named weights (pre-norm blocks)
# ---------------------------------------------------------------------------

def model_input(bgr):
    """An 8-bit BGR image already at the model input's size → x [1, 3, H, W] float64 (the
    normalised float32 pixels, ImageNet's mean and std)."""
    rgb = bgr[:, :, ::-1].astype(np.float32)
    return torch.from_numpy(((rgb / np.float32(255) - MEAN) / STD).transpose(2, 0, 1)[None].astype(np.float64))


def torch_stream(t, x, heads=HEADS, eps=1e-6):
    """The residual stream after every block, [T, D] each, and each block's (norm2 output, GELU
    output) [T, D], [T, MLP]. Registers (register_tokens) after the class token, without
    position; layer scale (ls1/ls2) when present. The patch positions must be all zero when the
    grid is not the trained one (nothing to resample: the oracle has no interpolation)."""
    tt = {k: torch.from_numpy(np.asarray(v, np.float64)) for k, v in t.items()}
    d = tt["cls_token"].shape[-1]
    patches = F.conv2d(x, tt["patch_embed.proj.weight"], tt["patch_embed.proj.bias"], stride=P)
    patches = patches.flatten(2).transpose(1, 2)[0]                       # [gh·gw, D]
    pos = tt["pos_embed"][0]                                              # [1 + GRID², D]
    if patches.shape[0] == pos.shape[0] - 1:
        patches = patches + pos[1:]
    else:
        assert not pos[1:].any(), "a resampled grid needs zero patch positions here"
    parts = [(tt["cls_token"][0, 0] + pos[0])[None]]
    if "register_tokens" in tt:
        parts.append(tt["register_tokens"][0])
    z = torch.cat(parts + [patches])                                      # [T, D]
    outs, hidden = [], []
    for i in range(sum(1 for k in t if k.endswith(".attn.proj.weight"))):
        b = f"blocks.{i}."
        a = F.layer_norm(z, (d,), tt[b + "norm1.weight"], tt[b + "norm1.bias"], eps)
        q, k, v = F.linear(a, tt[b + "attn.qkv.weight"], tt[b + "attn.qkv.bias"]).reshape(-1, 3, heads, d // heads) \
            .permute(1, 2, 0, 3)                                          # each [H, T, d_head]
        att = torch.softmax(q @ k.transpose(-1, -2) / math.sqrt(d // heads), -1)  # [H, T, T]
        branch = F.linear((att @ v).transpose(0, 1).reshape(-1, d), tt[b + "attn.proj.weight"], tt[b + "attn.proj.bias"])
        z = z + (branch * tt[b + "ls1.gamma"] if b + "ls1.gamma" in tt else branch)
        n2 = F.layer_norm(z, (d,), tt[b + "norm2.weight"], tt[b + "norm2.bias"], eps)
        h = F.gelu(F.linear(n2, tt[b + "mlp.fc1.weight"], tt[b + "mlp.fc1.bias"]))  # [T, MLP]
        branch = F.linear(h, tt[b + "mlp.fc2.weight"], tt[b + "mlp.fc2.bias"])
        z = z + (branch * tt[b + "ls2.gamma"] if b + "ls2.gamma" in tt else branch)
        outs.append(z)
        hidden.append((n2, h))
    return outs, hidden


def norm_ratios(outs, first_patch):
    """Every layer's token norms over its median patch norm, [L, T] (numpy's median)."""
    rows = []
    for z in outs:
        n = z.norm(dim=1).numpy()
        rows.append(n / np.median(n[first_patch:]))
    return np.array(rows)


def flags_of(ratios, first_patch, ratio):
    """The patch tokens above ratio × the median, per layer; fails when one is within 1e-4 of
    the line (float32 against float64 could then disagree, and the test would say nothing)."""
    flags = []
    for r in ratios:
        assert np.abs(r[first_patch:] - ratio).min() > 1e-4, f"a token within 1e-4 of the line: {r}"
        flags.append([j for j in range(first_patch, len(r)) if r[j] > ratio])
    return flags


def planted_tensors(bgr):
    """timm_tensors with the artifact planted (see the module's text), calibrated on `bgr` (the
    4×4-patch input): block 1's MLP row SCRATCH fires on the token whose channel MARK holds
    MARKER and writes 10× the layer's median patch norm into MARK; block 2's fires on that and
    writes it back to MARKER. Nothing else writes into MARK or reads row SCRATCH."""
    t = harness.timm_tensors(D, P, GRID, LAYERS, MLP, seed=5)
    t["patch_embed.proj.weight"][MARK] = 0
    t["patch_embed.proj.bias"][MARK] = 0
    t["cls_token"][..., MARK] = 0
    t["pos_embed"][..., MARK] = 0
    t["pos_embed"][0, PLANTED, MARK] = MARKER
    for i in range(LAYERS):
        b = f"blocks.{i}."
        t[b + "attn.proj.weight"][MARK] = 0
        t[b + "attn.proj.bias"][MARK] = 0
        t[b + "mlp.fc2.weight"][MARK] = 0
        t[b + "mlp.fc2.bias"][MARK] = 0
        t[b + "mlp.fc2.weight"][:, SCRATCH] = 0
        t[b + "mlp.fc1.weight"][SCRATCH] = 0
        t[b + "mlp.fc1.bias"][SCRATCH] = -10
    x = model_input(bgr)
    for i in (ARTIFACT_LAYER, ARTIFACT_LAYER + 1):
        b = f"blocks.{i}."
        t[b + "norm2.weight"][MARK], t[b + "norm2.bias"][MARK] = 1, 0
        outs, hidden = torch_stream(t, x)
        read = hidden[i][0][:, MARK].numpy()  # norm2's output in channel MARK, [T]
        others = np.abs(np.delete(read, PLANTED)).max()
        assert read[PLANTED] > 2 * others, (read[PLANTED], others)
        t[b + "mlp.fc1.weight"][SCRATCH, MARK] = 10
        t[b + "mlp.fc1.bias"][SCRATCH] = -10 * (read[PLANTED] + others) / 2  # fires on PLANTED only
        outs, hidden = torch_stream(t, x)
        fired = hidden[i][1][PLANTED, SCRATCH].item()
        if i == ARTIFACT_LAYER:
            norms = outs[i].norm(dim=1).numpy()
            t[b + "mlp.fc2.weight"][MARK, SCRATCH] = 10 * np.median(norms[1:]) / fired
        else:
            t[b + "mlp.fc2.weight"][MARK, SCRATCH] = -(outs[i][PLANTED, MARK].item() - MARKER) / fired
    return t


def parse_heads_csv(text):
    """heads.csv → (header, rows as dicts with numbers), through Python's RFC 4180 reader."""
    rows = list(csv.reader(io.StringIO(text, newline="")))
    parsed = [{"image": r[0], "layer": int(r[1]), "head": int(r[2]), **{k: float(v) for k, v in zip(HEADER[3:], r[3:])}}
              for r in rows[1:]]
    return rows[0], parsed


def patch_distances(gh, gw, p):
    """[gh·gw, gh·gw] pixel distances of the patch centres (raster order)."""
    yx = np.array([(j // gw, j % gw) for j in range(gh * gw)], np.float64) * p
    return np.sqrt(((yx[:, None] - yx[None]) ** 2).sum(-1))


def expected_rows(attn, first, gh, gw, flagged, patch=P, threshold=0.6):
    """One layer's heads.csv numbers from its matrices attn [H, T, T] (float32 as saved) and its
    flagged tokens: [(entropy, distance_px, mask_share, flagged_share)] per head."""
    a = np.asarray(attn, np.float64)
    dist = patch_distances(gh, gw, patch)
    rows = []
    for h in range(a.shape[0]):
        c = a[h, 0]
        entropy = -sum(p * math.log(p) for p in c if p > 0)
        pp = a[h, first:, first:]                                   # patch queries × patch keys
        distance = float(((pp * dist).sum(1) / pp.sum(1)).mean())
        mask = dino_mask(c[first:].reshape(gh, gw), threshold)
        rows.append((entropy, distance, mask.sum() / (gh * gw), float(sum(c[j] for j in flagged))))
    return rows


class HeadsAndClean(TmpCase):
    tmp_prefix = "vitattn-heads-clean-"

    def vitattn(self, *args, ok=True):
        return self.run_to_new_folder(*args, ok=ok)

    def assert_rows(self, got, want, what):
        for name, g, w in zip(HEADER[3:], got, want):
            self.assertLess(abs(g - w), TOL, f"{what}: {name} {g} != {w}")

    def check_checkpoint(self, name, registers):
        """heads.csv of a 4×7 grid against numpy, every layer, for a random checkpoint."""
        t = harness.timm_tensors(D, P, GRID, LAYERS, MLP, seed=11 + registers, registers=registers)
        t["pos_embed"][0, 1:] = 0  # the oracle resamples nothing (torch_stream)
        model = self.dir / f"{name}.safetensors"
        safetensors_io.write(model, t, {"num_heads": str(HEADS)}, dtype="F32")
        bgr = photo_like(32, 56, seed=registers)  # already the input's size: the grid 4×7, nothing resized
        image = self.dir / f"{name}, wide.png"    # a comma: the name is quoted (RFC 4180)
        cv2.imwrite(str(image), bgr)
        first, ratio = 1 + registers, 1.1
        flags = flags_of(norm_ratios(torch_stream(t, model_input(bgr))[0], first), first, ratio)
        self.assertTrue(any(flags) and not all(len(f) == 28 for f in flags), f"{name}: the flags test nothing: {flags}")
        texts = []
        for layer in range(LAYERS):
            _, out = self.vitattn("--model", model, "--keep-aspect", "--img-size", "32", "--artifact-ratio", str(ratio),
                                  "--layer", str(layer), "--save-attention", image)
            stem = image.stem
            attn = np.load(out / f"{stem}_attn.npy")
            self.assertEqual(attn.shape, (HEADS, first + 28, first + 28))
            texts.append((out / "heads.csv").read_text())
            self.assertEqual((out / f"{stem}_heads.csv").read_text(), texts[-1], "one image: the part is the file")
            header, rows = parse_heads_csv(texts[-1])
            self.assertEqual(header, HEADER)
            self.assertEqual([(r["layer"], r["head"]) for r in rows], [(l, h) for l in range(LAYERS) for h in range(HEADS)])
            self.assertEqual({r["image"] for r in rows}, {str(image)}, "the input as given")
            want = expected_rows(attn, first, 4, 7, flags[layer])
            for r in (r for r in rows if r["layer"] == layer):
                self.assertGreater(r["entropy"], 0)
                self.assertGreater(r["distance_px"], 0)
                self.assert_rows([r[k] for k in HEADER[3:]], want[r["head"]], f"{name} layer {layer} head {r['head']}")
        self.assertEqual(len(set(texts)), 1, f"{name}: heads.csv depends on --layer")
        shares = [r["flagged_share"] for r in parse_heads_csv(texts[0])[1]]
        self.assertTrue(any(s > 0 for s in shares), f"{name}: no flagged share to compare")

    def test_heads_csv_against_numpy_without_registers(self):
        self.check_checkpoint("timm", 0)

    def test_heads_csv_against_numpy_with_registers(self):
        self.check_checkpoint("dinov2", 2)

    def test_heads_csv_of_the_seeded_head(self):
        """The seeded head: one attention-only block whose output is A·V (no residual). Its
        weights from --save-model, the norms of A·V in numpy (reference_pipeline)."""
        image = self.dir / "seeded.png"
        cv2.imwrite(str(image), photo_like(224, 224, seed=4))  # the seeded model's input size
        _, out = self.vitattn("--save-model", self.dir / "seeded.safetensors", "--save-attention", "--artifact-ratio",
                              "1.15", image)
        m = reference_pipeline.load_model(self.dir / "seeded.safetensors")
        X = reference_pipeline.tokens(image, m)                              # [197, D]
        A, stream = reference_pipeline.attention(X, m)                       # [197, 197], A·V [197, d_k]
        norms = np.linalg.norm(stream, axis=1)
        flags = flags_of([norms / np.median(norms[1:])], 1, 1.15)[0]
        self.assertTrue(0 < len(flags) < 196, flags)
        attn = np.load(out / "seeded_attn.npy")
        self.assertEqual(attn.shape, (197, 197))
        self.assertLess(np.abs(attn - A).max(), 1e-5, "the saved model is the one drawn")
        header, rows = parse_heads_csv((out / "heads.csv").read_text())
        self.assertEqual(header, HEADER)
        self.assertEqual(len(rows), 1)
        self.assertEqual((rows[0]["layer"], rows[0]["head"]), (0, 0))
        self.assert_rows([rows[0][k] for k in HEADER[3:]], expected_rows(attn[None], 1, 14, 14, flags, patch=16)[0], "seeded")
        self.assertGreater(rows[0]["flagged_share"], 0)

    # -- the planted artifact --------------------------------------------------------------

    def planted(self, images=1):
        """The planted model and `images` 32×32 images in self.dir/in; returns (model, tensors, images)."""
        bgrs = [photo_like(32, 32, seed=i) for i in range(images)]
        t = planted_tensors(bgrs[0])
        model = self.dir / "planted.safetensors"
        safetensors_io.write(model, t, {"num_heads": str(HEADS)}, dtype="F32")
        (self.dir / "in").mkdir(exist_ok=True)
        paths = []
        for i, bgr in enumerate(bgrs):
            paths.append(self.dir / "in" / f"img{i}.png")
            cv2.imwrite(str(paths[-1]), bgr)
        return model, t, bgrs, paths

    def test_the_planted_artifact_is_flagged_at_its_layer_only(self):
        model, t, bgrs, paths = self.planted()
        ratios = norm_ratios(torch_stream(t, model_input(bgrs[0]))[0], 1)
        self.assertGreater(ratios[ARTIFACT_LAYER, PLANTED], 8, "torch: the planted token's norm")
        self.assertLess(np.delete(ratios[ARTIFACT_LAYER], [0, PLANTED]).max(), 2, "torch: the other tokens")
        self.assertLess(np.delete(ratios, ARTIFACT_LAYER, axis=0)[:, 1:].max(), 2, "torch: the other layers")
        _, out = self.vitattn("--model", model, "--layer", str(ARTIFACT_LAYER), "--save-attention", paths[0])
        attn = np.load(out / "img0_attn.npy")  # [H, T, T] of layer ARTIFACT_LAYER
        _, rows = parse_heads_csv((out / "heads.csv").read_text())
        for r in rows:
            if r["layer"] == ARTIFACT_LAYER:
                self.assertGreater(r["flagged_share"], 0, r)
                self.assertLess(abs(r["flagged_share"] - float(attn[r["head"], 0, PLANTED])), TOL, r)
            else:
                self.assertEqual(r["flagged_share"], 0.0, r)

    def test_clean_leaves_out_exactly_the_planted_token(self):
        model, _, _, paths = self.planted()
        common = ["--model", model, "--layer", str(ARTIFACT_LAYER), "--save-attention", "--threshold", "0.6", paths[0]]
        _, plain = self.vitattn(*common)
        p, clean = self.vitattn(*common, "--clean", "-v")
        self.assertIn(f"in/img0.png: --clean left out 1 flagged token at layer {ARTIFACT_LAYER}", p.stderr)
        before, after = np.load(plain / "img0_cls.npy"), np.load(clean / "img0_cls.npy")
        cell = divmod(PLANTED - 1, GRID)
        want = before.astype(np.float64).copy()
        want[cell] = 0
        want *= before.astype(np.float64).sum() / want.sum()
        self.assertEqual(after[cell], 0.0)
        self.assertLess(np.abs(after - want).max(), 1e-6 * np.abs(want).max(), "the rest scaled to the same total")
        self.assertGreater(before[cell], 0)
        a, b = files_of(plain), files_of(clean)
        self.assertEqual(sorted(a), sorted(b))
        for name in ("img0_attn.npy", "heads.csv", "img0_heads.csv"):  # the matrices and statistics are not cleaned
            self.assertEqual(a[name], b[name], name)
        self.assertNotEqual(a["img0_attn.png"], b["img0_attn.png"], "the overlay draws the cleaned map")
        # At a layer where nothing is flagged, --clean changes nothing.
        others = ["--model", model, "--layer", "2", "--save-attention", paths[0]]
        _, plain2 = self.vitattn(*others)
        p, clean2 = self.vitattn(*others, "--clean", "-v")
        self.assertIn("--clean left out 0 flagged tokens at layer 2", p.stderr)
        self.assertEqual(outputs_of(plain2), outputs_of(clean2))

    def test_the_same_bytes_at_j1_and_j2(self):
        model, _, _, _ = self.planted(images=3)
        trees = []
        for jobs in ("1", "2"):
            _, out = self.vitattn("--model", model, "--clean", "--save-attention", "--layer", str(ARTIFACT_LAYER),
                                  "-j", jobs, "in")
            trees.append(files_of(out))
        self.assertEqual(trees[0], trees[1])
        _, rows = parse_heads_csv(trees[0]["heads.csv"].decode())
        self.assertEqual([r["image"] for r in rows][::LAYERS * HEADS], [f"in/img{i}.png" for i in range(3)],
                         "input order")
        self.assertEqual(len(rows), 3 * LAYERS * HEADS)
        for i in range(3):  # the planted token is every image's artifact: each cleaned map lacks its cell
            self.assertEqual(np.load(out / f"img{i}_cls.npy")[divmod(PLANTED - 1, GRID)], 0.0, i)

    def test_videos_get_no_rows_and_one_warning(self):
        model, _, _, paths = self.planted()
        clip = self.dir / "in" / "clip.avi"
        w = cv2.VideoWriter(str(clip), cv2.CAP_FFMPEG, cv2.VideoWriter_fourcc(*"MJPG"), 5.0, (32, 32))
        self.assertTrue(w.isOpened())
        for i in range(3):
            w.write(photo_like(32, 32, seed=i))
        w.release()
        p, out = self.vitattn("--model", model, "--heads-csv", "in")
        self.assertEqual(p.stderr.count("heads.csv: videos get no rows"), 1, p.stderr)
        _, rows = parse_heads_csv((out / "heads.csv").read_text())
        self.assertEqual({r["image"] for r in rows}, {"in/img0.png"})
        self.assertFalse((out / "clip_heads.csv").exists())

    # -- refusals --------------------------------------------------------------------------

    def test_bad_artifact_ratios_are_refused_before_any_work(self):
        image = self.dir / "x.png"
        cv2.imwrite(str(image), photo_like(32, 32))
        for value in ("0", "nan", "1", "-2", "inf"):
            p, out = self.vitattn("--artifact-ratio", value, "--save-attention", image, ok=False)
            self.assertEqual(p.returncode, 2, f"{value}: {p.stderr}")
            lines = p.stderr.strip().splitlines()
            self.assertEqual(len(lines), 1, f"{value}: {p.stderr}")
            self.assertTrue(lines[0].startswith("error:") and "--artifact-ratio" in lines[0], lines[0])
            self.assertFalse(out.exists(), f"{value}: the output folder was made")
