// Out-variant embedding_bag and embedding (ops/indexing/embedding.cpp) against the JIT.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "harness/differential.h"
#include "harness/kernel_kinds.h"

namespace srt::testing {
namespace {

using ops::KernelKind;

InputSet bags(torch::Tensor weight, std::vector<int64_t> indices, std::vector<int64_t> offsets,
              torch::Dtype index_type = torch::kLong) {
  return {{weight, torch::tensor(indices).to(index_type), torch::tensor(offsets).to(index_type)}};
}

std::vector<InputSet> bagSets(torch::Dtype index_type = torch::kLong) {
  return {bags(torch::randn({10, 3}), {1, 2, 4, 5, 4, 3, 2, 9}, {0, 4}, index_type),
          // an empty bag in the middle, and the last bag empty
          bags(torch::randn({6, 5}), {0, 5, 5, 1}, {0, 1, 1, 4}, index_type),
          bags(torch::randn({4, 2}, torch::kFloat64), {3, 3, 0}, {0, 2}, index_type)};
}

// aten::embedding_bag.padding_idx as nn.EmbeddingBag calls it; mode 0 sum, 1 mean, 2 max.
std::string bagSource(int mode, bool include_last_offset, const std::string& padding_idx) {
  return R"JIT(
def forward(self, weight, indices, offsets):
    out, offset2bag, bag_size, max_indices = torch.embedding_bag(weight, indices, offsets, False, )JIT" +
         std::to_string(mode) + ", False, None, " + (include_last_offset ? "True" : "False") +
         ", " + padding_idx + R"JIT()
    return out
)JIT";
}

TEST(ShapeEmbedding, EmbeddingBagModes) {
  for (int mode : {0, 1, 2}) {
    const std::string source = bagSource(mode, false, "None");
    SCOPED_TRACE(mode);
    expectMatchesJit(source, bagSets());
    expectMatchesJit(source, bagSets(torch::kInt));
    expectKinds(source, {{"aten::embedding_bag", KernelKind::kOutVariant}});
  }
}

TEST(ShapeEmbedding, EmbeddingBagIncludeLastOffset) {
  for (int mode : {0, 1, 2}) {
    const std::string source = bagSource(mode, true, "None");
    SCOPED_TRACE(mode);
    expectMatchesJit(source, {bags(torch::randn({10, 3}), {1, 2, 4, 5, 4, 3, 2, 9}, {0, 4, 8}),
                              bags(torch::randn({6, 5}), {0, 5, 5, 1}, {0, 1, 1, 4}),
                              bags(torch::randn({4, 2}, torch::kFloat64), {3, 3, 0}, {0, 3})});
  }
}

TEST(ShapeEmbedding, EmbeddingBagPaddingIdx) {
  for (int mode : {0, 1, 2}) {
    for (const char* padding_idx : {"2", "-1"}) {
      const std::string source = bagSource(mode, false, padding_idx);
      SCOPED_TRACE(source);
      expectMatchesJit(source, {bags(torch::randn({10, 3}), {1, 2, 4, 2, 4, 3, 2, 9}, {0, 4}),
                                bags(torch::randn({6, 5}), {2, 2, 5, 1}, {0, 2, 3})});
    }
  }
}

// Cases outside the hand-written loop (mixed index dtypes, float16 weights) run ATen's kernel and
// copy its result.
TEST(ShapeEmbedding, EmbeddingBagGenericPath) {
  for (int mode : {0, 1, 2}) {
    const std::string source = bagSource(mode, false, "None");
    SCOPED_TRACE(source);
    expectMatchesJit(source,
                     {{{torch::randn({10, 3}), torch::tensor({1, 2, 4, 5}, torch::kInt),
                        torch::tensor({0, 2}, torch::kLong)}},
                      {{torch::randn({6, 4}).to(torch::kHalf), torch::tensor({0, 5, 5, 1}),
                        torch::tensor({0, 1, 1})}}},
                     1e-2);
  }
}

// Using offset2bag / bag_size / max_indices: left to the JIT.
TEST(ShapeEmbedding, EmbeddingBagAuxiliaryResultsFallBack) {
  const char* source = R"JIT(
def forward(self, weight, indices, offsets):
    out, offset2bag, bag_size, max_indices = torch.embedding_bag(weight, indices, offsets, False, 2, False, None, False)
    return out, bag_size
)JIT";
  expectKinds(source, {{"aten::embedding_bag", KernelKind::kFallback}});
}

// Per-sample weights run ATen's kernel into the planned output, whether the graph builds them or
// they arrive as nn.EmbeddingBag's optional argument (None on some calls, a tensor on others).
TEST(ShapeEmbedding, EmbeddingBagPerSampleWeights) {
  const char* weighted = R"JIT(
def forward(self, weight, indices, offsets):
    weights = torch.ones([indices.size(0)]) * 0.5
    return torch.embedding_bag(weight, indices, offsets, False, 0, False, weights, False)[0]
)JIT";
  expectKinds(weighted, {{"aten::embedding_bag", KernelKind::kOutVariant}});
  expectMatchesJit(weighted, {bags(torch::randn({10, 3}), {1, 2, 4, 5}, {0, 2}),
                              bags(torch::randn({6, 5}), {0, 5, 5, 1}, {0, 1, 1})});
  const char* optional = R"JIT(
def forward(self, weight, indices, offsets, per_sample_weights: Optional[Tensor]):
    return torch.embedding_bag(weight, indices, offsets, False, 0, False, per_sample_weights, False, None)[0]
)JIT";
  expectKinds(optional, {{"aten::embedding_bag", KernelKind::kOutVariant}});
  expectMatchesJit(optional, {{{torch::randn({10, 3}), torch::tensor({1, 2, 4, 5}),
                                torch::tensor({0, 2}), torch::rand({4})}},
                              {{torch::randn({6, 5}), torch::tensor({0, 5, 5, 1}),
                                torch::tensor({0, 1, 1}), c10::IValue()}}});
}

TEST(ShapeEmbedding, Embedding) {
  const char* source = R"JIT(
def forward(self, weight, indices):
    return torch.embedding(weight, indices), torch.embedding(weight, indices.view(-1), -1, False, False)
)JIT";
  expectMatchesJit(source, {{{torch::randn({10, 3}), torch::tensor({{1, 2}, {9, 0}})}},
                            {{torch::randn({4, 5}, torch::kFloat64), torch::tensor({3, 3, 1})}},
                            {{torch::randn({4, 2}), torch::zeros({0, 2}, torch::kLong)}}});
  expectKinds(source, {{"aten::embedding", KernelKind::kOutVariant}});
}

} // namespace
} // namespace srt::testing
