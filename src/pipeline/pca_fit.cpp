#include "pca_fit.hpp"

#include <cmath>
#include <string>
#include <vector>

#include <opencv2/imgproc.hpp>

#include "core/error.hpp"
#include "files/file_io.hpp"
#include "tensors/npy.hpp"

namespace vitattn::pipeline {
namespace {
constexpr int kRows = 5;  // mean, 3 components, σ
}  // namespace

PcaFit as_in_file(PcaFit fit) {
  fit.scaling = PcaScaling::three_sigma;
  for (Eigen::Index k = 0; k < fit.variances.size(); ++k) {
    const float sigma = std::sqrt(std::max(fit.variances(k), 0.0f));
    fit.variances(k) = sigma * sigma;
  }
  return fit;
}

void write_pca_fit(const std::filesystem::path& path, const PcaFit& fit) {
  const auto dim = static_cast<Eigen::Index>(fit.mean.size());
  Matrix rows = Matrix::Zero(kRows, dim);  // (5, dim)
  rows.row(0) = fit.mean;
  for (Eigen::Index k = 0; k < std::min<Eigen::Index>(fit.components.rows(), 3); ++k) {
    rows.row(1 + k) = fit.components.row(k);
    if (k < dim) rows(4, k) = std::sqrt(std::max(fit.variances(k), 0.0f));
  }
  tensors::write_npy(path, rows);
}

PcaFit read_pca_fit(const std::filesystem::path& path, int dim) {
  const std::string name = files::display(path);
  const tensors::NpyArray a = tensors::read_npy(path);
  if (a.shape.size() != 2 || a.shape[0] != kRows || a.shape[1] != static_cast<std::uint64_t>(dim)) {
    std::string shape;
    for (std::uint64_t s : a.shape) shape += (shape.empty() ? "" : ", ") + std::to_string(s);
    throw Error(name + ": a PCA fit for this model is float32 [5, " + std::to_string(dim) + "] (" + pca_fit_name() +
                " of a batch fit), this is [" + shape + "]");
  }
  const Eigen::Map<const Matrix> rows(a.values.data(), kRows, dim);  // (5, dim)
  if (!rows.allFinite()) throw Error(name + ": the PCA fit holds values that are not finite");
  PcaFit fit;
  fit.scaling = PcaScaling::three_sigma;
  fit.mean = rows.row(0);
  const int k = std::min(dim, 3);
  fit.components = rows.middleRows(1, k);
  fit.variances.resize(k);
  for (int i = 0; i < k; ++i) {
    const float norm = fit.components.row(i).norm(), sigma = rows(4, i);
    if (std::abs(norm - 1.0f) > 1e-3f)
      throw Error(name + ": PCA component " + std::to_string(i + 1) + " has length " + std::to_string(norm) +
                  ", not 1");
    if (sigma < 0) throw Error(name + ": PCA component " + std::to_string(i + 1) + " has a negative σ");
    fit.variances(i) = sigma * sigma;
  }
  return fit;
}

cv::Mat pca_image(const PcaPicture& picture, cv::Size size, image::Interp interp) {
  cv::Mat rgb(picture.grid_h, picture.grid_w, CV_8UC3, const_cast<std::uint8_t*>(picture.rgb.data()));
  cv::Mat bgr, big;
  cv::cvtColor(rgb, bgr, cv::COLOR_RGB2BGR);
  const int how = interp == image::Interp::nearest ? cv::INTER_NEAREST : interp == image::Interp::cubic ? cv::INTER_CUBIC
                                                                                                  : cv::INTER_LINEAR;
  cv::resize(bgr, big, size, 0, 0, how);  // 8-bit: cubic's overshoot saturates
  return big;
}

}  // namespace vitattn::pipeline
