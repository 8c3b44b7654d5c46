// Preparation: freezing, flattening, and refusing what the runtime cannot run.
#include <algorithm>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <torch/csrc/jit/ir/ir.h>
#include <torch/csrc/jit/ir/irparser.h>
#include <torch/torch.h>

#include "harness/differential.h"
#include "passes/prepare.h"
#include "scripts.h"

namespace srt::testing {
namespace {

bool containsKind(const torch::jit::Block* block, c10::Symbol kind) {
  for (const torch::jit::Node* node : block->nodes()) {
    if (node->kind() == kind) {
      return true;
    }
    for (const torch::jit::Block* sub_block : node->blocks()) {
      if (containsKind(sub_block, kind)) {
        return true;
      }
    }
  }
  return false;
}

torch::jit::Module moduleWithSubmodule() {
  torch::jit::Module child("Child");
  child.register_parameter("weight", torch::randn({3, 3}), /*is_buffer=*/false);
  child.define(R"JIT(
def forward(self, x):
    return torch.mm(x, self.weight)
)JIT");
  torch::jit::Module parent("Parent");
  parent.register_module("child", child);
  parent.define(R"JIT(
def forward(self, x):
    return self.child.forward(x).relu()
)JIT");
  return parent;
}

// Freezing registers the frozen copy's methods in the module's CompilationUnit, which outlives
// the build: left there, their graphs would keep a second copy of every weight.
TEST(Prepare, LeavesNoFrozenMethodsBehindInTheCompilationUnit) {
  const torch::jit::Module module = moduleWithSubmodule();
  const auto unit = module._ivalue()->compilation_unit();
  // Removed methods leave a null slot behind.
  const auto live_functions = [&] {
    const auto functions = unit->get_functions();
    return std::count(functions.begin(), functions.end(), nullptr) * -1 +
           static_cast<std::ptrdiff_t>(functions.size());
  };
  const auto before = live_functions();
  for (int i = 0; i < 3; ++i) {
    passes::prepareModule(module);
  }
  EXPECT_EQ(live_functions(), before);
  // The module itself still runs.
  const at::Tensor x = torch::randn({2, 3});
  EXPECT_TRUE(torch::jit::Module(module).forward({x}).toTensor().allclose(
      torch::mm(x, module.attr("child").toModule().attr("weight").toTensor()).relu()));
}

TEST(Prepare, FreezesInlinesAndDropsSelf) {
  torch::jit::Module module = moduleWithSubmodule();
  passes::PreparedGraph prepared = passes::prepareModule(module);
  prepared.graph->lint();
  EXPECT_FALSE(containsKind(prepared.graph->block(), c10::prim::CallMethod));
  EXPECT_FALSE(containsKind(prepared.graph->block(), c10::prim::GetAttr));
  ASSERT_EQ(prepared.graph->inputs().size(), 1u);
  ASSERT_EQ(prepared.schema.arguments().size(), 1u);
  EXPECT_EQ(prepared.schema.arguments()[0].name(), "x");
  // The caller's module is left as it was: not frozen, forward still calls the submodule.
  EXPECT_TRUE(module.hasattr("child"));
  EXPECT_TRUE(module.get_method("forward").graph()->inputs().at(0)->hasUses());
}

TEST(Prepare, FrozenAndUnfrozenModulesGiveTheSameResults) {
  torch::jit::Module module = moduleWithSubmodule();
  module.eval();
  torch::jit::Module frozen = torch::jit::freeze(module);
  auto x = torch::randn({2, 3});
  auto expected = module.forward({x}).toTensor();
  EXPECT_TRUE(torch::allclose(StaticModule(module)({x}).toTensor(), expected));
  EXPECT_TRUE(torch::allclose(StaticModule(frozen)({x}).toTensor(), expected));
}

TEST(Prepare, KeepsRunTimeControlFlowAsSubBlocks) {
  passes::PreparedGraph prepared = passes::prepareModule(scriptModule(scripts::kBranchOnValue));
  EXPECT_TRUE(containsKind(prepared.graph->block(), c10::prim::If));
}

// A module's optional layer frozen to one side leaves `x is not None` on a value that is a Tensor
// by now (torchaudio's Conv-TasNet: `if residual is not None:`): folded, with the If it guards.
TEST(Prepare, FoldsNoneChecksTheTypesSettle) {
  torch::jit::Module module("OptionalLayer");
  module.register_parameter("w", torch::randn({3}), false);
  module.define(R"JIT(
def forward(self, x, mask: Optional[Tensor]):
    residual: Optional[Tensor] = x * self.w
    if residual is not None:
        x = x + residual
    if mask is not None:
        x = x * mask
    return x
)JIT");
  module.eval();
  passes::PreparedGraph prepared = passes::prepareModule(module);
  // The first check folds; the second tests a caller's Optional and stays, with its If.
  size_t checks = 0;
  for (const torch::jit::Node* node : prepared.graph->nodes()) {
    checks += node->kind() == c10::aten::__isnot__ ? 1 : 0;
  }
  EXPECT_EQ(checks, 1u) << *prepared.graph;
  expectMatchesJit(module, {{{torch::randn({2, 3}), torch::randn({2, 3})}, {}},
                            {{torch::randn({4, 3}), c10::IValue()}, {}}});
}

TEST(Prepare, RemovesMutationWhereSafe) {
  passes::PreparedGraph prepared = passes::prepareModule(scriptModule(scripts::kInPlaceUserCode));
  EXPECT_FALSE(containsKind(prepared.graph->block(), c10::Symbol::fromQualString("aten::add_")));
}

// F.dropout(x, p=0.0) with training left True (torchvision's Swin) and any dropout in eval mode
// (nn.AlphaDropout's too): ATen returns x untouched, so it goes; dropout with a real probability
// in training mode draws random numbers and stays.
TEST(Prepare, RemovesDropoutThatDrawsNothing) {
  const char* source = R"JIT(
def forward(self, x, p: float):
    a = torch.dropout(x, 0.0, True)
    b = torch.feature_dropout(a + 1.0, 0.0, True)
    c = torch.alpha_dropout(b, 0.0, False)
    e = torch.feature_alpha_dropout(torch.alpha_dropout(c, 0.5, False) * 2.0, 0.3, False)
    d = torch.dropout(e, p, True)
    return e, d
)JIT";
  passes::PreparedGraph prepared = passes::prepareModule(scriptModule(source));
  for (const char* kind :
       {"aten::feature_dropout", "aten::alpha_dropout", "aten::feature_alpha_dropout"}) {
    EXPECT_FALSE(containsKind(prepared.graph->block(), c10::Symbol::fromQualString(kind))) << kind;
  }
  // Only the run-time probability's dropout is left.
  size_t dropouts = 0;
  for (const torch::jit::Node* node : prepared.graph->nodes()) {
    dropouts += node->kind() == c10::aten::dropout ? 1 : 0;
  }
  EXPECT_EQ(dropouts, 1u) << *prepared.graph;
  // Left in, its schema would call its result fresh when it is the input itself: the memory
  // planner then gave `a`'s bytes to `c` while `b` still read them (found on Swin at 224x224).
  expectMatchesJit(R"JIT(
def forward(self, x):
    a = x * 2.0
    b = torch.dropout(a, 0.0, True)
    c = b + 1.0
    d = c * 3.0
    return d * b
)JIT",
                   {{{torch::randn({4, 5})}}, {{torch::randn({2, 3})}}});
}

// What torch.jit.trace records for nn.Conv2d and nn.ConvTranspose2d: aten::_convolution, which
// preparation turns into the ops our kernels and conv-batch_norm folding take.
TEST(Prepare, TracedConvolutionsBecomeConvOps) {
  torch::jit::Module module("TracedConvs");
  module.register_parameter("weight", torch::randn({4, 3, 3, 3}), /*is_buffer=*/false);
  module.register_parameter("bias", torch::randn({4}), /*is_buffer=*/false);
  module.register_parameter("up_weight", torch::randn({4, 2, 2, 2}), /*is_buffer=*/false);
  module.define(R"JIT(
def forward(self, x):
    y = torch._convolution(x, self.weight, self.bias, [1, 1], [1, 1], [1, 1], False, [0, 0], 1,
                           False, False, True, True)
    return torch._convolution(y, self.up_weight, None, [2, 2], [0, 0], [1, 1], True, [0, 0], 1,
                              False, False, True, True)
)JIT");
  module.eval();
  passes::PreparedGraph prepared = passes::prepareModule(module);
  EXPECT_FALSE(
      containsKind(prepared.graph->block(), c10::Symbol::fromQualString("aten::_convolution")));
  EXPECT_TRUE(containsKind(prepared.graph->block(), c10::Symbol::fromQualString("aten::conv2d")));
  EXPECT_TRUE(
      containsKind(prepared.graph->block(), c10::Symbol::fromQualString("aten::conv_transpose2d")));
  expectMatchesJit(module, {{{torch::randn({1, 3, 8, 8})}}, {{torch::randn({2, 3, 5, 7})}}}, {},
                   1e-4);
}

// Found by fuzzing (test/fuzz/corpus/inputs/regression-inplace-mul-promotion): an in-place op
// keeps self's dtype; rewritten out of place, x.mul_(y) took y's dtype when y's won promotion.
TEST(Prepare, KeepsInPlaceOpsWhoseTensorOperandCouldPromote) {
  const std::string source = R"JIT(
def forward(self, x, y):
    x = x.clone()
    x.add_(1)
    x.relu_()
    x.masked_fill_(y > 1.5, 2.0)
    x.mul_(y)
    return x
)JIT";
  passes::PreparedGraph prepared = passes::prepareModule(scriptModule(source));
  EXPECT_TRUE(containsKind(prepared.graph->block(), c10::Symbol::fromQualString("aten::mul_")));
  // Scalar and unary in-place ops cannot promote, nor can a mask: still rewritten.
  EXPECT_FALSE(containsKind(prepared.graph->block(), c10::Symbol::fromQualString("aten::add_")));
  EXPECT_FALSE(
      containsKind(prepared.graph->block(), c10::Symbol::fromQualString("aten::masked_fill_")));
  expectMatchesJit(source, {{{torch::randn({4, 5}).to(torch::kBFloat16), torch::randn({4, 5})}, {}},
                            {{torch::randn({2, 3}), torch::randn({2, 3}).to(torch::kDouble)}, {}},
                            {{torch::randn({3, 2}), torch::randn({3, 2})}, {}}});
}

// torchvision's ResNet, EfficientNet and ConvNeXt add the residual in place (`out += identity`)
// and ResNet applies ReLU in place to the sum. Both operands come out of float32 convolutions, so
// the out-of-place rewrite keeps the dtype: no in-place op is left for the JIT to run.
TEST(Prepare, RewritesInPlaceResidualAddsOfKnownDtype) {
  torch::jit::Module module("Residual");
  module.register_parameter("weight", torch::randn({3, 3, 3, 3}), /*is_buffer=*/false);
  module.define(R"JIT(
def forward(self, x):
    identity = torch.relu(torch.conv2d(x, self.weight, None, 1, 1))
    out = torch.conv2d(identity, self.weight, None, 1, 1)
    out += identity
    out = torch.relu_(out)
    return out
)JIT");
  module.eval();
  passes::PreparedGraph prepared = passes::prepareModule(module);
  EXPECT_FALSE(containsKind(prepared.graph->block(), c10::Symbol::fromQualString("aten::add_")))
      << *prepared.graph;
  EXPECT_FALSE(containsKind(prepared.graph->block(), c10::Symbol::fromQualString("aten::relu_")))
      << *prepared.graph;
  expectMatchesJit(module, {{{torch::randn({1, 3, 8, 8})}}, {{torch::randn({2, 3, 5, 7})}}}, {},
                   1e-4);
}

// Out of place a comparison returns bool; in place it keeps self's dtype (found while fixing the
// above: x.gt_(0) was rewritten to aten::gt and the model returned bool).
TEST(Prepare, KeepsInPlaceComparisonsWhoseRewriteWouldReturnBool) {
  const std::string source = R"JIT(
def forward(self, x):
    x = x.clone()
    x.gt_(0)
    return x * 2
)JIT";
  passes::PreparedGraph prepared = passes::prepareModule(scriptModule(source));
  EXPECT_TRUE(containsKind(prepared.graph->block(), c10::Symbol::fromQualString("aten::gt_")));
  expectMatchesJit(source, {{{torch::randn({4, 5})}, {}}, {{torch::randn({2, 3})}, {}}});
}

// TorchScript compiled from C++ cannot spell torch.jit.fork (pytest covers it); an operator
// nothing implements takes the same refusal path.
TEST(Prepare, RefusesNodesNothingImplementsWithKindAndReason) {
  auto graph = std::make_shared<torch::jit::Graph>();
  torch::jit::parseIR(R"IR(
graph(%x : Tensor):
  %y : Tensor = srt_test::not_an_operator(%x)
  return (%y))IR",
                      graph.get());
  try {
    StaticModule static_module(graph);
    FAIL() << "expected an error";
  } catch (const c10::Error& e) {
    const std::string message = e.what_without_backtrace();
    EXPECT_THAT(message, ::testing::HasSubstr("srt_test::not_an_operator"));
    EXPECT_THAT(message, ::testing::HasSubstr("no kernel and no JIT operator"));
  }
}

// Scalar attributes a forward reads and writes (a call counter; a flag set on some paths, as
// torchvision's detection models warn once) are state across runs, as on the module in eager:
// each call sees what the last one left. The caller's module keeps its own value.
TEST(Prepare, ScalarAttributesTheForwardMutatesAreStateAcrossRuns) {
  torch::jit::Module counter("Counter");
  counter.register_attribute("count", c10::IntType::get(), 0);
  counter.define(R"JIT(
def forward(self, x):
    self.count += 1
    return x + self.count
)JIT");
  torch::jit::Module branchy("Branchy");
  branchy.register_attribute("scale", c10::FloatType::get(), 1.0);
  branchy.define(R"JIT(
def forward(self, x):
    if bool(x.sum() > 0):
        self.scale = self.scale * 2.0
    return x * self.scale
)JIT");
  for (torch::jit::Module* module : {&counter, &branchy}) {
    SCOPED_TRACE(module->type()->name()->name());
    torch::jit::Module reference = module->deepcopy();
    StaticModule ours(*module);
    for (const float sign : {-1.f, 1.f, -1.f, 1.f, 1.f}) {
      const at::Tensor x = torch::rand({3}) * sign + sign;
      const at::Tensor expected = reference.forward({x}).toTensor();
      EXPECT_TRUE(torch::equal(ours({x}).toTensor(), expected)) << "sign " << sign;
    }
    // A second module starts from the caller's module, which no run wrote.
    StaticModule fresh(*module);
    const at::Tensor x = torch::ones({2});
    EXPECT_TRUE(torch::equal(fresh({x}).toTensor(), module->deepcopy().forward({x}).toTensor()));
  }
}

// A tensor kept across runs (a running total) is copied into its cell when written: the next
// run's planned memory never overwrites it, and the caller's module keeps its zeros.
TEST(Prepare, TensorAttributesTheForwardMutatesAreCopiedState) {
  torch::jit::Module module("Accumulator");
  module.register_attribute("total", c10::TensorType::get(), torch::zeros({3}));
  module.define(R"JIT(
def forward(self, x):
    self.total = self.total + x * 2.0
    return self.total * 3.0
)JIT");
  torch::jit::Module reference = module.deepcopy();
  StaticModule ours(module);
  for (int run = 0; run < 4; ++run) {
    const at::Tensor x = torch::rand({3});
    const at::Tensor expected = reference.forward({x}).toTensor();
    EXPECT_TRUE(torch::allclose(ours({x}).toTensor(), expected)) << "run " << run;
  }
  EXPECT_TRUE(torch::equal(module.attr("total").toTensor(), torch::zeros({3})));
}

// State the runtime cannot keep (a dict) is refused, naming the write.
TEST(Prepare, RefusesDictAttributesTheForwardMutates) {
  torch::jit::Module module("Cache");
  module.register_attribute("seen",
                            c10::DictType::create(c10::StringType::get(), c10::IntType::get()),
                            c10::impl::GenericDict(c10::StringType::get(), c10::IntType::get()));
  module.define(R"JIT(
def forward(self, x):
    self.seen = {"calls": len(self.seen) + 1}
    return x * len(self.seen)
)JIT");
  try {
    StaticModule static_module(module);
    FAIL() << "expected an error";
  } catch (const c10::Error& e) {
    const std::string message = e.what_without_backtrace();
    EXPECT_THAT(message, ::testing::HasSubstr("prim::SetAttr"));
    EXPECT_THAT(message, ::testing::HasSubstr("mutates its own attributes"));
  }
}

// torchvision's RAFT keeps its correlation pyramid on a submodule: written, appended to and read
// in the same forward. Reads after the first write are values of the run.
TEST(Prepare, AttributesWrittenBeforeTheyAreReadAreValuesOfTheRun) {
  torch::jit::Module child("Pyramid");
  child.register_attribute("levels", c10::ListType::ofTensors(), c10::List<at::Tensor>());
  child.register_attribute("scale", c10::FloatType::get(), 1.0);
  torch::jit::Module module("Flow");
  module.register_module("pyramid", child);
  module.define(R"JIT(
def forward(self, x):
    self.pyramid.levels = [x]
    for i in range(2):
        self.pyramid.levels.append(self.pyramid.levels[-1] * 0.5)
    self.pyramid.scale = 2.0
    total = self.pyramid.levels[0] * self.pyramid.scale
    for level in self.pyramid.levels:
        total = total + level.sum()
    self.pyramid.scale = 3.0
    return total * self.pyramid.scale
)JIT");
  module.eval();
  expectMatchesJit(module, {{{torch::randn({2, 3})}}, {{torch::randn({4})}}});
  const auto prepared = passes::prepareModule(module);
  EXPECT_FALSE(containsKind(prepared.graph->block(), c10::prim::SetAttr)) << *prepared.graph;
  EXPECT_FALSE(containsKind(prepared.graph->block(), c10::prim::GetAttr)) << *prepared.graph;
}

// A read that may see an earlier run's value (the write in a branch) keeps the refusal.
TEST(Prepare, RefusesAModuleWithoutForward) {
  torch::jit::Module module("Empty");
  EXPECT_THROW(StaticModule{module}, c10::Error);
}

TEST(Load, MissingFileIsAClearError) {
  try {
    (void)StaticModule::load("/nonexistent/model.pt");
    FAIL() << "expected an error";
  } catch (const c10::Error& e) {
    EXPECT_THAT(e.what_without_backtrace(), ::testing::HasSubstr("/nonexistent/model.pt"));
  }
}

TEST(Load, CorruptFileIsAClearError) {
  const std::string path = ::testing::TempDir() + "/corrupt_model.pt";
  {
    std::ofstream file(path, std::ios::binary);
    file << "PK\x03\x04 this is not a torchscript archive";
  }
  try {
    (void)StaticModule::load(path);
    FAIL() << "expected an error";
  } catch (const c10::Error& e) {
    EXPECT_THAT(e.what_without_backtrace(), ::testing::HasSubstr("not a TorchScript archive"));
  }
}

TEST(Load, RoundTripsASavedModule) {
  const std::string path = ::testing::TempDir() + "/saved_model.pt";
  torch::jit::Module module = moduleWithSubmodule();
  module.save(path);
  auto static_module = StaticModule::load(path);
  auto x = torch::randn({4, 3});
  EXPECT_TRUE(torch::allclose((*static_module)({x}).toTensor(), module.forward({x}).toTensor()));
}

} // namespace
} // namespace srt::testing
