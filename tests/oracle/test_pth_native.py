#!/usr/bin/python3
"""vitattn reads PyTorch checkpoints natively: bit for bit what it reads from the safetensors
file that scripts/pth_to_safetensors.py (torch's own loader) makes of the same checkpoint.

Run:  /usr/bin/python3 tests/oracle/test_pth_native.py
Env:  VITATTN_BIN  binary to test (default <repo>/build/dev/vitattn)

Every checkpoint is written here by torch.save from a small torchvision VisionTransformer:
F32, F16, BF16 and F64 storages; nested under model / state_dict / teacher with "module.", "model." and
"backbone." prefixes; views that are not contiguous (transposed weights, slices with a storage
offset) and several tensors sharing one storage; a DINO-style full checkpoint with
args=argparse.Namespace(...), read with --key. For each, `vitattn forward` on the .pth and on
the converted .safetensors must write the same .npy bytes (same build, same machine: any
difference means the tensors differ), and the logits must match torch's own forward (1e-4).
Then files that must be refused (code in the pickle, unknown storage type, broken zip, views
out of their storage): exit 2, one line naming the file, nothing written, nothing run.
And every family as its releases ship it (timm/DeiT, DINO flat and full checkpoint, DINOv2 with
registers, HF ViT and Dinov2 as pytorch_model.bin, torchvision), named by torch_reference's
exporters: the .pth and the .safetensors of the same tensors give the same family under -v and
the same .npy bytes, and match torch's forward.
Skips when torch cannot be imported (fails under CI=true).
Run: python3 -m pytest tests/oracle/test_pth_native.py
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

import torch_reference as tr  # noqa: E402  (torchvision ViTs, their exports, torch references, the input)

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
    a = run_process("forward", "--model", pth, *keyarg, "--heads", HEADS, tmp / "x.npy", "-o", tmp / f"{name}_pth",
                    "-v")
    b = run_process("forward", "--model", st, "--heads", HEADS, tmp / "x.npy", "-o", tmp / f"{name}_st")
    T.check(a.returncode == 0, f"{name}: vitattn forward on the .pth failed: {a.stderr.strip()[-300:]}")
    T.check(b.returncode == 0, f"{name}: vitattn forward on the .safetensors failed: {b.stderr.strip()[-300:]}")
    T.check("family torchvision" in a.stderr, f"{name}: the .pth is not read as torchvision")
    failed_before = T.failed
    got, want = npy_files(tmp / f"{name}_pth"), npy_files(tmp / f"{name}_st")
    T.check(set(want) == {"x_attention.npy", "x_features.npy", "x_tokens.npy", "x_norms.npy", "x_logits.npy"}, f"{name}: outputs {sorted(want)}")
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
    p = run_process("forward", "--model", path, tmp / "x.npy", "-o", out)
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
        check_same_as_converted(tmp, "lightning_model_prefix", {"state_dict": {"model." + k: v for k, v in sd.items()}},
                                x, model)
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
        p = run_process("forward", "--model", tmp / "dino_full_teacher.pth", "--key", "nope", tmp / "x.npy", "-o",
                        tmp / "nope")
        T.check(p.returncode == 2 and "no dict under key nope" in p.stderr and "teacher" in p.stderr,
                f"--key nope: {p.returncode} {p.stderr.strip()}")
        p = run_process("--key", "teacher", tmp / "x.npy", "-o", tmp / "k0")
        T.check(p.returncode == 2 and "--key requires --model" in p.stderr, f"--key without --model: {p.returncode} {p.stderr.strip()}")
        p = run_process("forward", "--model", tmp / "f32_state_dict.safetensors", "--key", "teacher", tmp / "x.npy",
                        "-o", tmp / "k")
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


# ---------------------------------------------------------------------------
# every family as its releases ship it
# ---------------------------------------------------------------------------

FAMILY_SIZE = (64, 128, 2, 256, 2, 10)  # image, D, heads (= D/64, found by vitattn), MLP, layers, classes


def dinov2_tensors(sd, layers, d, seed):
    """timm names, layer scale and 4 registers, the extras as test_torch_crosscheck's case D makes
    them. Returns (timm-named dict as dinov2_vits14_reg4_pretrain.pth holds it: no head, with
    mask_token), (HF Dinov2 names as Dinov2Model's pytorch_model.bin), (ls1, ls2, registers)."""
    g = torch.Generator().manual_seed(seed)
    ls1 = [torch.randn(d, generator=g) * 0.5 for _ in range(layers)]
    ls2 = [torch.randn(d, generator=g) * 0.5 for _ in range(layers)]
    regs = torch.randn(1, 4, d, generator=g) * 0.5
    timm = {k: v for k, v in tr.export_timm(sd, layers).items() if not k.startswith("head.")}
    for i in range(layers):
        timm[f"blocks.{i}.ls1.gamma"], timm[f"blocks.{i}.ls2.gamma"] = ls1[i], ls2[i]
    timm["register_tokens"], timm["mask_token"] = regs, torch.zeros(1, d)
    hf = tr.export_hf_dinov2(timm, layers)
    return timm, hf, (ls1, ls2, regs)


def family_cases(model, x):
    """(name, file name, object torch.save writes, tensors for the .safetensors, --key, family -v
    must name, torch reference (attention, features, logits or None))."""
    _, d, _, _, layers, _ = FAMILY_SIZE
    sd = model.state_dict()
    ref = tr.torch_reference(model, x)
    timm = tr.export_timm(sd, layers)
    dino = {k: v for k, v in timm.items() if not k.startswith("head.")}
    # DINO's full checkpoint: teacher and student backbones under "backbone." (timm names) beside
    # their projection heads; vitattn strips "backbone." from a .pth, as pth_to_safetensors --strip does.
    heads_extra = {"head.mlp.0.weight": torch.randn(16, d), "head.last_layer.weight_g": torch.ones(8, 1)}
    full = {"teacher": {**{"backbone." + k: v for k, v in dino.items()}, **heads_extra},
            "student": {**{"backbone." + k: v + 1 for k, v in dino.items()}, **heads_extra},
            "epoch": 100, "args": argparse.Namespace(arch="vit_small", patch_size=16, lr=0.0005)}
    v2_timm, v2_hf, (ls1, ls2, regs) = dinov2_tensors(sd, layers, d, seed=77)
    ref_v2 = tr.dinov2_reference(model, ls1, ls2, regs, x)
    gap = float(np.abs(ref_v2[1] - ref[1]).max())
    T.check(gap > 100 * REL_TOL, f"dinov2: layer scale + registers should change the features (gap {gap:.3g})")
    ref_hf = tr.torch_reference(tr.with_eps(model, 1e-12), x)  # HF ViT's LayerNorm eps
    no_logits = lambda r: (r[0], r[1], None)  # noqa: E731
    return [
        ("timm", "deit_tiny_patch16_224.pth", {"model": timm}, timm, None, "timm", ref),  # as DeiT releases it
        ("dino", "dino_deitsmall16_pretrain.pth", dino, dino, None, "dino", no_logits(ref)),
        ("dino full --key teacher", "dino_full_checkpoint.pth", full, dino, "teacher", "dino", no_logits(ref)),
        ("dinov2", "dinov2_vits14_reg4_pretrain.pth", v2_timm, v2_timm, None, "dinov2", no_logits(ref_v2)),
        ("hf-vit", "hf_vit/pytorch_model.bin", tr.export_hf_vit(sd, layers), tr.export_hf_vit(sd, layers), None,
         "hf-vit", ref_hf),
        ("hf-dinov2", "hf_dinov2/pytorch_model.bin", v2_hf, v2_hf, None, "hf-dinov2", no_logits(ref_v2)),
        ("torchvision", "vit_b_16-c867db91.pth", tr.export_torchvision(sd), tr.export_torchvision(sd), None,
         "torchvision", ref),
    ]


def rel_err(got, want):
    return float(np.abs(got.astype(np.float64) - want).max()) / max(1.0, float(np.abs(want).max()))


def test_every_family_pth_reads_as_its_safetensors_and_torch():
    """.pth files from every family load natively and agree with torch.

    One random torchvision ViT (D=128, 2 heads, 2 layers, 64x64 input, patch 16), its state
    dict renamed by torch_reference's exporters into each family as it is released:
    timm ViT/DeiT (with head, under "model" as DeiT's files), DINO (timm names, no head, a
    flat state dict; and DINO's full checkpoint, timm names under "backbone." beside the
    projection head, read with --key teacher), DINOv2 (timm names, ls1/ls2 gammas, 4
    register_tokens, mask_token, no head, as dinov2_vits14_reg4_pretrain.pth), Hugging Face
    ViT and Dinov2 as pytorch_model.bin, and torchvision. Each is written by torch.save and
    the same tensors by safetensors_io; `vitattn forward -v` on both must name the family and
    write identical .npy bytes (same build, same machine, so any difference means the tensors
    read differ). The torch reference is cheap for every family here (torch_reference's
    torch_reference / dinov2_reference), so the .pth outputs are also compared with torch:
    attention within 1e-5, features and logits within 1e-4 of max(1, |torch|). The byte
    equality is the further link to test_torch_crosscheck, which checks each family's
    safetensors path against torch at several sizes and position resamplings.
    """
    with T.section("pth_native families"), tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        size, d, heads, mlp, layers, classes = FAMILY_SIZE
        model = tr.make_vit(size, d, heads, mlp, layers, classes, seed=31)
        x = torch.randn(2, 3, size, size, generator=torch.Generator().manual_seed(32))
        np.save(tmp / "x.npy", x.numpy())
        for name, fname, obj, tensors, key, family, (attn, feats, logits) in family_cases(model, x):
            tag = fname.replace("/", "_").rsplit(".", 1)[0]
            pth = tmp / fname
            pth.parent.mkdir(exist_ok=True)
            torch.save(obj, pth)
            st = tmp / f"{tag}.safetensors"
            tr.write_safetensors(st, tensors)
            keyarg = ["--key", key] if key else []
            a = run_process("forward", "--model", pth, *keyarg, tmp / "x.npy", "-o", tmp / f"{tag}_pth", "-v")
            b = run_process("forward", "--model", st, tmp / "x.npy", "-o", tmp / f"{tag}_st", "-v")
            if not (T.check(a.returncode == 0, f"{name}: forward on {fname} failed: {a.stderr.strip()[-300:]}")
                    & T.check(b.returncode == 0, f"{name}: forward on the .safetensors failed: {b.stderr.strip()[-300:]}")):
                continue
            failed_before = T.failed
            for which, p in ((fname, a), ("the .safetensors", b)):
                said = [w.split(":")[0] for w in p.stderr.split("family ")[1:]]
                T.check(said and said[0].split()[0] == family, f"{name}: -v on {which} names family {said}, want {family}")
            got, want = npy_files(tmp / f"{tag}_pth"), npy_files(tmp / f"{tag}_st")
            expected = {"x_attention.npy", "x_features.npy", "x_tokens.npy", "x_norms.npy"} | ({"x_logits.npy"} if logits is not None else set())
            T.check(set(got) == expected and set(want) == expected, f"{name}: outputs {sorted(got)} / {sorted(want)}")
            for f in want:
                T.check(got.get(f) == want[f], f"{name}: {f} differs between {fname} and the .safetensors")
            out = tmp / f"{tag}_pth"
            errs = {"attention": float(np.abs(np.load(out / "x_attention.npy") - attn).max()),
                    "features": rel_err(np.load(out / "x_features.npy"), feats)}
            if logits is not None and (out / "x_logits.npy").is_file():
                errs["logits"] = rel_err(np.load(out / "x_logits.npy"), logits)
            T.check(errs["attention"] <= 1e-5, f"{name}: attention differs from torch by {errs['attention']:.2e}")
            for k in ("features", "logits"):
                if k in errs:
                    T.check(errs[k] <= REL_TOL, f"{name}: {k} differ from torch by {errs[k]:.2e} (relative)")
            if T.failed == failed_before:
                print(f"ok   {name}: {fname} read as {family}, outputs identical to the .safetensors ({len(got)} files), "
                      + ", ".join(f"{k} vs torch {v:.1e}" for k, v in errs.items()))
