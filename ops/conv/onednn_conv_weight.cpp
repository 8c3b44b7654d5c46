// A convolution's weight packed for oneDNN: the layout its primitives prefer, Winograd's, the
// copies in other layouts some shape's primitive wants (made once for every runtime), and the
// weight read back in PyTorch's layout.
#include "ops/conv/onednn_conv_internal.h"

#include <algorithm>
#include <mutex>
#include <string>
#include <unordered_map>

#include <ATen/ATen.h>

#include "ops/conv/stem_conv.h"
#include "ops/conv/strided_winograd.h"
#include "ops/conv/winograd.h"
#include "ops/core/onednn_engine.h"
#include "ops/gemm/threads.h"

namespace srt::ops {
namespace onednn_conv {

// The weight's dims as oneDNN's (de)convolution takes them: [OC, IC, k...], or with groups
// [G, OC / G, IC / G, k...].
Dims weightDims(const OneDnnConvWeight& w) {
  const int64_t g = w.arguments.groups;
  Dims dims =
      g == 1 ? Dims{w.out_channels, w.in_channels} : Dims{g, w.out_channels / g, w.in_channels / g};
  for (int i = 0; i < w.arguments.spatial_dims; ++i) {
    dims.push_back(w.kernel[i]);
  }
  return dims;
}

// PyTorch's weight as those dims with strides: [OC, IC / G, k...] is [G, OC / G, IC / G, k...]
// contiguous; the transposed [IC, OC / G, k...] is [G, IC / G, OC / G, k...] contiguous.
memory::desc plainWeightDesc(const OneDnnConvWeight& w) {
  const Dims dims = weightDims(w);
  const int64_t g = w.arguments.groups;
  const int64_t oc = w.out_channels / g;
  const int64_t ic = w.in_channels / g;
  int64_t kernel_size = 1;
  for (int i = 0; i < w.arguments.spatial_dims; ++i) {
    kernel_size *= w.kernel[i];
  }
  const int64_t o_stride = w.arguments.transposed ? kernel_size : ic * kernel_size;
  const int64_t i_stride = w.arguments.transposed ? oc * kernel_size : kernel_size;
  Dims strides =
      g == 1 ? Dims{o_stride, i_stride} : Dims{oc * ic * kernel_size, o_stride, i_stride};
  int64_t stride = kernel_size;
  for (int i = 0; i < w.arguments.spatial_dims; ++i) {
    stride /= w.kernel[i];
    strides.push_back(stride);
  }
  return memory::desc(dims, kF32, strides);
}

namespace {

// The weight's shape in PyTorch.
std::vector<int64_t> plainWeightSizes(const OneDnnConvWeight& w) {
  const int64_t g = w.arguments.groups;
  std::vector<int64_t> sizes = w.arguments.transposed
                                   ? std::vector<int64_t>{w.in_channels, w.out_channels / g}
                                   : std::vector<int64_t>{w.out_channels, w.in_channels / g};
  sizes.insert(sizes.end(), w.kernel, w.kernel + w.arguments.spatial_dims);
  return sizes;
}

} // namespace

RepresentativeImage representativeImage(const OneDnnConvWeight& w) {
  const ConvArguments& a = w.arguments;
  RepresentativeImage image;
  for (int i = 0; i < a.spatial_dims; ++i) {
    image.side[i] =
        std::max<int64_t>(a.spatial_dims == 3 ? 16 : 32, a.dilation[i] * (w.kernel[i] - 1) + 1);
    image.out[i] = outputSize(image.side[i], w.kernel[i], a, i);
  }
  return image;
}

// The primitive of `algorithm` on the representative image, weights in `weights` (may be format
// any). Throws dnnl::error when oneDNN has no such convolution.
//
// oneDNN's Winograd also picks its weight layout by the OpenMP thread count the primitive is
// created with (64 -> 128 channels at 32x32: output blocks paired on two threads, not on one):
// a weight packed on one count could not be read back on another (the direct fallback's repack
// threw). So Winograd's representative is always one thread's, the count the pieces of one
// image on the runtime's own workers and one-thread runtimes run with; an image whose primitive
// wants another layout gets it packed once more (build).
dnnl::primitive_desc representativePrimitive(const OneDnnConvWeight& w, const memory::desc& weights,
                                             const dnnl::primitive_attr& attr,
                                             ConvAlgorithm algorithm,
                                             memory::format_tag activations,
                                             memory::format_tag input) {
  std::optional<OneDnnThreads> one_thread;
  if (algorithm == ConvAlgorithm::kWinograd) {
    one_thread.emplace(/*multiply_adds=*/0, /*most=*/1);
  }
  const int dims = w.arguments.spatial_dims;
  const RepresentativeImage image = representativeImage(w);
  const memory::desc src(activationDims(1, w.in_channels, image.side, dims), w.multiply,
                         input == memory::format_tag::any ? activations : input);
  const memory::desc dst(activationDims(1, w.out_channels, image.out, dims), kF32, activations);
  return primitiveDesc(w, src, weights, dst, attr, algorithm);
}

// The layout `algorithm`'s primitive picks for the weight. For the direct algorithm it depends on
// the channels, the kernel and the instruction set, not on the image; Winograd's also depends on
// the image (its blocking), and the representative one's suits resnet-sized layers (56x56,
// 28x28). A shape whose primitive wants another layout repacks for itself
// (OneDnnConvState::repacked). Throws dnnl::error when oneDNN has no such convolution.
memory::desc preferredWeightDesc(const OneDnnConvWeight& w, const dnnl::primitive_attr& attr,
                                 ConvAlgorithm algorithm) {
  return representativePrimitive(
             w, memory::desc(weightDims(w), w.multiply, memory::format_tag::any), attr, algorithm)
      .weights_desc(0);
}

namespace {

// oneDNN has no reorder out of its Winograd weight layouts, and only primitives on the image the
// layout was chosen for read it: the weight is read back by convolving unit impulses on that
// image. An impulse at (y, x) of input channel c (bias zero) makes output
// (y + padding - ky, x + padding - kx) weight[:, c, ky, kx]; impulses 3 pixels apart do not
// overlap, so one run reads up to 100 channels. Exact but for the rounding of the tile
// transforms (a few ulp).
at::Tensor unpackWinogradWeight(const OneDnnConvWeight& w) {
  // The primitive runs on the thread count it was created for (representativePrimitive's).
  const OneDnnThreads one_thread(/*multiply_adds=*/0, /*most=*/1);
  const int64_t ic = w.in_channels;
  const int64_t oc = w.out_channels;
  const RepresentativeImage image = representativeImage(w);
  const dnnl::primitive_desc pd =
      representativePrimitive(w, w.desc, dnnl::primitive_attr(), ConvAlgorithm::kWinograd);
  const dnnl::engine& engine = oneDnnEngine();
  const memory::desc src_plain(activationDims(1, ic, image.side, 2), kF32,
                               memory::format_tag::nchw);
  const memory::desc dst_plain(activationDims(1, oc, image.out, 2), kF32, memory::format_tag::nchw);
  memory src(pd.src_desc(0), engine);
  memory dst(pd.dst_desc(0), engine);
  memory weights(w.desc, engine, w.storage.data_ptr());
  const at::Tensor zero_bias = at::zeros({oc}, at::kFloat);
  memory bias(memory::desc({oc}, kF32, memory::format_tag::x), engine, zero_bias.data_ptr());
  dnnl::primitive conv(pd);
  dnnl::stream stream(engine);

  const int64_t pad_y = w.arguments.padding[0];
  const int64_t pad_x = w.arguments.padding[1];
  // Impulse rows and columns: 2, 5, 8, ... while every tap's output stays inside the image.
  std::vector<std::pair<int64_t, int64_t>> slots;
  for (int64_t y = 2; y + pad_y < image.out[0] && y + pad_y >= 2; y += 3) {
    for (int64_t x = 2; x + pad_x < image.out[1] && x + pad_x >= 2; x += 3) {
      if (y < image.side[0] && x < image.side[1]) {
        slots.emplace_back(y, x);
      }
    }
  }
  TORCH_CHECK(!slots.empty(), "unpackConvWeight: no room for impulses");
  at::Tensor plain = at::empty({oc, ic, 3, 3}, at::kFloat);
  auto weight = plain.accessor<float, 4>();
  at::Tensor impulses = at::empty({1, ic, image.side[0], image.side[1]}, at::kFloat);
  at::Tensor responses = at::empty({1, oc, image.out[0], image.out[1]}, at::kFloat);
  auto in = impulses.accessor<float, 4>();
  auto out = responses.accessor<float, 4>();
  for (int64_t first = 0; first < ic; first += static_cast<int64_t>(slots.size())) {
    const int64_t count = std::min<int64_t>(ic - first, static_cast<int64_t>(slots.size()));
    impulses.zero_();
    for (int64_t i = 0; i < count; ++i) {
      in[0][first + i][slots[i].first][slots[i].second] = 1.f;
    }
    reorder(memory(src_plain, engine, impulses.data_ptr()), src);
    std::unordered_map<int, memory> arguments{
        {DNNL_ARG_SRC, src}, {DNNL_ARG_WEIGHTS, weights}, {DNNL_ARG_DST, dst}};
    if (w.bias.defined()) {
      arguments.emplace(DNNL_ARG_BIAS, bias);
    }
    conv.execute(stream, arguments);
    stream.wait();
    reorder(dst, memory(dst_plain, engine, responses.data_ptr()));
    for (int64_t i = 0; i < count; ++i) {
      for (int64_t o = 0; o < oc; ++o) {
        for (int64_t ky = 0; ky < 3; ++ky) {
          for (int64_t kx = 0; kx < 3; ++kx) {
            weight[o][first + i][ky][kx] =
                out[0][o][slots[i].first + pad_y - ky][slots[i].second + pad_x - kx];
          }
        }
      }
    }
  }
  return plain;
}

} // namespace

// The weight in PyTorch's layout, a new tensor.
at::Tensor plainWeight(const OneDnnConvWeight& w) {
  if (w.algorithm == ConvAlgorithm::kWinograd) {
    return unpackWinogradWeight(w);
  }
  at::Tensor plain = at::empty(plainWeightSizes(w), at::kFloat);
  reorder(memory(w.desc, oneDnnEngine(), w.storage.data_ptr()),
          memory(plainWeightDesc(w), oneDnnEngine(), plain.data_ptr()));
  return plain;
}

// The weight reordered into `layout` at `data`. oneDNN reorders into and out of Winograd's
// layouts from PyTorch's only.
void repackWeight(const OneDnnConvWeight& w, const memory::desc& layout, void* data) {
  if (w.algorithm == ConvAlgorithm::kWinograd || layout.data.format_kind == dnnl_format_kind_wino) {
    const at::Tensor plain = plainWeight(w);
    reorder(memory(plainWeightDesc(w), oneDnnEngine(), plain.data_ptr()),
            memory(layout, oneDnnEngine(), data));
    return;
  }
  reorder(memory(w.desc, oneDnnEngine(), w.storage.data_ptr()),
          memory(layout, oneDnnEngine(), data));
}

// The packed weight in `layout`: its own storage, or a copy made once for every runtime.
void* weightIn(const OneDnnConvWeight& w, const memory::desc& layout) {
  if (layout == w.desc) {
    return w.storage.data_ptr();
  }
  std::lock_guard<std::mutex> lock(w.shared.mutex);
  for (auto& [desc, storage] : w.shared.weights) {
    if (desc == layout) {
      return storage.data_ptr();
    }
  }
  at::Tensor storage = at::empty({static_cast<int64_t>(layout.get_size())}, at::kByte);
  repackWeight(w, layout, storage.data_ptr());
  w.shared.weights.emplace_back(layout, storage);
  return storage.data_ptr();
}

namespace {

// `w` (arguments, sizes and precision set) with `plain`, its weight in PyTorch's layout, stored in
// the layout the direct algorithm prefers; nullptr when oneDNN has no such convolution.
std::shared_ptr<const OneDnnConvWeight> storeDirect(std::shared_ptr<OneDnnConvWeight> w,
                                                    const at::Tensor& plain) {
  try {
    w->desc = preferredWeightDesc(*w, dnnl::primitive_attr(), ConvAlgorithm::kDirect);
  } catch (const dnnl::error&) {
    return nullptr;
  }
  w->storage = at::empty({static_cast<int64_t>(w->desc.get_size())}, at::kByte);
  reorder(memory(plainWeightDesc(*w), oneDnnEngine(), plain.data_ptr()),
          memory(w->desc, oneDnnEngine(), w->storage.data_ptr()));
  return w;
}

// Winograd's products read each element of its weight (16/9 or 4x the direct one's) once per
// tile of 2x2 or 4x4 output pixels, the direct algorithm's once per output pixel: on a small
// image the larger weight comes from memory for few products, and the transforms cost what the
// multiplications saved. In a network, where other layers' weights and activations have pushed
// it out of the caches, measured (1 thread, AMD EPYC, Zen 5): squeezenet1_1's 48 -> 192 and
// 64 -> 256 at 13x13 took 207-248 us Winograd against 112-200 direct (alone, the weight still
// cached, Winograd was 10% faster), and the network varied from 3.3 to 4.2 ms between processes
// with Winograd (where its weights landed), 3.2-3.3 direct; at 20x20 pixels or fewer
// (squeezenet's 13x13s, densenet121's and googlenet's 14x14s and 7x7s at batch 1), the network
// 1-4% faster direct at 1 and 2 threads; 28x28 and above kept Winograd's gain (resnet18 7% slower
// with its 28x28 layers direct).
constexpr int64_t kWinogradMinOutputPixels = 400;

} // namespace

bool winogradPays(int64_t output_pixels) {
  return output_pixels >= kWinogradMinOutputPixels;
}

const OneDnnConvWeight& directForm(const OneDnnConvWeight& w, bool blocked_activations) {
  TORCH_CHECK(w.algorithm == ConvAlgorithm::kWinograd, "directForm: not a Winograd weight");
  std::lock_guard<std::mutex> lock(w.shared.mutex);
  std::shared_ptr<const OneDnnConvWeight>& form =
      blocked_activations ? w.shared.direct_blocked : w.shared.direct;
  if (!form) {
    auto direct = std::make_shared<OneDnnConvWeight>(w); // arguments, sizes, precision, bias
    direct->algorithm = ConvAlgorithm::kDirect;
    form = storeDirect(std::move(direct), plainWeight(w));
    if (form && blocked_activations) {
      if (auto blocked = packForBlockedActivations(*form)) {
        form = std::move(blocked);
      }
    }
    TORCH_CHECK(form, "directForm: oneDNN has no direct convolution for the weight");
  }
  return *form;
}

const float* stridedWinogradWeight(const OneDnnConvWeight& w) {
  std::lock_guard<std::mutex> lock(w.shared.mutex);
  at::Tensor& form = w.shared.strided_winograd;
  if (!form.defined()) {
    const at::Tensor plain = plainWeight(w).contiguous();
    form = at::empty({strided_winograd::transformedWeightFloats(w.in_channels, w.out_channels)},
                     plain.options());
    strided_winograd::transformWeight(plain.data_ptr<float>(), w.out_channels, w.in_channels,
                                      form.data_ptr<float>());
  }
  return form.data_ptr<float>();
}

const float* winogradLoopWeight(const OneDnnConvWeight& w) {
  std::lock_guard<std::mutex> lock(w.shared.mutex);
  at::Tensor& form = w.shared.winograd_loop;
  if (!form.defined()) {
    const at::Tensor plain = plainWeight(w).contiguous();
    form = at::empty({winograd::transformedWeightFloats(w.in_channels, w.out_channels)},
                     plain.options());
    winograd::transformWeight(plain.data_ptr<float>(), w.out_channels, w.in_channels,
                              form.data_ptr<float>());
  }
  return form.data_ptr<float>();
}

const float* stemConvWeight(const OneDnnConvWeight& w) {
  std::lock_guard<std::mutex> lock(w.shared.mutex);
  at::Tensor& form = w.shared.stem_conv;
  if (!form.defined()) {
    const at::Tensor plain = plainWeight(w).contiguous();
    form =
        at::empty({stem_conv::packedWeightFloats(w.in_channels, w.out_channels)}, plain.options());
    stem_conv::packWeight(plain.data_ptr<float>(), w.out_channels, w.in_channels,
                          form.data_ptr<float>());
  }
  return form.data_ptr<float>();
}

} // namespace onednn_conv

using namespace onednn_conv;

std::shared_ptr<const OneDnnConvWeight>
packConvWeight(const at::Tensor& weight, const at::Tensor& bias, const ConvArguments& arguments) {
  const ConvArguments& a = arguments;
  if ((a.spatial_dims != 2 && a.spatial_dims != 3) || weight.scalar_type() != at::kFloat ||
      weight.dim() != a.spatial_dims + 2 || !weight.is_cpu() || weight.numel() == 0 ||
      a.groups <= 0 || weight.size(0) % a.groups != 0) {
    return nullptr;
  }
  auto packed = std::make_shared<OneDnnConvWeight>();
  packed->arguments = a;
  // PyTorch's weight is [OC, IC / G, k...], transposed [IC, OC / G, k...].
  packed->out_channels = a.transposed ? weight.size(1) * a.groups : weight.size(0);
  packed->in_channels = a.transposed ? weight.size(0) : weight.size(1) * a.groups;
  for (int i = 0; i < a.spatial_dims; ++i) {
    packed->kernel[i] = weight.size(2 + i);
  }
  if (bias.defined() && (bias.scalar_type() != at::kFloat || bias.dim() != 1 ||
                         bias.size(0) != packed->out_channels || !bias.is_cpu())) {
    return nullptr;
  }
  packed->bias = bias.defined() ? bias.contiguous() : at::Tensor();
  return storeDirect(std::move(packed), weight.contiguous());
}

// Where Winograd measured faster, in resnet18 on this AVX-512 machine at 1 thread, its tile
// reorders included: 3x3 stride-1 layers of 64 and 128 channels (26.1 -> 23.5 ms). Fewer
// channels: the tile transforms cost more than the multiplications saved (32 channels measured
// slower alone). More: at the small images such layers see (14x14 and below), reading the
// larger weight cost what was saved (the 256- and 512-channel layers gained nothing). The
// weight grows: oneDNN 2.6 takes F(2x2, 3x3) for 64 channels (16/9 the direct weight) and
// F(4x4, 3x3) for 128 (4x): resnet18 holds 5.6 MiB more, for 11% of its time at batch 1 and 8
// (the 128-channel layers alone: 28.5 -> 25.5 ms, AMD EPYC, 1 thread, one process).
// What bounds the weight is the product of the channel counts, not the larger one: layers of
// 32 to 256 channels whose weight is no larger than a 128 -> 128 one's gained too (AMD EPYC, Zen
// 5, 1 thread, two modules in one process): efficientnet_v2_s's 48 -> 192 and 64 -> 256 (its
// fused MBConv expansions, SiLU after) 28.7 -> 25.0 ms, inception_v3 25.7 -> 23.9, googlenet
// 13.4 -> 12.6, densenet121's 128 -> 32 26.3 -> 25.3; resnet18, resnet50 and vgg11 level.
bool winogradSuits(const OneDnnConvWeight& w, const ConvEpilogue& epilogue) {
  const ConvArguments& a = w.arguments;
  constexpr int64_t kMinChannels = 32;
  constexpr int64_t kMostChannelProduct = 128 * 128;
  if (a.spatial_dims != 2 || a.transposed || a.groups != 1 || w.multiply != kF32 ||
      w.kernel[0] != 3 || w.kernel[1] != 3 || a.stride[0] != 1 || a.stride[1] != 1 ||
      a.dilation[0] != 1 || a.dilation[1] != 1 || w.algorithm != ConvAlgorithm::kDirect ||
      std::min(w.in_channels, w.out_channels) < kMinChannels ||
      w.in_channels % kChannelBlock != 0 || w.out_channels % kChannelBlock != 0 ||
      w.in_channels * w.out_channels > kMostChannelProduct) {
    return false;
  }
  try {
    // oneDNN's Winograd takes fewer post-ops than its direct convolution (the residual sum, relu
    // and elu, not the other activations), and exists for some instruction sets only. An
    // activation it does not take runs after the primitive (splitEpilogue).
    ConvEpilogue sum;
    sum.has_residual = epilogue.has_residual;
    preferredWeightDesc(w, attributes(sum), ConvAlgorithm::kWinograd);
    return true;
  } catch (const dnnl::error&) {
    return false;
  }
}

std::shared_ptr<const OneDnnConvWeight> packForWinograd(const OneDnnConvWeight& packed) {
  TORCH_CHECK(packed.algorithm == ConvAlgorithm::kDirect, "packForWinograd: already Winograd");
  auto winograd = std::make_shared<OneDnnConvWeight>(packed); // arguments, sizes, bias
  winograd->algorithm = ConvAlgorithm::kWinograd;
  winograd->desc = preferredWeightDesc(packed, dnnl::primitive_attr(), ConvAlgorithm::kWinograd);
  winograd->storage = at::empty({static_cast<int64_t>(winograd->desc.get_size())}, at::kByte);
  repackWeight(packed, winograd->desc, winograd->storage.data_ptr());
  return winograd;
}

bool bfloat16Pays(const OneDnnConvWeight& packed) {
  const bool depthwise =
      packed.arguments.groups > 1 && packed.arguments.groups == packed.in_channels;
  return !depthwise;
}

std::shared_ptr<const OneDnnConvWeight> repackConvWeight(const OneDnnConvWeight& packed,
                                                         MultiplyPrecision precision) {
  auto repacked = std::make_shared<OneDnnConvWeight>(packed); // arguments, sizes, bias
  repacked->algorithm = ConvAlgorithm::kDirect;
  repacked->multiply =
      precision == MultiplyPrecision::kBFloat16 ? memory::data_type::bf16 : memory::data_type::f32;
  return storeDirect(std::move(repacked), plainWeight(packed));
}

MultiplyPrecision multiplyPrecision(const OneDnnConvWeight& packed) {
  return packed.multiply == memory::data_type::bf16 ? MultiplyPrecision::kBFloat16
                                                    : MultiplyPrecision::kFloat32;
}

ConvAlgorithm convAlgorithm(const OneDnnConvWeight& packed) {
  return packed.algorithm;
}

at::Tensor unpackConvWeight(const OneDnnConvWeight& packed) {
  return plainWeight(packed);
}

const at::Tensor& convBias(const OneDnnConvWeight& packed) {
  return packed.bias;
}

const ConvArguments& convArguments(const OneDnnConvWeight& packed) {
  return packed.arguments;
}

int64_t convInChannels(const OneDnnConvWeight& packed) {
  return packed.in_channels;
}

int64_t convKernelSize(const OneDnnConvWeight& packed, int dim) {
  return packed.kernel[dim];
}

int64_t convOutChannels(const OneDnnConvWeight& packed) {
  return packed.out_channels;
}

bool blockedLayoutSuits(const OneDnnConvWeight& packed) {
  return packed.arguments.spatial_dims == 2 && !packed.arguments.transposed &&
         packed.multiply == kF32;
}

BlockedLayoutGain blockedLayoutGain(const OneDnnConvWeight& packed) {
  const ConvArguments& a = packed.arguments;
  const bool depthwise = a.groups > 1 && a.groups == packed.in_channels;
  const bool pointwise = packed.kernel[0] == 1 && packed.kernel[1] == 1;
  if (depthwise || pointwise || packed.algorithm == ConvAlgorithm::kWinograd) {
    return BlockedLayoutGain::kFaster;
  }
  // Grouped ones of any width run as fast on either layout (320 channels in groups of 16 at
  // 14x14: 74.4 us blocked, 74.8 channels last), so they keep a chain blocked rather than split it
  // with conversions on each side: regnet_y_800mf 8.56 -> 7.98 ms, resnext50_32x4d 40.6 -> 39.1.
  constexpr int64_t kMaxDenseChannels = 128;
  const bool grouped = a.groups > 1;
  return grouped || std::max(packed.in_channels, packed.out_channels) <= kMaxDenseChannels
             ? BlockedLayoutGain::kLevel
             : BlockedLayoutGain::kNone;
}

std::shared_ptr<const OneDnnConvWeight> packForBlockedActivations(const OneDnnConvWeight& packed) {
  TORCH_CHECK(blockedLayoutSuits(packed),
              "packForBlockedActivations: not a 2-D float32 convolution");
  try {
    const memory::desc weights =
        packed.algorithm == ConvAlgorithm::kWinograd
            ? packed.desc
            : memory::desc(weightDims(packed), kF32, memory::format_tag::any);
    // A stem's few input channels: oneDNN's first-layer kernel reads them from NCHW.
    const bool stem = packed.in_channels < kChannelBlock && packed.arguments.groups == 1;
    dnnl::primitive_desc pd =
        representativePrimitive(packed, weights, dnnl::primitive_attr(), packed.algorithm,
                                blockedTag(2), stem ? memory::format_tag::nchw : blockedTag(2));
    if (isReferenceImplementation(pd)) {
      return nullptr;
    }
    if (pd.weights_desc(0) == packed.desc) {
      return std::make_shared<OneDnnConvWeight>(packed); // shares the storage
    }
    auto repacked = std::make_shared<OneDnnConvWeight>(packed); // arguments, sizes, bias
    repacked->desc = pd.weights_desc(0);
    repacked->storage = at::empty({static_cast<int64_t>(repacked->desc.get_size())}, at::kByte);
    repackWeight(packed, repacked->desc, repacked->storage.data_ptr());
    return repacked;
  } catch (const dnnl::error&) {
    return nullptr;
  }
}

} // namespace srt::ops
