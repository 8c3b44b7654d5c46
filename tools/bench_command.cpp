// `srt bench`: the Python bench tool (static_runtime/bench.py), which can measure eager
// PyTorch, PyTorch's Static Runtime and ONNX Runtime beside ours in one process.
#include "tools/commands.h"
#include "tools/python_runner.h"

namespace srt::cli {

int benchCommand(const Arguments& args) {
  std::vector<std::string> python_args = {"bench"};
  python_args.insert(python_args.end(), args.passthrough.begin(), args.passthrough.end());
  execPythonModule("static_runtime", python_args);
}

} // namespace srt::cli
