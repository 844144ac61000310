#pragma once
// `vitattn explain --html FILE`: the worked examples as one offline page (src/report/explain.*),
// each step a frame, Q, K and V editable in the page.
#include <filesystem>
#include <string>

namespace vitattn::report {

// data_json: the examples' matrices, as `vitattn explain` computes them. Temporary file, then rename.
void write_explain_page(const std::filesystem::path& path, const std::string& data_json);

}  // namespace vitattn::report
