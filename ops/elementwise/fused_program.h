// The program of an srt::fused_elementwise node: a chain of element-wise ATen ops written as one
// printable expression, e.g.
//
//   t0 = add(x0, x1); mul(t0, sigmoid(mul(t0, 1.702)))
//
// `xK` is the node's K-th tensor or scalar input, `tK` a value bound earlier by `tK = expr;`
// (written only for values used more than once), literals are numbers (an int has no '.' or
// exponent: it promotes as a Python int does), None, or a quoted string. The last expression is
// the result. Operand positions follow the ATen schemas the ops came from, so the program runs
// with ATen ops as written (the reference) and compiles to the vectorized kernel.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <c10/core/Scalar.h>

namespace srt::ops::fused {

enum class OpKind : uint8_t {
  // (self, other[, alpha]): self + alpha * other, self - alpha * other, other - alpha * self.
  kAdd,
  kSub,
  kRsub,
  // (self, other)
  kMul,
  kDiv,
  // (self)
  kRelu,
  kSigmoid,
  kTanh,
  kExp,
  kLog,
  kSqrt,
  kRsqrt,
  kNeg,
  kAbs,
  kReciprocal,
  kSilu,
  kHardswish,
  kHardsigmoid,
  // (self[, 'tanh'])
  kGelu,
  // (self[, negative_slope])
  kLeakyRelu,
  // (self, min or None, max or None), (self, min), (self, max)
  kClamp,
  kClampMin,
  kClampMax,
  // (self, exponent)
  kPow,
  // (self, other) -> bool
  kGt,
  kLt,
  kGe,
  kLe,
  kEq,
  kNe,
  // (condition, self, other)
  kWhere,
};

struct Operand {
  enum class Kind : uint8_t {
    kInput,  // the node's input `index`
    kTemp,   // the result of instruction `index`
    kNumber, // `number`: an int64 or a double literal
    kNone,
    kString, // `text`
  };
  Kind kind = Kind::kNone;
  uint32_t index = 0;
  c10::Scalar number;
  std::string text;

  static Operand input(uint32_t i) { return {Kind::kInput, i, {}, {}}; }
  static Operand temp(uint32_t i) { return {Kind::kTemp, i, {}, {}}; }
  static Operand literal(const c10::Scalar& value) { return {Kind::kNumber, 0, value, {}}; }
  static Operand none() { return {}; }
  static Operand string(std::string value) { return {Kind::kString, 0, {}, std::move(value)}; }

  bool isValue() const { return kind == Kind::kInput || kind == Kind::kTemp; }
};

struct Instruction {
  OpKind op;
  std::vector<Operand> args;
};

// Straight-line code in evaluation order; instruction i defines temp i, the last one is the
// result. Every temp is used after it is defined.
struct Program {
  std::vector<Instruction> code;
  // 1 + the highest input index the program reads.
  uint32_t num_inputs = 0;
};

// The op's name in program text ("add", "clamp_min", ...), and back.
const char* opName(OpKind op);
std::optional<OpKind> opFromName(std::string_view name);

// True when the op's result is a bool tensor (the comparisons).
bool returnsBool(OpKind op);

// Checks the operands of one instruction: arity, which positions take a value or a literal,
// which must be literals (alpha, bounds, exponent, ...). Returns "" or what is wrong.
std::string checkInstruction(const Instruction& instruction);

// Parses program text; throws a c10::Error naming the position and what was expected.
Program parseProgram(std::string_view text);

// The text parseProgram reads back into an equivalent program: temps used once are written
// inline, others bound to tK. Doubles print with enough digits to round-trip exactly.
std::string printProgram(const Program& program);

// A literal as program text: "2", "0.5", "1e-05", "-inf", "nan".
std::string printNumber(const c10::Scalar& number);

} // namespace srt::ops::fused
