"""The text side in a real browser (headless Debian Chromium): a model asked in words, on the
report page (`vitattn --model CLIP --text … --report`) and in `vitattn serve`'s drop page.

A small random CLIP (OpenAI names, both towers, as tests/e2e/test_text_prompts.py builds it) on
the bundled photo. Checked:
  - the report's Prompts panel: every text ranked by its probability (softmax over the texts),
    as predictions.csv has them; the word bars (their tokens and relevances, read from the DOM)
    are words.csv's rows; each text's map under each class-specific method is the CLI's
    _cls_t<i>.npy for that method (within mapError());
  - the text tower's attention view: for a prompt, layer and head, the labels are the prompt's
    tokens from <|startoftext|> to <|endoftext|>, the cells above the diagonal are shown as
    masked (and none is shown as a number), the others are OpenAI's encode_text attention in
    torch (clip_reference.openai_encode_text, float64) on the same ids, within 1e-4 (clip_text's);
  - serve: prompts typed in the page's text box come back as the report in the frame, whose
    legrad maps and word bars are the CLI's files for the same model, image and prompts, and
    text= gives the page `--text … --report` writes, byte for byte; an
    empty prompt and one over the context are refused with the CLI's one-line message (400),
    and `truncate=1` takes the long one;
  - no console errors, no request outside the page (the server's for serve).

Runs under pytest (tests/conftest.py); the binary is harness.BIN. Needs numpy, torch (the
model's builders and the attention's oracle), python3-selenium, chromium, chromium-driver.
"""
import json
import sys
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

import numpy as np
import pytest

import safetensors_io
from harness import REPO, need
from serve_process import Server

try:
    import torch
except ImportError as e:
    need(False, f"cannot import torch ({e}); install python3-torch")

from clip_reference import HEADS, TEXT_W, as_torch, openai_encode_text, openai_tensors, openai_text_tensors

sys.path.insert(0, str(Path(__file__).resolve().parent))
import browser  # noqa: E402
from browser import check_maps, check_word_bars, driver, run, wait_for as wait  # noqa: E402,F401  (driver: the fixture)

PHOTO = REPO / "images" / "chelsea.png"
TEXTS = ["a photo of a cat", "a lighthouse at dusk", "two dogs"]
TEXT_SEED = 22
TEXT_HEADS = TEXT_W // 64  # the loader's default for OpenAI names: width / 64


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    path = tmp_path_factory.mktemp("clip") / "clip.safetensors"
    safetensors_io.write(path, {"visual." + k: v for k, v in openai_tensors(seed=21).items()} |
                         openai_text_tensors(seed=TEXT_SEED), {"num_heads": str(HEADS)})
    return path


def cli_files(model, out, texts, method):
    """The image command's files for PHOTO asked in `texts` (browser.text_outputs)."""
    args = ["--model", model, "--save-attention", "--top", str(len(texts)), "--method", method, "-o", out, PHOTO]
    for t in texts:
        args += ["--text", t]
    run(*args)
    return browser.text_outputs(out, "chelsea", len(texts))


def test_report_shows_prompts_word_bars_and_the_causal_view(driver, model, tmp_path):
    js = driver.execute_script
    maps, words, top = cli_files(model, tmp_path / "cli", TEXTS, "chefer")
    args = ["--model", model, "--report", "--method", "chefer", "-o", tmp_path / "page", PHOTO]
    for t in TEXTS:
        args += ["--text", t]
    run(*args)
    driver.get("about:blank")
    browser.console_errors(driver), browser.network_requests(driver)  # empty the logs
    browser.open_page(driver, (tmp_path / "page" / "chelsea_report.html").as_uri())

    texts = js("return window.vitattn.texts()")
    assert texts["causal"] is True and texts["probability"] == "softmax"
    assert [p["text"] for p in texts["prompts"]] == TEXTS
    probabilities = [p["probability"] for p in texts["prompts"]]
    assert abs(sum(probabilities) - 1) < 1e-6, "softmax over the texts"
    for t, p in zip(TEXTS, probabilities):
        assert abs(p - top[t]) < 1e-5, (t, p, top[t])
    assert browser.shown_prompt_order(driver) == sorted(range(len(TEXTS)), key=lambda i: -probabilities[i]), "ranked, likeliest first"
    check_word_bars(driver, words)
    check_maps(driver, maps, "chefer")
    # a prompt's map button selects that text's map
    driver.find_element("css selector", "#prompts > li[data-index='2'] button[data-method='chefer']").click()
    assert js("return window.vitattn.state()")["class"] == 2
    np.testing.assert_allclose(browser.row(driver), maps[2].reshape(-1), atol=js("return window.vitattn.mapError()"))

    # the causal view: tokens SOT … EOT, masked cells above the diagonal, the rest torch's attention
    ids = np.load(run_forward_ids(model, tmp_path))
    text_t = {k: v for k, v in openai_text_tensors(seed=TEXT_SEED).items()}
    with torch.no_grad():
        ref, _ = openai_encode_text(as_torch(text_t), torch.from_numpy(ids.astype(np.int64)), TEXT_HEADS)  # [n, L, H, ctx, ctx]
    for i, text in enumerate(TEXTS):
        expected_tokens = ["<|startoftext|>"] + [r["token"] for r in words if int(r["text_index"]) == i] + ["<|endoftext|>"]
        n = len(expected_tokens)
        for layer in range(texts["layers"]):
            for head in range(texts["heads"]):
                got = js("return window.vitattn.textAttention(arguments[0])", {"prompt": i, "layer": layer, "head": head})
                assert got["tokens"] == expected_tokens
                m = got["matrix"]
                assert all(m[q][k] is None for q in range(n) for k in range(q + 1, n)), "above the diagonal: masked"
                values = np.array([[m[q][k] if k <= q else 0.0 for k in range(n)] for q in range(n)])
                np.testing.assert_allclose(values, np.tril(ref[i, layer, head, :n, :n]), atol=1e-4)  # float32 against float64, as clip_text
                # the DOM: the labels, and the masked cells shown as masked, never as a number
                dom = browser.text_attention_table(driver)
                assert dom["cols"] == expected_tokens
                assert dom["masked"] == n * (n - 1) // 2
                np.testing.assert_allclose(dom["numbers"], values[np.tril_indices(n)], atol=0)
    assert "causal mask" in js("return document.getElementById('text-mask').textContent")
    with pytest.raises(Exception):
        js("return window.vitattn.textAttention({prompt: 3})")
    assert browser.console_errors(driver) == [], "console errors"
    assert browser.network_requests(driver) == [], "requests from an offline page"


def run_forward_ids(model, tmp_path):
    """`vitattn forward --text` for TEXTS: its text_ids.npy (the CLI's tokeniser's rows)."""
    args = ["forward", "--model", model, "-o", tmp_path / "fwd"]
    for t in TEXTS:
        args += ["--text", t]
    run(*args)
    return tmp_path / "fwd" / "text_ids.npy"


@pytest.fixture(scope="module")
def server(model):
    served = Server("--model", model)
    yield served.url
    assert served.stop() == 0, served.stderr


def post_report(server, **params):
    """POST /api/report with the photo: (status, JSON answer)."""
    url = server + "api/report?" + urllib.parse.urlencode({"name": "chelsea.png", **params})
    try:
        with urllib.request.urlopen(urllib.request.Request(url, data=PHOTO.read_bytes(), method="POST")) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read())


def test_serve_takes_prompts_typed_in_its_page(driver, model, server, tmp_path):
    from selenium.webdriver.common.by import By
    js = driver.execute_script
    texts = TEXTS[:2]
    maps, words, _ = cli_files(model, tmp_path / "cli", texts, "legrad")
    driver.get("about:blank")
    browser.console_errors(driver), browser.network_requests(driver)
    driver.get(server)
    wait(driver, "return document.getElementById('model').options.length === 1 && "
                 "!document.getElementById('serve-texts-label').hidden")
    box = driver.find_element(By.ID, "serve-texts")
    box.send_keys(texts[0] + "\n\n" + texts[1] + "\n")  # a blank line between: left out
    driver.find_element(By.ID, "file").send_keys(str(PHOTO))
    wait(driver, "return !document.getElementById('report').hidden")
    driver.switch_to.frame(driver.find_element(By.ID, "report"))
    wait(driver, "return document.body && document.body.dataset.ready === '1'")
    assert [p["text"] for p in js("return window.vitattn.texts()")["prompts"]] == texts
    assert js("return window.vitattn.state()")["method"] == "legrad", "opens on the texts' default method"
    check_word_bars(driver, words)
    check_maps(driver, maps, "legrad")
    driver.switch_to.default_content()
    assert browser.console_errors(driver) == [], "console errors"
    outside = [u for u in browser.network_requests(driver) if not u.startswith(server)]
    assert outside == [], f"requests outside the server: {outside}"

    # the CLI's checks, one line each, 400
    status, answer = post_report(server, text="a cat\n\n")
    assert status == 400 and answer["error"] == "text: an empty text (nothing to encode)", answer
    long = " ".join(["lighthouse"] * 80)
    status, answer = post_report(server, text=long)
    assert status == 400 and answer["error"].startswith("text: ") and "\n" not in answer["error"], answer
    assert "77" in answer["error"] or "context" in answer["error"], answer
    status, answer = post_report(server, text=long, truncate="1")
    assert status == 200, answer


def test_serve_page_is_the_clis_page(model, server, tmp_path):
    """The same prompts by text= and by --text: the same page, byte for byte (one pipeline call)."""
    args = ["--model", model, "--report", "-o", tmp_path / "cli", PHOTO]
    for t in TEXTS:
        args += ["--text", t]
    run(*args)
    status, answer = post_report(server, text="\n".join(TEXTS))
    assert status == 200, answer
    with urllib.request.urlopen(server + "api/report/" + answer["id"]) as r:
        page = r.read()
    assert page == (tmp_path / "cli" / "chelsea_report.html").read_bytes()
