#!/usr/bin/env python3
"""The map methods' one table, checked on the source: a method's name, or one of the other
names the command line takes for it, is a string literal in src/pipeline/map_methods.cpp (the
table) and nowhere else. Every other file asks the table (method_name, method_named,
method_aliases, every_method, class_specific, report_methods), so that a new method is one
row, and a name cannot be spelt two ways.

Read with tests/pylib/cpp_lexer.py (comments may name methods: they explain, they do not
decide):
- every C++ file under src/: no string literal that is, whole, a method's name or alias
  ("chefer", "grad-rollout", "legrad", "gradcam", "rollout", "attention", "grad_rollout", …);
  a handful of literals that are the same word but not a method's name are listed in
  NOT_A_METHOD, each with what it is;
- the report page (src/report/*.js, *.html): no class-specific method's name or alias in a
  string, template or markup: the page takes them from the page data the C++ writes
  (relevance.maps[].method). Attention and rollout are the page's own views of its attention
  data (the rollout checkbox), not names it is given.

Needs only python3 and pytest. Run: python3 -m pytest tests/lint/test_method_names.py
"""
import re
import sys
import unittest
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "pylib"))
from cpp_lexer import lex  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
SRC = REPO / "src"
TABLE = SRC / "pipeline" / "map_methods.cpp"
CPP_SUFFIXES = (".cpp", ".hpp", ".h", ".cc", ".cpp.in")

CLASS_SPECIFIC = {"chefer", "grad-rollout", "legrad", "gradcam", "grad_rollout", "gradrollout", "grad-cam", "grad_cam",
                  "lrp"}
METHOD_NAMES = CLASS_SPECIFIC | {"attention", "rollout", "attn"}

# (file, literal): the same word as a method's name, meaning something else.
NOT_A_METHOD = {
    ("src/report/report_page.cpp", "attention"): "the page data's key of every layer's attention weights",
    ("src/report/report_page.cpp", "rollout"): "the page data's key of the rollout checkbox's starting state",
    ("src/pipeline/forward_job.cpp", "attention"): "forward's <stem>_attention.npy, the attention weights",
    ("src/pipeline/job_outputs.cpp", "attn"): "the output names' <name>_attn.npy, the drawn layer's heads",
}


def cpp_violations(path, text):
    """A C++ file's literals that are a method's name, as "path:line: "name"" (the table's own
    file and the NOT_A_METHOD literals left out)."""
    rel = path.relative_to(REPO).as_posix()
    if path == TABLE:
        return []
    _, literals = lex(text)
    return [f'{rel}:{line}: "{body}"' for line, body in literals
            if body.strip().lower() in METHOD_NAMES and (rel, body.strip().lower()) not in NOT_A_METHOD]


def js_strings(text):
    """(line, text) of every string, template and regular-expression-free literal of JavaScript
    `text`, comments left out."""
    out, i, n, line = [], 0, len(text), 1
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            i = n if j < 0 else j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            line += text.count("\n", i, j)
            i = j
        elif c in "'\"`":
            j = i + 1
            while j < n and text[j] != c:
                j += 2 if text[j] == "\\" else 1
            out.append((line, text[i + 1:j]))
            line += text.count("\n", i, j + 1)
            i = j + 1
        else:
            line += c == "\n"
            i += 1
    return out


CLASS_SPECIFIC_WORD = re.compile(r"(?<![\w-])(?:" + "|".join(sorted(map(re.escape, CLASS_SPECIFIC), key=len,
                                                                      reverse=True)) + r")(?![\w-])", re.I)


def page_violations(path, text):
    """The report page's class-specific method names: in a JavaScript literal, or in the
    markup (HTML comments left out)."""
    rel = path.relative_to(REPO).as_posix()
    if path.suffix == ".js":
        pieces = js_strings(text)
    else:
        pieces = [(text.count("\n", 0, m.start()) + 1, m.group(0))
                  for m in re.finditer(r"(?s)<(?!!--).*?>|[^<]+", re.sub(r"(?s)<!--.*?-->", "", text))]
    return [f"{rel}:{line}: {m.group(0)!r}" for line, piece in pieces for m in CLASS_SPECIFIC_WORD.finditer(piece)]


def source_files(suffixes):
    return sorted(p for p in SRC.rglob("*") if p.is_file() and p.name.endswith(suffixes))


class MethodNamesTest(unittest.TestCase):
    def test_the_table_names_every_method(self):
        _, literals = lex(TABLE.read_text(encoding="utf-8"))
        named = {body for _, body in literals}
        self.assertTrue(METHOD_NAMES <= named, f"names the lint knows but the table lacks: {METHOD_NAMES - named}")

    def test_no_method_name_outside_the_table(self):
        found = [v for p in source_files(CPP_SUFFIXES) for v in cpp_violations(p, p.read_text(encoding="utf-8"))]
        self.assertEqual(found, [], "a method's name as a literal outside src/pipeline/map_methods.cpp "
                                    "(ask the table):\n" + "\n".join(found))

    def test_the_report_page_takes_the_class_specific_names_from_its_data(self):
        found = [v for p in sorted((SRC / "report").glob("*")) if p.suffix in (".js", ".html")
                 for v in page_violations(p, p.read_text(encoding="utf-8"))]
        self.assertEqual(found, [], "the report page names a class-specific method (read relevance.maps[].method "
                                    "instead):\n" + "\n".join(found))

    def test_the_lint_sees_a_planted_name(self):
        text = 'const char* a = "legrad";  // "chefer" in a comment is fine\nauto b = "an attention map";\n'
        self.assertEqual(cpp_violations(SRC / "cli" / "x.cpp", text), ['src/cli/x.cpp:1: "legrad"'])
        js = "// chefer in a comment\nconst m = 'grad-rollout';\nconst k = `${m}/legrad`;\nconst ok = 'attention';\n"
        self.assertEqual(page_violations(SRC / "report" / "x.js", js),
                         ["src/report/x.js:2: 'grad-rollout'", "src/report/x.js:3: 'legrad'"])


if __name__ == "__main__":
    unittest.main()
