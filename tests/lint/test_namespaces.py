#!/usr/bin/env python3
"""One namespace per library: every file of src/<folder> declares only its folder's namespace
(and namespaces nested in it), as the table below says, and no two folders share a namespace.

A qualified name then says which library it comes from, and so which target a file must link
for it (docs/architecture.md). A new folder of src/ needs a row here. Anonymous namespaces,
namespace aliases (`namespace fs = std::filesystem;`) and forward declarations of other
libraries' namespaces (`namespace cv { class Mat; }`, or another folder's
`namespace vitattn::files { class MappedFile; }`) are not declarations of the folder's own
names and are allowed.

Needs only python3 and pytest. Run: python3 -m pytest tests/lint/test_namespaces.py
"""
import re
import sys
import unittest
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tests" / "pylib"))
from cpp_lexer import lex  # noqa: E402

NAMESPACES = {
    "cli": "vitattn::cli",
    "core": "vitattn",
    "files": "vitattn::files",
    "hub": "vitattn::hub",
    "image": "vitattn::image",
    "lazy": "vitattn::lazy",
    "model": "vitattn::model",
    "pipeline": "vitattn::pipeline",
    "report": "vitattn::report",
    "serve": "vitattn::serve",
    "tensors": "vitattn::tensors",
    "text": "vitattn::text",
    "video": "vitattn::video",
}
# Other libraries' namespaces a file may open to forward-declare or specialise their names.
FOREIGN = {"cv", "std", "fmt", "nlohmann", "Eigen", "testing", "CLI"}


def opened_namespaces(text):
    """The fully qualified name of every named namespace `text` opens, nesting followed."""
    code, _ = lex(text)
    found, stack, depth = [], [], 0
    pos = 0
    for m in re.finditer(r"\bnamespace\s+((?:\w+\s*::\s*)*\w+)?\s*\{|[{}]", code):
        if m.group(0) == "{":
            depth += 1
        elif m.group(0) == "}":
            depth -= 1
            while stack and stack[-1][0] > depth:
                stack.pop()
        else:
            depth += 1
            name = re.sub(r"\s+", "", m.group(1) or "")
            outer = stack[-1][1] if stack else ""
            full = f"{outer}::{name}" if outer and name else (name or outer)
            stack.append((depth, full))
            if name and not only_forward_declarations(code, m.end()):
                found.append((code.count("\n", 0, m.start()) + 1, full))
    return found


def only_forward_declarations(code, start):
    """True when the namespace body from `start` (after its '{') only forward-declares classes
    (`class MappedFile;`): another library's class named, not declared."""
    depth, i = 1, start
    while depth and i < len(code):
        depth += {"{": 1, "}": -1}.get(code[i], 0)
        i += 1
    return re.fullmatch(r"\s*(?:(?:class|struct)\s+\w+\s*;\s*)+", code[start:i - 1]) is not None


def allowed(namespace, own):
    """`own` or a namespace nested in it, or another library's (FOREIGN). For src/core
    (`vitattn`) a nested namespace must not be another folder's."""
    if namespace.split("::")[0] in FOREIGN:
        return True
    if own == "vitattn":
        others = {ns for ns in NAMESPACES.values() if ns != own}
        return namespace == own or (namespace.startswith(own + "::") and
                                    not any(namespace == o or namespace.startswith(o + "::") for o in others))
    return namespace == own or namespace.startswith(own + "::")


class Namespaces(unittest.TestCase):
    def test_every_folder_has_a_row(self):
        folders = {p.name for p in (REPO / "src").iterdir() if p.is_dir()}
        self.assertEqual(sorted(folders - NAMESPACES.keys()), [], "folders of src/ without a namespace here")
        self.assertEqual(sorted(NAMESPACES.keys() - folders), [], "rows naming no folder of src/")

    def test_no_two_folders_share_a_namespace(self):
        seen = {}
        for folder, ns in NAMESPACES.items():
            self.assertNotIn(ns, seen, f"src/{folder} and src/{seen.get(ns)} share {ns}")
            seen[ns] = folder

    def test_files_declare_their_folders_namespace(self):
        wrong = []
        for folder, own in NAMESPACES.items():
            for path in sorted((REPO / "src" / folder).rglob("*")):
                if path.suffix not in (".cpp", ".hpp", ".h", ".in") or not path.is_file():
                    continue
                for line, ns in opened_namespaces(path.read_text()):
                    if not allowed(ns, own):
                        wrong.append(f"{path.relative_to(REPO)}:{line}: namespace {ns} (src/{folder} is {own})")
        self.assertEqual(wrong, [], "\n".join(wrong))

    def test_opening_is_read_through_nesting(self):
        # the check itself: nested openings are qualified by what encloses them
        text = "namespace vitattn::image {\nnamespace roles {\n}\nnamespace {\n}\n}  // x\nnamespace cv { class Mat; }\n"
        self.assertEqual(opened_namespaces(text), [(1, "vitattn::image"), (2, "vitattn::image::roles")])
        self.assertEqual(opened_namespaces("namespace vitattn::files {\nint read();\n}\n"), [(1, "vitattn::files")])


if __name__ == "__main__":
    unittest.main()
