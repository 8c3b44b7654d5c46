#include "static_runtime/block_runner.h"

#include "static_runtime/node_error.h"

namespace srt {

BlockRunner::BlockRunner(const Program& program, size_t block_index, c10::IValue* values,
                         ops::Scratch* scratch, std::vector<ops::ProcessedNode*>* every_node)
    : info_(program.blocks.at(block_index)), values_(values) {
  // Reserved once, so the addresses handed out below never move.
  nodes_.reserve(info_.nodes.size());
  for (const ops::StaticNodeInfo& node_info : info_.nodes) {
    ops::ProcessedNode& node = nodes_.emplace_back(node_info, values, scratch);
    if (every_node != nullptr) {
      every_node->push_back(&node);
    }
    if (!node_info.sub_blocks.empty()) {
      std::vector<std::unique_ptr<ops::SubBlock>> sub_blocks;
      for (size_t sub_block : node_info.sub_blocks) {
        sub_blocks.push_back(
            std::make_unique<BlockRunner>(program, sub_block, values, scratch, every_node));
      }
      node.setSubBlocks(std::move(sub_blocks));
    }
  }
}

void BlockRunner::run() {
  size_t i = 0;
  try {
    for (; i < nodes_.size(); ++i) {
      nodes_[i].run();
    }
  } catch (...) {
    rethrowWithNode(nodes_[i].node());
  }
}

} // namespace srt
