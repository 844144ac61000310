#!/usr/bin/python3
"""The text-embedding cache of zero-shot classes (`vitattn forward --labels … --templates …`,
src/pipeline/class_embeddings.hpp) and the refusals of --labels and --templates, run like a user
on small random CLIP models.

Run:  /usr/bin/python3 -m pytest tests/e2e/test_zeroshot_cache.py
      Skips when torch cannot be imported (the models' builders live with the torch reference);
      under CI=true a skip fails.
Env:  VITATTN_BIN  binary to test (default <repo>/build/dev/vitattn)

Checked: a first run computes and writes one cache file below $XDG_CACHE_HOME/vitattn (else
$HOME/.cache/vitattn); a second run reads it (its log line says so), leaves the file untouched
(same bytes, same mtime) and writes the same output bytes as the first and as --no-text-cache;
a truncated, altered or foreign cache file is ignored with a warning, the outputs are the
computed ones, and the file is written again whole; another model or other templates miss
(the key holds the text tower and the prompts); three runs started at once on an empty cache
all succeed with the same bytes and leave a valid file and no temporaries; --threads 1 and 2
give the same bytes; --templates without
--labels, --labels with --text, --labels on a model without a text tower, and bad labels or
templates files are one `error:` line naming the flag, the file and its line, exit 2, nothing
written.

Seen red (each planted once, then restored): the cache read back without its checksum check
(the altered file was trusted: no "ignored the cache file" line, its value in the outputs); the
tower's digest left out of the key (the other model shared the first's file: 2 cache files for 3
keys); the lookup skipped, every run computing (no "from the cache" line: the hit, damage and
concurrency tests failed); a label of white space accepted (exit 0 instead of 2); a writer
refusing to replace an existing cache file, as an exclusive create would (the concurrent runs:
"error: … exists already" from the runs that finished second and third; the damaged files too).
"""
import os
import subprocess
import time

import numpy as np
import pytest

import harness
import safetensors_io
from harness import need

try:
    import torch  # noqa: F401  (clip_reference needs it)
except ImportError as e:
    need(False, f"cannot import torch ({e}); install python3-torch")

from clip_reference import HEADS, images, openai_tensors, openai_text_tensors, SQUARE

LABELS = ["tabby cat", "golden retriever", "red fox", "lighthouse", "espresso"]
TEMPLATES = ["a photo of a {}.", "a blurry photo of the {}.", "art of the {}.", "a {} in the snow"]


@pytest.fixture(scope="module")
def lists(tmp_path_factory):
    d = tmp_path_factory.mktemp("lists")
    (d / "labels.txt").write_text("\n".join(LABELS) + "\n", encoding="utf-8")
    (d / "templates.txt").write_text("\n".join(TEMPLATES) + "\n", encoding="utf-8")
    (d / "templates2.txt").write_text("\n".join(TEMPLATES[:3]) + "\n", encoding="utf-8")
    np.save(d / "x.npy", images(SQUARE, n=2))
    for name, seed in (("clip.safetensors", 31), ("other.safetensors", 32)):
        safetensors_io.write(d / name, {"visual." + k: v for k, v in openai_tensors(seed=4).items()}
                             | openai_text_tensors(seed=seed, width=64))
    safetensors_io.write(d / "visual.safetensors", {"visual." + k: v for k, v in openai_tensors(seed=4).items()})
    return d


def args(lists, out, *extra, model="clip.safetensors", templates="templates.txt", labels=None):
    return ["forward", "--model", lists / model, "--heads", str(HEADS), "--labels", labels or lists / "labels.txt",
            "--templates", lists / templates, "-o", out, lists / "x.npy", *extra]


def run(lists, out, cache, *extra, **kw):
    """One run with its cache below `cache` (XDG_CACHE_HOME); returns (stderr, {output: bytes})."""
    code, _, err = harness.run(*args(lists, out, *extra, **kw), env={"XDG_CACHE_HOME": str(cache)})
    assert code == 0, err[-3000:]
    return err, {p.name: p.read_bytes() for p in sorted(out.iterdir())}


def cache_files(cache):
    return sorted((cache / "vitattn" / "text-embeddings").glob("*.bin"))


def test_second_run_reads_the_cache(lists, tmp_path):
    cache = tmp_path / "cache"
    log1, out1 = run(lists, tmp_path / "o1", cache)
    assert "class embeddings computed" in log1 and "cached in" in log1, log1
    [file] = cache_files(cache)
    before = (file.read_bytes(), file.stat().st_mtime_ns)
    time.sleep(0.05)
    log2, out2 = run(lists, tmp_path / "o2", cache)
    assert "class embeddings from the cache" in log2, log2
    assert cache_files(cache) == [file] and (file.read_bytes(), file.stat().st_mtime_ns) == before
    assert out1 == out2 and sorted(out1) == ["text_embedding.npy", "text_labels.txt", "x_attention.npy", "x_embedding.npy",
                                              "x_features.npy", "x_logits.npy", "x_norms.npy", "x_probs.npy", "x_tokens.npy"]
    log3, out3 = run(lists, tmp_path / "o3", tmp_path / "unused", "--no-text-cache")
    assert out3 == out1 and "from the cache" not in log3 and "cached in" not in log3, log3
    assert not (tmp_path / "unused").exists()
    assert out1["text_labels.txt"].decode() == "".join(l + "\n" for l in LABELS)


def test_same_bytes_whatever_the_threads(lists, tmp_path):
    """The ensemble runs prompts in parallel: --threads 1 and 2 write the same bytes."""
    outs = [run(lists, tmp_path / f"o{t}", tmp_path / "c", "--no-text-cache", "--threads", str(t),
                labels="imagenet", templates="templates2.txt")[1] for t in (1, 2)]
    assert outs[0] == outs[1]


def test_home_cache_when_no_xdg(lists, tmp_path):
    home = tmp_path / "home"
    code, _, err = harness.run(*args(lists, tmp_path / "o"), env={"XDG_CACHE_HOME": None, "HOME": str(home)})
    assert code == 0, err
    assert len(cache_files(home / ".cache")) == 1, err


@pytest.mark.parametrize("damage", ["truncated", "altered", "foreign", "empty"])
def test_damaged_cache_file_is_recomputed(lists, tmp_path, damage):
    cache = tmp_path / "cache"
    _, good_out = run(lists, tmp_path / "o1", cache)
    [file] = cache_files(cache)
    good = file.read_bytes()
    bad = {"truncated": good[:len(good) // 2], "empty": b"",
           "altered": good[:-40] + bytes([good[-40] ^ 0x40]) + good[-39:],  # a value's byte, before the checksum
           "foreign": b"PK\x03\x04 not a cache file" + good[24:]}[damage]
    file.write_bytes(bad)
    log, out = run(lists, tmp_path / "o2", cache)
    assert "ignored the cache file" in log and "class embeddings computed" in log, log
    assert out == good_out
    assert file.read_bytes() == good and not harness.temporaries(cache)


def test_key_holds_the_model_and_the_prompts(lists, tmp_path):
    cache = tmp_path / "cache"
    run(lists, tmp_path / "o1", cache)
    _, other = run(lists, tmp_path / "o2", cache, model="other.safetensors")
    _, fewer = run(lists, tmp_path / "o3", cache, templates="templates2.txt")
    assert len(cache_files(cache)) == 3
    _, other_fresh = run(lists, tmp_path / "o4", tmp_path / "c2", "--no-text-cache", model="other.safetensors")
    _, fewer_fresh = run(lists, tmp_path / "o5", tmp_path / "c2", "--no-text-cache", templates="templates2.txt")
    assert other == other_fresh and fewer == fewer_fresh


def test_concurrent_runs_agree(lists, tmp_path):
    """ImageNet's 1000 names in 3 templates: long enough for the runs to overlap."""
    cache = tmp_path / "cache"
    kw = {"labels": "imagenet", "templates": "templates2.txt"}
    env = harness.changed_env({"XDG_CACHE_HOME": str(cache)})
    procs = [subprocess.Popen([harness.BIN, *map(str, args(lists, tmp_path / f"o{i}", "--threads", "1", **kw))], env=env,
                              stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for i in range(3)]
    results = [p.communicate(timeout=300) for p in procs]
    for p, (_, err) in zip(procs, results):
        assert p.returncode == 0, err[-3000:]
        harness.check_sanitizers(["forward"], err)
    outs = [{f.name: f.read_bytes() for f in sorted((tmp_path / f"o{i}").iterdir())} for i in range(3)]
    assert outs[0] == outs[1] == outs[2]
    assert len(cache_files(cache)) == 1 and not harness.temporaries(cache)
    log, out = run(lists, tmp_path / "after", cache, **kw)
    assert "from the cache" in log and out == outs[0], log


def one_error(tmp_path, *argv, says):
    out = tmp_path / "refused"
    code, _, err = harness.run(*argv, "-o", out, env={"XDG_CACHE_HOME": str(tmp_path / "cache")})
    lines = [l for l in err.splitlines() if "error:" in l]
    assert code == 2 and len(lines) == 1, (code, err)
    for s in says:
        assert s in lines[0], lines[0]
    assert not out.exists() or not any(out.iterdir())
    assert not (tmp_path / "cache").exists()


def test_refusals(lists, tmp_path):
    m, x = lists / "clip.safetensors", lists / "x.npy"
    h = ["--heads", str(HEADS)]
    files = {"utf8.txt": b"cat\n\xff\xfedog\n", "blank.txt": b"cat\n\ndog\n  \t\nfox\n", "none.txt": b"\n\n",
             "tmpl.txt": b"a photo of a {}.\na photo of a cat\n", "long.txt": ("cat\n" + "lighthouse " * 80 + "\n").encode()}
    for name, data in files.items():
        (tmp_path / name).write_bytes(data)
    cases = [
        (["--templates", lists / "templates.txt", x], ["--templates", "needs --labels"]),
        (["--labels", "imagenet", "--text", "a dog", x], ["--labels and --text"]),
        (["--labels", "imagenet", x], ["--labels", "without its text tower"], lists / "visual.safetensors"),
        (["--labels", tmp_path / "utf8.txt", x], ["--labels", "utf8.txt line 2", "not valid UTF-8"]),
        (["--labels", tmp_path / "blank.txt", x], ["--labels", "blank.txt line 4", "empty label"]),
        (["--labels", tmp_path / "none.txt", x], ["--labels", "none.txt", "no label"]),
        (["--labels", "imagenet", "--templates", tmp_path / "tmpl.txt", x], ["--templates", "tmpl.txt line 2", "{}"]),
        (["--labels", tmp_path / "long.txt", x], ["--labels", "long.txt line 2", "lighthouse"]),
        (["--labels", tmp_path / "missing.txt", x], ["--labels", "missing.txt"]),
    ]
    for case in cases:
        extra, says = case[0], case[1]
        model = case[2] if len(case) > 2 else m
        one_error(tmp_path, "forward", "--model", model, *h, *extra, says=says)


def test_labels_file_is_not_an_output(lists, tmp_path):
    out = tmp_path / "o"
    out.mkdir()
    labels = out / "text_labels.txt"
    labels.write_text("cat\ndog\n", encoding="utf-8")
    code, _, err = harness.run("forward", "--model", lists / "clip.safetensors", "--heads", str(HEADS), "--labels",
                               labels, "-o", out, env={"XDG_CACHE_HOME": str(tmp_path / "cache")})
    assert code == 2 and "text_labels.txt" in err and labels.read_text() == "cat\ndog\n", err
