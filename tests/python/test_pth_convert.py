#!/usr/bin/env python3
"""scripts/pth_to_safetensors.py: a torchvision ViT saved by torch.save (nested under
"model", names prefixed "module.", as training scripts do) comes out as a file vitattn
recognises, and vitattn's class-token features on it match torch's own forward.

Exits 77 (skipped) when torch is not installed. Prints "pth: N passed, M failed".
"""
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from tally import skip  # noqa: E402

try:
    import torch
    import torchvision
except ImportError as e:
    skip(f"pth: cannot import torch/torchvision ({e}); install python3-torch python3-torchvision")

REPO = Path(__file__).resolve().parents[2]
BIN = os.environ.get("VITATTN_BIN", str(REPO / "build/dev/vitattn"))
passed = failed = 0


def check(name, ok, detail=""):
    global passed, failed
    print(f"{'ok  ' if ok else 'FAIL'} {name} {detail}")
    passed, failed = passed + ok, failed + (not ok)


with tempfile.TemporaryDirectory() as tmp:
    tmp = Path(tmp)
    torch.manual_seed(0)
    model = torchvision.models.VisionTransformer(64, 16, 2, 4, 64, 128, num_classes=5).eval()
    with torch.no_grad():  # torchvision starts the classifier at zero: logits would match trivially
        torch.nn.init.normal_(model.heads.head.weight, std=0.5)
        torch.nn.init.normal_(model.heads.head.bias, std=0.5)
    torch.save({"model": {"module." + k: v for k, v in model.state_dict().items()}, "epoch": 3}, tmp / "ckpt.pth")
    for dtype, tol in (("f32", 1e-4), ("f16", None)):
        out = tmp / f"vit_{dtype}.safetensors"
        p = subprocess.run([sys.executable, str(REPO / "scripts/pth_to_safetensors.py"), tmp / "ckpt.pth", out,
                            "--num-heads", "4", "--dtype", dtype], capture_output=True, text=True)
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

print(f"pth: {passed} passed, {failed} failed")
sys.exit(1 if failed else 0)
