// aten::tensor (and aten::as_tensor of a list): `torch.tensor(count)` or `torch.tensor([a, b])`
// of run-time numbers, which
// TorchScript also emits for `t[mask] = 0` (the 0 becomes a tensor). An out-variant kernel writing
// the numbers into the node's reused output, converting them the way the JIT operator does: first
// to the dtype the Python number implies (int64, bool, the default dtype for floats), then to the
// requested dtype.
#include <ATen/Dispatch.h>
#include <torch/csrc/jit/ir/constants.h>
#include <torch/csrc/jit/ir/ir.h>

#include "ops/core/registry.h"
#include "ops/elementwise/fast_path.h"

namespace srt::ops {
namespace {

using torch::jit::Node;

// The dtype a Python number of this type makes a tensor of.
std::optional<at::ScalarType> impliedDtype(const c10::TypePtr& type) {
  if (type->kind() == c10::TypeKind::IntType) {
    return at::kLong;
  }
  if (type->kind() == c10::TypeKind::BoolType) {
    return at::kBool;
  }
  if (type->kind() == c10::TypeKind::FloatType) {
    return std::nullopt; // the default dtype, read at run time as the JIT does
  }
  return at::ScalarType::Undefined;
}

// A staging tensor in the implied dtype, kept between runs, when the requested one differs.
struct Staging : NodeState {
  at::Tensor tensor;
};

void writeNumbers(at::Tensor& out, const c10::IValue* numbers, size_t count) {
  AT_DISPATCH_ALL_TYPES_AND3(at::kBool, at::kHalf, at::kBFloat16, out.scalar_type(), "tensor", [&] {
    scalar_t* data = out.data_ptr<scalar_t>();
    for (size_t i = 0; i < count; ++i) {
      const c10::IValue& number = numbers[i];
      if (number.isDouble()) {
        data[i] = static_cast<scalar_t>(number.toDouble());
      } else if (number.isInt()) {
        data[i] = static_cast<scalar_t>(number.toInt());
      } else {
        data[i] = static_cast<scalar_t>(number.toBool());
      }
    }
  });
}

// (data, *, dtype, device, requires_grad) with `data` one number or a flat list of them.
void writeTensor(ProcessedNode& p, at::ScalarType implied, at::IntArrayRef sizes,
                 const c10::IValue* numbers, size_t count) {
  const c10::IValue& dtype_arg = p.input(1);
  const c10::IValue& device_arg = p.input(2);
  TORCH_CHECK(device_arg.isNone() || device_arg.toDevice().is_cpu(),
              "static_runtime: aten::tensor makes CPU tensors only, got device ",
              device_arg.toDevice());
  const at::ScalarType dtype = dtype_arg.isNone() ? implied : dtype_arg.toScalarType();
  at::Tensor& out = contiguousOutput(p, 0, sizes, at::TensorOptions().dtype(dtype));
  if (dtype == implied) {
    writeNumbers(out, numbers, count);
    return;
  }
  at::Tensor& staging = p.state<Staging>().tensor;
  if (!staging.defined() || staging.scalar_type() != implied) {
    staging = at::empty(sizes, at::TensorOptions().dtype(implied));
  }
  staging.resize_(sizes);
  writeNumbers(staging, numbers, count);
  out.copy_(staging);
}

// A flat list of numbers of `list`'s type as a 1-D tensor; nullopt for nested lists or lists of
// tensors.
std::optional<KernelFunction> tensorFromList(const c10::ListType& list) {
  const auto implied = impliedDtype(list.getElementType());
  if (implied == at::ScalarType::Undefined) {
    return std::nullopt;
  }
  return KernelFunction([implied](ProcessedNode& p) {
    const c10::ArrayRef<c10::IValue> numbers = p.input(0).toListRef();
    const int64_t count = static_cast<int64_t>(numbers.size());
    writeTensor(p, implied.value_or(defaultDtype()), {count}, numbers.data(), numbers.size());
  });
}

std::optional<KernelFunction> tensorFromData(const Node* node, const KernelOptions&) {
  if (node->inputs().size() != 4 || !torch::jit::constant_as<bool>(node->input(3)).has_value() ||
      *torch::jit::constant_as<bool>(node->input(3))) {
    return std::nullopt; // requires_grad=True (or not known): nothing inference should make
  }
  const c10::TypePtr& type = node->input(0)->type();
  if (auto list = type->cast<c10::ListType>()) {
    return tensorFromList(*list);
  }
  const auto implied = impliedDtype(type);
  if (implied == at::ScalarType::Undefined) {
    return std::nullopt; // complex numbers
  }
  return KernelFunction([implied](ProcessedNode& p) {
    writeTensor(p, implied.value_or(defaultDtype()), {}, &p.input(0), 1);
  });
}

} // namespace

SRT_REGISTER_KERNEL("aten::tensor", kOutVariant, tensorFromData);
// torch.as_tensor(list, dtype=..., device=...): a new tensor, as aten::tensor makes it
// (torchvision's detection transform: its normalization mean and std).
SRT_REGISTER_KERNEL("aten::as_tensor", kOutVariant,
                    [](const Node* node, const KernelOptions&) -> std::optional<KernelFunction> {
                      auto list = node->input(0)->type()->cast<c10::ListType>();
                      if (node->inputs().size() != 3 || !list) {
                        return std::nullopt;
                      }
                      return tensorFromList(*list);
                    });

} // namespace srt::ops
