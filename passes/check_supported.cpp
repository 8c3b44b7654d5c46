// The last step of preparation: refuse, with reasons, what the runtime cannot execute.
#include <sstream>
#include <unordered_map>

#include <torch/csrc/jit/ir/ir.h>

#include "ops/containers/objects.h"
#include "ops/core/registry.h"
#include "passes/describe_node.h"
#include "passes/prepare.h"

namespace srt::passes {
namespace {

// Node kinds that survive preparation only when the model does something we do not run, and why.
const std::unordered_map<c10::Symbol, const char*>& knownUnsupported() {
  static const std::unordered_map<c10::Symbol, const char*> reasons = {
      {c10::prim::CallMethod,
       "a method call survived inlining (an interface or a call the module cannot resolve "
       "statically)"},
      {c10::prim::CallFunction, "a function call survived inlining"},
      {c10::prim::GetAttr,
       "the graph still reads a module attribute after freezing (a mutated or unfreezable "
       "attribute)"},
      {c10::prim::SetAttr,
       "the model mutates its own attributes across runs; the runtime keeps such state only "
       "for attributes of the module holding numbers, strings, None, tensors or lists, "
       "tuples and TorchScript class instances of them"},
      {c10::prim::fork, "asynchronous forks (torch.jit.fork) are not supported"},
      {c10::aten::wait, "asynchronous futures (torch.jit.wait) are not supported"},
  };
  return reasons;
}

// Whether a node can run at all: prim nodes without an operator are the interpreter's own
// constructs (calls, attributes, control flow), decided by collectUnsupported after flattening.
bool isUnknownOperator(const torch::jit::Node* node) {
  return !node->kind().is_prim() && !ops::Registry::global().knows(node);
}

void collectUnknownOperators(const torch::jit::Block* block, std::ostringstream& report,
                             size_t& count) {
  for (const torch::jit::Node* node : block->nodes()) {
    if (isUnknownOperator(node)) {
      report << "\n  " << describeNode(node) << ": no kernel and no JIT operator implements it";
      ++count;
    }
    for (const torch::jit::Block* sub_block : node->blocks()) {
      collectUnknownOperators(sub_block, report, count);
    }
  }
}

void collectUnsupported(const torch::jit::Block* block, std::ostringstream& report, size_t& count) {
  for (const torch::jit::Node* node : block->nodes()) {
    if (node->kind() == c10::prim::Constant) {
      continue;
    }
    const auto known = knownUnsupported().find(node->kind());
    const char* reason = nullptr;
    if (known != knownUnsupported().end() && !ops::accessesAnObject(node)) {
      reason = known->second;
    } else if (!ops::Registry::global().knows(node)) {
      reason = "no kernel and no JIT operator implements it";
    }
    if (reason != nullptr) {
      report << "\n  " << describeNode(node) << ": " << reason;
      ++count;
    }
    for (const torch::jit::Block* sub_block : node->blocks()) {
      collectUnsupported(sub_block, report, count);
    }
  }
}

} // namespace

void refuseUnknownOperators(const torch::jit::Graph& graph) {
  std::ostringstream report;
  size_t count = 0;
  collectUnknownOperators(graph.block(), report, count);
  TORCH_CHECK(count == 0, "static_runtime cannot run this model: ", count,
              " node(s) with unknown operators:", report.str());
}

void checkSupported(const torch::jit::Graph& graph) {
  std::ostringstream report;
  size_t count = 0;
  collectUnsupported(graph.block(), report, count);
  TORCH_CHECK(count == 0, "static_runtime cannot run this model: ", count,
              " unsupported node(s):", report.str());
}

} // namespace srt::passes
