#pragma once
// A manifest of inputs: the paths `find`, a database export or a data-set index gives,
// one per line or NUL-separated (find -print0), read from a file or standard input.
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

namespace vitattn::files {

// The paths in `text`: one per line ('\n'; a '\r' before it is dropped, for lists written on
// Windows), or with `nul_separated` one per NUL-ended entry (kept byte for byte: a file name
// may hold any byte but NUL). Empty entries are skipped. A NUL byte in a
// line-separated list throws Error "<source>: line N holds a NUL byte …" rather than cutting
// a name short. Paths are returned as written: relative ones are relative to the current
// folder when opened, not to the list's folder.
std::vector<std::filesystem::path> parse_file_list(std::string_view text, bool nul_separated,
                                                   const std::string& source);

// Reads the list at `list` ("-": standard input; a FIFO such as bash's <(…) works too) and
// parses it. Throws Error "<list>: cannot read the file list: <reason>".
std::vector<std::filesystem::path> read_file_list(const std::string& list, bool nul_separated);

}  // namespace vitattn::files
