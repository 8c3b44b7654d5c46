#include "static_runtime/model_loading.h"

#include <memory>

#include <caffe2/serialize/inline_container.h>
#include <torch/csrc/jit/frontend/error_report.h>
#include <torch/csrc/jit/frontend/lexer.h>
#include <torch/csrc/jit/frontend/parser.h>
#include <torch/csrc/jit/frontend/source_range.h>

namespace srt {
namespace {

bool isCodeRecord(const std::string& name) {
  const std::string suffix = ".py";
  return name.rfind("code/", 0) == 0 && name.size() > suffix.size() &&
         name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// The top level of a serialized code file as LibTorch's SourceImporter reads it: an optional
// op_version_set line, then imports, classes and functions.
void parseCodeRecord(const std::string& name, c10::string_view text) {
  using namespace torch::jit;
  // Not copied: the record outlives the parser, and the archive's code can be large.
  auto source =
      std::make_shared<Source>(text, name, /*starting_line_no=*/1, nullptr, Source::DONT_COPY);
  Parser parser(source);
  Lexer& lexer = parser.lexer();
  if (lexer.cur().kind == TK_IDENT && lexer.cur().text() == "op_version_set") {
    lexer.next();
    lexer.expect('=');
    lexer.expect(TK_NUMBER);
    lexer.expect(TK_NEWLINE);
  }
  while (lexer.cur().kind != TK_EOF) {
    while (lexer.nextIf(TK_IMPORT)) {
      while (lexer.cur().kind != TK_NEWLINE && lexer.cur().kind != TK_EOF) {
        lexer.next();
      }
      lexer.expect(TK_NEWLINE);
    }
    switch (lexer.cur().kind) {
    case TK_CLASS_DEF:
      parser.parseClass();
      break;
    case TK_DEF:
      parser.parseFunction(/*is_method=*/false);
      break;
    case TK_EOF:
      break;
    default:
      throw ErrorReport(lexer.cur().range)
          << "Unexpected token in code import: " << kindToString(lexer.cur().kind);
    }
  }
}

void checkCodeParses(caffe2::serialize::PyTorchStreamReader& reader) {
  for (const std::string& name : reader.getAllRecords()) {
    if (!isCodeRecord(name)) {
      continue;
    }
    auto [data, size] = reader.getRecord(name);
    try {
      parseCodeRecord(name, c10::string_view(static_cast<const char*>(data.get()), size));
    } catch (const std::exception& error) {
      TORCH_CHECK(false, "the archive's code does not parse (", name, "): ", error.what());
    }
  }
}

} // namespace

torch::jit::Module loadTorchScript(const std::string& path,
                                   torch::jit::ExtraFilesMap& extra_files) {
  {
    caffe2::serialize::PyTorchStreamReader reader(path);
    checkCodeParses(reader);
  }
  return torch::jit::load(path, c10::nullopt, extra_files);
}

void checkTorchScriptCode(std::istream& in) {
  caffe2::serialize::PyTorchStreamReader reader(&in);
  checkCodeParses(reader);
}

torch::jit::Module loadTorchScript(std::istream& in, torch::jit::ExtraFilesMap& extra_files) {
  const std::streampos start = in.tellg();
  checkTorchScriptCode(in);
  in.clear();
  in.seekg(start);
  return torch::jit::load(in, c10::nullopt, extra_files);
}

} // namespace srt
