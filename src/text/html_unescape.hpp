#pragma once
// Python's html.unescape (the step CLIP's basic_clean applies twice), for numeric character
// references in full and for a handful of named ones.
//
// Numeric: `&#DDD` and `&#xHHH` (`&#X`), the closing ';' optional, as Python reads them: the
// Windows-1252 reading of 0x80…0x9F, U+FFFD for 0, surrogates and values past U+10FFFF,
// nothing for the code points HTML forbids (controls, noncharacters), the character otherwise.
// Named: only &amp; &lt; &gt; &quot; (and their upper-case &AMP; &LT; &GT; &QUOT;), &nbsp;,
// each also without its ';' as HTML's legacy names are, and &apos; (';' required), with
// Python's longest-prefix rule ("&ampx" is "&x").
// Every other named reference (&copy;, &eacute;, …), which Python decodes from HTML5's table
// of 2,231 names, is left as it is written.
#include <string>
#include <string_view>

namespace vitattn::text {

std::u32string html_unescape(std::u32string_view text);

}  // namespace vitattn::text
