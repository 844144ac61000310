#pragma once
// libcurl and libcrypto loaded on first use instead of at every start. Linked, they and what they
// pull in (GnuTLS, Kerberos, LDAP, …: about 30 libraries) cost every start of vitattn their mapping
// and relocation in the dynamic loader (docs/performance.md, start-up), though only a hub download
// or a sha256 check (hub) and the report's base64 (report) call them. lazy_curl.cpp and
// lazy_crypto.cpp define the few functions vitattn calls, with hidden visibility (never seen by any
// other library in the process: GDAL in the codec module has its own libcurl), each forwarding to
// the library's own, found by dlopen of its run-time name and dlsym on the first call.
namespace vitattn::lazy {

// The address of `symbol` in the shared library `soname` (dlopen'ed once, never closed), or
// nullptr when the library or the symbol cannot be loaded (why_not then says why).
void* lazy_symbol(const char* soname, const char* symbol);

// Why the last lazy_symbol returned nullptr on this thread ("libcurl.so.4: cannot open …").
const char* lazy_why_not();

}  // namespace vitattn::lazy
