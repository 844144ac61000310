#include "token.hpp"

#include <openssl/rand.h>

#include <array>

#include "core/error.hpp"

namespace vitattn::serve {

std::string random_token() {
  std::array<unsigned char, 16> bytes{};
  if (RAND_bytes(bytes.data(), static_cast<int>(bytes.size())) != 1) throw Error("no random token: RAND_bytes failed");
  static const char* const kHex = "0123456789abcdef";
  std::string token;
  for (unsigned char b : bytes) {
    token += kHex[b >> 4];
    token += kHex[b & 15];
  }
  return token;
}

}  // namespace vitattn::serve
