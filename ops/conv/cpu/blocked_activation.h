// pointwise::PointwiseActivation on a vector, for the per-capability blocked convolution loops
// (ops/conv/cpu/pointwise_blocked_loops.cpp, depthwise_blocked_loops.cpp).
#pragma once

#include <ATen/cpu/vec/vec.h>

#include "ops/conv/pointwise_blocked.h"

namespace srt::ops::pointwise {
inline namespace CPU_CAPABILITY {

// Callers pass a local copy of their convolution's activation: read through the convolution's
// struct, which the output's float stores may alias, GCC reloads and broadcasts its floats again
// after every store (AMD EPYC, Zen 5: the strided Winograd loop's output transform of the small
// CNN's 16 -> 32 took 7% longer so; ops/conv/stem_conv.h's 3 -> 32 at stride 2, 224x224, 149 us
// against 131).
inline at::vec::Vectorized<float> activate(const at::vec::Vectorized<float>& y,
                                           const PointwiseActivation& activation) {
  using Vec = at::vec::Vectorized<float>;
  Vec result = at::vec::clamp(y + Vec(activation.shift), Vec(activation.lo), Vec(activation.hi)) *
               Vec(activation.scale);
  return activation.times_input ? result * y : result;
}

} // namespace CPU_CAPABILITY
} // namespace srt::ops::pointwise
