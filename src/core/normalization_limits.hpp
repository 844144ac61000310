#pragma once
// What can be an image normalisation x = (u8/255 − mean) / std. Pixels are scaled to 0…1
// first, so a std below 1e-6 multiplies them by a million or more and a mean beyond ±1000 is
// no mean of such pixels: no trained model saw such inputs, and float32 activations overflow
// within a few layers (--std 1e-45 drew maps of zeros and NaN class probabilities). The
// option check and the model's validation (a normalisation from the file or its config) both
// ask here.
#include <cmath>

namespace vitattn {

inline constexpr float kMinStd = 1e-6f;
inline constexpr float kMaxAbsMean = 1e3f;

inline bool plausible_std(float s) { return std::isfinite(s) && s >= kMinStd; }
inline bool plausible_mean(float m) { return std::isfinite(m) && std::fabs(m) <= kMaxAbsMean; }

}  // namespace vitattn
