// timesBlocked (ops/recurrent/recurrent_weights.h), the recurrent steps' row products, on a cell's
// packed weights against a double-precision product: float32 and bfloat16 packing, passes front to
// back and back to front, 1 to 9 rows (every grouping of four, two and one), and an input of 2101
// values (the bfloat16 product rounds x in two chunks of kPairChunk pairs and an odd tail).
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "ops/core/multiply_precision.h"
#include "ops/recurrent/gate_loops.h"
#include "ops/recurrent/recurrent_weights.h"

namespace srt::testing {
namespace {

using ops::MultiplyPrecision;
using ops::recurrent::RecurrentMode;

// Passes over the weight for `rows` rows: four at a time, then two, then one.
int64_t passes(int64_t rows) {
  return rows / 4 + (rows % 4 >= 2 ? 1 : 0) + rows % 2;
}

TEST(BlockedProducts, MatchTheProductEitherWayRound) {
  constexpr int64_t kInput = 2101;
  constexpr int64_t kOutputs = 70; // two column blocks, the second padded
  static_assert(kInput > 2 * ops::recurrent::kPairChunk);
  const at::Tensor w_ih = torch::randn({kOutputs, kInput}) / std::sqrt(double(kInput));
  const at::Tensor w_hh = torch::randn({kOutputs, kOutputs});
  for (const auto precision : {MultiplyPrecision::kFloat32, MultiplyPrecision::kBFloat16}) {
    const bool bf16 = precision == MultiplyPrecision::kBFloat16;
    if (bf16 && !ops::cpuMultipliesBFloat16()) {
      continue;
    }
    SCOPED_TRACE(bf16 ? "bfloat16" : "float32");
    const auto weights =
        ops::recurrent::packCellWeights(RecurrentMode::kRnnTanh, w_ih, w_hh, {}, {}, precision);
    ASSERT_NE(weights, nullptr);
    const at::Tensor& blocked = weights->layers.front().w_ih_blocked;
    EXPECT_EQ(blocked.scalar_type(), bf16 ? at::kBFloat16 : at::kFloat);
    const int64_t padded = blocked.size(0) * ops::recurrent::kColumnBlock;
    const auto rounded = [&](const at::Tensor& t) {
      return (bf16 ? t.to(at::kBFloat16) : t).to(at::kDouble);
    };
    for (int64_t rows = 1; rows <= 9; ++rows) {
      const at::Tensor x = torch::randn({rows, kInput});
      const at::Tensor expected = at::matmul(rounded(x), rounded(w_ih).t());
      for (const bool backwards : {false, true}) {
        SCOPED_TRACE("rows " + std::to_string(rows) + (backwards ? " back to front" : ""));
        at::Tensor y = torch::full({rows, padded}, std::nanf(""));
        const bool next =
            ops::recurrent::timesBlocked(x.data_ptr<float>(), kInput, rows, blocked, kInput,
                                         y.data_ptr<float>(), padded, backwards);
        EXPECT_EQ(next, backwards != (passes(rows) % 2 == 1));
        const at::Tensor actual = y.narrow(1, 0, kOutputs).to(at::kDouble);
        EXPECT_LT((actual - expected).abs().max().item<double>(), 1e-4);
        // The padded columns are written too (zero weights).
        EXPECT_EQ(y.narrow(1, kOutputs, padded - kOutputs).abs().max().item<float>(), 0.f);
      }
    }
  }
}

} // namespace
} // namespace srt::testing
