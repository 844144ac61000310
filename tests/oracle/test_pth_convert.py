#!/usr/bin/env python3
"""scripts/pth_to_safetensors.py: a torchvision ViT saved by torch.save (nested under
"model", names prefixed "module.", as training scripts do) comes out as a file vitattn
recognises, and vitattn's class-token features on it match torch's own forward.

A DINO full checkpoint (student, teacher with backbone. and head. tensors, optimizer, epoch,
args as an argparse.Namespace) converts under --key teacher to exactly the teacher's backbone,
which vitattn reads as the dino family. A checkpoint whose pickle would call os.system, in
torch.save's zip layout and as a plain pickle, is refused with one line and runs nothing;
other errors are one line too.

Skips when torch is not installed (fails under CI=true).
Run: python3 -m pytest tests/oracle/test_pth_convert.py
"""
import argparse
import os
import pickle
import subprocess
import zipfile
import sys
import tempfile
from pathlib import Path

import numpy as np

import safetensors_io
from harness import BIN, REPO, need
from tally import Tally

try:
    import torch
    import torchvision
except ImportError as e:
    need(False, f"pth: cannot import torch/torchvision ({e}); install python3-torch python3-torchvision")

T = Tally()
SCRIPT = REPO / "scripts/pth_to_safetensors.py"


def convert_process(*args):
    """The script as a user runs it: its own process (which pays seconds to import torch)."""
    return subprocess.run([sys.executable, str(SCRIPT), *map(str, args)], capture_output=True, text=True)


def convert(*args):
    """The script's main() in this process, which has torch loaded already: exit status,
    stdout and stderr as its own process would give them (sys.exit's message on stderr, an
    uncaught exception's traceback too). One conversion per test still runs as a process."""
    import contextlib
    import importlib.util
    import io
    import traceback
    spec = importlib.util.spec_from_file_location("pth_to_safetensors", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    out, err, argv = io.StringIO(), io.StringIO(), sys.argv
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            sys.argv = [str(SCRIPT), *map(str, args)]
            spec.loader.exec_module(module)
            module.main()
            code = 0
        except SystemExit as e:
            code = e.code if isinstance(e.code, int) else 0 if e.code is None else 1
            if not isinstance(e.code, int) and e.code is not None:
                print(e.code, file=sys.stderr)
        except Exception:
            traceback.print_exc()
            code = 1
        finally:
            sys.argv = argv
    return subprocess.CompletedProcess([str(SCRIPT), *map(str, args)], code, out.getvalue(), err.getvalue())


def check(name, ok, detail=""):
    print(f"{'ok  ' if ok else 'FAIL'} {name} {detail}")
    T.check(ok, f"{name} {detail}")


def test_torchvision_checkpoint_converts_and_matches_torch():
    with T.section("torchvision checkpoint"), tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        torch.manual_seed(0)
        model = torchvision.models.VisionTransformer(64, 16, 2, 4, 64, 128, num_classes=5).eval()
        with torch.no_grad():  # torchvision starts the classifier at zero: logits would match trivially
            torch.nn.init.normal_(model.heads.head.weight, std=0.5)
            torch.nn.init.normal_(model.heads.head.bias, std=0.5)
        torch.save({"model": {"module." + k: v for k, v in model.state_dict().items()}, "epoch": 3}, tmp / "ckpt.pth")
        for dtype, tol in (("f32", 1e-4), ("f16", None)):
            out = tmp / f"vit_{dtype}.safetensors"
            p = (convert_process if dtype == "f32" else convert)(tmp / "ckpt.pth", out, "--num-heads", "4", "--dtype", dtype)
            check(f"convert {dtype}", p.returncode == 0, p.stderr.strip())
            x = torch.randn(1, 3, 64, 64)
            np.save(tmp / "x.npy", x.numpy())
            p = subprocess.run([BIN, "forward", "--model", out, tmp / "x.npy", "-o", tmp / dtype, "-v"],
                               capture_output=True, text=True)
            check(f"vitattn reads the {dtype} file as torchvision", p.returncode == 0 and "family torchvision" in p.stderr,
                  p.stderr.strip().splitlines()[-1] if p.stderr.strip() else "")
            if p.returncode:
                continue
            if tol is None:  # F16 weights: torch on the same rounded weights is the reference
                m16 = torchvision.models.VisionTransformer(64, 16, 2, 4, 64, 128, num_classes=5).eval()
                m16.load_state_dict({k: v.half().float() for k, v in model.state_dict().items()})
                ref_model, tol = m16, 1e-4
            else:
                ref_model = model
            with torch.inference_mode():
                logits = ref_model(x).numpy()
            got = np.load(tmp / dtype / "x_logits.npy")
            err = float(np.abs(got - logits).max())
            check(f"logits are not trivial ({dtype})", float(np.abs(logits).min()) > 1e-3)
            check(f"logits match torch ({dtype})", err <= tol * max(1.0, float(np.abs(logits).max())), f"max |Δ| {err:.2e}")


def one_error_line(p, *words):
    lines = p.stderr.strip().splitlines()
    return (p.returncode != 0 and len(lines) == 1 and lines[0].startswith("error: ")
            and all(w in lines[0] for w in words) and "Traceback" not in p.stderr)


def dino_backbone(d=64, layers=2, patch=16, img=32):
    g = torch.Generator().manual_seed(1)
    r = lambda *shape: torch.randn(*shape, generator=g) * 0.1
    n = (img // patch) ** 2
    w = {"cls_token": r(1, 1, d), "pos_embed": r(1, 1 + n, d), "patch_embed.proj.weight": r(d, 3, patch, patch),
         "patch_embed.proj.bias": r(d), "norm.weight": 1 + r(d), "norm.bias": r(d)}
    for i in range(layers):
        b = f"blocks.{i}."
        w.update({b + "norm1.weight": 1 + r(d), b + "norm1.bias": r(d), b + "attn.qkv.weight": r(3 * d, d),
                  b + "attn.qkv.bias": r(3 * d), b + "attn.proj.weight": r(d, d), b + "attn.proj.bias": r(d),
                  b + "norm2.weight": 1 + r(d), b + "norm2.bias": r(d), b + "mlp.fc1.weight": r(4 * d, d),
                  b + "mlp.fc1.bias": r(4 * d), b + "mlp.fc2.weight": r(d, 4 * d), b + "mlp.fc2.bias": r(d)})
    return w


class Boom:
    """Unpickling this calls os.system: what a hostile checkpoint does."""
    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return (os.system, (f"touch {self.marker}",))


def test_dino_full_checkpoint_and_hostile_pickles():
    with T.section("DINO and hostile pickles"), tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        # DINO's main_dino.py saves this dict; the teacher is not wrapped in DDP, the student is.
        backbone = dino_backbone()
        teacher = {**{"backbone." + k: v for k, v in backbone.items()},
                   "head.mlp.0.weight": torch.randn(32, 64), "head.mlp.0.bias": torch.randn(32),
                   "head.last_layer.weight_g": torch.ones(100, 1), "head.last_layer.weight_v": torch.randn(100, 32)}
        student = {"module." + k: v + 1 for k, v in teacher.items()}
        opt = torch.optim.AdamW([torch.nn.Parameter(torch.zeros(3))])
        opt.zero_grad(); opt.param_groups[0]["params"][0].sum().backward(); opt.step()
        args = argparse.Namespace(arch="vit_small", patch_size=16, out_dim=100, lr=0.0005, local_crops_scale=(0.05, 0.4))
        torch.save({"student": student, "teacher": teacher, "optimizer": opt.state_dict(), "epoch": 100, "args": args,
                    "dino_loss": {"center": torch.zeros(1, 100)}}, tmp / "full.pth")
        out = tmp / "dino.safetensors"
        p = convert_process(tmp / "full.pth", out, "--key", "teacher")
        check("DINO full checkpoint converts under --key teacher", p.returncode == 0, p.stderr.strip())
        if p.returncode == 0:
            got = safetensors_io.read(out, only=("F32",))[0]
            check("exactly the teacher's backbone tensors, backbone. stripped", sorted(got) == sorted(backbone),
                  f"{sorted(set(got) ^ set(backbone))[:4]}")
            check("with the teacher's values",
                  all(np.array_equal(got[k], backbone[k].numpy()) for k in backbone if k in got))
            np.save(tmp / "x32.npy", np.random.default_rng(0).standard_normal((3, 32, 32)).astype(np.float32))
            p = subprocess.run([BIN, "forward", "--model", out, tmp / "x32.npy", "-o", tmp / "dino", "-v"],
                               capture_output=True, text=True)
            check("vitattn reads it as the dino family", p.returncode == 0 and "family dino" in p.stderr,
                  p.stderr.strip().splitlines()[-1] if p.stderr.strip() else "")

        # Hostile pickles: torch.save's zip layout with data.pkl replaced, and a bare pickle.
        marker = tmp / "pwned"
        torch.save({"model": {"w": torch.zeros(2)}}, tmp / "plain.pth")
        with zipfile.ZipFile(tmp / "plain.pth") as zin, zipfile.ZipFile(tmp / "evil.pth", "w") as zout:
            for name in zin.namelist():
                data = zin.read(name)
                zout.writestr(name, pickle.dumps({"model": Boom(marker)}, protocol=2) if name.endswith("data.pkl") else data)
        (tmp / "evil.pkl").write_bytes(pickle.dumps({"model": Boom(marker)}, protocol=2))
        for evil in ("evil.pth", "evil.pkl"):
            p = convert(tmp / evil, tmp / "evil.safetensors")
            check(f"{evil}: refused with one line naming the file and os.system",
                  one_error_line(p, evil, "system"), p.stderr.strip())
            check(f"{evil}: nothing ran, nothing written", not marker.exists() and not (tmp / "evil.safetensors").exists())

        for args, words in (((tmp / "missing.pth", tmp / "o.safetensors"), ("missing.pth", "no such file")),
                            ((tmp / "full.pth", tmp / "o.safetensors", "--key", "nope"), ("full.pth", "'nope'")),
                            ((tmp / "x32.npy", tmp / "o.safetensors"), ("x32.npy",)),
                            ((tmp / "full.pth",), ("output",))):
            p = convert(*args)
            check(f"one error line for {words}", one_error_line(p, *words), p.stderr.strip()[-300:])
