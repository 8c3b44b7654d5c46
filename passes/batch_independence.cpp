#include "passes/batch_independence.h"

#include <functional>
#include <optional>
#include <stdexcept>
#include <unordered_map>

#include <torch/csrc/jit/ir/constants.h>
#include <torch/csrc/jit/ir/ir.h>

#include "passes/describe_node.h"
#include "passes/rewrite_safety.h"

namespace srt::passes {
namespace {

using torch::jit::Node;
using torch::jit::Value;

// How a value relates to the batch.
enum class Kind {
  kFree,         // does not depend on it
  kBatched,      // a tensor whose dim 0 is the batch, item i computed from items i only
  kBatchSize,    // the batch size (x.size(0))
  kBatchShape,   // an int list [batch size, batch-free ints...] (x.size(), view's sizes)
  kBatchedList,  // a list of kBatched tensors of one rank (cat's input, chunk's output)
  kBatchedTuple, // a tuple of kBatched tensors and None (only returned)
};

struct Fact {
  Kind kind = Kind::kFree;
  // Of a kBatched tensor or the tensors of a kBatchedList; of a kBatchShape, its length.
  int64_t rank = -1;
  // Where rank is unknown: the batched input (index into batched_inputs) whose rank it has.
  int64_t rank_of_input = -1;
};

Fact batched(int64_t rank) {
  return {Kind::kBatched, rank, -1};
}

class Analysis {
public:
  explicit Analysis(BatchIndependence& result) : result_(result) {}

  const Fact& fact(const Value* value) const {
    static const Fact free;
    auto found = facts_.find(value);
    return found == facts_.end() ? free : found->second;
  }
  void set(const Value* value, Fact fact) { facts_[value] = fact; }

  bool isFree(const Value* value) const { return fact(value).kind == Kind::kFree; }

  // Records why the graph is not independent; returns false for the caller to return.
  bool refuse(const Node* node, const std::string& why) {
    result_.reason = describeNode(node) + ": " + why;
    return false;
  }

  // The rank of `fact`'s tensors where known, or fixed by an earlier requireRank.
  std::optional<int64_t> rank(const Fact& fact) const {
    if (fact.rank >= 0) {
      return fact.rank;
    }
    if (fact.rank_of_input >= 0 && result_.required_ranks[fact.rank_of_input] >= 0) {
      return result_.required_ranks[fact.rank_of_input];
    }
    return std::nullopt;
  }

  // Whether `fact`'s tensors have rank `wanted`, fixing the rank of the input they take theirs
  // from when nothing has yet.
  bool requireRank(const Fact& fact, int64_t wanted) {
    if (std::optional<int64_t> known = rank(fact)) {
      return *known == wanted;
    }
    if (fact.rank_of_input < 0) {
      return false;
    }
    result_.required_ranks[fact.rank_of_input] = wanted;
    return true;
  }

  // Two batched facts whose tensors have one rank for sure.
  bool sameRank(const Fact& a, const Fact& b) const {
    const std::optional<int64_t> rank_a = rank(a);
    const std::optional<int64_t> rank_b = rank(b);
    if (rank_a && rank_b) {
      return *rank_a == *rank_b;
    }
    return !rank_a && !rank_b && a.rank_of_input >= 0 && a.rank_of_input == b.rank_of_input;
  }

  // `dim` in [0, rank) when the rank is known, or a non-negative `dim` as it is.
  std::optional<int64_t> normalizedDim(const Fact& fact, int64_t dim) const {
    if (dim >= 0) {
      return dim;
    }
    if (std::optional<int64_t> known = rank(fact)) {
      return dim + *known >= 0 ? std::optional<int64_t>(dim + *known) : std::nullopt;
    }
    return std::nullopt;
  }

  bool block(const torch::jit::Block* block);

private:
  bool node(const Node* node);
  bool ifNode(const Node* node);

  BatchIndependence& result_;
  std::unordered_map<const Value*, Fact> facts_;
};

using Rule = std::function<bool(Analysis&, const Node*)>;

std::optional<int64_t> constantInt(const Value* value) {
  auto constant = torch::jit::toIValue(value);
  return constant && constant->isInt() ? std::optional<int64_t>(constant->toInt()) : std::nullopt;
}

std::optional<at::Tensor> constantTensor(const Value* value) {
  auto constant = torch::jit::toIValue(value);
  return constant && constant->isTensor() ? std::optional<at::Tensor>(constant->toTensor())
                                          : std::nullopt;
}

// Inputs after the first must not depend on the batch.
bool restFree(Analysis& analysis, const Node* node, size_t first) {
  for (size_t i = first; i < node->inputs().size(); ++i) {
    if (!analysis.isFree(node->input(i))) {
      return analysis.refuse(node, "its input " + std::to_string(i) +
                                       " depends on the batch where only input 0 may");
    }
  }
  return true;
}

bool batchedInput(Analysis& analysis, const Node* node) {
  if (analysis.fact(node->input(0)).kind != Kind::kBatched) {
    return analysis.refuse(node, "its input 0 is not a batched tensor");
  }
  return true;
}

// Element-wise ops of one tensor and normalizations over each item (eval-mode batch_norm,
// group_norm): every output item is a function of the same input item.
bool perItem(Analysis& analysis, const Node* node) {
  if (!batchedInput(analysis, node) || !restFree(analysis, node, 1)) {
    return false;
  }
  analysis.set(node->output(), analysis.fact(node->input(0)));
  return true;
}

bool batchNorm(Analysis& analysis, const Node* node) {
  // batch_norm(input, weight, bias, running_mean, running_var, training, ...)
  const auto training = torch::jit::toIValue(node->input(5));
  if (!training || !training->isBool() || training->toBool()) {
    return analysis.refuse(node, "batch statistics mix the items (training mode)");
  }
  return perItem(analysis, node);
}

bool layerNorm(Analysis& analysis, const Node* node) {
  if (!batchedInput(analysis, node) || !restFree(analysis, node, 1)) {
    return false;
  }
  const auto normalized = constantIntList(node->input(1));
  const std::optional<int64_t> rank = analysis.rank(analysis.fact(node->input(0)));
  if (!normalized || !rank || static_cast<int64_t>(normalized->size()) >= *rank) {
    return analysis.refuse(node, "its normalized shape may reach dim 0");
  }
  analysis.set(node->output(), analysis.fact(node->input(0)));
  return true;
}

// Convolutions and pooling over `spatial` dims read a tensor of spatial + 1 dims as one
// unbatched item: only spatial + 2 makes dim 0 the batch.
Rule spatialOp(int64_t spatial) {
  return [spatial](Analysis& analysis, const Node* node) {
    if (!batchedInput(analysis, node) || !restFree(analysis, node, 1)) {
      return false;
    }
    if (!analysis.requireRank(analysis.fact(node->input(0)), spatial + 2)) {
      return analysis.refuse(node, "its input is not of rank " + std::to_string(spatial + 2) +
                                       ", the only one with a batch dim");
    }
    for (const Value* output : node->outputs()) {
      analysis.set(output, output->type()->kind() == c10::TypeKind::TensorType
                               ? batched(spatial + 2)
                               : Fact{});
    }
    return true;
  };
}

// linear(x, W, b) and matmul(x, W) with a batch-free W of rank <= 2: along x's last dim only,
// once x has a batch dim besides it.
bool linearLike(Analysis& analysis, const Node* node) {
  if (!batchedInput(analysis, node) || !restFree(analysis, node, 1)) {
    return false;
  }
  const Fact& input = analysis.fact(node->input(0));
  const std::optional<int64_t> rank = analysis.rank(input);
  if (!rank || *rank < 2) {
    return analysis.refuse(node, "its input may have no dim besides the one it multiplies");
  }
  int64_t output_rank = *rank;
  if (node->kind() == symbol("aten::matmul")) {
    const std::optional<at::Tensor> weight = constantTensor(node->input(1));
    if (!weight || weight->dim() > 2) {
      return analysis.refuse(node, "its second operand is not a constant matrix or vector");
    }
    output_rank = weight->dim() == 1 ? *rank - 1 : *rank;
  }
  analysis.set(node->output(), batched(output_rank));
  return true;
}

// a (op) b, either in place: two batched tensors of one rank, or a batched tensor and a number
// or a constant that broadcasts along dims after the batch.
bool binary(Analysis& analysis, const Node* node) {
  const Fact& a = analysis.fact(node->input(0));
  const Fact& b = analysis.fact(node->input(1));
  if (!restFree(analysis, node, 2)) {
    return false;
  }
  const std::string name = node->kind().toUnqualString();
  const bool in_place = name.back() == '_';
  if (a.kind == Kind::kBatched && b.kind == Kind::kBatched) {
    if (!analysis.sameRank(a, b)) {
      return analysis.refuse(node, "its operands may differ in rank, which moves one's batch dim");
    }
    analysis.set(node->output(), a);
    return true;
  }
  const bool a_batched = a.kind == Kind::kBatched;
  if ((!a_batched && b.kind != Kind::kBatched) || (a_batched && b.kind != Kind::kFree) ||
      (!a_batched && a.kind != Kind::kFree) || (in_place && !a_batched)) {
    return analysis.refuse(node, "its operands are not a batched tensor and a batch-free one");
  }
  const Fact& tensor = a_batched ? a : b;
  const Value* other = node->input(a_batched ? 1 : 0);
  if (other->type()->kind() == c10::TypeKind::TensorType) {
    const std::optional<at::Tensor> constant = constantTensor(other);
    const std::optional<int64_t> rank = analysis.rank(tensor);
    if (!constant || !rank || constant->dim() > *rank ||
        (constant->dim() == *rank && constant->size(0) != 1)) {
      return analysis.refuse(node, "its batch-free operand may broadcast along the batch dim");
    }
  }
  analysis.set(node->output(), tensor);
  return true;
}

bool flatten(Analysis& analysis, const Node* node) {
  if (!batchedInput(analysis, node)) {
    return false;
  }
  const Fact& input = analysis.fact(node->input(0));
  const std::optional<int64_t> start = constantInt(node->input(1));
  const std::optional<int64_t> end = constantInt(node->input(2));
  const std::optional<int64_t> first = start ? analysis.normalizedDim(input, *start) : std::nullopt;
  if (!first || !end || *first < 1) {
    return analysis.refuse(node, "it may flatten the batch dim");
  }
  const std::optional<int64_t> rank = analysis.rank(input);
  const std::optional<int64_t> last = analysis.normalizedDim(input, *end);
  if (rank && last) {
    analysis.set(node->output(), batched(*rank - (*last - *first)));
  } else {
    // flatten(x, s, -1) has s + 1 dims whatever x has.
    analysis.set(node->output(), batched(*end == -1 ? *first + 1 : -1));
  }
  return true;
}

// mean / sum / amax over constant dims, none of them 0.
bool reduction(Analysis& analysis, const Node* node) {
  if (!batchedInput(analysis, node) || !restFree(analysis, node, 1)) {
    return false;
  }
  const Fact& input = analysis.fact(node->input(0));
  const auto dims = constantIntList(node->input(1));
  const auto keep_dim = torch::jit::toIValue(node->input(2));
  if (!dims || dims->empty() || !keep_dim || !keep_dim->isBool()) {
    return analysis.refuse(node, "it may reduce over the batch dim");
  }
  for (const int64_t dim : *dims) {
    const std::optional<int64_t> normalized = analysis.normalizedDim(input, dim);
    if (!normalized || *normalized == 0) {
      return analysis.refuse(node, "it may reduce over the batch dim");
    }
  }
  const std::optional<int64_t> rank = analysis.rank(input);
  analysis.set(node->output(),
               keep_dim->toBool()
                   ? input
                   : batched(rank ? *rank - static_cast<int64_t>(dims->size()) : int64_t{-1}));
  return true;
}

// softmax / log_softmax along a dim other than 0.
bool alongOneDim(Analysis& analysis, const Node* node) {
  if (!batchedInput(analysis, node) || !restFree(analysis, node, 1)) {
    return false;
  }
  const Fact& input = analysis.fact(node->input(0));
  const std::optional<int64_t> dim = constantInt(node->input(1));
  const std::optional<int64_t> normalized = dim ? analysis.normalizedDim(input, *dim) : dim;
  if (!normalized || *normalized == 0) {
    return analysis.refuse(node, "it may work along the batch dim");
  }
  analysis.set(node->output(), input);
  return true;
}

bool permute(Analysis& analysis, const Node* node) {
  if (!batchedInput(analysis, node)) {
    return false;
  }
  const auto dims = constantIntList(node->input(1));
  if (!dims || dims->empty()) {
    return analysis.refuse(node, "its dims are not constant");
  }
  const Fact ranked = batched(static_cast<int64_t>(dims->size()));
  if (!analysis.requireRank(analysis.fact(node->input(0)), ranked.rank) ||
      analysis.normalizedDim(ranked, dims->front()) != 0) {
    return analysis.refuse(node, "it may move the batch dim");
  }
  analysis.set(node->output(), ranked);
  return true;
}

bool transpose(Analysis& analysis, const Node* node) {
  if (!batchedInput(analysis, node)) {
    return false;
  }
  const Fact& input = analysis.fact(node->input(0));
  for (size_t i = 1; i <= 2; ++i) {
    const std::optional<int64_t> dim = constantInt(node->input(i));
    const std::optional<int64_t> normalized = dim ? analysis.normalizedDim(input, *dim) : dim;
    if (!normalized || *normalized == 0) {
      return analysis.refuse(node, "it may move the batch dim");
    }
  }
  analysis.set(node->output(), input);
  return true;
}

// view / reshape to sizes that start with the batch size and go on with batch-free ones.
bool reshape(Analysis& analysis, const Node* node) {
  if (!batchedInput(analysis, node)) {
    return false;
  }
  const Fact& sizes = analysis.fact(node->input(1));
  if (sizes.kind != Kind::kBatchShape) {
    return analysis.refuse(node, "its sizes do not keep the batch size first");
  }
  analysis.set(node->output(), batched(sizes.rank));
  return true;
}

// cat along a dim other than 0 of batched tensors of one rank.
bool cat(Analysis& analysis, const Node* node) {
  const Fact& list = analysis.fact(node->input(0));
  const std::optional<int64_t> dim = constantInt(node->input(1));
  Fact tensor = list;
  tensor.kind = Kind::kBatched;
  const std::optional<int64_t> normalized = dim ? analysis.normalizedDim(tensor, *dim) : dim;
  if (list.kind != Kind::kBatchedList || !normalized || *normalized == 0) {
    return analysis.refuse(node, "it may join along the batch dim");
  }
  analysis.set(node->output(), tensor);
  return true;
}

// chunk / split into pieces along a dim other than 0.
bool pieces(Analysis& analysis, const Node* node) {
  if (!batchedInput(analysis, node) || !restFree(analysis, node, 1)) {
    return false;
  }
  Fact input = analysis.fact(node->input(0));
  const std::optional<int64_t> dim = constantInt(node->input(2));
  const std::optional<int64_t> normalized = dim ? analysis.normalizedDim(input, *dim) : dim;
  if (!normalized || *normalized == 0) {
    return analysis.refuse(node, "it may cut along the batch dim");
  }
  input.kind = Kind::kBatchedList;
  analysis.set(node->output(), input);
  return true;
}

// x.size(): [batch, ...]; x.size(d): the batch size for d = 0, batch-free otherwise.
bool size(Analysis& analysis, const Node* node) {
  if (!batchedInput(analysis, node)) {
    return false;
  }
  const Fact& input = analysis.fact(node->input(0));
  if (node->inputs().size() == 1) {
    analysis.set(node->output(), {Kind::kBatchShape, analysis.rank(input).value_or(-1), -1});
    return true;
  }
  const std::optional<int64_t> dim = constantInt(node->input(1));
  const std::optional<int64_t> normalized = dim ? analysis.normalizedDim(input, *dim) : dim;
  if (!normalized) {
    return analysis.refuse(node, "it may read the batch size");
  }
  analysis.set(node->output(), *normalized == 0 ? Fact{Kind::kBatchSize} : Fact{});
  return true;
}

// dim(x), len(x.size()), len(list): ranks and counts, never the batch size.
bool count(Analysis& analysis, const Node* node) {
  const Kind kind = analysis.fact(node->input(0)).kind;
  if (kind != Kind::kBatched && kind != Kind::kBatchShape && kind != Kind::kBatchedList) {
    return analysis.refuse(node, "it reads the batch size");
  }
  analysis.set(node->output(), {});
  return true;
}

bool listConstruct(Analysis& analysis, const Node* node) {
  if (node->inputs().empty()) {
    return true;
  }
  const Fact& first = analysis.fact(node->input(0));
  if (first.kind == Kind::kBatchSize && restFree(analysis, node, 1)) {
    analysis.set(node->output(),
                 {Kind::kBatchShape, static_cast<int64_t>(node->inputs().size()), -1});
    return true;
  }
  for (const Value* input : node->inputs()) {
    const Fact& element = analysis.fact(input);
    if (first.kind != Kind::kBatched || element.kind != Kind::kBatched ||
        !analysis.sameRank(first, element)) {
      return analysis.refuse(node, "it mixes batched tensors of unknown rank with other values");
    }
  }
  Fact list = first;
  list.kind = Kind::kBatchedList;
  analysis.set(node->output(), list);
  return true;
}

// The pieces of a list of batched tensors, or a shape's batch size and batch-free sizes.
bool listUnpack(Analysis& analysis, const Node* node) {
  const Fact& list = analysis.fact(node->input(0));
  if (list.kind != Kind::kBatchedList && list.kind != Kind::kBatchShape) {
    return analysis.refuse(node, "it unpacks a value that depends on the batch");
  }
  for (size_t i = 0; i < node->outputs().size(); ++i) {
    Fact element = list;
    if (list.kind == Kind::kBatchedList) {
      element.kind = Kind::kBatched;
    } else {
      element = i == 0 ? Fact{Kind::kBatchSize} : Fact{};
    }
    analysis.set(node->output(i), element);
  }
  return true;
}

bool tupleConstruct(Analysis& analysis, const Node* node) {
  for (const Value* input : node->inputs()) {
    if (analysis.fact(input).kind != Kind::kBatched &&
        input->type()->kind() != c10::TypeKind::NoneType) {
      return analysis.refuse(node, "it mixes batched tensors with other values");
    }
  }
  analysis.set(node->output(), {Kind::kBatchedTuple});
  return true;
}

const std::unordered_map<c10::Symbol, Rule>& rules() {
  static const std::unordered_map<c10::Symbol, Rule> table = [] {
    std::unordered_map<c10::Symbol, Rule> table;
    auto add = [&table](std::initializer_list<const char*> names, const Rule& rule) {
      for (const char* name : names) {
        table.emplace(symbol(name), rule);
      }
    };
    add({"aten::relu",       "aten::relu_",          "aten::hardtanh",    "aten::hardtanh_",
         "aten::hardswish",  "aten::hardswish_",     "aten::hardsigmoid", "aten::hardsigmoid_",
         "aten::silu",       "aten::silu_",          "aten::sigmoid",     "aten::sigmoid_",
         "aten::tanh",       "aten::tanh_",          "aten::gelu",        "aten::elu",
         "aten::elu_",       "aten::leaky_relu",     "aten::leaky_relu_", "aten::relu6",
         "aten::clamp",      "aten::clamp_",         "aten::clamp_min",   "aten::clamp_max",
         "aten::mish",       "aten::softplus",       "aten::exp",         "aten::neg",
         "aten::sqrt",       "aten::contiguous",     "aten::clone",       "aten::detach",
         "aten::group_norm", "aten::channel_shuffle"},
        perItem);
    add({"aten::batch_norm"}, batchNorm);
    add({"aten::layer_norm"}, layerNorm);
    add({"aten::conv1d", "aten::conv_transpose1d", "aten::max_pool1d", "aten::avg_pool1d",
         "aten::adaptive_avg_pool1d", "aten::adaptive_max_pool1d"},
        spatialOp(1));
    add({"aten::conv2d", "aten::conv_transpose2d", "aten::max_pool2d", "aten::avg_pool2d",
         "aten::adaptive_avg_pool2d", "aten::adaptive_max_pool2d", "aten::pixel_shuffle",
         "aten::upsample_nearest2d", "aten::upsample_bilinear2d"},
        spatialOp(2));
    add({"aten::conv3d", "aten::conv_transpose3d", "aten::max_pool3d", "aten::avg_pool3d",
         "aten::adaptive_avg_pool3d"},
        spatialOp(3));
    add({"aten::linear", "aten::matmul"}, linearLike);
    add({"aten::add", "aten::add_", "aten::sub", "aten::sub_", "aten::mul", "aten::mul_",
         "aten::div", "aten::div_"},
        binary);
    add({"aten::flatten"}, flatten);
    add({"aten::mean", "aten::sum", "aten::amax"}, reduction);
    add({"aten::softmax", "aten::log_softmax"}, alongOneDim);
    add({"aten::permute"}, permute);
    add({"aten::transpose"}, transpose);
    add({"aten::view", "aten::reshape"}, reshape);
    add({"aten::cat"}, cat);
    add({"aten::chunk", "aten::split"}, pieces);
    add({"aten::size"}, size);
    add({"aten::dim", "aten::len"}, count);
    add({"prim::ListConstruct"}, listConstruct);
    add({"prim::ListUnpack"}, listUnpack);
    add({"prim::TupleConstruct"}, tupleConstruct);
    return table;
  }();
  return table;
}

// Whether a node that reads nothing of the batch may run once per slice instead of once per
// batch: it changes nothing (warnings and raises repeat harmlessly), or only what lives in one
// runtime's values. Ops outside aten:: and prim:: (a module attribute's cell) may change state
// every runtime shares.
bool effectsRepeatHarmlessly(const Node* node) {
  const c10::Symbol kind = node->kind();
  if (kind == symbol("prim::RaiseException") || kind == symbol("aten::warn")) {
    return true;
  }
  if (node->hasSideEffects() || (!kind.is_aten() && !kind.is_prim())) {
    return false;
  }
  const c10::FunctionSchema* schema = node->maybeSchema();
  if (schema == nullptr || !schema->is_mutable()) {
    return true;
  }
  for (size_t i = 0; i < node->inputs().size(); ++i) {
    if (node->input(i)->type()->kind() == c10::TypeKind::TensorType &&
        schema->is_mutable({c10::SchemaArgType::input, i})) {
      return false;
    }
  }
  return true;
}

bool Analysis::ifNode(const Node* node) {
  if (!isFree(node->input(0))) {
    return refuse(node, "its condition depends on the batch");
  }
  for (const torch::jit::Block* branch : node->blocks()) {
    if (!block(branch)) {
      return false;
    }
  }
  for (size_t i = 0; i < node->outputs().size(); ++i) {
    const Fact& then_fact = fact(node->blocks()[0]->outputs()[i]);
    const Fact& else_fact = fact(node->blocks()[1]->outputs()[i]);
    if (then_fact.kind != else_fact.kind) {
      return refuse(node, "its branches return values that differ in how they hold the batch");
    }
    Fact merged = then_fact;
    if (!sameRank(then_fact, else_fact)) {
      merged.rank = -1;
      merged.rank_of_input = -1;
    }
    set(node->output(i), merged);
  }
  return true;
}

bool Analysis::node(const Node* node) {
  if (node->kind() == symbol("prim::If")) {
    return ifNode(node);
  }
  bool reads_batch = false;
  for (const Value* input : node->inputs()) {
    reads_batch = reads_batch || !isFree(input);
  }
  if (!node->blocks().empty()) {
    // Loops: what a body carries from one iteration to the next is not followed, so the body
    // may compute batch-free values only.
    if (reads_batch) {
      return refuse(node, "a loop over values that depend on the batch");
    }
    for (const torch::jit::Block* body : node->blocks()) {
      if (!block(body)) {
        return false;
      }
      bool body_reads_batch = false;
      for (const Node* inner : body->nodes()) {
        for (const Value* output : inner->outputs()) {
          body_reads_batch = body_reads_batch || !isFree(output);
        }
      }
      for (const Value* output : body->outputs()) {
        body_reads_batch = body_reads_batch || !isFree(output);
      }
      if (body_reads_batch) {
        return refuse(node, "a loop over values that depend on the batch");
      }
    }
    return true;
  }
  if (!reads_batch) {
    if (!effectsRepeatHarmlessly(node)) {
      return refuse(node, "each slice of the batch would repeat what it changes");
    }
    return true; // its outputs are batch-free, the default
  }
  auto rule = rules().find(node->kind());
  if (rule == rules().end()) {
    return refuse(node, "no rule shows it treats the items of the batch independently");
  }
  try {
    return rule->second(*this, node);
  } catch (const std::out_of_range&) {
    // An overload with fewer arguments than the rule reads (aten::sum(x, dtype)).
    return refuse(node, "no rule for this overload of it");
  }
}

bool Analysis::block(const torch::jit::Block* block) {
  for (const Node* inner : block->nodes()) {
    if (!node(inner)) {
      return false;
    }
  }
  return true;
}

} // namespace

BatchIndependence analyzeBatchIndependence(const torch::jit::Graph& graph, size_t num_arguments) {
  BatchIndependence result;
  Analysis analysis(result);
  for (size_t i = 0; i < graph.inputs().size(); ++i) {
    const Value* input = graph.inputs()[i];
    const c10::TypeKind type = input->type()->kind();
    if (i >= num_arguments) {
      continue; // unbound constants: the same tensor for every item
    }
    if (type == c10::TypeKind::TensorType) {
      analysis.set(input, {Kind::kBatched, -1, static_cast<int64_t>(result.batched_inputs.size())});
      result.batched_inputs.push_back(i);
      result.required_ranks.push_back(-1);
    } else if (type != c10::TypeKind::IntType && type != c10::TypeKind::FloatType &&
               type != c10::TypeKind::BoolType && type != c10::TypeKind::StringType &&
               type != c10::TypeKind::NoneType) {
      result.reason = "argument " + std::to_string(i) + " is a " + input->type()->str() +
                      ", not a tensor batched along dim 0 or a number";
      return result;
    }
  }
  if (result.batched_inputs.empty()) {
    result.reason = "no argument is a tensor";
    return result;
  }
  if (!analysis.block(graph.block())) {
    return result;
  }
  for (size_t i = 0; i < graph.outputs().size(); ++i) {
    const Kind kind = analysis.fact(graph.outputs()[i]).kind;
    if (kind != Kind::kBatched && kind != Kind::kBatchedTuple) {
      result.reason = "output " + std::to_string(i) + " is not a tensor batched along dim 0";
      return result;
    }
  }
  result.independent = true;
  return result;
}

} // namespace srt::passes
