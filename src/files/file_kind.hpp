#pragma once
// What a file is, by its first bytes: so that a named output (the saved model, the
// heatmap) replaces only a file of the kind it writes, and so that a message
// can say what a wrong file is ("a JPEG image") instead of what it fails to be.
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <span>
#include <string>

namespace vitattn::files {

// json_lines: a log whose first byte is '{'. vitattn_page: an HTML page vitattn wrote, one
// whose first kPageMarkWithin bytes hold page_generator_tag() (a page of someone else's, with
// or without a doctype, is not one).
enum class FileKind { png, safetensors, json_lines, vitattn_page };

// <meta name="generator" content="vitattn 0.1.0">: the mark in the head of every page vitattn
// writes (the report pages, the gallery, explain's page), so that vitattn replaces a page of
// its own and never someone else's. The templates put it within kPageMarkWithin bytes.
std::string page_generator_tag();
inline constexpr std::size_t kPageMarkWithin = 1024;

// "a PNG image", "a JPEG image", "a safetensors file", "a NumPy .npy file", "a zip archive
// (a PyTorch .pth?)", "an HTML page", …, or empty when the bytes match none of the signatures
// known here.
std::string describe_kind(std::span<const std::uint8_t> head, std::uint64_t file_size);

// True when `head` (the file's first bytes: kPageMarkWithin of them for a page) is `kind`'s.
// A safetensors file starts with a little-endian u64 header length that fits the file, then '{'.
bool is_kind(FileKind kind, std::span<const std::uint8_t> head, std::uint64_t file_size);

// Why a file of `kind` may not replace `path`, as what was found there: "is a folder, not a file", "is a
// JPEG image, not a PNG image", "is an HTML page that vitattn did not write (…)", "is not a
// regular file"; nothing when it may (no such file, an empty file, a file of `kind`). Follows
// a symlink to see what it is.
std::optional<std::string> not_replaceable(const std::filesystem::path& path, FileKind kind);

// For an output the caller named: not_replaceable as Error about {role, path}: "the log
// x.jsonl: exists and is a JPEG image, not a JSON Lines log; not replaced (…)". `role` names
// the output as data ("the log"); the command line puts its flag there.
// pipeline::OutputGuard calls this for every output given a kind.
void check_replaceable(const std::filesystem::path& path, FileKind kind, const std::string& role);

}  // namespace vitattn::files
