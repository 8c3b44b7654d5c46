#include "static_runtime/block_runner.h"

#include <chrono>

#include <c10/macros/Macros.h>

#include "static_runtime/node_error.h"
#include "static_runtime/profiler_events.h"

namespace srt {

BlockRunner::BlockRunner(const Program& program, size_t block_index, c10::IValue* values,
                         ops::Scratch* scratch, ops::WorkerPool* workers, const bool& node_events,
                         std::vector<ops::ProcessedNode*>* every_node)
    : info_(program.blocks.at(block_index)), values_(values), node_events_(node_events) {
  // Reserved once, so the addresses handed out below never move.
  nodes_.reserve(info_.nodes.size());
  for (const ops::StaticNodeInfo& node_info : info_.nodes) {
    ops::ProcessedNode& node = nodes_.emplace_back(node_info, values, scratch, workers);
    if (every_node != nullptr) {
      every_node->at(node_info.id) = &node;
    }
    if (!node_info.sub_blocks.empty()) {
      std::vector<std::unique_ptr<ops::SubBlock>> sub_blocks;
      for (size_t sub_block : node_info.sub_blocks) {
        sub_blocks.push_back(std::make_unique<BlockRunner>(program, sub_block, values, scratch,
                                                           workers, node_events, every_node));
      }
      node.setSubBlocks(std::move(sub_blocks));
    }
  }
}

void BlockRunner::run() {
  size_t i = 0;
  try {
    // Decided once per run, so the loop without a profiler is the bare kernel calls.
    if (C10_UNLIKELY(node_events_)) {
      for (; i < nodes_.size(); ++i) {
        runWithEvent(nodes_[i]);
      }
    } else {
      for (; i < nodes_.size(); ++i) {
        nodes_[i].run();
      }
    }
  } catch (...) {
    rethrowWithNode(nodes_[i].node());
  }
}

void BlockRunner::runTimed(double* node_ms) {
  using Clock = std::chrono::steady_clock;
  size_t i = 0;
  try {
    // One clock read per node boundary: the end of one node is the start of the next.
    Clock::time_point start = Clock::now();
    for (; i < nodes_.size(); ++i) {
      runNode(nodes_[i]);
      const Clock::time_point end = Clock::now();
      node_ms[i] += std::chrono::duration<double, std::milli>(end - start).count();
      start = end;
    }
  } catch (...) {
    rethrowWithNode(nodes_[i].node());
  }
}

void BlockRunner::runThen(const std::function<void(size_t)>& after_step) {
  size_t i = 0;
  try {
    for (; i < nodes_.size(); ++i) {
      runNode(nodes_[i]);
      after_step(i);
    }
  } catch (...) {
    rethrowWithNode(nodes_[i].node());
  }
}

void BlockRunner::runNode(ops::ProcessedNode& node) {
  if (C10_UNLIKELY(node_events_)) {
    runWithEvent(node);
  } else {
    node.run();
  }
}

} // namespace srt
