// libcrypto's functions as vitattn calls them (hf_download.cpp: sha1/sha256 of blobs;
// report/html_page.cpp: base64), forwarding to libcrypto.so.3 loaded on the first call
// (lazy_library.hpp says why). Compiled with hidden visibility (CMakeLists.txt). When libcrypto
// cannot be loaded: no digest context (hf_download.cpp then refuses to check the file), and
// EVP_EncodeBlock throws Error.
#include <openssl/evp.h>

#include <string>

#include "core/error.hpp"
#include "lazy/lazy_library.hpp"

namespace {

template <typename F>
F crypto_fn(const char* name) {
  return reinterpret_cast<F>(vitattn::lazy::lazy_symbol("libcrypto.so.3", name));
}
#define VITATTN_CRYPTO(name) static const auto real = crypto_fn<decltype(&::name)>(#name)

}  // namespace

extern "C" {

EVP_MD_CTX* EVP_MD_CTX_new() {
  VITATTN_CRYPTO(EVP_MD_CTX_new);
  return real != nullptr ? real() : nullptr;
}

void EVP_MD_CTX_free(EVP_MD_CTX* ctx) {
  VITATTN_CRYPTO(EVP_MD_CTX_free);
  if (real != nullptr) real(ctx);
}

const EVP_MD* EVP_sha1() {
  VITATTN_CRYPTO(EVP_sha1);
  return real != nullptr ? real() : nullptr;
}

const EVP_MD* EVP_sha256() {
  VITATTN_CRYPTO(EVP_sha256);
  return real != nullptr ? real() : nullptr;
}

int EVP_DigestInit_ex(EVP_MD_CTX* ctx, const EVP_MD* md, ENGINE* engine) {
  VITATTN_CRYPTO(EVP_DigestInit_ex);
  return real != nullptr ? real(ctx, md, engine) : 0;
}

int EVP_DigestUpdate(EVP_MD_CTX* ctx, const void* d, size_t n) {
  VITATTN_CRYPTO(EVP_DigestUpdate);
  return real != nullptr ? real(ctx, d, n) : 0;
}

int EVP_DigestFinal_ex(EVP_MD_CTX* ctx, unsigned char* md, unsigned int* n) {
  VITATTN_CRYPTO(EVP_DigestFinal_ex);
  return real != nullptr ? real(ctx, md, n) : 0;
}

int EVP_EncodeBlock(unsigned char* t, const unsigned char* f, int n) {
  VITATTN_CRYPTO(EVP_EncodeBlock);
  if (real == nullptr) throw vitattn::Error(std::string("cannot encode base64: ") + vitattn::lazy::lazy_why_not());
  return real(t, f, n);
}

}  // extern "C"
