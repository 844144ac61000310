#pragma once
// `vitattn explain`: the worked examples of attention, with every matrix printed.
#include <ostream>
#include <string>

namespace vitattn::cli {

// explain's outputs as the output guard names them (the flags are --heatmap and --html).
inline constexpr const char* kHeatmapRole = "the heatmap";
inline constexpr const char* kPageRole = "the page";

// Prints the four examples to `out`; writes example (b)'s weights as a PNG heatmap when
// `heatmap_png` is not empty. Returns the exit status.
// `html` not empty: also the examples as a page (explain_html.hpp).
int explain(std::ostream& out, const std::string& heatmap_png, const std::string& html = {});

}  // namespace vitattn::cli
