#pragma once
// What a file is, by its first bytes: so that a named output (the saved model, the
// heatmap) replaces only a file of the kind it writes, and so that a message
// can say what a wrong file is ("a JPEG image") instead of what it fails to be.
#include <cstdint>
#include <filesystem>
#include <span>
#include <string>

namespace vitattn::io {

enum class FileKind { png, safetensors, json_lines, html };  // json_lines: a log whose first byte is '{'; html: a page starting "<!DOCTYPE html>"

// "a PNG image", "a JPEG image", "a safetensors file", "a NumPy .npy file", "a zip archive
// (a PyTorch .pth?)", …, or empty when the bytes match none of the signatures known here.
std::string describe_kind(std::span<const std::uint8_t> head, std::uint64_t file_size);

// True when `head` (the file's first bytes) starts like `kind`. A safetensors file starts
// with a little-endian u64 header length that fits the file, then '{'.
bool is_kind(FileKind kind, std::span<const std::uint8_t> head, std::uint64_t file_size);

// For an output the caller named: nothing to do when `path` does not exist or is an empty
// file; otherwise it must be a regular file of `kind`, or Error about {role, path}: "the log
// x.jsonl: exists and is a JPEG image, not a JSON Lines log; not replaced". `role` names the
// output as data ("the log"); the command line puts its flag there. Follows a symlink to see
// what it is. pipeline::OutputGuard calls this for every output given a kind.
void check_replaceable(const std::filesystem::path& path, FileKind kind, const std::string& role);

}  // namespace vitattn::io
