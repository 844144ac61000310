#!/usr/bin/python3
"""hf:ORG/NAME for each checkpoint family that config.json's model_type names, against the fake
hub (tests/pylib/fake_hub.py, on 127.0.0.1, started and stopped here), then offline.

Each family's reference module (tests/pylib/<part>_reference.py) writes a Hugging Face snapshot
folder of that family with hf_folder(path): model.safetensors, config.json (model_type,
hidden_act, heads, ε, image size), preprocessor_config.json (mean, std), and returns what its
torch re-implementation computed for it: {"image": the input (a picture's path, or an already
normalised [3, H, W] tensor or .npy for `vitattn forward`), "attention_last": [H, T, T] the
last block's attention}. Here each folder becomes a hub repository; for each:
  - `vitattn [forward] --model hf:families/<part> -v`: config.json's model_type picks the family
    (-v names it), and the last block's heads are within 1e-5 of the torch reference;
  - the same offline (HF_HUB_OFFLINE=1, an endpoint that refuses connections): the same bytes.
Run:  /usr/bin/python3 -m pytest -q -s tests/oracle/test_hf_families.py
"""
import importlib
import os
import sys
import tempfile
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "pylib"))
from tally import Tally, skip  # noqa: E402

try:
    import torch  # noqa: F401  (the reference modules' oracle)
except ImportError as e:
    skip(f"cannot import torch ({e})")
from fake_hub import Hub, closed_port, hub_env  # noqa: E402
from harness import run_process  # noqa: E402

REPO = HERE.parents[1]
BIN = Path(os.environ.get("VITATTN_BIN", REPO / "build" / "dev" / "vitattn"))
T = Tally()
# tests/pylib/<part>_reference.py, and the family its hf_folder's model_type names
PARTS = {"clip": "hf-clip", "siglip": "siglip", "dinov3": "hf-dinov3", "deit": "hf-dinov2"}


def as_input(image, folder):
    """The family's input and how it is run: a picture through the maps (--save-attention,
    the last layer's heads in <stem>_attn.npy), a normalised tensor through `forward` (every
    layer's heads in <stem>_attention.npy [N, L, H, T, T])."""
    if isinstance(image, (str, Path)) and not str(image).endswith(".npy"):
        return Path(image), False
    if not isinstance(image, (str, Path)):
        path = folder / "x.npy"
        np.save(path, np.asarray(image, dtype=np.float32))
        return path, True
    return Path(image), True


def last_heads(out, stem, forward):
    if forward:
        return np.load(out / f"{stem}_attention.npy")[0, -1]
    return np.load(out / f"{stem}_attn.npy")


def check_part(part, family, hub, tmp):
    module = importlib.import_module(f"{part}_reference")
    src = tmp / f"src_{part}"
    src.mkdir()
    want = module.hf_folder(src)
    hub.add(f"families/{part}", {"main": {f.name: f.read_bytes() for f in sorted(src.iterdir()) if f.is_file()}})
    inputs = tmp / f"in_{part}"
    inputs.mkdir()
    image, forward = as_input(want["image"], inputs)
    command = ["forward"] if forward else ["--save-attention"]
    cache = tmp / "cache"
    online = {"HF_HUB_CACHE": str(cache), "HF_ENDPOINT": hub.endpoint}
    out = tmp / f"out_{part}"
    p = run_process(*command, "--model", f"hf:families/{part}", "-v", "-o", out, image, env=hub_env(online))
    if not T.check(p.returncode == 0, f"{part}: hf: run failed: {p.stderr.strip()[-400:]}"):
        return
    T.check(f"family {family}" in p.stderr, f"{part}: -v names the family {family}: "
            f"{[line for line in p.stderr.splitlines() if 'family' in line][:1]}")
    got = last_heads(out, image.stem, forward)
    ref = np.asarray(want["attention_last"], dtype=np.float64)
    d = float(np.abs(got - ref).max()) if got.shape == ref.shape else float("inf")
    T.check(d <= 1e-5, f"{part}: last layer's heads {got.shape} vs torch {ref.shape}: max |Δ| {d:.3g}")
    offline = {"HF_HUB_CACHE": str(cache), "HF_ENDPOINT": closed_port(), "HF_HUB_OFFLINE": "1"}
    out2 = tmp / f"out_{part}_offline"
    p = run_process(*command, "--model", f"hf:families/{part}", "-o", out2, image, env=hub_env(offline))
    name = f"{image.stem}_attention.npy" if forward else f"{image.stem}_attn.npy"
    T.check(p.returncode == 0 and (out2 / name).read_bytes() == (out / name).read_bytes(),
            f"{part}: offline from the cache, the same bytes: {p.stderr.strip()[-300:]}")


def test_every_family_through_the_hub():
    if not BIN.is_file():
        skip(f"no binary at {BIN}")
    hub = Hub()
    try:
        with T.section("hf families"), tempfile.TemporaryDirectory() as tmp:
            for part, family in PARTS.items():
                check_part(part, family, hub, Path(tmp))
    finally:
        hub.stop()


if __name__ == "__main__":
    test_every_family_through_the_hub()
