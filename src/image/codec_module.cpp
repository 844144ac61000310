#include "image/codec_module.hpp"

#include <string>

#include "core/error.hpp"
#include "files/companion.hpp"

namespace vitattn::image {
namespace {

struct Loaded {
  const codec_abi::Table* table = nullptr;
  std::string why_not;  // when table is null
};

Loaded checked(const codec_abi::Table* table, const std::string& where) {
  std::string why_not = files::module_version_mismatch(where, table != nullptr ? &table->version : nullptr, codec_abi::kVersion);
  if (!why_not.empty()) return {nullptr, std::move(why_not)};
  return {table, ""};
}

Loaded load() {
  if (&vitattn_codec_module != nullptr) return checked(vitattn_codec_module(), "the linked codec module");
  const files::LoadedModule module = files::load_module(files::companion_candidates(codec_abi::kFileName), codec_abi::kEntryPoint);
  if (module.entry == nullptr) return {nullptr, module.why_not};
  using Entry = const codec_abi::Table* (*)();
  return checked(reinterpret_cast<Entry>(module.entry)(), module.path);
}

}  // namespace

const codec_abi::Table& codec_module(const std::string& source) {
  static const Loaded loaded = load();  // once, thread-safe
  if (loaded.table == nullptr)
    throw Error(source + ": decoding and encoding of this format is not available: " + loaded.why_not);
  return *loaded.table;
}

}  // namespace vitattn::image
