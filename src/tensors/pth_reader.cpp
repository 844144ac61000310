#include "tensors/pth_reader.hpp"

#include <cstring>
#include <map>
#include <optional>

#include "core/error.hpp"
#include "files/file_io.hpp"
#include "tensors/pickle_vm.hpp"
#include "tensors/zip_reader.hpp"

namespace vitattn::tensors {
namespace {

using pickle::Kind;
using pickle::Unpickled;
using pickle::Value;

struct Storage {
  std::span<const std::uint8_t> bytes;
  DType dtype;
};

std::optional<std::uint64_t> mul(std::uint64_t a, std::uint64_t b) {
  std::uint64_t r = 0;
  if (__builtin_mul_overflow(a, b, &r)) return std::nullopt;
  return r;
}

bool is_float(DType t) { return t == DType::F32 || t == DType::F16 || t == DType::BF16 || t == DType::F64; }

// "<dir>/data.pkl": torch names <dir> after the file ("archive" since 1.13); data/ sits beside it.
std::string archive_dir(const std::vector<ZipEntry>& entries, const std::string& source) {
  std::string dir;
  int found = 0;
  for (const auto& e : entries) {
    if (!e.name.ends_with("data.pkl")) continue;
    const std::string d = e.name.substr(0, e.name.size() - 8);
    if (!d.empty() && (d.back() != '/' || d.find('/') != d.size() - 1)) continue;
    dir = d;
    ++found;
  }
  if (found != 1)
    throw Error(source + ": " + (found ? "several data.pkl entries" : "no data.pkl entry") +
                " in the zip (not a file written by torch.save?)");
  return dir;
}

const ZipEntry* find_entry(const std::vector<ZipEntry>& entries, const std::string& name) {
  for (const auto& e : entries)
    if (e.name == name) return &e;
  return nullptr;
}

// The storage behind a tensor: its zip entry must hold exactly numel elements of its type.
Storage storage_of(const Value& s, const std::vector<ZipEntry>& entries, const std::string& dir,
                   const std::string& source) {
  const std::string name = dir + "data/" + s.text;
  const ZipEntry* e = find_entry(entries, name);
  if (!e) throw Error(source + ": storage " + files::printable(s.text) + " has no zip entry " + files::printable(name));
  const auto bytes = mul(s.numel, dtype_size(s.dtype));
  if (!bytes || *bytes != e->data.size())
    throw Error(source + ": storage " + files::printable(s.text) + " declares " + std::to_string(s.numel) + " " +
                dtype_name(s.dtype) + " elements but its zip entry holds " + std::to_string(e->data.size()) + " bytes");
  return {e->data, s.dtype};
}

// Elements of a shape, or nullopt past 64 bits.
std::optional<std::uint64_t> element_count(const std::vector<std::uint64_t>& sizes) {
  std::uint64_t n = 1;
  for (auto d : sizes)
    if (__builtin_mul_overflow(n, d, &n)) return std::nullopt;
  return n;
}

// The view must stay inside its storage: its last element, offset + Σ (size_i − 1)·stride_i,
// is one of the storage's. Returns the view's size in bytes.
std::uint64_t check_view(const Value& t, const Storage& s, const std::string& what) {
  const std::size_t es = dtype_size(s.dtype);
  const auto numel = element_count(t.sizes);
  const auto n_bytes = numel ? mul(*numel, es) : std::nullopt;
  if (!n_bytes) throw Error(what + ": shape " + shape_string(t.sizes) + " is too large");
  if (*numel == 0) return 0;
  std::uint64_t last = t.offset;
  for (std::size_t i = 0; i < t.sizes.size(); ++i) {
    const auto step = mul(t.sizes[i] - 1, t.strides[i]);
    if (!step || __builtin_add_overflow(last, *step, &last))
      throw Error(what + ": strides " + shape_string(t.strides) + " reach past any storage");
  }
  if (last >= s.bytes.size() / es)
    throw Error(what + ": view (offset " + std::to_string(t.offset) + ", shape " + shape_string(t.sizes) +
                ", strides " + shape_string(t.strides) + ") reaches element " + std::to_string(last) +
                " of a storage of " + std::to_string(s.bytes.size() / es));
  return *n_bytes;
}

// Copies the view's elements in row-major order to `dst` (check_view first): a transposed or
// sliced tensor is saved as the view over its whole storage, so follow offset and strides.
void gather(const Value& t, const Storage& s, std::uint8_t* dst, std::uint64_t numel) {
  const std::size_t es = dtype_size(s.dtype);
  const std::size_t rank = t.sizes.size();
  // Odometer over every index but the last; the last dimension is one run (memcpy when dense).
  const std::uint64_t inner = rank ? t.sizes[rank - 1] : 1;
  const std::uint64_t inner_stride = rank ? t.strides[rank - 1] : 1;
  std::vector<std::uint64_t> index(rank ? rank - 1 : 0, 0);
  for (std::uint64_t done = 0; done < numel; done += inner) {
    std::uint64_t base = t.offset;
    for (std::size_t i = 0; i < index.size(); ++i) base += index[i] * t.strides[i];
    const std::uint8_t* src = s.bytes.data() + base * es;
    if (inner_stride == 1) {
      std::memcpy(dst, src, static_cast<std::size_t>(inner * es));
      dst += inner * es;
    } else {
      for (std::uint64_t j = 0; j < inner; ++j, dst += es) std::memcpy(dst, src + j * inner_stride * es, es);
    }
    for (std::size_t i = index.size(); i-- > 0;) {
      if (++index[i] < t.sizes[i]) break;
      index[i] = 0;
    }
  }
}

const Value& state_dict(const Unpickled& u, const std::string& key, const std::string& source) {
  const Value& root = u.at(u.root);
  if (!key.empty()) {
    const Value* v = root.kind == Kind::dict ? u.lookup(root, key) : nullptr;
    if (!v || v->kind != Kind::dict) {
      std::string keys;
      if (root.kind == Kind::dict)
        for (std::size_t i = 0; i + 1 < root.items.size(); i += 2)
          if (u.at(root.items[i]).kind == Kind::string) keys += (keys.empty() ? "" : ", ") + files::printable(u.at(root.items[i]).text);
      throw Error(source + ": no dict under key " + files::printable(key) + (keys.empty() ? std::string() : " (the file has: " + keys + ")"));
    }
    return *v;
  }
  if (root.kind == Kind::dict)
    for (const char* k : kNestedStateKeys)
      if (const Value* v = u.lookup(root, k); v && v->kind == Kind::dict) return *v;
  if (root.kind != Kind::dict) throw Error(source + ": the pickled object is not a dict of tensors");
  return root;
}

}  // namespace

TensorFile parse_pth(const std::vector<std::uint8_t>& bytes, const std::string& source, const std::string& key) {
  if (bytes.size() >= 2 && bytes[0] == 0x80 && bytes[1] <= 5)
    throw Error(source + ": PyTorch's legacy format (before torch 1.6, a bare pickle); re-save it with torch.save "
                "from a newer torch or convert it with scripts/pth_to_safetensors.py");
  const std::vector<ZipEntry> entries = read_zip(bytes, source);
  const std::string dir = archive_dir(entries, source);
  const Unpickled u = pickle::unpickle(find_entry(entries, dir + "data.pkl")->data, source + ": data.pkl");
  const Value& dict = state_dict(u, key, source);

  // name → tensor, Python's dict semantics (a repeated key keeps the last value).
  std::map<std::string, const Value*> tensors;
  bool any = false;
  for (std::size_t i = 0; i + 1 < dict.items.size(); i += 2) {
    const Value& k = u.at(dict.items[i]);
    const Value& v = u.at(dict.items[i + 1]);
    if (k.kind != Kind::string || v.kind != Kind::tensor) continue;
    any = true;
    if (is_float(u.at(v.items[0]).dtype)) tensors[k.text] = &v;  // e.g. num_batches_tracked (I64) is left out
    else tensors.erase(k.text);
  }
  if (!any) throw Error(source + ": no tensors in " + (key.empty() ? std::string("the file") : "key " + files::printable(key)) +
                        " (its weights may sit under another key)");
  tensors = without_wrapper_prefixes(std::move(tensors), source);

  // Check every view, then gather them into one buffer laid out as a safetensors data section.
  // Views may repeat or expand a storage, so the total is capped by a multiple of the file's size.
  const std::uint64_t cap = 4 * static_cast<std::uint64_t>(bytes.size()) + (1u << 20);
  std::map<std::string, TensorInfo> infos;
  std::vector<Storage> storages;
  std::uint64_t total = 0;
  for (const auto& [name, t] : tensors) {
    const std::string what = source + ": tensor " + files::printable(name);
    const Value& s = u.at(t->items[0]);
    storages.push_back(storage_of(s, entries, dir, source));
    const std::uint64_t n = check_view(*t, storages.back(), what);
    if (n > cap - total)
      throw Error(what + ": " + shape_string(t->sizes) + " takes more memory than the file can explain (" +
                  std::to_string(n) + " bytes)");
    TensorInfo info;
    info.dtype = s.dtype;
    info.shape = t->sizes;
    info.begin = total;
    info.end = total += n;
    infos.emplace(name, std::move(info));
  }
  std::vector<std::uint8_t> data(static_cast<std::size_t>(total));
  std::size_t i = 0;
  for (const auto& [name, t] : tensors) {
    const TensorInfo& info = infos.at(name);
    gather(*t, storages[i++], data.data() + info.begin, info.element_count());
  }
  return TensorFile::from_memory(std::move(data), std::move(infos), {}, source);
}

TensorFile load_pth(const std::filesystem::path& path, const std::string& key) {
  return parse_pth(files::read_file(path), files::display(path), key);
}

}  // namespace vitattn::tensors
