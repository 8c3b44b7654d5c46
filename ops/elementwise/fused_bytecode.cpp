// Compiles a fused_elementwise program to bytecode, and runs bytecode on the CPU capability ATen
// uses, split over intra-op threads.
#include "ops/elementwise/fused_bytecode.h"

#include <cmath>
#include <cstring>

#include "ops/core/parallelism.h"
#include "ops/elementwise/fused_program.h"
#include "ops/elementwise/vectorized_loops.h"

namespace srt::ops::fused {

// One declaration per build of ops/elementwise/cpu/fused_loops.cpp (cmake/CpuKernels.cmake).
#define SRT_DECLARE_CAPABILITY_RANGE(capability)                                                   \
  namespace capability {                                                                           \
  void runRange(const Bytecode& code, const InputBinding* inputs, float* out, int64_t begin,       \
                int64_t end);                                                                      \
  }
SRT_DECLARE_CAPABILITY_RANGE(DEFAULT)
SRT_DECLARE_CAPABILITY_RANGE(AVX2)
SRT_DECLARE_CAPABILITY_RANGE(AVX512)
#undef SRT_DECLARE_CAPABILITY_RANGE

namespace {

// A literal as a float32 kernel sees it: cast like TensorIterator casts a CPU scalar operand.
float toFloat(const c10::Scalar& number) {
  return number.isFloatingPoint() ? static_cast<float>(number.toDouble())
                                  : static_cast<float>(number.toLong());
}

// The operand positions that are values (tensors, scalars, temps or number literals) rather
// than parameters folded into the step.
size_t numValueOperands(OpKind op) {
  switch (op) {
  case OpKind::kAdd:
  case OpKind::kSub:
  case OpKind::kRsub:
  case OpKind::kMul:
  case OpKind::kDiv:
  case OpKind::kGt:
  case OpKind::kLt:
  case OpKind::kGe:
  case OpKind::kLe:
  case OpKind::kEq:
  case OpKind::kNe:
    return 2;
  case OpKind::kWhere:
    return 3;
  default:
    return 1;
  }
}

// Ops whose step is one formula with no parameter.
std::optional<Formula> directFormula(OpKind op) {
  switch (op) {
  case OpKind::kRelu:
    return vec::UnaryOp::kRelu;
  case OpKind::kSigmoid:
    return vec::UnaryOp::kSigmoid;
  case OpKind::kTanh:
    return vec::UnaryOp::kTanh;
  case OpKind::kExp:
    return vec::UnaryOp::kExp;
  case OpKind::kLog:
    return vec::UnaryOp::kLog;
  case OpKind::kSqrt:
    return vec::UnaryOp::kSqrt;
  case OpKind::kRsqrt:
    return vec::UnaryOp::kRsqrt;
  case OpKind::kNeg:
    return vec::UnaryOp::kNeg;
  case OpKind::kAbs:
    return vec::UnaryOp::kAbs;
  case OpKind::kReciprocal:
    return vec::UnaryOp::kReciprocal;
  case OpKind::kSilu:
    return vec::UnaryOp::kSilu;
  case OpKind::kHardswish:
    return vec::UnaryOp::kHardswish;
  case OpKind::kHardsigmoid:
    return vec::UnaryOp::kHardsigmoid;
  case OpKind::kMul:
    return vec::BinaryOp::kMul;
  case OpKind::kDiv:
    return vec::BinaryOp::kDiv;
  case OpKind::kGt:
    return vec::BinaryOp::kGt;
  case OpKind::kLt:
    return vec::BinaryOp::kLt;
  case OpKind::kGe:
    return vec::BinaryOp::kGe;
  case OpKind::kLe:
    return vec::BinaryOp::kLe;
  case OpKind::kEq:
    return vec::BinaryOp::kEq;
  case OpKind::kNe:
    return vec::BinaryOp::kNe;
  case OpKind::kWhere:
    return vec::TernaryOp::kWhere;
  default:
    return std::nullopt;
  }
}

class Compiler {
public:
  Compiler(const Program& program, uint32_t num_inputs)
      : program_(program), last_use_(program.code.size(), 0) {
    code_.num_inputs = num_inputs;
  }

  std::optional<Bytecode> compile(std::string* why) {
    const std::string problem = check();
    if (!problem.empty()) {
      if (why != nullptr) {
        *why = problem;
      }
      return std::nullopt;
    }
    // Constants first: registers are numbered after them.
    for (const Instruction& instruction : program_.code) {
      for (size_t k = 0; k < numValueOperands(instruction.op); ++k) {
        if (instruction.args[k].kind == Operand::Kind::kNumber) {
          constantSlot(toFloat(instruction.args[k].number));
        }
      }
    }
    temp_register_.assign(program_.code.size(), 0);
    for (size_t i = 0; i < program_.code.size(); ++i) {
      emit(i);
    }
    if (code_.firstRegisterSlot() + code_.num_registers > kMaxBuffers) {
      if (why != nullptr) {
        *why = "the program needs " +
               std::to_string(code_.firstRegisterSlot() + code_.num_registers) +
               " buffers, more than the " + std::to_string(kMaxBuffers) + " the loops hold";
      }
      return std::nullopt;
    }
    return std::move(code_);
  }

private:
  // What the float32 fast path cannot run; "" when it can.
  std::string check() {
    if (program_.num_inputs > code_.num_inputs) {
      return "the program reads x" + std::to_string(program_.num_inputs - 1) + " of " +
             std::to_string(code_.num_inputs) + " inputs";
    }
    for (size_t i = 0; i < program_.code.size(); ++i) {
      const Instruction& instruction = program_.code[i];
      for (size_t k = 0; k < instruction.args.size(); ++k) {
        const Operand& operand = instruction.args[k];
        const bool is_condition = instruction.op == OpKind::kWhere && k == 0;
        const bool is_bool =
            operand.kind == Operand::Kind::kTemp && returnsBool(program_.code[operand.index].op);
        if (is_condition != is_bool) {
          return is_condition ? "where's condition is not computed by a comparison"
                              : "a comparison's result is used other than as where's condition";
        }
        if (operand.kind == Operand::Kind::kTemp) {
          last_use_[operand.index] = i;
        }
      }
      if (instruction.op == OpKind::kClamp || instruction.op == OpKind::kClampMin ||
          instruction.op == OpKind::kClampMax) {
        bool any_bound = false;
        for (size_t k = 1; k < instruction.args.size(); ++k) {
          const Operand& bound = instruction.args[k];
          if (bound.kind == Operand::Kind::kNumber) {
            any_bound = true;
            if (std::isnan(bound.number.toDouble())) {
              return "a NaN clamp bound"; // ATen fills NaN; left to ATen
            }
          }
        }
        if (!any_bound) {
          return "clamp without bounds";
        }
      }
    }
    if (returnsBool(program_.code.back().op)) {
      return "the result is a bool tensor";
    }
    if (code_.num_inputs > kMaxInputs) {
      return "more than " + std::to_string(kMaxInputs) + " inputs";
    }
    if (code_.num_inputs + program_.code.size() > kMaxBuffers) {
      return "too many inputs and values for the loops' buffers";
    }
    return "";
  }

  uint8_t constantSlot(float value) {
    for (size_t i = 0; i < code_.constants.size(); ++i) {
      if (std::memcmp(&code_.constants[i], &value, sizeof(float)) == 0) {
        return static_cast<uint8_t>(code_.firstConstantSlot() + i);
      }
    }
    code_.constants.push_back(value);
    return static_cast<uint8_t>(code_.firstConstantSlot() + code_.constants.size() - 1);
  }

  uint8_t slot(const Operand& operand) {
    switch (operand.kind) {
    case Operand::Kind::kInput:
      return static_cast<uint8_t>(operand.index);
    case Operand::Kind::kNumber:
      return constantSlot(toFloat(operand.number));
    case Operand::Kind::kTemp:
      return static_cast<uint8_t>(code_.firstRegisterSlot() + temp_register_[operand.index]);
    default:
      TORCH_INTERNAL_ASSERT(false, "fused_elementwise: a parameter used as a value");
    }
  }

  void emit(size_t i) {
    const Instruction& instruction = program_.code[i];
    const std::vector<Operand>& args = instruction.args;
    Step step = makeStep(instruction);
    const size_t num_values = numValueOperands(instruction.op);
    for (size_t k = 0; k < num_values; ++k) {
      step.src[k] = slot(args[k]);
    }
    if (instruction.op == OpKind::kRsub) { // other - alpha * self
      std::swap(step.src[0], step.src[1]);
    }
    // An operand's register is free once this step has read it: steps are element-wise, so
    // the step may write the register it reads.
    for (size_t k = 0; k < num_values; ++k) {
      if (args[k].kind == Operand::Kind::kTemp && last_use_[args[k].index] == i) {
        busy_[temp_register_[args[k].index]] = false;
      }
    }
    if (i + 1 == program_.code.size()) {
      step.dst = kOutputSlot;
    } else {
      size_t reg = 0;
      while (reg < busy_.size() && busy_[reg]) {
        ++reg;
      }
      if (reg == busy_.size()) {
        busy_.push_back(false);
      }
      busy_[reg] = true;
      temp_register_[i] = static_cast<uint32_t>(reg);
      code_.num_registers = static_cast<uint32_t>(busy_.size());
      step.dst = static_cast<uint8_t>(code_.firstRegisterSlot() + reg);
    }
    code_.steps.push_back(step);
  }

  static Step makeStep(const Instruction& instruction) {
    const std::vector<Operand>& args = instruction.args;
    auto number = [&](size_t k, double otherwise) {
      return k < args.size() ? args[k].number : c10::Scalar(otherwise);
    };
    auto step = [](Formula formula, float a = 0.f, float b = 0.f) {
      Step made{formula, 0};
      made.a = a;
      made.b = b;
      return made;
    };
    switch (instruction.op) {
    case OpKind::kAdd:
    case OpKind::kSub:
    case OpKind::kRsub: {
      const float alpha = toFloat(number(2, 1.0));
      return step(vec::BinaryOp::kAdd, instruction.op == OpKind::kAdd ? alpha : -alpha);
    }
    case OpKind::kGelu:
      return step(args.size() > 1 && args[1].text == "tanh" ? vec::UnaryOp::kGeluTanh
                                                            : vec::UnaryOp::kGelu);
    case OpKind::kLeakyRelu:
      return step(vec::UnaryOp::kLeakyRelu, toFloat(number(1, 0.01)));
    case OpKind::kClamp:
    case OpKind::kClampMin:
    case OpKind::kClampMax: {
      const bool has_min =
          instruction.op != OpKind::kClampMax && args[1].kind == Operand::Kind::kNumber;
      const Operand& max_operand = args[instruction.op == OpKind::kClamp ? 2 : 1];
      const bool has_max =
          instruction.op != OpKind::kClampMin && max_operand.kind == Operand::Kind::kNumber;
      const vec::UnaryOp op = has_min && has_max ? vec::UnaryOp::kClamp
                              : has_min          ? vec::UnaryOp::kClampMin
                                                 : vec::UnaryOp::kClampMax;
      return step(op, has_min ? toFloat(args[1].number) : 0.f,
                  has_max ? toFloat(max_operand.number) : 0.f);
    }
    case OpKind::kPow: {
      vec::Params params;
      const vec::UnaryOp op = vec::powFormula(args[1].number.toDouble(), &params);
      return step(op, params.a);
    }
    default: {
      const std::optional<Formula> formula = directFormula(instruction.op);
      TORCH_INTERNAL_ASSERT(formula.has_value(), "fused_elementwise: no formula for ",
                            opName(instruction.op));
      return step(*formula);
    }
    }
  }

  const Program& program_;
  Bytecode code_;
  std::vector<size_t> last_use_;
  std::vector<uint32_t> temp_register_;
  std::vector<bool> busy_;
};

RangeFunction pickRangeFunction() {
  // The capability ATen's own kernels use (ops/elementwise/vectorized_loops.cpp picks it): the
  // Sleef routines differ between capabilities, and fused results should match unfused ones.
  const std::string capability = vec::capability();
  if (capability == "AVX512") {
    return AVX512::runRange;
  }
  if (capability == "AVX2") {
    return AVX2::runRange;
  }
  return DEFAULT::runRange;
}

// ATen's at::internal::GRAIN_SIZE: the least a task gets once the work is split.
constexpr int64_t kGrainSize = 32768;

} // namespace

std::optional<Bytecode> compile(const Program& program, uint32_t num_inputs, std::string* why) {
  return Compiler(program, num_inputs).compile(why);
}

void run(const Bytecode& code, const InputBinding* inputs, float* out, int64_t numel,
         WorkerPool* workers) {
  static const RangeFunction range = pickRangeFunction();
  const double single_thread_ns =
      static_cast<double>(numel) * static_cast<double>(code.steps.size()) * kNanosecondsPerElement;
  splitIfWorthIt(workers, numel, kGrainSize, single_thread_ns,
                 [&](int64_t begin, int64_t end) { range(code, inputs, out, begin, end); });
}

} // namespace srt::ops::fused
