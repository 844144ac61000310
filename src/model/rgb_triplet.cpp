#include "model/rgb_triplet.hpp"

#include <charconv>
#include <cmath>
#include <cstdio>

#include "core/error.hpp"
#include "files/file_io.hpp"

namespace vitattn::model {

std::array<float, 3> parse_rgb_triplet(const std::string& text, const std::string& what) {
  const auto bad = [&] { return Error(what + " is \"" + files::printable(text) + "\", expected three numbers \"r,g,b\""); };
  std::array<float, 3> out{};
  const char* p = text.data();
  const char* end = text.data() + text.size();
  for (std::size_t i = 0; i < 3; ++i) {
    while (p < end && *p == ' ') ++p;
    const auto [next, ec] = std::from_chars(p, end, out[i]);
    if (ec != std::errc() || !std::isfinite(out[i])) throw bad();
    p = next;
    while (p < end && *p == ' ') ++p;
    if (i < 2) {
      if (p == end || *p != ',') throw bad();
      ++p;
    }
  }
  if (p != end) throw bad();
  return out;
}

std::string format_rgb_triplet(const std::array<float, 3>& v) {
  std::string s;
  for (std::size_t i = 0; i < 3; ++i) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.9g", static_cast<double>(v[i]));  // round-trips a float exactly
    if (i) s += ',';
    s += buf;
  }
  return s;
}

}  // namespace vitattn::model
