#include "static_runtime/node_error.h"

#include <torch/csrc/jit/runtime/jit_exception.h>

#include "passes/describe_node.h"

namespace srt {

NodeError::NodeError(const torch::jit::Node* node, const std::string& kernel_message)
    : c10::Error("static_runtime: " + passes::describeNode(node) + " failed: " + kernel_message,
                 /*backtrace=*/"") {}

void rethrowWithNode(const torch::jit::Node* node) {
  try {
    throw;
  } catch (const NodeError&) {
    throw;
  } catch (const torch::jit::JITException& e) {
    // The model's own `raise`: keep its exception class next to its message.
    const auto python_class = e.getPythonClassName();
    throw NodeError(node, python_class ? *python_class + ": " + e.what() : std::string(e.what()));
  } catch (const c10::Error& e) {
    throw NodeError(node, e.what_without_backtrace());
  } catch (const std::exception& e) {
    throw NodeError(node, e.what());
  }
}

} // namespace srt
