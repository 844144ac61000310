#include "image/overlay.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <opencv2/imgproc.hpp>

#include "core/attention_maps.hpp"
#include "files/text.hpp"

namespace vitattn::image {
namespace {

struct NamedColormap {
  const char* name;
  int id;
};

constexpr NamedColormap kColormaps[] = {
    {"autumn", cv::COLORMAP_AUTUMN},   {"bone", cv::COLORMAP_BONE},       {"jet", cv::COLORMAP_JET},
    {"winter", cv::COLORMAP_WINTER},   {"rainbow", cv::COLORMAP_RAINBOW}, {"ocean", cv::COLORMAP_OCEAN},
    {"summer", cv::COLORMAP_SUMMER},   {"spring", cv::COLORMAP_SPRING},   {"cool", cv::COLORMAP_COOL},
    {"hsv", cv::COLORMAP_HSV},         {"pink", cv::COLORMAP_PINK},       {"hot", cv::COLORMAP_HOT},
    {"parula", cv::COLORMAP_PARULA},   {"magma", cv::COLORMAP_MAGMA},     {"inferno", cv::COLORMAP_INFERNO},
    {"plasma", cv::COLORMAP_PLASMA},   {"viridis", cv::COLORMAP_VIRIDIS}, {"cividis", cv::COLORMAP_CIVIDIS},
    {"twilight", cv::COLORMAP_TWILIGHT}, {"twilight_shifted", cv::COLORMAP_TWILIGHT_SHIFTED},
    {"turbo", cv::COLORMAP_TURBO},     {"deepgreen", cv::COLORMAP_DEEPGREEN},
};

int cv_interp(Interp i) {
  switch (i) {
    case Interp::nearest: return cv::INTER_NEAREST;
    case Interp::cubic: return cv::INTER_CUBIC;
    case Interp::linear: break;
  }
  return cv::INTER_LINEAR;
}

// (grid, grid) float in [0, 1] → 8-bit, upsampled to `size` (cubic may overshoot: clamp).
cv::Mat upsample_to_u8(const Matrix& unit_map, cv::Size size, int interpolation) {
  const cv::Mat small(static_cast<int>(unit_map.rows()), static_cast<int>(unit_map.cols()), CV_32F,
                      const_cast<float*>(unit_map.data()));
  cv::Mat big, u8;
  cv::resize(small, big, size, 0, 0, interpolation);
  big.convertTo(u8, CV_8U, 255.0);  // saturate_cast clamps to [0, 255]
  return u8;
}

}  // namespace

std::optional<int> colormap_by_name(const std::string& name) {
  const std::string lower = files::lower_case(name);
  for (const auto& c : kColormaps)
    if (lower == c.name) return c.id;
  return std::nullopt;
}

std::vector<std::string> colormap_names() {
  std::vector<std::string> names;
  for (const auto& c : kColormaps) names.emplace_back(c.name);
  return names;
}

cv::Mat render_overlay(const cv::Mat& bgr, const Matrix& map, const RenderOptions& options) {
  const Matrix unit = normalize_for_display(map);  // (grid, grid) in [0, 1]
  const cv::Mat level = upsample_to_u8(unit, bgr.size(), cv_interp(options.interp));
  cv::Mat heat, out;
  cv::applyColorMap(level, heat, options.colormap);
  cv::addWeighted(bgr, 1.0 - options.alpha, heat, options.alpha, 0.0, out);
  return out;
}

cv::Mat render_signed_overlay(const cv::Mat& bgr, const Matrix& values, double alpha) {
  const float peak = values.size() > 0 ? values.cwiseAbs().maxCoeff() : 0.0f;
  cv::Mat unit(static_cast<int>(values.rows()), static_cast<int>(values.cols()), CV_32F);  // in [−1, 1]
  for (int y = 0; y < unit.rows; ++y)
    for (int x = 0; x < unit.cols; ++x) unit.at<float>(y, x) = peak > 0.0f ? values(y, x) / peak : 0.0f;
  cv::Mat big;
  cv::resize(unit, big, bgr.size(), 0, 0, cv::INTER_LINEAR);
  cv::Mat heat(bgr.size(), CV_8UC3);
  for (int y = 0; y < big.rows; ++y)
    for (int x = 0; x < big.cols; ++x) {
      const float v = std::clamp(big.at<float>(y, x), -1.0f, 1.0f);
      const auto fade = static_cast<std::uint8_t>(std::lround(255.0f * (1.0f - std::fabs(v))));  // the other two channels
      heat.at<cv::Vec3b>(y, x) = v < 0.0f ? cv::Vec3b(255, fade, fade) : cv::Vec3b(fade, fade, 255);  // BGR
    }
  cv::Mat out;
  cv::addWeighted(bgr, 1.0 - alpha, heat, alpha, 0.0, out);
  return out;
}

void draw_mask_outline(cv::Mat& bgr, const Matrix& mask) {
  cv::Mat cells(static_cast<int>(mask.rows()), static_cast<int>(mask.cols()), CV_8U);
  for (int y = 0; y < cells.rows; ++y)
    for (int x = 0; x < cells.cols; ++x) cells.at<std::uint8_t>(y, x) = mask(y, x) > 0.5f ? 255 : 0;
  cv::Mat big;
  cv::resize(cells, big, bgr.size(), 0, 0, cv::INTER_NEAREST);  // patch edges stay crisp
  std::vector<std::vector<cv::Point>> contours;
  cv::findContours(big, contours, cv::RETR_EXTERNAL, cv::CHAIN_APPROX_SIMPLE);
  const int thickness = std::max(1, std::min(bgr.cols, bgr.rows) / 150);
  cv::drawContours(bgr, contours, -1, cv::Scalar(255, 255, 255), thickness, cv::LINE_8);  // patch edges are axis-aligned
}

void draw_label(cv::Mat& bgr, const std::string& text) {
  const double font = std::max(0.3, bgr.rows / 400.0);
  const cv::Point at(4, static_cast<int>(18 * font / 0.5));
  cv::putText(bgr, text, at, cv::FONT_HERSHEY_SIMPLEX, font, cv::Scalar(0, 0, 0), 3, cv::LINE_AA);
  cv::putText(bgr, text, at, cv::FONT_HERSHEY_SIMPLEX, font, cv::Scalar(255, 255, 255), 1, cv::LINE_AA);
}

cv::Mat tile_images(const std::vector<cv::Mat>& images, const std::vector<std::string>& labels, int tile) {
  const int n = static_cast<int>(images.size());
  const int cols = static_cast<int>(std::ceil(std::sqrt(static_cast<double>(n))));
  const int rows = (n + cols - 1) / cols;
  const cv::Size src = images.front().size();
  const double scale = static_cast<double>(tile) / std::max(src.width, src.height);
  const cv::Size cell(std::max(1, static_cast<int>(std::lround(src.width * scale))),
                      std::max(1, static_cast<int>(std::lround(src.height * scale))));
  cv::Mat sheet(rows * cell.height, cols * cell.width, CV_8UC3, cv::Scalar(0, 0, 0));
  for (int i = 0; i < n; ++i) {
    cv::Mat roi = sheet(cv::Rect((i % cols) * cell.width, (i / cols) * cell.height, cell.width, cell.height));
    cv::resize(images[static_cast<std::size_t>(i)], roi, cell, 0, 0, scale < 1 ? cv::INTER_AREA : cv::INTER_LINEAR);
    draw_label(roi, labels[static_cast<std::size_t>(i)]);
  }
  return sheet;
}

cv::Mat render_heatmap(const Matrix& map, int cell, int colormap) {
  const Matrix unit = normalize_for_display(map);
  const cv::Mat level = upsample_to_u8(
      unit, cv::Size(static_cast<int>(map.cols()) * cell, static_cast<int>(map.rows()) * cell), cv::INTER_NEAREST);
  cv::Mat heat;
  cv::applyColorMap(level, heat, colormap);
  return heat;
}

}  // namespace vitattn::image
