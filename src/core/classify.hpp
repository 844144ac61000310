#pragma once
// Class probabilities from a classifier's logits: softmax, then the K most likely classes.
#include <vector>

#include "tensor.hpp"

namespace vitattn {

struct ClassScore {
  int index = 0;             // class index, a row of w_head
  double probability = 0.0;  // softmax probability
};

// logits (n_classes) → p (n_classes), p_i = exp(z_i − max z) / Σ_j exp(z_j − max z), in double
// so that small probabilities keep their digits.
std::vector<double> softmax(const RowVector& logits);

// The min(k, n_classes) most likely classes, most likely first; equal probabilities keep
// index order, so the ranking never depends on the sort's whims.
std::vector<ClassScore> top_classes(const RowVector& logits, int k);

}  // namespace vitattn
