#include "harness/zoo.h"

#include <cstdlib>
#include <fstream>

#include <torch/script.h>

namespace srt::testing {

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

torch::jit::Module loadZooModel(const std::string& name) {
  torch::jit::Module module = torch::jit::load(zooDir() + "/" + name + ".pt");
  module.eval();
  return module;
}

std::vector<InputSet> loadZooInputs(const std::string& name) {
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

} // namespace srt::testing
