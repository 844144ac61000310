#include "files/file_kind.hpp"

#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <vector>

#include "core/error.hpp"
#include "files/file_io.hpp"

namespace vitattn::io {
namespace {

using Bytes = std::span<const std::uint8_t>;

bool starts_with(Bytes b, const char* magic, std::size_t n, std::size_t at = 0) {
  return b.size() >= at + n && std::memcmp(b.data() + at, magic, n) == 0;
}

struct Signature {
  const char* magic;
  std::size_t size;
  std::size_t at;
  const char* description;
};

// The formats a user is likely to point an output at by mistake: the images vitattn reads,
// its own outputs, and what sits next to models.
constexpr Signature kSignatures[] = {
    {"\x89PNG\r\n\x1a\n", 8, 0, "a PNG image"},
    {"\xff\xd8\xff", 3, 0, "a JPEG image"},
    {"GIF8", 4, 0, "a GIF image"},
    {"BM", 2, 0, "a BMP image"},
    {"WEBP", 4, 8, "a WebP image"},
    {"II*\0", 4, 0, "a TIFF image"},
    {"MM\0*", 4, 0, "a TIFF image"},
    {"\0\0\0\x0cjP  ", 8, 0, "a JPEG 2000 image"},
    {"\xff\x4f\xff\x51", 4, 0, "a JPEG 2000 image"},
    {"#?RADIANCE", 10, 0, "a Radiance HDR image"},
    {"\x59\xa6\x6a\x95", 4, 0, "a Sun raster image"},
    {"\x93NUMPY", 6, 0, "a NumPy .npy file"},
    {"PK\x03\x04", 4, 0, "a zip archive (a PyTorch .pth?)"},
    {"\x1f\x8b", 2, 0, "a gzip file"},
    {"%PDF", 4, 0, "a PDF document"},
    {"\x7f" "ELF", 4, 0, "an executable"},
};

bool is_safetensors(Bytes b, std::uint64_t file_size) {
  if (b.size() < 9) return false;
  std::uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = n << 8 | b[static_cast<std::size_t>(i)];
  return n >= 2 && n <= file_size - 8 && b[8] == '{';
}

bool is_pnm(Bytes b) {
  return b.size() >= 3 && b[0] == 'P' && ((b[1] >= '1' && b[1] <= '7') || b[1] == 'f' || b[1] == 'F') &&
         (b[2] == '\n' || b[2] == '\r' || b[2] == ' ' || b[2] == '\t');
}

}  // namespace

std::string describe_kind(Bytes head, std::uint64_t file_size) {
  if (file_size == 0) return "an empty file";
  if (is_safetensors(head, file_size)) return "a safetensors file";
  for (const Signature& s : kSignatures)
    if (starts_with(head, s.magic, s.size, s.at)) return s.description;
  if (is_pnm(head)) return "a PNM image";
  return {};
}

bool is_kind(FileKind kind, Bytes head, std::uint64_t file_size) {
  switch (kind) {
    case FileKind::png: return starts_with(head, kSignatures[0].magic, kSignatures[0].size);
    case FileKind::safetensors: return is_safetensors(head, file_size);
    case FileKind::json_lines: return !head.empty() && head[0] == '{';
    case FileKind::html: return std::string_view(reinterpret_cast<const char*>(head.data()), head.size()).starts_with("<!DOCTYPE html>");
  }
  return false;
}

void check_replaceable(const std::filesystem::path& path, FileKind kind, const std::string& role) {
  const std::string what = kind == FileKind::png           ? "a PNG image"
                           : kind == FileKind::safetensors ? "a safetensors file"
                           : kind == FileKind::html        ? "an HTML page"
                                                           : "a JSON Lines log";
  const auto refuse = [&](const std::string& detail) { return Error(Subject{role, display(path)}, detail); };
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    if (errno == ENOENT) return;  // a new file (or a dangling link, which the rename replaces)
    throw refuse(std::strerror(errno));
  }
  if (S_ISDIR(st.st_mode)) throw refuse("is a folder; give a file name");
  if (!S_ISREG(st.st_mode)) throw refuse("exists and is not a regular file; not replaced");
  if (st.st_size == 0) return;  // nothing to lose
  std::vector<std::uint8_t> head(16);
  std::ifstream in(path, std::ios::binary);
  in.read(reinterpret_cast<char*>(head.data()), static_cast<std::streamsize>(head.size()));
  head.resize(static_cast<std::size_t>(in.gcount()));
  if (!in && !in.eof()) throw refuse("cannot read it to see what it is; not replaced");
  const auto size = static_cast<std::uint64_t>(st.st_size);
  if (is_kind(kind, head, size)) return;
  const std::string is = describe_kind(head, size);
  throw refuse("exists and is " + (is.empty() ? "not " + what : is + ", not " + what) +
               "; not replaced (remove it or choose another name)");
}

}  // namespace vitattn::io
