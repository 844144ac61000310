#include "zero_shot_texts.hpp"

#include <utility>

namespace vitattn::pipeline {

ZeroShotHead zero_shot_head(const TextTower& tower, const std::vector<std::vector<std::int32_t>>& ids,
                            const std::vector<std::int32_t>& empty_prompt) {
  Matrix classes(static_cast<Eigen::Index>(ids.size()), tower.d_embed());  // (n_texts, E)
  const std::vector<TextResult> encoded = encode_texts(tower, ids);        // one batch
  for (std::size_t i = 0; i < ids.size(); ++i) classes.row(static_cast<Eigen::Index>(i)) = encoded[i].embedding;
  return zero_shot_head(tower, std::move(classes), empty_prompt);
}

ZeroShotHead zero_shot_head(const TextTower& tower, Matrix classes, const std::vector<std::int32_t>& empty_prompt) {
  ZeroShotHead head;
  head.classes = std::move(classes);
  head.logit_scale = tower.logit_scale;
  head.logit_bias = tower.logit_bias;
  head.probability = tower.probabilities;
  if (!empty_prompt.empty()) head.legrad_empty_prompt = encode_text(tower, empty_prompt).embedding;
  return head;
}

}  // namespace vitattn::pipeline
