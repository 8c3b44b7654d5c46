// The oneDNN backend: a matmul primitive whose right operand, a constant weight, is reordered
// once, when the module is built, into the blocked layout oneDNN prefers.
#pragma once

#include <memory>
#include <optional>
#include <utility>

#include <ATen/core/Tensor.h>

#include "ops/core/kernel.h"
#include "ops/core/multiply_precision.h"
#include "ops/core/processed_node.h"
#include "ops/gemm/epilogue.h"
#include "ops/gemm/problem.h"
#include "ops/gemm/threads.h"

namespace srt::ops {

// The node's inputs as a GEMM, or std::nullopt for ATen's kernel.
using GemmLowering = std::optional<GemmProblem> (*)(ProcessedNode&);

// Where a linear-shaped node (aten::linear, srt::fused_linear) keeps its activation and bias, so
// the common case (a contiguous float32 activation [..., K], a bias row or none) runs straight
// from the data pointers. The general lowering builds a view and a transpose per run, each a
// dispatcher call, which costs more than the GEMM itself at transformer sizes like 16 x 64 x 64.
struct LinearInputs {
  int input = -1; // -1: the node is not linear-shaped; always lower
  int bias = -1;
};

// A kernel for a node whose GEMM right operand is always `weight` ([K, N], a constant), e.g. the
// transposed weight of aten::linear. It runs oneDNN when the lowered problem is a 2-D float32
// GEMM with that right operand, and `aten_kernel` otherwise (another dtype at run time, a
// shape oneDNN has no primitive for). std::nullopt when the weight cannot be packed: not float32
// or empty. The packed weight is shared read-only by every runtime; the primitive is per node and
// runtime, rebuilt when M, the thread count, alpha or beta change.
std::optional<KernelFunction> makeOneDnnKernel(const at::Tensor& weight, GemmLowering lower,
                                               KernelFunction aten_kernel,
                                               LinearInputs linear = {});

// A fused GEMM (srt::fused_linear): the same, with `epilogue` run as oneDNN post-ops (eltwise for
// the activation, a sum post-op for the residual, which is first copied into the output). The
// residual is the node's input `residual_input`, alpha its input `alpha_input` (when the
// epilogue has a residual). A residual that does not broadcast to the output, or a bias that is
// not one value per column, runs `aten_kernel`.
std::optional<KernelFunction> makeOneDnnKernel(const at::Tensor& weight, GemmLowering lower,
                                               KernelFunction aten_kernel, GemmEpilogue epilogue,
                                               int residual_input, int alpha_input,
                                               LinearInputs linear = {});

// A constant right operand [K, N] packed once for oneDNN, shared read-only by every runtime, for
// kernels that run a GEMM as one step of their own (srt::multi_head_attention's QKV projection).
// nullptr when it cannot be packed: not a float32 matrix, or no matmul implementation here.
struct OneDnnPackedWeight;
std::shared_ptr<const OneDnnPackedWeight> packOneDnnWeight(const at::Tensor& weight);

// `weight` packed again to multiply in `precision` (its values rounded to bfloat16 for
// kBFloat16); nullptr when oneDNN has no matmul for it. Every kernel that reads a packed weight
// follows its precision, rounding its float32 activation to bfloat16 per call where needed.
std::shared_ptr<const OneDnnPackedWeight> repackOneDnnWeight(const OneDnnPackedWeight& weight,
                                                             MultiplyPrecision precision);
MultiplyPrecision multiplyPrecision(const OneDnnPackedWeight& weight);

// The packed operand's shape {K, N}.
std::pair<int64_t, int64_t> packedShape(const OneDnnPackedWeight& weight);

// The packed operand back in its plain [K, N] layout (a new float32 tensor), for the reference
// path of a node that holds its weight only packed (srt::fused_linear.packed).
at::Tensor unpackOneDnnWeight(const OneDnnPackedWeight& weight);

// The kernel of a linear-shaped node whose weight exists only `packed` (srt::fused_linear.packed,
// ops/gemm/packed_linear.cpp): a float32 activation [..., K] runs on oneDNN (a strided one, like
// ViT's x[:, 0], made dense first), with `epilogue` as for makeOneDnnKernel; anything else (other
// dtypes, a 1-D input, a residual that broadcasts) runs `reference`, which unpacks the weight.
KernelFunction makePackedLinearKernel(std::shared_ptr<const OneDnnPackedWeight> packed,
                                      GemmEpilogue epilogue, LinearInputs linear,
                                      int residual_input, int alpha_input,
                                      KernelFunction reference);

// out[m, N] = a[m, K] @ weight (+ bias, a row of N floats), rows contiguous, in two steps so the
// kernel can place oneDNN's scratch inside its own scratch block (a node has one):
// prepareOneDnnGemm builds the node's primitive for m rows (kept in the node's state, so a kernel
// runs at most one such GEMM; rebuilt when m or the thread count change) and returns the
// scratch bytes it needs (oneDNN's scratchpad; for a bfloat16 weight also `a` rounded), or
// std::nullopt when oneDNN has no primitive for it (nothing to run). runOneDnnGemm then runs it
// with that many 64-byte aligned scratch bytes. `threads`
// (for m x K x N multiply-adds) must live across both calls.
std::optional<size_t> prepareOneDnnGemm(ProcessedNode& p, const OneDnnPackedWeight& weight,
                                        int64_t m, bool has_bias, const OneDnnThreads& threads);
void runOneDnnGemm(ProcessedNode& p, const float* a, const float* bias, float* out,
                   void* scratchpad);

// The same GEMM with its primitive kept where the kernel says, for kernels that run several
// (one per layer of a recurrent network) and keep one slot each in their node state.
class OneDnnGemmSlot {
public:
  OneDnnGemmSlot();
  ~OneDnnGemmSlot();
  OneDnnGemmSlot(OneDnnGemmSlot&&) noexcept;
  OneDnnGemmSlot& operator=(OneDnnGemmSlot&&) noexcept;
  // As prepareOneDnnGemm.
  std::optional<size_t> prepare(const OneDnnPackedWeight& weight, int64_t m, bool has_bias,
                                const OneDnnThreads& threads);
  // As runOneDnnGemm, after prepare.
  void run(ProcessedNode& p, const float* a, const float* bias, float* out, void* scratchpad);

private:
  std::unique_ptr<NodeState> state_;
};

} // namespace srt::ops
