"""A batch reuses the memory one image frees for the next (src/pipeline/memory_reuse.cpp).

Counted in minor page faults, not time: a batch of 10 copies of a 1 MP image may fault in
only a little more memory than a batch of 2. Without the reuse, every image faults its
decoded pixels, upsampled map, overlay and PNG stream in afresh (about 4,000 pages each).
Not registered under the sanitizers, whose allocators ignore mallopt.
"""
import os
import shutil
import subprocess

import cv2
import numpy as np

from harness import BIN, check_sanitizers

PAGES_PER_EXTRA_IMAGE = 400  # 1.6 MB: a tenth of what one image's buffers fault in without reuse


def minor_faults(args):
    p = subprocess.Popen([BIN, *args], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    err = p.stderr.read()
    _, status, usage = os.wait4(p.pid, 0)
    p.stderr.close()
    check_sanitizers(args, err)
    assert os.waitstatus_to_exitcode(status) == 0, err
    return usage.ru_minflt


def test_images_after_the_first_fault_in_little_memory(tmp_path):
    rng = np.random.default_rng(0)
    small = rng.integers(0, 256, (40, 40, 3), dtype=np.uint8)
    img = cv2.resize(small, (1000, 1000), interpolation=cv2.INTER_CUBIC)  # 1 MP, photo-like
    faults = {}
    for n in (2, 10):
        folder = tmp_path / f"in{n}"
        folder.mkdir()
        cv2.imwrite(str(folder / "a0.png"), img)
        for k in range(1, n):
            shutil.copy(folder / "a0.png", folder / f"a{k}.png")
        faults[n] = minor_faults(["-q", "-j", "1", "-o", str(tmp_path / f"out{n}"), str(folder)])
        assert len(list((tmp_path / f"out{n}").glob("*_attn.png"))) == n
    per_image = (faults[10] - faults[2]) / 8
    assert per_image < PAGES_PER_EXTRA_IMAGE, f"{per_image:.0f} page faults per extra image ({faults})"
