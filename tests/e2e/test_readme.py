"""The README's commands run as written.

Every line of a ```sh or ```bash block of README.md that starts with `vitattn ` (or
`./build/dev/vitattn `), or pipes into `vitattn`, is run through bash exactly as written, with
`vitattn` on PATH as the binary under test (VITATTN_BIN), in a fresh folder holding the
repository's images/, models/ and bench/. Each must exit 0 and leave the outputs it names:
the overlay (and .npy, report, video, predictions.csv) of every input it was given, the files
its flags name (--html, --heatmap, --save-model, --log-json), and every path named in its
trailing comment (`# → vitattn-out/chelsea_attn.png`).

The README's setup lines (`/usr/bin/python3 -c …`, `bench/make_clip.py …`) are run once first,
as written. What a command needs from the network is replaced, so nothing leaves the machine:
- a `--model FILE` that the README downloads with curl is a tiny random stand-in of the same
  family and file kind under the same name (DINO's and torchvision's `.pth`, written by
  torch.save; skips without torch, fails under CI=true);
- `--model hf:ORG/NAME[@REV]` reads a Hugging Face cache laid out here (HF_HUB_CACHE, with
  HF_HUB_OFFLINE=1) holding a stand-in in the naming that repository uses.
So this checks the commands (flags, family recognition, file kinds, the cache lookup), not
the released weights.

Needs Debian's python3-numpy and python3-opencv. Run:
  VITATTN_BIN=build/dev/vitattn /usr/bin/python3 -m pytest -q tests/e2e/test_readme.py
"""
import hashlib
import json
import os
import re
import shlex
import shutil
import subprocess
import tempfile
from pathlib import Path

import numpy as np
import pytest

import harness
import safetensors_io

README = harness.REPO / "README.md"
LINKED = ("images", "models", "bench")  # what the commands read from the repository
IMAGE_EXT = (".png", ".jpg", ".jpeg", ".bmp", ".webp", ".tif", ".tiff")
VIDEO_EXT = (".mp4", ".mov", ".mkv", ".webm", ".avi")
# Options that take a value (the rest are switches), to tell inputs from option values.
VALUE_OPTIONS = {"-o", "--output", "--model", "--colormap", "--alpha", "--interp", "--threshold", "--format",
                 "--quality", "--layer", "--head", "--img-size", "--discard-ratio", "--top", "--report-precision",
                 "--report-max-mb", "--every", "--max-frames", "--smooth", "--seed", "--save-model", "--html",
                 "--heatmap", "--shard", "--shard-count", "--log-json", "--files-from", "-j", "--jobs", "--heads",
                 "--key", "--family", "--eps", "--gelu", "--pos-interp", "--mean", "--std", "--patch-size",
                 "--dim", "--d-k", "--max-pixels", "--method", "--class", "--legrad-from",
                 "--faithfulness-steps", "--artifact-ratio", "--pca-mask", "--pca-fit", "--text", "--texts-from",
                 "--first-layer", "--labels", "--templates"}
D, P, GRID, LAYERS, MLP = 128, 16, 2, 2, 256  # stand-ins: 2 heads of 64 (D/64, as the real ones), 32 px


def readme_lines():
    """(line number, text) of every line in the README's sh/bash blocks."""
    lines, block = [], False
    for n, line in enumerate(README.read_text().splitlines(), 1):
        if line.startswith("```"):
            block = line.strip() in ("```sh", "```bash") if not block else False
            continue
        if block and line.strip():
            lines.append((n, line.strip()))
    return lines


def is_command(line):
    return line.startswith(("vitattn ", "./build/dev/vitattn ")) or re.search(r"\|\s*vitattn ", line) is not None


def is_setup(line):
    return line.startswith(("/usr/bin/python3 -c ", "bench/make_clip.py "))


COMMANDS = [(n, line) for n, line in readme_lines() if is_command(line)]


def vitattn_args(line):
    """The arguments of the vitattn call in `line` (after the last pipe), comment dropped."""
    part = re.split(r"\|\s*(?=(?:\./build/dev/)?vitattn )", line)[-1]
    words = shlex.split(part, comments=True)
    return words[1:]


def parse(args):
    """(subcommand or None, {option: value or True}, [inputs])."""
    sub = args[0] if args and args[0] in ("explain", "forward") else None
    opts, inputs, i = {}, [], 1 if sub else 0
    while i < len(args):
        a = args[i]
        if a in VALUE_OPTIONS:
            opts[a] = args[i + 1]
            i += 2
            continue
        if a.startswith("-") and a != "-":
            opts[a] = True
        else:
            inputs.append(a)
        i += 1
    return sub, opts, inputs


# --- stand-ins for what the README downloads -------------------------------------------------

def timm_weights(classes=0, registers=0, seed=0):
    return harness.timm_tensors(D, P, GRID, LAYERS, MLP, seed=seed, classes=classes, registers=registers)


def renamed(t, family):
    return harness.renamed_from_timm(t, family, D, LAYERS)


def write_pth(path, tensors):
    torch = pytest.importorskip("torch", reason="the README's .pth stand-ins are written by torch.save")
    torch.save({k: torch.from_numpy(np.ascontiguousarray(v)) for k, v in tensors.items()}, str(path))


def clip_stand_in(path):
    """A whole CLIP state dict (image and text towers, OpenAI's names) for the README's prompt
    example, random weights; the image tower's head count in its metadata."""
    import clip_reference  # torch's: imported only for this stand-in
    tensors = {"visual." + k: v for k, v in clip_reference.openai_tensors(seed=3).items()}
    tensors |= clip_reference.openai_text_tensors(seed=4)
    safetensors_io.write(path, tensors, {"num_heads": str(clip_reference.HEADS)}, dtype="F32")


def pth_stand_in(path):
    """A stand-in for a .pth (or CLIP file) the README downloads, by the release's file name."""
    name = path.name
    if name == "clip.safetensors":
        return clip_stand_in(path)
    if name.startswith("dino"):  # DINO's releases: the backbone in timm names, no head
        write_pth(path, timm_weights(seed=1))
    elif name.startswith("vit_") and "-" in name:  # torchvision's vit_b_16-c867db91.pth: ImageNet head
        write_pth(path, renamed(timm_weights(classes=1000, seed=2), "torchvision"))
    else:
        raise AssertionError(f"README: --model {name} is neither in the repository nor a known download; "
                             "add a stand-in to tests/e2e/test_readme.py")


def hub_stand_in(cache, spec):
    """A Hugging Face cache entry for hf:ORG/NAME[@REV], laid out as huggingface_hub does it
    (snapshot files as regular files, which the cache also allows)."""
    repo, _, rev = spec[len("hf:"):].partition("@")
    rev = rev or "main"
    if "dinov2" in repo:  # facebook/dinov2-*: layer scale and a mask token, no registers, no classifier
        t = timm_weights(registers=4, seed=3)
        del t["register_tokens"]
        tensors = renamed(t, "hf-dinov2")
    elif repo.startswith("timm/"):
        tensors = timm_weights(classes=1000, seed=4)
    else:
        tensors = renamed(timm_weights(classes=1000, seed=5), "hf-vit")
    commit = hashlib.sha1(spec.encode()).hexdigest()
    root = cache / ("models--" + repo.replace("/", "--"))
    (root / "refs").mkdir(parents=True, exist_ok=True)
    (root / "refs" / rev).write_text(commit)
    snap = root / "snapshots" / commit
    snap.mkdir(parents=True, exist_ok=True)
    safetensors_io.write(snap / "model.safetensors", tensors, None, dtype="F32")


# --- the shared workspace and one fresh folder per command -----------------------------------

def mirror(src, dst):
    """dst/ as real folders with a symlink per file of src/: `find images …` descends into it
    as into the repository's own folder (find does not follow a symlinked folder)."""
    dst.mkdir(exist_ok=True)
    for entry in src.iterdir():
        if entry.is_dir() and not entry.is_symlink():
            mirror(entry, dst / entry.name)
        else:
            (dst / entry.name).symlink_to(entry.resolve() if entry.is_symlink() else entry)


@pytest.fixture(scope="module")
def workspace():
    with tempfile.TemporaryDirectory(prefix="vitattn-readme-") as tmp:
        ws = Path(tmp) / "ws"
        ws.mkdir()
        for name in LINKED:
            mirror(harness.REPO / name, ws / name)
        bindir = Path(tmp) / "bin"
        bindir.mkdir()
        (bindir / "vitattn").symlink_to(harness.BIN)
        for n, line in readme_lines():
            if is_setup(line):
                p = subprocess.run(["bash", "-c", line], cwd=ws, capture_output=True, text=True,
                                   stdin=subprocess.DEVNULL)
                assert p.returncode == 0, f"README.md:{n}: {line}\nexit {p.returncode}\n{p.stderr[-2000:]}"
        yield ws, bindir


def prepare_models(ws, opts):
    model = opts.get("--model")
    if not isinstance(model, str):
        return
    if model.startswith("hf:"):
        hub_stand_in(ws / "hub", model)
    elif not (ws / model).exists():
        pth_stand_in(ws / model)


def expected(cwd, sub, opts, inputs, comment):
    """Every path the command should leave below cwd."""
    out = Path(opts.get("-o", opts.get("--output", "vitattn-out")))
    want = []
    if sub == "explain":
        want += [Path(opts[k]) for k in ("--html", "--heatmap") if k in opts]
    elif sub == "forward":
        want += [out / f"{Path(x).stem}_{what}.npy" for x in inputs for what in ("attention", "features")]
    else:
        if "--save-model" in opts:
            want.append(Path(opts["--save-model"]))
        if "--log-json" in opts:
            want.append(Path(opts["--log-json"]))
        sharded = "--shard" in opts  # a shard draws only its part of the inputs
        files = []
        for x in inputs:
            p = cwd / x
            if p.is_dir():
                found = p.rglob("*") if "-r" in opts or "--recursive" in opts else p.iterdir()
                files += [f for f in found if f.suffix.lower() in IMAGE_EXT + VIDEO_EXT]
            elif x != "-":
                files.append(p)
        fmt = opts.get("--format", "png")
        images = [f for f in files if f.suffix.lower() not in VIDEO_EXT]
        for f in files if not sharded else []:
            if f.suffix.lower() in VIDEO_EXT:
                if "--frames-dir" in opts:
                    want.append(out / f"{f.stem}_frames")
                continue
            want.append(out / f"{f.stem}_attn.{fmt}")
            if "--save-attention" in opts:
                want += [out / f"{f.stem}_attn.npy", out / f"{f.stem}_cls.npy"]
                if "--threshold" in opts:
                    want.append(out / f"{f.stem}_mask.npy")
            if "--report" in opts:
                want.append(out / f"{f.stem}_report.html")
            if "--top" in opts:  # the image's rows of predictions.csv
                want.append(out / f"{f.stem}_predictions.csv")
            if "--pca" in opts:
                want.append(out / f"{f.stem}_pca.png")
            if "--heads-csv" in opts or "--save-attention" in opts:  # the image's rows of heads.csv
                want.append(out / f"{f.stem}_heads.csv")
        if "--top" in opts and not sharded:
            want.append(out / "predictions.csv")
        if ("--heads-csv" in opts or "--save-attention" in opts) and images and not sharded:
            want.append(out / "heads.csv")
        if "--report" in opts and len(images) > 1 and not sharded:
            want.append(out / "index.html")
        if inputs or "--files-from" in opts:
            want.append(out)  # at least the folder, and (checked below) something in it
    # Paths the README's comment names: "# → vitattn-out/clip_attn.mp4", "pages/index.html", …
    want += [Path(w) for w in re.findall(r"[\w.-]+/[\w./-]*\.\w+", comment)]
    return want


def video_outputs(cwd, out, inputs):
    """A video's output is <stem>_attn.mp4, or .avi where no H.264 encoder opens."""
    missing = []
    for x in inputs:
        if Path(x).suffix.lower() in VIDEO_EXT:
            stem = Path(x).stem
            if not any((cwd / out / f"{stem}_attn{ext}").is_file() for ext in (".mp4", ".avi")):
                missing.append(f"{out}/{stem}_attn.mp4 (or .avi)")
    return missing


@pytest.mark.parametrize("n,line", COMMANDS, ids=[f"README.md:{n}" for n, _ in COMMANDS])
def test_readme_command(workspace, n, line):
    ws, bindir = workspace
    args = vitattn_args(line)
    sub, opts, inputs = parse(args)
    prepare_models(ws, opts)
    comment = line.split("#", 1)[1] if "#" in line else ""
    cwd = Path(tempfile.mkdtemp(prefix="cmd-", dir=ws.parent))
    try:
        mirror(ws, cwd)
        env = dict(os.environ, PATH=f"{bindir}:{os.environ.get('PATH', '')}", HF_HUB_CACHE=str(ws / "hub"),
                   HF_HUB_OFFLINE="1")
        p = subprocess.run(["bash", "-c", line], cwd=cwd, env=env, capture_output=True, text=True,
                           stdin=subprocess.DEVNULL, timeout=300)
        harness.check_sanitizers(args, p.stderr)
        assert p.returncode == 0, f"README.md:{n}: {line}\nexit {p.returncode}\n{p.stderr[-3000:]}"
        missing = [str(w) for w in expected(cwd, sub, opts, inputs, comment) if not (cwd / w).exists()]
        if sub is None:
            missing += video_outputs(cwd, Path(opts.get("-o", opts.get("--output", "vitattn-out"))), inputs)
        assert not missing, f"README.md:{n}: {line}\nnot written: {missing}\nstderr:\n{p.stderr[-2000:]}"
        out = cwd / opts.get("-o", opts.get("--output", "vitattn-out"))
        if sub is None and (inputs or "--files-from" in opts):
            assert any(out.iterdir()), f"README.md:{n}: {line}\nnothing written in {out}"
        if "--log-json" in opts:  # whole JSON lines, each naming outputs that exist
            for entry in (cwd / opts["--log-json"]).read_text().splitlines():
                record = json.loads(entry)
                assert record["status"] in ("ok", "skipped"), f"README.md:{n}: {record}"
                assert all((cwd / o).exists() for o in record["outputs"]), f"README.md:{n}: {record}"
        assert harness.temporaries(cwd) == [], f"README.md:{n}: temporary files left"
    finally:
        shutil.rmtree(cwd, ignore_errors=True)


def test_every_command_is_checked():
    """The extraction finds the README's commands (a changed fence or prefix would silently
    check nothing)."""
    assert len(COMMANDS) >= 20, COMMANDS
    assert any("hf:" in line for _, line in COMMANDS) and any(".pth" in line for _, line in COMMANDS)


def test_views_are_shown_on_the_seeded_head():
    """The views work without --model (the seeded head is a one-layer, one-head ViT), and the
    README says so by showing each in a command without --model, which the test above runs."""
    seeded = set()
    for _, line in COMMANDS:
        sub, opts, _ = parse(vitattn_args(line))
        if sub is None and "--model" not in opts:
            seeded |= set(opts)
    missing = [o for o in ("--layer", "--head", "--rollout", "--keep-aspect", "--img-size", "--pos-interp") if o not in seeded]
    assert not missing, f"README.md shows {missing} only with --model; they work on the seeded head too"


def readme_command(readme_text, name):
    """scripts/readme_command.sh NAME run on a README with `readme_text`, as .ci/run runs it."""
    root = Path(tempfile.mkdtemp(prefix="vitattn-readme-"))
    try:
        (root / "scripts").mkdir()
        shutil.copy(harness.REPO / "scripts/readme_command.sh", root / "scripts")
        (root / "README.md").write_text(readme_text)
        return subprocess.run(["bash", str(root / "scripts/readme_command.sh"), name], capture_output=True, text=True)
    finally:
        shutil.rmtree(root, ignore_errors=True)


@pytest.mark.parametrize("name", ["set-up", "test"])
def test_ci_runs_the_commands_the_readme_shows(name):
    """.ci/run takes the README's set-up and test commands from the README through
    scripts/readme_command.sh: it must print the first line of the ```sh block after the
    marker, which is also what a reader copies."""
    text = README.read_text()
    marker = f"<!-- readme-command: {name} -->"
    lines = text.splitlines()
    assert lines.count(marker) == 1, f"README.md must mark its {name} command once with {marker}"
    after = lines[lines.index(marker) + 1:]
    assert after[0] == "```sh", f"the line after {marker} must open a ```sh block"
    got = readme_command(text, name)
    assert got.returncode == 0, got.stderr
    assert got.stdout == after[1] + "\n"
    run = (harness.REPO / ".ci/run").read_text()
    assert f"scripts/readme_command.sh {name})" in run, ".ci/run no longer takes this command from the README"


def test_a_readme_without_its_command_fails_ci():
    """A README whose marker went missing, or whose marker is not followed by a command, is an
    error, never an empty command that CI would 'run' and pass."""
    for text in ("# vitattn\n\n```sh\nbash scripts/test.sh\n```\n",
                 "<!-- readme-command: test -->\n\nsome prose\n```sh\nbash scripts/test.sh\n```\n",
                 "<!-- readme-command: test -->\n```sh\n```\n"):
        got = readme_command(text, "test")
        assert got.returncode == 2 and got.stdout == "", (text, got)
        assert "README.md has no" in got.stderr
