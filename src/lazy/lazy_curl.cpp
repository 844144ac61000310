// libcurl's functions as vitattn calls them (hf_download.cpp), forwarding to libcurl.so.4 loaded
// on the first call (lazy_library.hpp says why). Compiled with hidden visibility
// (CMakeLists.txt). When libcurl cannot be loaded: curl_global_init fails (hf_download.cpp then
// says "cannot initialise libcurl"), curl_easy_init gives no session.
#include <curl/curl.h>

#include <cstdarg>

#include "lazy/lazy_library.hpp"

namespace {

template <typename F>
F curl_fn(const char* name) {
  return reinterpret_cast<F>(vitattn::lazy::lazy_symbol("libcurl.so.4", name));
}
#define VITATTN_CURL(name) static const auto real = curl_fn<decltype(&::name)>(#name)

}  // namespace

// curl.h may define these two as type-checking macros.
#undef curl_easy_setopt
#undef curl_easy_getinfo

// curl.h declares the option and info before the "..." as enums, whose promotion clang warns
// about in va_start; libcurl's own definitions do the same (an int-sized enum: no change).
#pragma GCC diagnostic ignored "-Wvarargs"

extern "C" {

CURLcode curl_global_init(long flags) {
  VITATTN_CURL(curl_global_init);
  return real != nullptr ? real(flags) : CURLE_FAILED_INIT;
}

CURL* curl_easy_init() {
  VITATTN_CURL(curl_easy_init);
  return real != nullptr ? real() : nullptr;
}

void curl_easy_cleanup(CURL* c) {
  VITATTN_CURL(curl_easy_cleanup);
  if (real != nullptr) real(c);  // a CURL* exists only if libcurl was loaded
}

// The one argument after the option is a long, a pointer (object, function, blob) or a
// curl_off_t, by the option's number range, as libcurl's own curl_easy_setopt reads it.
CURLcode curl_easy_setopt(CURL* c, CURLoption option, ...) {
  VITATTN_CURL(curl_easy_setopt);
  if (real == nullptr) return CURLE_FAILED_INIT;
  std::va_list ap;
  va_start(ap, option);
  CURLcode rc;
  if (option < CURLOPTTYPE_OBJECTPOINT)
    rc = real(c, option, va_arg(ap, long));
  else if (option < CURLOPTTYPE_OFF_T)
    rc = real(c, option, va_arg(ap, void*));
  else if (option < CURLOPTTYPE_BLOB)
    rc = real(c, option, va_arg(ap, curl_off_t));
  else
    rc = real(c, option, va_arg(ap, void*));
  va_end(ap);
  return rc;
}

// Every CURLINFO vitattn asks for is answered through a pointer.
CURLcode curl_easy_getinfo(CURL* c, CURLINFO info, ...) {
  VITATTN_CURL(curl_easy_getinfo);
  if (real == nullptr) return CURLE_FAILED_INIT;
  std::va_list ap;
  va_start(ap, info);
  const CURLcode rc = real(c, info, va_arg(ap, void*));
  va_end(ap);
  return rc;
}

CURLcode curl_easy_perform(CURL* c) {
  VITATTN_CURL(curl_easy_perform);
  return real != nullptr ? real(c) : CURLE_FAILED_INIT;
}

const char* curl_easy_strerror(CURLcode rc) {
  VITATTN_CURL(curl_easy_strerror);
  return real != nullptr ? real(rc) : vitattn::lazy::lazy_why_not();
}

char* curl_easy_escape(CURL* c, const char* s, int n) {
  VITATTN_CURL(curl_easy_escape);
  return real != nullptr ? real(c, s, n) : nullptr;
}

void curl_free(void* p) {
  VITATTN_CURL(curl_free);
  if (real != nullptr) real(p);
}

curl_slist* curl_slist_append(curl_slist* list, const char* s) {
  VITATTN_CURL(curl_slist_append);
  return real != nullptr ? real(list, s) : nullptr;
}

void curl_slist_free_all(curl_slist* list) {
  VITATTN_CURL(curl_slist_free_all);
  if (real != nullptr) real(list);
}

}  // extern "C"
