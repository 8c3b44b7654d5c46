#include "passes/prepare.h"

#include "passes/attribute_writes.h"
#include "passes/describe_node.h"
#include "passes/dtype_inference.h"
#include "passes/graph_walk.h"

#include <algorithm>
#include <optional>
#include <string>
#include <unordered_set>

#include <torch/csrc/jit/api/module.h>
#include <torch/csrc/jit/ir/constants.h>
#include <torch/csrc/jit/ir/ir.h>
#include <torch/csrc/jit/passes/canonicalize.h>
#include <torch/csrc/jit/passes/constant_propagation.h>
#include <torch/csrc/jit/passes/dead_code_elimination.h>
#include <torch/csrc/jit/passes/freeze_module.h>
#include <torch/csrc/jit/passes/graph_rewrite_helper.h>
#include <torch/csrc/jit/passes/inliner.h>
#include <torch/csrc/jit/passes/remove_dropout.h>
#include <torch/csrc/jit/passes/remove_mutation.h>

namespace srt::passes {
namespace {

// RemoveTensorMutation rewrites `x.op_(y)` as `x = x.op(y)`, but in place the result keeps x's
// dtype and out of place it need not: comparisons and logical ops return bool, and a tensor
// operand whose dtype wins type promotion decides it (x bfloat16, y float32; found by fuzzing).
// Such ops stay in place unless every operand's dtype is known to promote to x's (ResNet's
// `out += identity`: both float32, from convolutions with float32 weights); scalar and unary
// ones are rewritten.
bool rewriteKeepsDtype(torch::jit::Node* node) {
  static const std::unordered_set<std::string> kBoolResults = {
      "eq_",         "ne_",          "lt_",         "le_",
      "gt_",         "ge_",          "greater_",    "greater_equal_",
      "less_",       "less_equal_",  "not_equal_",  "logical_and_",
      "logical_or_", "logical_xor_", "logical_not_"};
  // Tensor operands that never take part in promotion: a mask or indices.
  static const std::unordered_set<std::string> kSelfDtypeResults = {"masked_fill_", "index_fill_"};
  const std::string name = node->kind().toUnqualString();
  if (kBoolResults.count(name) != 0) {
    return false;
  }
  if (kSelfDtypeResults.count(name) != 0) {
    return true;
  }
  std::optional<std::optional<c10::ScalarType>> self; // asked only when an operand is a tensor
  for (size_t i = 1; i < node->inputs().size(); ++i) {
    c10::TypePtr type = node->input(i)->type();
    if (auto optional = type->cast<c10::OptionalType>()) {
      type = optional->getElementType();
    }
    if (!type->cast<c10::TensorType>()) {
      continue;
    }
    if (!self) {
      self = knownDtype(node->input(0));
    }
    const std::optional<c10::ScalarType> operand = knownDtype(node->input(i));
    if (!*self || !operand || c10::promoteTypes(**self, *operand) != **self) {
      return false;
    }
  }
  return true;
}

// Dropout that draws nothing: ATen returns the input itself for a constant probability of 0
// whatever `train` is (torchvision's Swin passes its attention_dropout, 0.0 by default, to
// F.dropout without training=self.training, so freezing leaves training True), and for a
// constant train=False (LibTorch's removeDropout takes only dropout and feature_dropout, not the
// alpha forms nn.AlphaDropout and nn.FeatureAlphaDropout call).
void removeInactiveDropout(torch::jit::Block* block) {
  static const std::unordered_set<std::string> kDropouts = {
      "dropout",       "dropout_",       "feature_dropout",       "feature_dropout_",
      "alpha_dropout", "alpha_dropout_", "feature_alpha_dropout", "feature_alpha_dropout_"};
  forEachNode(block, [](torch::jit::Node* node) {
    if (!node->kind().is_aten() || kDropouts.count(node->kind().toUnqualString()) == 0 ||
        node->inputs().size() != 3 || node->outputs().size() != 1) {
      return;
    }
    const c10::optional<double> probability = torch::jit::constant_as<double>(node->input(1));
    const c10::optional<bool> train = torch::jit::constant_as<bool>(node->input(2));
    if ((probability && *probability == 0.0) || (train && !*train)) {
      node->output()->replaceAllUsesWith(node->input(0));
      node->destroy();
    }
  });
}

// `x is None` / `x is not None` where the types settle it: a module's optional branch frozen to
// one side leaves `if residual is not None:` (torchaudio's Conv-TasNet) or `if mask is not None:`
// testing a value that is a Tensor by now, which ConstantPropagation does not fold (its operand
// is no constant). Folded, the If goes and what it guarded runs at the top level.
void foldNoneComparisons(torch::jit::Graph& graph) {
  forEachNode(graph.block(), [&](torch::jit::Node* node) {
    const bool is = node->kind() == c10::aten::__is__;
    if ((!is && node->kind() != c10::aten::__isnot__) || node->inputs().size() != 2) {
      return;
    }
    const torch::jit::Value* a = node->input(0);
    const torch::jit::Value* b = node->input(1);
    if ((a->mustBeNone() && b->mustNotBeNone()) || (b->mustBeNone() && a->mustNotBeNone())) {
      torch::jit::WithInsertPoint insert(node);
      node->output()->replaceAllUsesWith(graph.insertConstant(!is));
      node->destroy();
    }
  });
}

// The LibTorch passes that flatten a graph, in the order PyTorch's Static Runtime runs them:
// constants propagate again after each pass that exposes more of them.
std::shared_ptr<torch::jit::Graph> flatten(std::shared_ptr<torch::jit::Graph> graph) {
  refuseUnknownOperators(*graph);
  torch::jit::Inline(*graph);
  torch::jit::ConstantPropagation(graph);
  graph = torch::jit::Canonicalize(graph);
  torch::jit::ConstantPropagation(graph);
  torch::jit::RemoveTensorMutation(graph, rewriteKeepsDtype);
  foldNoneComparisons(*graph);
  torch::jit::ConstantPropagation(graph);
  // Eval-mode dropout is the identity; left in, its schema would tell AliasDb its output is a
  // fresh tensor when it is the input itself.
  torch::jit::removeDropout(graph);
  removeInactiveDropout(graph->block());
  // Traced models call aten::_convolution; as conv1d/2d/3d or conv_transpose (its flags are
  // constants by now) they reach our convolution kernels and conv-batch_norm folding.
  torch::jit::graph_rewrite_helper::replaceConvolutionWithAtenConv(graph);
  torch::jit::EliminateDeadCode(graph);
  return graph;
}

// A forward that never touches `self` has nothing left to fold. (PyTorch's test, "has no
// `training` attribute", misreads modules built in C++, which never had one.)
bool needsFreezing(const torch::jit::Module& module) {
  return module.get_method("forward").graph()->inputs().at(0)->hasUses();
}

std::string inputName(const torch::jit::Value* value, size_t position) {
  if (value->hasDebugName()) {
    std::string name = value->debugName();
    // Uniquified names look like "x.1": the caller knows the argument as "x".
    const auto dot = name.find('.');
    return dot == std::string::npos ? name : name.substr(0, dot);
  }
  return "input_" + std::to_string(position);
}

// `path` ("block0.fc1.weight") must name a tensor attribute of `module`.
void checkTensorAttribute(const torch::jit::Module& module, const std::string& path) {
  const AttributeLookup found = lookUpAttribute(module, path);
  TORCH_CHECK(!found.stopped_at_missing_step, "static_runtime: unbound constant '", path,
              "' is not an attribute of the module (no '", found.stopped_at, "')");
  TORCH_CHECK(found.value.has_value(), "static_runtime: unbound constant '", path, "': '",
              found.stopped_at, "' is not a submodule");
  TORCH_CHECK(found.value->isTensor(), "static_runtime: unbound constant '", path, "' is a ",
              found.value->tagKind(), ", expected a tensor attribute");
}

void readsAsInputs(torch::jit::Block& block, const torch::jit::Value* self,
                   const std::vector<std::string>& names,
                   const std::vector<torch::jit::Value*>& inputs) {
  for (torch::jit::Node* node : block.nodes()) {
    if (node->kind() == c10::prim::GetAttr) {
      const std::optional<std::string> path = attributePath(node->output(), self);
      auto found = path ? std::find(names.begin(), names.end(), *path) : names.end();
      if (found != names.end()) {
        node->output()->replaceAllUsesWith(inputs[found - names.begin()]);
      }
    }
    for (torch::jit::Block* sub_block : node->blocks()) {
      readsAsInputs(*sub_block, self, names, inputs);
    }
  }
}

// The frozen graph still reads the preserved attributes through `self`; each becomes a graph
// input appended after forward's arguments, so no pass folds or pre-packs it.
void bindUnboundConstantsAsInputs(torch::jit::Graph& graph, const std::vector<std::string>& names) {
  std::vector<torch::jit::Value*> inputs;
  for (const std::string& name : names) {
    std::string debug_name = "unbound_" + name;
    std::replace(debug_name.begin(), debug_name.end(), '.', '_');
    inputs.push_back(graph.addInput(debug_name)->setType(c10::TensorType::get()));
  }
  readsAsInputs(*graph.block(), graph.inputs().at(0), names, inputs);
}

// Cloning and freezing register new classes and their methods in the module's
// CompilationUnit, which outlives the build (for a module scripted in Python it is the
// process-wide one). Left there, the frozen forward's graph would keep the weights as they were
// before our passes folded BatchNorm into them (resnet18: a second 45 MB copy), and the methods
// of every submodule class freezing cloned (efficientnet_b0: 260 functions, 15 MB) would pile up
// with each build. Every function registered since `before` (a snapshot of the unit's functions)
// is ours to drop: nothing else can reach the classes it belongs to. (A CompilationUnit is not
// safe to compile into from two threads anyway, so nobody else registers meanwhile.)
class CompilationUnitScope {
public:
  explicit CompilationUnitScope(const torch::jit::Module& module)
      : unit_(module._ivalue()->compilation_unit()) {
    for (const torch::jit::Function* function : unit_->get_functions()) {
      before_.insert(function);
    }
  }

  void releaseFunctionsAddedSince() {
    for (torch::jit::Function* function : unit_->get_functions()) {
      if (function == nullptr || before_.count(function) != 0) {
        continue;
      }
      const c10::QualifiedName name = function->qualname();
      if (const c10::ClassTypePtr owner = unit_->get_class(name.prefix())) {
        owner->unsafeRemoveMethod(name.name());
      }
      unit_->unsafeRemoveMethod(name);
    }
  }

private:
  std::shared_ptr<torch::jit::CompilationUnit> unit_;
  std::unordered_set<const torch::jit::Function*> before_;
};

} // namespace

PreparedGraph prepareModule(const torch::jit::Module& module,
                            const std::vector<std::string>& unbound_constants) {
  TORCH_CHECK(module.find_method("forward"), "static_runtime: the module has no `forward` method");
  for (const std::string& path : unbound_constants) {
    checkTensorAttribute(module, path);
  }
  torch::jit::Module frozen = module;
  CompilationUnitScope unit(module);
  if (needsFreezing(module)) {
    // Shares the tensors (inplace=true): freezing and our passes make new constants and never
    // write into parameters, and a deep copy costs a copy of the weights in heap churn.
    torch::jit::Module copy = module.clone(/*inplace=*/true);
    if (copy.hasattr("training")) {
      copy.eval();
    }
    frozen = torch::jit::freeze_module(copy, unbound_constants);
  } else {
    TORCH_CHECK(unbound_constants.empty(),
                "static_runtime: unbound_constants need a module that "
                "is not frozen yet: a frozen forward no longer reads its attributes");
  }
  torch::jit::Method forward = frozen.get_method("forward");
  std::shared_ptr<torch::jit::Graph> unflattened = forward.graph()->copy();
  const c10::FunctionSchema with_self = forward.function().getSchema();
  unit.releaseFunctionsAddedSince();
  bindUnboundConstantsAsInputs(*unflattened, unbound_constants);
  std::shared_ptr<torch::jit::Graph> graph = flatten(unflattened);

  torch::jit::Value* self = graph->inputs().at(0);
  if (forwardAttributeWrites(*graph) | attributesAsCells(*graph, frozen)) {
    torch::jit::EliminateDeadCode(graph);
  }
  if (self->hasUses()) {
    // Names the attribute reads/writes and calls that freezing could not fold.
    checkSupported(*graph);
    TORCH_CHECK(false, "static_runtime: forward still uses `self` after freezing, in ",
                describeNode(self->uses().front().user), "; such modules are not supported");
  }
  graph->eraseInput(0);
  std::vector<c10::Argument> arguments(with_self.arguments().begin() + 1,
                                       with_self.arguments().end());
  c10::FunctionSchema schema = with_self.cloneWithArguments(std::move(arguments));
  checkSupported(*graph);
  return {std::move(graph), std::move(schema), unbound_constants};
}

PreparedGraph prepareGraph(const std::shared_ptr<torch::jit::Graph>& original) {
  std::shared_ptr<torch::jit::Graph> graph = flatten(original->copy());
  std::vector<c10::Argument> arguments;
  for (size_t i = 0; i < graph->inputs().size(); ++i) {
    const torch::jit::Value* input = graph->inputs()[i];
    arguments.emplace_back(inputName(input, i), input->type());
  }
  std::vector<c10::Argument> returns;
  for (const torch::jit::Value* output : graph->outputs()) {
    returns.emplace_back("", output->type());
  }
  c10::FunctionSchema schema("forward", "", std::move(arguments), std::move(returns));
  checkSupported(*graph);
  return {std::move(graph), std::move(schema), {}};
}

} // namespace srt::passes
