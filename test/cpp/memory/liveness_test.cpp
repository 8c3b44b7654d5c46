// Lifetimes of tensors kept by containers: a tensor stored into a list, tuple or dict (however it
// got there) must stay live while the container, or anything read out of it, is used. torchvision's
// DenseNet appends each layer's output to a list it concatenates later; ending the tensor's
// lifetime at the append let the planner hand its bytes to a later tensor from the second run on.
#include <gtest/gtest.h>
#include <torch/csrc/jit/ir/alias_analysis.h>
#include <torch/torch.h>

#include "harness/differential.h"
#include "harness/pass_testing.h"
#include "memory/liveness.h"

namespace srt::testing {
namespace {

using torch::jit::Node;
using torch::jit::Value;

struct ContainerCase {
  const char* name;
  // `kept = x * 2` is the stored tensor; the one top-level `consumer` node reads it back last.
  const char* source;
  const char* consumer;
};

// Between the store and the read, fresh intermediates the planner could place over `kept`.
const ContainerCase kCases[] = {
    {"append", R"JIT(
def forward(self, x):
    features = [x]
    kept = x * 2
    features.append(kept)
    a = torch.relu(x) + 3
    b = a - 1
    return torch.cat(features, 0) + b.sum()
)JIT",
     "aten::cat"},
    {"insert", R"JIT(
def forward(self, x):
    features = [x]
    kept = x * 2
    features.insert(0, kept)
    a = torch.relu(x) + 3
    b = a - 1
    return torch.cat(features, 0) + b.sum()
)JIT",
     "aten::cat"},
    {"setitem", R"JIT(
def forward(self, x):
    features = [x, x]
    kept = x * 2
    features[1] = kept
    a = torch.relu(x) + 3
    b = a - 1
    return torch.stack(features, 0) + b.sum()
)JIT",
     "aten::stack"},
    {"extend", R"JIT(
def forward(self, x):
    features = [x]
    kept = x * 2
    features.extend([kept, x])
    a = torch.relu(x) + 3
    b = a - 1
    return torch.cat(features, 0) + b.sum()
)JIT",
     "aten::cat"},
    {"slice", R"JIT(
def forward(self, x):
    kept = x * 2
    features = [x, kept, x]
    rest = features[1:]
    a = torch.relu(x) + 3
    b = a - 1
    return torch.cat(rest, 0) + b.sum()
)JIT",
     "aten::cat"},
    {"dict_setitem_getitem", R"JIT(
def forward(self, x):
    d = {"x": x}
    kept = x * 2
    d["kept"] = kept
    a = torch.relu(x) + 3
    b = a - 1
    return torch.sigmoid(d["kept"]) + b.sum()
)JIT",
     "aten::sigmoid"},
    {"tuple_read_out_later", R"JIT(
def forward(self, x):
    kept = x * 2
    pair = (x, kept)
    first, second = pair
    a = torch.relu(first) + 3
    b = a - 1
    return torch.tanh(second) + b.sum()
)JIT",
     "aten::tanh"},
    {"element_used_after_list", R"JIT(
def forward(self, x):
    features = [x]
    kept = x * 2
    features.append(kept)
    last = features[-1]
    a = torch.relu(x) + 3
    b = a - 1
    return torch.exp(last) + b.sum()
)JIT",
     "aten::exp"},
    {"append_in_if", R"JIT(
def forward(self, x):
    features = [x]
    kept = x * 2
    if bool(x.sum() > -1e30):
        features.append(kept)
    a = torch.relu(x) + 3
    b = a - 1
    return torch.cat(features, 0) + b.sum()
)JIT",
     "aten::cat"},
    {"append_in_loop", R"JIT(
def forward(self, x):
    features = [x]
    kept = x * 2
    for _ in range(int(x.size(0))):
        features.append(kept)
    a = torch.relu(x) + 3
    b = a - 1
    return torch.cat(features, 0) + b.sum()
)JIT",
     "aten::cat"},
    {"list_built_in_if", R"JIT(
def forward(self, x):
    kept = x * 2
    if bool(x.sum() > -1e30):
        features = [kept, x]
    else:
        features = [x, x]
    a = torch.relu(x) + 3
    b = a - 1
    return torch.cat(features, 0) + b.sum()
)JIT",
     "aten::cat"},
    {"list_of_lists", R"JIT(
def forward(self, x):
    outer: List[List[torch.Tensor]] = []
    kept = x * 2
    outer.append([kept])
    a = torch.relu(x) + 3
    b = a - 1
    return torch.cat(outer[0], 0) + b.sum()
)JIT",
     "aten::cat"},
};

void PrintTo(const ContainerCase& c, std::ostream* os) {
  *os << c.name;
}

const Node* onlyTopLevelNode(const torch::jit::Graph& graph, const std::string& kind) {
  const Node* found = nullptr;
  for (const Node* node : graph.nodes()) {
    if (node->kind().toQualString() == kind) {
      EXPECT_EQ(found, nullptr) << "more than one " << kind << " in\n" << graph;
      found = node;
    }
  }
  EXPECT_NE(found, nullptr) << "no " << kind << " in\n" << graph;
  return found;
}

// The node's position among the top-level nodes, constants excluded (liveness.h's steps).
size_t stepOf(const torch::jit::Graph& graph, const Node* target) {
  size_t step = 0;
  for (const Node* node : graph.nodes()) {
    if (node == target) {
      return step;
    }
    step += node->kind() != c10::prim::Constant;
  }
  ADD_FAILURE() << "node not at the top level";
  return 0;
}

class ContainerLifetime : public ::testing::TestWithParam<ContainerCase> {};

TEST_P(ContainerLifetime, StoredTensorLivesUntilTheContainerIsRead) {
  const ContainerCase& c = GetParam();
  const std::shared_ptr<torch::jit::Graph> graph = preparedGraph(c.source);
  const Value* kept = onlyTopLevelNode(*graph, "aten::mul")->output();
  const Node* consumer = onlyTopLevelNode(*graph, c.consumer);
  ASSERT_NE(consumer, nullptr);
  const torch::jit::AliasDb alias_db(graph, /*isFrozen=*/true);
  const std::vector<memory::ValueLifetime> lifetimes =
      memory::computeLifetimes(*graph, {kept}, alias_db);
  ASSERT_EQ(lifetimes.size(), 1u);
  EXPECT_GE(lifetimes[0].last, stepOf(*graph, consumer)) << *graph;
}

TEST_P(ContainerLifetime, ResultsMatchTheJitRunAfterRun) {
  expectMatchesJit(GetParam().source, {{{torch::randn({3, 4})}}, {{torch::randn({5, 2})}}});
}

INSTANTIATE_TEST_SUITE_P(Liveness, ContainerLifetime, ::testing::ValuesIn(kCases),
                         [](const auto& info) { return std::string(info.param.name); });

// Found by the generated-graph test: an empty list literal is folded into a top-level constant,
// which the search for holders reaches; it has no step of its own (a null owner was followed).
TEST(Liveness, ConstantContainersAmongTheHolders) {
  for (const char* source : {R"JIT(
def forward(self, x):
    y = (x * 2)[0]
    for i in range(2):
        y = torch.sigmoid(y)
    e: List[Tensor] = []
    return [y], e
)JIT",
                             R"JIT(
def forward(self, x):
    t = torch.mm(x, x.t())
    e: List[Tensor] = []
    l = e[1:]
    l.extend(e)
    l.append(t)
    return torch.cat(l, 0)
)JIT"}) {
    SCOPED_TRACE(source);
    expectMatchesJit(source, {{{torch::randn({3, 4})}}, {{torch::randn({5, 2})}}});
  }
}

// A fresh result computed from a list (cat) does not keep the list's tensors alive.
TEST(Liveness, ComputedFromAListIsNotAHolder) {
  const std::shared_ptr<torch::jit::Graph> graph = preparedGraph(R"JIT(
def forward(self, x):
    kept = x * 2
    joined = torch.cat([x, kept], 0)
    a = torch.relu(joined) + 3
    b = a - 1
    return torch.exp(b)
)JIT");
  const Value* kept = onlyTopLevelNode(*graph, "aten::mul")->output();
  const torch::jit::AliasDb alias_db(graph, /*isFrozen=*/true);
  const auto lifetimes = memory::computeLifetimes(*graph, {kept}, alias_db);
  EXPECT_EQ(lifetimes[0].last, stepOf(*graph, onlyTopLevelNode(*graph, "aten::cat"))) << *graph;
}

} // namespace
} // namespace srt::testing
