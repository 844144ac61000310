#include "files/file_kind.hpp"

#include <sys/stat.h>

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <string_view>
#include <vector>

#include "core/error.hpp"
#include "files/file_io.hpp"

namespace vitattn::files {
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

std::string_view text_of(Bytes b) { return {reinterpret_cast<const char*>(b.data()), b.size()}; }

// An HTML page as browsers sniff one: after a UTF-8 byte order mark and white space, "<!DOCTYPE
// html" or "<html" in any case.
bool is_html(Bytes b) {
  std::string_view text = text_of(b);
  if (text.starts_with("\xef\xbb\xbf")) text.remove_prefix(3);
  text.remove_prefix(std::min(text.size(), text.find_first_not_of(" \t\r\n\f")));
  const auto starts = [&](std::string_view tag) {
    if (text.size() < tag.size()) return false;
    for (std::size_t i = 0; i < tag.size(); ++i)
      if (std::tolower(static_cast<unsigned char>(text[i])) != tag[i]) return false;
    return true;
  };
  return starts("<!doctype html") || starts("<html");
}

// The start of page_generator_tag() that every vitattn version writes: its version may differ.
constexpr std::string_view kGeneratorMark = "<meta name=\"generator\" content=\"vitattn";

bool is_vitattn_page(Bytes b) {
  return is_html(b) && text_of(b.first(std::min(b.size(), kPageMarkWithin))).find(kGeneratorMark) != std::string_view::npos;
}

const char* kind_name(FileKind kind) {
  switch (kind) {
    case FileKind::png: return "a PNG image";
    case FileKind::safetensors: return "a safetensors file";
    case FileKind::json_lines: return "a JSON Lines log";
    case FileKind::vitattn_page: return "a page vitattn wrote";
  }
  return "?";
}

// What a file that is not of `kind` is: "is a JPEG image, not a PNG image", "is not a JSON Lines
// log", and for a page the one finding that matters: an HTML page, but not vitattn's.
std::string found_instead(FileKind kind, Bytes head, std::uint64_t file_size) {
  if (kind == FileKind::vitattn_page && is_html(head))
    return fmt::format("is an HTML page that vitattn did not write (no {}…\"> in it)", kGeneratorMark);
  const std::string is = describe_kind(head, file_size);
  return is.empty() ? fmt::format("is not {}", kind_name(kind)) : fmt::format("is {}, not {}", is, kind_name(kind));
}

}  // namespace

std::string page_generator_tag() { return fmt::format("{} {}\">", kGeneratorMark, VITATTN_VERSION); }

std::string describe_kind(Bytes head, std::uint64_t file_size) {
  if (file_size == 0) return "an empty file";
  if (is_safetensors(head, file_size)) return "a safetensors file";
  for (const Signature& s : kSignatures)
    if (starts_with(head, s.magic, s.size, s.at)) return s.description;
  if (is_pnm(head)) return "a PNM image";
  if (is_html(head)) return "an HTML page";
  return {};
}

bool is_kind(FileKind kind, Bytes head, std::uint64_t file_size) {
  switch (kind) {
    case FileKind::png: return starts_with(head, kSignatures[0].magic, kSignatures[0].size);
    case FileKind::safetensors: return is_safetensors(head, file_size);
    case FileKind::json_lines: return !head.empty() && head[0] == '{';
    case FileKind::vitattn_page: return is_vitattn_page(head);
  }
  return false;
}

std::optional<std::string> not_replaceable(const std::filesystem::path& path, FileKind kind) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    if (errno == ENOENT) return std::nullopt;  // a new file (or a dangling link, which the rename replaces)
    return fmt::format("cannot be looked at ({})", std::strerror(errno));
  }
  if (S_ISDIR(st.st_mode)) return "is a folder, not a file";
  if (!S_ISREG(st.st_mode)) return "is not a regular file";
  if (st.st_size == 0) return std::nullopt;  // nothing to lose
  std::vector<std::uint8_t> head(kPageMarkWithin);
  std::ifstream in(path, std::ios::binary);
  in.read(reinterpret_cast<char*>(head.data()), static_cast<std::streamsize>(head.size()));
  head.resize(static_cast<std::size_t>(in.gcount()));
  if (!in && !in.eof()) return "cannot be read to see what it is";
  const auto size = static_cast<std::uint64_t>(st.st_size);
  if (is_kind(kind, head, size)) return std::nullopt;
  return found_instead(kind, head, size);
}

void check_replaceable(const std::filesystem::path& path, FileKind kind, const std::string& role) {
  if (const auto why = not_replaceable(path, kind))
    throw Error(Subject{role, display(path)}, "exists and " + *why + "; not replaced (remove it or choose another name)");
}

}  // namespace vitattn::files
