#pragma once
// explain --html: the worked examples' matrices, computed as `vitattn explain` prints them,
// handed to the page writer as JSON.
#include <string>
#include <vector>

#include "core/dot_variance.hpp"

namespace vitattn::cli {

// Throws Error when `path` is not a .html name (what it may replace: pipeline::OutputGuard).
void check_explain_html(const std::string& path);

void write_explain_html(const std::string& path);

// Example (c)'s table of Var(q·k) and Var(q·k/√d_k) for d_k 4, 16, 64, 256 (20000 random pairs
// each, seed 0): one computation that the printed text and the page both show.
std::vector<DotVariance> explain_variance_table();

}  // namespace vitattn::cli
