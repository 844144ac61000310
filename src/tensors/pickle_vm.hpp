#pragma once
// A pickle reader for the data that torch.save writes (protocol 2), and nothing else. It
// never calls anything: the few globals it knows are turned into inert values (a dict, a
// tensor description, a storage reference, a namespace of plain data); any other global is
// refused by name as soon as the pickle mentions it.
//
// Values live in one arena and refer to each other by index, so the memo can share them and
// a pickle that makes a list contain itself builds a cycle of indices, not of owners.
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "tensors/safetensors.hpp"  // DType

namespace vitattn::tensors::pickle {

using Id = std::uint32_t;

enum class Kind { none, boolean, integer, real, string, tuple, list, dict, global, storage, tensor, namespace_ };

// The globals that may appear: collections.OrderedDict, torch._utils._rebuild_tensor_v2,
// argparse.Namespace and torch.<Type>Storage.
enum class Global { ordered_dict, rebuild_tensor, namespace_, storage_type };

struct Value {
  Kind kind = Kind::none;
  bool boolean = false;
  std::int64_t integer = 0;
  double real = 0;
  std::string text;          // string; storage: its key (the zip entry data/<key>)
  std::vector<Id> items;     // tuple, list; dict and namespace: key, value, key, value, …
  Global global = Global::ordered_dict;
  DType dtype = DType::F32;  // storage type and storage
  std::uint64_t numel = 0;   // storage: elements
  // tensor: items[0] is the storage; offset, sizes and strides count elements
  std::uint64_t offset = 0;
  std::vector<std::uint64_t> sizes, strides;
};

struct Unpickled {
  std::vector<Value> values;
  Id root = 0;
  const Value& at(Id id) const { return values[id]; }
  // The value under a string key of a dict (the last one, as Python keeps), or nullptr.
  const Value* lookup(const Value& dict, const std::string& key) const;
};

inline constexpr std::size_t kMaxValues = 4'000'000;  // a ViT-g state dict builds ~50k
inline constexpr std::size_t kMaxRank = 16;

// Runs `pickle` (the bytes of data.pkl). Throws Error "SOURCE: …" naming the offending
// global, opcode or malformed part; `source` is the file name plus the entry.
Unpickled unpickle(std::span<const std::uint8_t> pickle, const std::string& source);

}  // namespace vitattn::tensors::pickle
