"""Python's html.unescape cut to the named references vitattn's CLIP tokeniser decodes
(src/text/html_unescape.hpp): what the tokeniser tests and the fixture script compare with,
so that a text holding another named reference is known to be outside what vitattn decodes."""
import html

# The named references vitattn decodes, as html.entities names them.
DECODED_NAMES = {"amp", "AMP", "lt", "LT", "gt", "GT", "quot", "QUOT", "nbsp", "apos"}


def unescape_with_names(text, names=DECODED_NAMES):
    """html.unescape with its table of named references cut to `names` (numeric ones unchanged)."""
    full = html._html5
    html._html5 = {k: v for k, v in full.items() if k.rstrip(";") in names}
    try:
        return html.unescape(text)
    finally:
        html._html5 = full
