// Squeeze-excitation's scaling folded into the convolution it feeds: aten::mul(image, scale)
// whose one reader is an srt::packed_conv2d / srt::blocked_conv2d's input becomes
// srt::scaled_packed_conv2d / srt::scaled_blocked_conv2d of the image, the scale its last input
// (ops/conv/packed_conv.h). For one image the kernel then multiplies the weight's input channels,
// a few thousand numbers, instead of the image's hundreds of thousands: efficientnet_b0's 16
// scalings took 0.56 of its 8.8 ms at batch 1 and 1 thread, each writing a tensor the next
// convolution read back.
//
// Taken where the scale is computed from a global pooling (torchvision's SqueezeExcitation, and
// the same written with linears, views and `y.expand_as(x)`), so that it is one factor per channel:
// a scale of another shape (a spatial attention map) would leave the kernel its reference path. The
// kernel checks the shape whatever the graph says.
#include <torch/csrc/jit/ir/constants.h>
#include <torch/csrc/jit/ir/ir.h>

#include "ops/conv/packed_conv.h"
#include "passes/graph_passes.h"
#include "passes/graph_walk.h"

namespace srt::passes {
namespace {

using torch::jit::Node;
using torch::jit::Value;

// How many nodes back from the scale a global pooling may be: SqueezeExcitation's pool, two
// 1x1 convolutions with their activations fused; pool, flatten, two linears, two activations and
// a view where written by hand.
constexpr int kMaxStepsFromPool = 8;

bool isTensor(const Value* value) {
  return value->type()->isSubtypeOf(*c10::TensorType::get());
}

// Whether every entry of a constant int list is 1: adaptive pooling to one pixel.
bool isOnePixel(const Value* output_size) {
  const auto sizes = torch::jit::toIValue(output_size);
  if (!sizes || !sizes->isIntList()) {
    return false;
  }
  for (const int64_t size : sizes->toIntVector()) {
    if (size != 1) {
      return false;
    }
  }
  return true;
}

bool isGlobalPool(const Node* node) {
  const c10::Symbol kind = node->kind();
  if (kind == c10::aten::adaptive_avg_pool2d || kind == c10::aten::adaptive_max_pool2d) {
    return isOnePixel(node->input(1));
  }
  return kind == c10::aten::mean || kind == c10::aten::amax ||
         kind == c10::Symbol::fromQualString("srt::blocked_global_avg_pool");
}

// Whether `value` is computed from a global pooling by nodes that read one non-constant tensor
// each.
bool comesFromGlobalPool(const Value* value) {
  for (int step = 0; step < kMaxStepsFromPool; ++step) {
    const Node* node = value->node();
    if (isGlobalPool(node)) {
      return true;
    }
    if (node->kind() == c10::aten::expand_as) { // y.expand_as(x): y's factors, broadcast
      value = node->input(0);
      continue;
    }
    const Value* source = nullptr;
    for (const Value* input : node->inputs()) {
      if (!isTensor(input) || input->node()->kind() == c10::prim::Constant) {
        continue;
      }
      if (source != nullptr) {
        return false;
      }
      source = input;
    }
    if (source == nullptr) {
      return false;
    }
    value = source;
  }
  return false;
}

// The scaled op for a convolution node, or nullptr.
const char* scaledSchemaOf(const Node* conv) {
  if (conv->matches(ops::kPackedConv2dSchema)) {
    return "srt::scaled_packed_conv2d";
  }
  if (conv->matches(ops::kBlockedConv2dSchema)) {
    return "srt::scaled_blocked_conv2d";
  }
  return nullptr;
}

bool isImageTimesScale(const Node* node) {
  return node->kind() == c10::aten::mul && node->inputs().size() == 2 && isTensor(node->input(0)) &&
         isTensor(node->input(1)) && node->output()->uses().size() == 1;
}

} // namespace

bool fuseConvChannelScales(GraphPtr& graph) {
  bool changed = false;
  for (Node* mul : nodesWhere(graph->block(), isImageTimesScale)) {
    const torch::jit::Use& use = mul->output()->uses().front();
    Node* conv = use.user;
    const char* scaled = scaledSchemaOf(conv);
    if (scaled == nullptr || use.offset != 0 || conv->owningBlock() != mul->owningBlock()) {
      continue;
    }
    const bool first_is_scale = comesFromGlobalPool(mul->input(0));
    if (first_is_scale == comesFromGlobalPool(mul->input(1))) {
      continue; // neither operand a pooled scale, or both
    }
    Value* image = mul->input(first_is_scale ? 1 : 0);
    Value* scale = mul->input(first_is_scale ? 0 : 1);
    std::vector<Value*> inputs(conv->inputs().begin(), conv->inputs().end());
    inputs[0] = image;
    inputs.push_back(scale);
    Node* fused = graph->create(c10::Symbol::fromQualString(scaled), inputs);
    fused->insertBefore(conv);
    fused->copyAttributes(*conv);
    fused->copyMetadata(conv);
    fused->output()->setType(conv->output()->type());
    conv->output()->replaceAllUsesWith(fused->output());
    conv->destroy();
    mul->destroy();
    changed = true;
  }
  return changed;
}

} // namespace srt::passes
