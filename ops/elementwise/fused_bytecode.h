// The fast path of srt::fused_elementwise: a program compiled to register-machine bytecode over
// float32 blocks. The output is computed one block (64-1024 elements) at a time; every step of
// the bytecode runs over the block with at::vec::Vectorized<float>, reading inputs in place and
// keeping intermediates in a few block-sized buffers that stay in L1, so no intermediate tensor
// is ever written to memory.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "ops/elementwise/vectorized_loops.h"

namespace srt::ops::fused {

struct Program;

// What a step computes: one of the element-wise formulas of ops/elementwise/vectorized_loops.h
// (the same formulas the unfused kernels run, so fused and unfused results agree).
struct Formula {
  enum class Arity : uint8_t { kUnary, kBinary, kTernary };
  Arity arity;
  uint8_t op; // a vec::UnaryOp, BinaryOp or TernaryOp, by arity

  Formula(vec::UnaryOp unary) : arity(Arity::kUnary), op(static_cast<uint8_t>(unary)) {}
  Formula(vec::BinaryOp binary) : arity(Arity::kBinary), op(static_cast<uint8_t>(binary)) {}
  Formula(vec::TernaryOp ternary) : arity(Arity::kTernary), op(static_cast<uint8_t>(ternary)) {}
};

// The slot a step writes when it computes the program's result.
constexpr uint8_t kOutputSlot = 255;

struct Step {
  Formula formula;
  uint8_t dst;
  uint8_t src[3] = {0, 0, 0};
  float a = 0.f;
  float b = 0.f;
};

// Buffers (registers, constants, broadcast and gathered inputs) live in this many floats of stack
// per call, 24 KiB: the block shrinks as their number grows so that they stay in L1 next to the
// streamed inputs.
constexpr int64_t kBufferFloats = 6144;
constexpr int64_t kMaxBlock = 1024;
// Blocks are whole cache lines (and whole AVX-512 vectors).
constexpr int64_t kBlockAlign = 64;
constexpr uint32_t kMaxBuffers = static_cast<uint32_t>(kBufferFloats / kBlockAlign);

// Slots: [0, num_inputs) the node's inputs (program inputs xK), then one per constant, then the
// registers.
struct Bytecode {
  std::vector<Step> steps;
  uint32_t num_inputs = 0;
  std::vector<float> constants;
  uint32_t num_registers = 0;

  uint32_t firstConstantSlot() const { return num_inputs; }
  uint32_t firstRegisterSlot() const {
    return num_inputs + static_cast<uint32_t>(constants.size());
  }
};

// Compiles `program` for float32 inputs, or explains why it cannot run on the fast path (a bool
// value used other than as where's condition, a NaN clamp bound, too many buffers, ...).
// `num_inputs` is the node's input count beside the program.
std::optional<Bytecode> compile(const Program& program, uint32_t num_inputs, std::string* why);

// The most inputs a fused node runs on the fast path with (more run the reference).
constexpr uint32_t kMaxInputs = 32;
// The most dimensions of an input's layout once merged (see InputLayout).
constexpr int64_t kMaxDims = 8;

// How an input that is neither shaped like the output nor a single value is read: element
// (i0, ..., in) of the output, in these sizes (the output's, with dimensions merged where the
// input's strides allow), reads data[i0 * strides[0] + ... + in * strides[n]]. A broadcast
// dimension has stride 0; a transposed input has its own strides.
struct InputLayout {
  int64_t ndim = 0;
  int64_t sizes[kMaxDims];
  int64_t strides[kMaxDims];
};

// One input of one run: a float32 tensor laid out like the output (read in place), a single
// value broadcast to every element (a scalar, or a one-element tensor), or a tensor read
// through `layout` (broadcast or strided: gathered into a buffer one block at a time).
struct InputBinding {
  const float* data = nullptr; // null: broadcast `value`
  float value = 0.f;
  const InputLayout* layout = nullptr; // set: `data` is read through it
};

// out[0, numel) = the program over `inputs` (code.num_inputs of them). Splits large ranges over
// the intra-op threads as ATen does: the runtime's own `workers` where the caller has them.
void run(const Bytecode& code, const InputBinding* inputs, float* out, int64_t numel,
         WorkerPool* workers = nullptr);

// The same in one thread, for one range: what run() calls per chunk, built once per CPU
// capability (ops/elementwise/cpu/fused_loops.cpp).
using RangeFunction = void (*)(const Bytecode& code, const InputBinding* inputs, float* out,
                               int64_t begin, int64_t end);

} // namespace srt::ops::fused
