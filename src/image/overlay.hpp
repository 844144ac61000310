#pragma once
// Drawing the class-token map over the original image.
#include <opencv2/core.hpp>
#include <optional>
#include <string>
#include <vector>

#include "core/tensor.hpp"

namespace vitattn::image {

enum class Interp { nearest, linear, cubic };

struct RenderOptions {
  Interp interp = Interp::linear;
  int colormap = 2;  // cv::COLORMAP_JET
  double alpha = 0.5;  // weight of the heatmap in the blend
};

// Colormap by its OpenCV name ("jet", "inferno", "viridis", "turbo", ...), case-insensitive.
std::optional<int> colormap_by_name(const std::string& name);
std::vector<std::string> colormap_names();

// map (grid, grid) any range → min-max normalised, upsampled to the image's size,
// coloured and blended: (1 − alpha)·image + alpha·heatmap. bgr 8-bit in, 8-bit out.
cv::Mat render_overlay(const cv::Mat& bgr, const Matrix& map, const RenderOptions& options);

// A signed map at any size (lrp's relevance at the pixels) over the image: each value divided by
// the largest |value| (so 0 stays 0), resized to the image's size (bilinear), coloured with a
// diverging map, blue (−1) through white (0) to red (+1), as LXT's figures (zennit's bwr), and
// blended: (1 − alpha)·image + alpha·colours. A map of zeros is white.
cv::Mat render_signed_overlay(const cv::Mat& bgr, const Matrix& values, double alpha);

// Draws the outline of a 0/1 patch mask (grid_h, grid_w), laid over the whole image, in place.
void draw_mask_outline(cv::Mat& bgr, const Matrix& mask);

// Writes `text` in its top-left corner, white on a black outline, in place: a sheet's tile
// and a class's lone overlay carry their names alike. The font scales with the height
// (0.3 at least, then 1/400 of it).
void draw_label(cv::Mat& bgr, const std::string& text);

// Tiles images (each scaled to fit `tile` pixels) in a near-square grid, each with its label
// (draw_label).
cv::Mat tile_images(const std::vector<cv::Mat>& images, const std::vector<std::string>& labels, int tile);

// A map alone as a coloured image, each cell `cell` pixels wide (used by explain).
cv::Mat render_heatmap(const Matrix& map, int cell, int colormap);

}  // namespace vitattn::image
