// index_put_ (`x[mask] = 0`, `x[idx] = v`) and its functional form index_put. The in-place op
// is a native kernel writing into its first input as the JIT operator does (without its stack);
// the functional one an out-variant copying the input into the node's output and writing there.
#include <ATen/ops/index_put_native.h>

#include "ops/core/registry.h"
#include "ops/elementwise/fast_path.h"

namespace srt::ops {
namespace {

using torch::jit::Node;

// A Tensor?[] list may come typed Tensor[]: its elements read one by one.
c10::List<c10::optional<at::Tensor>> optionalTensors(const c10::IValue& list) {
  c10::List<c10::optional<at::Tensor>> tensors;
  for (const c10::IValue& element : list.toListRef()) {
    tensors.push_back(element.isNone() ? c10::nullopt
                                       : c10::optional<at::Tensor>(element.toTensor()));
  }
  return tensors;
}

// index_put_(Tensor(a!) self, Tensor?[] indices, Tensor values, bool accumulate=False)
void indexPutInPlace(ProcessedNode& p) {
  // The value table's handle and the output share the tensor written into, as in the JIT.
  at::Tensor self = p.input(0).toTensor();
  at::native::index_put_(self, optionalTensors(p.input(1)), p.input(2).toTensor(),
                         p.input(3).toBool());
  p.output(0) = std::move(self);
}

// index_put(Tensor self, Tensor?[] indices, Tensor values, bool accumulate=False)
void indexPut(ProcessedNode& p) {
  const at::Tensor& self = p.input(0).toTensor();
  at::Tensor& out = outputTensorLike(p, 0, self);
  resizePreservingLayout(out, self);
  out.copy_(self);
  at::native::index_put_(out, optionalTensors(p.input(1)), p.input(2).toTensor(),
                         p.input(3).toBool());
}

} // namespace

// hacked_twin: the overload TorchScript picks when the indices list is typed Tensor[].
SRT_REGISTER_KERNEL("aten::index_put_", kNative, [](const Node* node, const KernelOptions&) {
  return kernelForOverload(node, {{"", indexPutInPlace}, {"hacked_twin", indexPutInPlace}});
});
SRT_REGISTER_KERNEL("aten::index_put", kOutVariant, [](const Node* node, const KernelOptions&) {
  return kernelForOverload(node, {{"", indexPut}, {"hacked_twin", indexPut}});
});

} // namespace srt::ops
