#!/usr/bin/python3
"""Writes the seed corpora in fuzz/corpus/<target>/: small valid files and hand-broken ones.

    /usr/bin/python3 fuzz/make_seed_corpus.py

Needs Debian's python3-numpy and python3-opencv. The output is committed; run this again
only to change the seeds (it rewrites fuzz/corpus/ from scratch; the files come out the same
on the same Debian packages). Names carry what the replay test (fuzz/replay.cpp) checks:
"ok-*" must be accepted by the target, "bad-*" refused. Everything is tiny on purpose: the
fuzzers start from these and mutate them.
"""
import json
import shutil
import struct
import sys
from pathlib import Path

import cv2
import numpy as np

# The project's one safetensors writer (tests/pylib/safetensors_io.py): encode() for the
# well-formed files, frame() for the broken ones.
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "pylib"))
from safetensors_io import encode as safetensors, frame  # noqa: E402

OUT = Path(__file__).resolve().parent / "corpus"


shutil.rmtree(OUT, ignore_errors=True)


def write(target, name, data):
    d = OUT / target
    d.mkdir(parents=True, exist_ok=True)
    (d / name).write_bytes(bytes(data))


# --- safetensors -------------------------------------------------------------------------

def bf16(a):
    """float32 → bfloat16 bits (truncation), as little-endian bytes."""
    return (np.asarray(a, "<f4").view("<u4") >> 16).astype("<u2").tobytes()


def model(dtype="F32", biases=True, extra=None, metadata=None, drop=(), change=None):
    """A valid tiny model, P=2, D=4, d_k=2, 1+N=5 tokens (S=4), then the changes asked for."""
    rng = np.random.default_rng(7)
    P, D, DK, T = 2, 4, 2, 5
    shapes = {"patch_embed.proj.weight": (D, 3, P, P), "cls_token": (1, 1, D), "pos_embed": (1, T, D),
              "attn.q.weight": (DK, D), "attn.k.weight": (DK, D), "attn.v.weight": (DK, D)}
    if biases:
        shapes.update({"patch_embed.proj.bias": (D,), "attn.q.bias": (DK,), "attn.k.bias": (DK,), "attn.v.bias": (DK,)})
    tensors = {}
    for i, (name, shape) in enumerate(shapes.items()):
        if name in drop:
            continue
        a = rng.normal(0, 0.5, shape).astype("<f4")
        kind = dtype if isinstance(dtype, str) else dtype[i % len(dtype)]
        raw = {"F32": lambda x: x.tobytes(), "F16": lambda x: x.astype("<f2").tobytes(),
               "F64": lambda x: x.astype("<f8").tobytes(), "BF16": bf16}[kind](a)
        tensors[name] = (kind, shape, raw)
    if change:
        change(tensors)
    tensors.update(extra or {})
    return safetensors(tensors, metadata)


def put_nan(t):
    kind, shape, raw = t["attn.k.weight"]
    a = np.frombuffer(raw, "<f4").copy()
    a[3] = np.nan
    t["attn.k.weight"] = (kind, shape, a.tobytes())


def misshape_q(t):
    t["attn.q.weight"] = ("F32", (2, 5), bytes(40))


def grid_of_three(t):
    t["pos_embed"] = ("F32", (1, 4, 4), bytes(64))


meta = {"format": "vitattn-single-head", "mean": "0.5,0.5,0.5", "std": "0.25,0.25,0.25"}
write("safetensors", "ok-model-f32.safetensors", model(metadata=meta))
write("safetensors", "ok-model-mixed-dtypes.safetensors", model(dtype=("F16", "BF16", "F64", "F32")))
write("safetensors", "ok-model-no-biases-extras.safetensors",
      model(biases=False, extra={"position_ids": ("I64", (2,), bytes(16)), "empty": ("F32", (0, 4), b"")}))
good = model(metadata=meta)
write("safetensors", "bad-truncated.safetensors", good[:-1])
write("safetensors", "bad-one-byte-extra.safetensors", good + b"\0")
write("safetensors", "bad-header-length-too-large.safetensors", frame(good[8:], length=len(good)))
write("safetensors", "bad-not-json.safetensors", frame(b'{"a": [1'))
write("safetensors", "bad-json-array.safetensors", frame(b"[1,2,3] "))
write("safetensors", "bad-nan-weight.safetensors", model(change=put_nan))
write("safetensors", "bad-missing-cls-token.safetensors", model(drop=("cls_token",)))
write("safetensors", "bad-misshaped-q.safetensors", model(change=misshape_q))
write("safetensors", "bad-grid-not-square.safetensors", model(change=grid_of_three))
write("safetensors", "bad-mean-two-numbers.safetensors", model(metadata={"mean": "0.5,0.5"}))
write("safetensors", "bad-overlap.safetensors",
      frame(json.dumps({"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]},
                        "b": {"dtype": "F32", "shape": [2], "data_offsets": [4, 12]}},
                       separators=(",", ":")), bytes(12)))
write("safetensors", "bad-short.safetensors", b"\x05\x00\x00")

# --- images ------------------------------------------------------------------------------

y, x = np.mgrid[0:6, 0:8]
colour = np.stack([x * 30, y * 40, (x + y) * 15], -1).astype(np.uint8)
grey = colour[:, :, 1].copy()


def enc(ext, img, params=()):
    ok, buf = cv2.imencode(ext, img, list(params))
    assert ok, ext
    return buf.tobytes()


def exif_jpeg(img, orientation):
    jpg = enc(".jpg", img, [cv2.IMWRITE_JPEG_QUALITY, 50])
    tiff = b"II*\x00" + struct.pack("<I", 8) + struct.pack("<H", 1)
    tiff += struct.pack("<HHII", 0x0112, 3, 1, orientation) + struct.pack("<I", 0)
    payload = b"Exif\x00\x00" + tiff
    return jpg[:2] + b"\xff\xe1" + struct.pack(">H", len(payload) + 2) + payload + jpg[2:]


png = enc(".png", colour)
jpg = enc(".jpg", colour, [cv2.IMWRITE_JPEG_QUALITY, 50])
write("image", "ok-colour.png", png)
write("image", "ok-grey.png", enc(".png", grey))
write("image", "ok-rgba.png", enc(".png", cv2.cvtColor(colour, cv2.COLOR_BGR2BGRA)))
write("image", "ok-16bit.png", enc(".png", colour.astype(np.uint16) * 257))
write("image", "ok-colour.jpg", jpg)
write("image", "ok-grey-progressive.jpg", enc(".jpg", grey, [cv2.IMWRITE_JPEG_PROGRESSIVE, 1, cv2.IMWRITE_JPEG_QUALITY, 50]))
write("image", "ok-exif-rotated.jpg", exif_jpeg(colour, 6))
write("image", "ok-colour.bmp", enc(".bmp", colour))
write("image", "ok-lossless.webp", enc(".webp", colour, [cv2.IMWRITE_WEBP_QUALITY, 101]))
write("image", "ok-lossy.webp", enc(".webp", colour, [cv2.IMWRITE_WEBP_QUALITY, 20]))
write("image", "ok-raw.tiff", enc(".tiff", colour, [cv2.IMWRITE_TIFF_COMPRESSION, 1]))
write("image", "ok-colour.ppm", enc(".ppm", colour))
write("image", "ok-grey.pgm", enc(".pgm", grey))
write("image", "ok-ascii.pbm", b"P1\n# a comment\n4 2\n0 1 0 1\n1 0 1 0\n")
write("image", "ok-colour.pam", enc(".pam", colour))
write("image", "ok-colour.pfm", enc(".pfm", colour.astype(np.float32) / 255))
write("image", "ok-colour.hdr", enc(".hdr", colour.astype(np.float32) / 255))
write("image", "ok-colour.ras", enc(".ras", colour))
write("image", "ok-colour.jp2", enc(".jp2", cv2.resize(colour, (32, 32), interpolation=cv2.INTER_NEAREST)))  # OpenJPEG needs >= 32 px
write("image", "bad-empty.png", b"")
write("image", "bad-text.png", b"plain text with an image extension\n")
write("image", "bad-truncated.png", png[: len(png) // 2])
write("image", "bad-truncated.jpg", jpg[: len(jpg) // 2])
huge = bytearray(png)
huge[16:24] = struct.pack(">II", 60000, 60000)  # IHDR claims 3600 MP
write("image", "bad-huge-header.png", huge)
# Headers claiming 30000x30000 (900 MP) with no data: refused from the header by the 4 MP cap.
write("image", "bad-huge-header.pfm", b"PF\n30000 30000\n-1.0\n")
write("image", "bad-huge-header.pam", b"P7\nWIDTH 30000\nHEIGHT 30000\nDEPTH 3\nMAXVAL 255\nTUPLTYPE RGB\nENDHDR\n")
write("image", "bad-huge-header.ras", struct.pack(">8I", 0x59A66A95, 30000, 30000, 24, 0, 1, 0, 0))
write("image", "bad-huge-header.hdr", b"#?RADIANCE\nFORMAT=32-bit_rle_rgbe\n\n-Y 30000 +X 30000\n")
write("image", "bad-huge-header.j2k", b"\xff\x4f\xff\x51" + struct.pack(">HHIIII", 41, 0, 30000, 30000, 0, 0))
zero = bytearray(enc(".bmp", colour))
zero[18:26] = struct.pack("<ii", 0, 0)
write("image", "bad-zero-size.bmp", zero)

# --- npy (bytes 0-7: rows and cols as u32 LE, then float32 bit patterns) -----------------

write("npy", "ok-2x3.bin", struct.pack("<II", 2, 3) + np.arange(6, dtype="<f4").tobytes())
write("npy", "ok-197x197-folded.bin", struct.pack("<II", 196, 196) + np.array([1.5, -0.0], "<f4").tobytes())
write("npy", "ok-0-rows-wide.bin", struct.pack("<II", 0, 0xFFFFFFFF))
write("npy", "ok-special-values.bin", struct.pack("<II", 1, 5) +
      np.array([np.nan, np.inf, -np.inf, 1e-45, -3.4e38], "<f4").tobytes() + b"\x01\x00\xc0\x7f")
write("npy", "ok-empty.bin", b"")

# --- npy_read (.npy files as `vitattn forward` reads them) ----------------------------------

def npy_bytes(a):
    import io as _io
    buf = _io.BytesIO()
    np.save(buf, a)
    return buf.getvalue()


f4 = npy_bytes(np.arange(6, dtype="<f4").reshape(1, 2, 3))
write("npy_read", "ok-f4-1x2x3.npy", f4)
write("npy_read", "ok-f8-vector.npy", npy_bytes(np.array([0.5, -2.25, 1e300], "<f8")))
write("npy_read", "ok-scalar.npy", npy_bytes(np.float32(3.0)))
write("npy_read", "ok-empty.npy", npy_bytes(np.zeros((0, 3), "<f4")))
write("npy_read", "ok-v2.npy", b"\x93NUMPY\x02\x00" + struct.pack("<I", 118) +
      b"{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }".ljust(117) + b"\n" + np.ones(2, "<f4").tobytes())
write("npy_read", "bad-truncated.npy", f4[:-3])
write("npy_read", "bad-int.npy", npy_bytes(np.arange(4, dtype="<i4")))
write("npy_read", "bad-fortran.npy", npy_bytes(np.asfortranarray(np.ones((2, 3), "<f4"))))
write("npy_read", "bad-big-endian.npy", npy_bytes(np.ones(3, ">f4")))
write("npy_read", "bad-huge-shape.npy", b"\x93NUMPY\x01\x00" + struct.pack("<H", 118) +
      b"{'descr': '<f4', 'fortran_order': False, 'shape': (4294967296, 4294967296, 4294967296), }".ljust(117) + b"\n")
write("npy_read", "bad-header-length.npy", b"\x93NUMPY\x01\x00\xff\xff{'descr'")
write("npy_read", "bad-not-npy.npy", b"PK\x03\x04 a zip, as .npz files are")

# --- pth (torch.save's zip + pickle, assembled here without torch) -------------------------

def pkl_str(s):
    b = s.encode()
    return b"X" + struct.pack("<I", len(b)) + b


def pkl_int(v):
    return b"K" + bytes([v]) if 0 <= v < 256 else b"J" + struct.pack("<i", v)


def pkl_tuple(vals):
    return b"(" + b"".join(pkl_int(v) for v in vals) + b"t"


def pkl_tensor(storage, key, numel, offset, size, stride):
    """torch._utils._rebuild_tensor_v2(('storage', torch.<storage>, key, 'cpu', numel), …)"""
    return (b"ctorch._utils\n_rebuild_tensor_v2\n((" + pkl_str("storage") + b"ctorch\n" + storage.encode() + b"\n" +
            pkl_str(key) + pkl_str("cpu") + pkl_int(numel) + b"tQ" + pkl_int(offset) + pkl_tuple(size) +
            pkl_tuple(stride) + b"\x89ccollections\nOrderedDict\n)Rt" + b"R")


def pkl_dict(items):
    """items: name → pickled value bytes; an OrderedDict, as state_dict() returns."""
    return (b"ccollections\nOrderedDict\n)R(" + b"".join(pkl_str(k) + v for k, v in items.items()) + b"u")


def pth(pickle_body, storages, compress=()):
    """A zip as torch.save writes it: archive/data.pkl, archive/data/<key>, archive/version."""
    import io
    import zipfile
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        def put(name, data):
            info = zipfile.ZipInfo("archive/" + name, date_time=(1980, 1, 1, 0, 0, 0))
            info.compress_type = zipfile.ZIP_DEFLATED if name in compress else zipfile.ZIP_STORED
            z.writestr(info, data)
        put("data.pkl", b"\x80\x02" + pickle_body + b".")
        for key, data in storages.items():
            put("data/" + key, data)
        put("version", b"3\n")
    return buf.getvalue()


def pth_model(dtype="FloatStorage", np_dtype="<f4", transpose_q=False, wrap=None):
    """The tiny single-head model of the safetensors seeds as a state dict; q transposed as a view."""
    rng = np.random.default_rng(7)
    P, D, DK, T = 2, 4, 2, 5
    shapes = {"patch_embed.proj.weight": (D, 3, P, P), "cls_token": (1, 1, D), "pos_embed": (1, T, D),
              "attn.q.weight": (DK, D), "attn.k.weight": (DK, D), "attn.v.weight": (DK, D)}
    items, storages = {}, {}
    for i, (name, shape) in enumerate(shapes.items()):
        a = rng.normal(0, 0.5, shape).astype(np_dtype)
        stride = [int(np.prod(shape[k + 1:])) for k in range(len(shape))]
        if transpose_q and name == "attn.q.weight":  # stored as its transpose, saved as a view
            a, stride = np.ascontiguousarray(a.T), [1, DK]
        storages[str(i)] = a.tobytes()
        items[name] = pkl_tensor(dtype, str(i), a.size, 0, shape, stride)
    body = pkl_dict(items)
    if wrap:
        body = b"}(" + pkl_str(wrap) + body + pkl_str("epoch") + pkl_int(3) + b"u"
    return pth(body, storages)


good_pth = pth_model()
write("pth", "ok-model-f32.pth", good_pth)
write("pth", "ok-model-f16-transposed-view.pth", pth_model("HalfStorage", "<f2", transpose_q=True, wrap="model"))
write("pth", "ok-shared-storage-offset.pth",
      pth(pkl_dict({"a": pkl_tensor("FloatStorage", "0", 6, 2, (2, 2), (2, 1)),
                    "b": pkl_tensor("FloatStorage", "0", 6, 0, (3,), (2,))}), {"0": np.arange(6, dtype="<f4").tobytes()}))
write("pth", "ok-namespace-args.pth",
      pth(b"}(" + pkl_str("args") + b"cargparse\nNamespace\n)\x81}(" + pkl_str("lr") + b"G?\xe0\x00\x00\x00\x00\x00\x00" +
          pkl_str("arch") + pkl_str("vit_small") + b"ub" + pkl_str("teacher") +
          pkl_dict({"w": pkl_tensor("BFloat16Storage", "0", 2, 0, (2,), (1,))}) + b"u", {"0": b"\x80\x3f\x00\x40"}))
write("pth", "bad-os-system.pth", pth(b"cos\nsystem\n(" + pkl_str("echo pwned") + b"tR", {}))
write("pth", "bad-builtins-eval.pth", pth(b"cbuiltins\neval\n(" + pkl_str("1+1") + b"tR", {}))
write("pth", "bad-unknown-storage.pth",
      pth(pkl_dict({"w": pkl_tensor("ComplexFloatStorage", "0", 1, 0, (1,), (1,))}), {"0": b"\0" * 8}))
write("pth", "bad-offset-past-storage.pth",
      pth(pkl_dict({"w": pkl_tensor("FloatStorage", "0", 4, 3, (2,), (1,))}), {"0": b"\0" * 16}))
write("pth", "bad-huge-numel.pth",
      pth(pkl_dict({"w": pkl_tensor("FloatStorage", "0", 2**31 - 1, 0, (1,), (1,))}), {"0": b"\0" * 4}))
write("pth", "bad-compressed.pth",
      pth(pkl_dict({"w": pkl_tensor("FloatStorage", "0", 4, 0, (4,), (1,))}), {"0": b"\0" * 16}, compress=("data/0",)))
write("pth", "bad-truncated.pth", good_pth[:-30])
write("pth", "bad-legacy-pickle.pth", b"\x80\x02\x8a\x0alZ\xfc\x9cF\xf9 j\xa8P\x19.")

# --- damaged layouts: every family's names with tensors missing, extra or misnamed ----------
# (src/model/layout_check.hpp). A tiny ViT (D=4, P=2, one patch, two blocks) under each family's
# names from the tests' own renamer (tests/pylib/harness.py); the safetensors seeds are opened
# as the binary opens them, so a damaged layout is "bad-"; the .pth target accepts any
# well-formed state dict, so its damaged layouts carry no ok-/bad- prefix (seeds, not checked).
from harness import renamed_from_timm, timm_tensors  # noqa: E402

LAYOUTS = {  # family: (block prefix, final norm weight, MLP bias in a block, classifier bias)
    "timm": ("blocks.{}.", "norm.weight", "mlp.fc1.bias", "head.bias"),
    "dino": ("blocks.{}.", "norm.weight", "mlp.fc1.bias", None),
    "dinov2": ("blocks.{}.", "norm.weight", "mlp.fc1.bias", None),
    "hf-vit": ("vit.encoder.layer.{}.", "vit.layernorm.weight", "intermediate.dense.bias", "classifier.bias"),
    "hf-dinov2": ("encoder.layer.{}.", "layernorm.weight", "mlp.fc1.bias", None),
    "torchvision": ("encoder.layers.encoder_layer_{}.", "encoder.ln.weight", "mlp.0.bias", "heads.head.bias"),
    "tintn": ("encoder.blocks.{}.", None, "mlp.dense_1.bias", "classifier.bias"),
}


def family_state(family, layers=2):
    t = timm_tensors(4, 2, 1, layers, 8, seed=3, classes=3 if LAYOUTS[family][3] else 0,
                     registers=1 if family in ("dinov2", "hf-dinov2") else 0)
    return renamed_from_timm(t, family, 4, layers)


def layout_damages(family):
    """name → the state dict damaged that way."""
    block, final_norm, mlp_bias, head_bias = LAYOUTS[family]
    out = {}
    t = family_state(family, layers=3)  # block 1 removed: a gap between 0 and 2
    out["block-gap"] = {k: v for k, v in t.items() if not k.startswith(block.format(1))}
    t = family_state(family)
    del t[block.format(1) + mlp_bias]
    out["mlp-bias-missing"] = t
    t = family_state(family)
    t[block.format(0) + mlp_bias.replace("bias", "biass")] = t.pop(block.format(0) + mlp_bias)
    out["misnamed"] = t
    t = family_state(family)
    t[block.format(1) + "attn.q_norm.weight"] = np.ones(4, np.float32)
    out["extra-in-block"] = t
    if final_norm:
        t = family_state(family)
        del t[final_norm]
        out["norm-half"] = t
    if head_bias:
        t = family_state(family)
        del t[head_bias]
        out["head-bias-missing"] = t
    return out


def pth_state(tensors):
    """A state dict of float32 tensors as torch.save writes it."""
    items, storages = {}, {}
    for i, (name, a) in enumerate(tensors.items()):
        a = np.ascontiguousarray(a, "<f4")
        stride = [int(np.prod(a.shape[k + 1:])) for k in range(a.ndim)]
        storages[str(i)] = a.tobytes()
        items[name] = pkl_tensor("FloatStorage", str(i), a.size, 0, a.shape, stride)
    return pth(pkl_dict(items), storages)


heads = {"num_heads": "2"}
for fam in LAYOUTS:
    write("safetensors", f"ok-layout-{fam}.safetensors", safetensors(family_state(fam), heads))
    for damage, state in layout_damages(fam).items():
        write("safetensors", f"bad-layout-{fam}-{damage}.safetensors", safetensors(state, heads))
    write("pth", f"ok-layout-{fam}.pth", pth_state(family_state(fam)))
    write("pth", f"layout-{fam}-block-gap.pth", pth_state(layout_damages(fam)["block-gap"]))
write("safetensors", "ok-layout-module-prefix.safetensors",
      safetensors({"module." + k: v for k, v in family_state("timm").items()}, heads))
write("safetensors", "bad-layout-dino-head-weight-without-bias.safetensors",
      safetensors({**family_state("dino"), "head.weight": np.ones((3, 4), np.float32)}, heads))
write("safetensors", "ok-layout-dino-projection-head.safetensors",
      safetensors({**family_state("dino"), "head.mlp.0.weight": np.ones((3, 4), np.float32),
                   "head.last_layer.weight_g": np.ones((2, 1), np.float32)}, heads))

# --- png (the encoder: bytes 0-6 choose width, height, channels, filter, level and IDAT size;
#     the rest, repeated, are the pixels) ------------------------------------------------------

def png_seed(w64, wmul, h64, channels, flt, level, idat, pixels):
    return bytes([w64, wmul, h64, channels, flt, level, idat]) + bytes(pixels)


prng = np.random.default_rng(11)
write("png", "ok-1x1-grey.bin", png_seed(0, 0, 0, 0, 0, 0, 0, [7]))
write("png", "ok-odd-bgr-paeth.bin", png_seed(16, 0, 8, 1, 3, 1, 0, prng.integers(0, 256, 300)))
write("png", "ok-wide-bgra-adaptive.bin", png_seed(63, 3, 2, 2, 4, 2, 1, prng.integers(0, 256, 1000)))
write("png", "ok-gradient-sub-up.bin", png_seed(30, 1, 20, 1, 1, 3, 3, range(256)))
write("png", "ok-flat-up.bin", png_seed(40, 0, 40, 1, 2, 1, 0, [200, 100, 50]))
write("png", "ok-empty.bin", b"")
# 2x2 grey whose last pixel has a Paeth tie between b (0) and c (10) with a = 15: b must win
write("png", "ok-paeth-tie.bin", png_seed(1, 0, 1, 0, 3, 1, 0, [10, 0, 15, 99]))

# --- clip_text (a user's text as given to CLIP's tokeniser; ok-* fits 77 ids, bad-* is refused:
#     invalid UTF-8, or too long without truncating) -------------------------------------------

write("clip_text", "ok-caption.txt", b"a photo of a dog on the beach.")
write("clip_text", "ok-empty.txt", b"")
write("clip_text", "ok-accents.txt", "Crème brûlée à la Café Müller, naïve SÃO PAULO".encode())
write("clip_text", "ok-cjk.txt", "一只猫坐在窗台上 東京の夜景 고양이".encode())
write("clip_text", "ok-emoji.txt", "a 🐶 and a 👩🏽‍🚀 with 🇫🇷 flag!!".encode())
write("clip_text", "ok-html-references.txt", b"Tom &amp; Jerry &lt;3 &amp;amp; &eacute;t&#233; &#x1F600; &notit; &#0;")
write("clip_text", "ok-marks-and-spaces.txt", b"  <|startoftext|>a\tb\n\nc<|endoftext|>!!! 3.14 don't  ")
write("clip_text", "bad-utf8-lone-continuation.txt", b"a photo \x80 of")
write("clip_text", "bad-utf8-overlong.txt", b"slash \xc0\xaf")
write("clip_text", "bad-utf8-surrogate.txt", b"\xed\xa0\x80 half a pair")
write("clip_text", "bad-utf8-truncated.txt", "caf\u00e9".encode()[:-1])
write("clip_text", "bad-too-long.txt", b"a photo of a dog, " * 20)
write("clip_text", "bad-too-long-starting-with-lines.txt", b"line one\nline two\n" + b"word " * 100)

if __name__ == "__main__":
    total = sum(p.stat().st_size for p in OUT.rglob("*") if p.is_file())
    print(f"{sum(1 for p in OUT.rglob('*') if p.is_file())} seed files, {total} bytes in {OUT}")
