// The string operations TorchScript emits around shape checks and error messages (nn.Module
// code builds messages with str.format and checks devices with str(device).find("cpu")).
#include <sstream>

#include <torch/csrc/jit/ir/ir.h>

#include "ops/core/processed_node.h"
#include "ops/core/registry.h"
#include "ops/core/schema_match.h"

namespace srt::ops {
namespace {

const std::string& stringAt(const ProcessedNode& p, size_t i) {
  return p.input(i).toStringRef();
}

// str.format with positional "{}" fields only, as the JIT's aten::format: each field prints the
// next argument the way the interpreter prints an IValue.
void format(ProcessedNode& p) {
  const std::string& pattern = stringAt(p, 0);
  std::stringstream out;
  size_t next_argument = 1;
  size_t begin = 0;
  while (true) {
    const size_t field = pattern.find("{}", begin);
    if (field == std::string::npos) {
      out << pattern.substr(begin);
      break;
    }
    out << pattern.substr(begin, field - begin);
    TORCH_CHECK(next_argument < p.numInputs(), "Too few arguments for format string: ", pattern);
    out << p.input(next_argument++);
    begin = field + 2;
  }
  p.output(0) = out.str();
}

// str.find(substr, start, end) with Python's clamping of negative bounds.
void find(ProcessedNode& p) {
  const std::string& string = stringAt(p, 0);
  const std::string& substring = stringAt(p, 1);
  const int64_t size = static_cast<int64_t>(string.size());
  int64_t start = p.input(2).toInt();
  int64_t end = p.input(3).toInt();
  if (start < 0) {
    start = std::max<int64_t>(0, size + start);
  }
  if (end < 0) {
    end = std::max<int64_t>(0, size + end + 1);
  }
  end = std::min(end, size);
  int64_t result = -1;
  if (end > start && end - start >= static_cast<int64_t>(substring.size())) {
    const size_t found = string.substr(start, end - start).find(substring);
    if (found != std::string::npos) {
      result = static_cast<int64_t>(found) + start;
    }
  }
  p.output(0) = result;
}

// Python warns once per call site; the interpreter once per node, and so do we (per runtime).
struct WarnedOnce : NodeState {
  bool warned = false;
};

void warn(ProcessedNode& p) {
  WarnedOnce& state = p.state<WarnedOnce>();
  if (!state.warned) {
    state.warned = true;
    TORCH_WARN(stringAt(p, 0));
  }
}

} // namespace

SRT_REGISTER_KERNEL("aten::str", kNative, always([](ProcessedNode& p) {
                      std::stringstream out;
                      out << p.input(0);
                      p.output(0) = out.str();
                    }));
SRT_REGISTER_KERNEL("aten::format", kNative, always(format));
SRT_REGISTER_KERNEL("aten::find", kNative, always(find));
SRT_REGISTER_KERNEL("aten::warn", kNative, always(warn));
SRT_REGISTER_KERNEL("aten::len", kNative,
                    whenMatches("aten::len.str(str s) -> int", [](ProcessedNode& p) {
                      p.output(0) = static_cast<int64_t>(stringAt(p, 0).size());
                    }));
SRT_REGISTER_KERNEL("aten::add", kNative,
                    whenMatches("aten::add.str(str a, str b) -> str", [](ProcessedNode& p) {
                      p.output(0) = stringAt(p, 0) + stringAt(p, 1);
                    }));
SRT_REGISTER_KERNEL("aten::eq", kNative,
                    whenMatches("aten::eq.str(str a, str b) -> bool", [](ProcessedNode& p) {
                      p.output(0) = stringAt(p, 0) == stringAt(p, 1);
                    }));
SRT_REGISTER_KERNEL("aten::ne", kNative,
                    whenMatches("aten::ne.str(str a, str b) -> bool", [](ProcessedNode& p) {
                      p.output(0) = stringAt(p, 0) != stringAt(p, 1);
                    }));

} // namespace srt::ops
