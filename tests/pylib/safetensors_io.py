"""The one safetensors writer and reader of the Python tests, benchmarks, fuzz seeds and
scripts/pth_to_safetensors.py, written from the format's description
(https://github.com/huggingface/safetensors#format), independent of vitattn's C++ reader:

    8 bytes   little-endian u64 N, the header's length
    N bytes   JSON: {"__metadata__": {str: str}, name: {"dtype", "shape", "data_offsets": [b, e]}}
    the rest  the tensors' bytes, data_offsets counted from here

encode()/write() make well-formed files; frame() is the raw-bytes variant for the files the
tests break on purpose (a header length that lies, JSON that is not an object, overlapping
offsets, an unknown dtype): it writes whatever it is given. read() decodes F32, F16, BF16
and F64 to float32 and refuses what the format forbids.
"""
import json
import os
import struct
from pathlib import Path

import numpy as np

# numpy dtype (as stored, little-endian) ↔ safetensors dtype name.
NUMPY_TO_NAME = {"<f4": "F32", "<f2": "F16", "<f8": "F64", "<i4": "I32", "<i8": "I64", "|u1": "U8"}
BYTES_PER_ELEMENT = {"F32": 4, "F16": 2, "BF16": 2, "F64": 8, "I32": 4, "I64": 8, "U8": 1}


def float32_to_bf16_bits(values):
    """float32 → bf16 bit patterns (uint16), rounded to nearest even (as torch does)."""
    bits = np.ascontiguousarray(values, dtype=np.float32).view(np.uint32).astype(np.uint64)
    round_bias = ((bits >> 16) & 1) + 0x7FFF
    return ((bits + round_bias) >> 16).astype(np.uint16)


def encode_tensor(values, dtype):
    """A float array's bytes as `dtype` stores them (F32, F16, BF16 or F64)."""
    values = np.asarray(values)
    if dtype == "F32":
        return values.astype("<f4").tobytes()
    if dtype == "F16":
        return values.astype(np.float32).astype("<f2").tobytes()
    if dtype == "F64":
        return values.astype("<f8").tobytes()
    if dtype == "BF16":
        return float32_to_bf16_bits(values).astype("<u2").tobytes()
    raise ValueError(f"unsupported dtype {dtype!r}")


def _entry(value, dtype):
    """(dtype name, shape, byte count, a function giving the bytes) of one tensor. `value` is
    an array (stored as `dtype` if given, else as its own numpy dtype) or an already-encoded
    (dtype name, shape, bytes). The bytes are made only when written: a large model is
    streamed to its file, one tensor at a time."""
    if isinstance(value, tuple):
        name, shape, raw = value
        raw = bytes(raw)
        return name, list(shape), len(raw), lambda: raw
    a = np.asarray(value)
    if dtype is not None:
        return dtype, list(a.shape), a.size * BYTES_PER_ELEMENT[dtype], lambda: encode_tensor(a, dtype)
    a = np.ascontiguousarray(a.astype(a.dtype.newbyteorder("<"), copy=False))
    return NUMPY_TO_NAME[a.dtype.str], list(a.shape), a.nbytes, a.tobytes


def header_text(header):
    """Compact JSON, padded with spaces so that the data starts 8-byte aligned."""
    text = json.dumps(header, separators=(",", ":")).encode()
    return text + b" " * (-len(text) % 8)


def frame(header, data=b"", length=None):
    """The raw file: the 8-byte length (the true one unless `length` is given), the header
    (a str or bytes taken as they are, anything else dumped as JSON) and `data`."""
    if isinstance(header, str):
        text = header.encode()
    elif isinstance(header, (bytes, bytearray)):
        text = bytes(header)
    else:
        text = json.dumps(header).encode()
    return struct.pack("<Q", len(text) if length is None else length) + text + bytes(data)


def _layout(tensors, metadata, dtype):
    """(header bytes, each tensor's bytes-making function) of a well-formed file."""
    header, makers, offset = {}, [], 0
    if metadata:
        header["__metadata__"] = {str(k): str(v) for k, v in metadata.items()}
    items = tensors.items() if isinstance(tensors, dict) else tensors
    for name, value in items:
        kind, shape, size, make = _entry(value, dtype)
        header[name] = {"dtype": kind, "shape": shape, "data_offsets": [offset, offset + size]}
        makers.append(make)
        offset += size
    return header_text(header), makers


def encode(tensors, metadata=None, dtype=None):
    """A well-formed file's bytes. tensors: {name: array or (dtype name, shape, bytes)} or a
    list of (name, value) pairs, in file order; metadata: {str: str} or None; dtype: store
    every array as this one (F32, F16, BF16, F64) instead of its own."""
    text, makers = _layout(tensors, metadata, dtype)
    return struct.pack("<Q", len(text)) + text + b"".join(make() for make in makers)


def write(path, tensors, metadata=None, dtype=None):
    """encode() into `path`, through a temporary file renamed into place: never half a file."""
    text, makers = _layout(tensors, metadata, dtype)
    path = Path(path)
    tmp = path.with_name(path.name + ".part")
    with open(tmp, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for make in makers:
            f.write(make())
    os.replace(tmp, path)


def read_header(path):
    """(tensor entries {name: {dtype, shape, data_offsets}}, metadata {str: str}, data bytes)."""
    blob = Path(path).read_bytes()
    if len(blob) < 8:
        raise ValueError(f"{path}: too short for a safetensors header")
    (n,) = struct.unpack("<Q", blob[:8])
    if 8 + n > len(blob):
        raise ValueError(f"{path}: header length {n} exceeds the file")
    header = json.loads(blob[8:8 + n].decode("utf-8"))
    metadata = header.pop("__metadata__", None) or {}
    return header, metadata, blob[8 + n:]


def read_metadata(path):
    return read_header(path)[1]


def _decode(raw, dtype, shape):
    if dtype == "F32":
        values = np.frombuffer(raw, dtype="<f4")
    elif dtype == "F16":
        values = np.frombuffer(raw, dtype="<f2").astype(np.float32)  # exact widening
    elif dtype == "F64":
        values = np.frombuffer(raw, dtype="<f8").astype(np.float32)
    elif dtype == "BF16":
        # bf16 is the top half of an IEEE float32: shift it into the high 16 bits.
        values = (np.frombuffer(raw, dtype="<u2").astype(np.uint32) << 16).view(np.float32)
    else:
        raise ValueError(f"unsupported safetensors dtype {dtype!r}")
    return values.reshape(shape).astype(np.float32, copy=False)


def read(path, only=None):
    """(tensors {name: float32 array}, metadata {str: str}). `only`: the dtypes allowed (a
    tensor stored otherwise is an error), e.g. ("F32",) where a writer must write F32."""
    header, metadata, data = read_header(path)
    tensors = {}
    for name, info in header.items():
        dtype, shape = info["dtype"], [int(s) for s in info["shape"]]
        begin, end = (int(o) for o in info["data_offsets"])
        if only is not None and dtype not in only:
            raise ValueError(f"{path}: tensor {name}: dtype {dtype}, expected one of {only}")
        if dtype not in BYTES_PER_ELEMENT or dtype in ("I32", "I64", "U8"):
            raise ValueError(f"{path}: tensor {name}: unsupported dtype {dtype}")
        n_elements = int(np.prod(shape, dtype=np.int64)) if shape else 1
        if not (0 <= begin <= end <= len(data)) or end - begin != n_elements * BYTES_PER_ELEMENT[dtype]:
            raise ValueError(f"{path}: tensor {name}: bad data_offsets {begin},{end}")
        tensors[name] = _decode(memoryview(data)[begin:end], dtype, shape)  # a view, not a copy
    return tensors, metadata


def timm_vit_shape(tensors, metadata):
    """The shape of a timm-layout ViT's tensors (bench/make_vit.py's files): patch, dim, depth,
    heads (from __metadata__ num_heads, else dim/64), MLP hidden width, patches."""
    dim = tensors["cls_token"].shape[-1]
    return {
        "patch": tensors["patch_embed.proj.weight"].shape[-1],
        "dim": dim,
        "depth": 1 + max(int(k.split(".")[1]) for k in tensors if k.startswith("blocks.")),
        "heads": int(metadata.get("num_heads", dim // 64)),
        "hidden": tensors["blocks.0.mlp.fc1.weight"].shape[0],
        "n_patches": tensors["pos_embed"].shape[1] - 1,
    }
