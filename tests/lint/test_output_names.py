#!/usr/bin/env python3
"""Every output's name is spelled in one place. src/pipeline/job_outputs.{hpp,cpp} names the
files a job writes (the suffixes after its output base: "_attn.png", "_cls<tag>.npy",
"_report.html", "_settings.txt", …), the batch files in the output folder ("predictions.csv",
"index.html", "heads.csv", "pca_fit.npy", …) and a video's "_frames" folder; the formats'
extensions are the writers' (image::extension in src/image/image_writer.cpp for ".png",
".jpg", ".webp", video::extension in src/video/video_writer.cpp for ".mp4", ".avi"), which job_outputs asks. The input
protection, --skip-existing, the folder scan's "leave out vitattn's own outputs" and the
server's download name all ask there, so a name spelled again elsewhere would drift from
theirs.

Scanned: the string literals of src/**/*.{cpp,hpp} (through tests/pylib/cpp_lexer.py's lexer:
comments are not literals). Reported: a literal that is a file name or a part of one, that is
one without whitespace ending in .npy, .png, .jpg, .webp, .csv, .html, .txt, .mp4, .avi or
.json: a suffix ("_mask.npy", "x_attn.png"), a batch file ("heads.csv", "<out>/index.html") or
a bare extension (".npy"). Not reported: prose for people (--help, log lines) that mentions an
output, as the docs do ("Also write <name>_report.html: …"); no file name is made of it.
ALLOWED below lists the literals that look like output names but are not, each with why.

Needs only python3 and pytest. Run: python3 -m pytest tests/lint/test_output_names.py
"""
import re
import sys
import unittest
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "pylib"))
from cpp_lexer import lex  # noqa: E402  (one C++ lexer for every source lint)

REPO = Path(__file__).resolve().parents[2]

# The one place of each name: the outputs' names, and the formats' extensions they ask.
ONE_PLACE = {
    "src/pipeline/job_outputs.hpp",
    "src/pipeline/job_outputs.cpp",
    "src/image/image_writer.cpp",  # image::extension(ImageFormat)
    "src/video/video_writer.cpp",  # video::extension(VideoCodec)
}

NAME = re.compile(r"\.(?:npy|png|jpg|webp|csv|html|txt|mp4|avi|json)$")

# (file, literal): names that are no output of vitattn's. A new entry says why.
ALLOWED = {
    # A checkpoint's files as Hugging Face names them: read, never written.
    ("src/hub/hf_model.cpp", "config.json"): "an input",
    ("src/hub/hf_model.cpp", "preprocessor_config.json"): "an input",
    ("src/model/model_config.cpp", "config.json"): "an input",
    ("src/model/model_config.cpp", "preprocessor_config.json"): "an input",
    ("src/model/open_model.cpp", "config.json"): "an input",
    ("src/text/clip_hf_vocabulary.cpp", "vocab.json"): "an input (CLIP's tokeniser files)",
    ("src/text/clip_hf_vocabulary.cpp", "merges.txt"): "an input (CLIP's tokeniser files)",
    ("src/text/clip_hf_vocabulary.cpp", "tokenizer.json"): "an input (CLIP's tokeniser files)",
    # explain writes its heatmap and page under the names the user gives: --help's placeholders
    # and the page's accepted extensions.
    ("src/cli/explain_command.cpp", "FILE.png"): "a placeholder in --help",
    ("src/cli/explain_command.cpp", "FILE.html"): "a placeholder in --help",
    ("src/cli/explain_html.cpp", ".html"): "checks a name the user gave",
    # The codec plug-in links OpenCV and no vitattn library: it reads the extension
    # image_writer.cpp hands it to pick OpenCV's quality flag.
    ("src/image/codec_module_opencv.cpp", ".webp"): "compares the extension it is handed",
}


def output_names(text):
    """(line number, literal) of every string literal in C++ `text` that is a file name."""
    return [(line, body) for line, body in lex(text)[1] if not re.search(r"\s", body) and NAME.search(body)]


def scanned_files():
    return [p for p in sorted((REPO / "src").rglob("*")) if p.is_file() and p.suffix in (".cpp", ".hpp")]


def found_names():
    """Every output name spelled outside its one place, as {(file, literal): [line, …]}."""
    found = {}
    for path in scanned_files():
        rel = path.relative_to(REPO).as_posix()
        if rel in ONE_PLACE:
            continue
        for line, body in output_names(path.read_text(encoding="utf-8")):
            found.setdefault((rel, body), []).append(line)
    return found


class OutputNames(unittest.TestCase):
    def test_the_scanner_finds_names_and_leaves_prose(self):
        cpp = "\n".join([
            'write_npy(with_suffix(base, "_mask.npy"), m);',                      # 1: a suffix
            'const fs::path p = out / "heads.csv";  // "index.html" in a comment',  # 2: a batch file
            'return stem + "_" + what + ".npy";',                                  # 3: an extension
            'std::string s = R"(<out>/predictions.csv)";',                         # 4: a raw literal
            'add_flag("--report", "Also write <name>_report.html: a page");',      # 5: prose
            'warn("heads.csv: videos get no rows");',                              # 6: prose
            'const char* k = "_attn"; const char* t = "x.npz";',                   # 7: no extension
        ])
        self.assertEqual([line for line, _ in output_names(cpp)], [1, 2, 3, 4])

    def test_no_output_name_outside_its_one_place(self):
        files = scanned_files()
        self.assertGreater(len(files), 100, "the scan found the sources")
        found = [f"{file}:{','.join(map(str, lines))}: {literal!r}"
                 for (file, literal), lines in sorted(found_names().items()) if (file, literal) not in ALLOWED]
        self.assertEqual(found, [], "an output's name is spelled in src/pipeline/job_outputs.cpp (the formats' "
                         "extensions by image::extension and video::extension, image_writer.cpp and video_writer.cpp): ask there "
                         "(overlay_suffix, map_values_suffix, batch_file, …):\n" + "\n".join(found))

    def test_every_allowed_literal_is_still_there(self):
        stale = sorted(set(ALLOWED) - set(found_names()))
        self.assertEqual(stale, [], "ALLOWED lists literals the sources no longer hold: remove them")


if __name__ == "__main__":
    unittest.main()
