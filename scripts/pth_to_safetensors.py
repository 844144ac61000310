#!/usr/bin/env python3
"""Turns a PyTorch checkpoint (.pth/.pt) into a safetensors file vitattn reads.

Uses only torch's own loader (with weights_only=True: no code from the file is run) and
numpy; the safetensors writer is the dozen lines below, since Debian 12 packages no
`safetensors` module.

    /usr/bin/python3 scripts/pth_to_safetensors.py dino_deitsmall16_pretrain.pth dino_s16.safetensors
    /usr/bin/python3 scripts/pth_to_safetensors.py dino_vitbase16_pretrain_full_checkpoint.pth \\
        dino_b16.safetensors --key teacher --strip backbone.
    /usr/bin/python3 scripts/pth_to_safetensors.py vit.pth vit.safetensors --num-heads 12 --dtype f16

Many checkpoints nest the weights (under "model", "state_dict", "teacher", …) and prefix
their names ("module.", "backbone."): --key picks the nested dict (default: the first of
model, state_dict, teacher, student that exists, else the top level), --strip removes a
prefix (default: "module." and "backbone." when every tensor has it).
"""
import argparse
import json
import struct
import sys
from pathlib import Path

import numpy as np
import torch


def write_safetensors(path, tensors, metadata):
    header, blobs, offset = {"__metadata__": metadata}, [], 0
    for name, (dtype, array) in tensors.items():
        data = np.ascontiguousarray(array).tobytes()
        header[name] = {"dtype": dtype, "shape": list(array.shape), "data_offsets": [offset, offset + len(data)]}
        blobs.append(data)
        offset += len(data)
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    tmp = Path(str(path) + ".tmp")
    with open(tmp, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + b"".join(blobs))
    tmp.replace(path)  # all or nothing


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("checkpoint")
    ap.add_argument("output")
    ap.add_argument("--key", help="nested dict holding the weights")
    ap.add_argument("--strip", action="append", help="name prefix to remove (repeatable)")
    ap.add_argument("--num-heads", type=int, help="stored as __metadata__.num_heads")
    ap.add_argument("--mean", help="r,g,b stored as __metadata__.mean")
    ap.add_argument("--std", help="r,g,b stored as __metadata__.std")
    ap.add_argument("--dtype", choices=["f32", "f16"], default="f32")
    a = ap.parse_args()

    state = torch.load(a.checkpoint, map_location="cpu", weights_only=True)
    keys = [a.key] if a.key else ["model", "state_dict", "teacher", "student"]
    for k in keys:
        if isinstance(state, dict) and isinstance(state.get(k), dict):
            state = state[k]
            break
    else:
        if a.key:
            sys.exit(f"{a.checkpoint}: no dict under key {a.key!r}")
    tensors = {k: v for k, v in state.items() if isinstance(v, torch.Tensor)}
    if not tensors:
        sys.exit(f"{a.checkpoint}: no tensors found (try --key)")
    for prefix in a.strip or ["module.", "backbone."]:
        if all(k.startswith(prefix) for k in tensors) or (a.strip and prefix):
            tensors = {(k[len(prefix):] if k.startswith(prefix) else k): v for k, v in tensors.items()}
    out = {}
    for name, t in tensors.items():
        if not t.is_floating_point():
            continue  # e.g. num_batches_tracked; vitattn reads float tensors only
        if a.dtype == "f16":
            out[name] = ("F16", t.detach().to(torch.float16).numpy().astype("<f2"))
        else:
            out[name] = ("F32", t.detach().to(torch.float32).numpy().astype("<f4"))
    meta = {"format": "pt", "source": Path(a.checkpoint).name}
    if a.num_heads:
        meta["num_heads"] = str(a.num_heads)
    if a.mean:
        meta["mean"] = a.mean
    if a.std:
        meta["std"] = a.std
    write_safetensors(a.output, out, meta)
    print(f"{a.output}: {len(out)} tensors")


if __name__ == "__main__":
    main()
