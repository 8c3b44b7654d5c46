// The optimization pipeline: named graph passes run in one declared order after preparation.
#pragma once

#include <memory>
#include <set>
#include <string>
#include <vector>

#include "passes/pass_report.h"

namespace torch::jit {
struct Graph;
struct Block;
} // namespace torch::jit

namespace srt::passes {

// Rewrites the graph in place (or replaces it); returns whether anything changed.
using GraphPass = bool (*)(std::shared_ptr<torch::jit::Graph>& graph);

struct PassEntry {
  const char* name;
  GraphPass run;
};

// Every pass, in the order optimize() runs them (see pipeline.cpp for why each sits where it does).
const std::vector<PassEntry>& optimizationPipeline();

// The names of optimizationPipeline(), in order.
std::vector<std::string> passNames();

// Throws a c10::Error listing the valid names when `names` has one no pass carries.
void checkPassNames(const std::set<std::string>& names);

// Runs every pass whose name is not in `disabled`, linting the graph after each (a broken graph
// is an error naming the pass). One report per pipeline entry, disabled ones included.
std::vector<PassReport> optimize(std::shared_ptr<torch::jit::Graph>& graph,
                                 const std::set<std::string>& disabled);

// Nodes a runtime executes: every node of every block except prim::Constant.
size_t countNodes(const torch::jit::Block& block);

} // namespace srt::passes
