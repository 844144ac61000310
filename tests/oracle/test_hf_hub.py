#!/usr/bin/python3
"""--model hf:ORG/NAME[@REV] against a fake Hugging Face hub on 127.0.0.1 (started and stopped
here, port 0; nothing leaves the machine) and against caches laid out by hand.

The fake hub (tests/pylib/fake_hub.py) speaks the hub's URL scheme and headers: HEAD/GET /ORG/NAME/resolve/REV/FILE
answer with X-Repo-Commit and ETag (the git blob sha1) for small files, and for LFS files a 302
to a CDN-like /cdn/<sha256> path on another host name (localhost) with X-Linked-Etag and
X-Linked-Size; missing things get 404 + X-Error-Code (RepoNotFound, RevisionNotFound,
EntryNotFound), a gated repository 401 + GatedRepo without the right Bearer token.

  case D  download: weights + config.json + preprocessor_config.json; the config's heads, ε,
          mean/std and id2label are used (probabilities vs torch, 1e-5); the cache has
          huggingface_hub's layout (checked by an independent reader written here from
          huggingface_hub's try_to_load_from_cache); a second run sends no request
  case O  offline: HF_HUB_OFFLINE=1 with an endpoint that refuses connections, from the cache
          vitattn filled and from a cache laid out by hand; not cached + offline: one line
  case R  @revision through refs/<rev>; a pytorch_model.bin-only repository
  case F  failures, one line each: wrong checksum (nothing left in blobs/), not found,
          no such revision, gated (401) then the same with HF_TOKEN (sent to the hub, not the CDN)
  case C  a connection dropped mid-file resumes with Range; a .incomplete left by an earlier
          run is resumed; two runs at once fill one cache without corrupting it
  case P  the progress bar shows on a terminal (a pty), not in a pipe
Prints "hub: <passed> passed, <failed> failed"; exits 1 if anything failed.
"""
import hashlib
import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "pylib"))  # harness, tally, torch_reference
from tally import Tally, skip  # noqa: E402

try:
    import torch
    import torch.nn.functional as F
except ImportError as e:
    skip(f"cannot import torch ({e})")
import torch_reference as tr  # noqa: E402  (torchvision ViTs, their exports, torch references, the input)
from fake_hub import Hub, closed_port, commit_of, git_sha1, hub_env  # noqa: E402
from harness import changed_env, run_checked  # noqa: E402

REPO = HERE.parents[1]
BIN = Path(os.environ.get("VITATTN_BIN", REPO / "build" / "dev" / "vitattn"))
T = Tally()
torch.set_grad_enabled(False)


def one_line(p, *words):
    lines = p.stderr.strip().splitlines()
    T.check(len(lines) == 1 and all(w in lines[0] for w in words), f"one line with {words}: {lines}")


# --- huggingface_hub's cache lookup, written here from its documented algorithm ---------------
def try_to_load_from_cache(cache, repo_id, filename, revision="main"):
    """huggingface_hub.try_to_load_from_cache: the path, "NO_EXIST", or None."""
    repo_cache = Path(cache) / ("models--" + repo_id.replace("/", "--"))
    if not repo_cache.is_dir():
        return None
    refs, snapshots, no_exist = repo_cache / "refs", repo_cache / "snapshots", repo_cache / ".no_exist"
    if (refs / revision).is_file():
        revision = (refs / revision).read_text()  # the bare hash
    if (no_exist / revision / filename).is_file():
        return "NO_EXIST"
    if not snapshots.exists():
        return None
    if revision not in [p.name for p in snapshots.iterdir()]:
        return None
    cached = snapshots / revision / filename
    return cached if cached.is_file() else None


def check_layout(label, cache, repo_id, files, rev="main"):
    repo_cache = Path(cache) / ("models--" + repo_id.replace("/", "--"))
    ref = (repo_cache / "refs" / rev).read_text() if (repo_cache / "refs" / rev).is_file() else None
    T.check(ref is not None and re.fullmatch(r"[0-9a-f]{40}", ref), f"{label}: refs/{rev} holds a bare commit hash: {ref!r}")
    for name, (data, lfs) in files.items():
        got = try_to_load_from_cache(cache, repo_id, name, rev)
        T.check(isinstance(got, Path) and got.read_bytes() == data, f"{label}: try_to_load_from_cache({name}) = {got}")
        link = repo_cache / "snapshots" / ref / name
        etag = hashlib.sha256(data).hexdigest() if lfs else git_sha1(data)
        T.check(link.is_symlink() and os.readlink(link) == f"../../blobs/{etag}",
                f"{label}: {name} is a relative symlink to ../../blobs/{etag}: {os.readlink(link) if link.is_symlink() else 'not a link'}")
        # Kept, as huggingface_hub keeps it: its processes lock the file at this name without
        # looking whether it is still there, so removing it would let two fetch one blob.
        T.check((Path(cache) / ".locks" / repo_cache.name / f"{etag}.lock").is_file(),
                f"{label}: {name}'s lock file .locks/{repo_cache.name}/{etag}.lock is kept")
    leftovers = [p.name for p in (repo_cache / "blobs").iterdir() if not re.fullmatch(r"[0-9a-f]{40}|[0-9a-f]{64}", p.name)]
    T.check(not leftovers, f"{label}: nothing but blobs in blobs/: {leftovers}")
    T.check((Path(cache) / ".locks" / repo_cache.name).is_dir(), f"{label}: the lock files sit in .locks/{repo_cache.name}")


def safetensors_bytes(tensors, metadata=None):
    """metadata None: none at all (hub files carry only {"format": "pt"})."""
    with tempfile.NamedTemporaryFile(suffix=".safetensors") as f:
        tr.write_safetensors(f.name, tensors, metadata=metadata)
        return Path(f.name).read_bytes()


# A D=96 model: 96/64 is no whole number, so without config.json's num_attention_heads vitattn
# could not even guess the heads. Its ε and mean/std are not the family's defaults either.
EPS = 1e-3
MEAN, STD = (0.3, 0.4, 0.5), (0.2, 0.25, 0.3)
NAMES = [f"kind {i}" for i in range(10)]


def the_model():
    model = tr.with_eps(tr.make_vit(64, 96, 3, 192, 2, 10, seed=31, embed_scale=0.05), EPS)
    files = {
        "model.safetensors": safetensors_bytes(tr.export_timm(model.state_dict(), 2)),
        "config.json": json.dumps({"model_type": "vit", "num_attention_heads": 3, "layer_norm_eps": EPS,
                                   "image_size": 64, "patch_size": 16,
                                   "id2label": {str(i): n for i, n in enumerate(NAMES)}}).encode(),
        "preprocessor_config.json": json.dumps({"image_mean": list(MEAN), "image_std": list(STD)}).encode(),
    }
    return model, files


def check_probs(label, model, out, image):
    rows = (out / "predictions.csv").read_text().splitlines()[1:]
    x = tr.preprocess(image, 64, 64, (MEAN, STD))
    p = F.softmax(model(x).double(), -1)[0].numpy()
    d = max(abs(float(r.rsplit(",", 1)[1]) - p[int(r.split(",")[2])]) for r in rows) if rows else 1.0
    T.check(len(rows) == 3 and d <= 1e-5, f"{label}: top-3 vs torch with the config's heads, eps, mean/std: {d:.3g}")
    want = NAMES[int(np.argmax(p))]
    T.check(rows and rows[0].split(",")[3] == want, f"{label}: label from id2label: {rows[:1]}, expected {want}")


def case_d(hub, tmp, image):
    model, files = the_model()
    hub.add("acme/vit-tiny", {"main": files})
    cache = tmp / "cache"
    env = {"HF_HUB_CACHE": str(cache), "HF_ENDPOINT": hub.endpoint}
    out = tmp / "out_d"
    run_checked(T, "--model", "hf:acme/vit-tiny", "--top", 3, "-o", out, image, env=hub_env(env))
    check_probs("D", model, out, image)
    check_layout("D", cache, "acme/vit-tiny", {n: (b, n == "model.safetensors") for n, b in files.items()})
    gets = [(m, p) for m, p, _ in hub.requests() if m == "GET"]
    T.check(any(p.startswith("/cdn/") for _, p in gets), f"D: the weights came through the CDN redirect: {gets}")
    n = len(hub.requests())
    run_checked(T, "--model", "hf:acme/vit-tiny", "--top", 3, "-o", tmp / "out_d2", image, env=hub_env(env))
    T.check(len(hub.requests()) == n, "D: a second run finds everything in the cache and sends no request")
    # HF_HOME/hub is the cache when HF_HUB_CACHE is unset
    home = tmp / "hfhome"
    run_checked(T, "--model", "hf:acme/vit-tiny", "-o", tmp / "out_d3", image,
                env=hub_env({"HF_HOME": str(home), "HF_ENDPOINT": hub.endpoint}))
    T.check((home / "hub" / "models--acme--vit-tiny" / "refs" / "main").is_file(), "D: HF_HOME/hub used without HF_HUB_CACHE")
    return model, files, cache


def case_o(tmp, image, model, files, cache):
    refused = closed_port()
    out = tmp / "out_o"
    run_checked(T, "--model", "hf:acme/vit-tiny", "--top", 3, "-o", out, image,
                env=hub_env({"HF_HUB_CACHE": str(cache), "HF_ENDPOINT": refused, "HF_HUB_OFFLINE": "1"}))
    check_probs("O[filled by vitattn]", model, out, image)
    # A cache laid out by hand as huggingface_hub lays it out: no server, no HF_HUB_OFFLINE.
    hand = tmp / "hand"
    repo = hand / "models--someone--hand-made"
    commit = commit_of("hand")
    (repo / "blobs").mkdir(parents=True)
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text(commit)
    (repo / "snapshots" / commit).mkdir(parents=True)
    for name, data in files.items():
        etag = hashlib.sha256(data).hexdigest() if name.endswith(".safetensors") else git_sha1(data)
        (repo / "blobs" / etag).write_bytes(data)
        os.symlink(f"../../blobs/{etag}", repo / "snapshots" / commit / name)
    out = tmp / "out_hand"
    run_checked(T, "--model", "hf:someone/hand-made", "--top", 3, "-o", out, image,
                env=hub_env({"HF_HUB_CACHE": str(hand), "HF_ENDPOINT": refused}))
    check_probs("O[laid out by hand]", model, out, image)
    p = run_checked(T, "--model", "hf:someone/elsewhere", "-o", tmp / "out_o2", image,
                    env=hub_env({"HF_HUB_CACHE": str(hand), "HF_ENDPOINT": refused, "HF_HUB_OFFLINE": "1"}), expect=2)
    one_line(p, "HF_HUB_OFFLINE", "hf:someone/elsewhere")
    p = run_checked(T, "--model", "hf:someone/elsewhere", "-o", tmp / "out_o3", image,
                    env=hub_env({"HF_HUB_CACHE": str(hand), "HF_ENDPOINT": refused}), expect=2)
    one_line(p, "hf:someone/elsewhere", "cannot reach")


def case_r(hub, tmp, image):
    m1 = tr.make_vit(32, 64, 2, 128, 2, 10, seed=41)
    m2 = tr.make_vit(32, 64, 2, 128, 2, 10, seed=42)
    hub.add("acme/two", {"main": {"model.safetensors": safetensors_bytes(tr.export_timm(m1.state_dict(), 2), {"num_heads": 2})},
                         "v1": {"model.safetensors": safetensors_bytes(tr.export_timm(m2.state_dict(), 2), {"num_heads": 2})}})
    cache = tmp / "cache_r"
    env = {"HF_HUB_CACHE": str(cache), "HF_ENDPOINT": hub.endpoint}
    for rev, model in (("main", m1), ("v1", m2)):
        out = tmp / f"out_r_{rev}"
        run_checked(T, "--model", f"hf:acme/two@{rev}", "--top", 10, "-o", out, image, env=hub_env(env))
        rows = (out / "predictions.csv").read_text().splitlines()[1:]
        p = F.softmax(model(tr.preprocess(image, 32, 32, tr.HALF)).double(), -1)[0].numpy()
        d = max(abs(float(r.rsplit(",", 1)[1]) - p[int(r.split(",")[2])]) for r in rows)
        T.check(d <= 1e-5, f"R: @{rev} gives that revision's model: {d:.3g}")
    T.check((cache / "models--acme--two" / "refs" / "v1").read_text() == commit_of("acme/twov1"), "R: refs/v1 written")
    # pytorch_model.bin only
    sd = tr.export_timm(m1.state_dict(), 2)
    with tempfile.NamedTemporaryFile(suffix=".bin") as f:
        torch.save({k: v.contiguous() for k, v in sd.items()}, f.name)
        hub.add("acme/pth", {"main": {"pytorch_model.bin": Path(f.name).read_bytes(),
                                      "config.json": json.dumps({"num_attention_heads": 2}).encode()}})
    out = tmp / "out_r_pth"
    run_checked(T, "--model", "hf:acme/pth", "--top", 10, "-o", out, image, env=hub_env(env))
    a = (out / "predictions.csv").read_text().replace("hf:acme/pth", "")
    b = (tmp / "out_r_main" / "predictions.csv").read_text()
    T.check(a == b, "R: pytorch_model.bin gives the same classes as the safetensors of the same weights")


def case_f(hub, tmp, image):
    model, files = the_model()
    env = lambda c: {"HF_HUB_CACHE": str(tmp / c), "HF_ENDPOINT": hub.endpoint}
    hub.add("acme/bad-sum", {"main": files})
    hub.corrupt.add(hashlib.sha256(files["model.safetensors"]).hexdigest())
    p = run_checked(T, "--model", "hf:acme/bad-sum", "-o", tmp / "o1", image, env=hub_env(env("c1")), expect=2)
    one_line(p, "checksum mismatch", "model.safetensors")
    blobs = tmp / "c1" / "models--acme--bad-sum" / "blobs"
    T.check(not blobs.exists() or not any(blobs.iterdir()), f"F: nothing kept after a checksum mismatch: {list(blobs.iterdir()) if blobs.exists() else []}")
    T.check(not (tmp / "c1" / "models--acme--bad-sum" / "snapshots").exists(), "F: no snapshot after a checksum mismatch")
    hub.corrupt.clear()  # the other repositories serve the same model bytes
    p = run_checked(T, "--model", "hf:acme/nothing-here", "-o", tmp / "o2", image, env=hub_env(env("c2")), expect=2)
    one_line(p, "no such repository")
    p = run_checked(T, "--model", "hf:acme/vit-tiny@v9", "-o", tmp / "o3", image, env=hub_env(env("c3")), expect=2)
    one_line(p, "no revision v9")
    hub.add("acme/empty", {"main": {"README.md": b"hi"}})
    p = run_checked(T, "--model", "hf:acme/empty", "-o", tmp / "o4", image, env=hub_env(env("c4")), expect=2)
    one_line(p, "neither model.safetensors nor pytorch_model.bin")
    hub.add("acme/gated", {"main": files}, gated="s3cret")
    p = run_checked(T, "--model", "hf:acme/gated", "-o", tmp / "o5", image, env=hub_env(env("c5")), expect=2)
    one_line(p, "gated", "HF_TOKEN")
    n = len(hub.requests())
    run_checked(T, "--model", "hf:acme/gated", "--top", 3, "-o", tmp / "o6", image,
                env=hub_env({**env("c5"), "HF_TOKEN": "s3cret"}))
    new = hub.requests()[n:]
    T.check(all(h.get("Authorization") == "Bearer s3cret" for m, path, h in new if "/resolve/" in path), "F: the token goes to the hub")
    T.check(all("Authorization" not in h for m, path, h in new if path.startswith("/cdn/")), "F: the token does not go to the CDN")
    p = run_checked(T, "--model", "hf:acme//x", "-o", tmp / "o7", image, env=hub_env(env("c7")), expect=2)
    one_line(p, "hf:ORG/NAME")


def case_c(hub, tmp, image):
    model, files = the_model()
    sha = hashlib.sha256(files["model.safetensors"]).hexdigest()
    size = len(files["model.safetensors"])
    hub.add("acme/flaky", {"main": files})
    hub.drop_once.add(sha)
    n = len(hub.requests())
    run_checked(T, "--model", "hf:acme/flaky", "--top", 3, "-o", tmp / "oc1", image,
                env=hub_env({"HF_HUB_CACHE": str(tmp / "cc1"), "HF_ENDPOINT": hub.endpoint}))
    ranges = [h.get("Range") for m, path, h in hub.requests()[n:] if m == "GET" and path.startswith(f"/cdn/{sha}")]
    T.check(ranges == [None, f"bytes={size // 2}-"], f"C: dropped half way, resumed from byte {size // 2}: {ranges}")
    check_probs("C[resumed]", model, tmp / "oc1", image)
    # A partial file an earlier (killed) run left behind.
    cache = tmp / "cc2"
    blobs = cache / "models--acme--flaky" / "blobs"
    blobs.mkdir(parents=True)
    (blobs / f"{sha}.incomplete").write_bytes(files["model.safetensors"][:1000])
    n = len(hub.requests())
    run_checked(T, "--model", "hf:acme/flaky", "-o", tmp / "oc2", image,
                env=hub_env({"HF_HUB_CACHE": str(cache), "HF_ENDPOINT": hub.endpoint}))
    ranges = [h.get("Range") for m, path, h in hub.requests()[n:] if m == "GET" and path.startswith(f"/cdn/{sha}")]
    T.check(ranges == ["bytes=1000-"], f"C: the .incomplete of an earlier run is resumed: {ranges}")
    T.check((blobs / sha).read_bytes() == files["model.safetensors"] and not (blobs / f"{sha}.incomplete").exists(),
            "C: the resumed blob is whole and the .incomplete is gone")
    # A partial file whose bytes were damaged (one flipped): resuming it gives a blob of the
    # right size and the wrong sha256, which must be refused and removed, never kept.
    cache = tmp / "cc2b"
    blobs = cache / "models--acme--flaky" / "blobs"
    blobs.mkdir(parents=True)
    at = 8 + int.from_bytes(files["model.safetensors"][:8], "little") + 4  # in a weight, past the header: it would still parse
    damaged = bytearray(files["model.safetensors"][:at + 100])
    T.check(len(damaged) < size, f"C: the partial file ({len(damaged)} bytes) is shorter than the blob ({size})")
    damaged[at] ^= 0x01
    (blobs / f"{sha}.incomplete").write_bytes(bytes(damaged))
    n = len(hub.requests())
    p = run_checked(T, "--model", "hf:acme/flaky", "-o", tmp / "oc2b", image,
                    env=hub_env({"HF_HUB_CACHE": str(cache), "HF_ENDPOINT": hub.endpoint}), expect=2)
    ranges = [h.get("Range") for m, path, h in hub.requests()[n:] if m == "GET" and path.startswith(f"/cdn/{sha}")]
    T.check(ranges == [f"bytes={len(damaged)}-"], f"C: the damaged .incomplete is resumed, not fetched anew: {ranges}")
    one_line(p, "checksum mismatch", "model.safetensors")
    T.check(not (blobs / sha).exists() and not (blobs / f"{sha}.incomplete").exists(),
            f"C: nothing of a resumed download with the wrong sha256 stays in the cache: {sorted(x.name for x in blobs.iterdir())}")
    T.check(not (cache / "models--acme--flaky" / "snapshots").exists(), "C: no snapshot points at a blob that failed its check")
    # Two runs at once into one empty cache, the CDN slowed so that they overlap.
    hub.delay = 0.5
    cache = tmp / "cc3"
    env = changed_env(hub_env({"HF_HUB_CACHE": str(cache), "HF_ENDPOINT": hub.endpoint}))
    procs = [subprocess.Popen([str(BIN), "--model", "hf:acme/flaky", "--top", "3", "-o", str(tmp / f"oc3_{i}"), str(image)],
                              env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for i in range(2)]
    results = [p.communicate(timeout=300) for p in procs]
    hub.delay = 0.0
    T.check(all(p.returncode == 0 for p in procs), f"C: two runs at once both succeed: {[r[1] for r in results]}")
    check_layout("C[concurrent]", cache, "acme/flaky", {n: (b, n == "model.safetensors") for n, b in files.items()})
    for i in range(2):
        check_probs(f"C[concurrent {i}]", model, tmp / f"oc3_{i}", image)


def case_p(hub, tmp, image):
    _, files = the_model()
    hub.add("acme/bar", {"main": files})
    p = run_checked(T, "--model", "hf:acme/bar", "-o", tmp / "op1", image,
                    env=hub_env({"HF_HUB_CACHE": str(tmp / "cp1"), "HF_ENDPOINT": hub.endpoint}), stderr_tty=True)
    T.check("model.safetensors [" in p.stderr and "#" in p.stderr and "\r" in p.stderr, f"P: a progress bar on a terminal: {p.stderr[:300]!r}")
    p = run_checked(T, "--model", "hf:acme/bar", "-o", tmp / "op2", image,
                    env=hub_env({"HF_HUB_CACHE": str(tmp / "cp2"), "HF_ENDPOINT": hub.endpoint}))
    T.check("[" not in p.stderr and "\r" not in p.stderr, f"P: no progress bar in a pipe: {p.stderr[:300]!r}")


def main():
    if not BIN.is_file():
        print(f"FAIL: binary {BIN} not found")
        return 1
    hub = Hub()
    try:
        with tempfile.TemporaryDirectory(prefix="vitattn_hub_") as d:
            tmp = Path(d)
            image = tmp / "img.png"
            tr.make_image(image)
            model, files, cache = case_d(hub, tmp, image)
            case_o(tmp, image, model, files, cache)
            case_r(hub, tmp, image)
            case_f(hub, tmp, image)
            case_c(hub, tmp, image)
            case_p(hub, tmp, image)
    finally:
        hub.stop()
    print(f"hub: {T.passed} passed, {T.failed} failed")
    return 1 if T.failed else 0


if __name__ == "__main__":
    sys.exit(main())
