// TorchScript sources the C++ tests run through the JIT and through static_runtime.
#pragma once

namespace srt::testing::scripts {

inline constexpr const char* kAddMul = R"JIT(
def forward(self, a, b):
    c = a + b
    return c * a
)JIT";

inline constexpr const char* kKwargsWithDefaults = R"JIT(
def forward(self, x, scale: float = 2.0, bias: Optional[Tensor] = None):
    y = x * scale
    if bias is not None:
        y = y + bias
    return y
)JIT";

inline constexpr const char* kTupleListDictScalarOutputs = R"JIT(
def forward(self, x):
    s = x.sum()
    return (x + 1, [x * 2, x * 3], {"twice": x * 2}, x.size(0), float(s))
)JIT";

inline constexpr const char* kBranchOnValue = R"JIT(
def forward(self, x):
    if bool(x.sum() > 0):
        y = x * 2
    else:
        y = x - 1
    return y.relu()
)JIT";

inline constexpr const char* kLoopOnValue = R"JIT(
def forward(self, x, n: int):
    for i in range(n):
        x = x + i
    k = 0
    while k < n * 2:
        x = x * 1.5
        k += 3
    return x
)JIT";

inline constexpr const char* kNestedControlFlow = R"JIT(
def forward(self, x, n: int):
    acc = torch.zeros_like(x)
    for i in range(n):
        if i % 2 == 0:
            acc = acc + x
        else:
            for j in range(i):
                acc = acc - 0.5 * x
    return acc
)JIT";

// TorchScript compiled from C++ cannot name Python's exception classes, so this is the IR that
// `if bool(x.min() < 0): raise ValueError("negative input")` scripts to.
inline constexpr const char* kRaiseOnNegativeIr = R"IR(
graph(%x : Tensor):
  %zero : int = prim::Constant[value=0]()
  %message : str = prim::Constant[value="negative input"]()
  %exception_class : str = prim::Constant[value="builtins.ValueError"]()
  %min : Tensor = aten::min(%x)
  %negative : Tensor = aten::lt(%min, %zero)
  %condition : bool = aten::Bool(%negative)
  prim::If(%condition)
    block0():
      prim::RaiseException(%message, %exception_class)
      -> ()
    block1():
      -> ()
  %y : Tensor = aten::sqrt(%x)
  return (%y))IR";

inline constexpr const char* kLinearLike = R"JIT(
def forward(self, x, w):
    return torch.mm(x, w)
)JIT";

inline constexpr const char* kInputReturnedDirectly = R"JIT(
def forward(self, x, y):
    return (x, y, x, y + 1)
)JIT";

inline constexpr const char* kInPlaceUserCode = R"JIT(
def forward(self, x):
    y = x.clone()
    y.add_(1)
    y.relu_()
    return y
)JIT";

inline constexpr const char* kVarargFormat = R"JIT(
def forward(self, x, n: int):
    message = "{} and {}".format(n, n + 1)
    return x + len(message)
)JIT";

} // namespace srt::testing::scripts
