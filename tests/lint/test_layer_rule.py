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

Needs only python3 and pytest. Run: python3 -m pytest tests/lint/test_layer_rule.py
"""
import re
import sys
import unittest
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "pylib"))
from cpp_lexer import lex  # noqa: E402

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
