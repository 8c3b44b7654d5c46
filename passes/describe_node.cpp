#include "passes/describe_node.h"

#include <sstream>

#include <torch/csrc/jit/ir/ir.h>

namespace srt::passes {
namespace {

std::string trim(const std::string& text) {
  const auto first = text.find_first_not_of(" \t\r\n");
  if (first == std::string::npos) {
    return "";
  }
  const auto last = text.find_last_not_of(" \t\r\n");
  return text.substr(first, last - first + 1);
}

std::string describeRange(torch::jit::SourceRange range) {
  // Loaded models point into their serialized code; prefer the original Python source.
  if (auto original = range.findSourceRangeThatGenerated()) {
    range = *original;
  }
  const auto& source = range.source();
  if (!source) {
    return "no source location";
  }
  const size_t line = source->lineno_for_offset(range.start());
  std::ostringstream out;
  if (source->filename()) {
    out << *source->filename() << ":" << source->lineno_to_source_lineno(line);
  } else {
    out << "line " << line + 1;
  }
  const std::string code = trim(source->get_line(line).str());
  if (!code.empty()) {
    out << ": `" << code << "`";
  }
  return out.str();
}

} // namespace

std::string describeSource(const torch::jit::Node* node) {
  std::string where = describeRange(node->sourceRange());
  // A node inlined from a submodule or function points into library code (e.g. nn.Linear);
  // the outermost call site is the line the model's author wrote.
  if (auto callstack = node->callstack()) {
    auto frames = (*callstack)->vec();
    if (!frames.empty()) {
      where += ", called from " + describeRange(std::get<1>(frames.front()));
    }
  }
  return where;
}

std::string describeNode(const torch::jit::Node* node) {
  std::ostringstream printed;
  node->print(printed, 0, nullptr, /*print_source_locations=*/false, /*print_attributes=*/true,
              /*print_scopes=*/false, /*print_body=*/false);
  return std::string(node->kind().toQualString()) + " (" + trim(printed.str()) + ", " +
         describeSource(node) + ")";
}

} // namespace srt::passes
