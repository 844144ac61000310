#include "pipeline/heads_part.hpp"

#include <fmt/format.h>

#include "files/file_io.hpp"
#include "pipeline/job_outputs.hpp"
#include "pipeline/predictions.hpp"

namespace vitattn::pipeline {

std::string heads_csv(const std::filesystem::path& input, const TokenDiagnostics& tokens) {
  std::string csv = std::string(batch_file(&OutputSet::heads).header) + "\n";
  const std::string image = csv_field(input.string());
  for (std::size_t layer = 0; layer < tokens.heads.size(); ++layer)
    for (std::size_t head = 0; head < tokens.heads[layer].size(); ++head) {
      const HeadStats& s = tokens.heads[layer][head];
      csv += fmt::format("{},{},{},{:.9g},{:.9g},{:.9g},{:.9g}\n", image, layer, head, s.entropy, s.distance_px,
                         s.mask_share, s.flagged_share);
    }
  return csv;
}

void write_heads_part(const std::filesystem::path& part, const std::filesystem::path& input,
                      const TokenDiagnostics& tokens) {
  const std::string csv = heads_csv(input, tokens);
  files::write_file_atomic(part, csv.data(), csv.size());
}

}  // namespace vitattn::pipeline
