#pragma once
// One image, start to finish: decode → preprocess → attention → overlay (+ .npy) on disk.
#include <cstdint>

#include "batch_plan.hpp"
#include "core/model.hpp"
#include "overlay.hpp"

namespace vitattn::io {

struct ProcessOptions {
  RenderOptions render;
  bool scale = true;            // 1/√d_k
  bool save_attention = false;  // also write _attn.npy and _cls.npy
  std::uint64_t max_pixels = 100'000'000;
};

// Throws Error with a one-line message naming the input (or the output it could not write).
void process_image(const ImageJob& job, const SingleHeadModel& model, const ProcessOptions& options);

}  // namespace vitattn::io
