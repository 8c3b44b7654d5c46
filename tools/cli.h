// srt's command line: what the user asked for, parsed and checked before any model is loaded.
#pragma once

#include <string>
#include <vector>

#include "tools/input_spec.h"

namespace srt::cli {

enum class Command { kHelp, kRun, kInspect, kBench };

struct Arguments {
  Command command = Command::kHelp;
  // Empty: the bundled default model.
  std::string model_path;
  // One per positional argument of forward; empty: the model's srt/example_inputs.
  std::vector<InputSpec> inputs;
  int runs = 200;
  int warmup = 20;
  int threads = 1;
  // inspect: where to write the optimized graph as Graphviz DOT, and the memory plan as a PNG;
  // empty: not written.
  std::string dot_path;
  std::string memory_plot_path;
  // bench: every argument after `bench`, handed unparsed to `python3 -m static_runtime bench`.
  std::vector<std::string> passthrough;
};

// `args` excludes the program name. Throws UsageError naming the bad argument and what was
// expected.
Arguments parseArguments(const std::vector<std::string>& args);

std::string usageText();

} // namespace srt::cli
