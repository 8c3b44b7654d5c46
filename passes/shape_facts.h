// What a graph proves about tensor ranks and sizes, and the numbers computed from them: the
// questions the attention passes ask to recognise `view(B, T, H, C // H)` as a head split of a
// known head size, or `1 / sqrt(k.size(-1))` as a constant scale, when the sizes are only known at
// run time in the IR but fixed by the constant weights the tensors meet.
//
// Facts come from the producers of a value (linear with a constant weight, view/reshape sizes,
// transpose/permute, split/chunk pieces, shape-preserving ops) and from its consumers in the same
// block (x.size(-1) == W.size(1) for linear(x, W): otherwise that linear raises, before or after).
#pragma once

#include <cstdint>
#include <optional>

namespace torch::jit {
struct Block;
struct Node;
struct Value;
} // namespace torch::jit

namespace srt::passes {

// The rank of a tensor value when the graph fixes it.
std::optional<int64_t> knownRank(const torch::jit::Value* value);

// knownRank without what asserts on the value say: what such an assert can be checked against.
std::optional<int64_t> derivedRank(const torch::jit::Value* value);

// The ranks a tensor value can have wherever the graph runs past its producer: [r, r] where
// derivedRank knows r; a convolution or pooling over k spatial dims makes k + 1 (an unbatched
// input) or k + 2 (a batched one), or raises; element-wise ops pass their operands' ranges on.
// What `len(x.size()) > 2` in every F.adaptive_avg_pool2d asks of a convolution's output, whose
// exact rank the graph's input leaves open.
struct RankRange {
  int64_t min = 0;
  int64_t max = 0;
};
std::optional<RankRange> rankRange(const torch::jit::Value* value);

// The tensor whose rank `value` is: aten::dim(t), or aten::len(aten::size(t)); else nullptr.
const torch::jit::Value* rankedTensor(const torch::jit::Value* value);

// What `node` asserts when it is `if rank(t) != r: raise` or `if rank(t) == r: pass else: raise`
// (rank: rankedTensor's forms; r a constant): below it, t has rank r.
struct RankAssertion {
  const torch::jit::Value* tensor = nullptr;
  int64_t rank = 0;
};
std::optional<RankAssertion> rankAssertion(const torch::jit::Node* node);

// The input whose rank `value` always has, when its producer keeps its input's rank
// (convolutions, pooling, element-wise ops of one tensor); else nullptr.
const torch::jit::Value* sameRankInput(const torch::jit::Value* value);

// `dim` as an index in [0, rank); std::nullopt when the rank is unknown or `dim` out of range.
std::optional<int64_t> normalizedDim(int64_t dim, std::optional<int64_t> rank);

// Size `dim` (negative counts from the end) of a tensor value, when the graph fixes it.
std::optional<int64_t> knownSize(const torch::jit::Value* tensor, int64_t dim);

// tensor.size(-1) wherever `block` runs, when a linear in `block` reads `tensor` with a weight
// whose input size the graph fixes: linear(tensor, W) raises unless tensor.size(-1) ==
// W.size(1). (knownSize takes such readers only in the block defining `tensor`.)
std::optional<int64_t> lastSizeReadIn(const torch::jit::Value* tensor,
                                      const torch::jit::Block* block);

// The value of an int or float expression (constants, tensor sizes the graph fixes, + - * / //,
// sqrt, pow, int/float casts), when it is a compile-time number.
std::optional<double> knownNumber(const torch::jit::Value* value);

// knownNumber for an int value.
std::optional<int64_t> knownInt(const torch::jit::Value* value);

// Which size of which tensor an int value is: aten::size(t, d), or an element of
// prim::ListUnpack(aten::size(t)) (whose arity is then t's rank). `dim` is normalized when the
// rank is known.
struct SizeOf {
  const torch::jit::Value* tensor = nullptr;
  int64_t dim = 0;
};
std::optional<SizeOf> sizeOf(const torch::jit::Value* value);

} // namespace srt::passes
