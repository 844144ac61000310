#!/usr/bin/env python3
"""Malformed models, end to end: every rejection path of the safetensors reader and of the
model loader, each triggered by a file given to the binary as `vitattn --model FILE img.png`.

Each case checks: exit status 2, exactly one line on stderr, "error: FILE: ..." naming the file
and containing the expected words, valid UTF-8 whatever bytes the file holds, and nothing
written (the output folder is not created). A missing file and a folder are caught earlier,
by the --model option's check, in CLI11's usage-error form (checked as such).
The unit tests (tests/unit/safetensors_test.cpp) cover the same reader in memory; this is what
a user sees. A control case checks that the base model the broken files start from loads.

Needs Debian's python3-numpy and python3-opencv (use /usr/bin/python3).
Environment: VITATTN_BIN (the binary). Run: python3 -m pytest tests/e2e/test_bad_models.py
The files come from tests/pylib/safetensors_io.py: encode() for the well-formed ones the
loader refuses, frame() (raw bytes, a length that may lie) for the broken containers.
"""
import json
import os
import subprocess

import cv2
import numpy as np

from harness import BIN, TmpCase, check_sanitizers
from safetensors_io import encode as safetensors, frame as raw_file

# The base model: P=8, D=4, d_k=2, 1+N=5 tokens (a 2x2 grid, S=16).
P, D, DK, TOKENS = 8, 4, 2, 5


def base_tensors():
    rng = np.random.default_rng(1)
    return {
        "patch_embed.proj.weight": rng.normal(0, 0.1, (D, 3, P, P)).astype("<f4"),
        "cls_token": rng.normal(0, 1, (1, 1, D)).astype("<f4"),
        "pos_embed": rng.normal(0, 0.1, (1, TOKENS, D)).astype("<f4"),
        "attn.q.weight": rng.normal(0, 0.5, (DK, D)).astype("<f4"),
        "attn.k.weight": rng.normal(0, 0.5, (DK, D)).astype("<f4"),
        "attn.v.weight": rng.normal(0, 0.5, (DK, D)).astype("<f4"),
    }


def one(entry, data_len):
    """A file with a single tensor entry "w" and data_len zero bytes of data."""
    return raw_file(json.dumps({"w": entry}), bytes(data_len))


def with_tensor(name, value):
    t = base_tensors()
    t[name] = value
    return safetensors(t)


def without(name):
    t = base_tensors()
    del t[name]
    return safetensors(t)


def nan_in(name, index=3, value=np.nan, dtype="<f4"):
    t = base_tensors()
    a = t[name].astype(dtype)
    a.reshape(-1)[index] = value
    t[name] = a
    return safetensors(t)


F32_1 = {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]}

# name → (file bytes, expected part of the message after "error: FILE: ")
CASES = {
    # --- the safetensors container -------------------------------------------------------
    "empty_file": (b"", "too short for a safetensors file (0 bytes)"),
    "shorter_than_8_bytes": (b"\x01\x02\x03\x04\x05", "too short for a safetensors file (5 bytes)"),
    "header_longer_than_file": (raw_file("{}", length=500), "header is 500 bytes but the file has only 2 after the length"),
    "header_length_absurd": (raw_file("{}", length=1 << 62),
                             f"header is {1 << 62} bytes, over the 100000000-byte limit"),
    "header_not_json": (raw_file("{this is not json"), "header is not valid JSON"),
    "header_not_utf8_json": (raw_file(b'{"\xff\xfe": 1}'), "header is not valid JSON"),
    "tensor_name_with_newline": (raw_file(json.dumps({"a\nb": [1]})), "a\\x0Ab: entry is not an object"),
    "header_json_array": (raw_file("[1, 2, 3]"), "header is not a JSON object"),
    "header_json_string": (raw_file('"weights"'), "header is not a JSON object"),
    "metadata_not_object": (raw_file(json.dumps({"__metadata__": [1]})), "__metadata__ is not an object"),
    "metadata_value_not_string": (raw_file(json.dumps({"__metadata__": {"mean": 0.5}})),
                                  "__metadata__.mean is not a string"),
    "entry_not_object": (raw_file(json.dumps({"w": [1, 2]})), "w: entry is not an object"),
    "entry_missing_dtype": (one({"shape": [1], "data_offsets": [0, 4]}, 4), "w: no dtype"),
    "entry_dtype_not_string": (one({"dtype": 4, "shape": [1], "data_offsets": [0, 4]}, 4), "w: no dtype"),
    "entry_unknown_dtype": (one({"dtype": "F128", "shape": [1], "data_offsets": [0, 16]}, 16), "w: unknown dtype F128"),
    "entry_missing_shape": (one({"dtype": "F32", "data_offsets": [0, 4]}, 4), "w: no shape"),
    "entry_shape_not_array": (one({"dtype": "F32", "shape": 1, "data_offsets": [0, 4]}, 4), "w: no shape"),
    "entry_missing_data_offsets": (one({"dtype": "F32", "shape": [1]}, 4), "w: data_offsets is not [begin, end]"),
    "entry_data_offsets_three_numbers": (one({"dtype": "F32", "shape": [1], "data_offsets": [0, 4, 8]}, 8),
                                         "w: data_offsets is not [begin, end]"),
    "entry_data_offsets_not_integers": (one({"dtype": "F32", "shape": [1], "data_offsets": [0, 4.5]}, 4),
                                        "w: data_offsets are not whole numbers ≥ 0"),
    "entry_data_offsets_negative": (one({"dtype": "F32", "shape": [1], "data_offsets": [-4, 0]}, 4),
                                    "w: data_offsets are not whole numbers ≥ 0"),
    "shape_negative": (one({"dtype": "F32", "shape": [-1], "data_offsets": [0, 4]}, 4),
                       "w: shape holds a value that is not a whole number ≥ 0"),
    "shape_not_integer": (one({"dtype": "F32", "shape": [1.5], "data_offsets": [0, 4]}, 4),
                          "w: shape holds a value that is not a whole number ≥ 0"),
    "shape_string": (one({"dtype": "F32", "shape": ["2"], "data_offsets": [0, 8]}, 8),
                     "w: shape holds a value that is not a whole number ≥ 0"),
    "shape_overflows_64_bits": (one({"dtype": "F32", "shape": [1 << 32, 1 << 32], "data_offsets": [0, 4]}, 4),
                                "w: shape [4294967296,4294967296] is too large"),
    "offsets_past_end_of_file": (one({"dtype": "F32", "shape": [4], "data_offsets": [0, 16]}, 8),
                                 "w: data_offsets end at byte 16, past the 8 bytes of data"),
    "offsets_reversed": (one({"dtype": "F32", "shape": [0], "data_offsets": [8, 4]}, 8),
                         "w: data_offsets [8, 4] end before they begin"),
    "offsets_not_matching_shape_and_dtype": (one({"dtype": "F32", "shape": [2, 3], "data_offsets": [0, 20]}, 20),
                                             "w: F32 [2, 3] needs 24 bytes, data_offsets give 20"),
    "offsets_not_matching_f16": (one({"dtype": "F16", "shape": [3], "data_offsets": [0, 12]}, 12),
                                 "w: F16 [3] needs 6 bytes, data_offsets give 12"),
    "offsets_overlap": (raw_file(json.dumps({"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]},
                                             "b": {"dtype": "F32", "shape": [2], "data_offsets": [4, 12]}}), bytes(12)),
                        "b: data overlaps a (starts at byte 4, a ends at 8)"),
    "gap_between_tensors": (raw_file(json.dumps({"a": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]},
                                                 "b": {"dtype": "F32", "shape": [1], "data_offsets": [8, 12]}}), bytes(12)),
                            "b: gap of 4 bytes before its data"),
    "gap_at_start_of_data": (one({"dtype": "F32", "shape": [1], "data_offsets": [4, 8]}, 8), "w: gap of 4 bytes before its data"),
    "bytes_after_last_tensor": (one(F32_1, 9), "file has 5 bytes of data after the last tensor; the header accounts for 4"),
    # --- the model loader ----------------------------------------------------------------
    "missing_patch_embed": (without("patch_embed.proj.weight"),
                            "not a complete single-head model: missing patch_embed.proj.weight"),
    "missing_cls_token": (without("cls_token"), "not a complete single-head model: missing cls_token"),
    "missing_pos_embed": (without("pos_embed"), "not a complete single-head model: missing pos_embed"),
    "missing_q_weight": (without("attn.q.weight"), "not a complete single-head model: missing attn.q.weight"),
    "missing_v_weight": (without("attn.v.weight"), "not a complete single-head model: missing attn.v.weight"),
    "patch_embed_wrong_rank": (with_tensor("patch_embed.proj.weight", np.zeros((D, 3 * P * P), "<f4")),
                               "patch_embed.proj.weight is [4, 192], expected [D, 3, P, P]"),
    "patch_embed_not_square_patches": (with_tensor("patch_embed.proj.weight", np.zeros((D, 3, P, 4), "<f4")),
                                       "patch_embed.proj.weight is [4, 3, 8, 4], expected [4, 3, 8, 8]"),
    "k_weight_misshaped": (with_tensor("attn.k.weight", np.zeros((DK, D + 1), "<f4")),
                           "attn.k.weight is [2, 5], expected [2, 4]"),
    "cls_token_misshaped": (with_tensor("cls_token", np.zeros((1, D), "<f4")), "cls_token is [1, 4], expected [1, 1, 4]"),
    "q_bias_misshaped": (with_tensor("attn.q.bias", np.zeros(DK + 1, "<f4")), "attn.q.bias is [3], expected [2]"),
    "pos_embed_not_a_square_grid": (with_tensor("pos_embed", np.zeros((1, 4, D), "<f4")),
                                    "pos_embed has 4 positions, which is not 1 + N for a square grid of N patches"),
    # Sizes over the loader's limits, with zero-byte tensors so the files stay small.
    "implausible_token_count": (with_tensor("pos_embed", np.zeros((1, (1 << 24) + 1, 0), "<f4")),
                                "pos_embed is [1, 16777217, 0], expected [1, 1+N, 4]"),
    "implausible_d_k": (with_tensor("attn.q.weight", np.zeros(((1 << 20) + 1, 0), "<f4")),
                        "attn.q.weight is [1048577, 0], expected [d_k, 4]"),
    "empty_model_d_zero": (with_tensor("patch_embed.proj.weight", np.zeros((0, 3, P, P), "<f4")), "patch_embed.proj.weight is [0, 3, 8, 8], expected [D, 3, P, P] with D and P positive"),
    "weights_not_a_float_dtype": (with_tensor("attn.v.weight", np.zeros((DK, D), "<i4")),
                                  "attn.v.weight has dtype I32; weights must be F32, F16, BF16 or F64"),
    "nan_weight": (nan_in("attn.q.weight"), "attn.q.weight holds a non-finite value (nan at index 3)"),
    "inf_weight_f16": (nan_in("pos_embed", 7, np.inf, "<f2"), "pos_embed holds a non-finite value (inf at index 7)"),
    "inf_weight_f64_beyond_float": (nan_in("cls_token", 1, 1e300, "<f8"), "cls_token holds a non-finite value (inf at index 1)"),
    "metadata_mean_two_numbers": (safetensors(base_tensors(), {"mean": "0.5,0.5"}),
                                  '__metadata__.mean is "0.5,0.5", expected three numbers "r,g,b"'),
    "metadata_std_zero": (safetensors(base_tensors(), {"std": "0.2,0,0.2"}),
                          "mean must be finite and std finite and positive"),
}


def png(path):
    ok, buf = cv2.imencode(".png", np.full((20, 30, 3), 120, np.uint8))
    assert ok
    path.write_bytes(buf.tobytes())


class BadModels(TmpCase):
    tmp_prefix = "vitattn-badmodel-"

    def setUp(self):
        super().setUp()
        png(self.dir / "img.png")

    def run_model(self, model, prefix=()):
        p = subprocess.run([*prefix, BIN, "--model", model, "img.png", "-o", "out"], cwd=self.dir, capture_output=True,
                           stdin=subprocess.DEVNULL)
        try:
            err = p.stderr.decode("utf-8")
        except UnicodeDecodeError as e:
            self.fail(f"stderr is not valid UTF-8 ({e}): {p.stderr!r}")
        check_sanitizers(["--model", model], err)
        return p.returncode, err

    def refused(self, model, expected):
        before = sorted(p.name for p in self.dir.iterdir())
        rc, err = self.run_model(model)
        self.assertEqual(rc, 2, f"exit status for {model}: {err}")
        lines = err.splitlines()
        self.assertEqual(len(lines), 1, f"expected one line on stderr, got:\n{err}")
        prefix = f"error: {model}: "
        self.assertTrue(lines[0].startswith(prefix), f"{lines[0]!r} does not start with {prefix!r}")
        self.assertIn(expected, lines[0])
        self.assertEqual(sorted(p.name for p in self.dir.iterdir()), before, "something was written")

    def test_control_the_base_model_loads(self):
        (self.dir / "good.safetensors").write_bytes(safetensors(base_tensors(), {"mean": "0.5,0.5,0.5"}))
        rc, err = self.run_model("good.safetensors")
        self.assertEqual(rc, 0, err)
        self.assertTrue((self.dir / "out/img_attn.png").is_file())

    def refused_by_option_check(self, model, problem):
        """A missing file or a folder is caught by the --model option's own check, before the
        file is read: one error line naming the option, the file and the problem."""
        before = sorted(p.name for p in self.dir.iterdir())
        rc, err = self.run_model(model)
        self.assertEqual(rc, 2, err)
        self.assertEqual(err.splitlines(), [f"error: --model: {model}: {problem} (see vitattn --help)"])
        self.assertEqual(sorted(p.name for p in self.dir.iterdir()), before, "something was written")

    def test_directory_given_as_model(self):
        (self.dir / "model.safetensors").mkdir()
        self.refused_by_option_check("model.safetensors", "is a folder, not a file")

    def test_missing_model_file(self):
        self.refused_by_option_check("nowhere.safetensors", "no such file")

    def test_unreadable_model_file(self):
        path = self.dir / "locked.safetensors"
        path.write_bytes(safetensors(base_tensors()))
        path.chmod(0)
        # Root reads files whatever their permission bits (CAP_DAC_OVERRIDE), as in CI: there
        # the binary runs without that capability, so the bits count as for any owner.
        prefix = ["setpriv", "--bounding-set=-dac_override,-dac_read_search"] if os.geteuid() == 0 else []
        before = sorted(p.name for p in self.dir.iterdir())
        rc, err = self.run_model("locked.safetensors", prefix)
        self.assertEqual(rc, 2, err)
        self.assertEqual(len(err.splitlines()), 1, err)
        self.assertTrue(err.startswith("error: locked.safetensors: "), err)
        self.assertIn("Permission denied", err)
        self.assertEqual(sorted(p.name for p in self.dir.iterdir()), before, "something was written")


def make_case(data, expected):
    def test(self):
        (self.dir / "bad.safetensors").write_bytes(data)
        self.refused("bad.safetensors", expected)
    return test


for _name, (_data, _expected) in CASES.items():
    setattr(BadModels, f"test_{_name}", make_case(_data, _expected))

