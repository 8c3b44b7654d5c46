// Builds a module from TorchScript source, runs it through static_runtime, checks the result.
#include <iostream>

#include <static_runtime/static_runtime.h>
#include <torch/script.h>

int main() {
  torch::jit::Module module("Consumer");
  module.define(R"JIT(
def forward(self, x):
    return torch.relu(x) * 2
)JIT");
  srt::StaticModule static_module(module);
  srt::StaticRuntime runtime(static_module);
  at::Tensor x = torch::randn({4, 4});
  at::Tensor result = runtime({x}).toTensor();
  const bool ok = torch::allclose(result, torch::relu(x) * 2);
  std::cout << "consumer: static_runtime result " << (ok ? "matches" : "DIFFERS") << "\n";
  return ok ? 0 : 1;
}
