// Native string kernels (ops/containers/string_ops.cpp) against the JIT.
#include <gtest/gtest.h>
#include <torch/csrc/jit/ir/ir.h>
#include <torch/torch.h>

#include "harness/differential.h"
#include "harness/kernel_kinds.h"

namespace srt::testing {
namespace {

using ops::KernelKind;

TEST(ScalarsStrings, FormatStrFindLen) {
  const char* source = R"JIT(
def forward(self, x, name: str):
    message = "{} has shape {} and {} dims, scale {}".format(name, x.size(), x.dim(), 1.5)
    device = str(x.device)
    on_cpu = device.find("cpu") != -1
    return (message, device, on_cpu, len(message), name + "!", name == "x", name != "x",
            name.find("b", 1), name.find("a", -2), name.find("a", 0, 1), str(x.dtype), str([1, 2]))
)JIT";
  expectMatchesJit(source, {{{torch::randn({2, 3}), std::string("x")}},
                            {{torch::zeros({0}), std::string("abcab")}},
                            {{torch::arange(3), std::string("")}}});
  expectKinds(source, {{"aten::format", KernelKind::kNative},
                       {"aten::str", KernelKind::kNative},
                       {"aten::find", KernelKind::kNative},
                       {"aten::len", KernelKind::kNative},
                       {"aten::add", KernelKind::kNative},
                       {"aten::eq", KernelKind::kNative},
                       {"aten::ne", KernelKind::kNative}});
}

TEST(ScalarsStrings, FormatWithTooFewArgumentsIsAnError) {
  StaticModule module(scriptModule(R"JIT(
def forward(self, x):
    return "{} and {}".format(x.dim())
)JIT"));
  EXPECT_THROW(module({torch::zeros({1})}), c10::Error);
}

// aten::warn's registered operator only throws (the interpreter handles warnings itself), so a
// fallback would turn a warning into an error.
TEST(ScalarsStrings, WarnWarnsOncePerRuntime) {
  // The IR parser cannot spell a node without outputs, so the graph is built by hand.
  auto graph = std::make_shared<torch::jit::Graph>();
  torch::jit::Value* x = graph->addInput("x");
  torch::jit::Value* message = graph->insertConstant(std::string("more than one dimension"));
  torch::jit::Value* level = graph->insertConstant(int64_t{2});
  graph->insertNode(graph->create(c10::Symbol::fromQualString("aten::warn"), {message, level}, 0));
  graph->registerOutput(x);
  StaticModule module(graph);
  EXPECT_EQ(kernelKinds(module).at("aten::warn"), std::set<KernelKind>{KernelKind::kNative});
  struct CountingHandler : c10::WarningHandler {
    std::vector<std::string> messages;
    void process(const c10::SourceLocation&, const std::string& message, bool) override {
      messages.push_back(message);
    }
  } handler;
  c10::Warning::WarningHandlerGuard guard(&handler);
  StaticRuntime runtime(module);
  auto input = torch::randn({2, 2});
  EXPECT_TRUE(torch::equal(runtime({input}).toTensor(), input));
  EXPECT_TRUE(torch::equal(runtime({input}).toTensor(), input));
  EXPECT_EQ(handler.messages, std::vector<std::string>{"more than one dimension"});
}

} // namespace
} // namespace srt::testing
