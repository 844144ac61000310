#include "lazy/lazy_library.hpp"

#include <dlfcn.h>

#include <map>
#include <mutex>
#include <string>

namespace vitattn::lazy {
namespace {

thread_local std::string t_why_not;

void* open_once(const char* soname) {
  static std::mutex mutex;
  static std::map<std::string, void*> handles;  // soname → handle (nullptr: failed, not retried)
  const std::lock_guard lock(mutex);
  const auto [it, added] = handles.try_emplace(soname, nullptr);
  if (added) it->second = ::dlopen(soname, RTLD_NOW | RTLD_LOCAL);
  return it->second;
}

}  // namespace

void* lazy_symbol(const char* soname, const char* symbol) {
  void* handle = open_once(soname);
  void* f = handle != nullptr ? ::dlsym(handle, symbol) : nullptr;
  if (f == nullptr) {
    const char* e = ::dlerror();
    t_why_not = std::string(soname) + ": " + (e != nullptr ? e : "cannot be loaded");
  }
  return f;
}

const char* lazy_why_not() { return t_why_not.c_str(); }

}  // namespace vitattn::lazy
