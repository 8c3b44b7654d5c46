#include <algorithm>
#include <string>
#include <unordered_map>
#include <unordered_set>

#include <torch/csrc/jit/ir/alias_analysis.h>
#include <torch/csrc/jit/ir/constants.h>
#include <torch/csrc/jit/ir/ir.h>

#include "memory/liveness.h"
#include "passes/describe_node.h"
#include "static_runtime/internal_options.h"
#include "static_runtime/program.h"

namespace srt {
namespace {

using torch::jit::Block;
using torch::jit::Node;
using torch::jit::Value;

class ProgramBuilder {
public:
  ProgramBuilder(Program& program, const StaticModuleOptions& options)
      : program_(program), options_(options), kernel_options_(kernelOptions(options)) {}

  void build(const std::shared_ptr<torch::jit::Graph>& graph) {
    for (const Value* input : graph->inputs()) {
      assign(input);
    }
    program_.num_inputs = graph->inputs().size();
    hoistConstants(graph->block());
    buildBlock(graph->block(), /*parameters_assigned=*/true);
    program_.num_values = next_index_;
    collectOutputs();
    collectValuesToReset(graph);
    if (options_.optimize_memory) {
      program_.scratch_blocks.resize(program_.num_nodes);
      for (size_t step = 0; step < program_.blocks.front().nodes.size(); ++step) {
        collectScratchBlocks(program_.blocks.front().nodes[step], step);
      }
    }
  }

private:
  ops::ValueIndex assign(const Value* value) {
    index_of_[value] = next_index_;
    return next_index_++;
  }

  ops::ValueIndex indexOf(const Value* value) const { return index_of_.at(value); }

  // Constants of every block live once in the constant section.
  void hoistConstants(const Block* block) {
    for (const Node* node : block->nodes()) {
      if (node->kind() == c10::prim::Constant) {
        auto constant = torch::jit::toIValue(node->output());
        TORCH_CHECK(constant.has_value(), "static_runtime: cannot materialize constant ",
                    passes::describeNode(node));
        assign(node->output());
        program_.constants.push_back(std::move(*constant));
      }
      for (const Block* sub_block : node->blocks()) {
        hoistConstants(sub_block);
      }
    }
  }

  // The top-level block's parameters are the graph inputs, which come first in the value table.
  size_t buildBlock(const Block* block, bool parameters_assigned) {
    const size_t block_index = program_.blocks.size();
    program_.blocks.emplace_back();
    BlockInfo info;
    for (const Value* parameter : block->inputs()) {
      info.inputs.push_back(parameters_assigned ? indexOf(parameter) : assign(parameter));
    }
    for (const Node* node : block->nodes()) {
      if (node->kind() != c10::prim::Constant) {
        info.nodes.push_back(buildNode(node));
      }
    }
    for (const Value* output : block->outputs()) {
      info.outputs.push_back(indexOf(output));
    }
    // Nested blocks were appended while building, so refer to this block by index, not pointer.
    program_.blocks[block_index] = std::move(info);
    return block_index;
  }

  ops::StaticNodeInfo buildNode(const Node* node) {
    ops::StaticNodeInfo info;
    info.node = node;
    info.id = program_.num_nodes++;
    for (const Value* input : node->inputs()) {
      info.inputs.push_back(indexOf(input));
    }
    info.first_output = next_index_;
    info.num_outputs = node->outputs().size();
    for (const Value* output : node->outputs()) {
      assign(output);
    }
    for (const Block* sub_block : node->blocks()) {
      info.sub_blocks.push_back(buildBlock(sub_block, /*parameters_assigned=*/false));
    }
    auto kernel = ops::Registry::global().select(node, kernel_options_);
    TORCH_CHECK(kernel.has_value(), "static_runtime cannot run ", passes::describeNode(node),
                ": no kernel and no JIT operator implements it");
    info.kernel = std::move(*kernel);
    kernel_kind_of_[node] = info.kernel.kind;
    if (info.kernel.writes_over_input) {
      writes_over_input_[node] = *info.kernel.writes_over_input;
    }
    return info;
  }

  void collectOutputs() {
    const BlockInfo& top = program_.blocks.front();
    std::unordered_map<ops::ValueIndex, size_t> times_returned;
    for (ops::ValueIndex index : top.outputs) {
      ++times_returned[index];
    }
    for (ops::ValueIndex index : top.outputs) {
      const bool computed = index >= program_.firstNodeValue();
      program_.outputs.push_back({index, computed && times_returned[index] == 1});
    }
  }

  // A tensor the caller receives, or that may alias one, must be fresh every run; so must
  // anything a non-out-variant kernel produced (it may alias the caller's inputs). The kept
  // tensors of the top-level block are the ones the memory planner may own.
  void collectValuesToReset(const std::shared_ptr<torch::jit::Graph>& graph) {
    const torch::jit::AliasDb alias_db(graph, /*isFrozen=*/true);
    std::vector<bool> keep(program_.num_values, false);
    std::vector<const Value*> top_level_kept;
    std::vector<const Value*> managed_outputs;
    for (const auto& [value, index] : index_of_) {
      keep[index] = isReusableOutVariantOutput(value, *graph, alias_db);
      if (keep[index] && value->node()->owningBlock() == graph->block()) {
        top_level_kept.push_back(value);
      } else if (options_.manage_output_tensors && isManagedOutput(value, *graph, alias_db)) {
        keep[index] = true;
        managed_outputs.push_back(value);
      } else if (!keep[index] && index >= program_.firstNodeValue() &&
                 value->type()->kind() == c10::TypeKind::TensorType) {
        ++program_.num_unmanaged_tensors;
      }
    }
    for (size_t i = 0; i < program_.num_values; ++i) {
      const bool constant = i >= program_.num_inputs && i < program_.firstNodeValue();
      if (!constant && !keep[i]) {
        program_.reset_after_run.push_back(static_cast<ops::ValueIndex>(i));
      }
    }
    if (options_.optimize_memory) {
      program_.managed_tensors = managedTensors(top_level_kept, *graph, alias_db);
    } else {
      program_.num_unmanaged_tensors += top_level_kept.size();
    }
    program_.managed_output_tensors = managedTensors(managed_outputs, *graph, alias_db);
    for (OutputSlot& slot : program_.outputs) {
      // The runtime keeps its reference: the memory stays the planner's until handed back.
      slot.movable = slot.movable && !keep[slot.index];
    }
  }

  // One scratch block per node, at the node's id. A node inside an If/Loop body gets the step of
  // the top-level If/Loop: every
  // managed tensor is a top-level value, and those live at that step (the If/Loop's inputs and
  // outputs) are live over the whole step, so they never share bytes with it; the blocks of one
  // step are disjoint from each other, so nested nodes need not take turns. (A loop body's
  // blocks then add up where taking turns would let them share: bodies are small.)
  void collectScratchBlocks(const ops::StaticNodeInfo& node, size_t step) {
    std::string name = node.node->kind().toQualString();
    if (node.node->outputs().size() > 0) {
      name += " -> %" + node.node->output(0)->debugName();
    }
    if (node.node->owningBlock() != node.node->owningGraph()->block()) {
      name += " (in a sub-block)";
    }
    program_.scratch_blocks[node.id] = {step, std::move(name)};
    for (size_t sub_block : node.sub_blocks) {
      for (const ops::StaticNodeInfo& inner : program_.blocks[sub_block].nodes) {
        collectScratchBlocks(inner, step);
      }
    }
  }

  std::vector<memory::ManagedTensor> managedTensors(std::vector<const Value*> values,
                                                    const torch::jit::Graph& graph,
                                                    const torch::jit::AliasDb& alias_db) const {
    // Program order, so plans and dumps read top to bottom.
    std::sort(values.begin(), values.end(),
              [this](const Value* a, const Value* b) { return indexOf(a) < indexOf(b); });
    std::vector<memory::ManagedTensor> managed;
    std::unordered_map<const Value*, size_t> position;
    for (const auto& lifetime : memory::computeLifetimes(graph, values, alias_db)) {
      position[lifetime.value] = managed.size();
      managed.push_back(
          {indexOf(lifetime.value), lifetime.first, lifetime.last, lifetime.value->debugName()});
    }
    // A kernel that may write its output over an input (Kernel::writes_over_input: a residual its
    // epilogue adds) gets that input's slot where the input dies at the node: one tensor's worth
    // of memory less, and no pass over memory to copy it (resnet50's residual convolutions 5-10%
    // faster each). Not where the node reads the input twice (conv(x, ..., residual=x)).
    for (const auto& [value, i] : position) {
      const Node* node = value->node();
      const auto over = writes_over_input_.find(node);
      if (over == writes_over_input_.end() || value->offset() != 0) {
        continue;
      }
      const Value* input = node->input(over->second);
      const auto taken = position.find(input);
      if (taken == position.end() || managed[taken->second].last != managed[i].first ||
          std::count(node->inputs().begin(), node->inputs().end(), input) != 1) {
        continue;
      }
      managed[i].takes_slot_of = static_cast<int64_t>(taken->second);
    }
    return managed;
  }

  // A top-level out-variant tensor the caller receives as is: returned directly or as an element
  // of the returned tuple/list, and with no view of it escaping (a view would outlive the slot).
  bool isManagedOutput(const Value* value, torch::jit::Graph& graph,
                       const torch::jit::AliasDb& alias_db) const {
    const Node* producer = value->node();
    auto kind = kernel_kind_of_.find(producer);
    if (kind == kernel_kind_of_.end() || kind->second != ops::KernelKind::kOutVariant ||
        producer->owningBlock() != graph.block() ||
        value->type()->kind() != c10::TypeKind::TensorType) {
      return false;
    }
    auto returned = [&graph](const Value* v) {
      return std::find(graph.outputs().begin(), graph.outputs().end(), v) != graph.outputs().end();
    };
    for (const torch::jit::Use& use : value->uses()) {
      const Node* user = use.user;
      const bool returned_container =
          (user->kind() == c10::prim::TupleConstruct || user->kind() == c10::prim::ListConstruct) &&
          user->owningBlock() == graph.block() && returned(user->output());
      if (user == graph.return_node() || returned_container) {
        continue;
      }
      for (const Value* output : user->outputs()) {
        if (alias_db.mayContainAlias(const_cast<Value*>(output), graph.outputs())) {
          return false;
        }
      }
    }
    return returned(value) || alias_db.mayContainAlias(const_cast<Value*>(value), graph.outputs());
  }

  bool isReusableOutVariantOutput(const Value* value, torch::jit::Graph& graph,
                                  const torch::jit::AliasDb& alias_db) const {
    const Node* producer = value->node();
    if (producer->kind() == c10::prim::Param || producer->kind() == c10::prim::Constant ||
        value->type()->kind() != c10::TypeKind::TensorType) {
      return false;
    }
    auto kind = kernel_kind_of_.find(producer);
    return kind != kernel_kind_of_.end() && kind->second == ops::KernelKind::kOutVariant &&
           !mayReachGraphOutput(value, graph, alias_db);
  }

  // AliasDb relates a value to what views or contains it, but not a loop's carried input to the
  // loop's result (a zero-trip loop returns the input itself), nor a sub-block's result to the
  // If/Loop output it becomes: follow those edges explicitly.
  bool mayReachGraphOutput(const Value* value, torch::jit::Graph& graph,
                           const torch::jit::AliasDb& alias_db) const {
    if (alias_db.mayContainAlias(const_cast<Value*>(value), graph.outputs())) {
      return true;
    }
    for (const torch::jit::Use& use : value->uses()) {
      const Node* user = use.user;
      const Node* control_flow = nullptr;
      if (user->kind() == c10::prim::Loop || user->kind() == c10::prim::If) {
        control_flow = user;
      } else if (user->kind() == c10::prim::Return && user->owningBlock() != graph.block()) {
        control_flow = user->owningBlock()->owningNode();
      }
      if (control_flow == nullptr) {
        continue;
      }
      for (const Value* output : control_flow->outputs()) {
        if (mayReachGraphOutput(output, graph, alias_db)) {
          return true;
        }
      }
    }
    return false;
  }

  Program& program_;
  const StaticModuleOptions& options_;
  const ops::KernelOptions kernel_options_;
  std::unordered_map<const Node*, ops::KernelKind> kernel_kind_of_;
  std::unordered_map<const Node*, size_t> writes_over_input_; // Kernel::writes_over_input
  std::unordered_map<const Value*, ops::ValueIndex> index_of_;
  ops::ValueIndex next_index_ = 0;
};

} // namespace

Program buildProgram(const std::shared_ptr<torch::jit::Graph>& graph,
                     const StaticModuleOptions& options) {
  Program program;
  ProgramBuilder(program, options).build(graph);
  return program;
}

ModuleStats countKernels(const Program& program) {
  ModuleStats stats;
  stats.top_level_nodes = program.blocks.front().nodes.size();
  stats.num_managed_tensors = program.managed_tensors.size();
  stats.num_unmanaged_tensors = program.num_unmanaged_tensors;
  for (const BlockInfo& block : program.blocks) {
    for (const ops::StaticNodeInfo& node : block.nodes) {
      ++stats.nodes;
      switch (node.kernel.kind) {
      case ops::KernelKind::kOutVariant:
        ++stats.out_variant_nodes;
        break;
      case ops::KernelKind::kNative:
        ++stats.native_nodes;
        break;
      case ops::KernelKind::kFallback:
        ++stats.fallback_nodes;
        ++stats.fallback_ops[node.node->kind().toQualString()];
        break;
      }
    }
  }
  return stats;
}

} // namespace srt
