// aten_decompositions: ops that ATen computes by calling other ops are rewritten into those calls,
// so that they reach the kernels of the ops they call (the same values, bit for bit):
//
//   max_pool1d(x, [k], [s], [p], [d], ceil)
//     -> max_pool2d(x.unsqueeze(-2), [1, k], [1, s], [0, p], [1, d], ceil).squeeze(-2)
//   avg_pool1d(x, [k], [s], [p], ceil, count_include_pad)
//     -> avg_pool2d(x.unsqueeze(-2), [1, k], [1, s], [0, p], ceil, count_include_pad).squeeze(-2)
//   adaptive_avg_pool1d(x, [o]) -> adaptive_avg_pool2d(x.unsqueeze(-2), [1, o]).squeeze(-2)
//   adaptive_max_pool1d(x, [o]) -> adaptive_max_pool2d(x.unsqueeze(-2), [1, o]), each result
//                                  .squeeze(-2) (a height of one leaves the indices as they are)
//   selu(x) -> elu(x, SELU's alpha, SELU's scale, 1)
//   prelu(x, w) with a constant one-element w -> leaky_relu(x, w)   (nn.PReLU())
//   rrelu(x, lower, upper, training=False) -> leaky_relu(x, (lower + upper) / 2)
//                                  (nn.RReLU in eval; constant bounds with lower <= upper, else
//                                  ATen's op and its error)
//   pairwise_distance(x1, x2, p, eps, keepdim) -> norm(x1 - x2 + eps, p, [-1], keepdim)
//                                  (nn.PairwiseDistance; ATen's innermost dim of the broadcast
//                                  result, which -1 names at every rank)
//   cosine_similarity(x1, x2, dim, eps)
//     -> a, b = broadcast_tensors([x1, x2]);
//        sum(a / sqrt(clamp_min(sum(a ** 2, [dim], True), eps * eps))
//            * (b / sqrt(clamp_min(sum(b ** 2, [dim], True), eps * eps))), [dim])
//                                  (nn.CosineSimilarity; ATen's composite for floating inputs,
//                                  which are what it takes: for two integer inputs ATen raises
//                                  where the lowered form computes a value)
//
// and ops that ATen defines as another op with fixed arguments, renamed to it:
//   relu6(x) -> hardtanh(x, 0, 6)            (F.relu6; conv and linear fusion then take it)
//   x & y, x | y, x ^ y -> bitwise_and / bitwise_or / bitwise_xor(x, y)   (masks combined)
//   floor_divide(x, y) -> div(x, y, rounding_mode="floor")   (x // y on tensors)
//   argsort(x, dim, descending) -> sort(x, dim, descending)[1]   (and argsort(stable=))
//   fliplr(x) -> flip(x, [1]); flipud(x) -> flip(x, [0])
//   x.mT -> transpose(x, -2, -1)
//   swapaxes / swapdims(x, a, b) -> transpose(x, a, b); moveaxis -> movedim   (NumPy's names, as
//                                  torch.jit.trace records them: maxvit_t's window partitions)
// Each keeps ATen's values; an input ATen refuses is still refused, by the op it becomes.
//
// An empty stride means "the kernel size" in both the 1-D and the 2-D pooling ops, so it is passed
// on empty. The pooling forms need constant int[1] arguments; unsqueeze and squeeze are views and,
// counted from the end, take an unbatched [C, L] input too.
#include <optional>
#include <vector>

#include <torch/csrc/jit/ir/constants.h>
#include <torch/csrc/jit/ir/ir.h>
#include <torch/csrc/jit/ir/named_value.h>

#include "passes/graph_passes.h"
#include "passes/graph_walk.h"
#include "passes/shape_facts.h"

namespace srt::passes {
namespace {

using torch::jit::Graph;
using torch::jit::Node;
using torch::jit::Value;

// How one int[1] argument of the 1-D op becomes the 2-D op's int[2]: [fill, value].
struct ListArgument {
  int position;
  int64_t fill;
  bool may_be_empty; // an empty list stays empty (pooling strides)
};

struct PoolingForm {
  const char* schema;
  c10::Symbol lowered;
  std::vector<ListArgument> lists; // every other input is passed on as it is
  bool appends_none = false;       // the 2-D op takes one more, optional, argument last
};

const PoolingForm kPoolingForms[] = {
    {"aten::max_pool1d(Tensor self, int[1] kernel_size, int[1] stride=[], int[1] padding=0, "
     "int[1] dilation=1, bool ceil_mode=False) -> Tensor",
     c10::aten::max_pool2d,
     {{1, 1, false}, {2, 1, true}, {3, 0, false}, {4, 1, false}}},
    {"aten::avg_pool1d(Tensor self, int[1] kernel_size, int[1] stride=[], int[1] padding=0, "
     "bool ceil_mode=False, bool count_include_pad=True) -> Tensor",
     c10::aten::avg_pool2d,
     {{1, 1, false}, {2, 1, true}, {3, 0, false}},
     /*appends_none=*/true}, // divisor_override
    {"aten::adaptive_avg_pool1d(Tensor self, int[1] output_size) -> Tensor",
     c10::aten::adaptive_avg_pool2d,
     {{1, 1, false}}},
    {"aten::adaptive_max_pool1d(Tensor self, int[1] output_size) -> (Tensor, Tensor)",
     c10::aten::adaptive_max_pool2d,
     {{1, 1, false}}},
};

// The 2-D op's list for one 1-D list argument, when it is a constant the form takes.
std::optional<std::vector<int64_t>> widened(const Value* value, const ListArgument& argument) {
  const auto list = torch::jit::constant_as<std::vector<int64_t>>(value);
  if (list && list->empty() && argument.may_be_empty) {
    return std::vector<int64_t>{};
  }
  if (!list || list->size() != 1) {
    return std::nullopt;
  }
  return std::vector<int64_t>{argument.fill, list->front()};
}

bool lowerPooling(Graph& graph, Node* pool, const PoolingForm& form) {
  std::vector<std::vector<int64_t>> lists;
  for (const ListArgument& argument : form.lists) {
    auto list = widened(pool->input(argument.position), argument);
    if (!list) {
      return false;
    }
    lists.push_back(std::move(*list));
  }
  torch::jit::WithInsertPoint insert(pool);
  std::vector<Value*> inputs(pool->inputs().begin(), pool->inputs().end());
  for (size_t i = 0; i < lists.size(); ++i) {
    inputs[form.lists[i].position] = graph.insertConstant(lists[i]);
  }
  if (form.appends_none) {
    inputs.push_back(graph.insertConstant(c10::IValue()));
  }
  Value* height = graph.insertConstant(int64_t{-2});
  inputs[0] = graph.insert(c10::aten::unsqueeze, {pool->input(0), height});
  inputs[0]->setType(c10::TensorType::get());
  Node* lowered = graph.create(form.lowered, inputs, pool->outputs().size());
  graph.insertNode(lowered);
  for (size_t i = 0; i < pool->outputs().size(); ++i) {
    lowered->output(i)->setType(c10::TensorType::get());
    Value* squeezed = graph.insert(c10::aten::squeeze, {lowered->output(i), height});
    squeezed->setType(pool->output(i)->type());
    pool->output(i)->replaceAllUsesWith(squeezed);
  }
  pool->destroy();
  return true;
}

// ATen's selu is elu with these constants (its Activation.cpp).
constexpr double kSeluAlpha = 1.6732632423543772848170429916717;
constexpr double kSeluScale = 1.0507009873554804934193349852946;

bool lowerSelu(Graph& graph, Node* selu) {
  torch::jit::WithInsertPoint insert(selu);
  Value* elu = graph.insert(c10::aten::elu, {selu->input(0), kSeluAlpha, kSeluScale, 1.0});
  elu->setType(selu->output()->type());
  selu->output()->replaceAllUsesWith(elu);
  selu->destroy();
  return true;
}

// ATen's rrelu outside training is leaky_relu with the bounds' mean as its slope
// (rrelu_with_noise_out_cpu), computed in double as here.
bool lowerEvalRrelu(Graph& graph, Node* rrelu) {
  // Scalars: int or float constants.
  const std::optional<double> lower = knownNumber(rrelu->input(1));
  const std::optional<double> upper = knownNumber(rrelu->input(2));
  const auto training = torch::jit::constant_as<bool>(rrelu->input(3));
  if (!lower || !upper || !training || *training || *lower > *upper) {
    return false;
  }
  torch::jit::WithInsertPoint insert(rrelu);
  Value* leaky = graph.insert(c10::aten::leaky_relu, {rrelu->input(0), (*lower + *upper) / 2});
  leaky->setType(rrelu->output()->type());
  rrelu->output()->replaceAllUsesWith(leaky);
  rrelu->destroy();
  return true;
}

// prelu with one slope (nn.PReLU()'s default) is leaky_relu with that slope: ATen computes
// `x > 0 ? x : w * x` for both, and leaky_relu's float slope is w's value exactly. As leaky_relu
// it fuses into the convolution or linear layer before it (Conv-TasNet: after every 1x1
// convolution).
bool lowerSingleSlopePrelu(Graph& graph, Node* prelu) {
  const auto weight = torch::jit::constant_as<at::Tensor>(prelu->input(1));
  if (!weight || weight->numel() != 1 || weight->scalar_type() != at::kFloat) {
    return false;
  }
  torch::jit::WithInsertPoint insert(prelu);
  Value* leaky = graph.insert(c10::aten::leaky_relu,
                              {prelu->input(0), static_cast<double>(weight->item<float>())});
  leaky->setType(prelu->output()->type());
  prelu->output()->replaceAllUsesWith(leaky);
  prelu->destroy();
  return true;
}

bool lowerPairwiseDistance(Graph& graph, Node* distance) {
  torch::jit::WithInsertPoint insert(distance);
  Value* difference = graph.insert(c10::aten::sub, {distance->input(0), distance->input(1)});
  Value* shifted = graph.insert(c10::aten::add, {difference, distance->input(3)});
  Value* norm = graph.insert(
      c10::aten::norm, {shifted, distance->input(2), std::vector<int64_t>{-1}, distance->input(4)});
  difference->setType(c10::TensorType::get());
  shifted->setType(c10::TensorType::get());
  norm->setType(distance->output()->type());
  distance->output()->replaceAllUsesWith(norm);
  distance->destroy();
  return true;
}

// ||x|| along `dims`, kept as a dimension of one, and never below eps: ATen's cosine_similarity
// clamps the squared norm at eps * eps, then takes the root.
Value* clampedNorm(Graph& graph, Value* x, Value* dims, Value* squared_eps) {
  Value* squares = graph.insert(c10::aten::pow, {x, int64_t{2}});
  Value* sum = graph.insert(c10::aten::sum, {squares, dims, true});
  Value* clamped = graph.insert(c10::aten::clamp_min, {sum, squared_eps});
  Value* norm = graph.insert(c10::aten::sqrt, {clamped});
  for (Value* value : {squares, sum, clamped, norm}) {
    value->setType(c10::TensorType::get());
  }
  return norm;
}

bool lowerCosineSimilarity(Graph& graph, Node* similarity) {
  torch::jit::WithInsertPoint insert(similarity);
  Node* pair = graph.insertNode(
      graph.createList(c10::TensorType::get(), {similarity->input(0), similarity->input(1)}));
  Value* broadcast = graph.insert(c10::aten::broadcast_tensors, {pair->output()});
  broadcast->setType(c10::ListType::ofTensors());
  Node* unpack = graph.insertNode(graph.createListUnpack(broadcast, 2));
  Node* dims = graph.insertNode(graph.createList(c10::IntType::get(), {similarity->input(2)}));
  const auto eps = torch::jit::constant_as<double>(similarity->input(3));
  Value* squared_eps =
      eps ? graph.insertConstant(*eps * *eps)
          : graph.insert(c10::aten::mul, {similarity->input(3), similarity->input(3)});
  Value* a = graph.insert(
      c10::aten::div,
      {unpack->output(0), clampedNorm(graph, unpack->output(0), dims->output(), squared_eps)});
  Value* b = graph.insert(
      c10::aten::div,
      {unpack->output(1), clampedNorm(graph, unpack->output(1), dims->output(), squared_eps)});
  Value* product = graph.insert(c10::aten::mul, {a, b});
  Value* result = graph.insert(c10::aten::sum, {product, dims->output()});
  for (Value* value : {a, b, product}) {
    value->setType(c10::TensorType::get());
  }
  result->setType(similarity->output()->type());
  similarity->output()->replaceAllUsesWith(result);
  similarity->destroy();
  return true;
}

// `node` replaced by output `result` of a new `kind` node on `inputs` (with `outputs` results).
bool replaceByOp(Graph& graph, Node* node, c10::Symbol kind, const std::vector<Value*>& inputs,
                 size_t outputs = 1, size_t result = 0) {
  Node* replacement = graph.create(kind, inputs, outputs);
  replacement->insertBefore(node);
  for (Value* output : replacement->outputs()) {
    output->setType(c10::TensorType::get());
  }
  replacement->output(result)->setType(node->output()->type());
  node->output()->replaceAllUsesWith(replacement->output(result));
  node->destroy();
  return true;
}

struct Renaming {
  const char* schema;
  c10::Symbol replacement;
};

const Renaming kRenamings[] = {
    {"aten::swapaxes(Tensor(a) self, int axis0, int axis1) -> Tensor(a)", c10::aten::transpose},
    {"aten::swapdims(Tensor(a) self, int dim0, int dim1) -> Tensor(a)", c10::aten::transpose},
    {"aten::moveaxis.int(Tensor(a) self, int source, int destination) -> Tensor(a)",
     c10::aten::movedim},
    {"aten::moveaxis.intlist(Tensor(a) self, int[] source, int[] destination) -> Tensor(a)",
     c10::aten::movedim},
    {"aten::__and__.Tensor(Tensor self, Tensor other) -> Tensor", c10::aten::bitwise_and},
    {"aten::__and__.Scalar(Tensor self, Scalar other) -> Tensor", c10::aten::bitwise_and},
    {"aten::__or__.Tensor(Tensor self, Tensor other) -> Tensor", c10::aten::bitwise_or},
    {"aten::__or__.Scalar(Tensor self, Scalar other) -> Tensor", c10::aten::bitwise_or},
    {"aten::__xor__.Tensor(Tensor self, Tensor other) -> Tensor", c10::aten::bitwise_xor},
    {"aten::__xor__.Scalar(Tensor self, Scalar other) -> Tensor", c10::aten::bitwise_xor},
};

bool renameToFixedArguments(Graph& graph, Node* node) {
  for (const Renaming& renaming : kRenamings) {
    if (node->matches(renaming.schema)) {
      const std::vector<Value*> inputs(node->inputs().begin(), node->inputs().end());
      return replaceByOp(graph, node, renaming.replacement, inputs);
    }
  }
  torch::jit::WithInsertPoint insert(node);
  if (node->matches("aten::relu6(Tensor self) -> Tensor")) {
    return replaceByOp(graph, node, c10::aten::hardtanh,
                       {node->input(0), graph.insertConstant(0.0), graph.insertConstant(6.0)});
  }
  if (node->matches("aten::floor_divide(Tensor self, Tensor other) -> Tensor") ||
      node->matches("aten::floor_divide.Scalar(Tensor self, Scalar other) -> Tensor")) {
    return replaceByOp(graph, node, c10::aten::div,
                       {node->input(0), node->input(1), graph.insertConstant("floor")});
  }
  if (node->matches("aten::argsort(Tensor self, int dim=-1, bool descending=False) -> Tensor") ||
      node->matches("aten::argsort.stable(Tensor self, *, bool stable, int dim=-1, "
                    "bool descending=False) -> Tensor")) {
    const std::vector<Value*> inputs(node->inputs().begin(), node->inputs().end());
    return replaceByOp(graph, node, c10::aten::sort, inputs, /*outputs=*/2, /*result=*/1);
  }
  if (node->matches("aten::fliplr(Tensor self) -> Tensor") ||
      node->matches("aten::flipud(Tensor self) -> Tensor")) {
    const int64_t dim = node->kind() == c10::aten::fliplr ? 1 : 0;
    return replaceByOp(graph, node, c10::aten::flip,
                       {node->input(0), graph.insertConstant(std::vector<int64_t>{dim})});
  }
  if (node->matches("aten::mT(Tensor(a) self) -> Tensor(a)")) {
    return replaceByOp(
        graph, node, c10::aten::transpose,
        {node->input(0), graph.insertConstant(int64_t{-2}), graph.insertConstant(int64_t{-1})});
  }
  return false;
}

bool decompose(Graph& graph, Node* node) {
  for (const PoolingForm& form : kPoolingForms) {
    if (node->matches(form.schema)) {
      return lowerPooling(graph, node, form);
    }
  }
  if (node->matches("aten::selu(Tensor self) -> Tensor")) {
    return lowerSelu(graph, node);
  }
  if (node->matches("aten::rrelu(Tensor self, Scalar lower=0.125, Scalar upper=0.3333333333333333, "
                    "bool training=False, Generator? generator=None) -> Tensor")) {
    return lowerEvalRrelu(graph, node);
  }
  if (node->matches("aten::prelu(Tensor self, Tensor weight) -> Tensor")) {
    return lowerSingleSlopePrelu(graph, node);
  }
  if (node->matches("aten::pairwise_distance(Tensor x1, Tensor x2, float p=2., float eps=1e-06, "
                    "bool keepdim=False) -> Tensor")) {
    return lowerPairwiseDistance(graph, node);
  }
  if (node->matches(
          "aten::cosine_similarity(Tensor x1, Tensor x2, int dim=1, float eps=1e-08) -> Tensor")) {
    return lowerCosineSimilarity(graph, node);
  }
  return renameToFixedArguments(graph, node);
}

} // namespace

bool decomposeAtenOps(GraphPtr& graph) {
  bool changed = false;
  forEachNode(graph->block(), [&](Node* node) { changed |= decompose(*graph, node); });
  return changed;
}

} // namespace srt::passes
