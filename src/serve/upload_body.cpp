#include "upload_body.hpp"

#include "access.hpp"

namespace vitattn::serve {

int read_body(const ChunkSource& source, std::uint64_t max, std::chrono::steady_clock::time_point deadline,
              std::vector<std::uint8_t>& body) {
  int refusal = 0;
  const bool read = source([&](const char* data, std::size_t n) {
    if (over_upload_limit(body.size() + n, max)) refusal = 413;
    else if (std::chrono::steady_clock::now() > deadline) refusal = 408;
    if (refusal) return false;
    body.insert(body.end(), data, data + n);
    return true;
  });
  if (!read && refusal == 0) refusal = 400;  // cut short: the connection ended or a read timed out
  return refusal;
}

}  // namespace vitattn::serve
