#pragma once
// A random access token for a server on a non-loopback address started without one.
#include <string>

namespace vitattn::serve {

// 32 hex digits from OpenSSL's RAND_bytes (128 bits; libcrypto is already a dependency through
// the hub's sha256). Throws Error when the generator fails.
std::string random_token();

}  // namespace vitattn::serve
