// The memory plan as a picture (`srt inspect --memory-plot FILE.png`).
#pragma once

#include <string>
#include <vector>

#include "static_runtime/memory_plan_entry.h"

namespace srt::cli {

// {"title", "nodes", "arena_bytes", "entries": [{"name", "kind", "first_node", "last_node",
// "offset", "bytes"}]}: what `python3 -m static_runtime.plots memory-plan` draws.
std::string memoryPlanJson(const std::vector<MemoryPlanEntry>& entries, size_t nodes,
                           size_t arena_bytes, const std::string& title);

// Writes the plan as JSON next to `png_path` (PNG_PATH.json, kept for other tools) and draws it
// with matplotlib: node index across, arena offset up, one box per tensor or scratch block.
void drawMemoryPlan(const std::vector<MemoryPlanEntry>& entries, size_t nodes, size_t arena_bytes,
                    const std::string& title, const std::string& png_path);

} // namespace srt::cli
