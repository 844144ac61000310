#!/usr/bin/env python3
"""The single-head layout written before the one-model redesign still loads, gives the same
map, and --save-model still writes it byte for byte.

single_head_v0/ holds what vitattn wrote at commit 13c7029, when the seeded head was its own
model type (SingleHeadModel) with its own loader:
  model.safetensors          vitattn --seed 3 --img-size 32 --patch-size 8 --dim 24 --d-k 8
                                     --mean 0.4,0.5,0.6 --std 0.2,0.3,0.25 --save-model model.safetensors
  input.png                  a 56x40 colour image
  input_attn.npy, input_cls.npy   vitattn --model model.safetensors input.png --save-attention
A file from a Python writer of the layout (no biases, no metadata) is checked against the
same map too. The maps may differ from then in the last bits only (1e-6), never more.

Environment: VITATTN_BIN. Prints "single-head compat: N passed, M failed".
"""
import os
import struct
import sys
import tempfile
from pathlib import Path

import json
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "pylib"))
from tally import Tally  # noqa: E402
from harness import run  # noqa: E402

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
BIN = str(Path(os.environ.get("VITATTN_BIN", str(REPO / "build/dev/vitattn"))).resolve())
V0 = HERE / "single_head_v0"
SHAPE = ["--seed", "3", "--img-size", "32", "--patch-size", "8", "--dim", "24", "--d-k", "8",
         "--mean", "0.4,0.5,0.6", "--std", "0.2,0.3,0.25"]
TOL = 1e-6


def read_safetensors(path):
    raw = Path(path).read_bytes()
    n = struct.unpack("<Q", raw[:8])[0]
    header = json.loads(raw[8:8 + n])
    meta = header.pop("__metadata__", {})
    data = raw[8 + n:]
    out = {}
    for name, t in header.items():
        assert t["dtype"] == "F32"
        b, e = t["data_offsets"]
        out[name] = np.frombuffer(data[b:e], dtype="<f4").reshape(t["shape"])
    return out, meta


def write_safetensors(path, tensors):
    """The layout as a Python user writes it: F32 tensors in name order, no metadata."""
    header, blobs, offset = {}, [], 0
    for name in sorted(tensors):
        a = np.ascontiguousarray(tensors[name], dtype="<f4")
        header[name] = {"dtype": "F32", "shape": list(a.shape), "data_offsets": [offset, offset + a.nbytes]}
        blobs.append(a.tobytes())
        offset += a.nbytes
    h = json.dumps(header).encode()
    h += b" " * (-len(h) % 8)
    Path(path).write_bytes(struct.pack("<Q", len(h)) + h + b"".join(blobs))


def close(t, got, want, what):
    ok = got.shape == want.shape and np.abs(got - want).max() <= TOL
    diff = np.abs(got - want).max() if got.shape == want.shape else "shape"
    return t.check(ok, f"{what}: {got.shape} vs {want.shape}, max diff {diff}")


def main(t):
    want_attn = np.load(V0 / "input_attn.npy")
    want_cls = np.load(V0 / "input_cls.npy")
    with tempfile.TemporaryDirectory(prefix="vitattn-v0-") as tmp:
        tmp = Path(tmp)
        # 1. --save-model writes what it wrote then, byte for byte.
        code, _, err = run(*SHAPE, "--save-model", tmp / "m.safetensors")
        t.check(code == 0, f"--save-model exits 0: {err}")
        t.check((tmp / "m.safetensors").read_bytes() == (V0 / "model.safetensors").read_bytes(),
                "--save-model writes the same bytes as before the redesign")
        # 2. The old file loads and draws the same map.
        code, _, err = run("--model", V0 / "model.safetensors", V0 / "input.png", "-o", tmp / "old", "--save-attention")
        t.check(code == 0, f"the old file loads: {err}")
        if code == 0:
            close(t, np.load(tmp / "old/input_attn.npy"), want_attn, "old file: attention")
            close(t, np.load(tmp / "old/input_cls.npy"), want_cls, "old file: class map")
        # 3. The seeded model itself draws that map (same seed, same weights).
        code, _, err = run(*SHAPE, V0 / "input.png", "-o", tmp / "seeded", "--save-attention")
        t.check(code == 0, f"seeded run: {err}")
        if code == 0:
            close(t, np.load(tmp / "seeded/input_attn.npy"), want_attn, "seeded: attention")
        # 4. A Python writer of the layout, without the optional biases and metadata.
        tensors, meta = read_safetensors(V0 / "model.safetensors")
        t.check(meta.get("format") == "vitattn-single-head", f"the fixture is the native layout: {meta}")
        bare = {k: v for k, v in tensors.items() if not k.endswith(".bias")}
        write_safetensors(tmp / "bare.safetensors", bare)
        code, _, err = run("--model", tmp / "bare.safetensors", "--mean", meta["mean"], "--std", meta["std"],
                        V0 / "input.png", "-o", tmp / "bare", "--save-attention")
        t.check(code == 0, f"a Python-written file loads: {err}")
        if code == 0:
            close(t, np.load(tmp / "bare/input_attn.npy"), want_attn, "python writer: attention")
            close(t, np.load(tmp / "bare/input_cls.npy"), want_cls, "python writer: class map")


if __name__ == "__main__":
    t = Tally()
    if not Path(BIN).is_file():
        print(f"single-head compat: binary {BIN} not found", file=sys.stderr)
        sys.exit(1)
    main(t)
    print(f"single-head compat: {t.passed} passed, {t.failed} failed")
    sys.exit(1 if t.failed else 0)
