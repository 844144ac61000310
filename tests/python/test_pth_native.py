#!/usr/bin/python3
"""vitattn reads PyTorch checkpoints natively: bit for bit what it reads from the safetensors
file that scripts/pth_to_safetensors.py (torch's own loader) makes of the same checkpoint.

Run:  /usr/bin/python3 tests/python/test_pth_native.py
Env:  VITATTN_BIN  binary to test (default <repo>/build/dev/vitattn)

Every checkpoint is written here by torch.save from a small torchvision VisionTransformer:
F32, F16, BF16 and F64 storages; nested under model / state_dict / teacher with "module." and
"backbone." prefixes; views that are not contiguous (transposed weights, slices with a storage
offset) and several tensors sharing one storage; a DINO-style full checkpoint with
args=argparse.Namespace(...), read with --key. For each, `vitattn forward` on the .pth and on
the converted .safetensors must write the same .npy bytes (same build, same machine: any
difference means the tensors differ), and the logits must match torch's own forward (1e-4).
Then files that must be refused (code in the pickle, unknown storage type, broken zip, views
out of their storage): exit 2, one line naming the file, nothing written, nothing run.
Skips when torch cannot be imported (fails under CI=true).
Run: python3 -m pytest tests/python/test_pth_native.py
"""
import argparse
import collections
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

import numpy as np

from harness import REPO, need, run_process
from tally import Tally

try:
    import torch
    import torchvision
except ImportError as e:
    need(False, f"pth_native: cannot import torch/torchvision ({e}); install python3-torch python3-torchvision")

CONVERT = REPO / "scripts/pth_to_safetensors.py"
REL_TOL = 1e-4
HEADS = 4
torch.set_grad_enabled(False)
torch.set_num_threads(2)
T = Tally()


def make_vit(seed):
    torch.manual_seed(seed)
    m = torchvision.models.VisionTransformer(32, 8, 2, HEADS, 64, 128, num_classes=5).eval()
    torch.nn.init.normal_(m.heads.head.weight, std=0.5)  # torchvision starts it at zero
    torch.nn.init.normal_(m.heads.head.bias, std=0.5)
    return m


def as_views(sd):
    """The same values, saved as views: 2-D weights transposed twice (strides (1, rows)), every
    1-D tensor a slice of one shared storage at its own offset, the rest offset by 3."""
    out = collections.OrderedDict()
    vectors = [k for k, v in sd.items() if v.dim() == 1]
    shared = torch.cat([torch.randn(5)] + [sd[k] for k in vectors])
    at = 5
    for k, v in sd.items():
        if v.dim() == 2:
            out[k] = v.t().contiguous().t()
            assert not out[k].is_contiguous()
        elif v.dim() == 1:
            out[k] = shared[at:at + v.numel()]
            at += v.numel()
        else:
            big = torch.cat([torch.randn(3), v.flatten()])
            out[k] = big[3:].view(v.shape)
        assert torch.equal(out[k], v)
    assert out[vectors[0]].storage_offset() == 5
    assert out[vectors[0]].storage().data_ptr() == out[vectors[-1]].storage().data_ptr()
    return out


def run(*args):
    return run_process(*args)


def npy_files(d):
    return {p.name: p.read_bytes() for p in sorted(Path(d).glob("*.npy"))} if Path(d).is_dir() else {}


def check_same_as_converted(tmp, name, obj, x, ref_model, key=None, strip=None, convert=None):
    """torch.save(obj) → .pth; converted → .safetensors; vitattn forward on both, bytes equal.
    `convert`: what the converter reads instead of obj (torch 1.13's weights_only loader, which
    the script uses, refuses argparse.Namespace and even floats in a pickle: BINFLOAT)."""
    pth = tmp / f"{name}.pth"
    torch.save(obj, pth)
    st = tmp / f"{name}.safetensors"
    src = pth
    if convert is not None:
        src = tmp / f"{name}_for_converter.pth"
        torch.save(convert, src)
    cmd = [sys.executable, CONVERT, src, st] + (["--key", key] if key else []) + (["--strip", strip] if strip else [])
    p = subprocess.run(list(map(str, cmd)), capture_output=True, text=True)
    if not T.check(p.returncode == 0, f"{name}: pth_to_safetensors.py failed: {p.stderr.strip()}"):
        return
    keyarg = ["--key", key] if key else []
    a = run("forward", "--model", pth, *keyarg, "--heads", HEADS, tmp / "x.npy", "-o", tmp / f"{name}_pth", "-v")
    b = run("forward", "--model", st, "--heads", HEADS, tmp / "x.npy", "-o", tmp / f"{name}_st")
    T.check(a.returncode == 0, f"{name}: vitattn forward on the .pth failed: {a.stderr.strip()[-300:]}")
    T.check(b.returncode == 0, f"{name}: vitattn forward on the .safetensors failed: {b.stderr.strip()[-300:]}")
    T.check("family torchvision" in a.stderr, f"{name}: the .pth is not read as torchvision")
    failed_before = T.failed
    got, want = npy_files(tmp / f"{name}_pth"), npy_files(tmp / f"{name}_st")
    T.check(set(want) == {"x_attention.npy", "x_features.npy", "x_logits.npy"}, f"{name}: outputs {sorted(want)}")
    for f in want:
        T.check(got.get(f) == want[f], f"{name}: {f} differs between the .pth and the converted .safetensors")
    logits = ref_model(x).numpy()
    mine = np.load(tmp / f"{name}_pth" / "x_logits.npy")
    err = float(np.abs(mine - logits).max())
    T.check(float(np.abs(logits).min()) > 1e-3, f"{name}: logits are trivial")
    T.check(err <= REL_TOL * max(1.0, float(np.abs(logits).max())), f"{name}: logits differ from torch by {err:.2e}")
    if T.failed == failed_before:
        print(f"ok   {name}: .pth and .safetensors outputs identical ({len(got)} files), logits max |Δ| vs torch {err:.1e}")


def rounded(model, dtype):
    m = make_vit(0)
    m.load_state_dict({k: v.to(dtype).float() for k, v in model.state_dict().items()})
    return m


def rewrite_zip(src, dst, change=lambda name, data: data, deflate=()):
    """Copies a torch.save zip entry by entry, letting `change` edit an entry's bytes."""
    with zipfile.ZipFile(src) as zin, zipfile.ZipFile(dst, "w") as zout:
        for info in zin.infolist():
            data = change(info.filename, zin.read(info.filename))
            kind = zipfile.ZIP_DEFLATED if any(info.filename.endswith(d) for d in deflate) else zipfile.ZIP_STORED
            zout.writestr(zipfile.ZipInfo(info.filename, date_time=(1980, 1, 1, 0, 0, 0)), data, compress_type=kind)


def edit_pickle(old, new):
    def change(name, data):
        if not name.endswith("data.pkl"):
            return data
        assert old in data, (old, data[:200])
        return data.replace(old, new, 1)
    return change


def check_refused(tmp, path, expected):
    out = tmp / ("out_" + path.stem)
    p = run("forward", "--model", path, tmp / "x.npy", "-o", out)
    lines = p.stderr.strip().splitlines()
    ok = T.check(p.returncode == 2, f"{path.name}: exit {p.returncode}, expected 2 ({p.stderr.strip()[-200:]})")
    ok &= T.check(len(lines) == 1 and path.name in lines[0] and expected in lines[0],
                  f"{path.name}: expected one line naming the file and \"{expected}\", got {lines}")
    ok &= T.check(not npy_files(out) and not (out.exists() and any(out.iterdir())), f"{path.name}: something was written")
    if ok:
        print(f"ok   refused {path.name}: {lines[0]}")


def test_pth_files_read_as_their_converted_safetensors():
    with T.section("pth_native"), tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        model = make_vit(0)
        sd = model.state_dict()
        x = torch.randn(2, 3, 32, 32)
        np.save(tmp / "x.npy", x.numpy())

        check_same_as_converted(tmp, "f32_state_dict", sd, x, model)
        check_same_as_converted(tmp, "f16_module_prefix",
                                {"state_dict": {"module." + k: v.half() for k, v in sd.items()}, "epoch": 7}, x,
                                rounded(model, torch.float16))
        check_same_as_converted(tmp, "bf16_model_key", {"model": {k: v.bfloat16() for k, v in sd.items()}}, x,
                                rounded(model, torch.bfloat16))
        check_same_as_converted(tmp, "f64", {k: v.double() for k, v in sd.items()}, x, model)
        check_same_as_converted(tmp, "views_shared_storage", {"model": as_views(sd)}, x, model)

        # DINO's full checkpoint: student and teacher under "backbone.", a projection head beside
        # it, optimizer state, the loss's center, and the command line as an argparse.Namespace.
        student = make_vit(1)
        dino = lambda m: {**{"backbone." + k: v for k, v in m.state_dict().items()},  # noqa: E731
                          "head.mlp.0.weight": torch.randn(16, 64), "head.last_layer.weight_g": torch.ones(8, 1)}
        full = {"student": dino(student), "teacher": dino(model),
                "optimizer": {"state": {0: {"step": torch.tensor(3.0), "exp_avg": torch.zeros(4)}},
                              "param_groups": [{"lr": 5e-4, "betas": (0.9, 0.999), "params": [0, 1], "amsgrad": False}]},
                "epoch": 100, "dino_loss": collections.OrderedDict(center=torch.zeros(1, 8)),
                "args": argparse.Namespace(arch="vit_small", patch_size=16, lr=0.0005, norm_last_layer=True,
                                           output_dir="/out", teacher_temp=None, global_crops_scale=(0.4, 1.0))}
        for who, ref in (("teacher", model), ("student", student)):
            check_same_as_converted(tmp, f"dino_full_{who}", full, x, ref, key=who, strip="backbone.",
                                    convert={who: full[who]})
        p = run("forward", "--model", tmp / "dino_full_teacher.pth", "--key", "nope", tmp / "x.npy", "-o", tmp / "nope")
        T.check(p.returncode == 2 and "no dict under key nope" in p.stderr and "teacher" in p.stderr,
                f"--key nope: {p.returncode} {p.stderr.strip()}")
        p = run("--key", "teacher", tmp / "x.npy", "-o", tmp / "k0")
        T.check(p.returncode == 2 and "--key requires --model" in p.stderr, f"--key without --model: {p.returncode} {p.stderr.strip()}")
        p = run("forward", "--model", tmp / "f32_state_dict.safetensors", "--key", "teacher", tmp / "x.npy", "-o", tmp / "k")
        T.check(p.returncode == 2 and "safetensors" in p.stderr, f"--key on safetensors: {p.returncode} {p.stderr.strip()}")

        # Refusals. The os.system payload is live: torch.load without weights_only runs it.
        marker = tmp / "pwned"
        base = tmp / "f32_state_dict.pth"
        evil = tmp / "os_system.pth"
        cmd = f"touch {marker}".encode()
        payload = b"\x80\x02cos\nsystem\nq\x00X" + len(cmd).to_bytes(4, "little") + cmd + b"q\x01\x85q\x02Rq\x03."
        rewrite_zip(base, evil, lambda name, data: payload if name.endswith("data.pkl") else data)
        torch.load(evil, weights_only=False)
        T.check(marker.exists(), "the os.system payload is not live (torch.load did not run it)")
        marker.unlink(missing_ok=True)
        check_refused(tmp, evil, "refers to os.system")
        T.check(not marker.exists(), "vitattn ran the payload")
        rewrite_zip(base, tmp / "builtins_eval.pth",
                    edit_pickle(b"ctorch._utils\n_rebuild_tensor_v2\n", b"cbuiltins\neval\n"))
        check_refused(tmp, tmp / "builtins_eval.pth", "refers to builtins.eval")
        rewrite_zip(base, tmp / "unknown_storage.pth", edit_pickle(b"ctorch\nFloatStorage\n", b"ctorch\nQUInt8Storage\n"))
        check_refused(tmp, tmp / "unknown_storage.pth", "refers to torch.QUInt8Storage")
        data = base.read_bytes()
        (tmp / "truncated.pth").write_bytes(data[:len(data) - 100])
        check_refused(tmp, tmp / "truncated.pth", "zip")
        rewrite_zip(base, tmp / "compressed.pth", deflate=("data/0",))
        check_refused(tmp, tmp / "compressed.pth", "is compressed (method 8)")
        # A slice at storage offset 4 of a 6-element storage: offset 5 reaches past its end.
        torch.save({"w": torch.arange(6.0)[4:]}, tmp / "slice.pth")
        with zipfile.ZipFile(tmp / "slice.pth") as z:
            pkl = z.read([n for n in z.namelist() if n.endswith("data.pkl")][0])
        T.check(pkl.count(b"QK\x04") == 1 and pkl.count(b"K\x06t") == 1, "slice.pth pickle is not as expected")
        rewrite_zip(tmp / "slice.pth", tmp / "offset_past_storage.pth", edit_pickle(b"QK\x04", b"QK\x05"))
        check_refused(tmp, tmp / "offset_past_storage.pth", "reaches element 6 of a storage of 6")
        rewrite_zip(tmp / "slice.pth", tmp / "huge_numel.pth",
                    edit_pickle(b"K\x06t", b"\x8a\x08" + (2**62).to_bytes(8, "little") + b"t"))
        check_refused(tmp, tmp / "huge_numel.pth", "declares 4611686018427387904")
