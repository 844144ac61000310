#pragma once
// --pca: what the pipeline asks of core/pca.hpp, and the fit file.
//   - PcaRequest: a per-image fit (no fit given) or one fit for every image (--pca-fit batch,
//     or a file), and --pca-mask's threshold.
//   - pca_fit.npy, float32 [5, D]: row 0 the mean, rows 1–3 the components (unit rows, signed by
//     the sign rule; a zero row where D < 3 has no such component), row 4 (σ_1, σ_2, σ_3, 0, …)
//     the standard deviations along them over the fit. Written atomically by the run of
//     --pca-fit batch without --shard; --pca-fit FILE reads it back (a batch fit's scaling, ±3σ).
//   - the picture as an image: the (grid_h, grid_w) RGB grid upsampled to the image's size with
//     the overlay's --interp (nearest shows the grid), as a BGR cv::Mat for the PNG writer.
#include <filesystem>
#include <optional>

#include <opencv2/core.hpp>

#include "core/pca.hpp"
#include "image/overlay.hpp"
#include "job_outputs.hpp"  // pca_fit_name(): the file's name in the output folder

namespace vitattn::pipeline {

struct PcaRequest {
  std::optional<PcaFit> fit;  // one fit for every image; none: each image its own (min-max)
  std::optional<float> mask;  // --pca-mask T in [0, 1]
};

// The fit as the file keeps it (σ_k rounded to float, variances σ_k²), so a run that fits the
// batch draws the same bytes as a run that reads its pca_fit.npy.
PcaFit as_in_file(PcaFit fit);

// fit (dim ≥ 1, up to 3 components) → the [5, dim] float32 file above, all-or-nothing.
void write_pca_fit(const std::filesystem::path& path, const PcaFit& fit);

// Reads a pca_fit.npy for features of width `dim`: scaling three_sigma, variances σ². Throws
// Error "<path>: …" when it is not one (shape, width, non-finite values, components not of
// unit length or a negative σ).
PcaFit read_pca_fit(const std::filesystem::path& path, int dim);

// picture (grid_h, grid_w) RGB → (size) BGR 8-bit, upsampled by `interp`.
cv::Mat pca_image(const PcaPicture& picture, cv::Size size, image::Interp interp);

}  // namespace vitattn::pipeline
