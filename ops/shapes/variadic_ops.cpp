// srt::variadic_cat / srt::variadic_stack: cat and stack with their tensors as separate inputs
// (`tensors..., dim`), which passes/variadic_ops.cpp puts in place of aten::cat/stack on a
// ListConstruct, so no list is built per run.
//
// Vararg schemas: the JIT interpreter pushes the input count on top of the stack when it calls
// them (ops/core/fallback.cpp does the same), which the reference implementation pops.
#include <cstring>
#include <vector>

#include <ATen/CPUFunctions.h>
#include <ATen/Functions.h>
#include <ATen/NativeFunctions.h>
#include <ATen/native/TypeProperties.h>
#include <torch/csrc/jit/ir/ir.h>
#include <torch/library.h>

#include "ops/core/inference_dispatch.h"
#include "ops/core/out_variant.h"
#include "ops/core/processed_node.h"
#include "ops/core/registry.h"
#include "ops/core/schema_match.h"
#include "ops/shapes/transpose_copy.h"

namespace srt::ops {
namespace {

// The node's tensors as the vector ATen takes, kept in the node's state so its capacity is
// reused; emptied after every run so it holds no tensor between runs.
struct VariadicInputs : NodeState {
  std::vector<at::Tensor> tensors;
};

class BorrowInputs {
public:
  explicit BorrowInputs(ProcessedNode& p) : tensors_(p.state<VariadicInputs>().tensors) {
    TORCH_CHECK(p.numInputs() >= 2, "static_runtime: ", p.node()->kind().toQualString(),
                " expects at least one tensor and a dim");
    for (size_t i = 0; i + 1 < p.numInputs(); ++i) {
      tensors_.push_back(p.input(i).toTensor());
    }
  }
  ~BorrowInputs() { tensors_.clear(); }
  BorrowInputs(const BorrowInputs&) = delete;
  BorrowInputs& operator=(const BorrowInputs&) = delete;

  const std::vector<at::Tensor>& tensors() const { return tensors_; }
  at::ScalarType resultType() const {
    return at::native::result_type(at::ITensorListRef(tensors_));
  }

private:
  std::vector<at::Tensor>& tensors_;
};

int64_t dimArgument(const ProcessedNode& p) {
  return p.input(p.numInputs() - 1).toInt();
}

// An image (batch index aside) as [C, pixels]: dense planes, or dense pixels of C channels.
enum class ImageLayout { kPlanes, kPixels, kOther };

ImageLayout imageLayout(const at::Tensor& t) {
  const int64_t channels = t.size(1);
  int64_t plane = 1;
  bool planes = true;
  int64_t pixel = channels;
  bool pixels = t.stride(1) == 1 || channels == 1;
  for (int64_t d = t.dim() - 1; d >= 2; --d) {
    if (t.size(d) != 1) {
      planes = planes && t.stride(d) == plane;
      pixels = pixels && t.stride(d) == pixel;
    }
    plane *= t.size(d);
    pixel *= t.size(d);
  }
  planes = planes && (channels == 1 || t.stride(1) == plane);
  return planes ? ImageLayout::kPlanes : pixels ? ImageLayout::kPixels : ImageLayout::kOther;
}

// The layout at::cat gives its result (compute_output_memory_format): the inputs' own where they
// all suggest one, else contiguous.
at::MemoryFormat catMemoryFormat(const std::vector<at::Tensor>& tensors) {
  const at::MemoryFormat first = tensors.front().suggest_memory_format();
  for (const at::Tensor& t : tensors) {
    if (t.suggest_memory_format() != first) {
      return at::MemoryFormat::Contiguous;
    }
  }
  return first;
}

// ATen's cat writes a contiguous result when its inputs' layouts differ (at::cat's
// compute_output_memory_format), and copies a channels-last input into it element by element:
// ShuffleNet's concatenation of a channel half of the shuffled (NCHW) tensor with its branch's
// channels-last output, [1, 58, 28, 28] each, took 23 us against 6 with both alike (1 thread,
// AMD EPYC, Zen 5). Along the channels, each channels-last input's images go in as tiled
// transposes, the others' planes as copies; false (ATen's cat runs) unless every input is a
// float32 image batch of one size but the channels, laid out as planes or as pixels, some as
// each.
bool catMixedLayoutsAlongChannels(const std::vector<at::Tensor>& tensors, int64_t dim,
                                  at::Tensor& out) {
  const at::Tensor& first = tensors.front();
  if (first.dim() < 3 || at::maybe_wrap_dim(dim, first.dim()) != 1) {
    return false;
  }
  int64_t channels = 0;
  bool any_pixels = false;
  bool any_planes = false;
  for (const at::Tensor& t : tensors) {
    if (t.scalar_type() != at::kFloat || t.dim() != first.dim() || t.numel() == 0) {
      return false;
    }
    for (int64_t d = 0; d < t.dim(); ++d) {
      if (d != 1 && t.size(d) != first.size(d)) {
        return false;
      }
    }
    const ImageLayout layout = imageLayout(t);
    if (layout == ImageLayout::kOther) {
      return false;
    }
    any_pixels = any_pixels || layout == ImageLayout::kPixels;
    any_planes = any_planes || layout == ImageLayout::kPlanes;
    channels += t.size(1);
  }
  if (!any_pixels || !any_planes || out.scalar_type() != at::kFloat ||
      catMemoryFormat(tensors) != at::MemoryFormat::Contiguous) {
    return false;
  }
  std::vector<int64_t> sizes = first.sizes().vec();
  sizes[1] = channels;
  at::native::resize_(out, sizes, at::MemoryFormat::Contiguous);
  const int64_t pixels = first.numel() / (first.size(0) * first.size(1));
  float* base = out.data_ptr<float>();
  for (int64_t n = 0; n < first.size(0); ++n) {
    float* image = base + n * channels * pixels;
    for (const at::Tensor& t : tensors) {
      const float* src = t.data_ptr<float>() + n * t.stride(0);
      if (imageLayout(t) == ImageLayout::kPixels) {
        transposeMatrix(src, t.size(1), image, pixels, pixels, t.size(1));
      } else {
        std::memcpy(image, src, static_cast<size_t>(t.size(1) * pixels) * sizeof(float));
      }
      image += t.size(1) * pixels;
    }
  }
  return true;
}

void catOut(ProcessedNode& p) {
  BorrowInputs inputs(p);
  at::Tensor& out =
      outputTensor(p, 0, inputs.tensors().front().options().dtype(inputs.resultType()));
  if (!catMixedLayoutsAlongChannels(inputs.tensors(), dimArgument(p), out)) {
    at::cpu::cat_outf(at::ITensorListRef(inputs.tensors()), dimArgument(p), out);
  }
}

void stackOut(ProcessedNode& p) {
  BorrowInputs inputs(p);
  at::Tensor& out =
      outputTensor(p, 0, inputs.tensors().front().options().dtype(inputs.resultType()));
  // stack_out unsqueezes the inputs and calls cat_out through the dispatcher.
  const InferenceDispatch below_autograd;
  at::native::stack_out(inputs.tensors(), dimArgument(p), out);
}

// Without out variants: a new tensor each run, as aten::cat/stack would give.
void catNative(ProcessedNode& p) {
  BorrowInputs inputs(p);
  p.output(0) = at::cpu::cat(at::ITensorListRef(inputs.tensors()), dimArgument(p));
}

void stackNative(ProcessedNode& p) {
  BorrowInputs inputs(p);
  const InferenceDispatch below_autograd;
  p.output(0) = at::native::stack(inputs.tensors(), dimArgument(p));
}

// Stack: [tensors..., dim, count] -> [result].
template <at::Tensor (*Fn)(at::TensorList, int64_t)>
void reference(const c10::OperatorHandle&, torch::jit::Stack* stack) {
  const auto count = torch::jit::pop(*stack).toInt();
  TORCH_CHECK(count >= 2 && static_cast<int64_t>(stack->size()) >= count,
              "srt::variadic_cat/stack expects tensors and a dim, got ", count, " inputs");
  const int64_t dim = stack->back().toInt();
  std::vector<at::Tensor> tensors;
  tensors.reserve(count - 1);
  for (auto it = stack->end() - count; it != stack->end() - 1; ++it) {
    tensors.push_back(it->toTensor());
  }
  torch::jit::drop(*stack, count);
  torch::jit::push(*stack, Fn(tensors, dim));
}

at::Tensor catReference(at::TensorList tensors, int64_t dim) {
  return at::cat(tensors, dim);
}

at::Tensor stackReference(at::TensorList tensors, int64_t dim) {
  return at::stack(tensors, dim);
}

} // namespace

TORCH_LIBRARY_FRAGMENT(srt, m) {
  // A new tensor from inputs it only reads: nothing aliases.
  m.def(torch::schema("srt::variadic_cat(...) -> Tensor", c10::AliasAnalysisKind::PURE_FUNCTION),
        torch::CppFunction::makeFromBoxedFunction<reference<catReference>>());
  m.def(torch::schema("srt::variadic_stack(...) -> Tensor", c10::AliasAnalysisKind::PURE_FUNCTION),
        torch::CppFunction::makeFromBoxedFunction<reference<stackReference>>());
}

SRT_REGISTER_KERNEL("srt::variadic_cat", kOutVariant, always(catOut));
SRT_REGISTER_KERNEL("srt::variadic_cat", kNative, always(catNative));
SRT_REGISTER_KERNEL("srt::variadic_stack", kOutVariant, always(stackOut));
SRT_REGISTER_KERNEL("srt::variadic_stack", kNative, always(stackNative));

} // namespace srt::ops
