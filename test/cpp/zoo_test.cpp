// The differential harness over every model of the zoo (test/models/make_zoo.py), with every
// valid combination of options, on every GEMM backend.
#include <gtest/gtest.h>

#include "harness/differential.h"
#include "harness/zoo.h"
#include "passes/pipeline.h"

namespace srt::testing {
namespace {

class Zoo : public ::testing::TestWithParam<std::string> {};

TEST_P(Zoo, MatchesJitWithEveryValidOptionSet) {
  const std::string& name = GetParam();
  torch::jit::Module module = loadZooModel(name);
  std::vector<InputSet> inputs = loadZooInputs(name);
  ASSERT_GE(inputs.size(), 2u) << name << " needs at least two input sets";
  for (GemmBackend backend : {GemmBackend::kOneDnn, GemmBackend::kOpenBlas, GemmBackend::kAten}) {
    for (StaticModuleOptions options : allValidOptions()) {
      options.gemm_backend = backend;
      expectMatchesJit(module, inputs, options);
      if (HasFailure()) {
        return; // one failing option set says enough; the rest would repeat it
      }
    }
  }
}

// Every pass is optional: switching any one off must leave results correct (the passes after it
// see a graph they would not otherwise see).
TEST_P(Zoo, MatchesJitWithEachPassDisabled) {
  const std::string& name = GetParam();
  torch::jit::Module module = loadZooModel(name);
  std::vector<InputSet> inputs = loadZooInputs(name);
  for (const std::string& pass : passes::passNames()) {
    StaticModuleOptions options;
    options.disabled_passes = {pass};
    SCOPED_TRACE("disabled pass: " + pass);
    expectMatchesJit(module, inputs, options);
    if (HasFailure()) {
      return;
    }
  }
}

TEST(ZooManifest, IsNotEmpty) {
  EXPECT_GE(zooModelNames().size(), 10u) << "no zoo at " << zooDir();
}

INSTANTIATE_TEST_SUITE_P(Models, Zoo, ::testing::ValuesIn(zooModelNames()),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           return info.param;
                         });

} // namespace
} // namespace srt::testing
