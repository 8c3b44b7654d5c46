// Finding and opening the model file: the bundled default, its example inputs.
#pragma once

#include <string>
#include <vector>

#include <torch/csrc/jit/api/module.h>

#include "tools/input_spec.h"

namespace srt::cli {

// Where the bundled default model may be, in the order they are tried: an installed copy
// beside the executable first, then the source tree srt was built from.
std::vector<std::string> defaultModelCandidates();

// `given`, or the first default candidate that exists. Throws UsageError when none does.
std::string resolveModelPath(const std::string& given);

struct ModelFile {
  std::string path;
  // As torch::jit::load returns it: not frozen, possibly in training mode.
  torch::jit::Module module;
  // The extra file srt/example_inputs; empty when the archive has none.
  std::string example_inputs;
};

// Throws UsageError (with torch's reason, on one line) when the file is missing or is not a
// TorchScript archive.
ModelFile openModelFile(const std::string& path);

// The specs in the model's srt/example_inputs. Throws UsageError when they are malformed or
// missing (saying to pass --input instead).
std::vector<InputSpec> exampleInputsOf(const ModelFile& file);

} // namespace srt::cli
