#pragma once
// PCA feature maps: the first three principal components of the last layer's patch features
// (the tokens after the final norm, patch rows only), as DINOv2's notebooks draw them.
//   - CovarianceSum accumulates, in double, the count, Σx (D) and Σxxᵀ (D×D) of the patch
//     features of any number of images, plus the count and Σx of the border patches (the
//     grid's outer ring) for the sign rule. Memory is D×D whatever the number of images, and
//     the sums added in the same order give the same bits (a batch fit is reproducible).
//   - fit_pca: mean = Σx/n, covariance C = Σxxᵀ/n − mean·meanᵀ (population, divisor n), its
//     eigenvectors of largest eigenvalue by Eigen's SelfAdjointEigenSolver; variances are C's
//     eigenvalues. For one image of fewer patches than D, fit_image_pca solves the n×n Gram
//     matrix instead (the same components within float error, much faster).
//   - Sign rule (deterministic, numpy-reproducible): each component c is signed so that the
//     mean border patch projects below the mean, (mean_border − mean)·c < 0: the background
//     usually touches the border, so the object comes out high in component 1 (and --pca-mask
//     keeps it). When that dot is 0 (|dot| ≤ 1e-9·‖mean_border − mean‖, computed in double:
//     rounding noise counts as 0), c's entry of largest magnitude (the first such) is made
//     positive.
//   - Colours: per image fit, each component min-max scaled over the image's patches (DINOv2's
//     minmax_scale); a batch or file fit maps [−3σ_k, +3σ_k] to [0, 1], clamped, so the same
//     feature gets the same colour in every image. A value t in [0, 1] is the byte lround(255·t).
//     With a mask threshold T, the patches whose component-1 value t is below T are black.
#include <cstdint>
#include <optional>
#include <vector>

#include "tensor.hpp"

namespace vitattn {

// Sums over patch features, in double (see above).
class CovarianceSum {
 public:
  explicit CovarianceSum(int dim);
  // features (grid_h·grid_w, dim), row r the patch at (r / grid_w, r % grid_w).
  void add(const Matrix& features, int grid_h, int grid_w);
  // Adds another sum's counts and sums (the same dim) to this one.
  void add(const CovarianceSum& other);

  int dim() const { return static_cast<int>(sum_.size()); }
  double count() const { return count_; }
  double border_count() const { return border_count_; }
  const Eigen::VectorXd& sum() const { return sum_; }                // (dim) Σx
  const Eigen::MatrixXd& outer() const { return outer_; }            // (dim, dim) Σxxᵀ
  const Eigen::VectorXd& border_sum() const { return border_sum_; }  // (dim) Σx over the border patches

 private:
  double count_ = 0, border_count_ = 0;
  Eigen::VectorXd sum_, border_sum_;  // (dim)
  Eigen::MatrixXd outer_;             // (dim, dim)
};

// How the components are scaled to colours: min-max over each image (a per-image fit), or
// ±3σ of the fit (a batch or file fit).
enum class PcaScaling { min_max, three_sigma };

struct PcaFit {
  RowVector mean;        // (dim)
  Matrix components;     // (k, dim) unit rows, largest variance first, signed by the sign rule
  RowVector variances;   // (k) the covariance's eigenvalues (divisor n)
  PcaScaling scaling = PcaScaling::min_max;
};

// The first k = min(components, dim) principal components of the summed features, signed by
// the sign rule. Throws Error when the sum holds no feature or components < 1.
PcaFit fit_pca(const CovarianceSum& sum, int components = 3);

// One image's fit (scaling min_max): the Gram matrix's when the image has fewer patches than
// dim, else fit_pca of its CovarianceSum. features (grid_h·grid_w, dim).
PcaFit fit_image_pca(const Matrix& features, int grid_h, int grid_w, int components = 3);

// features (n, dim) → (n, k): (x − mean)·c_k for every patch.
Matrix project(const PcaFit& fit, const Matrix& features);

// projections (n, k) → (n, k) in [0, 1] by the fit's scaling. A min-max component that is
// constant over the image is 0.
Matrix unit_scaled(const PcaFit& fit, const Matrix& projections);

// The picture: (grid_h, grid_w) RGB bytes, row-major, 3 per patch (R = component 1, G = 2,
// B = 3; a component the fit does not have is 0); with mask_threshold, the patches whose
// component-1 value is below it are 0, 0, 0.
struct PcaPicture {
  int grid_h = 0, grid_w = 0;
  std::vector<std::uint8_t> rgb;  // grid_h·grid_w·3
};
PcaPicture pca_picture(const PcaFit& fit, const Matrix& features, int grid_h, int grid_w,
                       std::optional<float> mask_threshold = std::nullopt);

}  // namespace vitattn
