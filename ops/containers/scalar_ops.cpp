// Numbers a model computes on the side: tensor sizes and metadata, int/float/bool arithmetic and
// comparisons, casts between numbers and 0-dim tensors, and identity checks on optionals. Each
// kernel does what the JIT's own operator (register_prim_ops.cpp) does, without its stack.
#include <algorithm>
#include <cmath>
#include <vector>

#include <ATen/ScalarOps.h>
#include <ATen/autocast_mode.h>
#include <c10/core/GradMode.h>
#include <c10/core/WrapDimMinimal.h>
#include <torch/csrc/jit/ir/ir.h>

#include "ops/core/processed_node.h"
#include "ops/core/registry.h"
#include "ops/core/schema_match.h"

namespace srt::ops {
namespace {

const at::Tensor& tensor(const ProcessedNode& p, size_t i = 0) {
  return p.input(i).toTensor();
}

int64_t intAt(const ProcessedNode& p, size_t i) {
  return p.input(i).toInt();
}

double floatAt(const ProcessedNode& p, size_t i) {
  return p.input(i).toDouble();
}

// Python's `//` and `%` round towards negative infinity; C++'s towards zero.
int64_t floorDivide(int64_t a, int64_t b) {
  TORCH_CHECK(b != 0, "ZeroDivisionError: integer division by 0");
  const int64_t quotient = a / b;
  return (a % b != 0 && ((a < 0) != (b < 0))) ? quotient - 1 : quotient;
}

int64_t pythonModulo(int64_t a, int64_t b) {
  TORCH_CHECK(b != 0, "ZeroDivisionError: integer modulo by 0");
  const int64_t remainder = a % b;
  return (remainder != 0 && ((remainder < 0) != (b < 0))) ? remainder + b : remainder;
}

double floorDivide(double a, double b) {
  TORCH_CHECK(b != 0.0, "ZeroDivisionError: float floor division by 0");
  const double modulo = std::fmod(a, b);
  const double quotient = (a - modulo) / b;
  return (modulo != 0.0 && ((b < 0) != (modulo < 0))) ? quotient - 1.0 : quotient;
}

// Registers `OP.int(int a, int b) -> R` (OP qualified: "aten::add") computing `expression` from
// ints a and b; SRT_FLOAT_BINARY the same for `OP.float(float a, float b)`.
#define SRT_INT_BINARY(op, result_type, expression)                                                \
  SRT_REGISTER_KERNEL(op, kNative,                                                                 \
                      whenMatches(op ".int(int a, int b) -> " result_type, [](ProcessedNode& p) {  \
                        const int64_t a = intAt(p, 0);                                             \
                        const int64_t b = intAt(p, 1);                                             \
                        p.output(0) = (expression);                                                \
                      }))
#define SRT_FLOAT_BINARY(op, result_type, expression)                                              \
  SRT_REGISTER_KERNEL(                                                                             \
      op, kNative,                                                                                 \
      whenMatches(op ".float(float a, float b) -> " result_type, [](ProcessedNode& p) {            \
        const double a = floatAt(p, 0);                                                            \
        const double b = floatAt(p, 1);                                                            \
        p.output(0) = (expression);                                                                \
      }))

// Registers `OP.int_float(int a, float b)` and `OP.float_int(float a, int b)`, both
// -> float: Python's mixed arithmetic, the int promoted.
#define SRT_MIXED_BINARY(op, expression)                                                           \
  SRT_REGISTER_KERNEL(op, kNative,                                                                 \
                      whenMatches(op ".int_float(int a, float b) -> float", [](ProcessedNode& p) { \
                        const auto a = static_cast<double>(intAt(p, 0));                           \
                        const double b = floatAt(p, 1);                                            \
                        p.output(0) = (expression);                                                \
                      }));                                                                         \
  SRT_REGISTER_KERNEL(op, kNative,                                                                 \
                      whenMatches(op ".float_int(float a, int b) -> float", [](ProcessedNode& p) { \
                        const double a = floatAt(p, 0);                                            \
                        const auto b = static_cast<double>(intAt(p, 1));                           \
                        p.output(0) = (expression);                                                \
                      }))

} // namespace

// --- Tensor metadata ---------------------------------------------------------------------------

SRT_REGISTER_KERNEL("aten::size", kNative,
                    whenMatches("aten::size(Tensor self) -> int[]",
                                [](ProcessedNode& p) { p.output(0) = tensor(p).sizes().vec(); }));
SRT_REGISTER_KERNEL("aten::size", kNative,
                    whenMatches("aten::size.int(Tensor self, int dim) -> int",
                                [](ProcessedNode& p) {
                                  const at::Tensor& t = tensor(p);
                                  p.output(0) =
                                      t.size(c10::maybe_wrap_dim(intAt(p, 1), t.dim(), false));
                                }));
// len(t): the size of the first dim, as Python's len of a tensor.
SRT_REGISTER_KERNEL("aten::len", kNative,
                    whenMatches("aten::len.Tensor(Tensor t) -> int", [](ProcessedNode& p) {
                      const at::Tensor& t = tensor(p);
                      TORCH_CHECK(t.dim() > 0, "len() of a 0-d tensor");
                      p.output(0) = t.size(0);
                    }));
SRT_REGISTER_KERNEL("aten::dim", kNative,
                    always([](ProcessedNode& p) { p.output(0) = tensor(p).dim(); }));
SRT_REGISTER_KERNEL("aten::numel", kNative,
                    always([](ProcessedNode& p) { p.output(0) = tensor(p).numel(); }));
SRT_REGISTER_KERNEL("prim::dtype", kNative, always([](ProcessedNode& p) {
                      p.output(0) = static_cast<int64_t>(tensor(p).scalar_type());
                    }));
SRT_REGISTER_KERNEL("prim::device", kNative,
                    always([](ProcessedNode& p) { p.output(0) = tensor(p).device(); }));
// A device's type as Python's `device.type` spells it ("cpu", "cuda").
SRT_REGISTER_KERNEL("prim::type", kNative,
                    whenMatches("prim::type(Device self) -> str", [](ProcessedNode& p) {
                      p.output(0) = c10::DeviceTypeName(p.input(0).toDevice().type(),
                                                        /*lower_case=*/true);
                    }));
// isinstance(x, (A, B)) on a value whose static type leaves it open (a Union, Any): the script
// compiler decides the rest. torchvision's roi_align takes Union[Tensor, List[Tensor]] boxes.
SRT_REGISTER_KERNEL("prim::isinstance", kNative,
                    [](const torch::jit::Node* node,
                       const KernelOptions&) -> std::optional<KernelFunction> {
                      std::vector<c10::TypePtr> types = node->tys(c10::attr::types);
                      return KernelFunction([types = std::move(types)](ProcessedNode& p) {
                        const c10::TypePtr type = p.input(0).type();
                        p.output(0) =
                            std::any_of(types.begin(), types.end(), [&](const c10::TypePtr& t) {
                              return type->isSubtypeOf(*t);
                            });
                      });
                    });
SRT_REGISTER_KERNEL("prim::layout", kNative,
                    always([](ProcessedNode& p) { p.output(0) = tensor(p).layout(); }));
SRT_REGISTER_KERNEL("aten::is_floating_point", kNative,
                    always([](ProcessedNode& p) { p.output(0) = tensor(p).is_floating_point(); }));
SRT_REGISTER_KERNEL("prim::is_cuda", kNative,
                    always([](ProcessedNode& p) { p.output(0) = tensor(p).is_cuda(); }));
SRT_REGISTER_KERNEL("prim::is_nested", kNative,
                    always([](ProcessedNode& p) { p.output(0) = tensor(p).is_nested(); }));
SRT_REGISTER_KERNEL("prim::requires_grad", kNative,
                    always([](ProcessedNode& p) { p.output(0) = tensor(p).requires_grad(); }));
SRT_REGISTER_KERNEL("aten::is_grad_enabled", kNative,
                    always([](ProcessedNode& p) { p.output(0) = c10::GradMode::is_enabled(); }));
SRT_REGISTER_KERNEL("aten::is_autocast_enabled", kNative,
                    always([](ProcessedNode& p) { p.output(0) = at::autocast::is_enabled(); }));

// --- Casts -------------------------------------------------------------------------------------

SRT_REGISTER_KERNEL("prim::NumToTensor", kNative,
                    whenMatches("prim::NumToTensor.Scalar(Scalar a) -> Tensor",
                                [](ProcessedNode& p) {
                                  p.output(0) = at::scalar_to_tensor(p.input(0).toScalar());
                                }));
SRT_REGISTER_KERNEL("prim::NumToTensor", kNative,
                    whenMatches("prim::NumToTensor.bool(bool a) -> Tensor", [](ProcessedNode& p) {
                      p.output(0) = at::scalar_to_tensor(p.input(0).toBool());
                    }));
SRT_REGISTER_KERNEL("aten::Int", kNative,
                    whenMatches("aten::Int.Tensor(Tensor a) -> int",
                                [](ProcessedNode& p) { p.output(0) = tensor(p).item<int64_t>(); }));
// A 0-dim integer tensor passed where an int is expected (torchvision's roi_heads), with the
// JIT's checks.
SRT_REGISTER_KERNEL("aten::IntImplicit", kNative, always([](ProcessedNode& p) {
                      const at::Tensor& a = tensor(p);
                      TORCH_CHECK(!a.requires_grad(),
                                  "Cannot input a tensor that requires grad as a scalar argument");
                      TORCH_CHECK(a.dim() == 0, "Cannot input a tensor of dimension other than 0 ",
                                  "as a scalar argument");
                      TORCH_CHECK(at::isIntegralType(a.scalar_type(), /*includeBool=*/false),
                                  "Cannot input a tensor of type ", a.scalar_type(),
                                  " as an integral argument");
                      p.output(0) = a.item<int64_t>();
                    }));
SRT_REGISTER_KERNEL("aten::Int", kNative,
                    whenMatches("aten::Int.float(float a) -> int", [](ProcessedNode& p) {
                      p.output(0) = static_cast<int64_t>(floatAt(p, 0));
                    }));
SRT_REGISTER_KERNEL("aten::Int", kNative,
                    whenMatches("aten::Int.bool(bool a) -> int", [](ProcessedNode& p) {
                      p.output(0) = static_cast<int64_t>(p.input(0).toBool());
                    }));
SRT_REGISTER_KERNEL("aten::Int", kNative,
                    whenMatches("aten::Int.Scalar(Scalar a) -> int", [](ProcessedNode& p) {
                      const c10::IValue& a = p.input(0);
                      p.output(0) =
                          a.isInt() ? a.toInt() : static_cast<int64_t>(a.toScalar().toDouble());
                    }));
// item / ScalarImplicit: the one element of a tensor as an int, float or bool.
SRT_REGISTER_KERNEL("aten::item", kNative,
                    always([](ProcessedNode& p) { p.output(0) = tensor(p).item(); }));
SRT_REGISTER_KERNEL("aten::ScalarImplicit", kNative, always([](ProcessedNode& p) {
                      const at::Tensor& t = tensor(p);
                      TORCH_CHECK(t.dim() == 0, "Cannot convert a tensor of dimension ", t.dim(),
                                  " to Scalar (aten::ScalarImplicit)");
                      p.output(0) = t.item();
                    }));
SRT_REGISTER_KERNEL("aten::Float", kNative,
                    whenMatches("aten::Float.Tensor(Tensor a) -> float",
                                [](ProcessedNode& p) { p.output(0) = tensor(p).item<double>(); }));
SRT_REGISTER_KERNEL("aten::Float", kNative,
                    whenMatches("aten::Float.int(int a) -> float", [](ProcessedNode& p) {
                      p.output(0) = static_cast<double>(intAt(p, 0));
                    }));
SRT_REGISTER_KERNEL("aten::Float", kNative,
                    whenMatches("aten::Float.bool(bool a) -> float", [](ProcessedNode& p) {
                      p.output(0) = p.input(0).toBool() ? 1.0 : 0.0;
                    }));
SRT_REGISTER_KERNEL("aten::Float", kNative,
                    whenMatches("aten::Float.Scalar(Scalar a) -> float", [](ProcessedNode& p) {
                      p.output(0) = p.input(0).toScalar().toDouble();
                    }));
SRT_REGISTER_KERNEL("aten::Bool", kNative,
                    whenMatches("aten::Bool.Tensor(Tensor a) -> bool",
                                [](ProcessedNode& p) { p.output(0) = tensor(p).is_nonzero(); }));
SRT_REGISTER_KERNEL("aten::Bool", kNative,
                    whenMatches("aten::Bool.int(int a) -> bool",
                                [](ProcessedNode& p) { p.output(0) = intAt(p, 0) != 0; }));
SRT_REGISTER_KERNEL("aten::Bool", kNative,
                    whenMatches("aten::Bool.float(float a) -> bool",
                                [](ProcessedNode& p) { p.output(0) = floatAt(p, 0) != 0.0; }));

// --- int and float arithmetic ------------------------------------------------------------------

SRT_INT_BINARY("aten::add", "int", a + b);
SRT_INT_BINARY("aten::sub", "int", a - b);
SRT_INT_BINARY("aten::mul", "int", a* b);
SRT_INT_BINARY("aten::floordiv", "int", floorDivide(a, b));
SRT_INT_BINARY("aten::remainder", "int", pythonModulo(a, b));
SRT_INT_BINARY("aten::div", "float", static_cast<double>(a) / static_cast<double>(b));
SRT_INT_BINARY("aten::__and__", "int", a& b);
SRT_INT_BINARY("aten::__or__", "int", a | b);
SRT_INT_BINARY("aten::__xor__", "int", a ^ b);
SRT_FLOAT_BINARY("aten::add", "float", a + b);
SRT_FLOAT_BINARY("aten::sub", "float", a - b);
SRT_FLOAT_BINARY("aten::mul", "float", a* b);
SRT_FLOAT_BINARY("aten::div", "float", a / b);
SRT_FLOAT_BINARY("aten::floordiv", "float", floorDivide(a, b));
SRT_MIXED_BINARY("aten::add", a + b);
SRT_MIXED_BINARY("aten::sub", a - b);
SRT_MIXED_BINARY("aten::mul", a* b);
SRT_REGISTER_KERNEL("aten::div", kNative,
                    whenMatches("aten::div(Scalar a, Scalar b) -> float", [](ProcessedNode& p) {
                      p.output(0) =
                          p.input(0).toScalar().toDouble() / p.input(1).toScalar().toDouble();
                    }));

// `for i in range(lo, hi, step)` loops run over [0, __range_length) and derive i from the count.
SRT_REGISTER_KERNEL("aten::__range_length", kNative, always([](ProcessedNode& p) {
                      const int64_t lo = intAt(p, 0);
                      const int64_t hi = intAt(p, 1);
                      const int64_t step = intAt(p, 2);
                      TORCH_CHECK(step != 0, "range() arg 3 must not be zero");
                      int64_t length = 0;
                      if (step > 0 && lo < hi) {
                        length = 1 + (hi - 1 - lo) / step;
                      } else if (step < 0 && lo > hi) {
                        length = 1 + (lo - 1 - hi) / (-step);
                      }
                      p.output(0) = length;
                    }));
SRT_REGISTER_KERNEL("aten::__derive_index", kNative, always([](ProcessedNode& p) {
                      p.output(0) = intAt(p, 1) + intAt(p, 0) * intAt(p, 2);
                    }));
SRT_REGISTER_KERNEL("aten::neg", kNative,
                    whenMatches("aten::neg.int(int a) -> int",
                                [](ProcessedNode& p) { p.output(0) = -intAt(p, 0); }));
SRT_REGISTER_KERNEL("aten::neg", kNative,
                    whenMatches("aten::neg.float(float a) -> float",
                                [](ProcessedNode& p) { p.output(0) = -floatAt(p, 0); }));
// A Scalar stays the number it was: torchvision's `-torch.log2(torch.tensor(scale)).item()`.
SRT_REGISTER_KERNEL("aten::neg", kNative,
                    whenMatches("aten::neg.Scalar(Scalar a) -> Scalar", [](ProcessedNode& p) {
                      const c10::IValue& a = p.input(0);
                      p.output(0) =
                          a.isInt() ? c10::IValue(-a.toInt()) : c10::IValue(-a.toDouble());
                    }));
SRT_REGISTER_KERNEL("aten::sqrt", kNative,
                    whenMatches("aten::sqrt.int(int a) -> float", [](ProcessedNode& p) {
                      p.output(0) = std::sqrt(static_cast<double>(intAt(p, 0)));
                    }));
SRT_REGISTER_KERNEL("aten::sqrt", kNative,
                    whenMatches("aten::sqrt.float(float a) -> float",
                                [](ProcessedNode& p) { p.output(0) = std::sqrt(floatAt(p, 0)); }));
// Python's `**` on numbers, as the JIT computes it (std::pow in double; 0 to a negative power is
// an error rather than inf).
template <typename A, typename B> void powNumbers(ProcessedNode& p) {
  const A a = p.input(0).to<A>();
  const B b = p.input(1).to<B>();
  TORCH_CHECK(!(a == 0 && b < 0), "0.0 cannot be raised to a negative power");
  p.output(0) = static_cast<double>(std::pow(a, b));
}
SRT_REGISTER_KERNEL("aten::pow", kNative,
                    whenMatches("aten::pow.int(int a, int b) -> float",
                                powNumbers<int64_t, int64_t>));
SRT_REGISTER_KERNEL("aten::pow", kNative,
                    whenMatches("aten::pow.float(float a, float b) -> float",
                                powNumbers<double, double>));
SRT_REGISTER_KERNEL("aten::pow", kNative,
                    whenMatches("aten::pow.int_float(int a, float b) -> float",
                                powNumbers<int64_t, double>));
SRT_REGISTER_KERNEL("aten::pow", kNative,
                    whenMatches("aten::pow.float_int(float a, int b) -> float",
                                powNumbers<double, int64_t>));
SRT_REGISTER_KERNEL("aten::pow", kNative,
                    whenMatches("aten::pow.int_to_int(int a, int b) -> int", [](ProcessedNode& p) {
                      int64_t base = intAt(p, 0);
                      int64_t exponent = intAt(p, 1);
                      TORCH_CHECK(exponent >= 0,
                                  "Integers to negative integer powers are not allowed.");
                      int64_t result = 1;
                      for (; exponent > 0; exponent >>= 1, base *= base) {
                        if (exponent & 1) {
                          result *= base;
                        }
                      }
                      p.output(0) = result;
                    }));
SRT_REGISTER_KERNEL("aten::ceil", kNative,
                    whenMatches("aten::ceil.float(float a) -> int", [](ProcessedNode& p) {
                      p.output(0) = static_cast<int64_t>(std::ceil(floatAt(p, 0)));
                    }));
SRT_REGISTER_KERNEL("aten::floor", kNative,
                    whenMatches("aten::floor.float(float a) -> int", [](ProcessedNode& p) {
                      p.output(0) = static_cast<int64_t>(std::floor(floatAt(p, 0)));
                    }));
SRT_REGISTER_KERNEL("aten::ceil", kNative,
                    whenMatches("aten::ceil.int(int a) -> int",
                                [](ProcessedNode& p) { p.output(0) = intAt(p, 0); }));
SRT_REGISTER_KERNEL("aten::floor", kNative,
                    whenMatches("aten::floor.int(int a) -> int",
                                [](ProcessedNode& p) { p.output(0) = intAt(p, 0); }));
// Python's min/max of two numbers, a float if either is one, picked as TorchScript picks them
// (`a < b ? a : b`), so a NaN comes out where the interpreter's does.
SRT_INT_BINARY("prim::min", "int", a < b ? a : b);
SRT_INT_BINARY("prim::max", "int", a > b ? a : b);
SRT_FLOAT_BINARY("prim::min", "float", a < b ? a : b);
SRT_FLOAT_BINARY("prim::max", "float", a > b ? a : b);
SRT_MIXED_BINARY("prim::min", a < b ? a : b);
SRT_MIXED_BINARY("prim::max", a > b ? a : b);

// --- Comparisons -------------------------------------------------------------------------------

SRT_INT_BINARY("aten::eq", "bool", a == b);
SRT_INT_BINARY("aten::ne", "bool", a != b);
SRT_INT_BINARY("aten::lt", "bool", a < b);
SRT_INT_BINARY("aten::le", "bool", a <= b);
SRT_INT_BINARY("aten::gt", "bool", a > b);
SRT_INT_BINARY("aten::ge", "bool", a >= b);
SRT_FLOAT_BINARY("aten::eq", "bool", a == b);
SRT_FLOAT_BINARY("aten::ne", "bool", a != b);
SRT_FLOAT_BINARY("aten::lt", "bool", a < b);
SRT_FLOAT_BINARY("aten::le", "bool", a <= b);
SRT_FLOAT_BINARY("aten::gt", "bool", a > b);
SRT_FLOAT_BINARY("aten::ge", "bool", a >= b);

SRT_REGISTER_KERNEL("aten::eq", kNative,
                    whenMatches("aten::eq.bool(bool a, bool b) -> bool", [](ProcessedNode& p) {
                      p.output(0) = p.input(0).toBool() == p.input(1).toBool();
                    }));
SRT_REGISTER_KERNEL("aten::ne", kNative,
                    whenMatches("aten::ne.bool(bool a, bool b) -> bool", [](ProcessedNode& p) {
                      p.output(0) = p.input(0).toBool() != p.input(1).toBool();
                    }));
SRT_REGISTER_KERNEL("aten::eq", kNative,
                    whenMatches("aten::eq.device(Device a, Device b) -> bool",
                                [](ProcessedNode& p) {
                                  p.output(0) = p.input(0).toDevice() == p.input(1).toDevice();
                                }));
SRT_REGISTER_KERNEL("aten::ne", kNative,
                    whenMatches("aten::ne.device(Device a, Device b) -> bool",
                                [](ProcessedNode& p) {
                                  p.output(0) = p.input(0).toDevice() != p.input(1).toDevice();
                                }));

// --- bool logic and identity -------------------------------------------------------------------

SRT_REGISTER_KERNEL("aten::__not__", kNative,
                    always([](ProcessedNode& p) { p.output(0) = !p.input(0).toBool(); }));
SRT_REGISTER_KERNEL("aten::__and__", kNative,
                    whenMatches("aten::__and__.bool(bool a, bool b) -> bool", [](ProcessedNode& p) {
                      p.output(0) = p.input(0).toBool() && p.input(1).toBool();
                    }));
SRT_REGISTER_KERNEL("aten::__or__", kNative,
                    whenMatches("aten::__or__.bool(bool a, bool b) -> bool", [](ProcessedNode& p) {
                      p.output(0) = p.input(0).toBool() || p.input(1).toBool();
                    }));
SRT_REGISTER_KERNEL("aten::__xor__", kNative,
                    whenMatches("aten::__xor__.bool(bool a, bool b) -> bool", [](ProcessedNode& p) {
                      p.output(0) = p.input(0).toBool() != p.input(1).toBool();
                    }));
SRT_REGISTER_KERNEL("aten::__is__", kNative,
                    always([](ProcessedNode& p) { p.output(0) = p.input(0).is(p.input(1)); }));
SRT_REGISTER_KERNEL("aten::__isnot__", kNative,
                    always([](ProcessedNode& p) { p.output(0) = !p.input(0).is(p.input(1)); }));
SRT_REGISTER_KERNEL("prim::unchecked_cast", kNative,
                    always([](ProcessedNode& p) { p.output(0) = p.input(0); }));
SRT_REGISTER_KERNEL("prim::Uninitialized", kNative,
                    always([](ProcessedNode& p) { p.output(0) = c10::IValue::uninitialized(); }));

} // namespace srt::ops
