// LibTorch's own generic passes, wrapped to the pipeline's signature.
#include "passes/graph_passes.h"

#include <torch/csrc/jit/ir/ir.h>
#include <torch/csrc/jit/passes/common_subexpression_elimination.h>
#include <torch/csrc/jit/passes/dead_code_elimination.h>

#include "passes/pipeline.h"

namespace srt::passes {

bool eliminateCommonSubexpressions(GraphPtr& graph) {
  return torch::jit::EliminateCommonSubexpression(graph);
}

bool eliminateDeadCode(GraphPtr& graph) {
  const size_t before = countNodes(*graph->block());
  torch::jit::EliminateDeadCode(graph);
  return countNodes(*graph->block()) != before;
}

} // namespace srt::passes
