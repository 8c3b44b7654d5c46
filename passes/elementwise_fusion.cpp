// Element-wise fusion: a connected group of element-wise ATen ops (arithmetic with tensors and
// scalars, activations, exp/log/sqrt, clamp, pow by a constant, comparisons feeding where) whose
// intermediates nothing outside the group uses becomes one srt::fused_elementwise node, whose
// kernel runs the whole group in one pass over the output with no intermediate tensors
// (ops/elementwise/fused.cpp).
//
// Groups grow backwards from a root (the group's result) through producers whose every use is
// inside the group, so a value used elsewhere stays a tensor and is an input of the group. Each
// block is fused on its own: groups never cross a prim::If or prim::Loop boundary. Producers move
// to the root's position, so a producer reading a value that anything may write (in-place ops,
// per torch::jit::AliasDb) stays where it is.
#include <algorithm>
#include <optional>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include <torch/csrc/jit/ir/alias_analysis.h>
#include <torch/csrc/jit/ir/constants.h>
#include <torch/csrc/jit/ir/ir.h>

#include "ops/elementwise/fused_program.h"
#include "passes/graph_passes.h"

namespace srt::passes {
namespace {

using ops::fused::Instruction;
using ops::fused::Operand;
using ops::fused::OpKind;
using torch::jit::Block;
using torch::jit::Node;
using torch::jit::Value;

// Enough for any chain seen in practice; bounds the program's length and its kernel's buffers.
constexpr size_t kMaxGroupSize = 32;

// How the node's inputs become operands, one character per input: v a value (a number constant
// is written inline, anything else becomes an input of the fused node), a alpha (a number
// constant, left out when it is 1), n a number constant, o a number constant or None,
// s gelu's approximation (a constant string, left out when "none").
struct ElementwiseOp {
  const char* kind;
  const char* overload;
  OpKind op;
  const char* inputs;
};

constexpr ElementwiseOp kElementwiseOps[] = {
    {"aten::add", "Tensor", OpKind::kAdd, "vva"},
    {"aten::add", "Scalar", OpKind::kAdd, "vva"},
    {"aten::sub", "Tensor", OpKind::kSub, "vva"},
    {"aten::sub", "Scalar", OpKind::kSub, "vva"},
    {"aten::rsub", "Tensor", OpKind::kRsub, "vva"},
    {"aten::rsub", "Scalar", OpKind::kRsub, "vva"},
    {"aten::mul", "Tensor", OpKind::kMul, "vv"},
    {"aten::mul", "Scalar", OpKind::kMul, "vv"},
    {"aten::div", "Tensor", OpKind::kDiv, "vv"},
    {"aten::div", "Scalar", OpKind::kDiv, "vv"},
    {"aten::relu", "", OpKind::kRelu, "v"},
    {"aten::sigmoid", "", OpKind::kSigmoid, "v"},
    {"aten::tanh", "", OpKind::kTanh, "v"},
    {"aten::exp", "", OpKind::kExp, "v"},
    {"aten::log", "", OpKind::kLog, "v"},
    {"aten::sqrt", "", OpKind::kSqrt, "v"},
    {"aten::rsqrt", "", OpKind::kRsqrt, "v"},
    {"aten::neg", "", OpKind::kNeg, "v"},
    {"aten::abs", "", OpKind::kAbs, "v"},
    {"aten::reciprocal", "", OpKind::kReciprocal, "v"},
    {"aten::silu", "", OpKind::kSilu, "v"},
    {"aten::hardswish", "", OpKind::kHardswish, "v"},
    {"aten::hardsigmoid", "", OpKind::kHardsigmoid, "v"},
    {"aten::gelu", "", OpKind::kGelu, "vs"},
    {"aten::leaky_relu", "", OpKind::kLeakyRelu, "vn"},
    {"aten::clamp", "", OpKind::kClamp, "voo"},
    {"aten::clamp_min", "", OpKind::kClampMin, "vn"},
    {"aten::clamp_max", "", OpKind::kClampMax, "vn"},
    {"aten::pow", "Tensor_Scalar", OpKind::kPow, "vn"},
    {"aten::gt", "Tensor", OpKind::kGt, "vv"},
    {"aten::gt", "Scalar", OpKind::kGt, "vv"},
    {"aten::lt", "Tensor", OpKind::kLt, "vv"},
    {"aten::lt", "Scalar", OpKind::kLt, "vv"},
    {"aten::ge", "Tensor", OpKind::kGe, "vv"},
    {"aten::ge", "Scalar", OpKind::kGe, "vv"},
    {"aten::le", "Tensor", OpKind::kLe, "vv"},
    {"aten::le", "Scalar", OpKind::kLe, "vv"},
    {"aten::eq", "Tensor", OpKind::kEq, "vv"},
    {"aten::eq", "Scalar", OpKind::kEq, "vv"},
    {"aten::ne", "Tensor", OpKind::kNe, "vv"},
    {"aten::ne", "Scalar", OpKind::kNe, "vv"},
    {"aten::where", "self", OpKind::kWhere, "vvv"},
    {"aten::where", "ScalarOther", OpKind::kWhere, "vvv"},
    {"aten::where", "ScalarSelf", OpKind::kWhere, "vvv"},
};

// One operand of a node's instruction: a node input, or a literal folded into the program.
struct Arg {
  const Value* value = nullptr; // null: `literal`
  Operand literal;
};

struct NodeInstruction {
  OpKind op;
  std::vector<Arg> args;
};

bool isTensor(const Value* value) {
  return value->type()->kind() == c10::TypeKind::TensorType;
}

// An int or float constant (not bool: True + True is 2 but bool(True) + True stays bool in ATen's
// eyes, so bools stay run-time inputs).
std::optional<c10::Scalar> numberConstant(const Value* value) {
  const c10::optional<c10::IValue> constant = torch::jit::toIValue(value);
  if (!constant) {
    return std::nullopt;
  }
  if (constant->isInt()) {
    return c10::Scalar(constant->toInt());
  }
  if (constant->isDouble()) {
    return c10::Scalar(constant->toDouble());
  }
  return std::nullopt;
}

// The node as a program instruction, or nullopt when it is not an element-wise op the fused
// kernel knows, or a parameter (alpha, bound, exponent, ...) is not a constant.
std::optional<NodeInstruction> asInstruction(const Node* node) {
  const c10::FunctionSchema* schema = node->maybeSchema();
  if (schema == nullptr || node->outputs().size() != 1 || !isTensor(node->output()) ||
      node->inputs().empty() || !isTensor(node->input(0))) {
    return std::nullopt;
  }
  const ElementwiseOp* found = nullptr;
  for (const ElementwiseOp& candidate : kElementwiseOps) {
    if (node->kind().toQualString() == std::string_view(candidate.kind) &&
        schema->overload_name() == candidate.overload) {
      found = &candidate;
      break;
    }
  }
  if (found == nullptr || std::string_view(found->inputs).size() != node->inputs().size()) {
    return std::nullopt;
  }
  NodeInstruction instruction{found->op, {}};
  for (size_t i = 0; i < node->inputs().size(); ++i) {
    const Value* input = node->input(i);
    const std::optional<c10::Scalar> number = numberConstant(input);
    const c10::optional<c10::IValue> constant = torch::jit::toIValue(input);
    switch (found->inputs[i]) {
    case 'v':
      if (i > 0 && number) {
        instruction.args.push_back({nullptr, Operand::literal(*number)});
      } else {
        instruction.args.push_back({input, {}});
      }
      break;
    case 'a':
      if (!number) {
        return std::nullopt;
      }
      if (!(number->isIntegral(false) && number->toLong() == 1)) {
        instruction.args.push_back({nullptr, Operand::literal(*number)});
      }
      break;
    case 'n':
      if (!number) {
        return std::nullopt;
      }
      instruction.args.push_back({nullptr, Operand::literal(*number)});
      break;
    case 'o':
      if (number) {
        instruction.args.push_back({nullptr, Operand::literal(*number)});
      } else if (constant && constant->isNone()) {
        instruction.args.push_back({nullptr, Operand::none()});
      } else {
        return std::nullopt;
      }
      break;
    case 's':
      if (!constant || !constant->isString()) {
        return std::nullopt;
      }
      if (constant->toStringRef() != "none") {
        instruction.args.push_back({nullptr, Operand::string(constant->toStringRef())});
      }
      break;
    }
  }
  // clamp(x, None, None) fails at run time; leave that to the node itself.
  if (instruction.op == OpKind::kClamp &&
      instruction.args[1].literal.kind == Operand::Kind::kNone &&
      instruction.args[2].literal.kind == Operand::Kind::kNone) {
    return std::nullopt;
  }
  return instruction;
}

class ElementwiseFusion {
public:
  explicit ElementwiseFusion(std::shared_ptr<torch::jit::Graph> graph) : graph_(std::move(graph)) {
    // Whether a value may be written is asked before any rewrite, while the AliasDb is current.
    const torch::jit::AliasDb alias_db(graph_, /*isFrozen=*/true);
    collectWritten(graph_->block(), alias_db);
  }

  bool run() { return fuseBlock(graph_->block()); }

private:
  void collectWritten(Block* block, const torch::jit::AliasDb& alias_db) {
    for (const Value* input : block->inputs()) {
      if (alias_db.hasWriters(input)) {
        written_.insert(input);
      }
    }
    for (Node* node : block->nodes()) {
      for (const Value* output : node->outputs()) {
        if (alias_db.hasWriters(output)) {
          written_.insert(output);
        }
      }
      for (Block* sub_block : node->blocks()) {
        collectWritten(sub_block, alias_db);
      }
    }
  }

  bool fuseBlock(Block* block) {
    bool changed = false;
    const std::vector<Node*> nodes(block->nodes().begin(), block->nodes().end());
    for (Node* node : nodes) {
      for (Block* sub_block : node->blocks()) {
        changed |= fuseBlock(sub_block);
      }
    }
    // Roots from the last node up: a group takes in everything it can before an earlier node
    // gets the chance to root a smaller one.
    for (auto it = nodes.rbegin(); it != nodes.rend(); ++it) {
      Node* root = *it;
      if (fused_.count(root) != 0) {
        continue;
      }
      const std::optional<NodeInstruction>& instruction = instructionOf(root);
      if (!instruction || ops::fused::returnsBool(instruction->op)) {
        continue; // the fused node returns the dtype of arithmetic, never bool
      }
      std::vector<Node*> group = grow(root);
      if (group.size() < 2) {
        continue;
      }
      replace(group, root);
      changed = true;
    }
    return changed;
  }

  const std::optional<NodeInstruction>& instructionOf(Node* node) {
    auto found = instructions_.find(node);
    if (found == instructions_.end()) {
      found = instructions_.emplace(node, asInstruction(node)).first;
    }
    return found->second;
  }

  // The producer can join when it is element-wise, every use of its result is in the group (a
  // comparison's only as where's condition), and nothing may write what it reads.
  bool canJoin(Node* producer, const Block* block, const std::unordered_set<Node*>& group) {
    if (producer->owningBlock() != block || group.count(producer) != 0 ||
        fused_.count(producer) != 0) {
      return false;
    }
    const std::optional<NodeInstruction>& instruction = instructionOf(producer);
    if (!instruction) {
      return false;
    }
    const bool is_bool = ops::fused::returnsBool(instruction->op);
    for (const torch::jit::Use& use : producer->output()->uses()) {
      if (group.count(use.user) == 0) {
        return false;
      }
      if (is_bool && !(use.user->kind() == c10::aten::where && use.offset == 0)) {
        return false;
      }
    }
    for (const Value* input : producer->inputs()) {
      if (written_.count(input) != 0) {
        return false;
      }
    }
    return true;
  }

  // The root and every producer that can join, until none can.
  std::vector<Node*> grow(Node* root) {
    std::vector<Node*> members = {root};
    std::unordered_set<Node*> group = {root};
    bool grew = true;
    while (grew && members.size() < kMaxGroupSize) {
      grew = false;
      for (size_t m = 0; m < members.size() && members.size() < kMaxGroupSize; ++m) {
        for (Value* input : members[m]->inputs()) {
          Node* producer = input->node();
          if (members.size() < kMaxGroupSize && canJoin(producer, root->owningBlock(), group)) {
            members.push_back(producer);
            group.insert(producer);
            grew = true;
          }
        }
      }
    }
    return members;
  }

  // Writes the group as one program and replaces it with a fused node where the root was.
  void replace(std::vector<Node*> group, Node* root) {
    std::sort(group.begin(), group.end(),
              [](const Node* a, const Node* b) { return a->isBefore(b); });
    ops::fused::Program program;
    std::unordered_map<const Node*, uint32_t> temp_of;
    std::vector<Value*> inputs;
    auto inputIndex = [&](const Value* value) {
      auto found = std::find(inputs.begin(), inputs.end(), value);
      if (found == inputs.end()) {
        inputs.push_back(const_cast<Value*>(value));
        found = inputs.end() - 1;
      }
      return static_cast<uint32_t>(found - inputs.begin());
    };
    for (const Node* node : group) {
      const NodeInstruction& described = *instructionOf(const_cast<Node*>(node));
      Instruction instruction{described.op, {}};
      for (const Arg& arg : described.args) {
        if (arg.value == nullptr) {
          instruction.args.push_back(arg.literal);
          continue;
        }
        auto temp = temp_of.find(arg.value->node());
        instruction.args.push_back(temp != temp_of.end() ? Operand::temp(temp->second)
                                                         : Operand::input(inputIndex(arg.value)));
      }
      const std::string problem = ops::fused::checkInstruction(instruction);
      TORCH_INTERNAL_ASSERT(problem.empty(), "elementwise_fusion: ", problem);
      temp_of[node] = static_cast<uint32_t>(program.code.size());
      program.code.push_back(std::move(instruction));
    }
    program.num_inputs = static_cast<uint32_t>(inputs.size());

    torch::jit::WithInsertPoint insert_point(root);
    Value* text = graph_->insertConstant(ops::fused::printProgram(program));
    Node* fused = graph_->create(c10::Symbol::fromQualString("srt::fused_elementwise"), 1);
    fused->addInput(text);
    for (Value* input : inputs) {
      fused->addInput(input);
    }
    fused->copyMetadata(root); // source range and scope, for error messages
    fused->insertBefore(root);
    fused->output()->copyMetadata(root->output());
    root->output()->replaceAllUsesWith(fused->output());
    for (auto it = group.rbegin(); it != group.rend(); ++it) {
      fused_.insert(*it);
      instructions_.erase(*it);
      (*it)->destroy();
    }
  }

  std::shared_ptr<torch::jit::Graph> graph_;
  std::unordered_set<const Value*> written_;
  std::unordered_map<const Node*, std::optional<NodeInstruction>> instructions_;
  // Nodes already replaced (destroyed): skipped by later roots of the same block.
  std::unordered_set<const Node*> fused_;
};

} // namespace

bool fuseElementwiseChains(GraphPtr& graph) {
  return ElementwiseFusion(graph).run();
}

} // namespace srt::passes
