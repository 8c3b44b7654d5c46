#include "tools/memory_plot.h"

#include <fstream>
#include <sstream>
#include <stdexcept>

#include "tools/python_runner.h"

namespace srt::cli {
namespace {

std::string jsonString(const std::string& text) {
  std::string quoted = "\"";
  for (char c : text) {
    if (c == '"' || c == '\\') {
      quoted += '\\';
      quoted += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      quoted += ' ';
    } else {
      quoted += c;
    }
  }
  return quoted + "\"";
}

} // namespace

std::string memoryPlanJson(const std::vector<MemoryPlanEntry>& entries, size_t nodes,
                           size_t arena_bytes, const std::string& title) {
  std::ostringstream json;
  json << "{\"title\": " << jsonString(title) << ", \"nodes\": " << nodes
       << ", \"arena_bytes\": " << arena_bytes << ", \"entries\": [";
  for (size_t i = 0; i < entries.size(); ++i) {
    const MemoryPlanEntry& entry = entries[i];
    json << (i ? ",\n  " : "\n  ") << "{\"name\": " << jsonString(entry.name) << ", \"kind\": \""
         << toString(entry.kind) << "\", \"first_node\": " << entry.first_node
         << ", \"last_node\": " << entry.last_node << ", \"offset\": " << entry.offset
         << ", \"bytes\": " << entry.bytes << "}";
  }
  json << "]}\n";
  return json.str();
}

void drawMemoryPlan(const std::vector<MemoryPlanEntry>& entries, size_t nodes, size_t arena_bytes,
                    const std::string& title, const std::string& png_path) {
  const std::string json_path = png_path + ".json";
  {
    std::ofstream out(json_path);
    out << memoryPlanJson(entries, nodes, arena_bytes, title);
    if (!out) {
      throw std::runtime_error("cannot write " + json_path);
    }
  }
  runPythonModule("static_runtime.plots", {"memory-plan", json_path, png_path});
}

} // namespace srt::cli
