#pragma once
// heads.csv (--heads-csv, or --save-attention): per image, layer and head, the numbers that
// make ranking heads a `sort` (which head to draw for DINO's Fig. 3, which heads a register or
// an artifact token captures). Each image writes its rows as its part of the batch's
// heads.csv (<name>_heads.csv, before its overlay); batch_files.hpp gathers the parts in input
// order, so the file is the same whatever -j.
//
// Every number is the token diagnostics' own (core/token_diagnostics.hpp's HeadStats, from the
// forward that drew the maps): nothing is computed a second time here.
#include <filesystem>
#include <string>

#include "core/token_diagnostics.hpp"

namespace vitattn::pipeline {

// RFC 4180 CSV, header "image,layer,head,entropy,distance_px,mask_share,flagged_share"
// (batch_files()), one line per layer and head (layers, then heads, ascending): the input's
// path (quoted through csv_field when it holds a comma, quote or line break), the numbers with
// 9 significant digits:
//   entropy        nats, the class token's row over all n_tokens
//   distance_px    mean attention distance of the patch queries, in model-input pixels
//   mask_share     cells of DINO's mass mask of the class token's map / grid cells
//   flagged_share  the class token's attention taken by the tokens flagged at that layer
std::string heads_csv(const std::filesystem::path& input, const TokenDiagnostics& tokens);

// heads_csv written atomically to `part` (temp + rename). Throws Error naming the part.
void write_heads_part(const std::filesystem::path& part, const std::filesystem::path& input,
                      const TokenDiagnostics& tokens);

}  // namespace vitattn::pipeline
