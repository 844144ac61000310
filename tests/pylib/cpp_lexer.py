"""A small C++ lexer for the source lints (tests/lint): it tells code, comments, string
literals (raw ones too) and character literals apart, so that a lint can read one and not
the others."""
import re


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
