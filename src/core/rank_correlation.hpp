#pragma once
// Spearman's rank correlation of two maps, the similarity the model-randomisation test of
// Adebayo et al. ("Sanity Checks for Saliency Maps", NeurIPS 2018) reports.
#include "tensor.hpp"

namespace vitattn {

// The ranks 1 … n of the values (row-major), equal values sharing the mean of their ranks
// (scipy.stats.rankdata's 'average'). Throws Error for a non-finite value.
Eigen::VectorXd average_ranks(const Matrix& values);

// Pearson's correlation of the two maps' average ranks (scipy.stats.spearmanr). 0 when either
// map is constant (its ranks carry no order; scipy says NaN). Throws Error when the shapes differ.
double spearman(const Matrix& a, const Matrix& b);

}  // namespace vitattn
