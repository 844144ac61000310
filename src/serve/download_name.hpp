#pragma once
// The name a report page is saved under (GET /api/report/<id>?download=1): the CLI's name for
// it, in UTF-8 for the clients that read RFC 6266's filename* and in ASCII for the others.
// Pure text: no request, no file.
#include <string>

namespace vitattn::serve {

// The download's file name for an upload named `name`, as the CLI names the page: its stem (up
// to the last '.') then "_report.html" (pipeline::report_suffix()), in UTF-8. What a file name
// must not hold becomes '_': a byte that is not UTF-8, a control character (C0, DEL, C1), a
// bidirectional control (it could show the name reversed), '/' and '\\'.
std::string report_file_name(const std::string& name);

// `file_name` (UTF-8) in the ASCII of a quoted filename= (for clients that do not read
// filename*): A–Z, a–z, 0–9, '.', '_', '-' kept; a Latin letter of U+00C0…U+017F without its
// mark ("ü" → "u", "ß" → "ss", "ł" → "l"); a combining mark (a name in NFD) dropped; every
// other character (a space, a quote, "中", a byte that is not UTF-8) as one '_'.
std::string ascii_file_name(const std::string& file_name);

// The Content-Disposition of the download of the page of an upload named `name` (RFC 6266):
// `attachment; filename="<ascii_file_name>"; filename*=UTF-8''<report_file_name>`, the latter
// percent-encoded as RFC 5987 says (every byte but its attr-chars as %XX). Browsers save under
// filename*, older clients under the ASCII name.
std::string report_disposition(const std::string& name);

}  // namespace vitattn::serve
