// libFuzzer harness 2: mutated and truncated TorchScript archives through StaticModule.
//
// The bytes are a `.pt` file. Each case goes through the stages a user's model file goes through:
//   1. [LibTorch] the zip container: caffe2::serialize::PyTorchStreamReader opens it and reads
//      every record (miniz checks each record's CRC). A container it rejects is then repaired:
//      its records are recovered by scanning for zip headers and written again with
//      PyTorchStreamWriter (fresh sizes and CRCs). Without the repair nearly every mutation
//      would end at a CRC mismatch and no mutated code, pickle or weight would reach the
//      loader and StaticModule; with it, bytes inserted into or cut from a record count too;
//   2. srt::loadTorchScript from memory (the loader StaticModule::load and srt use): [ours] the
//      archive's code must parse, then [LibTorch] torch::jit::load, with the extra file
//      srt/example_inputs;
//   3. [ours]     StaticModule construction: freezing, preparation, every pass, kernel selection;
//   4. [ours]     two runs on the example inputs the archive names (when it names valid ones).
// Every stage must end in success or a c10::Error / std::exception. When a sanitizer reports
// an error, the stage is printed first (__asan_on_error), so a crash inside LibTorch's loader
// is told apart from one in static_runtime.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <ATen/Parallel.h>
#include <caffe2/serialize/inline_container.h>
#include <sanitizer/lsan_interface.h>
#include <torch/csrc/jit/serialization/import.h>

#include "fuzz_support.h"
#include "static_runtime/model_loading.h"
#include "static_runtime/static_runtime.h"
#include "tools/input_spec.h"

namespace {

const char* g_stage = "decoding";

// How far cases got, printed at exit: shows the repair lets mutated content reach our code.
struct StageCounts {
  size_t cases = 0, container_ok = 0, repaired = 0, code_mutated = 0, loaded = 0, built = 0,
         ran = 0;
} g_counts;

// The records LibTorch's loader executes (code/**.py source, and every .pkl: pickles name the
// classes and functions they call) of the zoo's archives, the seeds of the corpus.
std::set<std::string> g_known_code;

bool endsWith(const std::string& name, const std::string& suffix) {
  return name.size() > suffix.size() &&
         name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0;
}

bool isCodeRecord(const std::string& name) {
  return (name.rfind("code/", 0) == 0 && endsWith(name, ".py")) || endsWith(name, ".pkl") ||
         endsWith(name, ".debug_pkl");
}

std::set<std::string> codeRecordsOf(std::istream& in) {
  std::set<std::string> code;
  caffe2::serialize::PyTorchStreamReader reader(&in);
  for (const std::string& name : reader.getAllRecords()) {
    if (isCodeRecord(name)) {
      auto [data, size] = reader.getRecord(name);
      code.emplace(static_cast<const char*>(data.get()), size);
    }
  }
  return code;
}

// Whether every code and pickle record is one of the zoo's, unmutated. LibTorch's loader runs
// them, and it is not hardened against crafted ones: past our parse check its importer crashed
// on a malformed class constant (ScriptTypeParser::parseClassConstant), and its unpickler on a
// pickle that pops an empty stack (Unpickler::readInstruction), each SIGSEGV within minutes.
// A model file is a program (Python's own pickle documentation: never unpickle untrusted
// data); torch.jit.load of a crafted one is no safer than running crafted Python. So cases whose
// code or pickles were mutated stop after our parse check, and mutations of everything else
// (weights, example inputs and other extra files, record layout, version, the container) go all
// the way through LibTorch's loader into StaticModule.
bool codeIsKnown(const std::string& bytes) {
  try {
    std::istringstream stream(bytes);
    for (const std::string& code : codeRecordsOf(stream)) {
      if (g_known_code.count(code) == 0) {
        return false;
      }
    }
    return true;
  } catch (const std::exception&) {
    return false;
  }
}

void printCounts() {
  std::fprintf(
      stderr,
      "fuzz_model_files: %zu cases: container valid %zu (after repair %zu), code "
      "or pickles mutated (parse-checked only) %zu, torch::jit::load ok %zu, StaticModule built "
      "%zu, ran on example inputs %zu\n",
      g_counts.cases, g_counts.container_ok, g_counts.repaired, g_counts.code_mutated,
      g_counts.loaded, g_counts.built, g_counts.ran);
}

uint16_t little16(const std::string& bytes, size_t at) {
  return static_cast<uint16_t>(static_cast<uint8_t>(bytes[at]) | static_cast<uint8_t>(bytes[at + 1])
                                                                     << 8);
}

// Whether PyTorchStreamReader accepts the archive and can read every record.
bool containerIsValid(const std::string& bytes) {
  try {
    std::istringstream stream(bytes);
    std::unique_ptr<caffe2::serialize::PyTorchStreamReader> opened;
    {
      // LibTorch 1.13 leaks miniz's reader state (mz_zip_reader_init) whenever the constructor
      // throws after opening the zip, e.g. on a missing or bad version record (README.md). Leak
      // checking is off for the constructor only; the archive torch::jit::load later opens
      // again has passed it.
      __lsan::ScopedDisabler libtorch_leaks_on_rejected_archives;
      opened = std::make_unique<caffe2::serialize::PyTorchStreamReader>(&stream);
    }
    caffe2::serialize::PyTorchStreamReader& reader = *opened;
    for (const std::string& record : reader.getAllRecords()) {
      (void)reader.getRecord(record);
    }
    return true;
  } catch (const std::exception&) {
    return false;
  }
}

// The records of a damaged archive, rewritten into a valid one; "" when none is recovered. A
// record's data runs from the end of its local header to the next zip signature (PyTorch writes
// its sizes in a data descriptor after the data, so the header does not give them).
std::string repairedArchive(const std::string& bytes) {
  static const std::string kLocalHeader("PK\x03\x04", 4);
  static const std::string kSignatures[] = {kLocalHeader, std::string("PK\x07\x08", 4),
                                            std::string("PK\x01\x02", 4)};
  std::string rebuilt;
  try {
    caffe2::serialize::PyTorchStreamWriter writer([&rebuilt](const void* data, size_t size) {
      rebuilt.append(static_cast<const char*>(data), size);
      return size;
    });
    std::set<std::string> written;
    for (size_t header = bytes.find(kLocalHeader);
         header != std::string::npos && header + 30 <= bytes.size();) {
      const size_t name_size = little16(bytes, header + 26);
      const size_t begin = header + 30 + name_size + little16(bytes, header + 28);
      if (begin > bytes.size()) {
        break;
      }
      size_t end = bytes.size();
      for (const std::string& signature : kSignatures) {
        end = std::min(end, bytes.find(signature, begin));
      }
      // Inside the archive the first path component is the archive's name; the writer adds its
      // own, and its own version record.
      const std::string name = bytes.substr(header + 30, name_size);
      const size_t slash = name.find('/');
      const std::string record = slash == std::string::npos ? "" : name.substr(slash + 1);
      if (!record.empty() && record != "version" && record != ".data/version" &&
          written.insert(record).second) {
        writer.writeRecord(record, bytes.data() + begin, end - begin);
      }
      header = bytes.find(kLocalHeader, end);
    }
    if (written.empty()) {
      return "";
    }
    writer.writeEndOfFile();
  } catch (const std::exception&) {
    return "";
  }
  return rebuilt;
}

// Example inputs are decoded from the (mutated) archive: bound their size like harness 1 does.
bool withinBudget(const std::vector<srt::cli::InputSpec>& specs) {
  long double total = 0;
  for (const auto& spec : specs) {
    long double numel = 1;
    for (int64_t dim : spec.shape) {
      if (dim < 0) {
        return false;
      }
      numel *= static_cast<long double>(dim);
    }
    total += numel * static_cast<long double>(c10::elementSize(spec.dtype));
  }
  return total <= srt::fuzz::kMaxTensorBytes && specs.size() <= 16;
}

} // namespace

// Called by AddressSanitizer before it prints a report (also for SEGV and, with handle_abort=1,
// aborts): says which stage, so whose code crashed is plain before the stack is read.
extern "C" void __asan_on_error() {
  std::fprintf(stderr, "fuzz_model_files: sanitizer report during stage: %s\n", g_stage);
}

extern "C" int LLVMFuzzerInitialize(int* /*argc*/, char*** /*argv*/) {
  at::set_num_threads(1);
  std::atexit(printCounts);
  const char* zoo = std::getenv("SRT_FUZZ_ZOO_DIR");
  if (zoo == nullptr) {
    std::fprintf(stderr,
                 "fuzz_model_files: set SRT_FUZZ_ZOO_DIR to the zoo (test/fuzz/run.sh does)\n");
    std::exit(2);
  }
  for (const auto& entry : std::filesystem::directory_iterator(zoo)) {
    const std::string path = entry.path().string();
    if (entry.path().extension() == ".pt" && path.find(".inputs.pt") == std::string::npos) {
      std::ifstream in(path, std::ios::binary);
      for (std::string code : codeRecordsOf(in)) {
        g_known_code.insert(std::move(code));
      }
    }
  }
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string bytes(reinterpret_cast<const char*>(data), size);

  g_stage = "1 [LibTorch] PyTorchStreamReader/Writer: zip container, record CRCs, repair";
  ++g_counts.cases;
  if (!containerIsValid(bytes)) {
    bytes = repairedArchive(bytes);
    if (bytes.empty() || !containerIsValid(bytes)) {
      return 0;
    }
    ++g_counts.repaired;
  }
  ++g_counts.container_ok;

  if (!codeIsKnown(bytes)) {
    g_stage = "2a [ours] srt::loadTorchScript's parse check of mutated code";
    ++g_counts.code_mutated;
    try {
      std::istringstream stream(bytes);
      srt::checkTorchScriptCode(stream);
    } catch (const std::exception&) {
    }
    return 0;
  }

  g_stage = "2 [ours, then LibTorch] srt::loadTorchScript: code parse check, torch::jit::load";
  torch::jit::Module module;
  torch::jit::ExtraFilesMap extra_files{{"srt/example_inputs", ""}};
  try {
    std::istringstream stream(bytes);
    module = srt::loadTorchScript(stream, extra_files);
  } catch (const std::exception&) {
    return 0;
  }
  ++g_counts.loaded;

  g_stage = "3 [ours] StaticModule construction";
  std::unique_ptr<srt::StaticModule> static_module;
  try {
    static_module = std::make_unique<srt::StaticModule>(module);
  } catch (const std::exception&) {
    return 0;
  }
  ++g_counts.built;

  g_stage = "4 [ours] running on the archive's example inputs";
  std::vector<srt::cli::InputSpec> specs;
  try {
    specs = srt::cli::parseExampleInputs(extra_files["srt/example_inputs"]);
  } catch (const std::exception&) {
    return 0;
  }
  if (!withinBudget(specs)) {
    return 0;
  }
  try {
    srt::StaticRuntime runtime(*static_module);
    const std::vector<c10::IValue> inputs = srt::cli::makeInputs(specs);
    // Twice: the second run takes the planned-memory path.
    (void)runtime(inputs);
    (void)runtime(inputs);
    ++g_counts.ran;
  } catch (const std::exception&) {
  }
  g_stage = "decoding";
  return 0;
}
