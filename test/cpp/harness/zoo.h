// The model zoo written by test/models/make_zoo.py: models and their input sets.
#pragma once

#include <string>
#include <vector>

#include <torch/csrc/jit/api/module.h>

#include "harness/differential.h"

namespace srt::testing {

// $SRT_ZOO_DIR, else the build's zoo directory.
std::string zooDir();
std::vector<std::string> zooModelNames();
torch::jit::Module loadZooModel(const std::string& name);
// NAME.inputs.pt holds the input sets as attributes of a scripted holder module.
std::vector<InputSet> loadZooInputs(const std::string& name);

} // namespace srt::testing
