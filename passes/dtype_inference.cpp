#include "passes/dtype_inference.h"

#include <string>
#include <unordered_map>
#include <unordered_set>

#include <torch/csrc/jit/ir/constants.h>
#include <torch/csrc/jit/ir/ir.h>

namespace srt::passes {
namespace {

using torch::jit::Node;
using torch::jit::Value;
using Dtype = std::optional<c10::ScalarType>;

// What decides the dtype of an op's first result, by the op's unqualified name (aten:: only).
enum class Rule {
  // The weight (input 1): ATen refuses an input of another dtype.
  kWeight,
  // Every tensor operand: ATen refuses operands of different dtypes (GEMMs).
  kAnyOperand,
  // Input 0, when it is floating point: activations, normalization, pooling, views and the like
  // keep a float dtype (some turn integers into floats, hence the condition).
  kFirstInputIfFloat,
  // All tensor operands, when they share one floating-point dtype: element-wise arithmetic
  // (non-complex scalars do not change a float tensor's dtype).
  kCommonFloat,
  // Every tensor of the list in input 0 (cat, stack).
  kListElements,
};

const std::unordered_map<std::string, Rule>& rules() {
  static const std::unordered_map<std::string, Rule> table = [] {
    std::unordered_map<std::string, Rule> t;
    for (const char* op : {"conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d",
                           "conv_transpose3d", "_convolution", "convolution", "linear"}) {
      t[op] = Rule::kWeight;
    }
    for (const char* op : {"mm", "bmm", "matmul", "addmm", "baddbmm", "mv", "dot"}) {
      t[op] = Rule::kAnyOperand;
    }
    for (const char* op : {"relu",
                           "relu6",
                           "gelu",
                           "sigmoid",
                           "tanh",
                           "silu",
                           "mish",
                           "hardswish",
                           "hardsigmoid",
                           "hardtanh",
                           "leaky_relu",
                           "elu",
                           "selu",
                           "celu",
                           "softplus",
                           "prelu",
                           "neg",
                           "abs",
                           "exp",
                           "log",
                           "sqrt",
                           "rsqrt",
                           "erf",
                           "reciprocal",
                           "square",
                           "softmax",
                           "log_softmax",
                           "mean",
                           "sum",
                           "layer_norm",
                           "batch_norm",
                           "group_norm",
                           "instance_norm",
                           "max_pool1d",
                           "max_pool2d",
                           "max_pool3d",
                           "avg_pool1d",
                           "avg_pool2d",
                           "avg_pool3d",
                           "adaptive_avg_pool1d",
                           "adaptive_avg_pool2d",
                           "adaptive_avg_pool3d",
                           "adaptive_max_pool1d",
                           "adaptive_max_pool2d",
                           "upsample_nearest1d",
                           "upsample_nearest2d",
                           "upsample_bilinear2d",
                           "upsample_linear1d",
                           "pad",
                           "constant_pad_nd",
                           "reflection_pad1d",
                           "reflection_pad2d",
                           "replication_pad1d",
                           "replication_pad2d",
                           "view",
                           "reshape",
                           "flatten",
                           "permute",
                           "transpose",
                           "t",
                           "contiguous",
                           "clone",
                           "detach",
                           "squeeze",
                           "unsqueeze",
                           "expand",
                           "expand_as",
                           "slice",
                           "select",
                           "narrow",
                           "repeat",
                           "roll",
                           "flip",
                           "pixel_shuffle",
                           "channel_shuffle",
                           "masked_fill",
                           "index_select",
                           "gather",
                           "dropout",
                           "feature_dropout",
                           "alpha_dropout",
                           "cumsum",
                           "tril",
                           "triu"}) {
      t[op] = Rule::kFirstInputIfFloat;
    }
    for (const char* op : {"add", "sub", "rsub", "mul", "div", "maximum", "minimum", "pow", "clamp",
                           "clamp_min", "clamp_max"}) {
      t[op] = Rule::kCommonFloat;
    }
    for (const char* op : {"cat", "stack", "concat"}) {
      t[op] = Rule::kListElements;
    }
    return t;
  }();
  return table;
}

// Ops whose list result holds pieces of input 0 (read back by ListUnpack or __getitem__).
bool splitsFirstInput(const Node* node) {
  static const std::unordered_set<std::string> kSplits = {
      "chunk", "split", "split_with_sizes", "unbind", "tensor_split", "unsafe_chunk"};
  return node->kind().is_aten() && kSplits.count(node->kind().toUnqualString()) != 0;
}

bool isTensor(const Value* value) {
  return value->type()->kind() == c10::TypeKind::TensorType;
}

bool isFloat(Dtype dtype) {
  return dtype && c10::isFloatingType(*dtype);
}

// An in-place op (x.add_(y)) returns self, whatever its operands' dtypes.
bool writesIntoFirstInput(const Node* node) {
  const c10::FunctionSchema* schema = node->maybeSchema();
  if (schema == nullptr || schema->arguments().empty() || schema->returns().empty()) {
    return false;
  }
  const c10::AliasInfo* self = schema->arguments()[0].alias_info();
  const c10::AliasInfo* result = schema->returns()[0].alias_info();
  return self != nullptr && self->isWrite() && result != nullptr && result->isWrite();
}

class DtypeInference {
public:
  Dtype of(const Value* value) {
    auto cached = known_.find(value);
    if (cached != known_.end()) {
      return cached->second;
    }
    known_[value] = std::nullopt; // a value reached again through a loop is not known
    const Dtype dtype = isTensor(value) ? infer(value) : std::nullopt;
    known_[value] = dtype;
    return dtype;
  }

private:
  Dtype infer(const Value* value) {
    const Node* node = value->node();
    if (node->kind() == c10::prim::Constant) {
      const auto constant = torch::jit::toIValue(value);
      return constant && constant->isTensor() ? Dtype(constant->toTensor().scalar_type())
                                              : std::nullopt;
    }
    if (node->kind() == c10::prim::Param) {
      // The runtime checks a declared dtype of the graph's inputs on every call.
      const Node* owner = node->owningBlock()->owningNode();
      const auto type = value->type()->cast<c10::TensorType>();
      return owner == nullptr && type && type->scalarType() ? Dtype(*type->scalarType())
                                                            : std::nullopt;
    }
    if (node->kind() == c10::prim::If) {
      return ifResult(node, value->offset());
    }
    if (node->kind() == c10::prim::unchecked_cast) {
      return of(node->input(0));
    }
    if (node->kind() == c10::prim::ListUnpack || node->kind() == c10::aten::__getitem__) {
      const Node* list = node->input(0)->node();
      return splitsFirstInput(list) ? of(list->input(0)) : std::nullopt;
    }
    if (!node->kind().is_aten() || value->offset() != 0) {
      return std::nullopt;
    }
    if (writesIntoFirstInput(node)) {
      return of(node->input(0));
    }
    const std::string name = node->kind().toUnqualString();
    if (name == "to" || name == "type_as") {
      return conversion(node);
    }
    if (name == "embedding") {
      return of(node->input(0));
    }
    const auto rule = rules().find(name);
    return rule == rules().end() ? std::nullopt : apply(rule->second, node);
  }

  Dtype apply(Rule rule, const Node* node) {
    switch (rule) {
    case Rule::kWeight: {
      const Dtype weight = node->inputs().size() > 1 ? of(node->input(1)) : std::nullopt;
      return weight ? weight : of(node->input(0));
    }
    case Rule::kAnyOperand:
      for (const Value* input : node->inputs()) {
        if (const Dtype dtype = isTensor(input) ? of(input) : std::nullopt) {
          return dtype;
        }
      }
      return std::nullopt;
    case Rule::kFirstInputIfFloat: {
      const Dtype first = of(node->input(0));
      return isFloat(first) && !hasDtypeArgument(node) ? first : std::nullopt;
    }
    case Rule::kCommonFloat:
      return commonFloat(node->inputs().vec());
    case Rule::kListElements: {
      const Node* list = node->input(0)->node();
      return list->kind() == c10::prim::ListConstruct ? commonFloat(list->inputs().vec())
                                                      : std::nullopt;
    }
    }
    return std::nullopt;
  }

  // The shared floating-point dtype of the tensor operands, if every one has it and no scalar
  // operand is complex.
  Dtype commonFloat(at::ArrayRef<const Value*> inputs) {
    Dtype common;
    for (const Value* input : inputs) {
      const c10::TypePtr& type = input->type();
      if (type->kind() == c10::TypeKind::ComplexType) {
        return std::nullopt;
      }
      if (type->kind() == c10::TypeKind::OptionalType && !torch::jit::toIValue(input)) {
        return std::nullopt; // a bound that may be a tensor (clamp.Tensor) takes part too
      }
      if (!isTensor(input)) {
        continue;
      }
      const Dtype dtype = of(input);
      if (!isFloat(dtype) || (common && *common != *dtype)) {
        return std::nullopt;
      }
      common = dtype;
    }
    return common;
  }

  // A reduction or softmax that may be told to compute in another dtype.
  static bool hasDtypeArgument(const Node* node) {
    const c10::FunctionSchema* schema = node->maybeSchema();
    if (schema == nullptr) {
      return true;
    }
    const auto index = schema->argumentIndexWithName("dtype");
    if (!index) {
      return false;
    }
    const auto dtype = torch::jit::toIValue(node->input(*index));
    return !dtype || !dtype->isNone();
  }

  // to(dtype) with a constant dtype, to(other) and type_as(other).
  Dtype conversion(const Node* node) {
    if (node->inputs().size() < 2) {
      return std::nullopt;
    }
    const Value* target = node->input(1);
    if (isTensor(target)) {
      return of(target);
    }
    const auto dtype = torch::jit::toIValue(target);
    if (dtype && dtype->isInt()) {
      return static_cast<c10::ScalarType>(dtype->toInt());
    }
    if (dtype && dtype->isNone() && node->kind() == c10::aten::to) {
      return of(node->input(0)); // to(None, ...) converts nothing
    }
    return std::nullopt;
  }

  Dtype ifResult(const Node* node, size_t index) {
    Dtype common;
    for (const torch::jit::Block* block : node->blocks()) {
      const Dtype dtype = of(block->outputs()[index]);
      if (!dtype || (common && *common != *dtype)) {
        return std::nullopt;
      }
      common = dtype;
    }
    return common;
  }

  std::unordered_map<const Value*, Dtype> known_;
};

} // namespace

std::optional<c10::ScalarType> knownDtype(const torch::jit::Value* value) {
  return DtypeInference().of(value);
}

} // namespace srt::passes
