// Random convolution weights for tests: [out, in, kernel, kernel], scaled so that activations keep
// their magnitude from layer to layer (as PyTorch's default initialization roughly does).
#pragma once

#include <cmath>
#include <cstdint>

#include <torch/torch.h>

namespace srt::testing {

inline at::Tensor convWeight(int64_t out, int64_t in, int64_t kernel) {
  return torch::randn({out, in, kernel, kernel}) * (1.0 / std::sqrt(in * kernel * kernel));
}

} // namespace srt::testing
