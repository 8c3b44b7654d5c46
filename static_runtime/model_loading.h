// Reading a TorchScript archive (torch.jit.save's .pt file) into a torch::jit::Module.
#pragma once

#include <istream>
#include <string>

#include <torch/csrc/jit/api/module.h>
#include <torch/csrc/jit/serialization/import.h>

namespace srt {

// torch::jit::load, after checking that the archive's serialized code parses. LibTorch 1.13
// crashes (SIGSEGV in SourceRange::highlight) when it reports a *syntax* error in an archive's
// code while the archive also carries debug info (code/**.py.debug_pkl); PyTorch's own
// torch.jit.load does too. Parsing each code record first, as LibTorch's importer does but
// without the debug info, turns such an archive into a c10::Error that names the record and the
// line. (Other errors in the code, unknown ops or names, LibTorch reports safely itself.)
// `extra_files` as for torch::jit::load: the names to read, filled with their contents.
torch::jit::Module loadTorchScript(const std::string& path, torch::jit::ExtraFilesMap& extra_files);
torch::jit::Module loadTorchScript(std::istream& in, torch::jit::ExtraFilesMap& extra_files);

// The check alone: a c10::Error naming the record and line when some code record of the archive
// read from `in` does not parse (or when the archive cannot be read).
void checkTorchScriptCode(std::istream& in);

} // namespace srt
