// A transpose of the last two dimensions feeding a GEMM becomes the GEMM's transpose flag, and a
// constant scalar multiplying (or dividing) its result becomes its alpha: one srt::gemm node
// (ops/gemm/fused.cpp) instead of a view (which use_copy_variants would turn into a copy), a
// GEMM and a pass over the output. OpenBLAS reads a transposed operand in place.
//
// Only rewrites that keep every result (and every error) of the original are made:
// - aten::transpose(x, -2, -1) before any of mm / matmul / bmm; transpose(0, 1) before mm and
//   transpose(1, 2) before bmm (which take exactly 2-D / 3-D operands);
// - aten::t(x) before mm (t differs from transpose(-2, -1) only on ranks mm refuses anyway), or
//   before matmul when the graph says x is 2-D;
// - aten::permute swapping the last two of n dimensions before mm (n = 2) or bmm (n = 3);
// - aten::mul(gemm, c) / aten::div(gemm, c) with a constant real c, the gemm's only use. (A scale
//   on an input is not folded: a float scalar times an integer tensor changes its dtype.)
#include <optional>
#include <vector>

#include <torch/csrc/jit/ir/constants.h>
#include <torch/csrc/jit/ir/ir.h>

#include "passes/graph_passes.h"
#include "passes/graph_walk.h"

namespace srt::passes {
namespace {

using torch::jit::Node;
using torch::jit::Value;

// The rank the consumer demands of its operands, or nullopt (matmul: any rank >= 1).
std::optional<int64_t> requiredRank(const Node* gemm) {
  if (gemm->kind() == c10::aten::mm) {
    return 2;
  }
  if (gemm->kind() == c10::aten::bmm) {
    return 3;
  }
  return std::nullopt;
}

std::optional<int64_t> knownRank(const Value* value) {
  if (auto type = value->type()->cast<c10::TensorType>()) {
    if (auto dim = type->dim()) {
      return static_cast<int64_t>(*dim);
    }
  }
  return std::nullopt;
}

// `dim` of a rank-`rank` tensor as a non-negative index, or nullopt when out of range.
std::optional<int64_t> normalized(int64_t dim, int64_t rank) {
  if (dim < -rank || dim >= rank) {
    return std::nullopt;
  }
  return dim < 0 ? dim + rank : dim;
}

bool swapsLastTwo(int64_t d0, int64_t d1, int64_t rank) {
  const auto a = normalized(d0, rank);
  const auto b = normalized(d1, rank);
  return a && b && ((*a == rank - 2 && *b == rank - 1) || (*a == rank - 1 && *b == rank - 2));
}

// The tensor `operand` transposes (last two dimensions) when the consumer can take that
// transpose as a flag with unchanged results and errors; else nullptr.
Value* absorbableTranspose(const Value* operand, const Node* gemm) {
  const Node* producer = operand->node();
  if (operand->uses().size() != 1) {
    return nullptr;
  }
  const std::optional<int64_t> rank = requiredRank(gemm);
  if (producer->kind() == c10::aten::transpose &&
      producer->matches("aten::transpose.int(Tensor(a) self, int dim0, int dim1) -> Tensor(a)")) {
    const auto d0 = torch::jit::constant_as<int64_t>(producer->input(1));
    const auto d1 = torch::jit::constant_as<int64_t>(producer->input(2));
    if (!d0 || !d1) {
      return nullptr;
    }
    const bool literal_last_two = (*d0 == -2 && *d1 == -1) || (*d0 == -1 && *d1 == -2);
    return literal_last_two || (rank && swapsLastTwo(*d0, *d1, *rank)) ? producer->input(0)
                                                                       : nullptr;
  }
  if (producer->kind() == c10::aten::t) {
    const bool two_d = gemm->kind() == c10::aten::mm ||
                       (gemm->kind() == c10::aten::matmul && knownRank(producer->input(0)) == 2);
    return two_d ? producer->input(0) : nullptr;
  }
  if (producer->kind() == c10::aten::permute && rank) {
    const auto dims = torch::jit::constant_as<std::vector<int64_t>>(producer->input(1));
    if (!dims || static_cast<int64_t>(dims->size()) != *rank) {
      return nullptr;
    }
    for (int64_t i = 0; i < *rank - 2; ++i) {
      if (normalized((*dims)[i], *rank) != i) {
        return nullptr;
      }
    }
    return swapsLastTwo((*dims)[*rank - 2], (*dims)[*rank - 1], *rank) ? producer->input(0)
                                                                       : nullptr;
  }
  return nullptr;
}

// The constant real number the gemm's only user multiplies its result by (1 / c for a division),
// and that user; nullopt when there is none.
struct OutputScale {
  Node* user;
  c10::Scalar factor;
};

std::optional<OutputScale> outputScale(const Node* gemm) {
  const Value* result = gemm->output();
  if (result->uses().size() != 1 || result->uses()[0].offset != 0) {
    return std::nullopt;
  }
  Node* user = result->uses()[0].user;
  const bool mul = user->matches("aten::mul.Scalar(Tensor self, Scalar other) -> Tensor");
  const bool div = user->matches("aten::div.Scalar(Tensor self, Scalar other) -> Tensor");
  if (!mul && !div) {
    return std::nullopt;
  }
  const auto factor = torch::jit::toIValue(user->input(1));
  if (!factor || !(factor->isInt() || factor->isDouble())) {
    return std::nullopt;
  }
  if (mul) {
    return OutputScale{user, factor->toScalar()};
  }
  // div is true division: its result is floating even for integer operands, as x * (1.0 / c) is.
  const double divisor =
      factor->isInt() ? static_cast<double>(factor->toInt()) : factor->toDouble();
  if (divisor == 0.0) {
    return std::nullopt;
  }
  return OutputScale{user, c10::Scalar(1.0 / divisor)};
}

const char* gemmName(const Node* gemm) {
  return gemm->kind() == c10::aten::mm ? "mm" : gemm->kind() == c10::aten::bmm ? "bmm" : "matmul";
}

bool isPlainGemm(const Node* node) {
  return node->matches("aten::mm(Tensor self, Tensor mat2) -> Tensor") ||
         node->matches("aten::bmm(Tensor self, Tensor mat2) -> Tensor") ||
         node->matches("aten::matmul(Tensor self, Tensor other) -> Tensor");
}

bool absorbInto(Node* gemm) {
  Value* a = absorbableTranspose(gemm->input(0), gemm);
  Value* b = absorbableTranspose(gemm->input(1), gemm);
  const std::optional<OutputScale> scale = outputScale(gemm);
  if (!a && !b && !scale) {
    return false;
  }
  torch::jit::Graph& graph = *gemm->owningGraph();
  const torch::jit::WithInsertPoint here(gemm);
  Value* inputs[] = {a ? a : gemm->input(0),
                     b ? b : gemm->input(1),
                     graph.insertConstant(a != nullptr),
                     graph.insertConstant(b != nullptr),
                     graph.insertConstant(scale ? c10::IValue(scale->factor) : c10::IValue(1)),
                     graph.insertConstant(std::string(gemmName(gemm)))};
  Node* fused = graph.insertNode(graph.create(c10::Symbol::fromQualString("srt::gemm"), inputs));
  fused->output()->setType(c10::TensorType::get());
  fused->copyMetadata(gemm); // source range, inlined call stack, scope: for error messages
  Node* last = scale ? scale->user : gemm;
  fused->output()->copyMetadata(last->output());
  last->output()->replaceAllUsesWith(fused->output());
  std::vector<Node*> dead{last};
  if (scale) {
    dead.push_back(gemm);
  }
  std::vector<Node*> transposes;
  if (a) {
    transposes.push_back(gemm->input(0)->node());
  }
  if (b) {
    transposes.push_back(gemm->input(1)->node());
  }
  for (Node* node : dead) {
    node->destroy();
  }
  for (Node* node : transposes) {
    if (!node->output()->hasUses()) {
      node->destroy();
    }
  }
  return true;
}

} // namespace

bool absorbTransposes(GraphPtr& graph) {
  bool changed = false;
  for (Node* gemm : nodesWhere(graph->block(), isPlainGemm)) {
    changed = absorbInto(gemm) || changed;
  }
  return changed;
}

} // namespace srt::passes
