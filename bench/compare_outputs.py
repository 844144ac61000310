#!/usr/bin/python3
"""Two builds of vitattn on the same inputs, output for output (a script, not a test):

    bench/compare_outputs.py OLD_BUILD_DIR NEW_BUILD_DIR [--keep DIR]

For a change that must leave every output as it was (a refactoring): each build runs the
same commands on the sample set (this repository's images/, and ../shared/images when it is
there, plus a short video made from them), and every file the two write must be the same,
name for name and byte for byte. Byte equality holds between two builds on one machine; it is
not a claim across machines (docs/testing.md, "Determinism").

The commands cover what the runs write: the seeded model's overlays; the bundled CIFAR-10
model with every method, its arrays, masks, --top and the batch files; the report page with
PCA and faithfulness; every head's map with --clean; --keep-aspect; a video with its arrays.
Prints one line per command and, for each difference, the file and how it differs; exits 1
when any file differs or is missing on one side, 2 on a usage error or a run that fails.
"""
import argparse
import filecmp
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import cv2

REPO = Path(__file__).resolve().parents[1]
MODEL = REPO / "models" / "vit_cifar10_tintn.safetensors"

# (name, arguments after the inputs): each runs once per build, over the same inputs.
COMMANDS = [
    ("seeded", []),
    ("seeded-heads", ["--head", "all", "--clean", "--heads-csv", "--keep-aspect"]),
    ("model-all", ["--model", str(MODEL), "--method", "all", "--save-attention", "--threshold", "0.5",
                   "--top", "3", "--class", "3,dog"]),
    ("model-report", ["--model", str(MODEL), "--report", "--pca", "--faithfulness", "--top", "2"]),
    ("model-rollout", ["--model", str(MODEL), "--rollout", "--format", "jpg", "--save-attention"]),
    ("model-pca-batch", ["--model", str(MODEL), "--pca", "--pca-fit", "batch", "--method", "legrad"]),
]


def sample_inputs(folder):
    """The sample photos copied into `folder`, and a 12-frame video made of them."""
    folder.mkdir()
    sources = [REPO / "images"]
    shared = Path(os.environ.get("VITATTN_SHARED", REPO.parent / "shared")) / "images"
    if shared.is_dir():
        sources.append(shared)
    photos = []
    for src in sources:
        for p in sorted(src.iterdir()):
            if p.suffix.lower() in (".png", ".jpg", ".jpeg") and not (folder / p.name).exists():
                shutil.copy(p, folder / p.name)
                photos.append(folder / p.name)
    frames = [cv2.resize(cv2.imread(str(p)), (160, 120)) for p in photos[:3]]
    writer = cv2.VideoWriter(str(folder / "clip.avi"), cv2.VideoWriter_fourcc(*"MJPG"), 4, (160, 120))
    for i in range(12):
        writer.write(frames[i % len(frames)])
    writer.release()
    return photos


def run(build, inputs, out, extra):
    cmd = [str(Path(build) / "vitattn"), "-q", "-j", "2", str(inputs), "-o", str(out)] + extra
    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"compare_outputs: {' '.join(cmd)} exited {done.returncode}: {done.stderr.strip()}")


def differences(old, new):
    """Every file missing on one side or whose bytes differ, as lines."""
    names_old = {p.relative_to(old) for p in old.rglob("*") if p.is_file()}
    names_new = {p.relative_to(new) for p in new.rglob("*") if p.is_file()}
    lines = [f"  only in old: {n}" for n in sorted(names_old - names_new)]
    lines += [f"  only in new: {n}" for n in sorted(names_new - names_old)]
    for n in sorted(names_old & names_new):
        if not filecmp.cmp(old / n, new / n, shallow=False):
            lines.append(f"  differs: {n} ({(old / n).stat().st_size} against {(new / n).stat().st_size} bytes)")
    return lines, len(names_old | names_new)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("old")
    parser.add_argument("new")
    parser.add_argument("--keep", help="write the outputs here (kept) instead of a temporary folder")
    a = parser.parse_args()
    for b in (a.old, a.new):
        if not os.access(Path(b) / "vitattn", os.X_OK):
            sys.exit(f"compare_outputs: {b}/vitattn missing (cmake --build --preset release --target vitattn)")
    work = Path(a.keep) if a.keep else Path(tempfile.mkdtemp())
    work.mkdir(parents=True, exist_ok=True)
    try:
        inputs = work / "inputs"
        shutil.rmtree(inputs, ignore_errors=True)
        photos = sample_inputs(inputs)
        print(f"old: {a.old}\nnew: {a.new}\ninputs: {len(photos)} photos and a 12-frame video")
        failed = 0
        for name, extra in COMMANDS:
            outs = {}
            for who, build in (("old", a.old), ("new", a.new)):
                outs[who] = work / name / who
                shutil.rmtree(outs[who], ignore_errors=True)
                run(build, inputs, outs[who], extra)
            lines, count = differences(outs["old"], outs["new"])
            print(f"{name:16} {count:4} files: {'identical' if not lines else f'{len(lines)} differ'}")
            for line in lines:
                print(line)
            failed += bool(lines)
        return 1 if failed else 0
    finally:
        if not a.keep:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
