// The bytecode interpreter of srt::fused_elementwise (ops/elementwise/fused_bytecode.h) for one
// CPU capability, built once per capability by cmake/CpuKernels.cmake. Each step's vector code is
// ATen 1.13's vector lambda for the op, as in ops/elementwise/cpu/float_loops.cpp.
#include <algorithm>
#include <cmath>

#include <ATen/cpu/vec/vec.h>

#include "ops/elementwise/fused_bytecode.h"

namespace srt::ops::fused {
inline namespace CPU_CAPABILITY {
namespace {

using Vec = at::vec::Vectorized<float>;
constexpr int64_t kStep = Vec::size();

// d[i] = f(s[i]...) for i < n. The tail goes through the same vector function on a partial load,
// so an element's result does not depend on where blocks or threads split the range.
template <typename F, typename... Sources>
inline void apply(float* d, int64_t n, const F& f, const Sources*... s) {
  int64_t i = 0;
  for (; i + kStep <= n; i += kStep) {
    f(Vec::loadu(s + i)...).store(d + i);
  }
  if (i < n) {
    const int64_t rest = n - i;
    f(Vec::loadu(s + i, rest)...).store(d + i, rest);
  }
}

void runStep(const Step& step, float* d, const float* const* src, int64_t n) {
  const float* x = src[0];
  const float* y = src[1];
  const float* z = src[2];
  const Vec a(step.a);
  const Vec b(step.b);
  const Vec zero(0.f);
  const Vec one(1.f);
  switch (step.op) {
  case VecOp::kAdd: // ATen's ufunc add: fmadd(other, alpha, self)
    return apply(
        d, n, [&](Vec u, Vec v) { return at::vec::fmadd(v, a, u); }, x, y);
  case VecOp::kMul:
    return apply(
        d, n, [](Vec u, Vec v) { return u * v; }, x, y);
  case VecOp::kDiv:
    return apply(
        d, n, [](Vec u, Vec v) { return u / v; }, x, y);
  case VecOp::kRelu: // ATen: clamp_min(x, 0)
    return apply(
        d, n, [&](Vec v) { return at::vec::clamp_min(v, zero); }, x);
  case VecOp::kSigmoid:
    return apply(
        d, n, [&](Vec v) { return ((zero - v).exp() + one).reciprocal(); }, x);
  case VecOp::kTanh:
    return apply(
        d, n, [](Vec v) { return v.tanh(); }, x);
  case VecOp::kExp:
    return apply(
        d, n, [](Vec v) { return v.exp(); }, x);
  case VecOp::kLog:
    return apply(
        d, n, [](Vec v) { return v.log(); }, x);
  case VecOp::kSqrt:
    return apply(
        d, n, [](Vec v) { return v.sqrt(); }, x);
  case VecOp::kRsqrt:
    return apply(
        d, n, [](Vec v) { return v.rsqrt(); }, x);
  case VecOp::kNeg:
    return apply(
        d, n, [](Vec v) { return v.neg(); }, x);
  case VecOp::kAbs:
    return apply(
        d, n, [](Vec v) { return v.abs(); }, x);
  case VecOp::kReciprocal:
    return apply(
        d, n, [](Vec v) { return v.reciprocal(); }, x);
  case VecOp::kSilu:
    return apply(
        d, n, [&](Vec v) { return v / (one + v.neg().exp()); }, x);
  case VecOp::kHardswish: {
    const Vec three(3.f);
    const Vec six(6.f);
    return apply(
        d, n,
        [&](Vec v) { return v * at::vec::minimum(at::vec::maximum(v + three, zero), six) / six; },
        x);
  }
  case VecOp::kGelu: {
    const Vec half(0.5f);
    const Vec alpha(static_cast<float>(M_SQRT1_2));
    return apply(
        d, n, [&](Vec v) { return v * half * (one + (v * alpha).erf()); }, x);
  }
  case VecOp::kGeluTanh: {
    const Vec half(0.5f);
    const Vec beta(static_cast<float>(M_SQRT2 * M_2_SQRTPI * 0.5));
    const Vec kappa(0.044715f);
    return apply(
        d, n,
        [&](Vec v) {
          const Vec inner = beta * (v + kappa * (v * v * v));
          return half * v * (one + inner.tanh());
        },
        x);
  }
  case VecOp::kLeakyRelu:
    return apply(
        d, n, [&](Vec v) { return v * Vec::blendv(a, one, v > zero); }, x);
  case VecOp::kClamp:
    return apply(
        d, n, [&](Vec v) { return at::vec::clamp(v, a, b); }, x);
  case VecOp::kClampMin:
    return apply(
        d, n, [&](Vec v) { return at::vec::clamp_min(v, a); }, x);
  case VecOp::kClampMax:
    return apply(
        d, n, [&](Vec v) { return at::vec::clamp_max(v, b); }, x);
  case VecOp::kSquare:
    return apply(
        d, n, [](Vec v) { return v * v; }, x);
  case VecOp::kCube:
    return apply(
        d, n, [](Vec v) { return v * v * v; }, x);
  case VecOp::kInverseSquare:
    return apply(
        d, n, [](Vec v) { return (v * v).reciprocal(); }, x);
  case VecOp::kPow:
    return apply(
        d, n, [&](Vec v) { return v.pow(a); }, x);
  case VecOp::kFillOne:
    return apply(
        d, n, [&](Vec) { return one; }, x);
  case VecOp::kCopy:
    return apply(
        d, n, [](Vec v) { return v; }, x);
  case VecOp::kGt:
    return apply(
        d, n, [](Vec u, Vec v) { return u.gt(v); }, x, y);
  case VecOp::kLt:
    return apply(
        d, n, [](Vec u, Vec v) { return u.lt(v); }, x, y);
  case VecOp::kGe:
    return apply(
        d, n, [](Vec u, Vec v) { return u.ge(v); }, x, y);
  case VecOp::kLe:
    return apply(
        d, n, [](Vec u, Vec v) { return u.le(v); }, x, y);
  case VecOp::kEq:
    return apply(
        d, n, [](Vec u, Vec v) { return u.eq(v); }, x, y);
  case VecOp::kNe:
    return apply(
        d, n, [](Vec u, Vec v) { return u.ne(v); }, x, y);
  case VecOp::kWhere: // blendv takes its second operand where the mask is set
    return apply(
        d, n, [&](Vec c, Vec u, Vec v) { return Vec::blendv(v, u, c != zero); }, x, y, z);
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
