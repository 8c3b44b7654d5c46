// Keeps a convolution network's activations channels last (NHWC strides, NDHWC for 3-D
// convolutions) from convolution to convolution. oneDNN's convolutions on this project's CPUs
// (brgconv, AVX-512) want NHWC: with NCHW activations each convolution reordered its input into
// NHWC and its output back, which on MobileNetV2's large early layers took longer than the
// convolutions.
//
// Channels last is a memory format, not another shape: the tensors are the same NCHW tensors
// with other strides, so every op computes the same on them and no value's meaning changes. The
// pass only decides where the strides change: an explicit aten::contiguous(x, channels_last)
// before a convolution whose input is not channels last already (the network's input, or what an
// op that does not keep the format made) -- or, for a stem oneDNN reads NCHW for, the attribute
// ops::kChannelsLastOutput on the convolution, which then changes the layout itself, as
// `srt inspect` shows -- and aten::contiguous(x) where something may depend on
// the strides (view, stride queries, as_strided, If/Loop blocks, the graph's outputs, which the
// caller gets as eager PyTorch gives them). Convolutions, pooling, element-wise ops and
// concatenation keep the format of their input.
#include <optional>
#include <string>
#include <unordered_set>
#include <vector>

#include <ATen/core/interned_strings.h>
#include <c10/core/MemoryFormat.h>
#include <torch/csrc/jit/ir/alias_analysis.h>
#include <torch/csrc/jit/ir/constants.h>
#include <torch/csrc/jit/ir/ir.h>
#include <torch/csrc/jit/ir/named_value.h>

#include "ops/conv/convolution.h"
#include "ops/conv/onednn_conv.h"
#include "ops/shapes/layout_conversion.h"
#include "passes/graph_passes.h"
#include "passes/rewrite_safety.h"

namespace srt::passes {
namespace {

using torch::jit::Graph;
using torch::jit::Node;
using torch::jit::Value;

// The rank of a convolution's input: 4 for a 2-D convolution, 5 for a 3-D one, 0 for any other
// node.
int64_t convolutionRank(const Node* node) {
  if (node->kind() == symbol("aten::conv2d") || node->kind() == symbol("srt::fused_conv2d")) {
    return 4;
  }
  if (node->kind() == symbol("aten::conv3d") || node->kind() == symbol("srt::fused_conv3d")) {
    return 5;
  }
  return 0;
}

c10::MemoryFormat channelsLastFor(const Node* conv) {
  return convolutionRank(conv) == 5 ? c10::MemoryFormat::ChannelsLast3d
                                    : c10::MemoryFormat::ChannelsLast;
}

// A convolution the oneDNN kernel runs, whose input oneDNN wants channels last: a constant
// float32 weight of the convolution's rank, and an input that is not known to have another rank
// (an unbatched one, which has no channels-last format).
bool runsOnOneDnnChannelsLast(const Node* node) {
  const int64_t rank = convolutionRank(node);
  if (rank == 0) {
    return false;
  }
  const auto weight = torch::jit::toIValue(node->input(1));
  if (!weight || !weight->isTensor() || weight->toTensor().scalar_type() != at::kFloat ||
      weight->toTensor().dim() != rank) {
    return false;
  }
  const auto input = node->input(0)->type()->cast<c10::TensorType>();
  const bool input_rank_fits =
      !input || !input->dim() || static_cast<int64_t>(*input->dim()) == rank;
  return input_rank_fits && ops::oneDnnConvPrefersChannelsLast(static_cast<int>(rank - 2));
}

// A stem whose oneDNN kernel reads the NCHW input as it is and writes channels last
// (ops::oneDnnConvReadsPlainIntoChannelsLast): marked so instead of converting its input first.
bool readsPlainIntoChannelsLast(const Node* conv) {
  if (convolutionRank(conv) != 4) {
    return false;
  }
  const auto weight = torch::jit::toIValue(conv->input(1));
  const std::optional<ops::ConvArguments> arguments = ops::constantConvArguments(conv, 2);
  if (!weight || !weight->isTensor() || !arguments) {
    return false;
  }
  return ops::oneDnnConvReadsPlainIntoChannelsLast(weight->toTensor(), *arguments);
}

// Ops whose output is channels last when their (first) tensor input is: convolutions (our
// kernels write the input's format), ATen's element-wise and our fused chains of them, pooling,
// upsampling (feature pyramids and U-Nets upsample between convolutions; F.interpolate's branches
// for the other ranks never see a 4-D tensor, and one believed channels last that is not only
// costs a reorder) and concatenation kernels, constant padding, prelu and the normalizations (ours
// keep a channels-innermost input's layout; without them in this list a 1-D convolution network's
// group norms broke every chain: Conv-TasNet spent more time in the conversions than in its
// convolutions).
bool keepsFormat(const Node* node) {
  static const std::unordered_set<std::string> kOps = {"aten::conv2d",
                                                       "srt::fused_conv2d",
                                                       "aten::conv3d",
                                                       "srt::fused_conv3d",
                                                       "aten::relu",
                                                       "aten::hardtanh",
                                                       "aten::leaky_relu",
                                                       "aten::sigmoid",
                                                       "aten::hardsigmoid",
                                                       "aten::tanh",
                                                       "aten::silu",
                                                       "aten::hardswish",
                                                       "aten::gelu",
                                                       "aten::elu",
                                                       "aten::mish",
                                                       "aten::softplus",
                                                       "aten::add",
                                                       "aten::sub",
                                                       "aten::mul",
                                                       "aten::div",
                                                       "aten::clamp",
                                                       "srt::fused_elementwise",
                                                       "aten::max_pool2d",
                                                       "aten::avg_pool2d",
                                                       "aten::adaptive_avg_pool2d",
                                                       "aten::adaptive_avg_pool3d",
                                                       "aten::upsample_nearest1d",
                                                       "aten::upsample_nearest2d",
                                                       "aten::upsample_nearest3d",
                                                       "aten::upsample_linear1d",
                                                       "aten::upsample_bilinear2d",
                                                       "aten::upsample_bicubic2d",
                                                       "aten::upsample_trilinear3d",
                                                       "aten::conv_transpose2d",
                                                       "aten::conv_transpose3d",
                                                       "srt::variadic_cat",
                                                       "aten::batch_norm",
                                                       "aten::prelu",
                                                       "aten::group_norm",
                                                       "srt::group_norm_activation",
                                                       "srt::batch_norm_activation",
                                                       "aten::constant_pad_nd"};
  return kOps.count(node->kind().toQualString()) != 0;
}

// Views of a channels-last tensor carry its strides (a 1-D convolution's output, squeezed back
// to [N, C, L], is [N, C, L] with channel stride 1): their readers may observe them too.
bool isView(const Node* node) {
  static const std::unordered_set<std::string> kViews = {
      "aten::squeeze", "aten::unsqueeze", "aten::transpose", "aten::t",      "aten::permute",
      "aten::select",  "aten::slice",     "aten::narrow",    "aten::expand", "aten::expand_as"};
  return kViews.count(node->kind().toQualString()) != 0;
}

// Queries whose answer no layout changes, wherever they are: F.interpolate's shape checks read
// `input.shape` inside the branch that raises, and a reader in a block otherwise counts as an
// observer, which cost a conversion of the whole activation on every run.
bool blindToLayout(const Node* user) {
  static const std::unordered_set<std::string> kBlind = {
      "aten::size", "aten::dim", "aten::numel", "aten::len", "prim::dtype", "prim::device"};
  return kBlind.count(user->kind().toQualString()) != 0;
}

// Whether `node` sits in the blocks of prim::If nodes only (none of a Loop's, whose values flow
// around from one iteration to the next).
bool insideIfsOnly(const Node* node) {
  for (const Node* owner = node->owningBlock()->owningNode(); owner != nullptr;
       owner = owner->owningBlock()->owningNode()) {
    if (owner->kind() != c10::prim::If) {
      return false;
    }
  }
  return true;
}

class ChannelsLast {
public:
  explicit ChannelsLast(std::shared_ptr<Graph>& graph) : graph_(graph) {}

  bool run() {
    propagate(graph_->block());
    restoreWhereObserved();
    return true;
  }

private:
  // Follows the layout through `block` in graph order: top-level convolutions get their input
  // converted to channels last (or read NCHW into it), and format-keeping ops and views of a
  // channels-last value make one, inside If blocks too. An If's output is channels last where
  // every branch that returns returns a channels-last value: F.interpolate dispatches on the
  // input's rank (upsample_nearest1d / 2d / 3d, or raise) in blocks, which kept every upsampling
  // of a U-Net decoder NCHW, converted there and back.
  void propagate(torch::jit::Block* block) {
    const std::vector<Node*> nodes(block->nodes().begin(), block->nodes().end());
    for (Node* node : nodes) {
      if (isTopLevel(node) && runsOnOneDnnChannelsLast(node) &&
          !channels_last_.count(node->input(0))) {
        if (readsPlainIntoChannelsLast(node)) {
          node->i_(c10::Symbol::attr(ops::kChannelsLastOutput), 1);
          channels_last_.insert(node->output());
        } else {
          node->replaceInput(0, convert(node->input(0), node, channelsLastFor(node)));
        }
      }
      convertResidual(node);
      if ((keepsFormat(node) && anyInputChannelsLast(node)) ||
          (isView(node) && !node->inputs().empty() && channels_last_.count(node->input(0))) ||
          catOfChannelsLastList(node)) {
        for (Value* output : node->outputs()) {
          channels_last_.insert(output);
        }
      }
      if (node->kind() == c10::prim::If && insideIfsOnly(node)) {
        for (torch::jit::Block* branch : node->blocks()) {
          propagate(branch);
        }
        for (size_t i = 0; i < node->outputs().size(); ++i) {
          if (everyReturningBranchChannelsLast(node, i)) {
            channels_last_.insert(node->output(i));
          }
        }
      }
    }
  }

  // aten::cat (or srt::cat_batch_norm_activation) of a list built in this block by ListConstruct
  // and append, every tensor in it by then channels last: ATen's cat is channels last then too.
  // DenseNet concatenates its features so: `features = [x]`, then each layer appends its output and
  // concatenates the list; believed NCHW, every concatenation was converted to channels last again
  // before its convolution.
  bool catOfChannelsLastList(Node* cat) const {
    if (!cat->matches("aten::cat(Tensor[] tensors, int dim=0) -> Tensor") &&
        cat->kind() != c10::Symbol::fromQualString("srt::cat_batch_norm_activation")) {
      return false;
    }
    Value* list = cat->input(0);
    Node* construct = list->node();
    if (construct->kind() != c10::prim::ListConstruct ||
        construct->owningBlock() != cat->owningBlock()) {
      return false;
    }
    size_t elements = construct->inputs().size();
    for (Value* element : construct->inputs()) {
      if (channels_last_.count(element) == 0) {
        return false;
      }
    }
    for (const torch::jit::Use& use : list->uses()) {
      const Node* user = use.user;
      if (user->owningBlock() != cat->owningBlock()) {
        return false; // a list changed in a loop or a branch
      }
      if (user->kind() == c10::aten::append) {
        if (user->isBefore(cat)) {
          if (channels_last_.count(user->input(1)) == 0) {
            return false;
          }
          ++elements;
        }
      } else if (user->kind() != c10::aten::cat && user->kind() != c10::aten::len &&
                 user->kind() != c10::aten::__getitem__ &&
                 user->kind() != c10::Symbol::fromQualString("srt::cat_batch_norm_activation")) {
        return false; // anything else may change the list
      }
    }
    return elements > 0;
  }

  // Whether every branch of `if_node` returns a channels-last value as output `i`, but those
  // that raise (their result prim::Uninitialized), and at least one returns.
  bool everyReturningBranchChannelsLast(Node* if_node, size_t i) const {
    bool any = false;
    for (torch::jit::Block* branch : if_node->blocks()) {
      Value* returned = branch->outputs()[i];
      if (returned->node()->kind() == c10::prim::Uninitialized) {
        continue;
      }
      if (channels_last_.count(returned) == 0) {
        return false;
      }
      any = true;
    }
    return any;
  }

  // Whether `use` may depend on the strides: stride queries, view, as_strided, the graph's
  // outputs, readers in a Loop's body, an If branch returning the value where the If's result is
  // not channels last. Format-keeping ops and views in If branches are not: the layout is
  // followed through them (propagate).
  bool observesStrides(const torch::jit::Use& use) const {
    const Node* user = use.user;
    static const std::unordered_set<std::string> kObservers = {
        "aten::view", "aten::stride", "aten::is_contiguous", "aten::as_strided",
        "aten::storage_offset"};
    if (blindToLayout(user)) {
      return false;
    }
    if (kObservers.count(user->kind().toQualString()) != 0) {
      return true;
    }
    if (isTopLevel(user)) {
      return !user->blocks().empty() || user->kind() == c10::prim::Return;
    }
    if (!insideIfsOnly(user)) {
      return true;
    }
    if (user->kind() == c10::prim::Return) {
      Node* if_node = use.user->owningBlock()->owningNode();
      return channels_last_.count(if_node->output(use.offset)) == 0;
    }
    return !(keepsFormat(user) || isView(user)) || !user->blocks().empty();
  }

  // Element-wise kernels lay their output out like their channels-last operand, whichever
  // input it is (TensorIterator: `mask * features` is channels last too).
  bool anyInputChannelsLast(Node* node) const {
    for (Value* input : node->inputs()) {
      if (channels_last_.count(input) != 0) {
        return true;
      }
    }
    return false;
  }

  // A fused convolution's residual, added into its channels-last output, converted to channels
  // last where it is not (the network's input, a global skip `x + body(x)`): the kernel adds only
  // a residual of its output's layout, and gave any other to ATen's convolution, the weight
  // repacked on every call.
  void convertResidual(Node* conv) {
    constexpr size_t kResidual = 7;
    const bool fused =
        conv->kind() == symbol("srt::fused_conv2d") || conv->kind() == symbol("srt::fused_conv3d");
    if (!fused || !isTopLevel(conv) || !runsOnOneDnnChannelsLast(conv) ||
        conv->inputs().size() <= kResidual ||
        !conv->input(kResidual)->type()->isSubtypeOf(*c10::TensorType::get()) ||
        channels_last_.count(conv->input(kResidual)) != 0) {
      return;
    }
    Value* residual = conv->input(kResidual);
    Value* input = conv->input(0);
    // The convolution's own input converted already (a block on the network's input): that copy.
    const bool input_converted = input->node()->kind() == c10::aten::contiguous &&
                                 input->node()->input(0) == residual &&
                                 channels_last_.count(input) != 0;
    conv->replaceInput(kResidual,
                       input_converted ? input : convert(residual, conv, channelsLastFor(conv)));
  }

  // aten::contiguous(value, memory_format=format) inserted before `before`.
  Value* convert(Value* value, Node* before, c10::MemoryFormat format) {
    torch::jit::WithInsertPoint insert(before);
    Value* converted =
        graph_->insert(c10::aten::contiguous, {value},
                       {torch::jit::NamedValue("memory_format", static_cast<int64_t>(format))},
                       before->sourceRange());
    converted->setType(value->type());
    if (format != c10::MemoryFormat::Contiguous) {
      converted->node()->i_(c10::Symbol::attr(ops::kLayoutForConvolution), 1);
      channels_last_.insert(converted);
    }
    return converted;
  }

  // Readers that may depend on a channels-last value's strides, directly or through a view of
  // it, get the NCHW copy instead.
  void restoreWhereObserved() {
    // Every observed use first, while the alias database knows every value; then the copies.
    std::vector<std::pair<Value*, std::vector<torch::jit::Use>>> observed_uses;
    {
      const torch::jit::AliasDb alias_db(graph_, /*isFrozen=*/true);
      for (Node* node : nodesInIfs(graph_->block())) {
        for (Value* value : node->outputs()) {
          if (channels_last_.count(value) == 0) {
            continue;
          }
          std::vector<torch::jit::Use> observed;
          for (const torch::jit::Use& use : value->uses()) {
            bool through_view = false;
            for (Value* output : use.user->outputs()) {
              through_view |=
                  alias_db.mayContainAlias(output, value) && layoutMayBeObserved(alias_db, output);
            }
            if (observesStrides(use) || through_view) {
              observed.push_back(use);
            }
          }
          if (!observed.empty()) {
            observed_uses.emplace_back(value, std::move(observed));
          }
        }
      }
    }
    // Views whose input was given the NCHW copy: NCHW themselves, their readers need no copy of
    // their own (a 1-D convolution's output read as squeeze + view converted once, not twice).
    std::unordered_set<const Value*> now_plain;
    for (auto& [value, observed] : observed_uses) {
      if (now_plain.count(value) != 0) {
        continue;
      }
      // Before the first reader, or the If/Loop that holds it, in the value's own block.
      Node* first = nullptr;
      for (const torch::jit::Use& use : observed) {
        Node* reader = use.user;
        while (reader->owningBlock() != value->node()->owningBlock()) {
          reader = reader->owningBlock()->owningNode();
        }
        first = first == nullptr || reader->isBefore(first) ? reader : first;
      }
      Value* plain = convert(value, first, c10::MemoryFormat::Contiguous);
      for (const torch::jit::Use& use : observed) {
        use.user->replaceInput(use.offset, plain);
        if (isView(use.user)) {
          now_plain.insert(use.user->outputs().begin(), use.user->outputs().end());
        }
      }
    }
  }

  // The nodes of `block` and of the If branches in it, in graph order.
  static std::vector<Node*> nodesInIfs(torch::jit::Block* block) {
    std::vector<Node*> nodes;
    for (Node* node : block->nodes()) {
      nodes.push_back(node);
      if (node->kind() == c10::prim::If) {
        for (torch::jit::Block* branch : node->blocks()) {
          const std::vector<Node*> inner = nodesInIfs(branch);
          nodes.insert(nodes.end(), inner.begin(), inner.end());
        }
      }
    }
    return nodes;
  }

  std::shared_ptr<Graph>& graph_;
  std::unordered_set<Value*> channels_last_;
};

} // namespace

bool useChannelsLast(GraphPtr& graph) {
  bool any_convolution = false;
  for (const Node* node : graph->nodes()) {
    any_convolution |= runsOnOneDnnChannelsLast(node);
  }
  return any_convolution && ChannelsLast(graph).run();
}

} // namespace srt::passes
