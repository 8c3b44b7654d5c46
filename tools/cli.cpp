#include "tools/cli.h"

#include <charconv>
#include <optional>
#include <utility>

#include "tools/model_file.h"
#include "tools/usage_error.h"

namespace srt::cli {
namespace {

constexpr const char* kRunFlags = "--input, --runs, --warmup, --threads or --help";

bool isHelpFlag(const std::string& arg) {
  return arg == "--help" || arg == "-h";
}

bool isFlag(const std::string& arg) {
  return !arg.empty() && arg[0] == '-';
}

// "--runs=5" → {"--runs", "5"}; "--runs" → {"--runs", nullopt}.
std::pair<std::string, std::optional<std::string>> splitFlag(const std::string& arg) {
  size_t equals = arg.find('=');
  if (equals == std::string::npos) {
    return {arg, std::nullopt};
  }
  return {arg.substr(0, equals), arg.substr(equals + 1)};
}

int parseCount(const std::string& flag, const std::string& value, int minimum) {
  int count = 0;
  const char* end = value.data() + value.size();
  auto [stop, error] = std::from_chars(value.data(), end, count);
  if (value.empty() || error != std::errc() || stop != end || count < minimum) {
    throw UsageError("bad value '" + value + "' for " + flag +
                     "; expected an integer >= " + std::to_string(minimum));
  }
  return count;
}

bool isRunOption(const std::string& flag) {
  return flag == "--input" || flag == "--runs" || flag == "--warmup" || flag == "--threads";
}

bool isInspectOption(const std::string& flag) {
  return flag == "--input" || flag == "--dot" || flag == "--memory-plot";
}

// `flag` is one of isRunOption's.
void applyRunOption(const std::string& flag, const std::string& value, Arguments& parsed) {
  if (flag == "--input") {
    parsed.inputs.push_back(parseInputSpec(value));
  } else if (flag == "--runs") {
    parsed.runs = parseCount(flag, value, 1);
  } else if (flag == "--warmup") {
    parsed.warmup = parseCount(flag, value, 0);
  } else {
    parsed.threads = parseCount(flag, value, 1);
  }
}

Command parseCommand(const std::string& command) {
  if (command == "help" || isHelpFlag(command)) {
    return Command::kHelp;
  }
  if (command == "run") {
    return Command::kRun;
  }
  if (command == "inspect") {
    return Command::kInspect;
  }
  if (command == "bench") {
    return Command::kBench;
  }
  throw UsageError("unknown command '" + command + "'; expected run, inspect, bench or help");
}

} // namespace

Arguments parseArguments(const std::vector<std::string>& args) {
  if (args.empty()) {
    throw UsageError(
        "missing command; expected 'srt run', 'srt inspect', 'srt bench' or 'srt --help'");
  }
  Arguments parsed;
  parsed.command = parseCommand(args[0]);
  if (parsed.command == Command::kHelp) {
    return parsed;
  }
  if (parsed.command == Command::kBench) {
    // One implementation of bench: the Python one, which parses (and explains) its own options.
    parsed.passthrough.assign(args.begin() + 1, args.end());
    return parsed;
  }
  const std::string command_name = "'srt " + args[0] + "'";
  for (size_t i = 1; i < args.size(); ++i) {
    const std::string& arg = args[i];
    if (isHelpFlag(arg)) {
      parsed.command = Command::kHelp;
      return parsed;
    }
    if (!isFlag(arg)) {
      if (!parsed.model_path.empty()) {
        throw UsageError("unexpected argument '" + arg + "' for " + command_name +
                         "; expected one MODEL.pt (already given: '" + parsed.model_path + "')");
      }
      parsed.model_path = arg;
      continue;
    }
    auto [flag, value] = splitFlag(arg);
    if (parsed.command == Command::kInspect && !isInspectOption(flag)) {
      throw UsageError("unknown option '" + arg +
                       "' for 'srt inspect'; expected MODEL.pt, --input, --dot, --memory-plot "
                       "or --help");
    }
    if (parsed.command == Command::kRun && !isRunOption(flag)) {
      throw UsageError("unknown option '" + flag + "' for 'srt run'; expected " + kRunFlags);
    }
    if (!value) {
      if (i + 1 == args.size()) {
        throw UsageError(flag + " needs a value; expected " + flag + " VALUE");
      }
      value = args[++i];
    }
    if (flag == "--dot") {
      parsed.dot_path = *value;
    } else if (flag == "--memory-plot") {
      parsed.memory_plot_path = *value;
    } else {
      applyRunOption(flag, *value, parsed);
    }
  }
  return parsed;
}

std::string usageText() {
  std::string default_models;
  for (const std::string& candidate : defaultModelCandidates()) {
    default_models += "\n  " + candidate;
  }
  return R"(usage: srt <command> [MODEL.pt] [options]

Runs a TorchScript archive (written by torch.jit.save) with static_runtime.

commands:
  run [MODEL.pt]       run once and print every output, then compare outputs and latency
                       with TorchScript (frozen, under torch::NoGradGuard)
  inspect [MODEL.pt]   print the prepared graph, node counts by kernel kind, the ops that
                       fall back to the JIT, and the memory plan after one run on the
                       example inputs (or --input): every tensor and kernel scratch block
                       in the arena with its offset, bytes and steps
  bench MODEL.pt       compare latency side by side with TorchScript (frozen),
                       optimize_for_inference, PyTorch's Static Runtime and ONNX Runtime:
                       runs /usr/bin/python3 -m static_runtime bench (srt bench --help)
  help, --help         print this text

MODEL.pt defaults to the bundled default model, the first of:)" +
         default_models + R"(

inspect options:
  --dot FILE             also write the optimized graph as Graphviz DOT: fused srt:: nodes
                         filled orange, edges labelled with the shapes one JIT run of the
                         optimized graph on the inputs produced (unlabelled when unknown)
  --memory-plot FILE.png also draw the memory plan: node index x arena offset, one box per
                         tensor or scratch block (python3-matplotlib)

run options (inspect takes --input too):
  --input SHAPE[:DTYPE]  one per positional argument of forward, in order. SHAPE is dims
                         joined by 'x' (8x64, 1x16x64) or 'scalar'; DTYPE is float32
                         (default), float64, int64, int32 or bool. Without --input: the
                         specs in the model's extra file srt/example_inputs, one per line.
  --runs N               timed runs of each runtime (default 200)
  --warmup N             untimed runs of each runtime before timing (default 20)
  --threads N            intra-op threads, at::set_num_threads (default 1)

Input data is deterministic: seed 0; floats randn, integers randint(0, 10), bools
randint(0, 2).

exit status: 0 success; 1 the model failed to prepare or run; 2 bad arguments or a model
file that cannot be read.
)";
}

} // namespace srt::cli
