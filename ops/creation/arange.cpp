// aten::arange and aten::linspace, written into last run's output (at::cpu::arange_outf,
// linspace_outf). Models build index and offset tensors with them (nn.EmbeddingBag over a 2-D
// input makes its offsets so) and position grids of a run-time size.
#include <ATen/CPUFunctions.h>
#include <c10/core/DefaultDtype.h>
#include <torch/csrc/jit/ir/ir.h>

#include "ops/core/out_variant.h"
#include "ops/core/processed_node.h"
#include "ops/core/registry.h"
#include "ops/core/schema_match.h"
#include "ops/creation/placement.h"
#include "ops/elementwise/fast_path.h"

namespace srt::ops {
namespace {

// ATen's rule: int64 when start, end and step are all integral (bools count), else the default
// dtype, unless a dtype is given.
at::ScalarType resultType(const c10::IValue& dtype, const at::Scalar& start, const at::Scalar& end,
                          const at::Scalar& step) {
  if (!dtype.isNone()) {
    return dtype.toScalarType();
  }
  const bool integral = start.isIntegral(true) && end.isIntegral(true) && step.isIntegral(true);
  return integral ? at::kLong : defaultDtype();
}

// `options` is the index of the dtype argument; layout, device and pin_memory follow it.
void arange(ProcessedNode& p, const at::Scalar& start, const at::Scalar& end,
            const at::Scalar& step, size_t options) {
  const c10::IValue& layout = p.input(options + 1);
  const c10::IValue& device = p.input(options + 2);
  TORCH_CHECK(layout.isNone() || layout.toLayout() == at::kStrided,
              "static_runtime: aten::arange supports the strided layout only, got ", layout);
  TORCH_CHECK(device.isNone() || device.toDevice().is_cpu(),
              "static_runtime: aten::arange runs on the CPU, got device ", device);
  at::Tensor& out =
      outputTensor(p, 0, at::TensorOptions().dtype(resultType(p.input(options), start, end, step)));
  at::cpu::arange_outf(start, end, step, out);
}

// linspace(start, end, steps, *, dtype, layout, device, pin_memory): the default dtype unless one
// is given, whatever the kinds of start and end.
void linspace(ProcessedNode& p) {
  const at::Scalar start = p.input(0).toScalar();
  const at::Scalar end = p.input(1).toScalar();
  const int64_t steps = p.input(2).toInt();
  TORCH_CHECK(steps >= 0, "number of steps must be non-negative");
  const Placement placement = readPlacement(p, 3, defaultDtype(), at::kCPU);
  if (!placement.plain_cpu) {
    p.output(0) = at::linspace(start, end, steps, placement.options);
    return;
  }
  at::cpu::linspace_outf(start, end, steps, outputTensor(p, 0, placement.options));
}

} // namespace

SRT_REGISTER_KERNEL("aten::linspace", kOutVariant,
                    whenMatches("aten::linspace(Scalar start, Scalar end, int steps, *, "
                                "ScalarType? dtype=None, Layout? layout=None, Device? device=None, "
                                "bool? pin_memory=None) -> Tensor",
                                linspace));
SRT_REGISTER_KERNEL(
    "aten::arange", kOutVariant,
    whenMatches("aten::arange(Scalar end, *, ScalarType? dtype=None, Layout? "
                "layout=None, Device? device=None, bool? pin_memory=None) -> Tensor",
                [](ProcessedNode& p) { arange(p, 0, p.input(0).toScalar(), 1, 1); }));
SRT_REGISTER_KERNEL("aten::arange", kOutVariant,
                    whenMatches("aten::arange.start(Scalar start, Scalar end, *, ScalarType? "
                                "dtype=None, Layout? layout=None, Device? device=None, bool? "
                                "pin_memory=None) -> Tensor",
                                [](ProcessedNode& p) {
                                  arange(p, p.input(0).toScalar(), p.input(1).toScalar(), 1, 2);
                                }));
SRT_REGISTER_KERNEL("aten::arange", kOutVariant,
                    whenMatches("aten::arange.start_step(Scalar start, Scalar end, Scalar step=1, "
                                "*, ScalarType? dtype=None, Layout? layout=None, Device? "
                                "device=None, bool? pin_memory=None) -> Tensor",
                                [](ProcessedNode& p) {
                                  arange(p, p.input(0).toScalar(), p.input(1).toScalar(),
                                         p.input(2).toScalar(), 3);
                                }));

} // namespace srt::ops
