#!/usr/bin/python3
"""Writes data/imagenet1k_classes.txt: the 1000 ImageNet-1k class names, one per line, in
class-index order, from Debian's python3-torchvision (torchvision/models/_meta.py,
_IMAGENET_CATEGORIES, BSD-3-Clause; see data/imagenet1k_classes.LICENSE.txt).
Run once from the repository root; the file is committed, the binary embeds it at build time."""
from pathlib import Path

from torchvision.models._meta import _IMAGENET_CATEGORIES

assert len(_IMAGENET_CATEGORIES) == 1000
for name in _IMAGENET_CATEGORIES:  # one name a line, no separator the reader would split on
    assert name and "\n" not in name and "\r" not in name, name
out = Path(__file__).resolve().parents[1] / "data" / "imagenet1k_classes.txt"
out.write_text("".join(name + "\n" for name in _IMAGENET_CATEGORIES), encoding="utf-8")
print(f"wrote {out} ({len(_IMAGENET_CATEGORIES)} names)")
