"""SigLIP asked in words, on the report page in a real browser (headless Debian Chromium): the
counterpart of test_report_texts.py's CLIP page, for a text tower with no mask and a sigmoid.

The model: a random Hugging Face SiglipModel with its text tower and a spiece.model beside it
(tests/pylib/siglip_reference.py text_model_folder, as tests/oracle/test_siglip_text.py builds
it), on a random photo of the model's own size (32 px: its input is the photo's normalised
pixels, so torch reads the same tensor). One run,
`vitattn --model M --text … ×3 --report --save-attention --top 2 photo.png -o out`, gives the page
and the files it is checked against. Checked in the page:
  - the Prompts panel ranks every text by its own sigmoid: the page's probabilities are
    sigmoid(exp(logit_scale)·cos(image, text) + logit_bias) computed here in torch
    (torch_siglip, torch_siglip_text on HF's ids, siglip_logits), equal to predictions.csv's
    for the top 2, listed likeliest first, and not a softmax (their sum is not 1);
  - the word bars are words.csv's rows, and their tokens SigLIP's word span: the pieces before
    its </s> with "▁" shown as a space (SentencePiece's own id_to_piece on HF's ids);
  - each text's map the page holds (--top 2: the likeliest two; the third's buttons are off and
    the picker refuses it) under the default method (legrad) is the run's _cls_t<i>.npy (mapError());
  - the text tower's attention view: the note says there is no mask, no cell is shown masked
    (hatched) and every cell is a number; for each prompt, layer and head the labels are the
    words and the first </s>, and the numbers are the torch text tower's attention
    (siglip_reference.torch_siglip_text, float64: transformers is not installed) on the same
    ids, cropped to those tokens, within 1e-4 (siglip_text's);
  - no console error, no request.

Seen red: the report's probabilities by a softmax over the texts (process_image.cpp's add_texts:
off torch's sigmoid by 0.08); CLIP's causal mask applied to SigLIP's view in the page (report.js's
isMasked: "a cell is masked"); the cells above the diagonal drawn hatched though they hold
numbers ("15 cells shown masked").

Runs under pytest (tests/conftest.py); the binary is harness.BIN. Needs numpy, torch,
python3-sentencepiece, python3-opencv, python3-selenium, chromium, chromium-driver.
"""
import sys
from pathlib import Path

import numpy as np
import pytest

from harness import need

try:
    import torch  # noqa: F401  (the oracle's; a clear skip, not an ImportError below)
except ImportError as e:
    need(False, f"cannot import torch ({e}); install python3-torch")

from siglip_reference import (GRID, P, TEXT_CONTEXT, TEXT_HEADS, TEXT_LAYERS, siglip_logits, text_model_folder,
                              torch_siglip, torch_siglip_text)
from siglip_tokenizer_reference import UNDERLINE, hf_ids

sys.path.insert(0, str(Path(__file__).resolve().parent))
import browser  # noqa: E402
from browser import check_maps, check_word_bars, driver, run  # noqa: E402,F401  (driver: the fixture)

TEXTS = ["a photo of a cat", "Two DOGS, playing in the snow!", "a red car on the street"]
TOL = 1e-4  # float32 against float64, as siglip_text


@pytest.fixture(scope="module")
def siglip(tmp_path_factory):
    """(model path, tensors, SentencePiece processor, photo path, the photo as the model's input)."""
    import cv2
    folder = tmp_path_factory.mktemp("siglip")
    model, t, sp = text_model_folder(folder / "model")
    bgr = np.random.default_rng(9).integers(0, 256, (GRID * P, GRID * P, 3), dtype=np.uint8)
    photo = folder / "photo.png"
    cv2.imwrite(str(photo), bgr)
    x = ((bgr[:, :, ::-1].astype(np.float32) / 255 - 0.5) / 0.5).transpose(2, 0, 1)  # SiglipImageProcessor's
    return model, t, sp, photo, x


def test_siglip_report_ranks_by_sigmoid_and_shows_the_unmasked_view(driver, siglip, tmp_path):
    model, t, sp, photo, x = siglip
    js = driver.execute_script
    args = ["--model", model, "--report", "--save-attention", "--top", "2", photo, "-o", tmp_path / "out"]
    for text in TEXTS:
        args += ["--text", text]
    run(*args)
    maps, words, top = browser.text_outputs(tmp_path / "out", "photo", len(TEXTS))
    assert len(top) == 2, top

    # the oracle: HF's ids, torch's text tower and image tower, SiglipModel's logits and sigmoid
    eos = sp.piece_to_id("</s>")
    ids = [hf_ids(sp, text, TEXT_CONTEXT) for text in TEXTS]
    attention, text_e = torch_siglip_text(t, np.array(ids, np.int32))  # [n, L, H, 64, 64]
    _, sigmoid = siglip_logits(torch_siglip(t, x)["embedding"][None], text_e, t)
    sigmoid = sigmoid[0]
    assert abs(sigmoid.sum() - 1) > 0.05, f"the texts' sigmoids {sigmoid} must not pass for a softmax"

    browser.console_errors(driver), browser.network_requests(driver)  # empty the logs
    browser.open_page(driver, (tmp_path / "out" / "photo_report.html").as_uri())
    texts = js("return window.vitattn.texts()")
    assert texts["causal"] is False and texts["probability"] == "sigmoid"
    assert (texts["layers"], texts["heads"]) == (TEXT_LAYERS, TEXT_HEADS)
    assert [p["text"] for p in texts["prompts"]] == TEXTS
    probabilities = np.array([p["probability"] for p in texts["prompts"]])
    d = float(np.abs(probabilities - sigmoid).max())
    assert d <= TOL, f"the page's probabilities {probabilities} off torch's sigmoid {sigmoid} by {d:.3g}"
    for i, text in enumerate(TEXTS):
        if text in top:
            assert abs(probabilities[i] - top[text]) < 1e-6, (text, probabilities[i], top[text])
    assert sorted(top, key=lambda s: -top[s]) == [TEXTS[i] for i in np.argsort(-sigmoid)[:2]], "predictions.csv's top 2"
    assert browser.shown_prompt_order(driver) == sorted(range(len(TEXTS)), key=lambda i: -sigmoid[i]), \
        "ranked by the sigmoid, likeliest first"

    # word bars: words.csv's rows, SigLIP's word span (the pieces before </s>, "▁" a space)
    check_word_bars(driver, words)
    for i, row_ids in enumerate(ids):
        span = row_ids[:row_ids.index(eos)]
        assert [r["token"] for r in words if int(r["text_index"]) == i] == \
            [sp.id_to_piece(j).replace(UNDERLINE, " ") for j in span], f"text {i}: words.csv's tokens"

    assert js("return window.vitattn.state()")["method"] == "legrad", "opens on the texts' default method"
    said = js("return document.getElementById('relevance-about').textContent + ' ' + "
              "document.querySelector('#picker p.muted').textContent")
    assert "sigmoid" in said and "softmax" not in said, f"the picker's words name another rule: {said}"
    held = {i: maps[i] for i, text in enumerate(TEXTS) if text in top}  # --top 2: the picker holds the top 2's maps
    check_maps(driver, held, "legrad")
    left_out = next(i for i, text in enumerate(TEXTS) if text not in top)
    with pytest.raises(Exception, match="class must be one of"):
        browser.select(driver, method="legrad", **{"class": left_out})
    assert js("return document.querySelector(`#prompts > li[data-index='${arguments[0]}'] button`).disabled", left_out)

    # the token view: no mask (said so, none hatched), torch's attention over the words and the first </s>
    assert js("return document.getElementById('text-mask').textContent").startswith("No mask")
    for i, row_ids in enumerate(ids):
        n = row_ids.index(eos) + 1
        expected_tokens = [r["token"] for r in words if int(r["text_index"]) == i] + ["</s>"]
        assert len(expected_tokens) == n
        for layer in range(TEXT_LAYERS):
            for head in range(TEXT_HEADS):
                view = {"prompt": i, "layer": layer, "head": head}
                got = js("return window.vitattn.textAttention(arguments[0])", view)
                assert got["tokens"] == expected_tokens
                assert all(v is not None for r in got["matrix"] for v in r), f"{view}: a cell is masked"
                values = np.array(got["matrix"], np.float64)
                want = attention[i, layer, head, :n, :n]
                d = float(np.abs(values - want).max())
                assert d <= TOL, f"{view}: the page's attention off torch's by {d:.3g}"
                assert np.triu(values, 1).max() > 0, f"{view}: later tokens are attended (no mask)"
                table = browser.text_attention_table(driver)
                assert table["cols"] == expected_tokens
                assert table["masked"] == 0, f"{view}: {table['masked']} cells shown masked (hatched)"
                np.testing.assert_allclose(table["numbers"], values.reshape(-1), atol=0)
    assert browser.console_errors(driver) == [], "console errors"
    assert browser.network_requests(driver) == [], "requests from an offline page"
