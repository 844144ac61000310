#!/usr/bin/env python3
"""Turns a PyTorch checkpoint (.pth/.pt) into a safetensors file vitattn reads.

Uses torch's own loader with a restricted unpickler (below: no code from the file is run)
and numpy; the safetensors writer is the project's own, tests/pylib/safetensors_io.py (the
one the tests read with), found from this script's location, since Debian 12 packages no
`safetensors` module.

    /usr/bin/python3 scripts/pth_to_safetensors.py dino_deitsmall16_pretrain.pth dino_s16.safetensors
    /usr/bin/python3 scripts/pth_to_safetensors.py dino_vitbase16_pretrain_full_checkpoint.pth \\
        dino_b16.safetensors --key teacher
    /usr/bin/python3 scripts/pth_to_safetensors.py vit.pth vit.safetensors --num-heads 12 --dtype f16

Many checkpoints nest the weights (under "model", "state_dict", "teacher", …) and prefix
their names ("module.", "backbone."): --key picks the nested dict (default: the first of
model, state_dict, teacher, student that exists, else the top level), --strip removes a
prefix (default: "module." when every tensor has it, then "backbone.": when only some
tensors have it, as in DINO's full checkpoints where the rest is the projection head used in
training, only the backbone is kept, as DINO's own loader does).

Errors are one line, "error: <file>: <what is wrong>", exit 1; never a traceback.
"""
import argparse
import collections
import io
import pickle
import sys
import zipfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "pylib"))
import safetensors_io  # noqa: E402  (writes through a temporary file: all or nothing)

try:
    import torch
except ImportError as e:
    sys.exit(f"error: needs PyTorch (Debian: apt-get install python3-torch): {e}")


class Refused(Exception):
    """Something in the file that is not a tensor, a plain container or argparse.Namespace."""


class InertNamespace:
    """Stands in for argparse.Namespace (DINO's full checkpoints pickle their `args`): the
    fields are set as plain attributes and nothing of the file's runs."""


def rebuild_tensor(flat, offset, size, stride, *_):
    """torch._utils._rebuild_tensor_v2, on the flat tensor persistent_load gives."""
    return flat.as_strided(size, stride, offset)


STORAGE_DTYPES = {
    "FloatStorage": torch.float32, "DoubleStorage": torch.float64, "HalfStorage": torch.float16,
    "BFloat16Storage": torch.bfloat16, "LongStorage": torch.int64, "IntStorage": torch.int32,
    "ShortStorage": torch.int16, "CharStorage": torch.int8, "ByteStorage": torch.uint8, "BoolStorage": torch.bool,
}

# What a checkpoint may name. torch 1.13's weights_only loader refuses argparse.Namespace (it
# builds no class instances), and it has no torch.serialization.add_safe_globals; with
# weights_only=False, torch.load ignores its pickle_module argument in this version and would
# run whatever the file names. So the zip archive torch.save writes is read here, with an
# unpickler that resolves only these names. Anything else (os.system, builtins.eval, …) is
# refused before it can be called.
SAFE_GLOBALS = {
    ("collections", "OrderedDict"): collections.OrderedDict,
    ("torch._utils", "_rebuild_tensor_v2"): rebuild_tensor,
    ("torch._utils", "_rebuild_parameter"): lambda data, *_: data,
    ("torch._utils", "_rebuild_parameter_with_state"): lambda data, *_: data,
    ("torch", "Size"): torch.Size,
    ("argparse", "Namespace"): InertNamespace,
    **{("torch", name): dtype for name, dtype in STORAGE_DTYPES.items()},
}


class RestrictedUnpickler(pickle.Unpickler):
    def __init__(self, file, archive, prefix):
        super().__init__(file, encoding="utf-8")
        self.archive, self.prefix = archive, prefix

    def find_class(self, module, name):
        if (module, name) not in SAFE_GLOBALS:
            raise Refused(f"refused to load {module}.{name}: only tensors, plain containers and "
                          "argparse.Namespace are read (the file would run code when loaded)")
        return SAFE_GLOBALS[(module, name)]

    def persistent_load(self, pid):  # ('storage', dtype, key, location, numel), as torch.save writes it
        if not (isinstance(pid, tuple) and len(pid) == 5 and pid[0] == "storage" and isinstance(pid[1], torch.dtype)):
            raise Refused(f"unexpected persistent id {str(pid)[:60]}")
        dtype, key, numel = pid[1], str(pid[2]), int(pid[4])
        data = bytearray(self.archive.read(f"{self.prefix}data/{key}"))
        if numel == 0:
            return torch.empty(0, dtype=dtype)
        return torch.frombuffer(data, dtype=dtype, count=numel)


def load_checkpoint(path):
    if not zipfile.is_zipfile(path):  # the pre-1.6 format: torch's own safe loader reads it
        return torch.load(path, map_location="cpu", weights_only=True)
    with zipfile.ZipFile(path) as z:
        names = z.namelist()
        if any(n.endswith("constants.pkl") for n in names):
            raise Refused("a TorchScript archive, not a checkpoint (save its state_dict() instead)")
        pickles = [n for n in names if n == "data.pkl" or n.endswith("/data.pkl")]
        if len(pickles) != 1:
            raise Refused("a zip file without the data.pkl of torch.save")
        prefix = pickles[0][: -len("data.pkl")]
        return RestrictedUnpickler(io.BytesIO(z.read(pickles[0])), z, prefix).load()


def pick_tensors(state, key, strip):
    """The tensors to convert, named as vitattn expects, and a note on what was dropped."""
    keys = [key] if key else ["model", "state_dict", "teacher", "student"]
    for k in keys:
        if isinstance(state, dict) and isinstance(state.get(k), dict):
            state = state[k]
            break
    else:
        if key:
            raise Refused(f"no dict under key {key!r}")
    if not isinstance(state, dict):
        raise Refused(f"holds a {type(state).__name__}, not a dict of tensors")
    tensors = {k: v for k, v in state.items() if isinstance(k, str) and isinstance(v, torch.Tensor)}
    if not tensors:
        raise Refused("no tensors found (try --key)")
    note = ""
    if strip:
        for prefix in strip:
            tensors = {(k[len(prefix):] if k.startswith(prefix) else k): v for k, v in tensors.items()}
        return tensors, note
    if all(k.startswith("module.") for k in tensors):
        tensors = {k[len("module."):]: v for k, v in tensors.items()}
    backbone = {k[len("backbone."):]: v for k, v in tensors.items() if k.startswith("backbone.")}
    if backbone:
        dropped = len(tensors) - len(backbone)
        if dropped:
            note = f" ({dropped} tensors outside backbone. left out, e.g. DINO's projection head)"
        tensors = backbone
    return tensors, note


class OneLineParser(argparse.ArgumentParser):
    def error(self, message):
        sys.exit(f"error: {message} (see --help)")


def main():
    ap = OneLineParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("checkpoint")
    ap.add_argument("output")
    ap.add_argument("--key", help="nested dict holding the weights")
    ap.add_argument("--strip", action="append", help="name prefix to remove (repeatable)")
    ap.add_argument("--num-heads", type=int, help="stored as __metadata__.num_heads")
    ap.add_argument("--mean", help="r,g,b stored as __metadata__.mean")
    ap.add_argument("--std", help="r,g,b stored as __metadata__.std")
    ap.add_argument("--dtype", choices=["f32", "f16"], default="f32")
    a = ap.parse_args()
    try:
        convert(a)
    except Exception as e:  # one line, whatever went wrong: the file is named, no traceback
        text = " ".join(str(e).split()) or type(e).__name__
        sys.exit(f"error: {a.checkpoint}: {text}")


def convert(a):
    if not Path(a.checkpoint).is_file():
        raise Refused("no such file" if not Path(a.checkpoint).exists() else "not a file")
    try:
        state = load_checkpoint(a.checkpoint)
    except Refused:
        raise
    except Exception as e:
        why = str(e).split("WeightsUnpickler error: ")[-1]  # not torch's advice to load unsafely
        raise Refused(f"not a PyTorch checkpoint that can be read safely ({type(e).__name__}: {why})") from None
    tensors, note = pick_tensors(state, a.key, a.strip)
    out = {}
    for name, t in tensors.items():
        if not t.is_floating_point():
            continue  # e.g. num_batches_tracked; vitattn reads float tensors only
        if a.dtype == "f16":
            out[name] = t.detach().to(torch.float16).numpy().astype("<f2")
        else:
            out[name] = t.detach().to(torch.float32).numpy().astype("<f4")
    meta = {"format": "pt", "source": Path(a.checkpoint).name}
    if a.num_heads:
        meta["num_heads"] = str(a.num_heads)
    if a.mean:
        meta["mean"] = a.mean
    if a.std:
        meta["std"] = a.std
    safetensors_io.write(a.output, out, meta)
    print(f"{a.output}: {len(out)} tensors{note}")


if __name__ == "__main__":
    main()
