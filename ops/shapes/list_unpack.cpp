// chunk / split / unbind whose list is only unpacked, as one node with one output per piece
// (passes/list_unpack_fusion.cpp): the pieces go straight into the node's outputs, with no list
// built and taken apart every run.
//
// The pieces are views of the input, and AliasDb must know it (the memory planner keeps the input
// alive while they are), so each output needs an alias annotation; a variable number of returns
// (`-> ...`) cannot carry one. Hence one operator per piece count, e.g.
//   srt::chunk_unpack_3(Tensor(a) self, int chunks, int dim) -> (Tensor(a), Tensor(a), Tensor(a))
// for 1 to kMaxPieces pieces.
#include <string>

#include <ATen/Functions.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <torch/csrc/jit/ir/ir.h>
#include <torch/library.h>

#include "ops/core/processed_node.h"
#include "ops/core/registry.h"
#include "ops/shapes/list_unpack.h"
#include "ops/shapes/strided_views.h"

namespace srt::ops {
namespace {

enum class Family { kChunk, kSplit, kSplitWithSizes, kUnbind };

struct FamilyInfo {
  Family family;
  const char* op;        // the op whose list is unpacked
  const char* arguments; // its arguments, with `self` aliasing the pieces
};

const FamilyInfo kFamilies[] = {
    {Family::kChunk, "chunk", "Tensor(a) self, int chunks, int dim"},
    {Family::kSplit, "split", "Tensor(a) self, int split_size, int dim"},
    {Family::kSplitWithSizes, "split_with_sizes", "Tensor(a) self, int[] split_sizes, int dim"},
    {Family::kUnbind, "unbind", "Tensor(a) self, int dim"},
};

std::vector<at::Tensor> pieces(Family family, const at::Tensor& self, const c10::IValue* args) {
  switch (family) {
  case Family::kChunk:
    return views::chunk(self, args[0].toInt(), args[1].toInt());
  case Family::kSplit:
    return views::split(self, args[0].toInt(), args[1].toInt());
  case Family::kSplitWithSizes:
    return views::splitWithSizes(self, args[0].toDimVector(), args[1].toInt());
  case Family::kUnbind:
    break;
  }
  return views::unbind(self, args[0].toInt());
}

void checkCount(const char* op, size_t pieces, size_t outputs) {
  TORCH_CHECK(pieces == outputs, "static_runtime: ", op, " gave ", pieces,
              " pieces, but the list they form is unpacked into ", outputs, " values");
}

template <Family kFamily> void unpackKernel(ProcessedNode& p) {
  const size_t num_args = p.numInputs() - 1;
  c10::IValue args[2];
  for (size_t i = 0; i < num_args; ++i) {
    args[i] = p.input(i + 1);
  }
  std::vector<at::Tensor> views = pieces(kFamily, p.input(0).toTensor(), args);
  checkCount(p.node()->kind().toQualString(), views.size(), p.numOutputs());
  for (size_t i = 0; i < views.size(); ++i) {
    p.output(i) = std::move(views[i]);
  }
}

// What the JIT runs: the ATen op, then the unpacking.
template <Family kFamily> void reference(const c10::OperatorHandle& op, torch::jit::Stack* stack) {
  const size_t num_args = op.schema().arguments().size();
  const size_t num_outputs = op.schema().returns().size();
  auto first = stack->end() - num_args;
  const at::Tensor self = first->toTensor();
  c10::IValue args[2];
  for (size_t i = 1; i < num_args; ++i) {
    args[i - 1] = *(first + i);
  }
  std::vector<at::Tensor> result;
  switch (kFamily) {
  case Family::kChunk:
    result = at::chunk(self, args[0].toInt(), args[1].toInt());
    break;
  case Family::kSplit:
    result = at::split(self, args[0].toInt(), args[1].toInt());
    break;
  case Family::kSplitWithSizes:
    result = at::split_with_sizes(self, args[0].toDimVector(), args[1].toInt());
    break;
  case Family::kUnbind:
    result = at::unbind(self, args[0].toInt());
    break;
  }
  checkCount(op.schema().name().c_str(), result.size(), num_outputs);
  torch::jit::drop(*stack, num_args);
  for (at::Tensor& piece : result) {
    torch::jit::push(*stack, std::move(piece));
  }
}

template <Family kFamily> torch::CppFunction referenceFunction() {
  return torch::CppFunction::makeFromBoxedFunction<reference<kFamily>>();
}

torch::CppFunction referenceFor(Family family) {
  switch (family) {
  case Family::kChunk:
    return referenceFunction<Family::kChunk>();
  case Family::kSplit:
    return referenceFunction<Family::kSplit>();
  case Family::kSplitWithSizes:
    return referenceFunction<Family::kSplitWithSizes>();
  case Family::kUnbind:
    break;
  }
  return referenceFunction<Family::kUnbind>();
}

KernelFunction kernelFor(Family family) {
  switch (family) {
  case Family::kChunk:
    return unpackKernel<Family::kChunk>;
  case Family::kSplit:
    return unpackKernel<Family::kSplit>;
  case Family::kSplitWithSizes:
    return unpackKernel<Family::kSplitWithSizes>;
  case Family::kUnbind:
    break;
  }
  return unpackKernel<Family::kUnbind>;
}

std::string schemaFor(const FamilyInfo& info, size_t pieces) {
  std::string returns;
  for (size_t i = 0; i < pieces; ++i) {
    returns += i == 0 ? "Tensor(a)" : ", Tensor(a)";
  }
  return unpackOpName(info.op, pieces) + "(" + info.arguments + ") -> (" + returns + ")";
}

// Kernels, registered like SRT_REGISTER_KERNEL does, one per generated operator.
[[maybe_unused]] const bool kKernelsRegistered = [] {
  for (const FamilyInfo& info : kFamilies) {
    for (size_t n = 1; n <= kMaxUnpackPieces; ++n) {
      KernelFunction kernel = kernelFor(info.family);
      Registry::global().add(unpackOpName(info.op, n).c_str(), KernelKind::kNative,
                             [kernel](const torch::jit::Node*, const KernelOptions&) {
                               return std::optional<KernelFunction>(kernel);
                             });
    }
  }
  return true;
}();

} // namespace

std::string unpackOpName(const std::string& op, size_t pieces) {
  return "srt::" + op + "_unpack_" + std::to_string(pieces);
}

TORCH_LIBRARY_FRAGMENT(srt, m) {
  for (const FamilyInfo& info : kFamilies) {
    for (size_t n = 1; n <= kMaxUnpackPieces; ++n) {
      m.def(torch::schema(schemaFor(info, n).c_str(), c10::AliasAnalysisKind::FROM_SCHEMA),
            referenceFor(info.family));
    }
  }
}

} // namespace srt::ops
