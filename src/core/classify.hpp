#pragma once
// Class probabilities from a classifier's logits, then the K most likely classes. A classifier
// and CLIP's texts take a softmax over the classes; SigLIP's texts a sigmoid of each logit on
// its own (it was trained so: Zhai et al. 2023), so its probabilities need not sum to 1.
#include <vector>

#include "tensor.hpp"

namespace vitattn {

enum class ClassProbability {
  softmax,  // p_c = exp(y_c) / Σ_j exp(y_j)
  sigmoid,  // p_c = 1 / (1 + exp(−y_c))
};

struct ClassScore {
  int index = 0;             // class index, a row of w_head
  double probability = 0.0;  // its probability (softmax or sigmoid)
};

// logits (n_classes) → p (n_classes), p_i = exp(z_i − max z) / Σ_j exp(z_j − max z), in double
// so that small probabilities keep their digits.
std::vector<double> softmax(const RowVector& logits);

// logits (n_classes) → p (n_classes) by `kind`, in double.
std::vector<double> class_probabilities(const RowVector& logits, ClassProbability kind);

// The min(k, n_classes) most likely classes, most likely first; equal probabilities keep
// index order, so the ranking never depends on the sort's whims.
std::vector<ClassScore> top_classes(const RowVector& logits, int k, ClassProbability kind = ClassProbability::softmax);

}  // namespace vitattn
