// aten::conv2d.
//
// Small convolutions with a constant weight (the stems and heads of small CNNs: few channels,
// small images) run as im2col into planned scratch plus one OpenBLAS sgemm per image, writing the
// NCHW output directly: ATen's path reorders the weight and the activations for oneDNN on every
// call, which at these sizes costs more than the arithmetic (SmallCNN's two 3x3 convs: 13.8 and
// 11.1 us through ATen). Larger ones keep ATen's kernel, which LibTorch 1.13 exports without an out
// variant: there the blocked oneDNN convolution wins and its output is allocated per call.
#include <algorithm>
#include <cstring>
#include <optional>

#include <ATen/NativeFunctions.h>
#include <cblas.h>
#include <torch/csrc/jit/ir/constants.h>
#include <torch/csrc/jit/ir/ir.h>

#include "ops/core/inference_dispatch.h"
#include "ops/core/out_variant.h"
#include "ops/core/processed_node.h"
#include "ops/core/registry.h"
#include "ops/core/schema_match.h"
#include "ops/elementwise/fast_path.h"
#include "ops/gemm/threads.h"

namespace srt::ops {
namespace {

constexpr const char* kConv2dSchema =
    "aten::conv2d(Tensor input, Tensor weight, Tensor? bias=None, int[2] stride=1, "
    "int[2] padding=0, int[2] dilation=1, int groups=1) -> Tensor";

// Where im2col + sgemm stays ahead of ATen: a column matrix of at most this many floats per
// image (kept in L2), and at most this many output channels.
constexpr int64_t kMaxColumnFloats = int64_t{1} << 16;
constexpr int64_t kMaxOutChannels = 64;

c10::optional<at::Tensor> optionalTensor(const c10::IValue& value) {
  return value.isNone() ? c10::nullopt : c10::optional<at::Tensor>(value.toTensor());
}

at::Tensor atenConv2d(ProcessedNode& p) {
  const InferenceDispatch below_autograd;
  return at::native::conv2d(p.input(0).toTensor(), p.input(1).toTensor(),
                            optionalTensor(p.input(2)), p.input(3).toDimVector(),
                            p.input(4).toDimVector(), p.input(5).toDimVector(), p.input(6).toInt());
}

void nativeConv2d(ProcessedNode& p) {
  p.output(0) = atenConv2d(p);
}

// One or two values as ATen reads int[2] arguments.
int64_t pairAt(const c10::IValue& value, size_t i) {
  const at::DimVector values = value.toDimVector();
  return values.empty() ? -1 : values[values.size() == 1 ? 0 : i];
}

struct ConvGeometry {
  int64_t batch, in_channels, in_h, in_w;
  int64_t out_channels, kernel_h, kernel_w;
  int64_t stride_h, stride_w, pad_h, pad_w, dilation_h, dilation_w;
  int64_t out_h, out_w;

  int64_t columnRows() const { return in_channels * kernel_h * kernel_w; }
  int64_t pixels() const { return out_h * out_w; }
  // A 1x1 convolution over every pixel reads the image itself as its column matrix.
  bool isPointwise() const {
    return kernel_h == 1 && kernel_w == 1 && stride_h == 1 && stride_w == 1 && pad_h == 0 &&
           pad_w == 0;
  }
};

// The geometry when this kernel can run the call: contiguous float32 NCHW input whose channels
// match the weight, valid stride/padding/dilation, a non-empty output. Otherwise std::nullopt and
// ATen runs it (and reports what is wrong).
std::optional<ConvGeometry> geometry(ProcessedNode& p, const at::Tensor& x,
                                     const at::Tensor& weight) {
  if (x.scalar_type() != at::kFloat || x.dim() != 4 || !x.is_contiguous() ||
      x.size(1) != weight.size(1)) {
    return std::nullopt;
  }
  ConvGeometry g{x.size(0),
                 x.size(1),
                 x.size(2),
                 x.size(3),
                 weight.size(0),
                 weight.size(2),
                 weight.size(3),
                 pairAt(p.input(3), 0),
                 pairAt(p.input(3), 1),
                 pairAt(p.input(4), 0),
                 pairAt(p.input(4), 1),
                 pairAt(p.input(5), 0),
                 pairAt(p.input(5), 1),
                 0,
                 0};
  if (g.stride_h <= 0 || g.stride_w <= 0 || g.pad_h < 0 || g.pad_w < 0 || g.dilation_h <= 0 ||
      g.dilation_w <= 0) {
    return std::nullopt;
  }
  const int64_t span_h = g.dilation_h * (g.kernel_h - 1) + 1;
  const int64_t span_w = g.dilation_w * (g.kernel_w - 1) + 1;
  if (g.in_h + 2 * g.pad_h < span_h || g.in_w + 2 * g.pad_w < span_w) {
    return std::nullopt;
  }
  g.out_h = (g.in_h + 2 * g.pad_h - span_h) / g.stride_h + 1;
  g.out_w = (g.in_w + 2 * g.pad_w - span_w) / g.stride_w + 1;
  if (g.batch == 0 || g.in_channels == 0 || g.columnRows() * g.pixels() > kMaxColumnFloats) {
    return std::nullopt;
  }
  return g;
}

// The [C*KH*KW, OH*OW] column matrix of one image: row (c, kh, kw) holds, for every output pixel,
// the input value under that kernel tap, or 0 in the padding.
void im2col(const float* image, const ConvGeometry& g, float* columns) {
  float* row = columns;
  for (int64_t c = 0; c < g.in_channels; ++c) {
    const float* plane = image + c * g.in_h * g.in_w;
    for (int64_t kh = 0; kh < g.kernel_h; ++kh) {
      for (int64_t kw = 0; kw < g.kernel_w; ++kw, row += g.pixels()) {
        const int64_t x_offset = kw * g.dilation_w - g.pad_w;
        // Output columns whose input column is inside the image: [ox_begin, ox_end).
        int64_t ox_begin = 0;
        while (ox_begin < g.out_w && ox_begin * g.stride_w + x_offset < 0) {
          ++ox_begin;
        }
        int64_t ox_end = g.out_w;
        while (ox_end > ox_begin && (ox_end - 1) * g.stride_w + x_offset >= g.in_w) {
          --ox_end;
        }
        for (int64_t oy = 0; oy < g.out_h; ++oy) {
          float* out = row + oy * g.out_w;
          const int64_t iy = oy * g.stride_h - g.pad_h + kh * g.dilation_h;
          if (iy < 0 || iy >= g.in_h) {
            std::fill(out, out + g.out_w, 0.f);
            continue;
          }
          const float* in = plane + iy * g.in_w + x_offset;
          std::fill(out, out + ox_begin, 0.f);
          if (g.stride_w == 1) {
            std::memcpy(out + ox_begin, in + ox_begin, (ox_end - ox_begin) * sizeof(float));
          } else {
            for (int64_t ox = ox_begin; ox < ox_end; ++ox) {
              out[ox] = in[ox * g.stride_w];
            }
          }
          std::fill(out + ox_end, out + g.out_w, 0.f);
        }
      }
    }
  }
}

class SmallConv2d {
public:
  explicit SmallConv2d(at::Tensor weight) : weight_(std::move(weight)) {}

  void operator()(ProcessedNode& p) const {
    const at::Tensor& x = p.input(0).toTensor();
    const std::optional<ConvGeometry> g = geometry(p, x, weight_);
    const c10::optional<at::Tensor> bias = optionalTensor(p.input(2));
    const bool bias_fits = !bias || (bias->scalar_type() == at::kFloat && bias->dim() == 1 &&
                                     bias->size(0) == weight_.size(0) && bias->is_contiguous());
    if (!g || !bias_fits || p.input(6).toInt() != 1) {
      // Rare here (other dtypes, layouts, invalid arguments): ATen's result, copied.
      const at::Tensor result = atenConv2d(p);
      at::Tensor& out = outputTensorLike(p, 0, result);
      at::native::resize_(out, result.sizes());
      out.copy_(result);
      return;
    }
    at::Tensor& out =
        contiguousOutput(p, 0, {g->batch, g->out_channels, g->out_h, g->out_w}, x.options());
    float* columns =
        g->isPointwise()
            ? nullptr
            : static_cast<float*>(p.scratch(g->columnRows() * g->pixels() * sizeof(float)));
    const float* in = x.data_ptr<float>();
    float* o = floatData(out);
    const float* w = weight_.data_ptr<float>();
    const float* b = bias ? bias->data_ptr<float>() : nullptr;
    useAtenThreadsForOpenBlas();
    for (int64_t n = 0; n < g->batch; ++n) {
      const float* image = in + n * g->in_channels * g->in_h * g->in_w;
      float* result = o + n * g->out_channels * g->pixels();
      if (columns != nullptr) {
        im2col(image, *g, columns);
      }
      // sgemm adds to C with beta 1: each output row starts as its channel's bias.
      if (b != nullptr) {
        for (int64_t oc = 0; oc < g->out_channels; ++oc) {
          std::fill(result + oc * g->pixels(), result + (oc + 1) * g->pixels(), b[oc]);
        }
      }
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, static_cast<int>(g->out_channels),
                  static_cast<int>(g->pixels()), static_cast<int>(g->columnRows()), 1.f, w,
                  static_cast<int>(g->columnRows()), columns != nullptr ? columns : image,
                  static_cast<int>(g->pixels()), b != nullptr ? 1.f : 0.f, result,
                  static_cast<int>(g->pixels()));
    }
  }

private:
  at::Tensor weight_; // [OC, C*KH*KW], contiguous float32
};

// Takes nodes whose weight is a constant float32 [OC, C, KH, KW] with few output channels and
// groups a constant 1; declines the rest, which then get the native kernel below.
std::optional<KernelFunction> smallConv2dFactory(const torch::jit::Node* node,
                                                 const KernelOptions& options) {
  if (!options.enable_out_variant || !node->matches(kConv2dSchema)) {
    return std::nullopt;
  }
  const std::optional<c10::IValue> weight = torch::jit::toIValue(node->input(1));
  const auto groups = torch::jit::constant_as<int64_t>(node->input(6));
  if (!weight || !weight->isTensor() || !groups || *groups != 1) {
    return std::nullopt;
  }
  const at::Tensor& w = weight->toTensor();
  if (w.scalar_type() != at::kFloat || w.dim() != 4 || !w.device().is_cpu() || w.numel() == 0 ||
      w.size(0) > kMaxOutChannels || w.size(1) * w.size(2) * w.size(3) > kMaxColumnFloats) {
    return std::nullopt;
  }
  return KernelFunction(SmallConv2d(w.contiguous()));
}

} // namespace

SRT_REGISTER_KERNEL("aten::conv2d", kOutVariant, smallConv2dFactory);
SRT_REGISTER_KERNEL("aten::conv2d", kNative, whenMatches(kConv2dSchema, nativeConv2d));

} // namespace srt::ops
