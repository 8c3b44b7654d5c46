#include "static_runtime/node_error.h"

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
  } catch (const c10::Error& e) {
    throw NodeError(node, e.what_without_backtrace());
  } catch (const std::exception& e) {
    throw NodeError(node, e.what());
  }
}

} // namespace srt
