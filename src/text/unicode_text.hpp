#pragma once
// UTF-8 to code points and back, and the few character classes CLIP's tokeniser needs, taken
// from utf8proc's Unicode data (its general categories and simple case mappings) rather than
// from tables of our own. Each class says which Python behaviour it stands for.
#include <string>
#include <string_view>

namespace vitattn::text {

// The code points of `utf8`. Invalid UTF-8 (a stray byte, an overlong form, a surrogate) is a
// vitattn::Error naming `what` ("text \"…\"") and the byte offset.
std::u32string decode_utf8(std::string_view utf8, std::string_view what);
std::string encode_utf8(std::u32string_view text);
void append_utf8(std::string& out, char32_t c);

bool is_letter(char32_t c);  // \p{L}: general category Lu, Ll, Lt, Lm or Lo
bool is_number(char32_t c);  // \p{N}: Nd, Nl or No
// The regex module's \s: the White_Space property, which is categories Zs, Zl, Zp and the
// controls U+0009…U+000D and U+0085.
bool is_white_space(char32_t c);
// Python's str.isspace (what str.strip() removes): is_white_space and U+001C…U+001F.
bool is_python_space(char32_t c);

// Python's str.lower(): each code point's simple lower-case mapping, U+0130 (İ) to "i̇" (its
// one unconditional multi-code-point mapping), and capital sigma to final sigma (ς) where
// Unicode's Final_Sigma context holds (after a cased letter, not before one, case-ignorable
// characters skipped). "Cased" is a letter of category Lu, Ll or Lt or one with a case
// mapping; "case-ignorable" is Mn, Me, Cf, Lm, Sk and the apostrophes, full stops and colons
// of Word_Break MidLetter/MidNumLet: the properties Python reads, as utf8proc gives them.
std::u32string python_lower(std::u32string_view text);

// Python's str.lower() applied to each character alone (HF SiglipTokenizer lower-cases the
// text one character at a time): as python_lower, but a capital sigma is never final.
std::u32string python_lower_each(std::u32string_view text);

}  // namespace vitattn::text
