#include "tools/model_file.h"

#include <filesystem>
#include <fstream>

#include <c10/util/Exception.h>
#include <torch/csrc/jit/serialization/import.h>

#include "static_runtime/model_loading.h"
#include "tools/usage_error.h"

#ifndef SRT_DEFAULT_MODEL
#error "SRT_DEFAULT_MODEL must name the bundled model in the source tree (see CMakeLists.txt)"
#endif

namespace srt::cli {
namespace {

constexpr const char* kExampleInputsKey = "srt/example_inputs";

// A UsageError is one line, but torch's load errors can span several.
std::string firstLineOf(const std::exception& error) {
  const auto* torch_error = dynamic_cast<const c10::Error*>(&error);
  std::string text = torch_error ? torch_error->what_without_backtrace() : error.what();
  return text.substr(0, text.find('\n'));
}

std::filesystem::path executableDir() {
  std::error_code error;
  std::filesystem::path exe = std::filesystem::read_symlink("/proc/self/exe", error);
  return error ? std::filesystem::path() : exe.parent_path();
}

} // namespace

std::vector<std::string> defaultModelCandidates() {
  std::vector<std::string> candidates;
  std::filesystem::path exe_dir = executableDir();
  if (!exe_dir.empty()) {
    candidates.push_back(
        (exe_dir / ".." / "share" / "static_runtime" / "default_model.pt").lexically_normal());
  }
  candidates.push_back(SRT_DEFAULT_MODEL);
  return candidates;
}

std::string resolveModelPath(const std::string& given) {
  if (!given.empty()) {
    return given;
  }
  std::vector<std::string> candidates = defaultModelCandidates();
  for (const std::string& candidate : candidates) {
    if (std::filesystem::exists(candidate)) {
      return candidate;
    }
  }
  std::string tried;
  for (const std::string& candidate : candidates) {
    tried += (tried.empty() ? "" : ", ") + candidate;
  }
  throw UsageError("no MODEL.pt given and the bundled default model is missing (looked for " +
                   tried + "); expected a path to a TorchScript archive");
}

ModelFile openModelFile(const std::string& path) {
  if (!std::ifstream(path).good()) {
    throw UsageError("cannot open model file '" + path +
                     "' (no such file or not readable); expected a TorchScript archive written "
                     "by torch.jit.save");
  }
  ModelFile file{path, {}, {}};
  torch::jit::ExtraFilesMap extra_files{{kExampleInputsKey, ""}};
  try {
    file.module = loadTorchScript(path, extra_files);
  } catch (const std::exception& error) {
    throw UsageError("'" + path + "' is not a TorchScript archive torch.jit.load can read (" +
                     firstLineOf(error) + "); expected a file written by torch.jit.save");
  }
  file.example_inputs = extra_files[kExampleInputsKey];
  return file;
}

std::vector<InputSpec> exampleInputsOf(const ModelFile& file) {
  std::vector<InputSpec> specs;
  try {
    specs = parseExampleInputs(file.example_inputs);
  } catch (const UsageError& error) {
    throw UsageError("model '" + file.path + "' has a bad srt/example_inputs: " + error.what());
  }
  if (specs.empty()) {
    throw UsageError("model '" + file.path +
                     "' has no example inputs (extra file srt/example_inputs is missing or "
                     "empty); pass one --input SHAPE[:DTYPE] per argument of forward");
  }
  return specs;
}

} // namespace srt::cli
