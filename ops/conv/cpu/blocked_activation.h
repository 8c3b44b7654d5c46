// pointwise::PointwiseActivation on a vector, for the per-capability blocked convolution loops
// (ops/conv/cpu/pointwise_blocked_loops.cpp, depthwise_blocked_loops.cpp).
#pragma once

#include <ATen/cpu/vec/vec.h>

#include "ops/conv/pointwise_blocked.h"

namespace srt::ops::pointwise {
inline namespace CPU_CAPABILITY {

inline at::vec::Vectorized<float> activate(const at::vec::Vectorized<float>& y,
                                           const PointwiseActivation& activation) {
  using Vec = at::vec::Vectorized<float>;
  Vec result = at::vec::clamp(y + Vec(activation.shift), Vec(activation.lo), Vec(activation.hi)) *
               Vec(activation.scale);
  return activation.times_input ? result * y : result;
}

} // namespace CPU_CAPABILITY
} // namespace srt::ops::pointwise
