// The bytecode interpreter of srt::fused_elementwise (ops/elementwise/fused_bytecode.h) for one
// CPU capability, built once per capability by cmake/CpuKernels.cmake. Each step runs one of the
// formulas of formulas.h, the same code the unfused loops run.
#include <algorithm>
#include <cmath>

#include "ops/elementwise/cpu/formulas.h"
#include "ops/elementwise/fused_bytecode.h"

namespace srt::ops::fused {
inline namespace CPU_CAPABILITY {
namespace {

void runStep(const Step& step, float* d, const float* const* src, int64_t n) {
  const float* x = src[0];
  const float* y = src[1];
  const float* z = src[2];
  const vec::Params params{step.a, step.b};
  switch (step.formula.arity) {
  case Formula::Arity::kUnary:
    return vec::visitFormula(static_cast<vec::UnaryOp>(step.formula.op), params,
                             [&](const auto& f) { vec::applyFormula(d, n, f, x); });
  case Formula::Arity::kBinary:
    return vec::visitFormula(static_cast<vec::BinaryOp>(step.formula.op), params,
                             [&](const auto& f) { vec::applyFormula(d, n, f, x, y); });
  case Formula::Arity::kTernary:
    return vec::visitFormula(static_cast<vec::TernaryOp>(step.formula.op),
                             [&](const auto& f) { vec::applyFormula(d, n, f, x, y, z); });
  }
}

// out[0, n) = the input's elements [offset, offset + n) in output order (InputLayout): one run
// along the innermost dimension at a time, copied, filled or strided.
void gather(const InputLayout& layout, const float* data, int64_t offset, int64_t n, float* out) {
  const int64_t last = layout.ndim - 1;
  int64_t index[kMaxDims];
  int64_t position = 0;
  for (int64_t d = last; d >= 0; --d) {
    index[d] = offset % layout.sizes[d];
    offset /= layout.sizes[d];
    position += index[d] * layout.strides[d];
  }
  const int64_t inner_size = layout.sizes[last];
  const int64_t inner_stride = layout.strides[last];
  while (n > 0) {
    const int64_t run = std::min(inner_size - index[last], n);
    const float* source = data + position;
    if (inner_stride == 1) {
      std::copy(source, source + run, out);
    } else if (inner_stride == 0) {
      std::fill(out, out + run, *source);
    } else {
      for (int64_t k = 0; k < run; ++k) {
        out[k] = source[k * inner_stride];
      }
    }
    out += run;
    n -= run;
    index[last] += run;
    position += run * inner_stride;
    if (index[last] < inner_size) {
      continue;
    }
    // Carry into the outer dimensions.
    index[last] = 0;
    position -= inner_size * inner_stride;
    for (int64_t d = last - 1; d >= 0; --d) {
      ++index[d];
      position += layout.strides[d];
      if (index[d] < layout.sizes[d]) {
        break;
      }
      position -= layout.sizes[d] * layout.strides[d];
      index[d] = 0;
    }
  }
}

} // namespace

void runRange(const Bytecode& code, const InputBinding* inputs, float* out, int64_t begin,
              int64_t end) {
  alignas(64) float storage[kBufferFloats];
  uint32_t num_buffers = static_cast<uint32_t>(code.constants.size()) + code.num_registers;
  for (uint32_t i = 0; i < code.num_inputs; ++i) {
    num_buffers += inputs[i].data == nullptr || inputs[i].layout != nullptr ? 1 : 0;
  }
  if (begin >= end) {
    return;
  }
  // No longer than the range: buffers are filled once per call, not once per element.
  int64_t block = std::min(kMaxBlock, (end - begin + kBlockAlign - 1) / kBlockAlign * kBlockAlign);
  if (num_buffers > 0) {
    block = std::min(block, kBufferFloats / num_buffers / kBlockAlign * kBlockAlign);
  }

  // Where each slot reads from: broadcast inputs and constants fill a buffer once, gathered
  // inputs fill theirs every block.
  const float* slots[256] = {};
  float* gathered[kMaxInputs] = {};
  float* next_buffer = storage;
  for (uint32_t i = 0; i < code.num_inputs; ++i) {
    if (inputs[i].data == nullptr) {
      std::fill(next_buffer, next_buffer + block, inputs[i].value);
    } else if (inputs[i].layout != nullptr) {
      gathered[i] = next_buffer;
    } else {
      continue;
    }
    slots[i] = next_buffer;
    next_buffer += block;
  }
  for (size_t i = 0; i < code.constants.size(); ++i) {
    std::fill(next_buffer, next_buffer + block, code.constants[i]);
    slots[code.firstConstantSlot() + i] = next_buffer;
    next_buffer += block;
  }
  float* registers = next_buffer;
  for (uint32_t i = 0; i < code.num_registers; ++i) {
    slots[code.firstRegisterSlot() + i] = registers + i * block;
  }

  for (int64_t offset = begin; offset < end; offset += block) {
    const int64_t n = std::min(block, end - offset);
    for (uint32_t i = 0; i < code.num_inputs; ++i) {
      if (gathered[i] != nullptr) {
        gather(*inputs[i].layout, inputs[i].data, offset, n, gathered[i]);
      } else if (inputs[i].data != nullptr) {
        slots[i] = inputs[i].data + offset;
      }
    }
    for (const Step& step : code.steps) {
      float* d = step.dst == kOutputSlot
                     ? out + offset
                     : registers + (step.dst - code.firstRegisterSlot()) * block;
      const float* src[3] = {slots[step.src[0]], slots[step.src[1]], slots[step.src[2]]};
      runStep(step, d, src, n);
    }
  }
}

} // namespace CPU_CAPABILITY
} // namespace srt::ops::fused
