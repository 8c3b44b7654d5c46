// Timing a runtime the way PyTorch's Static Runtime does (StaticRuntime::benchmark_model and
// benchmark_individual_ops): the same fields with the same meanings, in milliseconds.
#pragma once

#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include <ATen/core/ivalue.h>

#include "static_runtime/argument_binding.h"

namespace srt {

class StaticRuntime;

// Input sets: args_list[i] with kwargs_list[i] (kwargs_list empty: no keywords). Every pass runs
// each set once; each set's run counts as one run in the averages.
using ArgsList = std::vector<std::vector<c10::IValue>>;
using KwargsList = std::vector<Kwargs>;

// Runs every input set `warmup_runs` times, then `main_runs` times on the clock, and returns the
// mean wall time of one run in milliseconds: binding, memory planning, kernels, handing the
// outputs back and dropping them (with manage_output_tensors, deallocateOutputTensors() too).
[[nodiscard]] float benchmark(StaticRuntime& runtime, const ArgsList& args_list,
                              const KwargsList& kwargs_list, int warmup_runs, int main_runs);

struct IndividualMetrics {
  // Means over the main runs, per run.
  float setup_time = 0;          // binding arguments into the value table
  float memory_alloc_time = 0;   // pointing managed tensors and scratch into the arena
  float memory_dealloc_time = 0; // detaching them, dropping inputs and intermediates
  float output_dealloc_time = 0; // dropping the outputs (and deallocateOutputTensors())
  // The first run on the first input set, before the warm-up runs: when the runtime had not
  // run yet, this includes learning tensor sizes and planning memory.
  float first_iter_time = 0;
  // Sum of time_per_node.
  float total_time = 0;
  // Top-level nodes in program order (a prim::If / prim::Loop includes its blocks).
  std::vector<float> time_per_node;
  // By node kind ("aten::layer_norm", "srt::fused_linear"): summed time, its share of
  // total_time in percent, and how many top-level nodes have that kind.
  std::unordered_map<std::string, float> time_per_node_type;
  std::unordered_map<std::string, float> percent_per_node_type;
  std::unordered_map<std::string, int> instances_per_node_type;
  // Node kinds with an out-variant, native and fallback (JIT operator) kernel, and how many
  // top-level nodes run each kind of kernel; the three counts add up to total_nodes_count.
  std::unordered_set<std::string> out_nodes;
  std::unordered_set<std::string> native_nodes;
  std::unordered_set<std::string> fallback_nodes;
  int out_nodes_count = 0;
  int native_nodes_count = 0;
  int fallback_nodes_count = 0;
  int total_nodes_count = 0;
};

// The first run, `warmup_runs` passes over the input sets, then `main_runs` passes with every
// phase of the run and every top-level node timed (StaticRuntime::timedRun). The per-node loop
// calls the same kernels as a normal run, reading the clock once between nodes.
[[nodiscard]] IndividualMetrics benchmarkIndividualOps(StaticRuntime& runtime,
                                                       const ArgsList& args_list,
                                                       const KwargsList& kwargs_list,
                                                       int warmup_runs, int main_runs);

// A report like PyTorch's StaticRuntime::benchmark prints: time per node kind, slowest first,
// with share, count and kernel kind, then the totals.
[[nodiscard]] std::string toString(const IndividualMetrics& metrics);

} // namespace srt
