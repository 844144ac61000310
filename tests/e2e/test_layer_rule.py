#!/usr/bin/env python3
"""The layer rule, checked on the source: below src/cli no C++ file names a command-line flag
or an environment variable (README, "Layout"). The layers say what is wrong in terms of
values and roles ("layer 3: …", "the log x.jsonl: …"); the command line (src/cli) maps a
role to its flag and reads the environment, and hands the layers values.

Every C++ file under src/ except src/cli is read with a small lexer that tells code, comments,
string literals (raw ones too) and character literals apart. It must find:
- no string literal naming a flag: "-o", "--log-json", also inside a longer text, as in
  "give another -o" or "(--log-json)";
- no getenv in the code (nor secure_getenv, setenv, unsetenv, putenv or environ);
- no environment variable's name in a string literal: SLURM_…, HF_…, HUGGING_FACE_…,
  VITATTN_…, JOB_COMPLETION_INDEX, OMP_…, OPENBLAS_…, MKL_…, OPENCV_….
Comments may mention flags and variables: they explain, they do not decide.

Needs only python3 and pytest. Run: python3 -m pytest tests/e2e/test_layer_rule.py
"""
import re
import unittest
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
SRC = REPO / "src"
CLI = SRC / "cli"
CPP_SUFFIXES = (".cpp", ".hpp", ".h", ".cc", ".cpp.in")

# A flag inside a text: "--" and a letter, or "-" and a short flag's character standing alone,
# neither glued to a word before it ("x-y", "3-pixel", "e-5" are not flags) nor, for the short
# form, followed by more of a word ("-pixel patches" is not "-p"). Short flags are a lower-case
# letter or 0, as vitattn's are (-o, -r, -j, -q, -v, -h, -0): "-1…12" is a number, and the
# Radiance header's "-Y %d +X %d" a format.
LONG_FLAG = re.compile(r"(?<![\w-])--[A-Za-z][\w-]*")
SHORT_FLAG = re.compile(r"(?<![\w.+-])-[a-z0](?![\w-])")
# Environment variables by the prefixes of the ones vitattn and its libraries read; "@NAME@"
# is a CMake substitution in a .cpp.in, not the environment.
ENV_NAME = re.compile(r"(?<!@)\b(?:SLURM_\w+|HF_\w+|HUGGING_FACE_\w+|VITATTN_\w+|JOB_COMPLETION_INDEX|OMP_\w+|"
                      r"OPENBLAS_\w+|MKL_\w+|OPENCV_\w+)")
ENV_CALL = re.compile(r"\b(?:secure_getenv|getenv|setenv|unsetenv|putenv|environ)\b")


def lex(text, comments=None):
    """(code, literals) of C++ source `text`: the code with comments and literals blanked out
    (lines kept), and every string literal's contents as (line number, text). When `comments`
    is a list, every comment's text (without // or /* */) is appended to it as (line number,
    text): test_source_figures.py reads them."""
    code, literals = [], []
    i, n, line = 0, len(text), 1
    while i < n:
        c = text[i]
        if text.startswith("//", i):  # to the end of the line
            j = text.find("\n", i)
            j = n if j < 0 else j
            if comments is not None:
                comments.append((line, text[i + 2:j]))
            i = j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            if comments is not None:
                comments.append((line, text[i + 2:j - 2]))
            code.append("\n" * text.count("\n", i, j))
            line += text.count("\n", i, j)
            i = j
        elif c == '"' or (c == "R" and text.startswith('R"', i) and not re.match(r"\w", text[i - 1:i] or " ")) \
                or (c in "uUL8" and re.match(r'(?:u8|[uUL])R?"', text[i:]) and not re.match(r"\w", text[i - 1:i] or " ")):
            prefix = re.match(r'(?:u8|[uUL])?(R?)"', text[i:])
            start = i + len(prefix.group(0))
            if prefix.group(1):  # raw: R"delim( … )delim"
                delim = text[start:text.index("(", start)]
                end = text.index(")" + delim + '"', start)
                body, i = text[start + len(delim) + 1:end], end + len(delim) + 2
            else:
                j = start
                while j < n and text[j] != '"':
                    j += 2 if text[j] == "\\" else 1
                body, i = text[start:j], j + 1
            literals.append((line, body))
            code.append("\n" * body.count("\n"))
            line += body.count("\n")
        elif c == "'" and not re.match(r"[0-9A-Fa-f]", text[i - 1:i] or " "):  # a char literal, not 1'000
            j = i + 1
            while j < n and text[j] != "'":
                j += 2 if text[j] == "\\" else 1
            i = j + 1
        else:
            code.append(c)
            line += c == "\n"
            i += 1
    return "".join(code), literals


def leaks(path, text):
    """The layer rule's violations in one file, as "path:line: what"."""
    code, literals = lex(text)
    found = []
    for number, body in literals:
        for pattern, what in ((LONG_FLAG, "names a flag"), (SHORT_FLAG, "names a flag"),
                              (ENV_NAME, "names an environment variable")):
            for m in pattern.finditer(body):
                found.append(f"{path}:{number}: {what}: {m.group(0)!r} in \"{body}\"")
    for number, code_line in enumerate(code.split("\n"), 1):
        for m in ENV_CALL.finditer(code_line):
            found.append(f"{path}:{number}: reads the environment: {m.group(0)}: {code_line.strip()}")
    return found


def below_the_cli():
    files = [p for p in sorted(SRC.rglob("*")) if p.is_file() and p.name.endswith(CPP_SUFFIXES)]
    return [p for p in files if CLI not in p.parents]


class LayerRule(unittest.TestCase):
    def test_the_scanner_finds_what_it_must_and_only_that(self):
        sample = '\n'.join([
            'throw Error("a folder (-r descends into folders)");',   # 1: -r
            'note(p, "give another -o");',                          # 2: -o, mid-string
            'check(path, "--save-model");',                         # 3
            'msg = "x (--log-json)" R"(raw -j)";',                   # 4: two, one raw
            'const char* v = std::getenv("HF_TOKEN");',             # 5: getenv and HF_
            'int getenv_count = 0;',                                # 6: another word
            '// --comments "-o" may say getenv and SLURM_JOB_ID',   # 7: nothing
            '/* block: "--html" */ x = "3-pixel patches, e-5, a-b, -pixel";',  # 8: nothing
            "char c = '\"'; y = \"-0 with --files-from\";",         # 9: -0, --files-from
            'z = "JOB_COMPLETION_INDEX=" + s; w = "1\'000";',        # 10: the variable
            'a = "-Y %d +X %d"; b = "not in -1…12"; c = "@VITATTN_CLASSES@";',  # 11: nothing
            '::setenv("OPENCV_FFMPEG_LOGLEVEL", "-8", 0);',         # 12: setenv and the name
        ])
        found = leaks("sample.cpp", sample)
        lines = sorted(int(f.split(":")[1]) for f in found)
        self.assertEqual(lines, [1, 2, 3, 4, 4, 5, 5, 9, 9, 10, 12, 12], "\n".join(found))

    def test_no_flag_and_no_environment_below_the_cli(self):
        files = below_the_cli()
        self.assertGreater(len(files), 50, "the scan found the sources")
        found = [leak for p in files for leak in leaks(p.relative_to(REPO), p.read_text(encoding="utf-8"))]
        self.assertEqual(found, [], "below src/cli, flags and environment variables are the CLI's to name:\n"
                         + "\n".join(found))


if __name__ == "__main__":
    unittest.main()
