// For kernels that call a composite at::native function directly (conv2d, the fused transformer
// ops): the ATen ops it calls inside must skip the autograd and ADInplaceOrView layers, as they do
// when the dispatcher enters it (the autograd kernel of the outer op excludes those keys for
// everything below it). Without this guard every inner op pays for those layers: the fused
// encoder layer ran ~10% slower called directly than through the JIT fallback.
// The runtime is inference-only (grad mode off), so nothing is lost.
#pragma once

#include <ATen/core/LegacyTypeDispatch.h>

namespace srt::ops {

using InferenceDispatch = at::AutoDispatchBelowADInplaceOrView;

} // namespace srt::ops
