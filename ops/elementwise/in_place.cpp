// The in-place ops prepare's mutation removal leaves in place (their dtype could change out of
// place, or they write into a view of another tensor: `mask += bias`, `t[a:b] = v`) as native
// kernels: ATen's CPU kernels write into the first input, which is also
// the output, as the JIT operator does, without its stack or the dispatcher.
#include <ATen/CPUFunctions.h>
#include <ATen/ops/copy_native.h>
#include <ATen/ops/fill_native.h>
#include <ATen/ops/zero_native.h>

#include "ops/core/registry.h"
#include "ops/core/schema_match.h"
#include "ops/elementwise/fast_path.h"

namespace srt::ops {
namespace {

using torch::jit::Node;

// A handle on the tensor written into: the output is the same tensor, as in the JIT.
at::Tensor self(const ProcessedNode& p) {
  return p.input(0).toTensor();
}

template <at::Tensor& (*Op)(at::Tensor&, const at::Tensor&, const c10::Scalar&)>
void withAlphaTensor(ProcessedNode& p) {
  at::Tensor target = self(p);
  p.output(0) = Op(target, p.input(1).toTensor(), p.input(2).toScalar());
}

template <at::Tensor& (*Op)(at::Tensor&, const at::Tensor&, const c10::Scalar&)>
void withAlphaScalar(ProcessedNode& p) {
  at::Tensor target = self(p);
  p.output(0) = Op(target, wrappedScalar(p.input(1).toScalar()), p.input(2).toScalar());
}

template <at::Tensor& (*Op)(at::Tensor&, const at::Tensor&)> void binaryTensor(ProcessedNode& p) {
  at::Tensor target = self(p);
  p.output(0) = Op(target, p.input(1).toTensor());
}

template <at::Tensor& (*Op)(at::Tensor&, const at::Tensor&)> void binaryScalar(ProcessedNode& p) {
  at::Tensor target = self(p);
  p.output(0) = Op(target, wrappedScalar(p.input(1).toScalar()));
}

// scatter_(Tensor(a!) self, int dim, Tensor index, Tensor src) and its `value` overload (no
// reduce): torch.nn.utils.rnn's invert_permutation writes arange into an empty_like this way.
void scatterSource(ProcessedNode& p) {
  at::Tensor target = self(p);
  p.output(0) =
      at::cpu::scatter_(target, p.input(1).toInt(), p.input(2).toTensor(), p.input(3).toTensor());
}

void scatterValue(ProcessedNode& p) {
  at::Tensor target = self(p);
  p.output(0) =
      at::cpu::scatter_(target, p.input(1).toInt(), p.input(2).toTensor(), p.input(3).toScalar());
}

// copy_(Tensor(a!) self, Tensor src, bool non_blocking=False)
void copyInPlace(ProcessedNode& p) {
  at::Tensor target = self(p);
  p.output(0) = at::native::copy_(target, p.input(1).toTensor(), p.input(2).toBool());
}

// index_add_(Tensor(a!) self, int dim, Tensor index, Tensor source, *, Scalar alpha=1): rows
// accumulated into a tensor the graph built (mixture-of-experts outputs, graph message passing).
void indexAddInPlace(ProcessedNode& p) {
  at::Tensor target = self(p);
  p.output(0) = at::cpu::index_add_(target, p.input(1).toInt(), p.input(2).toTensor(),
                                    p.input(3).toTensor(), p.input(4).toScalar());
}

// zero_ and fill_ on a view (`bias[n:2 * n].zero_()` in Swin V2's attention, `t[:, 0].fill_(v)`).
void zeroInPlace(ProcessedNode& p) {
  at::Tensor target = self(p);
  p.output(0) = at::native::zero_(target);
}

void fillScalarInPlace(ProcessedNode& p) {
  at::Tensor target = self(p);
  p.output(0) = at::native::fill_(target, p.input(1).toScalar());
}

void fillTensorInPlace(ProcessedNode& p) {
  at::Tensor target = self(p);
  p.output(0) = at::native::fill_(target, p.input(1).toTensor());
}

} // namespace

SRT_REGISTER_KERNEL("aten::zero_", kNative, tensorOverload<zeroInPlace>);
SRT_REGISTER_KERNEL("aten::index_add_", kNative, tensorOverload<indexAddInPlace>);
SRT_REGISTER_KERNEL("aten::fill_", kNative, [](const Node* node, const KernelOptions&) {
  return kernelForOverload(node, {{"Scalar", fillScalarInPlace}, {"Tensor", fillTensorInPlace}});
});
SRT_REGISTER_KERNEL("aten::add_", kNative, [](const Node* node, const KernelOptions&) {
  return kernelForOverload(node, {{"Tensor", withAlphaTensor<at::cpu::add_>},
                                  {"Scalar", withAlphaScalar<at::cpu::add_>}});
});
SRT_REGISTER_KERNEL("aten::sub_", kNative, [](const Node* node, const KernelOptions&) {
  return kernelForOverload(node, {{"Tensor", withAlphaTensor<at::cpu::sub_>},
                                  {"Scalar", withAlphaScalar<at::cpu::sub_>}});
});
SRT_REGISTER_KERNEL("aten::mul_", kNative, [](const Node* node, const KernelOptions&) {
  return kernelForOverload(
      node, {{"Tensor", binaryTensor<at::cpu::mul_>}, {"Scalar", binaryScalar<at::cpu::mul_>}});
});
SRT_REGISTER_KERNEL("aten::div_", kNative, [](const Node* node, const KernelOptions&) {
  return kernelForOverload(
      node, {{"Tensor", binaryTensor<at::cpu::div_>}, {"Scalar", binaryScalar<at::cpu::div_>}});
});
SRT_REGISTER_KERNEL("aten::copy_", kNative, tensorOverload<copyInPlace>);
SRT_REGISTER_KERNEL("aten::scatter_", kNative, [](const Node* node, const KernelOptions&) {
  return kernelForOverload(node, {{"src", scatterSource}, {"value", scatterValue}});
});

} // namespace srt::ops
