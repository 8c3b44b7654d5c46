// passes/constant_folding.cpp: what depends only on (frozen) constants is computed at build time.
#include <gtest/gtest.h>
#include <torch/csrc/jit/ir/ir.h>
#include <torch/torch.h>

#include "harness/differential.h"
#include "harness/pass_testing.h"
#include "passes/graph_passes.h"
#include "passes/prepare.h"

namespace srt::testing {
namespace {

// Parameters require grad, as they do in a module loaded from a file.
torch::jit::Module withWeights(const std::string& source) {
  torch::jit::Module module("FoldingModule");
  module.register_parameter("wq", torch::randn({4, 8}).requires_grad_(), false);
  module.register_parameter("wk", torch::randn({4, 8}).requires_grad_(), false);
  module.register_parameter("wv", torch::randn({4, 8}).requires_grad_(), false);
  module.define(source);
  module.eval();
  return module;
}

constexpr const char* kWeightMath = R"JIT(
def forward(self, x):
    qkv = torch.cat([self.wq, self.wk, self.wv])
    scaled = self.wq * 0.125
    return torch.matmul(x, self.wk.t()), torch.linear(x, qkv), torch.linear(x, scaled)
)JIT";

const std::vector<GraphInputs> kInputSets = {{torch::randn({3, 8})}, {torch::randn({2, 5, 8})}};

// On a prepared module LibTorch's constant propagation already folds weight math; the pass is for
// what other passes and hand-built graphs leave: view ops, lists of constant tensors.
TEST(ConstantFolding, FoldsConstantOnlySubgraphs) {
  auto graph = parsedGraph(R"IR(
graph(%x : Tensor):
  %shape : int[] = prim::Constant[value=[4, 8]]()
  %none : NoneType = prim::Constant()
  %zero : int = prim::Constant[value=0]()
  %scale : float = prim::Constant[value=0.125]()
  %w : Tensor = aten::randn(%shape, %none, %none, %none, %none)
  %v : Tensor = aten::ones(%shape, %none, %none, %none, %none)
  %vt : Tensor = aten::t(%v)
  %scaled : Tensor = aten::mul(%vt, %scale)
  %list : Tensor[] = prim::ListConstruct(%v, %v, %v)
  %qkv : Tensor = aten::cat(%list, %zero)
  %a : Tensor = aten::matmul(%x, %scaled)
  %b : Tensor = aten::linear(%x, %qkv, %none)
  %c : Tensor = aten::matmul(%x, %w)
  %out : (Tensor, Tensor, Tensor) = prim::TupleConstruct(%a, %b, %c)
  return (%out))IR");
  const std::vector<GraphInputs> inputs = {{torch::randn({3, 8})}, {torch::randn({2, 5, 8})}};
  auto folded = passes::GraphPtr(graph->copy());
  EXPECT_TRUE(passes::foldConstants(folded));
  EXPECT_NO_THROW(folded->lint());
  for (const char* gone :
       {"aten::ones", "aten::t", "aten::mul", "aten::cat", "prim::ListConstruct"}) {
    EXPECT_EQ(countKind(*folded, gone), 0u) << gone << "\n" << *folded;
  }
  // randn is not deterministic: computed every run.
  EXPECT_EQ(countKind(*folded, "aten::randn"), 1u) << *folded;
  // Drop the random output to compare the rest.
  auto deterministic = parsedGraph(R"IR(
graph(%x : Tensor):
  %shape : int[] = prim::Constant[value=[4, 8]]()
  %none : NoneType = prim::Constant()
  %zero : int = prim::Constant[value=0]()
  %scale : float = prim::Constant[value=0.125]()
  %v : Tensor = aten::ones(%shape, %none, %none, %none, %none)
  %vt : Tensor = aten::t(%v)
  %scaled : Tensor = aten::mul(%vt, %scale)
  %list : Tensor[] = prim::ListConstruct(%v, %v, %v)
  %qkv : Tensor = aten::cat(%list, %zero)
  %a : Tensor = aten::matmul(%x, %scaled)
  %b : Tensor = aten::linear(%x, %qkv, %none)
  return (%a, %b))IR");
  auto rewritten = expectPassPreservesResults(passes::foldConstants, deterministic, inputs, true);
  // Nothing left to fold.
  expectPassPreservesResults(passes::foldConstants, rewritten, inputs, false);
}

TEST(ConstantFolding, LeavesMutatedValuesAndOutputsAlone) {
  // `z` is written to in place; `v` is returned (inside a tuple): a caller must get a fresh
  // tensor, not the module's constant; `x * 2` depends on an input.
  auto graph = parsedGraph(R"IR(
graph(%x : Tensor):
  %shape : int[] = prim::Constant[value=[2]]()
  %none : NoneType = prim::Constant()
  %one : int = prim::Constant[value=1]()
  %two : float = prim::Constant[value=2.]()
  %v : Tensor = aten::ones(%shape, %none, %none, %none, %none)
  %z : Tensor = aten::zeros(%shape, %none, %none, %none, %none)
  %z2 : Tensor = aten::add_(%z, %x, %one)
  %m : Tensor = aten::mul(%x, %two)
  %out : (Tensor, Tensor, Tensor) = prim::TupleConstruct(%v, %z2, %m)
  return (%out))IR");
  auto rewritten = expectPassPreservesResults(passes::foldConstants, graph,
                                              {{torch::randn({2})}, {torch::randn({1})}}, false);
  EXPECT_EQ(countKind(*rewritten, "aten::ones"), 1u) << *rewritten;
  EXPECT_EQ(countKind(*rewritten, "aten::zeros"), 1u) << *rewritten;
}

TEST(ConstantFolding, FoldedModuleMatchesJit) {
  const std::vector<InputSet> inputs = {{kInputSets[0], {}}, {kInputSets[1], {}}};
  expectMatchesJit(withWeights(kWeightMath), inputs);
}

TEST(ConvBnFolding, FoldsBatchNormIntoConv) {
  torch::jit::Module module("ConvBn");
  module.register_parameter("w", torch::randn({4, 3, 3, 3}).requires_grad_(), false);
  module.register_parameter("b", torch::randn({4}).requires_grad_(), false);
  module.register_parameter("gamma", torch::rand({4}) + 0.5, false);
  module.register_parameter("beta", torch::randn({4}), false);
  module.register_buffer("mean", torch::randn({4}) * 0.1);
  module.register_buffer("var", torch::rand({4}) + 0.5);
  module.define(R"JIT(
def forward(self, x):
    y = torch.conv2d(x, self.w, self.b, [1, 1], [1, 1])
    return torch.batch_norm(y, self.gamma, self.beta, self.mean, self.var, False, 0.1, 1e-5, False)
)JIT");
  module.eval();
  auto graph = passes::prepareModule(module).graph;
  const std::vector<GraphInputs> inputs = {{torch::randn({1, 3, 8, 8})},
                                           {torch::randn({2, 3, 5, 7})}};
  auto folded = expectPassPreservesResults(passes::foldConvBatchNorm, graph, inputs, true);
  EXPECT_EQ(countKind(*folded, "aten::batch_norm"), 0u) << *folded;
  EXPECT_EQ(countKind(*folded, "aten::conv2d"), 1u) << *folded;
  expectMatchesJit(module, {{inputs[0], {}}, {inputs[1], {}}});
}

// A BatchNorm written out as a per-channel affine of constants (torchvision's FrozenBatchNorm2d:
// `x * scale + shift` with [1, C, 1, 1] buffers) folds into the convolution before it, as do a
// subtraction with alpha 2 and a division by a number; a constant of the image's size (it would
// change what broadcasts) and a convolution whose output something else reads too stay.
TEST(ConvAffineFolding, FoldsPerChannelAffinesIntoConv) {
  torch::jit::Module module("ConvAffine");
  for (const char* name : {"w1", "w2", "w3", "w4"}) {
    module.register_parameter(name, (torch::randn({4, 4, 3, 3}) * 0.2).requires_grad_(), false);
  }
  module.register_buffer("scale", torch::rand({1, 4, 1, 1}) + 0.5);
  module.register_buffer("shift", torch::randn({1, 4, 1, 1}));
  module.register_buffer("image", torch::randn({1, 4, 6, 6}));
  module.define(R"JIT(
def forward(self, x):
    a = torch.relu(torch.conv2d(x, self.w1, None, 1, 1) * self.scale + self.shift)
    b = torch.sub(torch.conv2d(a, self.w2, None, 1, 1), self.shift, alpha=2) / 3.0
    c = torch.conv2d(b, self.w3, None, 1, 1) + self.image
    d = torch.conv2d(c, self.w4, None, 1, 1)
    return d * self.scale, d
)JIT");
  module.eval();
  auto graph = passes::prepareModule(module).graph;
  const std::vector<GraphInputs> inputs = {{torch::randn({1, 4, 6, 6})},
                                           {torch::randn({2, 4, 6, 6})}};
  auto folded = expectPassPreservesResults(passes::foldConvAffines, graph, inputs, true);
  EXPECT_EQ(countKind(*folded, "aten::conv2d"), 4u) << *folded;
  EXPECT_EQ(countKind(*folded, "aten::sub"), 0u) << *folded;
  EXPECT_EQ(countKind(*folded, "aten::div"), 0u) << *folded;
  EXPECT_EQ(countKind(*folded, "aten::add"), 1u) << *folded; // + self.image
  EXPECT_EQ(countKind(*folded, "aten::mul"), 1u) << *folded; // d, read twice
  expectMatchesJit(module, {{inputs[0], {}}, {inputs[1], {}}});
}

// nn.BatchNorm2d checks its input's rank (`if input.dim() != 4: raise`); where the graph does not
// fix that rank (DenseNet's convolutions read concatenations of a list), the check reads the
// convolution's output too. It then asks the convolution's input, and the BatchNorm still folds.
TEST(ConvBnFolding, FoldsThroughTheBatchNormsRankCheck) {
  auto graph = parsedGraph(R"IR(
graph(%x : Tensor, %y : Tensor, %w : Tensor, %g : Tensor, %b : Tensor, %m : Tensor, %v : Tensor):
  %none : NoneType = prim::Constant()
  %one : int = prim::Constant[value=1]()
  %four : int = prim::Constant[value=4]()
  %channels : int = prim::Constant[value=-3]()
  %false : bool = prim::Constant[value=0]()
  %true : bool = prim::Constant[value=1]()
  %momentum : float = prim::Constant[value=0.1]()
  %eps : float = prim::Constant[value=1.0000000000000001e-05]()
  %message : str = prim::Constant[value="expected 4D input"]()
  %ones : int[] = prim::Constant[value=[1, 1]]()
  %features : Tensor[] = prim::ListConstruct(%x)
  %appended : Tensor[] = aten::append(%features, %y)
  %joined : Tensor = aten::cat(%features, %channels)
  %z : Tensor = aten::conv2d(%joined, %w, %none, %ones, %ones, %ones, %one)
  %rank : int = aten::dim(%z)
  %wrong : bool = aten::ne(%rank, %four)
  prim::If(%wrong)
    block0():
      prim::RaiseException(%message, %none)
      -> ()
    block1():
      -> ()
  %n : Tensor = aten::batch_norm(%z, %g, %b, %m, %v, %false, %momentum, %eps, %true)
  %r : Tensor = aten::relu(%n)
  return (%r)
)IR");
  // The weight and statistics constants, as in a frozen module.
  const std::vector<at::Tensor> constants = {torch::randn({4, 6, 3, 3}), torch::rand({4}) + 0.5,
                                             torch::randn({4}), torch::randn({4}) * 0.1,
                                             torch::rand({4}) + 0.5};
  {
    torch::jit::WithInsertPoint start(graph->nodes().front());
    for (size_t i = 0; i < constants.size(); ++i) {
      graph->inputs()[2 + i]->replaceAllUsesWith(graph->insertConstant(constants[i]));
    }
  }
  for (size_t i = 0; i < constants.size(); ++i) {
    graph->eraseInput(2);
  }
  const std::vector<GraphInputs> inputs = {
      {torch::randn({1, 3, 8, 8}), torch::randn({1, 3, 8, 8})},
      {torch::randn({2, 3, 5, 7}), torch::randn({2, 3, 5, 7})}};
  auto folded = expectPassPreservesResults(passes::foldConvBatchNorm, graph, inputs, true);
  EXPECT_EQ(countKind(*folded, "aten::batch_norm"), 0u) << *folded;
  // The check stays, reading the concatenation (of the same rank).
  EXPECT_EQ(countKind(*folded, "prim::RaiseException"), 1u) << *folded;
  for (const torch::jit::Node* node : folded->nodes()) {
    if (node->kind() == c10::aten::dim) {
      EXPECT_EQ(node->input(0)->node()->kind(), c10::aten::cat) << *folded;
    }
  }
}

} // namespace
} // namespace srt::testing
