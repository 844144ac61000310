#include "pca.hpp"

#include <Eigen/Eigenvalues>
#include <algorithm>
#include <cmath>
#include <string>

#include "error.hpp"

namespace vitattn {
namespace {

using MatrixD = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

bool on_border(Eigen::Index r, int grid_h, int grid_w) {
  const Eigen::Index row = r / grid_w, col = r % grid_w;
  return row == 0 || col == 0 || row == grid_h - 1 || col == grid_w - 1;
}

void check_grid(const Matrix& features, int grid_h, int grid_w) {
  if (grid_h < 1 || grid_w < 1 || features.rows() != static_cast<Eigen::Index>(grid_h) * grid_w)
    throw Error("PCA: " + std::to_string(features.rows()) + " patch features for a " + std::to_string(grid_h) + "x" +
                std::to_string(grid_w) + " grid");
}

// The sign rule (pca.hpp): (border_mean − mean)·c < 0, else on a 0 the largest entry positive.
// A dot within kTieTolerance × ‖border_mean − mean‖ counts as 0: a ring mean exactly at the mean
// gives dots of rounding noise (1e-16) whose sign would depend on the solver.
constexpr double kTieTolerance = 1e-9;
void sign_components(Matrix& components, const Eigen::VectorXd& mean, const Eigen::VectorXd& border_mean) {
  const Eigen::VectorXd offset = border_mean - mean;  // (dim)
  for (Eigen::Index k = 0; k < components.rows(); ++k) {
    const Eigen::VectorXd c = components.row(k).transpose().cast<double>();
    const double dot = offset.dot(c);
    bool flip = dot > 0;
    if (std::abs(dot) <= kTieTolerance * offset.norm()) {  // c unit: a dot at rounding level is a 0
      Eigen::Index largest = 0;
      c.cwiseAbs().maxCoeff(&largest);  // the first of equal magnitudes
      flip = c(largest) < 0;
    }
    if (flip) components.row(k) *= -1.0f;
  }
}

PcaFit fit_from(const Eigen::VectorXd& mean, const Eigen::VectorXd& border_mean, MatrixD vectors /* (k, dim) */,
                const Eigen::VectorXd& variances /* (k) */) {
  PcaFit fit;
  fit.mean = mean.transpose().cast<float>();
  for (Eigen::Index k = 0; k < vectors.rows(); ++k) vectors.row(k).normalize();
  fit.components = vectors.cast<float>();
  fit.variances = variances.transpose().cast<float>().cwiseMax(0.0f);
  sign_components(fit.components, mean, border_mean);
  return fit;
}

}  // namespace

CovarianceSum::CovarianceSum(int dim)
    : sum_(Eigen::VectorXd::Zero(dim)),
      border_sum_(Eigen::VectorXd::Zero(dim)),
      outer_(Eigen::MatrixXd::Zero(dim, dim)) {}

void CovarianceSum::add(const Matrix& features, int grid_h, int grid_w) {
  check_grid(features, grid_h, grid_w);
  if (features.cols() != dim()) throw Error("PCA: features of width " + std::to_string(features.cols()) +
                                            " added to a sum of width " + std::to_string(dim()));
  const MatrixD x = features.cast<double>();  // (n, dim)
  outer_.noalias() += x.transpose() * x;
  sum_ += x.colwise().sum().transpose();
  count_ += static_cast<double>(x.rows());
  for (Eigen::Index r = 0; r < x.rows(); ++r)
    if (on_border(r, grid_h, grid_w)) {
      border_sum_ += x.row(r).transpose();
      border_count_ += 1;
    }
}

void CovarianceSum::add(const CovarianceSum& other) {
  if (other.dim() != dim()) throw Error("PCA: sums of different widths added");
  count_ += other.count_;
  border_count_ += other.border_count_;
  sum_ += other.sum_;
  border_sum_ += other.border_sum_;
  outer_ += other.outer_;
}

PcaFit fit_pca(const CovarianceSum& sum, int components) {
  if (sum.count() < 1 || components < 1) throw Error("PCA: no features to fit");
  const Eigen::VectorXd mean = sum.sum() / sum.count();  // (dim)
  const Eigen::VectorXd border_mean =
      sum.border_count() > 0 ? Eigen::VectorXd(sum.border_sum() / sum.border_count()) : mean;  // (dim)
  const Eigen::MatrixXd covariance = sum.outer() / sum.count() - mean * mean.transpose();  // (dim, dim)
  const Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd> solver(covariance);  // eigenvalues ascending
  const int k = std::min(components, sum.dim());
  MatrixD vectors(k, sum.dim());
  Eigen::VectorXd variances(k);
  for (int i = 0; i < k; ++i) {
    const Eigen::Index col = sum.dim() - 1 - i;
    vectors.row(i) = solver.eigenvectors().col(col).transpose();
    variances(i) = solver.eigenvalues()(col);
  }
  return fit_from(mean, border_mean, std::move(vectors), variances);
}

PcaFit fit_image_pca(const Matrix& features, int grid_h, int grid_w, int components) {
  check_grid(features, grid_h, grid_w);
  const Eigen::Index n = features.rows(), dim = features.cols();
  const int k = static_cast<int>(std::min<Eigen::Index>(components, dim));
  if (n < dim && k <= n) {
    const MatrixD x = features.cast<double>();                    // (n, dim)
    const Eigen::VectorXd mean = x.colwise().mean().transpose();  // (dim)
    Eigen::VectorXd border_sum = Eigen::VectorXd::Zero(dim);
    double border_count = 0;
    for (Eigen::Index r = 0; r < n; ++r)
      if (on_border(r, grid_h, grid_w)) {
        border_sum += x.row(r).transpose();
        border_count += 1;
      }
    const MatrixD centred = x.rowwise() - mean.transpose();             // (n, dim)
    const Eigen::MatrixXd gram = centred * centred.transpose();         // (n, n) = n·(eigenvalues of C)
    const Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd> solver(gram);  // ascending
    const double largest = solver.eigenvalues()(n - 1);
    bool well_posed = largest > 0;
    MatrixD vectors(k, dim);
    Eigen::VectorXd variances(k);
    for (int i = 0; i < k && well_posed; ++i) {
      const double lambda = solver.eigenvalues()(n - 1 - i);
      // A component of (almost) no variance is not told apart by the Gram matrix: the covariance's.
      if (!(lambda > 1e-9 * largest)) well_posed = false;
      vectors.row(i) = (centred.transpose() * solver.eigenvectors().col(n - 1 - i)).transpose();
      variances(i) = lambda / static_cast<double>(n);
    }
    if (well_posed)
      return fit_from(mean, border_count > 0 ? Eigen::VectorXd(border_sum / border_count) : mean, std::move(vectors),
                      variances);
  }
  CovarianceSum sum(static_cast<int>(dim));
  sum.add(features, grid_h, grid_w);
  return fit_pca(sum, components);
}

Matrix project(const PcaFit& fit, const Matrix& features) {
  const MatrixD centred = features.cast<double>().rowwise() - fit.mean.cast<double>();  // (n, dim)
  return (centred * fit.components.cast<double>().transpose()).cast<float>();           // (n, k)
}

Matrix unit_scaled(const PcaFit& fit, const Matrix& projections) {
  Matrix t(projections.rows(), projections.cols());  // (n, k)
  for (Eigen::Index k = 0; k < projections.cols(); ++k) {
    if (fit.scaling == PcaScaling::min_max) {
      const float lo = projections.col(k).minCoeff(), hi = projections.col(k).maxCoeff();
      if (hi > lo) t.col(k) = (projections.col(k).array() - lo) / (hi - lo);
      else t.col(k).setZero();
    } else {
      const float sigma = std::sqrt(std::max(fit.variances(k), 0.0f));
      if (sigma > 0) t.col(k) = ((projections.col(k).array() + 3 * sigma) / (6 * sigma)).cwiseMax(0.0f).cwiseMin(1.0f);
      else t.col(k).setConstant(0.5f);
    }
  }
  return t;
}

PcaPicture pca_picture(const PcaFit& fit, const Matrix& features, int grid_h, int grid_w,
                       std::optional<float> mask_threshold) {
  check_grid(features, grid_h, grid_w);
  if (features.cols() != fit.mean.size())
    throw Error("PCA: features of width " + std::to_string(features.cols()) + " for a fit of width " +
                std::to_string(fit.mean.size()));
  const Matrix t = unit_scaled(fit, project(fit, features));  // (n, k)
  PcaPicture picture{grid_h, grid_w, std::vector<std::uint8_t>(static_cast<std::size_t>(t.rows()) * 3, 0)};
  for (Eigen::Index r = 0; r < t.rows(); ++r) {
    if (mask_threshold && t.cols() > 0 && t(r, 0) < *mask_threshold) continue;  // blanked: black
    for (Eigen::Index k = 0; k < std::min<Eigen::Index>(t.cols(), 3); ++k)
      picture.rgb[static_cast<std::size_t>(r * 3 + k)] = static_cast<std::uint8_t>(std::lround(255.0f * t(r, k)));
  }
  return picture;
}

}  // namespace vitattn
