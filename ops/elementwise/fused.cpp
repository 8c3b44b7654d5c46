// srt::fused_elementwise(str program, ...) -> Tensor: a chain of element-wise ops
// (passes/elementwise_fusion.cpp builds it) as one node. The inputs after the program are its xK
// (ops/elementwise/fused_program.h); `...` makes the op variadic, so running it builds no list.
//
// The JIT runs the reference implementation: the program's ATen ops, one after another. Our
// out-variant kernel compiles the program once per node and, when every tensor input is float32
// (any shape that broadcasts, any strides) and every scalar real, runs the bytecode over the
// output in L1-sized blocks (ops/elementwise/fused_bytecode.h), in the output's memory order: laid
// out like its inputs of its own shape where they agree on a dense layout (channels last, a
// permuted view), as ATen lays out an element-wise result, else contiguous. Anything else (other
// dtypes, complex scalars) runs the reference: same results, same node.
#include <algorithm>
#include <array>
#include <limits>
#include <memory>
#include <numeric>
#include <vector>

#include <ATen/ATen.h>
#include <ATen/core/stack.h>
#include <c10/util/accumulate.h>
#include <torch/csrc/jit/ir/constants.h>
#include <torch/csrc/jit/ir/ir.h>
#include <torch/library.h>

#include "ops/core/registry.h"
#include "ops/elementwise/fast_path.h"
#include "ops/elementwise/fused_bytecode.h"
#include "ops/elementwise/fused_program.h"

namespace srt::ops::fused {
namespace {

// ---------------------------------------------------------------------------------------------
// Reference: the program's ATen ops

class Reference {
public:
  Reference(const Program& program, c10::ArrayRef<c10::IValue> inputs)
      : program_(program), inputs_(inputs) {
    TORCH_CHECK(program.num_inputs <= inputs.size(), "srt::fused_elementwise: the program reads x",
                program.num_inputs - 1, " but the node has ", inputs.size(), " inputs");
  }

  at::Tensor run() {
    temps_.reserve(program_.code.size());
    for (const Instruction& instruction : program_.code) {
      try {
        temps_.emplace_back(apply(instruction));
      } catch (const c10::Error& e) {
        // The node is the group's last op; name the fused op that failed.
        TORCH_CHECK(false, "aten::", opName(instruction.op), " (step ", temps_.size() + 1, " of ",
                    program_.code.size(), " of the fused program \"", printProgram(program_),
                    "\") failed: ", e.what_without_backtrace());
      }
    }
    return std::move(temps_.back()).toTensor();
  }

private:
  c10::IValue value(const Operand& operand) const {
    switch (operand.kind) {
    case Operand::Kind::kInput:
      return inputs_[operand.index];
    case Operand::Kind::kTemp:
      return temps_.at(operand.index);
    case Operand::Kind::kNumber:
      return operand.number;
    case Operand::Kind::kNone:
      return c10::IValue();
    case Operand::Kind::kString:
      return operand.text;
    }
    return c10::IValue();
  }

  at::Tensor tensor(const Instruction& instruction, size_t k) const {
    const c10::IValue v = value(instruction.args[k]);
    TORCH_CHECK(v.isTensor(), "srt::fused_elementwise: ", opName(instruction.op), " operand ", k,
                " must be a Tensor, got ", v.tagKind());
    return v.toTensor();
  }

  c10::Scalar number(const Instruction& instruction, size_t k, const c10::Scalar& otherwise) const {
    return k < instruction.args.size() ? instruction.args[k].number : otherwise;
  }

  c10::optional<c10::Scalar> bound(const Instruction& instruction, size_t k) const {
    const Operand& operand = instruction.args[k];
    return operand.kind == Operand::Kind::kNone ? c10::nullopt
                                                : c10::optional<c10::Scalar>(operand.number);
  }

  // An op with a Tensor and a Scalar overload: the one the operand's run-time kind names, as in
  // the graph the program came from.
  template <typename WithTensor, typename WithScalar>
  at::Tensor binary(const Instruction& instruction, const WithTensor& with_tensor,
                    const WithScalar& with_scalar) const {
    const at::Tensor self = tensor(instruction, 0);
    const c10::IValue other = value(instruction.args[1]);
    return other.isTensor() ? with_tensor(self, other.toTensor())
                            : with_scalar(self, other.toScalar());
  }

  at::Tensor apply(const Instruction& ins) const {
    const c10::Scalar one(int64_t{1});
    switch (ins.op) {
    case OpKind::kAdd: {
      const c10::Scalar alpha = number(ins, 2, one);
      return binary(
          ins, [&](const at::Tensor& a, const at::Tensor& b) { return at::add(a, b, alpha); },
          [&](const at::Tensor& a, const c10::Scalar& b) { return at::add(a, b, alpha); });
    }
    case OpKind::kSub: {
      const c10::Scalar alpha = number(ins, 2, one);
      return binary(
          ins, [&](const at::Tensor& a, const at::Tensor& b) { return at::sub(a, b, alpha); },
          [&](const at::Tensor& a, const c10::Scalar& b) { return at::sub(a, b, alpha); });
    }
    case OpKind::kRsub: {
      const c10::Scalar alpha = number(ins, 2, one);
      return binary(
          ins, [&](const at::Tensor& a, const at::Tensor& b) { return at::rsub(a, b, alpha); },
          [&](const at::Tensor& a, const c10::Scalar& b) { return at::rsub(a, b, alpha); });
    }
    case OpKind::kMul:
      return binary(
          ins, [](const at::Tensor& a, const at::Tensor& b) { return at::mul(a, b); },
          [](const at::Tensor& a, const c10::Scalar& b) { return at::mul(a, b); });
    case OpKind::kDiv:
      return binary(
          ins, [](const at::Tensor& a, const at::Tensor& b) { return at::div(a, b); },
          [](const at::Tensor& a, const c10::Scalar& b) { return at::div(a, b); });
    case OpKind::kRelu:
      return at::relu(tensor(ins, 0));
    case OpKind::kSigmoid:
      return at::sigmoid(tensor(ins, 0));
    case OpKind::kTanh:
      return at::tanh(tensor(ins, 0));
    case OpKind::kExp:
      return at::exp(tensor(ins, 0));
    case OpKind::kLog:
      return at::log(tensor(ins, 0));
    case OpKind::kSqrt:
      return at::sqrt(tensor(ins, 0));
    case OpKind::kRsqrt:
      return at::rsqrt(tensor(ins, 0));
    case OpKind::kNeg:
      return at::neg(tensor(ins, 0));
    case OpKind::kAbs:
      return at::abs(tensor(ins, 0));
    case OpKind::kReciprocal:
      return at::reciprocal(tensor(ins, 0));
    case OpKind::kSilu:
      return at::silu(tensor(ins, 0));
    case OpKind::kHardswish:
      return at::hardswish(tensor(ins, 0));
    case OpKind::kHardsigmoid:
      return at::hardsigmoid(tensor(ins, 0));
    case OpKind::kGelu:
      return at::gelu(tensor(ins, 0), ins.args.size() > 1 ? ins.args[1].text : "none");
    case OpKind::kLeakyRelu:
      return at::leaky_relu(tensor(ins, 0), number(ins, 1, 0.01));
    case OpKind::kClamp:
      return at::clamp(tensor(ins, 0), bound(ins, 1), bound(ins, 2));
    case OpKind::kClampMin:
      return at::clamp_min(tensor(ins, 0), ins.args[1].number);
    case OpKind::kClampMax:
      return at::clamp_max(tensor(ins, 0), ins.args[1].number);
    case OpKind::kPow:
      return at::pow(tensor(ins, 0), ins.args[1].number);
#define SRT_COMPARISON(kind, fn)                                                                   \
  case OpKind::kind:                                                                               \
    return binary(                                                                                 \
        ins, [](const at::Tensor& a, const at::Tensor& b) { return at::fn(a, b); },                \
        [](const at::Tensor& a, const c10::Scalar& b) { return at::fn(a, b); });
      SRT_COMPARISON(kGt, gt)
      SRT_COMPARISON(kLt, lt)
      SRT_COMPARISON(kGe, ge)
      SRT_COMPARISON(kLe, le)
      SRT_COMPARISON(kEq, eq)
      SRT_COMPARISON(kNe, ne)
#undef SRT_COMPARISON
    case OpKind::kWhere: {
      const at::Tensor condition = tensor(ins, 0);
      const c10::IValue self = value(ins.args[1]);
      const c10::IValue other = value(ins.args[2]);
      if (self.isTensor() && other.isTensor()) {
        return at::where(condition, self.toTensor(), other.toTensor());
      }
      if (self.isTensor()) {
        return at::where(condition, self.toTensor(), other.toScalar());
      }
      TORCH_CHECK(other.isTensor(), "srt::fused_elementwise: where needs a tensor self or other");
      return at::where(condition, self.toScalar(), other.toTensor());
    }
    }
    TORCH_INTERNAL_ASSERT(false, "srt::fused_elementwise: unhandled op ", opName(ins.op));
  }

  const Program& program_;
  c10::ArrayRef<c10::IValue> inputs_;
  std::vector<c10::IValue> temps_;
};

at::Tensor runReference(const Program& program, c10::ArrayRef<c10::IValue> inputs) {
  return Reference(program, inputs).run();
}

// The JIT's implementation. The interpreter pushes a vararg op's input count last.
void referenceOperator(const c10::OperatorHandle&, torch::jit::Stack* stack) {
  const int64_t count = torch::jit::pop(*stack).toInt();
  TORCH_CHECK(count >= 1 && static_cast<size_t>(count) <= stack->size(),
              "srt::fused_elementwise: called with ", count, " inputs on a stack of ",
              stack->size());
  const c10::ArrayRef<c10::IValue> args = torch::jit::last(*stack, count);
  at::Tensor result = runReference(parseProgram(args[0].toStringRef()), args.slice(1));
  torch::jit::drop(*stack, count);
  torch::jit::push(*stack, std::move(result));
}

// ---------------------------------------------------------------------------------------------
// Kernel

struct CompiledNode {
  Program program;
  std::optional<Bytecode> bytecode;
  // Inputs the program reads as an op's `self`: the reference requires tensors there, and so
  // does the fast path, to fail the same way.
  std::vector<bool> is_self;
};

// The output's sizes: the input tensors' broadcast together; false when they do not broadcast
// (the reference reports it).
bool broadcastSizes(const ProcessedNode& p, at::DimVector& sizes) {
  sizes.clear();
  for (size_t i = 1; i < p.numInputs(); ++i) {
    if (!p.input(i).isTensor()) {
      continue;
    }
    const at::IntArrayRef input = p.input(i).toTensor().sizes();
    if (input.size() > sizes.size()) {
      sizes.insert(sizes.begin(), input.size() - sizes.size(), 1);
    }
    const size_t lead = sizes.size() - input.size();
    for (size_t d = 0; d < input.size(); ++d) {
      int64_t& size = sizes[lead + d];
      if (size == 1) {
        size = input[d];
      } else if (input[d] != 1 && input[d] != size) {
        return false;
      }
    }
  }
  return true;
}

// How input `t` is read for an output of `sizes` walked in the dimension order `order` (outermost
// first: the output's memory order): streamed when laid out like the output, a single value, or
// gathered through `layout` (dimensions merged wherever the strides continue, so a [C] bias over
// [N, C] is one dimension of stride 0 over N and one of stride 1 over C). False when the merged
// layout still has more than kMaxDims dimensions.
bool bindTensor(const at::Tensor& t, at::IntArrayRef sizes, at::IntArrayRef order,
                InputBinding& binding, InputLayout& layout) {
  binding.layout = nullptr;
  if (t.numel() == 1) {
    binding.data = nullptr;
    binding.value = *static_cast<const float*>(t.data_ptr());
    return true;
  }
  binding.data = static_cast<const float*>(t.data_ptr());
  // Innermost first: merged sizes and strides, reversed at the end.
  at::DimVector merged_sizes;
  at::DimVector merged_strides;
  const int64_t lead = static_cast<int64_t>(sizes.size()) - t.dim();
  for (int64_t k = static_cast<int64_t>(order.size()) - 1; k >= 0; --k) {
    const int64_t d = order[k];
    if (sizes[d] == 1) {
      continue;
    }
    const int64_t stride = d < lead || t.size(d - lead) == 1 ? 0 : t.stride(d - lead);
    if (!merged_sizes.empty() && stride == merged_strides.back() * merged_sizes.back()) {
      merged_sizes.back() *= sizes[d];
      continue;
    }
    merged_sizes.push_back(sizes[d]);
    merged_strides.push_back(stride);
  }
  if (merged_sizes.size() == 1 && merged_strides[0] == 1) {
    return true; // laid out like the output
  }
  if (static_cast<int64_t>(merged_sizes.size()) > kMaxDims) {
    return false;
  }
  layout.ndim = static_cast<int64_t>(merged_sizes.size());
  for (int64_t d = 0; d < layout.ndim; ++d) {
    layout.sizes[d] = merged_sizes[layout.ndim - 1 - d];
    layout.strides[d] = merged_strides[layout.ndim - 1 - d];
  }
  binding.layout = &layout;
  return true;
}

// The input whose layout the output takes, as ATen's element-wise kernels lay their output out
// like their operands: the first tensor input of the output's sizes, where it is dense but not
// contiguous (channels last, or a permuted view such as ConvNeXt's blocks' output) and every
// other input of the output's sizes has its strides; nullptr otherwise (a contiguous output).
// A contiguous output here made every such node gather its inputs across the strides, 6x slower
// than streaming them, and the convolution after it convert the result back.
const at::Tensor* layoutSource(const ProcessedNode& p, at::IntArrayRef sizes) {
  const at::Tensor* source = nullptr;
  for (size_t i = 1; i < p.numInputs(); ++i) {
    if (!p.input(i).isTensor()) {
      continue;
    }
    const at::Tensor& t = p.input(i).toTensor();
    if (t.sizes() != sizes) {
      continue;
    }
    if (source == nullptr) {
      if (t.is_contiguous() || !t.is_non_overlapping_and_dense()) {
        return nullptr;
      }
      source = &t;
    } else if (t.strides() != source->strides()) {
      return nullptr;
    }
  }
  return source;
}

// The dimensions of `source` from the largest stride to the smallest (size-1 dimensions, whose
// strides say nothing, first): its memory order.
void memoryOrder(const at::Tensor& source, at::DimVector& order) {
  order.resize(source.dim());
  std::iota(order.begin(), order.end(), 0);
  const auto key = [&](int64_t d) {
    return source.size(d) == 1 ? std::numeric_limits<int64_t>::max() : source.stride(d);
  };
  std::stable_sort(order.begin(), order.end(),
                   [&](int64_t a, int64_t b) { return key(a) > key(b); });
}

// What one fast-path run reads: kept on the stack, so binding allocates nothing.
struct FastPathInputs {
  std::array<InputBinding, kMaxInputs> bindings;
  std::array<InputLayout, kMaxInputs> layouts;
  at::DimVector sizes;
  at::DimVector order;                       // the output's dimensions in its memory order
  const at::Tensor* layout_source = nullptr; // whose strides the output takes; null: contiguous
};

// Binds the inputs for the fast path and finds the output's sizes; false when an input is not a
// float32 CPU tensor or a real scalar, or its layout does not fit (the reference runs then).
bool bindFastPath(const ProcessedNode& p, const CompiledNode& compiled, FastPathInputs& fast) {
  const size_t num_inputs = p.numInputs() - 1;
  for (size_t i = 0; i < num_inputs; ++i) {
    const c10::IValue& input = p.input(i + 1);
    if (input.isTensor()) {
      const at::Tensor& t = input.toTensor();
      if (t.scalar_type() != at::kFloat || t.layout() != at::kStrided || !t.device().is_cpu() ||
          t.is_neg()) {
        return false;
      }
      continue;
    }
    if (compiled.is_self[i]) {
      return false; // an op's self must be a tensor: the reference names the problem
    }
    InputBinding& binding = fast.bindings[i];
    binding.data = nullptr;
    binding.layout = nullptr;
    if (input.isDouble()) {
      binding.value = static_cast<float>(input.toDouble());
    } else if (input.isInt()) {
      binding.value = static_cast<float>(input.toInt());
    } else if (input.isBool()) {
      binding.value = input.toBool() ? 1.f : 0.f;
    } else {
      return false;
    }
  }
  if (!broadcastSizes(p, fast.sizes)) {
    return false;
  }
  if (c10::multiply_integers(fast.sizes) == 0) {
    return true; // nothing to read
  }
  fast.layout_source = layoutSource(p, fast.sizes);
  if (fast.layout_source != nullptr) {
    memoryOrder(*fast.layout_source, fast.order);
  } else {
    fast.order.resize(fast.sizes.size());
    std::iota(fast.order.begin(), fast.order.end(), 0);
  }
  for (size_t i = 0; i < num_inputs; ++i) {
    const c10::IValue& input = p.input(i + 1);
    if (input.isTensor() &&
        !bindTensor(input.toTensor(), fast.sizes, fast.order, fast.bindings[i], fast.layouts[i])) {
      return false;
    }
  }
  return true;
}

void runNode(const CompiledNode& compiled, ProcessedNode& p) {
  const size_t num_inputs = p.numInputs() - 1;
  if (compiled.bytecode) {
    FastPathInputs fast;
    if (bindFastPath(p, compiled, fast)) {
      at::Tensor& out =
          fast.layout_source != nullptr
              ? outputTensor(p, 0, at::TensorOptions().dtype(at::kFloat))
              : contiguousOutput(p, 0, fast.sizes, at::TensorOptions().dtype(at::kFloat));
      if (fast.layout_source != nullptr) {
        resizePreservingLayout(out, *fast.layout_source);
      }
      if (out.numel() > 0) {
        run(*compiled.bytecode, fast.bindings.data(), floatData(out), out.numel(), p.workers());
      }
      return;
    }
  }
  std::vector<c10::IValue> inputs;
  inputs.reserve(num_inputs);
  for (size_t i = 0; i < num_inputs; ++i) {
    inputs.push_back(p.input(i + 1));
  }
  p.output(0) = runReference(compiled.program, inputs);
}

std::optional<KernelFunction> makeKernel(const torch::jit::Node* node, const KernelOptions&) {
  const c10::optional<c10::IValue> text = torch::jit::toIValue(node->input(0));
  if (!text || !text->isString()) {
    return std::nullopt; // a program known only at run time: the JIT operator parses it
  }
  auto compiled = std::make_shared<CompiledNode>();
  compiled->program = parseProgram(text->toStringRef());
  const auto num_inputs = static_cast<uint32_t>(node->inputs().size() - 1);
  TORCH_CHECK(compiled->program.num_inputs <= num_inputs, "srt::fused_elementwise: the program \"",
              text->toStringRef(), "\" reads x", compiled->program.num_inputs - 1,
              " but the node has ", num_inputs, " inputs after it");
  compiled->bytecode = compile(compiled->program, num_inputs, nullptr);
  compiled->is_self.assign(num_inputs, false);
  for (const Instruction& instruction : compiled->program.code) {
    const Operand& self = instruction.args.front();
    if (self.kind == Operand::Kind::kInput) {
      compiled->is_self[self.index] = true;
    }
  }
  return KernelFunction([compiled](ProcessedNode& p) { runNode(*compiled, p); });
}

} // namespace

TORCH_LIBRARY_FRAGMENT(srt, m) {
  m.def(torch::schema("srt::fused_elementwise(str program, ...) -> Tensor",
                      c10::AliasAnalysisKind::FROM_SCHEMA),
        torch::CppFunction::makeFromBoxedFunction<&referenceOperator>());
}

SRT_REGISTER_KERNEL("srt::fused_elementwise", kOutVariant, makeKernel);

} // namespace srt::ops::fused
