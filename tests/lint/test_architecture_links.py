#!/usr/bin/env python3
"""docs/architecture.md's link table against the CMake files it describes.

The project's targets are those src/**/CMakeLists.txt declare (add_library, add_executable);
what each links among them is read from every target_link_libraries there, with its
visibility (a name after PRIVATE is a private link; after PUBLIC or INTERFACE, or with no
keyword, a public one: it carries on to whatever links the target). vitattn_warnings (the
compile flags, cmake/Warnings.cmake) and the outside libraries (OpenCV, fmt, …) are not the
project's targets and are not compared.

The table is the one whose header begins `| target`. Each row's first cell names its target
first, in backticks; its third cell names every project target the target links, each in
backticks, a private one followed by "(private)", and none else ("—" for no link). The test
fails when a project target has no row or two, a row names no project target, or a row's
links are not exactly the CMake files' (a link missing, one too many, or the wrong
visibility).

Needs only python3 and pytest. Run: python3 -m pytest tests/lint/test_architecture_links.py
"""
import re
import unittest
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
DOC = REPO / "docs" / "architecture.md"
VISIBILITY = {"PUBLIC": "public", "INTERFACE": "public", "LINK_PUBLIC": "public", "PRIVATE": "private",
              "LINK_PRIVATE": "private"}


def without_comments(text):
    """CMake text with each line's comment (an unquoted # to the end of the line) removed."""
    out = []
    for line in text.splitlines():
        quoted = False
        for i, c in enumerate(line):
            if c == '"':
                quoted = not quoted
            elif c == "#" and not quoted:
                line = line[:i]
                break
        out.append(line)
    return "\n".join(out)


def commands(text, name):
    """The argument lists of every call of command `name` in CMake `text`, as lists of words."""
    text = without_comments(text)
    found = []
    for m in re.finditer(rf"(?<![\w-]){name}\s*\(", text, re.IGNORECASE):
        depth, i = 1, m.end()
        while depth and i < len(text):
            depth += {"(": 1, ")": -1}.get(text[i], 0)
            i += 1
        assert depth == 0, f"unbalanced parentheses after {name}( at offset {m.start()}"
        found.append([w.strip('"') for w in text[m.end():i - 1].split()])
    return found


def cmake_links(cmake_texts):
    """({target}, {target: {(linked target, "public" | "private")}}) of the project's targets."""
    targets = set()
    for text in cmake_texts:
        for kind in ("add_library", "add_executable"):
            targets.update(args[0] for args in commands(text, kind))
    links = {t: set() for t in targets}
    for text in cmake_texts:
        for args in commands(text, "target_link_libraries"):
            if args[0] not in targets:
                continue
            visibility = "public"
            for word in args[1:]:
                if word in VISIBILITY:
                    visibility = VISIBILITY[word]
                elif word in targets:
                    links[args[0]].add((word, visibility))
    return targets, links


def table_rows(markdown):
    """The cells of each row of the table whose header's first cell begins with "target"."""
    rows, inside = [], False
    for line in markdown.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")] if line.startswith("|") else None
        if cells is None:
            if inside:
                break
            continue
        if not inside:
            inside = cells[0].lower().startswith("target")
            continue
        if not set(cells[0]) <= set("-: "):  # not the |---|---| line
            rows.append(cells)
    return rows


def doc_links(markdown, targets):
    """{target: [{(linked target, visibility)} per row naming it]} from the table; rows naming
    no project target under the key None."""
    out = {}
    for cells in table_rows(markdown):
        named = [t for t in re.findall(r"`([^`]+)`", cells[0]) if t in targets]
        target = named[0] if named else None
        linked = {(t, "private" if private else "public")
                  for t, private in re.findall(r"`([^`]+)`(\s*\(private\))?", cells[2]) if t in targets}
        out.setdefault(target, []).append(linked)
    return out


def differences(targets, links, documented):
    """One line per disagreement between the CMake files and the table."""
    lines = []
    if None in documented:
        lines.append(f"{len(documented[None])} row(s) name no target of src/**/CMakeLists.txt")
    for t in sorted(targets):
        rows = documented.get(t, [])
        if len(rows) != 1:
            lines.append(f"{t}: {len(rows)} rows in the table, expected one")
            continue
        show = lambda s: ", ".join(f"{n}{' (private)' if v == 'private' else ''}" for n, v in sorted(s)) or "none"  # noqa: E731
        if rows[0] != links[t]:
            lines.append(f"{t}: the table says it links {show(rows[0])}; its CMakeLists.txt: {show(links[t])}")
    return lines


class ArchitectureLinks(unittest.TestCase):
    maxDiff = None

    def test_the_link_table_is_what_the_cmake_files_link(self):
        texts = [p.read_text() for p in sorted((REPO / "src").rglob("CMakeLists.txt"))]
        targets, links = cmake_links(texts)
        # The parse found the project, not nothing: a table with no rows would agree with that.
        self.assertIn(("vitattn_model", "public"), links["vitattn_pipeline"])
        self.assertIn(("vitattn_serve", "private"), links["vitattn_cli_serve"])
        self.assertGreaterEqual(len(targets), 15)
        problems = differences(targets, links, doc_links(DOC.read_text(), targets))
        self.assertEqual(problems, [], "docs/architecture.md's link table against src/**/CMakeLists.txt:\n" +
                         "\n".join(problems))

    def test_the_cmake_reading(self):
        text = """
add_library(a STATIC a.cpp)   # add_library(not_a_target) in a comment
add_library(b STATIC b.cpp "x#y.cpp")
add_executable(app main.cpp)
target_link_libraries(b
  PUBLIC a $<TARGET_PROPERTY:a,INTERFACE_INCLUDE_DIRECTORIES> fmt::fmt  # target_link_libraries(b PUBLIC app)
  PRIVATE vitattn_warnings)
target_link_libraries(app PRIVATE b)
target_link_libraries(app a)
"""
        targets, links = cmake_links([text])
        self.assertEqual(targets, {"a", "b", "app"})
        self.assertEqual(links, {"a": set(), "b": {("a", "public")}, "app": {("b", "private"), ("a", "public")}})

    def test_the_table_reading(self):
        doc = """
| folder (target) | holds | may link |
| --- | --- | --- |
| `x` | … | `a` |

| target | holds | links | others |
| --- | --- | --- | --- |
| `b` (`src/b/`) | what `a` does not | `a`, `c` (private) | fmt |
| `a` | the base | — | Eigen |
| `zz` | gone | `a` | |

after
"""
        got = doc_links(doc, {"a", "b", "c"})
        self.assertEqual(got, {"b": [{("a", "public"), ("c", "private")}], "a": [set()], None: [{("a", "public")}]})
        lines = differences({"a", "b", "c"}, {"a": set(), "b": {("a", "public"), ("c", "public")}, "c": set()}, got)
        self.assertEqual(len(lines), 3, lines)  # zz, b's visibility of c, c without a row


if __name__ == "__main__":
    unittest.main()
