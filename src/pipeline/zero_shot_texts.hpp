#pragma once
// Texts as a model's classes: each text through the text tower, its embedding one row of a
// zero-shot head (core/zero_shot.hpp) with the tower's logit scale (and SigLIP's bias and
// sigmoid), so that every map, --top and the faithfulness scores read the image–text logit.
#include <cstdint>
#include <vector>

#include "core/text_tower.hpp"
#include "core/zero_shot.hpp"

namespace vitattn::pipeline {

// ids: one token row per text (the tower's context long). `empty_prompt`: the ids of LeGrad's
// empty prompt ("a photo of a") for SigLIP's correction (legrad_text.hpp), or empty: none.
// Throws Error (from the tower).
ZeroShotHead zero_shot_head(const TextTower& tower, const std::vector<std::vector<std::int32_t>>& ids,
                            const std::vector<std::int32_t>& empty_prompt = {});

// Classes already encoded (n_classes, E), unit rows (a prompt ensemble's), as the head.
ZeroShotHead zero_shot_head(const TextTower& tower, Matrix classes, const std::vector<std::int32_t>& empty_prompt = {});

// The text of LeGrad's empty prompt (the authors' _init_empty_embedding).
inline constexpr const char* kLegradEmptyPrompt = "a photo of a";

}  // namespace vitattn::pipeline
