#pragma once
// The prompt ensemble of zero-shot classification (OpenAI's
// notebooks/Prompt_Engineering_for_ImageNet.ipynb, zeroshot_classifier): for each class, every
// prompt (its name in each template) through the text tower, each embedding L2-normalised,
// their mean over the class's prompts, normalised again: one unit row per class.
//
// Deterministic whatever the thread count: the prompts are encoded in parallel, each into its
// own slot (encode_text's bytes do not depend on threads: gemm.hpp), and each class's mean is
// summed afterwards in prompt order, in double (the notebook sums float32 on a GPU, in an
// order of its own; the difference is far below the oracle test's bound).
#include <cstdint>
#include <vector>

#include "tensor.hpp"
#include "text_tower.hpp"

namespace vitattn {

// prompt_ids[c][p]: the ids of class c's prompt p (clip.tokenize's row: `tower.context()`
// ids). Returns (classes, E). Throws Error when a class has no prompt, or encode_text does
// (a row of the wrong length, an id outside the vocabulary, non-finite activations). Runs
// on up to `threads` threads (core/parallel_for.hpp).
Matrix prompt_ensemble(const TextTower& tower, const std::vector<std::vector<std::vector<std::int32_t>>>& prompt_ids,
                       int threads);

}  // namespace vitattn
