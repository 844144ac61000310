#include "zero_shot.hpp"

#include <cmath>
#include <string>

#include "error.hpp"

namespace vitattn {

RowVector zero_shot_logits(const ZeroShotHead& head, const RowVector& embedding) {
  if (embedding.size() != head.d_embed())
    throw Error("the image embedding is " + std::to_string(embedding.size()) + " wide and the texts' " +
                std::to_string(head.d_embed()) + ": no logits between them");
  const double scale = std::exp(static_cast<double>(head.logit_scale));
  // classes (n_classes, d_embed) · e (d_embed) → cosines (n_classes), in double
  const Eigen::VectorXd cos = head.classes.cast<double>() * embedding.transpose().cast<double>();
  return (scale * cos.array() + static_cast<double>(head.logit_bias)).cast<float>().matrix().transpose();
}

RowVector zero_shot_gradient(const ZeroShotHead& head, const RowVector& unnormalized, int class_index) {
  if (class_index < 0 || class_index >= head.n_classes())
    throw Error("class " + std::to_string(class_index) + " is not one of the " + std::to_string(head.n_classes()) +
                " texts");
  const Eigen::RowVectorXd u = unnormalized.cast<double>();
  const double norm = u.norm();
  if (norm == 0.0) return RowVector::Zero(unnormalized.size());
  const Eigen::RowVectorXd e = u / norm;
  const Eigen::RowVectorXd t = head.classes.row(class_index).cast<double>();
  const double scale = std::exp(static_cast<double>(head.logit_scale));
  return (scale * (t - t.dot(e) * e) / norm).cast<float>();
}

}  // namespace vitattn
