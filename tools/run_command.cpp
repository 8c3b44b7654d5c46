// `srt run`: one checked run, then TorchScript vs static_runtime latency.
#include <cstdlib>
#include <iomanip>
#include <iostream>

#include <ATen/Parallel.h>
#include <torch/csrc/jit/api/module.h>
#include <torch/utils.h>

#include "static_runtime/static_runtime.h"
#include "tools/commands.h"
#include "tools/ivalue_report.h"
#include "tools/latency.h"
#include "tools/model_file.h"

namespace srt::cli {
namespace {

// The baseline as a TorchScript user would deploy it: eval mode, frozen.
torch::jit::Module freezeForInference(torch::jit::Module module) {
  module.eval();
  return torch::jit::freeze(module);
}

std::string envOrUnset(const char* name) {
  const char* value = std::getenv(name);
  return value ? value : "unset";
}

// The first row is the baseline the speed-ups are relative to.
void printLatencyTable(const Arguments& args, const std::vector<std::string>& names,
                       const std::vector<LatencySummary>& latencies) {
  std::cout << "latency (" << args.runs << " runs after " << args.warmup
            << " warm-up runs each, alternated; " << args.threads
            << (args.threads == 1 ? " thread" : " threads")
            << "; OPENBLAS_CORETYPE=" << envOrUnset("OPENBLAS_CORETYPE")
            << " OPENBLAS_L2_SIZE=" << envOrUnset("OPENBLAS_L2_SIZE") << "):\n";
  // setw counts bytes and "µs" is two bytes in one column: those headers get one more byte.
  std::cout << "  " << std::left << std::setw(32) << "runtime" << std::right << std::setw(12)
            << "median µs" << std::setw(12) << "p90 µs" << std::setw(11) << "speed-up"
            << "\n";
  double baseline_us = latencies[0].median_us;
  for (size_t i = 0; i < latencies.size(); ++i) {
    std::cout << "  " << std::left << std::setw(32) << names[i] << std::right << std::fixed
              << std::setprecision(1) << std::setw(11) << latencies[i].median_us << std::setw(11)
              << latencies[i].p90_us << std::setw(10) << std::setprecision(2)
              << baseline_us / latencies[i].median_us << "x\n";
  }
  std::cout.unsetf(std::ios::floatfield);
}

} // namespace

int runCommand(const Arguments& args) {
  // First, so that loading and freezing already use the requested thread count.
  at::set_num_threads(args.threads);
  ModelFile file = openModelFile(resolveModelPath(args.model_path));
  std::vector<InputSpec> specs = args.inputs.empty() ? exampleInputsOf(file) : args.inputs;
  std::vector<c10::IValue> inputs = makeInputs(specs);

  // Both runtimes run as inference would: no autograd recording.
  torch::NoGradGuard no_grad;
  std::unique_ptr<StaticModule> module = StaticModule::load(file.path);
  StaticRuntime runtime(*module);
  torch::jit::Module scripted = freezeForInference(file.module);

  std::cout << "model: " << file.path << "\n"
            << "inputs (" << (args.inputs.empty() ? "srt/example_inputs" : "--input")
            << "): " << describe(specs) << "\n";
  printLeaves(std::cout, "input", c10::ivalue::Tuple::create(inputs));
  c10::IValue ours = runtime(inputs);
  std::cout << "outputs (static_runtime):\n";
  printLeaves(std::cout, "output", ours);
  std::cout << "outputs match (TorchScript vs static_runtime):\n";
  printOutputMatch(std::cout, scripted.forward(inputs), ours);

  // Each call's output is dropped inside the timed call: freeing it is part of the cost.
  std::vector<LatencySummary> latencies =
      measureAlternating({[&] { c10::IValue output = scripted.forward(inputs); },
                          [&] { c10::IValue output = runtime(inputs); }},
                         args.warmup, args.runs);
  printLatencyTable(args, {"TorchScript (frozen, no_grad)", "static_runtime"}, latencies);
  return 0;
}

} // namespace srt::cli
