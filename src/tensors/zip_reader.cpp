#include "tensors/zip_reader.hpp"

#include <algorithm>
#include <set>

#include "core/error.hpp"
#include "files/file_io.hpp"

namespace vitattn::tensors {
namespace {

constexpr std::uint32_t kLocalHeader = 0x04034b50;
constexpr std::uint32_t kCentralHeader = 0x02014b50;
constexpr std::uint32_t kEndOfDirectory = 0x06054b50;
constexpr std::uint32_t kZip64End = 0x06064b50;
constexpr std::uint32_t kZip64Locator = 0x07064b50;
constexpr std::size_t kEndSize = 22, kLocatorSize = 20, kZip64EndSize = 56, kCentralSize = 46, kLocalSize = 30;

// Little-endian fields at a checked position.
class Cursor {
 public:
  Cursor(std::span<const std::uint8_t> bytes, const std::string& source) : b_(bytes), source_(source) {}

  bool fits(std::uint64_t pos, std::uint64_t n) const { return pos <= b_.size() && n <= b_.size() - pos; }
  std::uint64_t le(std::uint64_t pos, std::size_t n, const char* what) const {
    if (!fits(pos, n)) throw Error(source_ + ": " + what + " lies past the end of the file (truncated zip?)");
    std::uint64_t v = 0;
    for (std::size_t i = 0; i < n; ++i) v |= static_cast<std::uint64_t>(b_[pos + i]) << (8 * i);
    return v;
  }
  std::uint16_t u16(std::uint64_t pos, const char* what) const { return static_cast<std::uint16_t>(le(pos, 2, what)); }
  std::uint32_t u32(std::uint64_t pos, const char* what) const { return static_cast<std::uint32_t>(le(pos, 4, what)); }
  std::uint64_t u64(std::uint64_t pos, const char* what) const { return le(pos, 8, what); }
  std::uint64_t size() const { return b_.size(); }

 private:
  std::span<const std::uint8_t> b_;
  const std::string& source_;
};

struct Directory {
  std::uint64_t entries = 0;
  std::uint64_t offset = 0;  // of the central directory
  std::uint64_t size = 0;
  std::uint64_t end = 0;     // where the records after it begin (zip64 end or end record)
};

// The end record is the last 22 bytes plus a comment of up to 65535; search back for it.
std::uint64_t find_end_record(const Cursor& c, const std::string& source) {
  if (c.size() < kEndSize) throw Error(source + ": too short for a zip archive (" + std::to_string(c.size()) + " bytes)");
  const std::uint64_t lowest = c.size() > kEndSize + 0xFFFF ? c.size() - kEndSize - 0xFFFF : 0;
  for (std::uint64_t pos = c.size() - kEndSize + 1; pos-- > lowest;)
    if (c.u32(pos, "end record") == kEndOfDirectory && pos + kEndSize + c.u16(pos + 20, "end record") == c.size())
      return pos;
  throw Error(source + ": no zip end-of-central-directory record (not a zip archive, or truncated)");
}

Directory read_directory(const Cursor& c, const std::string& source) {
  const std::uint64_t eocd = find_end_record(c, source);
  if (c.u16(eocd + 4, "end record") != 0 || c.u16(eocd + 6, "end record") != 0)
    throw Error(source + ": zip archive spans several disks");
  Directory d;
  d.entries = c.u16(eocd + 10, "end record");
  d.size = c.u32(eocd + 12, "end record");
  d.offset = c.u32(eocd + 16, "end record");
  d.end = eocd;
  if (d.entries != 0xFFFF && d.size != 0xFFFFFFFF && d.offset != 0xFFFFFFFF) return d;

  // zip64: a locator right before the end record points at the zip64 end record.
  if (eocd < kLocatorSize || c.u32(eocd - kLocatorSize, "zip64 locator") != kZip64Locator)
    throw Error(source + ": zip end record says zip64 but there is no zip64 locator before it");
  const std::uint64_t z = c.u64(eocd - kLocatorSize + 8, "zip64 locator");
  if (!c.fits(z, kZip64EndSize) || z + kZip64EndSize > eocd - kLocatorSize || c.u32(z, "zip64 end record") != kZip64End)
    throw Error(source + ": zip64 end record at byte " + std::to_string(z) + " is not where the locator says");
  d.entries = c.u64(z + 32, "zip64 end record");
  d.size = c.u64(z + 40, "zip64 end record");
  d.offset = c.u64(z + 48, "zip64 end record");
  d.end = z;
  return d;
}

struct Sizes {
  std::uint64_t compressed, uncompressed, local_offset;
};

// Fields that are 0xFFFFFFFF in the central header are in the zip64 extra field (id 1),
// in this order, each 8 bytes; the extra must hold every one of them.
void read_zip64_extra(const Cursor& c, std::uint64_t extra, std::uint64_t extra_len, Sizes& s,
                      const std::string& entry) {
  std::vector<std::uint64_t*> wanted;
  for (std::uint64_t* f : {&s.uncompressed, &s.compressed, &s.local_offset})
    if (*f == 0xFFFFFFFF) wanted.push_back(f);
  if (wanted.empty()) return;
  for (std::uint64_t p = extra; p + 4 <= extra + extra_len;) {
    const std::uint16_t id = c.u16(p, "zip64 extra field");
    const std::uint16_t len = c.u16(p + 2, "zip64 extra field");
    if (p + 4 + len > extra + extra_len) break;
    if (id == 1) {
      if (len < 8 * wanted.size()) throw Error(entry + ": zip64 extra field is too short for the sizes it must hold");
      for (std::size_t i = 0; i < wanted.size(); ++i) *wanted[i] = c.u64(p + 4 + 8 * i, "zip64 extra field");
      return;
    }
    p += 4 + len;
  }
  throw Error(entry + ": sizes say zip64 but the entry has no zip64 extra field");
}

}  // namespace

std::vector<ZipEntry> read_zip(std::span<const std::uint8_t> bytes, const std::string& source) {
  const Cursor c(bytes, source);
  const Directory d = read_directory(c, source);
  if (d.offset > d.end || d.size > d.end - d.offset)
    throw Error(source + ": zip central directory (" + std::to_string(d.size) + " bytes at " +
                std::to_string(d.offset) + ") does not fit before its end record");
  if (d.entries > d.size / kCentralSize)
    throw Error(source + ": zip says " + std::to_string(d.entries) + " entries, more than its central directory holds");

  struct Placed {
    ZipEntry entry;
    std::uint64_t begin;  // local header
  };
  std::vector<Placed> placed;
  std::set<std::string> names;
  std::uint64_t pos = d.offset;
  for (std::uint64_t i = 0; i < d.entries; ++i) {
    if (pos + kCentralSize > d.offset + d.size || c.u32(pos, "central header") != kCentralHeader)
      throw Error(source + ": zip central directory entry " + std::to_string(i) + " is malformed");
    const std::uint16_t flags = c.u16(pos + 8, "central header");
    const std::uint16_t method = c.u16(pos + 10, "central header");
    Sizes s{c.u32(pos + 20, "central header"), c.u32(pos + 24, "central header"), c.u32(pos + 42, "central header")};
    const std::uint16_t name_len = c.u16(pos + 28, "central header");
    const std::uint16_t extra_len = c.u16(pos + 30, "central header");
    const std::uint16_t comment_len = c.u16(pos + 32, "central header");
    const std::uint64_t next = pos + kCentralSize + name_len + extra_len + comment_len;
    if (next > d.offset + d.size) throw Error(source + ": zip central directory entry " + std::to_string(i) + " runs past the directory");
    const auto* name_bytes = bytes.data() + pos + kCentralSize;
    std::string name(reinterpret_cast<const char*>(name_bytes), name_len);
    const std::string entry = source + ": zip entry " + files::printable(name);
    if (flags & 0x1) throw Error(entry + " is encrypted");
    if (method != 0) throw Error(entry + " is compressed (method " + std::to_string(method) + "); torch.save stores entries uncompressed");
    read_zip64_extra(c, pos + kCentralSize + name_len, extra_len, s, entry);
    if (s.compressed != s.uncompressed)
      throw Error(entry + " is stored but its sizes differ (" + std::to_string(s.compressed) + " and " + std::to_string(s.uncompressed) + ")");
    if (!names.insert(name).second) throw Error(entry + " appears twice");

    // The local header repeats the name; its own extra field may differ in length (torch pads
    // it so that data starts 64-byte aligned).
    const std::uint64_t lh = s.local_offset;
    if (!c.fits(lh, kLocalSize) || c.u32(lh, "local header") != kLocalHeader)
      throw Error(entry + ": no local header at byte " + std::to_string(lh));
    const std::uint64_t data = lh + kLocalSize + c.u16(lh + 26, "local header") + c.u16(lh + 28, "local header");
    if (data > d.offset || s.compressed > d.offset - data)
      throw Error(entry + ": data (" + std::to_string(s.compressed) + " bytes at " + std::to_string(data) +
                  ") runs past the entries into the central directory or out of the file");
    if (c.u16(lh + 26, "local header") != name_len ||  // in the file: data ≤ the directory's offset
        !std::equal(name_bytes, name_bytes + name_len, bytes.data() + lh + kLocalSize))
      throw Error(entry + ": local header names another file");
    placed.push_back({{std::move(name), bytes.subspan(data, s.compressed)}, lh});
    pos = next;
  }

  // Entries must not share bytes: sorted by local header, each ends before the next begins.
  std::sort(placed.begin(), placed.end(), [](const Placed& a, const Placed& b) { return a.begin < b.begin; });
  for (std::size_t i = 1; i < placed.size(); ++i) {
    const auto& prev = placed[i - 1];
    const std::uint64_t prev_end = static_cast<std::uint64_t>(prev.entry.data.data() - bytes.data()) + prev.entry.data.size();
    if (placed[i].begin < prev_end)
      throw Error(source + ": zip entries " + files::printable(prev.entry.name) + " and " + files::printable(placed[i].entry.name) + " overlap");
  }
  std::vector<ZipEntry> out;
  out.reserve(placed.size());
  for (auto& p : placed) out.push_back(std::move(p.entry));
  return out;
}

}  // namespace vitattn::tensors
