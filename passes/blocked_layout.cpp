// Keeps the activations of chains of convolutions in oneDNN's channel-blocked layout (nChw16c,
// ops/conv/blocked_layout.h) instead of channels last. oneDNN's AVX-512 kernels for blocked
// activations (jit_1x1, jit_dw, jit, Winograd) read and write their tensors a 16-channel block at
// a time, which streams better from memory than brgconv's NHWC rows: mobilenet_v2's 52
// convolutions as one chain on an AMD EPYC (Zen 4), 1 thread, 7.1 ms blocked against 8.0 ms
// channels last, the largest gains on the 112x112 and 56x56 layers whose tensors leave the L2
// (the 1x1 16 -> 96 at 112x112: 429 against 660 us). ONNX Runtime's NCHWc transformer does the same
// for MLAS's kernels.
//
// A blocked tensor is another tensor than the NCHW one it stands for, so the pass rewrites every
// node that reads one: convolutions become srt::blocked_conv2d (their weight packed again for
// the blocked kernels), and the other readers are only those whose ATen op computes the same on
// the blocked tensor, lane by lane: element-wise ops whose tensor operands are all blocked tensors
// of the same channels (a squeeze-excitation's scale [N, C, 1, 1] is one, broadcast over the
// image as before), global average pooling (srt::blocked_global_avg_pool; also x.mean([2, 3])), max
// pooling (srt::blocked_max_pool2d) and concatenations along channels of tensors of whole blocks
// (all but the last: srt::variadic_cat computes it on the blocked tensors as they are). Any other
// reader (flatten, a graph output, an If) gets srt::from_blocked, a channels-last copy; aten::size
// gets srt::blocked_sizes. A network's stem reads the NCHW input itself (oneDNN's first-layer
// kernel), without the channels-last conversion before it.
//
// Chains shorter than kMinConvolutions convolutions stay channels last: they would pay the
// conversions and win little (an Inception branch, a DenseNet layer between concatenations). So
// do chains without a convolution the blocked kernels run faster (ops::blockedLayoutGain): dense
// convolutions of few channels alone are faster channels last.
#include <algorithm>
#include <cstdint>
#include <functional>
#include <numeric>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include <torch/csrc/jit/ir/alias_analysis.h>
#include <torch/csrc/jit/ir/constants.h>
#include <torch/csrc/jit/ir/ir.h>

#include "ops/conv/convolution.h"
#include "ops/conv/onednn_conv.h"
#include "ops/conv/packed_conv.h"
#include "ops/elementwise/fused_program.h"
#include "passes/graph_passes.h"
#include "passes/rewrite_safety.h"

namespace srt::passes {
namespace {

using torch::jit::Graph;
using torch::jit::Node;
using torch::jit::Value;

constexpr size_t kInput = 0;
constexpr size_t kWeight = 1;
constexpr size_t kResidual = 7;
constexpr int kMinConvolutions = 3;

// A group of element-wise ops fused into one srt::fused_elementwise (elementwise_fusion.cpp: a
// hand-written activation such as x * sigmoid(1.702 * x) runs as one) whose every instruction is
// lane-wise and keeps the padding lanes finite, as isLaneWise's ops below: no division,
// logarithm, root, reciprocal or power, and no comparison.
bool isLaneWiseGroup(const Node* node) {
  using ops::fused::OpKind;
  static const std::unordered_set<OpKind> kInstructions = {
      OpKind::kAdd,     OpKind::kSub,       OpKind::kRsub,        OpKind::kMul,  OpKind::kRelu,
      OpKind::kSigmoid, OpKind::kTanh,      OpKind::kExp,         OpKind::kNeg,  OpKind::kAbs,
      OpKind::kSilu,    OpKind::kHardswish, OpKind::kHardsigmoid, OpKind::kGelu, OpKind::kLeakyRelu,
      OpKind::kClamp,   OpKind::kClampMin,  OpKind::kClampMax};
  if (node->kind() != symbol("srt::fused_elementwise")) {
    return false;
  }
  const auto text = torch::jit::constant_as<std::string>(node->input(0));
  if (!text) {
    return false;
  }
  const ops::fused::Program program = ops::fused::parseProgram(*text);
  return std::all_of(program.code.begin(), program.code.end(),
                     [](const ops::fused::Instruction& instruction) {
                       return kInstructions.count(instruction.op) != 0;
                     });
}

// Element-wise ops that compute each output element from the elements at the same index of their
// tensor operands (after broadcasting): on blocked tensors of one channel count, lane by lane.
// Only ops that keep the padding lanes finite: those lanes meet zero weights in the next
// convolution, and a NaN times zero is NaN (division is out: 0 / 0).
bool isLaneWise(const Node* node) {
  static const std::unordered_set<std::string> kOps = {
      "aten::relu",        "aten::hardtanh", "aten::leaky_relu", "aten::sigmoid",
      "aten::hardsigmoid", "aten::tanh",     "aten::silu",       "aten::hardswish",
      "aten::gelu",        "aten::elu",      "aten::mish",       "aten::softplus",
      "aten::clamp",       "aten::add",      "aten::sub",        "aten::mul"};
  return kOps.count(node->kind().toQualString()) != 0 || isLaneWiseGroup(node);
}

// x.mean([2, 3]) (or [-1, -2], either order; keepdim either way, no dtype) of a 4-D x: the mean
// over the image that MnasNet and many hand-written networks take instead of a pool.
bool isImageMean(const Node* node) {
  if (node->kind() != symbol("aten::mean") || node->inputs().size() != 4 ||
      node->input(3)->type()->kind() != c10::TypeKind::NoneType ||
      !torch::jit::constant_as<bool>(node->input(2))) {
    return false;
  }
  const std::optional<std::vector<int64_t>> dims = constantIntList(node->input(1));
  if (!dims || dims->size() != 2) {
    return false;
  }
  std::vector<int64_t> normalized;
  for (const int64_t d : *dims) {
    normalized.push_back(d < 0 ? d + 4 : d);
  }
  std::sort(normalized.begin(), normalized.end());
  return normalized == std::vector<int64_t>{2, 3};
}

// Whether an image mean drops the image's dims (keepdim false): its [N, C] result is no blocked
// tensor for other ops to read, and its plain readers get it flattened.
bool dropsImageDims(const Node* node) {
  return isImageMean(node) && !*torch::jit::constant_as<bool>(node->input(2));
}

// adaptive_avg_pool2d(x, 1) or (x, [1, 1]), or an image mean: a mean over the image.
bool isGlobalAveragePool(const Node* node) {
  if (isImageMean(node)) {
    return true;
  }
  if (node->kind() != symbol("aten::adaptive_avg_pool2d")) {
    return false;
  }
  const std::optional<std::vector<int64_t>> size = constantIntList(node->input(1));
  return size && !size->empty() && size->size() <= 2 &&
         std::all_of(size->begin(), size->end(), [](int64_t s) { return s == 1; });
}

// max_pool2d: on a blocked tensor srt::blocked_max_pool2d, each 16-lane plane pooled as a
// channels-last image (ops/conv/pooling.cpp).
bool isMaxPool(const Node* node) {
  return node->kind() == symbol("aten::max_pool2d");
}

// srt::variadic_cat along channels (dim 1: the blocks of blocked tensors).
bool isChannelCat(const Node* node) {
  if (node->kind() != symbol("srt::variadic_cat") || node->inputs().size() < 2) {
    return false;
  }
  const auto dim = torch::jit::constant_as<int64_t>(node->inputs().back());
  return dim && *dim == 1;
}

class BlockedLayout {
public:
  explicit BlockedLayout(std::shared_ptr<Graph>& graph) : graph_(graph) {}

  bool run() {
    const torch::jit::AliasDb alias_db(graph_, /*isFrozen=*/true);
    findCandidates(alias_db);
    if (convolutions_.empty()) {
      return false;
    }
    std::vector<Node*> accepted = acceptedNodes();
    if (accepted.empty()) {
      return false;
    }
    accepted = withPoolsAndConcatenations(std::move(accepted), alias_db);
    rewrite(accepted);
    return true;
  }

private:
  // Convolutions the blocked kernels take, with their weight packed for them; then, in graph
  // order, the lane-wise ops, global and max pools all of whose tensor operands are blocked
  // values of one channel count (concatenations, and the pools of their results, join after:
  // withPoolsAndConcatenations).
  // Values with writers (an in-place op, a list) are left alone.
  void findCandidates(const torch::jit::AliasDb& alias_db) {
    for (Node* node : graph_->nodes()) {
      if (node->kind() == symbol("srt::packed_conv2d")) {
        addConvolution(node, alias_db);
        continue;
      }
      if (isMaxPool(node)) {
        addMaxPool(node, alias_db);
        continue;
      }
      const bool lane_wise = isLaneWise(node);
      if (!lane_wise && !isGlobalAveragePool(node)) {
        continue;
      }
      int64_t channels = -1;
      bool all_blocked = true;
      size_t tensors = 0;
      for (size_t i = 0; i < (lane_wise ? node->inputs().size() : 1); ++i) {
        Value* input = node->input(i);
        if (!input->type()->isSubtypeOf(*c10::TensorType::get())) {
          continue;
        }
        ++tensors;
        const auto found = channels_.find(input);
        if (found == channels_.end() || flattened_.count(input) != 0 ||
            (channels >= 0 && found->second != channels)) {
          all_blocked = false;
          break;
        }
        channels = found->second;
      }
      if (all_blocked && tensors > 0 && node->outputs().size() == 1 &&
          !alias_db.hasWriters(node->output())) {
        nodes_.push_back(node);
        channels_[node->output()] = channels;
        if (dropsImageDims(node)) {
          flattened_.insert(node->output());
        }
      }
    }
  }

  void addConvolution(Node* node, const torch::jit::AliasDb& alias_db) {
    const auto weight = torch::jit::toIValue(node->input(kWeight));
    if (!weight || !weight->isCustomClass() || !ops::constantConvEpilogue(node) ||
        alias_db.hasWriters(node->output())) {
      return;
    }
    const auto packed = weight->toCustomClass<ops::PackedConvWeight>();
    const auto input = node->input(kInput)->type()->cast<c10::TensorType>();
    const ops::BlockedLayoutGain gain = ops::blockedLayoutSuits(*packed->packed)
                                            ? ops::blockedLayoutGain(*packed->packed)
                                            : ops::BlockedLayoutGain::kNone;
    if (gain == ops::BlockedLayoutGain::kNone || (input && input->dim() && *input->dim() != 4)) {
      return;
    }
    auto& repacked = repacked_[packed->packed.get()];
    if (!repacked) {
      auto blocked = ops::packForBlockedActivations(*packed->packed);
      if (blocked == nullptr) {
        return;
      }
      repacked = c10::make_intrusive<ops::PackedConvWeight>(std::move(blocked));
    }
    nodes_.push_back(node);
    convolutions_.insert(node);
    if (gain == ops::BlockedLayoutGain::kFaster) {
      faster_.insert(node);
    }
    channels_[node->output()] = ops::convOutChannels(*packed->packed);
  }

  // A max pool of a candidate value links the chains on either side: a network's stem joins the
  // chain after its pool, which then reads the NCHW input itself and pools blocked planes. Left
  // channels last, the stem's output went to ATen's pool and the input through a channels-last
  // copy (squeezenet1_1 at batch 8, 1 thread: 3% of the network, googlenet 2%; resnet18 and 50,
  // whose 7x7 stem oneDNN runs 10% slower blocked, level; AMD EPYC, Zen 5, 1 and 2 threads).
  void addMaxPool(Node* node, const torch::jit::AliasDb& alias_db) {
    const auto found = channels_.find(node->input(0));
    if (found == channels_.end() || flattened_.count(node->input(0)) != 0 ||
        alias_db.hasWriters(node->output())) {
      return;
    }
    nodes_.push_back(node);
    channels_[node->output()] = found->second;
  }

  // Whether `node`, a candidate, reads input `i` blocked.
  bool readsBlocked(const Node* node, size_t i) const {
    if (convolutions_.count(node) != 0) {
      return i == kInput || i == kResidual;
    }
    if (isChannelCat(node)) {
      return i + 1 < node->inputs().size();
    }
    return (isLaneWise(node) || i == 0) && channels_.count(node->input(i)) != 0 &&
           flattened_.count(node->input(i)) == 0;
  }

  // The candidates of chains with at least kMinConvolutions convolutions, one of them faster
  // blocked, in graph order: chains are the sets of candidates connected through the blocked
  // values they read.
  std::vector<Node*> acceptedNodes() {
    std::unordered_map<const Node*, size_t> index;
    for (size_t k = 0; k < nodes_.size(); ++k) {
      index[nodes_[k]] = k;
    }
    std::vector<size_t> parent(nodes_.size());
    std::iota(parent.begin(), parent.end(), 0);
    const auto root = [&](size_t k) {
      while (parent[k] != k) {
        k = parent[k] = parent[parent[k]];
      }
      return k;
    };
    for (size_t k = 0; k < nodes_.size(); ++k) {
      for (size_t i = 0; i < nodes_[k]->inputs().size(); ++i) {
        Value* input = nodes_[k]->input(i);
        if (readsBlocked(nodes_[k], i) && channels_.count(input) != 0) {
          parent[root(index.at(input->node()))] = root(k);
        }
      }
    }
    std::unordered_map<size_t, int> convolutions_per_chain;
    std::unordered_set<size_t> chains_with_faster;
    for (size_t k = 0; k < nodes_.size(); ++k) {
      convolutions_per_chain[root(k)] += convolutions_.count(nodes_[k]) != 0 ? 1 : 0;
      if (faster_.count(nodes_[k]) != 0) {
        chains_with_faster.insert(root(k));
      }
    }
    std::vector<Node*> accepted;
    for (size_t k = 0; k < nodes_.size(); ++k) {
      if (convolutions_per_chain[root(k)] >= kMinConvolutions &&
          chains_with_faster.count(root(k)) != 0) {
        accepted.push_back(nodes_[k]);
      }
    }
    return accepted;
  }

  // The accepted chains joined by the concatenations of their values, and the max pools of
  // those: each reads blocked values only, so none pulls a chain in that was not worth it alone.
  // A concatenation along channels of blocked tensors is their blocks one after the other, which
  // srt::variadic_cat computes on the blocked tensors as they are, where every input but the last
  // has whole blocks (no padding lanes in the middle): SqueezeNet's fire modules and Inception's
  // branches, each a chain of its own, were converted back before every concatenation and pool.
  // The result in graph order.
  std::vector<Node*> withPoolsAndConcatenations(std::vector<Node*> accepted,
                                                const torch::jit::AliasDb& alias_db) {
    std::unordered_set<const Node*> chosen(accepted.begin(), accepted.end());
    std::unordered_set<const Value*> blocked;
    for (const Node* node : accepted) {
      blocked.insert(node->output());
    }
    bool joined = false;
    for (Node* node : graph_->nodes()) {
      int64_t channels = 0;
      if (isMaxPool(node) && blocked.count(node->input(0)) != 0 &&
          flattened_.count(node->input(0)) == 0) {
        channels = channels_.at(node->input(0));
      } else if (isChannelCat(node)) {
        const size_t tensors = node->inputs().size() - 1;
        for (size_t i = 0; i < tensors && channels >= 0; ++i) {
          const bool whole_blocks = i + 1 == tensors || channels_.count(node->input(i)) == 0 ||
                                    channels_.at(node->input(i)) % ops::kChannelBlock == 0;
          channels = blocked.count(node->input(i)) != 0 && whole_blocks &&
                             flattened_.count(node->input(i)) == 0
                         ? channels + channels_.at(node->input(i))
                         : -1;
        }
      } else {
        continue;
      }
      if (channels <= 0 || alias_db.hasWriters(node->output())) {
        continue;
      }
      channels_[node->output()] = channels;
      blocked.insert(node->output());
      chosen.insert(node);
      joined = true;
    }
    if (!joined) {
      return accepted;
    }
    std::vector<Node*> in_order;
    for (Node* node : graph_->nodes()) {
      if (chosen.count(node) != 0) {
        in_order.push_back(node);
      }
    }
    return in_order;
  }

  void rewrite(const std::vector<Node*>& accepted) {
    std::unordered_map<Value*, int64_t> blocked; // accepted values, by their channels
    for (Node* node : accepted) {
      blocked[node->output()] = channels_.at(node->output());
    }
    const std::unordered_set<const Node*> rewritten(accepted.begin(), accepted.end());
    // The accepted values and their replacements: what the rewritten nodes read blocked.
    std::unordered_set<Value*> blocked_values;
    for (const auto& [value, channels] : blocked) {
      blocked_values.insert(value);
    }
    const auto is_blocked = [&](Value* v) { return blocked_values.count(v) != 0; };
    for (Node* node : accepted) {
      if (convolutions_.count(node) != 0) {
        Value* residual = node->input(kResidual);
        if (residual->type()->kind() != c10::TypeKind::NoneType && blocked.count(residual) == 0) {
          plain_residuals_.insert(residual);
        }
      }
    }
    // Readers of each blocked value that are not rewritten to read it blocked, gathered before
    // any node changes.
    std::vector<std::pair<Value*, std::vector<torch::jit::Use>>> other_readers;
    for (Node* node : accepted) {
      std::vector<torch::jit::Use> others;
      for (const torch::jit::Use& use : node->output()->uses()) {
        if (rewritten.count(use.user) == 0 || !readsBlocked(use.user, use.offset)) {
          others.push_back(use);
        }
      }
      other_readers.emplace_back(node->output(), std::move(others));
    }
    for (Node* node : accepted) {
      if (convolutions_.count(node) != 0) {
        blocked_values.insert(rewriteConvolution(node, is_blocked));
      } else if (isGlobalAveragePool(node)) {
        blocked_values.insert(
            rewriteAsBlocked(node, "srt::blocked_global_avg_pool", {node->input(0)}, blocked));
      } else if (isMaxPool(node)) {
        blocked_values.insert(rewriteAsBlocked(node, "srt::blocked_max_pool2d",
                                               {node->inputs().begin(), node->inputs().end()},
                                               blocked));
      } else {
        node->output()->setType(c10::TensorType::get()); // no longer [N, C, H, W]
      }
    }
    for (auto& [value, readers] : other_readers) {
      convertForReaders(value, blocked.at(value), readers, flattened_.count(value) != 0);
    }
    // Last: insertion points above may have named them.
    for (auto it = replaced_.rbegin(); it != replaced_.rend(); ++it) {
      (*it)->destroy();
    }
  }

  // The replacement's output.
  Value* rewriteConvolution(Node* conv, const std::function<bool(Value*)>& is_blocked) {
    torch::jit::WithInsertPoint insert(conv);
    std::vector<Value*> inputs(conv->inputs().begin(), conv->inputs().end());
    const auto packed =
        torch::jit::toIValue(inputs[kWeight])->toCustomClass<ops::PackedConvWeight>();
    inputs[kWeight] = graph_->insertConstant(c10::IValue(repacked_.at(packed->packed.get())));
    Value* input = inputs[kInput];
    if (!is_blocked(input) && plain_residuals_.count(input) != 0) {
      // Converted for a residual anyway (a residual block on a channels-last tensor reads it
      // both ways): one conversion serves both, not a second inside this kernel.
      inputs[kInput] = convertedToBlocked(input);
    } else if (!is_blocked(input) && input->node()->kind() == c10::aten::contiguous) {
      // The kernel reads either plain layout itself (a stem: the NCHW input as it is).
      inputs[kInput] = input->node()->input(0);
    }
    Value* residual = inputs[kResidual];
    if (residual->type()->kind() != c10::TypeKind::NoneType && !is_blocked(residual)) {
      inputs[kResidual] = convertedToBlocked(residual);
    }
    Node* blocked_conv = graph_->insertNode(graph_->create(symbol("srt::blocked_conv2d"), inputs));
    blocked_conv->output()->setType(c10::TensorType::get());
    blocked_conv->setSourceRange(conv->sourceRange());
    conv->output()->replaceAllUsesWith(blocked_conv->output());
    replaceInMaps(conv->output(), blocked_conv->output());
    replaced_.push_back(conv);
    return blocked_conv->output();
  }

  // One srt::to_blocked of the plain `value`, inserted before its first blocked reader (readers
  // are rewritten in graph order).
  Value* convertedToBlocked(Value* value) {
    if (value->node()->kind() == c10::aten::contiguous) {
      value = value->node()->input(0); // srt::to_blocked reads either plain layout itself
    }
    Value*& converted = to_blocked_[value];
    if (converted == nullptr) {
      converted = graph_->insertNode(graph_->create(symbol("srt::to_blocked"), {value}))
                      ->output()
                      ->setType(c10::TensorType::get());
    }
    return converted;
  }

  // `node` replaced by `kind` on `inputs` (the first a blocked value), its output blocked with the
  // same channels: adaptive_avg_pool2d(x, 1) or x.mean([2, 3]) -> srt::blocked_global_avg_pool(x)
  // (the blocked [N, C/16, 1, 1, 16]; a mean that drops the image's dims is flattened for its
  // readers), max_pool2d(x, ...) -> srt::blocked_max_pool2d(x, ...) with the same arguments.
  Value* rewriteAsBlocked(Node* node, const char* kind, const std::vector<Value*>& inputs,
                          std::unordered_map<Value*, int64_t>& blocked) {
    torch::jit::WithInsertPoint insert(node);
    Node* replacement = graph_->insertNode(graph_->create(symbol(kind), inputs));
    replacement->output()->setType(c10::TensorType::get());
    replacement->setSourceRange(node->sourceRange());
    node->output()->replaceAllUsesWith(replacement->output());
    blocked[replacement->output()] = blocked.at(node->output());
    replaceInMaps(node->output(), replacement->output());
    replaced_.push_back(node);
    return replacement->output();
  }

  // `value` is now produced blocked; readers that want it plain get srt::blocked_sizes (a size
  // query) or one srt::from_blocked copy, flattened to [N, C] where `flatten` (a mean that
  // dropped the image's dims).
  void convertForReaders(Value* value, int64_t channels,
                         const std::vector<torch::jit::Use>& readers, bool flatten) {
    Value* current = current_.count(value) != 0 ? current_.at(value) : value;
    Value* plain = nullptr;
    for (const torch::jit::Use& use : readers) {
      Node* reader = use.user;
      torch::jit::WithInsertPoint insert(current->node()->next());
      Value* channel_count = graph_->insertConstant(channels);
      if (!flatten && reader->kind() == c10::aten::size && reader->inputs().size() == 1 &&
          isTopLevel(reader)) {
        torch::jit::WithInsertPoint at_reader(reader);
        Node* sizes = graph_->insertNode(
            graph_->create(symbol("srt::blocked_sizes"), {current, channel_count}));
        sizes->output()->setType(reader->output()->type());
        reader->output()->replaceAllUsesWith(sizes->output());
        replaced_.push_back(reader);
        continue;
      }
      if (plain == nullptr) {
        plain =
            graph_
                ->insertNode(graph_->create(symbol("srt::from_blocked"), {current, channel_count}))
                ->output()
                ->setType(c10::TensorType::get());
        if (flatten) {
          torch::jit::WithInsertPoint after(plain->node()->next());
          Value* one = graph_->insertConstant(int64_t{1});
          Value* last = graph_->insertConstant(int64_t{-1});
          plain = graph_->insertNode(graph_->create(c10::aten::flatten, {plain, one, last}))
                      ->output()
                      ->setType(c10::TensorType::get());
        }
      }
      reader->replaceInput(use.offset, plain);
    }
  }

  // Rewritten nodes' outputs replace the originals: later lookups by the original value follow.
  void replaceInMaps(Value* before, Value* after) {
    current_[before] = after;
    for (auto& [original, replacement] : current_) {
      if (replacement == before) {
        replacement = after;
      }
    }
  }

  std::shared_ptr<Graph>& graph_;
  std::vector<Node*> nodes_; // candidates, in graph order
  std::unordered_set<const Node*> convolutions_;
  std::unordered_set<const Node*> faster_;       // convolutions faster blocked (kFaster)
  std::unordered_map<Value*, int64_t> channels_; // candidates' outputs, by their channels
  std::unordered_set<const Value*> flattened_;   // [N, C] means (dropsImageDims)
  std::unordered_map<const ops::OneDnnConvWeight*, c10::intrusive_ptr<ops::PackedConvWeight>>
      repacked_;
  std::unordered_map<Value*, Value*> current_;    // a rewritten node's output: its replacement's
  std::unordered_set<Value*> plain_residuals_;    // plain values a rewritten conv adds
  std::unordered_map<Value*, Value*> to_blocked_; // plain value -> its one srt::to_blocked
  std::vector<Node*> replaced_;                   // without readers once rewritten
};

} // namespace

bool useBlockedLayout(GraphPtr& graph) {
  return BlockedLayout(graph).run();
}

} // namespace srt::passes
