#!/usr/bin/env python3
"""One spelling of "the model has a classifier": VitModel::has_classifier() (and n_classes()
for how many classes), defined once in src/core/vit.hpp, with has_linear_head() for the head
matrix itself. A test of the head matrix itself for
emptiness elsewhere (w_head.size(), w_head.empty(), w_head.rows() == 0, !w_head.cols(), …)
would be a second definition of the same rule, free to drift from it (say, when a model gets
a second kind of head).

Scanned: the code of src/**/*.{cpp,hpp,h,cpp.in}, through tests/pylib/cpp_lexer.py's lexer
(comments and string literals are not code). Flagged, w_head reached by . or ->:
- w_head.size() and w_head.empty(), anywhere: a matrix's element count is only ever asked to
  learn whether it is empty;
- w_head.rows() or w_head.cols() compared with 0 or 1 (== 0, != 0, > 0, < 1, >= 1, either
  side), negated (!…), or a truth value of its own: if (m.w_head.rows()), … && m.w_head.rows().
Not flagged: w_head.rows() and w_head.cols() as numbers (a shape check, a loop bound), and
w_head_dist (distilled DeiT's second head, which has_dist speaks of).
Allowed: has_linear_head's own definition in src/core/vit.hpp (has_classifier is it or the
zero-shot texts, core/zero_shot.hpp).

Needs only python3 and pytest. Run: python3 -m pytest tests/lint/test_classifier_rule.py
"""
import re
import sys
import unittest
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "pylib"))
from cpp_lexer import lex  # noqa: E402  (one C++ lexer for every source lint)

REPO = Path(__file__).resolve().parents[2]
CPP_SUFFIXES = (".cpp", ".hpp", ".h", ".cpp.in")
DEFINITION = (Path("src/core/vit.hpp"), re.compile(r"\bbool\s+has_linear_head\s*\(\s*\)\s*const\s*\{"))

HEAD = r"\bw_head\s*(?:\.|->)\s*"
DIMENSION = HEAD + r"(?:rows|cols)\s*\(\s*\)"
ZERO_OR_ONE = r"(?:==|!=|<=|>=|<|>)\s*[01](?:[uU]?[lL]{0,2}|[lL]{0,2}[uU]?)\b"
EMPTINESS = re.compile("|".join([
    HEAD + r"(?:size|empty)\s*\(\s*\)",                      # any size() or empty()
    DIMENSION + r"\s*" + ZERO_OR_ONE,                         # rows() == 0
    r"\b0\s*(?:==|!=|<|>|<=|>=)\s*[\w.>()\[\]-]*?" + DIMENSION,  # 0 < rows()
    r"!\s*[\w.>()\[\]-]*?" + DIMENSION,                       # !m.w_head.rows()
    r"\b(?:if|while)\s*\(\s*[\w.>\[\]-]*?" + DIMENSION + r"\s*\)",  # if (m.w_head.rows())
    r"(?:&&|\|\|)\s*[\w.>\[\]-]*?" + DIMENSION + r"\s*(?:&&|\|\||\))",  # … && m.w_head.rows())
    r"[\w.>\[\]-]*?" + DIMENSION + r"\s*(?:&&|\|\|)",             # m.w_head.rows() && …
]))


def violations(path, text):
    """(path, line, code line) of each emptiness test of w_head in the code of `text`."""
    code, _ = lex(text)
    lines = code.split("\n")
    found = []
    for number, line in enumerate(lines, start=1):
        if not EMPTINESS.search(line):
            continue
        if path == DEFINITION[0] and DEFINITION[1].search(line):
            continue
        found.append((str(path), number, line.strip()))
    return found


def scanned_files():
    return [p for p in sorted((REPO / "src").rglob("*")) if p.is_file() and p.name.endswith(CPP_SUFFIXES)]


class ClassifierRule(unittest.TestCase):
    def test_the_scanner_finds_emptiness_tests_and_leaves_shapes(self):
        flagged = [
            "if (model.w_head.size() == 0) return;",
            "const bool c = m.w_head.size() > 0;",
            "if (m->w_head.empty()) throw Error(\"x\");",
            "if (model.w_head.rows() == 0) return;",
            "if (model.w_head.cols() != 0) go();",
            "if (0 < model.w_head.rows()) go();",
            "if (!m.w_head.rows()) return;",
            "if (m.w_head.rows()) go();",
            "return w_head.rows() >= 1;",
            "if (ok && m.w_head.cols()) go();",
            "while (m.w_head.rows() || more) go();",
        ]
        kept = [
            "check(\"classifier weight\", m.w_head, m.w_head.rows(), d_pool);",
            "for (Eigen::Index c = 0; c < m.w_head.rows(); ++c) {}",
            "const auto n = static_cast<int>(w_head.rows());",
            "if (m.w_head_dist.size() > 0) {}",
            "if (m.w_head.rows() == 10) {}",
            "if (model.has_classifier()) {}",
            "// a comment: w_head.size() == 0",
            "throw Error(\"w_head.size() == 0\");",
        ]
        for line in flagged:
            self.assertTrue(violations(Path("src/x.cpp"), line), line)
        for line in kept:
            self.assertFalse(violations(Path("src/x.cpp"), line), line)
        definition = "  bool has_linear_head() const { return w_head.size() > 0; }"
        self.assertFalse(violations(DEFINITION[0], definition))
        self.assertTrue(violations(Path("src/core/vit_head.cpp"), definition))

    def test_has_a_classifier_is_only_has_classifier(self):
        files = scanned_files()
        self.assertGreater(len(files), 50, "the scan found too few sources: is REPO right?")
        found = [v for p in files for v in violations(p.relative_to(REPO), p.read_text(encoding="utf-8"))]
        self.assertEqual(found, [], "a test of w_head for emptiness: say model.has_classifier() or has_linear_head() (core/vit.hpp):\n" +
                         "\n".join(f"{p}:{n}: {line}" for p, n, line in found))


if __name__ == "__main__":
    unittest.main()
