#!/usr/bin/env python3
"""End-to-end tests of videos as inputs (src/pipeline/process_video.cpp): a clip in, an
attention video out, each frame drawn exactly as the image path draws an image.

The clips are made here with cv2 (a bright square moving over a dark background, 96×96,
a dozen frames) and the model by hand in the single-head layout (models/README.md): its
class token attends to bright patches, so the hottest patch of every frame must sit on the
square. Small on purpose: the whole file runs in seconds.

Needs Debian's python3-numpy and python3-opencv (use /usr/bin/python3).
Environment: VITATTN_BIN (the binary). Run: python3 -m pytest tests/e2e/test_video.py
"""
import os
import signal
import subprocess
import time

import cv2
import numpy as np

import safetensors_io
from harness import BIN, REPO, TmpCase, dino_mask, run, temporaries, timm_checkpoint

SIZE = 96        # frame side in pixels
SQUARE = 24      # the bright square's side
N_FRAMES = 12
FPS = 10.0
P, S = 8, 64     # the model's patch size and input size: an 8×8 grid, patches of 12 frame pixels


def square_at(t):
    """Top-left corner (x, y) of the square in frame t: it crosses the frame diagonally, then back up."""
    x = 4 + (t * 7) % (SIZE - SQUARE - 8)
    y = 6 + (t * 5) % (SIZE - SQUARE - 10)
    return x, y


def frame(t):
    img = np.full((SIZE, SIZE, 3), 20, np.uint8)
    x, y = square_at(t)
    img[y:y + SQUARE, x:x + SQUARE] = (235, 240, 245)
    return img


def write_clip(path, n=N_FRAMES, fourcc="MJPG", fps=FPS, size=SIZE):
    w = cv2.VideoWriter(str(path), cv2.CAP_FFMPEG, cv2.VideoWriter_fourcc(*fourcc), fps, (size, size))
    assert w.isOpened(), f"cv2 cannot write {fourcc} to {path}"
    for t in range(n):
        w.write(frame(t) if size == SIZE else cv2.resize(frame(t), (size, size), interpolation=cv2.INTER_NEAREST))
    w.release()
    return path


def read_clip(path):
    """(frames, fps, width, height) as cv2 (the same FFmpeg) decodes them."""
    cap = cv2.VideoCapture(str(path), cv2.CAP_FFMPEG)
    assert cap.isOpened(), path
    fps = cap.get(cv2.CAP_PROP_FPS)
    w, h = int(cap.get(cv2.CAP_PROP_FRAME_WIDTH)), int(cap.get(cv2.CAP_PROP_FRAME_HEIGHT))
    frames = []
    while True:
        ok, f = cap.read()
        if not ok:
            break
        frames.append(f)
    return frames, fps, w, h


def write_bright_model(path, beta=12.0):
    """Single-head layout, D=2, d_k=1: token feature 0 is the patch's mean brightness (inputs in
    [0, 1]: mean 0, std 1), feature 1 is 1. The class token's query is β along feature 1 and every
    key is feature 0, so the class token's score for patch j is β·brightness_j."""
    D, N = 2, (S // P) ** 2
    w_pe = np.zeros((D, 3, P, P), np.float32)
    w_pe[0] = 1.0 / (3 * P * P)
    tensors = {
        "patch_embed.proj.weight": w_pe,
        "patch_embed.proj.bias": np.array([0.0, 1.0], np.float32),
        "cls_token": np.array([[[0.0, 1.0]]], np.float32),
        "pos_embed": np.zeros((1, 1 + N, D), np.float32),
        "attn.q.weight": np.array([[0.0, beta]], np.float32),
        "attn.k.weight": np.array([[1.0, 0.0]], np.float32),
        "attn.v.weight": np.array([[1.0, 0.0]], np.float32),
    }
    safetensors_io.write(path, tensors, {"mean": "0,0,0", "std": "1,1,1"})
    return path


class Video(TmpCase):
    tmp_prefix = "vitattn-video-"

    def setUp(self):
        super().setUp()
        self.model = write_bright_model(self.dir / "bright.safetensors")

    def vitattn(self, *args, ok=True):
        rc, out, err = run("--model", self.model, *args)
        if ok:
            self.assertEqual(rc, 0, err)
        return rc, out, err

    def assert_follows_square(self, maps, indices):
        """The hottest patch of each map lies on the square of its source frame."""
        cell = SIZE / (S // P)  # frame pixels per patch
        for m, t in zip(maps, indices):
            r, c = np.unravel_index(int(np.argmax(m)), m.shape)
            cx, cy = (c + 0.5) * cell, (r + 0.5) * cell
            x, y = square_at(t)
            self.assertTrue(x <= cx < x + SQUARE and y <= cy < y + SQUARE,
                            f"frame {t}: hottest patch ({r}, {c}) centred at ({cx}, {cy}) is off the square at ({x}, {y})")

    # --- the attention video --------------------------------------------------------------
    def test_mp4_in_gives_same_size_fps_and_frames_and_the_map_follows_the_square(self):
        clip = write_clip(self.dir / "clip.mp4", fourcc="avc1")
        _, _, err = self.vitattn(clip, "-o", self.dir / "out", "--save-attention")
        self.assertIn("H.264 in MP4", err)
        self.assertIn("1 video in", err)  # the summary counts a video as one video, not as an image
        out = self.dir / "out/clip_attn.mp4"
        frames, fps, w, h = read_clip(out)
        self.assertEqual((len(frames), fps, w, h), (N_FRAMES, FPS, SIZE, SIZE))
        self.assertEqual(cv2.VideoCapture(str(out)).get(cv2.CAP_PROP_FOURCC), cv2.VideoWriter_fourcc(*"avc1"))
        maps = np.load(self.dir / "out/clip_cls.npy")
        self.assertEqual(maps.shape, (N_FRAMES, S // P, S // P))
        self.assertEqual(maps.dtype, np.float32)
        self.assert_follows_square(maps, range(N_FRAMES))
        # The overlay's hottest colour (jet's red end) is drawn on the square too: the video
        # holds the frames in order, not only the right number of them.
        for t, f in enumerate(frames):
            x, y = square_at(t)
            red = f[:, :, 2].astype(int) - f[:, :, 0].astype(int)
            ry, rx = np.unravel_index(int(np.argmax(red)), red.shape)
            self.assertTrue(x - 6 <= rx < x + SQUARE + 6 and y - 6 <= ry < y + SQUARE + 6, f"frame {t}: red at ({rx}, {ry})")
        self.assertEqual(temporaries(self.dir / "out"), [])

    def test_an_odd_sized_clip_keeps_every_pixel_and_says_it_was_padded(self):
        # H.264 4:2:0 needs even sizes; FFmpeg would crop 97x75 to 96x74 without a word.
        w_odd, h_odd = 97, 75
        # cv2's own writer crops odd sizes too, so the clip is a YUV4MPEG2 stream written here
        # (4:2:0, chroma planes of ceil(W/2) x ceil(H/2)); FFmpeg finds its format by its bytes.
        clip = self.dir / "odd.avi"
        with open(clip, "wb") as f:
            f.write(b"YUV4MPEG2 W%d H%d F10:1 Ip A1:1 C420jpeg\n" % (w_odd, h_odd))
            for t in range(4):
                yuv = cv2.cvtColor(cv2.resize(frame(t), (w_odd, h_odd), interpolation=cv2.INTER_NEAREST), cv2.COLOR_BGR2YUV)
                half = ((w_odd + 1) // 2, (h_odd + 1) // 2)
                planes = [yuv[:, :, 0]] + [cv2.resize(yuv[:, :, c], half, interpolation=cv2.INTER_AREA) for c in (1, 2)]
                f.write(b"FRAME\n" + b"".join(np.ascontiguousarray(p).tobytes() for p in planes))
        self.assertEqual(read_clip(clip)[2:], (w_odd, h_odd))
        _, _, err = self.vitattn(clip, "-o", self.dir / "out", "--frames-dir")
        if "H.264 in MP4" not in err:
            self.skipTest("no H.264 writer here: MJPG takes odd sizes as they are")
        frames, _, w, h = read_clip(self.dir / "out/odd_attn.mp4")
        self.assertEqual((len(frames), w, h), (4, w_odd + 1, h_odd + 1))
        warned = [line for line in err.splitlines() if "odd_attn.mp4" in line and "97x75" in line and "98x76" in line]
        self.assertEqual(len(warned), 1, err)
        self.assertTrue(warned[0].startswith("warning:"), warned[0])
        pngs = sorted((self.dir / "out/odd_frames").iterdir())
        self.assertEqual(len(pngs), 4)
        for f, png in zip(frames, pngs):
            drawn = cv2.imread(str(png))
            self.assertEqual(drawn.shape, (h_odd, w_odd, 3))  # the frames as drawn keep the clip's own size
            # The video holds that frame at its place (not shifted or scaled), and the added
            # column and row repeat the last ones; H.264 is lossy, so within a tolerance.
            self.assertLess(np.abs(f[:h_odd, :w_odd].astype(int) - drawn.astype(int)).mean(), 6.0)
            self.assertLess(np.abs(f[:h_odd, w_odd].astype(int) - drawn[:, w_odd - 1].astype(int)).mean(), 12.0)
            self.assertLess(np.abs(f[h_odd, :w_odd].astype(int) - drawn[h_odd - 1].astype(int)).mean(), 12.0)

    def test_a_frame_is_drawn_bit_for_bit_as_the_image_path_draws_it(self):
        clip = write_clip(self.dir / "clip.avi")
        opts = ["--threshold", "0.6", "--colormap", "inferno", "--alpha", "0.6", "--keep-aspect", "--img-size", "64"]
        self.vitattn(clip, "-o", self.dir / "v", "--save-attention", "--frames-dir", *opts)
        frames, _, _, _ = read_clip(clip)
        maps = np.load(self.dir / "v/clip_cls.npy")
        picked = (0, 5, N_FRAMES - 1)
        (self.dir / "img").mkdir()
        for t in picked:  # lossless: the same pixels the video gave
            self.assertTrue(cv2.imwrite(str(self.dir / f"img/f{t}.png"), frames[t]))
        self.vitattn(self.dir / "img", "-o", self.dir / "i", "--save-attention", *opts)
        for t in picked:
            image_map = np.load(self.dir / f"i/f{t}_cls.npy")
            self.assertEqual(image_map.tobytes(), maps[t].tobytes(), f"frame {t}: map differs from the image path's")
            image_overlay = cv2.imread(str(self.dir / f"i/f{t}_attn.png"), cv2.IMREAD_UNCHANGED)
            frame_overlay = cv2.imread(str(self.dir / f"v/clip_frames/{t:06d}_attn.png"), cv2.IMREAD_UNCHANGED)
            self.assertTrue(np.array_equal(image_overlay, frame_overlay), f"frame {t}: overlay differs from the image path's")

    def test_top_gives_each_drawn_frame_the_classes_the_image_path_gives_it(self):
        # The trained CIFAR-10 model (it has a classifier); the frames picked by --every.
        cifar = REPO / "models" / "vit_cifar10_tintn.safetensors"
        (self.dir / "in").mkdir()
        clip = write_clip(self.dir / "in" / "clip.avi")
        self.write("in/photo.png", frame(7))
        rc, out, err = run("--model", cifar, "--top", "2", "--every", "5", self.dir / "in", "-o", self.dir / "v")
        self.assertEqual(rc, 0, err)
        self.assertIn("--top: a video's classes go frame by frame to <name>_predictions.csv", err)
        self.assertEqual([line.split(":")[0] for line in out.splitlines()], [str(self.dir / "in" / "photo.png")],
                         "only the image's classes are printed")
        batch = (self.dir / "v" / "predictions.csv").read_text().splitlines()
        self.assertEqual({row.split(",")[0] for row in batch[1:]}, {str(self.dir / "in" / "photo.png")})
        rows = (self.dir / "v" / "clip_predictions.csv").read_text().splitlines()
        self.assertEqual(rows[0], "file,frame,rank,class,label,probability")
        picked = (0, 5, 10)
        self.assertEqual([tuple(r.split(",")[:3]) for r in rows[1:]],
                         [(str(clip), str(t), str(rank)) for t in picked for rank in (1, 2)])
        # The oracle: each picked frame, as decoded, drawn as an image (lossless PNG).
        frames, _, _, _ = read_clip(clip)
        (self.dir / "img").mkdir()
        for t in picked:
            self.assertTrue(cv2.imwrite(str(self.dir / f"img/f{t}.png"), frames[t]))
        rc, _, err = run("--model", cifar, "--top", "2", self.dir / "img", "-o", self.dir / "i")
        self.assertEqual(rc, 0, err)
        for t in picked:
            image_rows = (self.dir / f"i/f{t}_predictions.csv").read_text().splitlines()[1:]
            frame_rows = [r for r in rows[1:] if r.split(",")[1] == str(t)]
            self.assertEqual([r.split(",")[2:] for r in frame_rows], [r.split(",")[1:] for r in image_rows],
                             f"frame {t}: classes differ from the image path's")

    def test_head_all_draws_the_image_paths_sheet_as_the_frames(self):
        # A tiny two-head, two-layer timm checkpoint (8×8 patches of 8 px at 64): each frame is
        # the labelled sheet of both heads, as the image path's <name>_attn.png is.
        model = self.dir / "timm.safetensors"
        timm_checkpoint(model, 16, 8, 8, 2, 32, 2, True, 0, 0, 0, 1.0)
        clip = write_clip(self.dir / "clip.avi")
        opts = ["--model", model, "--head", "all", "--layer", "0", "--save-attention"]
        rc, _, err = run(clip, "-o", self.dir / "v", "--frames-dir", "--max-frames", "3", *opts)
        self.assertEqual(rc, 0, err)
        maps = np.load(self.dir / "v/clip_cls.npy")
        self.assertEqual(maps.shape, (3, 2, 8, 8))
        frames, _, _, _ = read_clip(clip)
        png = self.dir / "f2.png"
        self.assertTrue(cv2.imwrite(str(png), frames[2]))
        rc, _, err = run(png, "-o", self.dir / "i", *opts)
        self.assertEqual(rc, 0, err)
        self.assertEqual(np.load(self.dir / "i/f2_cls.npy").tobytes(), maps[2].tobytes())
        sheet = cv2.imread(str(self.dir / "i/f2_attn.png"))
        self.assertTrue(np.array_equal(cv2.imread(str(self.dir / "v/clip_frames/000002_attn.png")), sheet))
        video, _, w, h = read_clip(self.dir / "v/clip_attn.mp4")
        self.assertEqual((len(video), h, w), (3, sheet.shape[0], sheet.shape[1]))

    def test_threshold_outline_is_drawn_on_every_frame(self):
        clip = write_clip(self.dir / "clip.avi")
        self.vitattn(clip, "-o", self.dir / "plain", "--frames-dir", "--save-attention")
        self.vitattn(clip, "-o", self.dir / "mask", "--frames-dir", "--threshold", "0.5")
        maps = np.load(self.dir / "plain/clip_cls.npy")
        cell = SIZE // (S // P)
        for t in range(N_FRAMES):
            plain = cv2.imread(str(self.dir / f"plain/clip_frames/{t:06d}_attn.png"))
            masked = cv2.imread(str(self.dir / f"mask/clip_frames/{t:06d}_attn.png"))
            changed = np.any(plain != masked, axis=2)
            self.assertGreater(int(changed.sum()), 0, f"frame {t}: no outline drawn")
            # The outline runs along the border of DINO's mask: every changed pixel is near a
            # patch edge between a kept and a dropped patch.
            keep = dino_mask(maps[t], 0.5)
            big = np.kron(keep.astype(np.uint8), np.ones((cell, cell), np.uint8))
            border = cv2.morphologyEx(big, cv2.MORPH_GRADIENT, np.ones((5, 5), np.uint8)) > 0
            self.assertTrue(np.all(border[changed]), f"frame {t}: changes away from the mask's border")

    def test_every_and_max_frames_pick_the_frames(self):
        clip = write_clip(self.dir / "clip.avi")
        self.vitattn(clip, "-o", self.dir / "all", "--save-attention")
        full = np.load(self.dir / "all/clip_cls.npy")
        self.vitattn(clip, "-o", self.dir / "every", "--save-attention", "--every", "5")
        frames, fps, _, _ = read_clip(self.dir / "every/clip_attn.mp4")
        self.assertEqual(len(frames), 3)  # frames 0, 5, 10
        self.assertAlmostEqual(fps, FPS / 5, places=3)
        self.assertEqual(np.load(self.dir / "every/clip_cls.npy").tobytes(), full[[0, 5, 10]].tobytes())
        self.vitattn(clip, "-o", self.dir / "max", "--save-attention", "--max-frames", "4")
        frames, fps, _, _ = read_clip(self.dir / "max/clip_attn.mp4")
        self.assertEqual((len(frames), fps), (4, FPS))
        self.assertEqual(np.load(self.dir / "max/clip_cls.npy").tobytes(), full[:4].tobytes())
        self.vitattn(clip, "-o", self.dir / "both", "--save-attention", "--every", "2", "--max-frames", "3")
        self.assertEqual(np.load(self.dir / "both/clip_cls.npy").tobytes(), full[[0, 2, 4]].tobytes())
        for bad in (["--every", "0"], ["--max-frames", "0"], ["--smooth", "0"], ["--smooth", "nan"]):
            rc, _, err = run(clip, "-o", self.dir / "bad", *bad)
            self.assertEqual(rc, 2, bad)
            self.assertEqual(len(err.strip().splitlines()), 1, err)
            self.assertIn(bad[0], err)

    def test_smooth_is_the_stated_moving_average_and_reduces_flicker(self):
        clip = write_clip(self.dir / "clip.avi")
        self.vitattn(clip, "-o", self.dir / "raw", "--save-attention")
        self.vitattn(clip, "-o", self.dir / "ema", "--save-attention", "--smooth", "0.3")
        raw = np.load(self.dir / "raw/clip_cls.npy").astype(np.float64)
        ema = np.load(self.dir / "ema/clip_cls.npy").astype(np.float64)
        want = raw.copy()
        for t in range(1, len(raw)):
            want[t] = 0.3 * raw[t] + 0.7 * want[t - 1]
        np.testing.assert_allclose(ema, want, rtol=0, atol=1e-6)
        change = lambda m: float(np.abs(np.diff(m, axis=0)).mean())
        self.assertLess(change(ema), 0.5 * change(raw))
        # --smooth 1 is no smoothing at all.
        self.vitattn(clip, "-o", self.dir / "one", "--save-attention", "--smooth", "1")
        self.assertEqual(np.load(self.dir / "one/clip_cls.npy").tobytes(), np.load(self.dir / "raw/clip_cls.npy").tobytes())

    def test_folder_mixes_images_and_videos_and_outputs_do_not_depend_on_jobs(self):
        (self.dir / "in").mkdir()
        for name, fourcc in (("a.avi", "MJPG"), ("b.mkv", "FFV1"), ("c.mp4", "avc1")):
            write_clip(self.dir / "in" / name, fourcc=fourcc)
        self.write("in/d.png", frame(3))
        self.write("in/c.png", frame(4))  # shares its stem with c.mp4
        outs = []
        for j in ("1", "3"):
            out = self.dir / f"out{j}"
            _, _, err = self.vitattn(self.dir / "in", "-o", out, "-j", j, "--save-attention", "--frames-dir")
            self.assertIn("2 images and 3 videos in", err)
            self.assertIn(f"c.mp4 → {out / 'c_mp4_attn.mp4'} (another input has the same name)", err)
            outs.append(out)
        names = sorted(str(p.relative_to(outs[0])) for p in outs[0].rglob("*") if p.is_file())
        for want in ("a_attn.mp4", "b_attn.mp4", "c_mp4_attn.mp4", "c_png_attn.png", "d_attn.png", "a_cls.npy",
                     "a_frames/000011_attn.png"):
            self.assertIn(want, names)
        for n in names:
            self.assertEqual((outs[0] / n).read_bytes(), (outs[1] / n).read_bytes(), f"{n} differs between -j 1 and -j 3")
        self.assertEqual(names, sorted(str(p.relative_to(outs[1])) for p in outs[1].rglob("*") if p.is_file()))
        # A second run in place leaves the same files: the outputs are not taken as inputs.
        _, _, err = self.vitattn(outs[0], "-o", outs[0], "-r")
        self.assertIn("no images found", err)

    def test_frames_at_once_give_the_bytes_of_one_frame_at_a_time(self):
        # A lone worker (-j 1, the clip the only input) computes as many frames at once as the
        # machine has cores; two workers (-j 2, an image beside the clip) one frame at a time.
        # The smoothing (order-dependent), the classes, the maps and every frame must be the
        # same bytes: the frames are drawn in their order, whatever order their forwards end in.
        if (os.cpu_count() or 1) < 2:
            self.skipTest("one core: a lone worker computes one frame at a time too")
        cifar = REPO / "models" / "vit_cifar10_tintn.safetensors"
        n = 120  # enough frames that some forwards end out of order
        (self.dir / "in").mkdir()
        clip = write_clip(self.dir / "in" / "clip.avi", n=n)
        self.write("in/photo.png", frame(3))
        opts = ["--model", cifar, "--smooth", "0.4", "--top", "3", "--save-attention", "--frames-dir"]
        for name, inputs, j in (("alone", clip, "1"), ("pair", self.dir / "in", "2")):
            rc, _, err = run(inputs, "-o", self.dir / f"out_{name}", "-j", j, *opts)
            self.assertEqual(rc, 0, err)
        wanted = ["clip_predictions.csv", "clip_cls.npy"] + [f"clip_frames/{t:06d}_attn.png" for t in range(n)] + ["clip_attn.mp4"]
        for name in ("alone", "pair"):
            out = self.dir / f"out_{name}"
            names = sorted(str(p.relative_to(out)) for p in out.rglob("*") if p.is_file() and str(p.relative_to(out)).startswith("clip"))
            self.assertEqual(names, sorted(wanted + ["clip_settings.txt"]))
        for f in wanted:
            self.assertEqual((self.dir / "out_alone" / f).read_bytes(), (self.dir / "out_pair" / f).read_bytes(),
                             f"{f}: frames at once differ from one frame at a time")
        # (test_smooth_is_the_stated_moving_average_… checks the average itself, on a lone clip.)
        self.assertEqual(np.load(self.dir / "out_alone" / "clip_cls.npy").shape[0], n)
        rows = (self.dir / "out_alone" / "clip_predictions.csv").read_text().splitlines()[1:]
        self.assertEqual([int(r.split(",")[1]) for r in rows], [t for t in range(n) for _ in range(3)])

    # --- whole files only -----------------------------------------------------------------
    def long_clip(self):
        # Long enough (and the seeded 224 model slow enough) to be caught in the middle.
        return write_clip(self.dir / "long.avi", n=240)

    def start_and_wait_for_the_video_file(self, clip, out):
        """Starts vitattn on `clip` and returns once the video is being written (a file exists in `out`)."""
        proc = subprocess.Popen([BIN, clip, "-o", out], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        deadline = time.monotonic() + 20
        while not (out.is_dir() and any(out.iterdir())) and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.005)
        self.assertIsNone(proc.poll(), "finished before it could be interrupted")
        return proc

    def test_interrupted_video_leaves_nothing_under_its_name_and_skip_existing_redoes_it(self):
        clip, out = self.long_clip(), self.dir / "out"
        proc = self.start_and_wait_for_the_video_file(clip, out)
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=30)
        self.assertEqual(proc.returncode, 128 + signal.SIGTERM, err)
        self.assertIn("interrupted", err)
        self.assertFalse((out / "long_attn.mp4").exists(), "an interrupted video left a file under its name")
        self.assertEqual(temporaries(out), [])
        # SIGKILL: no chance to clean up, but still nothing under the final name.
        proc = self.start_and_wait_for_the_video_file(clip, out)
        proc.kill()
        proc.wait(timeout=30)
        self.assertFalse((out / "long_attn.mp4").exists(), "an interrupted video left a file under its name")
        for t in temporaries(out):
            os.unlink(t)
        # --skip-existing does the video that is missing, then leaves it alone.
        rc, _, err = run(clip, "-o", out, "--skip-existing", "--max-frames", "3")
        self.assertEqual(rc, 0, err)
        done = out / "long_attn.mp4"
        self.assertEqual(len(read_clip(done)[0]), 3)
        before = done.stat().st_mtime_ns
        rc, _, err = run(clip, "-o", out, "--skip-existing", "--max-frames", "3")
        self.assertEqual(rc, 0, err)
        self.assertIn("1 skipped (already done)", err)
        self.assertEqual(done.stat().st_mtime_ns, before)

    # --- bad input ------------------------------------------------------------------------
    def test_bad_videos_get_one_line_each_and_the_batch_goes_on(self):
        d = self.dir / "in"
        d.mkdir()
        good = write_clip(d / "good.avi")
        data = good.read_bytes()
        # Cut inside the 9th frame: the frames before the cut are drawn, with a warning (and
        # the cut frame as far as the decoder gets).
        (d / "cut.avi").write_bytes(data[:int(len(data) * 0.8)])
        (d / "text.mp4").write_text("not a video\n")
        (d / "empty.mkv").write_bytes(b"")
        write_clip(d / "zero.avi", n=0)
        write_clip(d / "big.avi", size=160)  # over --max-pixels
        # An AVI whose codec tag FFmpeg knows nothing of.
        (d / "codec.avi").write_bytes(data.replace(b"MJPG", b"QQQQ"))
        self.write("in/photo.png", frame(0))
        rc, _, err = self.vitattn(d, "-o", self.dir / "out", "--max-pixels", "20000", "--save-attention", ok=False)
        self.assertEqual(rc, 1, err)
        lines = [l for l in err.strip().splitlines() if "in/" in l]
        def line_for(name):
            found = [l for l in lines if f"{name}:" in l]
            self.assertEqual(len(found), 1, f"{name}: {found} in\n{err}")
            return found[0]
        self.assertRegex(line_for("cut.avi"), r"^warning: .*cut\.avi: truncated or corrupt video: decoded \d+ of the 12 frames")
        self.assertRegex(line_for("text.mp4"), r"^error: .*text\.mp4: cannot open video")
        self.assertRegex(line_for("empty.mkv"), r"^error: .*empty\.mkv: file is empty")
        self.assertRegex(line_for("zero.avi"), r"^error: .*zero\.avi: video has no frames")
        self.assertRegex(line_for("big.avi"), r"^error: .*big\.avi: video frames are 160x160 .* over the pixel limit .*--max-pixels")
        self.assertRegex(line_for("codec.avi"), r"^error: .*codec\.avi: cannot open video")
        out = self.dir / "out"
        self.assertTrue((out / "good_attn.mp4").is_file())
        self.assertTrue((out / "photo_attn.png").is_file())
        n_cut = len(read_clip(out / "cut_attn.mp4")[0])
        self.assertEqual(n_cut, len(read_clip(d / "cut.avi")[0]))  # what the same decoder gives
        self.assertTrue(1 < n_cut < N_FRAMES, n_cut)
        self.assertEqual(np.load(out / "cut_cls.npy").shape[0], n_cut)
        good_maps = np.load(out / "good_cls.npy")
        self.assertEqual(np.load(out / "cut_cls.npy")[:n_cut - 1].tobytes(), good_maps[:n_cut - 1].tobytes())
        for name in ("text", "empty", "zero", "big", "codec"):
            self.assertEqual(list(out.glob(f"{name}_*")), [], name)
        self.assertEqual(temporaries(out), [])
        self.assertNotIn("moov", err)  # nothing from FFmpeg itself on stderr
        # --strict refuses the cut video instead of drawing part of it.
        rc, _, err = self.vitattn(d / "cut.avi", "-o", self.dir / "strict", "--strict", ok=False)
        self.assertEqual(rc, 1, err)
        self.assertIn("refused as damaged", err)
        self.assertFalse((self.dir / "strict/cut_attn.mp4").exists())
