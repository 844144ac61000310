#!/usr/bin/env python3
"""No measured figure in a source comment. A comment states a contract or a reason ("the
panels are kept from the second product on: the first would pay their page faults for
nothing"); the figures that back a reason (how many milliseconds, how many times faster, what
share of the CPU) go stale with the next machine, the next load or the next change, and a
comment cannot say which machine, which load or which command. They live in
docs/performance.md (and the tests' times in docs/testing.md), beside their baseline, the
machine and the command that measures them again.

Scanned: the comments of src/**/*.{cpp,hpp,h,cpp.in}, bench/*.{cpp,hpp}, fuzz/*.{cpp,hpp},
every CMakeLists.txt (top, src, bench, fuzz, tests) and cmake/*.cmake; C++ comments through
tests/pylib/cpp_lexer.py's lexer (strings and characters are not comments). A comment's consecutive
lines are read as one text. A measured figure is:
- a time: a number and ms, µs, us, ns, s, sec, seconds, min, minutes or hours ("~25 ms of
  CPU", "(14 s)", "5 min 20 s");
- a speed-up or slow-down: "0.55× its CPU time", "1.3×", "2x faster", "3 times slower";
- a share: a percentage of the time, the CPU, the samples or the cycles, or a percentage
  faster, slower, fewer, more, smaller or larger ("~15 % of the CPU", "6 % fewer bytes"); a
  third, a quarter, … or half of the time, the CPU, the samples or the cycles ("about a third
  of a batch's CPU time");
- a rate: a number of images, photos, frames, MP, MB or GFLOP per second (or /s), or fps;
- a size that reads as measured: a number of KB, KiB, MB, MiB, GB or GiB written as an
  estimate or a growth (after ~, +, about, around, roughly, nearly, almost or some) or
  followed by RSS, resident or peak ("~95 MB of fresh pages", "+88 MB of RSS").
Not figures, and not reported:
- a bound the code enforces, right after "at most", "at least", "up to", "no more than", ≤,
  <, ≥ or > ("waits at most 100 ms", "redraw ≤ 10×/s");
- an exact size (a 4 KiB page, an 8-byte length, a 512 MiB cap, a 16 MB budget): "bytes" is
  never a unit here, and KB…GiB only in the measured forms above;
- dimensions and formulas: 8×8, 19 × 3, 4096², σ(1.702x).
ALLOWED below lists what the rules would take for a figure but is a contract, each with why.

Needs only python3 and pytest. Run: python3 -m pytest tests/lint/test_source_figures.py
"""
import re
import sys
import unittest
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "pylib"))
from cpp_lexer import lex  # noqa: E402  (one C++ lexer for every source lint)

REPO = Path(__file__).resolve().parents[2]
CPP_SUFFIXES = (".cpp", ".hpp", ".h", ".cpp.in")

# A number: 12, 0.55, 2,400 (a thousands comma, not "255, s"), glued to no word, dot or
# backslash before it ("x1", "v1.2", "\0x" are not numbers).
NUM = r"(?<![\w.\\])(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?"
ESTIMATE = r"(?:~\s?|\+\s?|\b(?:about|around|roughly|nearly|almost|some)\s+)"
SIZE_UNIT = r"(?:[KMGT]i?B|kB)\b"
FIGURES = (
    ("a time", re.compile(NUM + r"\s?(?:ms|µs|us|ns|s|sec|seconds?|min|minutes?|hours?)\b")),
    ("a speed-up", re.compile(NUM + r"\s?×(?!\s?[\d(])|" + NUM + r"\s?(?:x|times)\s+(?:faster|slower|quicker)\b")),
    ("a share", re.compile(NUM + r"\s?%\s+(?:[^\s%]+\s+){0,4}?(?:time|CPU|samples|cycles|faster|slower|fewer|more|"
                           r"smaller|larger)\b|\b(?:(?:a|one|two|three)\s+(?:third|quarter|fifth|tenth)s?|half)\s+"
                           r"(?:[^\s%]+\s+){0,4}?(?:time|CPU|samples|cycles)\b")),
    ("a rate", re.compile(NUM + r"\s?(?:images?|photos?|frames?|MP|MB|GFLOP)\s?(?:/s\b|per second)|"
                          + NUM + r"\s?fps\b")),
    ("a measured size", re.compile(ESTIMATE + NUM + r"\s?" + SIZE_UNIT + "|"
                                   + NUM + r"\s?" + SIZE_UNIT + r"\s+(?:of\s+)?(?:RSS|resident|peak)\b")),
)
BOUND = re.compile(r"(?:\bat most|\bat least|\bup to|\bno more than|[≤<≥>])\s*$")

# (file, the figure as matched): contracts the rules above would report. Keep it short; a new
# entry says why the number is a contract and not a measurement.
ALLOWED = {
}


def cpp_comments(text):
    found = []
    lex(text, found)
    return found


def cmake_comments(text):
    """(line number, text) of each # comment of a CMake file: # outside a quoted argument."""
    found = []
    for number, line in enumerate(text.split("\n"), 1):
        quoted = False
        for k, ch in enumerate(line):
            if ch == '"' and (k == 0 or line[k - 1] != "\\"):
                quoted = not quoted
            elif ch == "#" and not quoted:
                found.append((number, line[k + 1:]))
                break
    return found


def blocks(comments):
    """Comments on consecutive lines joined into one text: [(first line, text)]."""
    joined = []
    for number, body in comments:
        if joined and joined[-1][2] + 1 >= number:
            first, text, _ = joined[-1]
            joined[-1] = (first, text + "\n" + body, number + body.count("\n"))
        else:
            joined.append((number, body, number + body.count("\n")))
    return [(first, text) for first, text, _ in joined]


def figures(path, text):
    """The measured figures in the comments of one file, as "path:line: what: 'figure' in: line"."""
    cmake = path.name == "CMakeLists.txt" or path.suffix == ".cmake"
    found = []
    for first, body in blocks(cmake_comments(text) if cmake else cpp_comments(text)):
        for what, pattern in FIGURES:
            for m in pattern.finditer(body):
                if BOUND.search(body[:m.start()]):
                    continue
                figure = " ".join(m.group(0).split())
                if (str(path), figure) in ALLOWED:
                    continue
                number = first + body.count("\n", 0, m.start())
                line = body.split("\n")[body.count("\n", 0, m.start())].strip()
                found.append(f"{path}:{number}: {what}: {figure!r} in: {line}")
    return found


def scanned_files():
    cpp = [p for p in sorted((REPO / "src").rglob("*")) if p.is_file() and p.name.endswith(CPP_SUFFIXES)]
    for folder in ("bench", "fuzz"):
        cpp += [p for p in sorted((REPO / folder).glob("*")) if p.suffix in (".cpp", ".hpp")]
    cmake = [REPO / "CMakeLists.txt"] + sorted((REPO / "cmake").glob("*.cmake"))
    for folder in ("src", "bench", "fuzz", "tests"):
        cmake += sorted((REPO / folder).rglob("CMakeLists.txt"))
    return cpp + cmake


class SourceFigures(unittest.TestCase):
    def test_the_scanner_finds_figures_and_leaves_contracts(self):
        cpp = "\n".join([
            "// linked, they cost ~25 ms of CPU at each start",                   # 1: a time
            "int x = 0;  // about 0.55× its CPU time for 6 %",                     # 2: a speed-up, and
            "// fewer bytes; the faults were 1,024 (~15 % of the CPU)",            # 3: two shares (2's and 3's)
            "/* a fresh tape adds the page faults of ~95 MB",                      # 4: a measured size
            "   of new memory; peak 120.8 MB RSS; 2x faster than before */",       # 5: a size, a speed-up
            "// 13.3 frames/s, 56 images per second",                              # 6: two rates
            "const char* s = \"12 ms\";  // a string is not a comment",            # 7: nothing
            "// waits at most 100 ms; redraw ≤ 10×/s; up to 32 MiB from the heap",  # 8: bounds
            "// a 4 KiB page, 8 bytes, a 512 MiB cap, a 16 MB budget, 2 MiB pages",  # 9: exact sizes
            "// 8×8 transposes, 19 × 3 bits, σ(1.702x), 4096², \"30000x\", \\0x",  # 10: not figures
            "// about 0.2% of a ViT-B/16's bytes; m/s ≤ 1; 3 frames per clip",      # 11: not figures
            "// 5 min 20 s measured",                                              # 12: two times
            "// was about a third of a seeded batch's CPU time; half the patches or more",  # 13: one
        ])
        found = figures(Path("sample.cpp"), cpp)
        lines = sorted(int(f.split(":")[1]) for f in found)
        self.assertEqual(lines, [1, 2, 2, 3, 4, 5, 5, 6, 6, 12, 12, 13], "\n".join(found))
        cmake = "\n".join([
            'set(X "a # in a string, 14 s")  # the everyday run (14 s)',          # 1: a time
            "# About 80 % of their time is torch",                                 # 2: a share
            "# a single allocation over 2 GB is a failure (-rss_limit_mb=2048)",   # 3: a limit
            "set(TIMEOUT 900)  # room for a loaded machine",                       # 4: nothing
        ])
        found = figures(Path("CMakeLists.txt"), cmake)
        self.assertEqual(sorted(int(f.split(":")[1]) for f in found), [1, 2], "\n".join(found))

    def test_no_measured_figure_in_a_source_comment(self):
        files = scanned_files()
        self.assertGreater(len(files), 100, "the scan found the sources")
        found = [f for p in files for f in figures(p.relative_to(REPO), p.read_text(encoding="utf-8"))]
        self.assertEqual(found, [], "a comment states a contract or a reason, not a measurement: move the "
                         "figure to docs/performance.md (its baseline, machine and command) and keep the "
                         "reason:\n" + "\n".join(found))


if __name__ == "__main__":
    unittest.main()
