#include "text/clip_text_clean.hpp"

#include <string>

#include "text/html_unescape.hpp"
#include "text/unicode_text.hpp"

namespace vitattn::text {

namespace {

std::u32string_view strip_python_space(std::u32string_view text) {
  while (!text.empty() && is_python_space(text.front())) text.remove_prefix(1);
  while (!text.empty() && is_python_space(text.back())) text.remove_suffix(1);
  return text;
}

// re.sub(r'\s+', ' ', text): each run of White_Space one space.
std::u32string collapse_white_space(std::u32string_view text) {
  std::u32string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size();) {
    if (!is_white_space(text[i])) {
      out.push_back(text[i++]);
      continue;
    }
    out.push_back(U' ');
    while (i < text.size() && is_white_space(text[i])) ++i;
  }
  return out;
}

}  // namespace

std::u32string clip_clean(std::u32string_view text) {
  const std::u32string unescaped = html_unescape(html_unescape(text));
  const std::u32string collapsed = collapse_white_space(strip_python_space(unescaped));
  return python_lower(strip_python_space(collapsed));
}

}  // namespace vitattn::text
