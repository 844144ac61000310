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
  - the same offline (HF_HUB_OFFLINE=1, an endpoint that refuses connections): the same bytes;
  - with --precision bf16 (on a CPU with AVX512-BF16): the last block's class-token map within
    1e-2 of the fp32 run's and of torch's, relative to its largest value (each head within 2e-2).
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
import harness  # noqa: E402
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
    if harness.CPU_HAS_BF16:
        check_bf16(part, command, image, got, ref, tmp, hub_env(offline))
    else:
        harness.bf16_refused(T, part, [*command, "--model", f"hf:families/{part}", image], tmp / f"out_{part}_bf16",
                             env=hub_env(offline))


# bf16 MLP products against fp32 and torch, relative to the largest value: the map (the class
# token's row over the other tokens, mean over the heads, as the image command draws it) and each
# head's single weights. Measured on these random models (map, heads): clip 0.45 %, 0.97 %; siglip
# 0.34 %, 0.58 %; dinov3 0.54 %, 1.3 %; deit 0.74 %, 0.55 %. (With every weight product in bf16,
# the attention branch and patch embedding too, clip's sharp attention drifted 5.2 %.)
BF16_MAP_TOL, BF16_HEAD_TOL = 1e-2, 2e-2


def class_map(heads):
    return heads.mean(0)[0, 1:]


def check_bf16(part, command, image, fp32, ref, tmp, env):
    out = tmp / f"out_{part}_bf16"
    p = run_process(*command, "--model", f"hf:families/{part}", "--precision", "bf16", "-o", out, image, env=env)
    if not T.check(p.returncode == 0, f"{part}: --precision bf16 failed: {p.stderr.strip()[-400:]}"):
        return
    got = last_heads(out, image.stem, command == ["forward"]).astype(np.float64)
    line = f"{part} --precision bf16:"
    for what, tol, view in (("map", BF16_MAP_TOL, class_map), ("heads", BF16_HEAD_TOL, lambda h: h)):
        scale = float(np.abs(view(ref)).max())
        to_fp32 = float(np.abs(view(got) - view(fp32)).max()) / scale
        to_torch = float(np.abs(view(got) - view(ref)).max()) / scale
        line += f" {what} vs fp32 {to_fp32:.2g}, vs torch fp32 {to_torch:.2g} (of the max);"
        T.check(0 < to_fp32 <= tol, f"{part}: bf16 {what} vs fp32 {to_fp32:.3g} of the max (bound {tol}; 0: not bf16)")
        T.check(to_torch <= tol, f"{part}: bf16 {what} vs torch {to_torch:.3g} of the max (bound {tol})")
    print(line, flush=True)


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
