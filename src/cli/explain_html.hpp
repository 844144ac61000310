#pragma once
// explain --html: the worked examples' matrices, computed as `vitattn explain` prints them,
// handed to the page writer as JSON.
#include <string>

namespace vitattn::cli {

// Throws Error when `path` is not a .html name or would replace a file that is not a page.
void check_explain_html(const std::string& path);

void write_explain_html(const std::string& path);

}  // namespace vitattn::cli
