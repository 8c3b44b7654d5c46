// Native kernels for PyTorch's fused encoder-layer and multi-head-attention ops
// (ops/attention/aten_fast_paths.cpp) against the JIT.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "harness/differential.h"
#include "harness/kernel_kinds.h"

namespace srt::testing {
namespace {

using ops::KernelKind;

constexpr int64_t kModel = 8;
constexpr int64_t kFeedForward = 16;

TEST(ShapeFusedTransformer, NativeMultiHeadAttention) {
  const char* source = R"JIT(
def forward(self, q, w, b, pw, pb):
    out, weights = torch._native_multi_head_attention(q, q, q, 8, 2, w, b, pw, pb, None, True, True, None)
    return out, weights
)JIT";
  auto set = [](int64_t batch, int64_t seq) {
    return InputSet{{torch::randn({batch, seq, kModel}), torch::randn({3 * kModel, kModel}),
                     torch::randn({3 * kModel}), torch::randn({kModel, kModel}),
                     torch::randn({kModel})}};
  };
  expectMatchesJit(source, {set(1, 4), set(3, 6)}, 1e-4);
  expectKinds(source, {{"aten::_native_multi_head_attention", KernelKind::kNative}});
}

TEST(ShapeFusedTransformer, EncoderLayerForward) {
  const char* source = R"JIT(
def forward(self, src, qkv_w, qkv_b, proj_w, proj_b, n1w, n1b, n2w, n2b, w1, b1, w2, b2):
    return torch._transformer_encoder_layer_fwd(src, 8, 2, qkv_w, qkv_b, proj_w, proj_b, False, False,
        1e-5, n1w, n1b, n2w, n2b, w1, b1, w2, b2, None, None)
)JIT";
  auto set = [](int64_t batch, int64_t seq) {
    return InputSet{{torch::randn({batch, seq, kModel}), torch::randn({3 * kModel, kModel}),
                     torch::randn({3 * kModel}), torch::randn({kModel, kModel}),
                     torch::randn({kModel}), torch::rand({kModel}) + 0.5, torch::randn({kModel}),
                     torch::rand({kModel}) + 0.5, torch::randn({kModel}),
                     torch::randn({kFeedForward, kModel}), torch::randn({kFeedForward}),
                     torch::randn({kModel, kFeedForward}), torch::randn({kModel})}};
  };
  expectMatchesJit(source, {set(1, 4), set(2, 5)}, 1e-4);
  expectKinds(source, {{"aten::_transformer_encoder_layer_fwd", KernelKind::kNative}});
}

} // namespace
} // namespace srt::testing
