#include "tools/graph_dot.h"

#include <memory>
#include <sstream>
#include <utility>

#include <c10/core/GradMode.h>
#include <c10/util/Exception.h>
#include <torch/csrc/jit/ir/ir.h>
#include <torch/csrc/jit/runtime/interpreter.h>

#include "tools/input_spec.h"

namespace srt::cli {
namespace {

using torch::jit::Block;
using torch::jit::Graph;
using torch::jit::Node;
using torch::jit::Value;

std::string shapeOf(const at::Tensor& tensor) {
  std::string text;
  for (int64_t dim : tensor.sizes()) {
    text += (text.empty() ? "" : "x") + std::to_string(dim);
  }
  if (text.empty()) {
    text = "scalar";
  }
  if (tensor.scalar_type() != at::kFloat) {
    text += " " + dtypeName(tensor.scalar_type());
  }
  return text;
}

// `copy` is a Graph::copy of the original: the same blocks and nodes in the same order. Pairs
// every value of the copy with the original's.
void pairValues(const Block* original, Block* copy,
                std::unordered_map<Value*, const Value*>& originals) {
  for (size_t i = 0; i < copy->inputs().size(); ++i) {
    originals[copy->inputs()[i]] = original->inputs()[i];
  }
  auto original_node = original->nodes().begin();
  for (Node* node : copy->nodes()) {
    TORCH_INTERNAL_ASSERT(original_node != original->nodes().end(),
                          "graph copy has more nodes than the original");
    const Node* source = *original_node++;
    for (size_t i = 0; i < node->outputs().size(); ++i) {
      originals[node->outputs()[i]] = source->outputs()[i];
    }
    for (size_t b = 0; b < node->blocks().size(); ++b) {
      pairValues(source->blocks()[b], node->blocks()[b], originals);
    }
  }
}

// A prim::profile_ivalue node (ProfileOp is not exported from libtorch) that records the shape
// `value` holds into `shapes` under `original`; it has no outputs, so the interpreter runs it and
// nothing reads it.
Node* shapeProbe(Graph* graph, Value* value, const Value* original,
                 const std::shared_ptr<ValueShapes>& shapes) {
  auto* probe =
      new torch::jit::ProfileIValueOp(graph, [shapes, original](std::vector<c10::IValue>& stack) {
        stack.pop_back(); // the frame id the interpreter pushes for profiling callbacks
        c10::IValue observed = std::move(stack.back());
        stack.pop_back();
        if (observed.isTensor()) {
          (*shapes)[original] = shapeOf(observed.toTensor());
        }
      });
  probe->addInput(value);
  return probe;
}

void instrument(Block* block, const std::unordered_map<Value*, const Value*>& originals,
                const std::shared_ptr<ValueShapes>& shapes) {
  Graph* graph = block->owningGraph();
  for (Value* input : block->inputs()) {
    if (input->type()->kind() == c10::TypeKind::TensorType) {
      block->prependNode(shapeProbe(graph, input, originals.at(input), shapes));
    }
  }
  // Collected first: probes are inserted as we go.
  std::vector<Node*> nodes(block->nodes().begin(), block->nodes().end());
  for (Node* node : nodes) {
    for (Block* inner : node->blocks()) {
      instrument(inner, originals, shapes);
    }
    Node* after = node;
    for (Value* output : node->outputs()) {
      if (output->type()->kind() == c10::TypeKind::TensorType) {
        Node* probe = shapeProbe(graph, output, originals.at(output), shapes);
        probe->insertAfter(after);
        after = probe;
      }
    }
  }
}

std::string escape(const std::string& text) {
  std::string escaped;
  for (char c : text) {
    if (c == '"' || c == '\\') {
      escaped += '\\';
    }
    escaped += c == '\n' ? ' ' : c;
  }
  return escaped;
}

class DotWriter {
public:
  explicit DotWriter(const ValueShapes& shapes) : shapes_(shapes) {}

  std::string write(const Graph& graph, const std::string& title) {
    out_ << "digraph optimized_graph {\n"
         << "  label=\"" << escape(title) << "\";\n  labelloc=t;\n  rankdir=TB;\n"
         << "  node [shape=box, fontname=\"Helvetica\", fontsize=10];\n"
         << "  edge [fontname=\"Helvetica\", fontsize=8];\n";
    for (size_t i = 0; i < graph.inputs().size(); ++i) {
      const Value* input = graph.inputs()[i];
      std::string id = "input_" + std::to_string(i);
      out_ << "  " << id << " [shape=ellipse, label=\"" << escape(input->debugName()) << "\"];\n";
      producers_[input] = id;
    }
    writeBlock(graph.block(), "  ");
    for (size_t i = 0; i < graph.outputs().size(); ++i) {
      std::string id = "output_" + std::to_string(i);
      out_ << "  " << id << " [shape=ellipse, label=\"output " << i << "\"];\n";
      edge(graph.outputs()[i], id, "  ");
    }
    out_ << "}\n";
    return out_.str();
  }

private:
  void writeBlock(const Block* block, const std::string& indent) {
    for (const Node* node : block->nodes()) {
      if (node->kind() == c10::prim::Constant) {
        continue;
      }
      std::string id = "node_" + std::to_string(next_id_++);
      // Fused ops are the srt:: namespace's (passes/), everything else is PyTorch's.
      const bool fused = std::string(node->kind().toQualString()).rfind("srt::", 0) == 0;
      out_ << indent << id << " [label=\"" << escape(node->kind().toQualString()) << "\"";
      if (fused) {
        out_ << ", style=filled, fillcolor=orange, peripheries=2";
      }
      out_ << "];\n";
      for (const Value* input : node->inputs()) {
        edge(input, id, indent);
      }
      for (size_t b = 0; b < node->blocks().size(); ++b) {
        const Block* inner = node->blocks()[b];
        std::string cluster = id + "_block" + std::to_string(b);
        out_ << indent << "subgraph cluster_" << cluster << " {\n"
             << indent << "  label=\"" << escape(node->kind().toQualString()) << " block " << b
             << "\";\n  " << indent << "style=dashed;\n";
        for (const Value* param : inner->inputs()) {
          producers_[param] = id;
        }
        writeBlock(inner, indent + "  ");
        out_ << indent << "}\n";
        // What the block returns becomes the node's result.
        for (const Value* returned : inner->outputs()) {
          edge(returned, id, indent, "style=dashed");
        }
      }
      for (const Value* output : node->outputs()) {
        producers_[output] = id;
      }
    }
  }

  // An edge from `value`'s producer to `to`; constants have no box, so no edge.
  void edge(const Value* value, const std::string& to, const std::string& indent,
            const std::string& extra = "") {
    auto producer = producers_.find(value);
    if (producer == producers_.end()) {
      return;
    }
    out_ << indent << producer->second << " -> " << to << " [tooltip=\""
         << escape(value->debugName()) << "\"";
    if (auto shape = shapes_.find(value); shape != shapes_.end()) {
      out_ << ", label=\"" << escape(shape->second) << "\"";
    }
    if (!extra.empty()) {
      out_ << ", " << extra;
    }
    out_ << "];\n";
  }

  const ValueShapes& shapes_;
  std::ostringstream out_;
  std::unordered_map<const Value*, std::string> producers_;
  size_t next_id_ = 0;
};

} // namespace

ValueShapes recordShapes(const Graph& graph, std::vector<c10::IValue> inputs) {
  TORCH_CHECK(inputs.size() == graph.inputs().size(), "the graph takes ", graph.inputs().size(),
              " inputs, ", inputs.size(), " were given");
  // Graph::copy is not const, but only reads the graph.
  std::shared_ptr<Graph> copy = const_cast<Graph&>(graph).copy();
  std::unordered_map<Value*, const Value*> originals;
  pairValues(graph.block(), copy->block(), originals);
  auto shapes = std::make_shared<ValueShapes>();
  instrument(copy->block(), originals, shapes);
  torch::jit::Code code(copy, "srt_inspect_shapes");
  torch::jit::InterpreterState state(code);
  c10::AutoGradMode no_grad(false);
  state.run(inputs);
  return std::move(*shapes);
}

std::string graphToDot(const Graph& graph, const ValueShapes& shapes, const std::string& title) {
  return DotWriter(shapes).write(graph, title);
}

} // namespace srt::cli
