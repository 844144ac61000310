#pragma once
// One report request's work: the page `vitattn IMAGE --report` writes, for uploaded bytes,
// made by the pipeline's own report_page (process_image.hpp) with the CLI's report defaults,
// and the id it is cached and served under. No second implementation: what differs from a
// CLI run is only where the bytes go.
#include <cstdint>
#include <string>
#include <vector>

#include "map_job.hpp"
#include "map_query.hpp"

namespace vitattn::serve {

// The query's view and the CLI's `--report` settings (what the page opens on: the query's
// layer, head, rollout or class-specific method; budget 16 MB, u8; the 3 most likely classes
// in the class picker). Throws Error as map_options does.
pipeline::ProcessOptions report_options(const ServedModel& served, const MapQuery& query, std::uint64_t max_pixels);

// The page for `image`'s bytes (named `source` in errors), titled query.name. With query.texts
// (the served model's text tower, ServedTexts): the prompts are the model's classes, as the
// CLI's --text makes them, the picker holds every one (unless query.top) and the page its
// Prompts panel. Throws Error as compute_map does, and the CLI's Error for a prompt it refuses
// (or a model without a text tower), naming the parameter `text`.
std::string compute_report(const std::vector<std::uint8_t>& image, const std::string& source, const ServedModel& served,
                           const MapQuery& query, std::uint64_t max_pixels);

// 64 lowercase hex digits: SHA-256 over the image's SHA-256 and report_key(query). The same
// bytes with the same options: the same id (the cache's key).
std::string report_id(const std::vector<std::uint8_t>& image, const MapQuery& query);

}  // namespace vitattn::serve
