// srt::loadTorchScript (static_runtime/model_loading.h): archives whose code has a syntax error
// are a c10::Error naming the record, not LibTorch's crash; valid ones load as torch::jit::load.
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>

#include <caffe2/serialize/inline_container.h>
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "harness/differential.h"
#include "static_runtime/model_loading.h"
#include "static_runtime/static_runtime.h"

namespace srt::testing {
namespace {

constexpr const char* kSource = R"JIT(
def forward(self, x):
    y = torch.relu(x)
    return y + 1
)JIT";

std::string savedArchive() {
  std::ostringstream out;
  torch::jit::ExtraFilesMap extra{{"srt/note", "hello"}};
  scriptModule(kSource).save(out, extra);
  return out.str();
}

// The archive with `edit` applied to every serialized code record (code/**.py), all other
// records (the debug info among them) as they were, written afresh so that the CRCs match.
template <typename Edit> std::string withEditedCode(const std::string& archive, Edit edit) {
  std::istringstream in(archive);
  caffe2::serialize::PyTorchStreamReader reader(&in);
  std::string rebuilt;
  caffe2::serialize::PyTorchStreamWriter writer([&rebuilt](const void* data, size_t size) {
    rebuilt.append(static_cast<const char*>(data), size);
    return size;
  });
  bool edited = false;
  for (const std::string& name : reader.getAllRecords()) {
    auto [data, size] = reader.getRecord(name);
    std::string bytes(static_cast<const char*>(data.get()), size);
    const bool code = name.rfind("code/", 0) == 0 && name.size() > 3 &&
                      name.compare(name.size() - 3, 3, ".py") == 0;
    if (code) {
      edit(bytes);
      edited = true;
    }
    if (name != ".data/version" && name != "version") {
      writer.writeRecord(name, bytes.data(), bytes.size());
    }
  }
  writer.writeEndOfFile();
  EXPECT_TRUE(edited) << "no code record in the archive";
  return rebuilt;
}

bool hasDebugInfo(const std::string& archive) {
  std::istringstream in(archive);
  caffe2::serialize::PyTorchStreamReader reader(&in);
  for (const std::string& name : reader.getAllRecords()) {
    if (name.find(".debug_pkl") != std::string::npos) {
      return true;
    }
  }
  return false;
}

TEST(ModelLoading, ValidArchiveLoadsWithItsExtraFiles) {
  std::istringstream in(savedArchive());
  torch::jit::ExtraFilesMap extra{{"srt/note", ""}};
  torch::jit::Module module = loadTorchScript(in, extra);
  EXPECT_EQ(extra["srt/note"], "hello");
  StaticModule static_module(module);
  const at::Tensor x = torch::randn({3});
  EXPECT_TRUE(torch::equal(static_module({x}).toTensor(), torch::relu(x) + 1));
}

// A syntax error in code that comes with debug info: our parse check reports it, naming the
// record, before LibTorch's importer (which can crash reporting such errors, below) sees it.
TEST(ModelLoading, SyntaxErrorInCodeWithDebugInfoIsAnError) {
  const std::string archive = savedArchive();
  ASSERT_TRUE(hasDebugInfo(archive)) << "the case needs the debug info LibTorch trips on";
  const std::string broken = withEditedCode(archive, [](std::string& code) {
    const size_t at = code.find("def forward(self");
    ASSERT_NE(at, std::string::npos) << code;
    code.replace(at + 4, 7, "forw(rd"); // same length: the debug ranges still fit
  });
  ASSERT_TRUE(hasDebugInfo(broken));
  std::istringstream in(broken);
  torch::jit::ExtraFilesMap extra;
  try {
    (void)loadTorchScript(in, extra);
    FAIL() << "loaded an archive whose code does not parse";
  } catch (const c10::Error& error) {
    const std::string message = error.what_without_backtrace();
    EXPECT_NE(message.find("the archive's code does not parse"), std::string::npos) << message;
    EXPECT_NE(message.find("code/"), std::string::npos) << message;
  }
}

// The archive fuzz_model_files found (test/data, CRC-valid): its code/__torch__/zoo.py has
// "torch." turned into "torr(" and its debug info is intact. torch::jit::load (and PyTorch's
// torch.jit.load) die of SIGSEGV in SourceRange::highlight on it.
TEST(ModelLoading, LibTorchCrashingArchiveIsAnError) {
  const std::string path = std::string(SRT_TEST_DATA_DIR) + "/syntax_error_with_debug_info.pt";
  torch::jit::ExtraFilesMap extra;
  try {
    (void)loadTorchScript(path, extra);
    FAIL() << "loaded " << path;
  } catch (const c10::Error& error) {
    const std::string message = error.what_without_backtrace();
    EXPECT_NE(message.find("does not parse (code/__torch__/zoo.py)"), std::string::npos) << message;
  }
  // The same runtime machinery keeps working afterwards.
  std::istringstream valid(savedArchive());
  EXPECT_NO_THROW((void)loadTorchScript(valid, extra));
}

TEST(ModelLoading, StaticModuleLoadReportsTheFileAndKeepsWorking) {
  const std::string path = ::testing::TempDir() + "srt_model_loading_broken.pt";
  {
    std::ofstream out(path, std::ios::binary);
    out << withEditedCode(
        savedArchive(), [](std::string& code) { code.replace(code.find("return"), 6, "ret(rn"); });
  }
  try {
    (void)StaticModule::load(path);
    FAIL() << "loaded an archive whose code does not parse";
  } catch (const c10::Error& error) {
    const std::string message = error.what_without_backtrace();
    EXPECT_NE(message.find(path), std::string::npos) << message;
    EXPECT_NE(message.find("does not parse"), std::string::npos) << message;
  }
  std::remove(path.c_str());
}

} // namespace
} // namespace srt::testing
