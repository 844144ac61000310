"""What the Python tests share: where the binary and the fixtures are, running the binary
(a sanitizer report always fails), test images, a temporary folder per test, and the one
rule for tests that cannot run here (need()).

Environment:
  VITATTN_BIN     the binary to test (default <repo>/build/dev/vitattn)
  VITATTN_SHARED  the shared fixtures (default <repo>/../shared); point it at a missing
                  folder to see the tests that need it skip (or fail, under CI=true)
"""
import os
import pty
import resource
import struct
import subprocess
import tempfile
import unittest
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[2]
BIN = str(Path(os.environ.get("VITATTN_BIN", str(REPO / "build/dev/vitattn"))).resolve())
SHARED = Path(os.environ.get("VITATTN_SHARED", str(REPO.parent / "shared")))
USE_SHARED = False  # set from pytest's --shared by tests/conftest.py
IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg")
PHOTOS = sorted(p for p in (SHARED / "images").glob("*.*") if p.suffix.lower() in IMAGE_SUFFIXES) \
    if (SHARED / "images").is_dir() else []

# In the asan/tsan builds the binary is sanitized; a report fails the test even where the
# test expects a failing exit status (the sanitizers also exit with 86, see cmake/Sanitizers.cmake).
SANITIZER_MARKS = ("ERROR: AddressSanitizer", "ERROR: LeakSanitizer", "WARNING: ThreadSanitizer",
                   "ThreadSanitizer:", "runtime error:", "UndefinedBehaviorSanitizer")


def in_ci():
    """CI has torch, PIL, cv2 and ../shared: there a skip is a failure (tests/conftest.py)."""
    return os.environ.get("CI", "").strip().lower() not in ("", "0", "false", "no")


def need(ok, reason):
    """Skips the calling test (module, when called at import) unless `ok`. Under CI=true the
    skip is turned into a failure by tests/conftest.py."""
    if not ok:
        import pytest
        pytest.skip(reason, allow_module_level=True)


def check_sanitizers(args, stderr):
    for mark in SANITIZER_MARKS:
        if mark in stderr:
            raise AssertionError(f"sanitizer report from {list(map(str, args))}:\n{stderr[-4000:]}")


RUN_TIMEOUT_S = 480  # below ctest's 600 s per test entry (tests/CMakeLists.txt)
# Under a sanitizer the binary reserves terabytes of address space: no limit on it there.
SANITIZED = any(k in os.environ for k in ("ASAN_OPTIONS", "TSAN_OPTIONS", "UBSAN_OPTIONS"))


def changed_env(env):
    """os.environ with `env`'s changes, a value of None removing the variable; None without changes."""
    if not env:
        return None
    full_env = dict(os.environ)
    for k, v in env.items():
        if v is None:
            full_env.pop(k, None)
        else:
            full_env[k] = v
    return full_env


def _limit_address_space(limit):
    return lambda: resource.setrlimit(resource.RLIMIT_AS, (limit, limit))


def _read_all(fd):
    chunks = []
    while True:
        try:
            chunk = os.read(fd, 65536)
        except OSError:  # EIO: the terminal's other end closed
            break
        if not chunk:
            break
        chunks.append(chunk)
    return b"".join(chunks)


def run_process(*args, cwd=None, env=None, timeout=RUN_TIMEOUT_S, stdin=None, stdout=None, stderr_tty=False,
                address_space=None, expect=None):
    """Runs the binary with `args`; returns the CompletedProcess (text, undecodable bytes
    replaced): the Python tests' one way to run the binary and wait for it (run and run_checked
    wrap it; a test that measures the process or drives several at once uses subprocess itself).
      cwd            its working folder
      env            changes to the environment, a value of None removing the variable
      timeout        seconds until it is killed and the test fails with the command named: a
                     run that never ends (a server started where a usage error was meant)
                     does not hold the whole suite until ctest's limit
      stdin          text for its standard input (default: none, /dev/null)
      stdout         a file object its standard output goes to (p.stdout is then None)
      stderr_tty     standard error on a pseudo-terminal, as a user at a terminal sees it
      address_space  a limit in bytes on the child's address space (RLIMIT_AS), so that a
                     request for a huge buffer fails at once instead of swapping the machine;
                     ignored under a sanitizer
      expect         the exit status it must have, else an AssertionError names the command
                     and the end of its stderr
    A sanitizer report fails the test whatever the exit status."""
    master, slave = pty.openpty() if stderr_tty else (None, None)
    try:
        p = subprocess.run([BIN, *map(str, args)], cwd=cwd, env=changed_env(env), text=True, errors="replace",
                           input=stdin, stdin=subprocess.DEVNULL if stdin is None else None,
                           stdout=stdout if stdout is not None else subprocess.PIPE,
                           stderr=slave if stderr_tty else subprocess.PIPE, timeout=timeout,
                           preexec_fn=_limit_address_space(address_space) if address_space and not SANITIZED
                           else None)
        if stderr_tty:
            os.close(slave)
            slave = None
            p.stderr = _read_all(master).decode(errors="replace")
    finally:
        for fd in (master, slave):
            if fd is not None:
                os.close(fd)
    check_sanitizers(args, p.stderr)
    if expect is not None and p.returncode != expect:
        raise AssertionError(f"vitattn {' '.join(map(str, args))}: exit {p.returncode}, expected {expect}:\n"
                             f"{p.stderr[-3000:]}")
    return p


def run(*args, **options):
    """run_process(*args, **options) as (exit status, stdout, stderr)."""
    p = run_process(*args, **options)
    return p.returncode, p.stdout, p.stderr


def run_checked(tally, *args, expect=0, **options):
    """run_process(*args, **options) as one check of `tally` (tests/pylib/tally.py) that it
    exited `expect`; the failure names the command and the end of its stderr. Returns the
    CompletedProcess."""
    p = run_process(*args, **options)
    tally.check(p.returncode == expect, f"vitattn {' '.join(map(str, args))}: exit {p.returncode}, expected {expect}: "
                f"{p.stderr.strip()[-500:]}")
    return p


def run_ok(tally, label, args, timeout=600):
    """Runs the binary as one check of `tally` (tests/pylib/tally.py): it ran and exited 0.
    Returns whether it did; the failure names the command and the end of its stderr."""
    cmd = [BIN] + [str(a) for a in args]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired) as e:
        return tally.check(False, f"{label}: could not run {' '.join(cmd)}: {e}")
    return tally.check(proc.returncode == 0,
                       f"{label}: exit {proc.returncode} from {' '.join(cmd)}\n  stderr: {proc.stderr.strip()[-2000:]}")


# Whether this CPU has AVX512-BF16 (vdpbf16ps), which --precision bf16 needs: where it has, the
# oracle tests check bf16's maps; where not, that the option is refused (bf16_refused).
CPU_HAS_BF16 = Path("/proc/cpuinfo").exists() and "avx512_bf16" in Path("/proc/cpuinfo").read_text()


def bf16_refused(tally, label, args, out, **options):
    """On a CPU without AVX512-BF16: `args` with --precision bf16 is one check of `tally` that the
    run is refused as documented: exit 2, one error line naming the option and the instructions,
    nothing written to `out` (the run's -o folder)."""
    p = run_process(*args, "--precision", "bf16", "-o", out, **options)
    errors = [line for line in p.stderr.splitlines() if line.startswith("error")]
    return tally.check(p.returncode == 2 and len(errors) == 1 and "--precision bf16" in errors[0]
                       and "AVX512-BF16" in errors[0] and not Path(out).exists(),
                       f"{label}: --precision bf16 without AVX512-BF16: exit {p.returncode}, {p.stderr.strip()[-300:]}")


def photo_like(h, w, seed=0):
    """A colour image with structure: gradients, a disc and a bright square."""
    import cv2
    rng = np.random.default_rng(seed)
    y, x = np.mgrid[0:h, 0:w]
    img = np.stack([x * 255 // max(w - 1, 1), y * 255 // max(h - 1, 1), (x + y) * 127 // max(h + w - 2, 1)], -1)
    img = img.astype(np.uint8)
    cv2.circle(img, (w // 3, h // 2), max(min(h, w) // 5, 1), (20, 200, 40), -1)
    cv2.rectangle(img, (2 * w // 3, h // 5), (2 * w // 3 + w // 8, h // 5 + h // 8), (250, 250, 250), -1)
    noise = rng.integers(-8, 9, img.shape)
    return np.clip(img.astype(int) + noise, 0, 255).astype(np.uint8)


def dino_mask(attn_map, t):
    """DINO's mass mask as visualize_attention.py computes it: sort ascending, normalise,
    cumulative sum, keep the patches whose cumulative value exceeds 1 - t."""
    flat = np.asarray(attn_map, np.float64).ravel()
    idx = np.argsort(flat, kind="stable")
    cumval = np.cumsum(flat[idx] / flat.sum())
    mask = np.zeros(flat.size, bool)
    mask[idx] = cumval > 1 - t
    return mask.reshape(np.shape(attn_map))


def exif_rotated_jpeg(img, orientation):
    """A JPEG with an EXIF APP1 segment holding only the Orientation tag."""
    import cv2
    ok, buf = cv2.imencode(".jpg", img)
    assert ok
    jpg = buf.tobytes()
    tiff = b"II*\x00" + struct.pack("<I", 8) + struct.pack("<H", 1)
    tiff += struct.pack("<HHII", 0x0112, 3, 1, orientation) + struct.pack("<I", 0)
    payload = b"Exif\x00\x00" + tiff
    app1 = b"\xff\xe1" + struct.pack(">H", len(payload) + 2) + payload
    return jpg[:2] + app1 + jpg[2:]


def timm_tensors(d, p, grid, layers, mlp, seed=0, classes=0, registers=0, embed_scale=1.0, scale=0.3,
                 patch_scale=0.1, qkv_scale=None):
    """A small ViT's random weights under timm's names, {name: float32 array}.
    With `classes`, a classifier (family timm, else dino); with `registers`, register tokens
    and layer scale (DINOv2). A small embed_scale makes the token stream tiny, so that
    LayerNorm's ε shows; a larger qkv_scale makes the attention peakier."""
    rng = np.random.default_rng(seed)
    r = lambda *s, scale=scale: (rng.standard_normal(s) * scale).astype(np.float32)  # noqa: E731
    e = embed_scale
    t = {"patch_embed.proj.weight": r(d, 3, p, p, scale=patch_scale * e), "patch_embed.proj.bias": r(d, scale=scale * e),
         "cls_token": r(1, 1, d, scale=scale * e), "pos_embed": r(1, 1 + grid * grid, d, scale=scale * e)}
    if classes:
        t["head.weight"], t["head.bias"] = r(classes, d), r(classes)
    if registers:
        t["register_tokens"] = r(1, registers, d)
    for i in range(layers):
        b = f"blocks.{i}."
        t.update({b + "norm1.weight": 1 + r(d), b + "norm1.bias": r(d),
                  b + "attn.qkv.weight": r(3 * d, d, scale=qkv_scale or scale),
                  b + "attn.qkv.bias": r(3 * d), b + "attn.proj.weight": r(d, d), b + "attn.proj.bias": r(d),
                  b + "norm2.weight": 1 + r(d), b + "norm2.bias": r(d), b + "mlp.fc1.weight": r(mlp, d),
                  b + "mlp.fc1.bias": r(mlp), b + "mlp.fc2.weight": r(d, mlp), b + "mlp.fc2.bias": r(d)})
        if registers:
            t[b + "ls1.gamma"] = r(d)
            t[b + "ls2.gamma"] = r(d)
    t["norm.weight"], t["norm.bias"] = 1 + r(d), r(d)
    return t


def renamed_from_timm(t, family, d, layers):
    """timm_tensors' names → the family's ("torchvision", "hf-vit", "hf-dinov2", "tintn"; timm, dino and
    dinov2 are timm's own), as tests/pylib/torch_reference.py's exporters do, in numpy.
    A classifier comes along (heads.head, classifier), register tokens too; an HF Dinov2 file
    always holds its mask token."""
    if family in ("timm", "dino", "dinov2"):
        return t
    if family == "tintn":  # tintn has no final norm: timm's is left out
        return _renamed_to_tintn(t, layers)
    split = lambda w: (w[:d], w[d:2 * d], w[2 * d:])  # noqa: E731  (d, d) each of the (3d, d) qkv
    if family == "torchvision":
        out = {"conv_proj.weight": t["patch_embed.proj.weight"], "conv_proj.bias": t["patch_embed.proj.bias"],
               "class_token": t["cls_token"], "encoder.pos_embedding": t["pos_embed"],
               "encoder.ln.weight": t["norm.weight"], "encoder.ln.bias": t["norm.bias"]}
        if "head.weight" in t:
            out["heads.head.weight"], out["heads.head.bias"] = t["head.weight"], t["head.bias"]
        names = {"norm1": "ln_1", "attn.qkv.weight": "self_attention.in_proj_weight",
                 "attn.qkv.bias": "self_attention.in_proj_bias", "attn.proj": "self_attention.out_proj",
                 "norm2": "ln_2", "mlp.fc1": "mlp.0", "mlp.fc2": "mlp.3"}
        block = "encoder.layers.encoder_layer_{}."
    else:
        hf_vit = family == "hf-vit"
        e = "vit.embeddings." if hf_vit else "embeddings."
        out = {e + "cls_token": t["cls_token"], e + "position_embeddings": t["pos_embed"],
               e + "patch_embeddings.projection.weight": t["patch_embed.proj.weight"],
               e + "patch_embeddings.projection.bias": t["patch_embed.proj.bias"]}
        if "register_tokens" in t:
            out[e + "register_tokens"] = t["register_tokens"]
        if not hf_vit:
            out[e + "mask_token"] = np.zeros((1, d), np.float32)
        final = "vit.layernorm." if hf_vit else "layernorm."
        out.update({final + "weight": t["norm.weight"], final + "bias": t["norm.bias"]})
        if hf_vit and "head.weight" in t:
            out["classifier.weight"], out["classifier.bias"] = t["head.weight"], t["head.bias"]
        names = {"norm1": "layernorm_before" if hf_vit else "norm1", "attn.proj": "attention.output.dense",
                 "norm2": "layernorm_after" if hf_vit else "norm2",
                 "mlp.fc1": "intermediate.dense" if hf_vit else "mlp.fc1",
                 "mlp.fc2": "output.dense" if hf_vit else "mlp.fc2",
                 "ls1.gamma": "layer_scale1.lambda1", "ls2.gamma": "layer_scale2.lambda1"}
        block = ("vit." if hf_vit else "") + "encoder.layer.{}."
    for i in range(layers):
        s, dst = f"blocks.{i}.", block.format(i)
        for name, value in t.items():
            if not name.startswith(s):
                continue
            rest = name[len(s):]
            if rest.startswith("attn.qkv.") and family != "torchvision":
                for part, w in zip(("query", "key", "value"), split(value)):
                    out[dst + f"attention.attention.{part}." + rest.rsplit(".", 1)[1]] = w
                continue
            stem = next(n for n in sorted(names, key=len, reverse=True) if rest == n or rest.startswith(n + "."))
            out[dst + names[stem] + rest[len(stem):]] = value
    return out


def _renamed_to_tintn(t, layers):
    """timm_tensors' names → tintn's (vision-transformer-from-scratch), final norm left out."""
    out = {"embedding.patch_embeddings.projection.weight": t["patch_embed.proj.weight"],
           "embedding.patch_embeddings.projection.bias": t["patch_embed.proj.bias"],
           "embedding.cls_token": t["cls_token"], "embedding.position_embeddings": t["pos_embed"]}
    if "head.weight" in t:
        out["classifier.weight"], out["classifier.bias"] = t["head.weight"], t["head.bias"]
    names = {"norm1": "layernorm_1", "attn.qkv": "attention.qkv_projection", "attn.proj": "attention.output_projection",
             "norm2": "layernorm_2", "mlp.fc1": "mlp.dense_1", "mlp.fc2": "mlp.dense_2"}
    for i in range(layers):
        for stem, dst in names.items():
            for part in ("weight", "bias"):
                out[f"encoder.blocks.{i}.{dst}.{part}"] = t[f"blocks.{i}.{stem}.{part}"]
    return out


def timm_checkpoint(path, d, p, grid, layers, mlp, heads, heads_in_metadata=True, seed=0, classes=0,
                    registers=0, embed_scale=1.0, scale=0.3, patch_scale=0.1):
    """timm_tensors(...) written as F32 safetensors, with the head count in the metadata unless
    heads_in_metadata is False."""
    import safetensors_io
    t = timm_tensors(d, p, grid, layers, mlp, seed, classes, registers, embed_scale, scale, patch_scale)
    safetensors_io.write(path, t, {"num_heads": str(heads)} if heads_in_metadata else None, dtype="F32")


def small_timm_checkpoint(path, d=32, heads=2, p=8, grid=4, layers=2, heads_in_metadata=True, seed=0):
    """A small timm-named ViT with random weights (MLP 2·d): timm_checkpoint with the e2e
    tests' usual sizes, D 32, 2 heads, patch 8 on a 4x4 grid, 2 layers."""
    timm_checkpoint(path, d, p, grid, layers, 2 * d, heads, heads_in_metadata, seed)


def files_of(folder):
    """{relative path: bytes} of every file below `folder`."""
    folder = Path(folder)
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def outputs_of(folder):
    """files_of less the settings records (<name>_settings.txt, which name the options given):
    for runs whose options differ but should draw the same files, byte for byte."""
    return {name: data for name, data in files_of(folder).items() if not name.endswith("_settings.txt")}


def temporaries(folder):
    """vitattn's temporary files ('.tmp-' in the name) left below `folder`."""
    return sorted(str(p) for p in Path(folder).rglob("*") if ".tmp-" in p.name)


class TmpCase(unittest.TestCase):
    """A test case with its own temporary folder, self.dir, removed afterwards."""
    tmp_prefix = "vitattn-test-"

    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory(prefix=self.tmp_prefix)
        self.dir = Path(self.tmp.name)

    def tearDown(self):
        for p in self.dir.rglob("*"):  # chmod 000 files must be removable by a non-root owner too
            if not p.is_symlink():
                p.chmod(0o700)
        self.tmp.cleanup()

    def run_to_new_folder(self, *args, ok=True):
        """Runs the binary with `-o` a new folder below self.dir (out1, out2, …); with `ok`, it
        must exit 0. Returns (process, output folder)."""
        self._runs = getattr(self, "_runs", 0) + 1
        out = self.dir / f"out{self._runs}"
        p = run_process(*args, "-o", out, cwd=self.dir)
        if ok:
            self.assertEqual(p.returncode, 0, p.stderr)
        return p, out

    def write(self, rel, img, params=()):
        """Encodes `img` by the suffix of `rel` (below self.dir); returns the path."""
        import cv2
        p = self.dir / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        ok, buf = cv2.imencode(p.suffix, img, list(params))
        self.assertTrue(ok, rel)
        p.write_bytes(buf.tobytes())
        return p

    def no_temporaries(self, folder):
        self.assertEqual(temporaries(folder), [], "temporary files left behind")
