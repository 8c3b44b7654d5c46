// Conversions whose result is the input itself when nothing changes, as the JIT returns it:
// Tensor.cpu() and torch.as_tensor(tensor, dtype?, device?) (torch.nn.utils.rnn's packing calls
// both on a lengths tensor). Native kernels: on a CPU tensor of the wanted dtype they hand the
// input on; a real conversion is ATen's `to`.
#include <ATen/core/Tensor.h>

#include "ops/core/processed_node.h"
#include "ops/core/registry.h"
#include "ops/core/schema_match.h"

namespace srt::ops {

SRT_REGISTER_KERNEL("aten::cpu", kNative,
                    whenMatches("aten::cpu(Tensor(a) self) -> Tensor(b|a)", [](ProcessedNode& p) {
                      const at::Tensor& self = p.input(0).toTensor();
                      p.output(0) = self.is_cpu() ? self : self.cpu();
                    }));

SRT_REGISTER_KERNEL(
    "aten::as_tensor", kNative,
    whenMatches("aten::as_tensor(Tensor(a) data, *, ScalarType? dtype=None, Device? device=None) "
                "-> Tensor(b|a)",
                [](ProcessedNode& p) {
                  const at::Tensor& data = p.input(0).toTensor();
                  const auto dtype = p.input(1).toOptional<at::ScalarType>();
                  const auto device = p.input(2).toOptional<c10::Device>();
                  const at::ScalarType type = dtype.value_or(data.scalar_type());
                  const c10::Device target = device.value_or(data.device());
                  p.output(0) = type == data.scalar_type() && target == data.device()
                                    ? data
                                    : data.to(target, type, /*non_blocking=*/false,
                                              /*copy=*/false);
                }));

} // namespace srt::ops
