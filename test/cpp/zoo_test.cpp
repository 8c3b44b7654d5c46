// The differential harness over every model of the zoo (test/models/make_zoo.py), with every
// valid combination of options, on every GEMM backend.
#include <cstdlib>
#include <fstream>

#include <gtest/gtest.h>
#include <torch/script.h>

#include "harness/differential.h"

namespace srt::testing {
namespace {

std::string zooDir() {
  const char* from_environment = std::getenv("SRT_ZOO_DIR");
  return from_environment ? from_environment : SRT_ZOO_DIR;
}

std::vector<std::string> zooModelNames() {
  std::vector<std::string> names;
  std::ifstream manifest(zooDir() + "/manifest.txt");
  for (std::string name; std::getline(manifest, name);) {
    if (!name.empty()) {
      names.push_back(name);
    }
  }
  return names;
}

// NAME.inputs.pt holds the input sets as attributes of a scripted holder module
// (format documented in test/models/make_zoo.py).
std::vector<InputSet> loadInputSets(const std::string& name) {
  torch::jit::Module holder = torch::jit::load(zooDir() + "/" + name + ".inputs.pt");
  const int64_t num_sets = holder.attr("num_sets").toInt();
  std::vector<InputSet> sets;
  for (int64_t i = 0; i < num_sets; ++i) {
    InputSet set;
    const std::string suffix = "_" + std::to_string(i);
    set.args = holder.attr("args" + suffix).toTupleRef().elements().vec();
    // Keyword arguments are attributes "kwarg_<set>_<name>": their values mix types.
    const std::string kwarg_prefix = "kwarg" + suffix + "_";
    for (const auto& attribute : holder.named_attributes(/*recurse=*/false)) {
      if (attribute.name.rfind(kwarg_prefix, 0) == 0) {
        set.kwargs.emplace(attribute.name.substr(kwarg_prefix.size()), attribute.value);
      }
    }
    sets.push_back(std::move(set));
  }
  return sets;
}

class Zoo : public ::testing::TestWithParam<std::string> {};

TEST_P(Zoo, MatchesJitWithEveryValidOptionSet) {
  const std::string& name = GetParam();
  torch::jit::Module module = torch::jit::load(zooDir() + "/" + name + ".pt");
  module.eval();
  std::vector<InputSet> inputs = loadInputSets(name);
  ASSERT_GE(inputs.size(), 2u) << name << " needs at least two input sets";
  for (ops::GemmBackend backend :
       {ops::GemmBackend::kOneDnn, ops::GemmBackend::kOpenBlas, ops::GemmBackend::kAten}) {
    for (StaticModuleOptions options : allValidOptions()) {
      options.gemm_backend = backend;
      expectMatchesJit(module, inputs, options);
      if (HasFailure()) {
        return; // one failing option set says enough; the rest would repeat it
      }
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
