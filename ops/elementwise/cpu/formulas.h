// The vector formula of every element-wise op (ops/elementwise/vectorized_loops.h's UnaryOp,
// BinaryOp, TernaryOp), each written once, as ATen 1.13's CPU kernel writes its vector lambda, and
// the one loop that applies a formula to a range. Included by the per-capability files only
// (cmake/CpuKernels.cmake): the unfused loops (float_loops.cpp) and the fused bytecode
// (fused_loops.cpp) both run these, so fused and unfused results are the same bits.
#pragma once

#include <cmath>

#include <ATen/cpu/vec/functional.h>
#include <ATen/cpu/vec/vec.h>

#include "ops/elementwise/cpu/partial_vectors.h"
#include "ops/elementwise/vectorized_loops.h"

namespace srt::ops::vec {
inline namespace CPU_CAPABILITY {

using Vec = at::vec::Vectorized<float>;

// out[i] = f(in[i]...) for i < n. The tail goes through the same vector function on a partial
// load, so an element's result does not depend on where blocks or threads split the range.
template <typename F, typename... Inputs>
inline void applyFormula(float* out, int64_t n, const F& f, const Inputs*... in) {
  constexpr int64_t kStep = Vec::size();
  int64_t i = 0;
  for (; i + kStep <= n; i += kStep) {
    f(Vec::loadu(in + i)...).store(out + i);
  }
  if (i < n) {
    const int64_t rest = n - i;
    storePartial(f(loadPartial(in + i, rest)...), out + i, rest);
  }
}

// sigmoid as ATen writes it.
inline Vec sigmoidFormula(Vec v) {
  return ((Vec(0.f) - v).exp() + Vec(1.f)).reciprocal();
}

// Calls visit(f) with f the formula of `op` (a callable Vec -> Vec), its parameters bound: one
// switch per call, and each formula's loop compiled on its own.
template <typename Visit> inline void visitFormula(UnaryOp op, Params params, const Visit& visit) {
  const Vec a(params.a);
  const Vec b(params.b);
  const Vec zero(0.f);
  const Vec one(1.f);
  const Vec three(3.f);
  const Vec six(6.f);
  switch (op) {
  case UnaryOp::kRelu: // ATen: clamp_min(x, 0)
    return visit([=](Vec v) { return at::vec::clamp_min(v, zero); });
  case UnaryOp::kSigmoid:
    return visit([](Vec v) { return sigmoidFormula(v); });
  case UnaryOp::kTanh:
    return visit([](Vec v) { return v.tanh(); });
  case UnaryOp::kGelu: {
    const Vec half(0.5f);
    const Vec alpha(static_cast<float>(M_SQRT1_2));
    return visit([=](Vec v) { return v * half * (one + (v * alpha).erf()); });
  }
  case UnaryOp::kGeluTanh: {
    const Vec half(0.5f);
    const Vec beta(static_cast<float>(M_SQRT2 * M_2_SQRTPI * 0.5));
    const Vec kappa(0.044715f);
    return visit([=](Vec v) {
      const Vec inner = beta * (v + kappa * (v * v * v));
      return half * v * (one + inner.tanh());
    });
  }
  case UnaryOp::kSilu:
    return visit([=](Vec v) { return v / (one + v.neg().exp()); });
  case UnaryOp::kHardswish:
    return visit(
        [=](Vec v) { return v * at::vec::minimum(at::vec::maximum(v + three, zero), six) / six; });
  case UnaryOp::kHardsigmoid:
    return visit(
        [=](Vec v) { return at::vec::minimum(at::vec::maximum(v + three, zero), six) / six; });
  case UnaryOp::kLeakyRelu:
    return visit([=](Vec v) { return v * Vec::blendv(a, one, v > zero); });
  case UnaryOp::kClamp:
    return visit([=](Vec v) { return at::vec::clamp(v, a, b); });
  case UnaryOp::kClampMin:
    return visit([=](Vec v) { return at::vec::clamp_min(v, a); });
  case UnaryOp::kClampMax:
    return visit([=](Vec v) { return at::vec::clamp_max(v, b); });
  case UnaryOp::kExp:
    return visit([](Vec v) { return v.exp(); });
  case UnaryOp::kLog:
    return visit([](Vec v) { return v.log(); });
  case UnaryOp::kSqrt:
    return visit([](Vec v) { return v.sqrt(); });
  case UnaryOp::kRsqrt:
    return visit([](Vec v) { return v.rsqrt(); });
  case UnaryOp::kReciprocal:
    return visit([](Vec v) { return v.reciprocal(); });
  case UnaryOp::kNeg:
    return visit([](Vec v) { return v.neg(); });
  case UnaryOp::kAbs:
    return visit([](Vec v) { return v.abs(); });
  case UnaryOp::kSquare:
    return visit([](Vec v) { return v * v; });
  case UnaryOp::kCube:
    return visit([](Vec v) { return v * v * v; });
  case UnaryOp::kInverseSquare:
    return visit([](Vec v) { return (v * v).reciprocal(); });
  case UnaryOp::kPow:
    return visit([=](Vec v) { return v.pow(a); });
  case UnaryOp::kFill:
    return visit([=](Vec) { return a; });
  case UnaryOp::kCopy:
    return visit([](Vec v) { return v; });
  case UnaryOp::kAddScalar: // ATen: fmadd(other, alpha, self)
    return visit([=](Vec v) { return at::vec::fmadd(a, b, v); });
  case UnaryOp::kMulScalar:
    return visit([=](Vec v) { return v * a; });
  case UnaryOp::kDivScalar:
    return visit([=](Vec v) { return v / a; });
  case UnaryOp::kAffine:
    return visit([=](Vec v) { return v * a + b; });
  }
}

template <typename Visit> inline void visitFormula(BinaryOp op, Params params, const Visit& visit) {
  const Vec a(params.a);
  switch (op) {
  case BinaryOp::kAdd: // ATen's ufunc add: fmadd(other, alpha, self)
    return visit([=](Vec u, Vec v) { return at::vec::fmadd(v, a, u); });
  case BinaryOp::kMul:
    return visit([](Vec u, Vec v) { return u * v; });
  case BinaryOp::kDiv:
    return visit([](Vec u, Vec v) { return u / v; });
  case BinaryOp::kPow:
    return visit([](Vec u, Vec v) { return u.pow(v); });
  case BinaryOp::kGt:
    return visit([](Vec u, Vec v) { return u.gt(v); });
  case BinaryOp::kLt:
    return visit([](Vec u, Vec v) { return u.lt(v); });
  case BinaryOp::kGe:
    return visit([](Vec u, Vec v) { return u.ge(v); });
  case BinaryOp::kLe:
    return visit([](Vec u, Vec v) { return u.le(v); });
  case BinaryOp::kEq:
    return visit([](Vec u, Vec v) { return u.eq(v); });
  case BinaryOp::kNe:
    return visit([](Vec u, Vec v) { return u.ne(v); });
  }
}

template <typename Visit> inline void visitFormula(TernaryOp op, const Visit& visit) {
  switch (op) {
  case TernaryOp::kMulAdd:
    return visit([](Vec u, Vec v, Vec w) { return u * v + w; });
  case TernaryOp::kWhere: // blendv takes its second operand where the mask is set
    return visit([](Vec c, Vec u, Vec v) { return Vec::blendv(v, u, c != Vec(0.f)); });
  }
}

} // namespace CPU_CAPABILITY
} // namespace srt::ops::vec
