// Which operators of the whole-model zoo entries still run through the JIT fallback, leaving out
// the two families other kernel files own (GEMM; element-wise math, activations, normalization
// and reductions). Everything else in these models has a kernel, and this keeps it that way.
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <map>
#include <set>

#include <gtest/gtest.h>
#include <torch/script.h>

#include "harness/differential.h"
#include "static_runtime/program.h"

namespace srt::testing {
namespace {

const std::set<std::string> kGemmOps = {"aten::linear", "aten::matmul", "aten::mm",
                                        "aten::bmm",    "aten::addmm",  "aten::baddbmm"};

// Element-wise / activation / softmax / normalization / reduction ops, and tensor factories
// that fill (zeros_like), which belong with the element-wise kernels. Only their tensor
// overloads: aten::add.int, aten::sqrt.int ... are ours.
const std::set<std::string> kMathOps = {
    "aten::add",        "aten::sub",        "aten::mul",   "aten::div",         "aten::relu",
    "aten::sigmoid",    "aten::gelu",       "aten::tanh",  "aten::softmax",     "aten::log_softmax",
    "aten::layer_norm", "aten::batch_norm", "aten::clamp", "aten::masked_fill", "aten::logical_or",
    "aten::zeros_like", "aten::sum",        "aten::mean",  "aten::sqrt"};

bool takesTensorFirst(const torch::jit::Node* node) {
  const c10::FunctionSchema* schema = node->maybeSchema();
  return schema != nullptr && !schema->arguments().empty() &&
         schema->arguments()[0].type()->kind() == c10::TypeKind::TensorType;
}

// "aten::add.Tensor": operator and overload of a node.
std::string overloadName(const torch::jit::Node* node) {
  std::string name = node->kind().toQualString();
  if (const c10::FunctionSchema* schema = node->maybeSchema()) {
    if (!schema->overload_name().empty()) {
      name += "." + schema->overload_name();
    }
  }
  return name;
}

std::string zooDir() {
  const char* from_environment = std::getenv("SRT_ZOO_DIR");
  return from_environment ? from_environment : SRT_ZOO_DIR;
}

class ShapeZooFallbacks : public ::testing::TestWithParam<std::string> {};

TEST_P(ShapeZooFallbacks, OnlyGemmAndMathOpsFallBack) {
  const std::string path = zooDir() + "/" + GetParam() + ".pt";
  if (!std::ifstream(path).good()) {
    GTEST_SKIP() << "no zoo model at " << path << " (build the model_zoo target)";
  }
  torch::jit::Module module = torch::jit::load(path);
  module.eval();
  StaticModule static_module(module);
  std::set<std::string> remaining;
  std::map<std::string, size_t> all;
  for (const BlockInfo& block : static_module.program().blocks) {
    for (const ops::StaticNodeInfo& info : block.nodes) {
      if (info.kernel.kind != ops::KernelKind::kFallback) {
        continue;
      }
      const std::string op = info.node->kind().toQualString();
      ++all[overloadName(info.node)];
      const bool others = kGemmOps.count(op) || (kMathOps.count(op) && takesTensorFirst(info.node));
      if (!others) {
        remaining.insert(overloadName(info.node));
      }
    }
  }
  std::string listing;
  for (const auto& [op, count] : all) {
    listing += " " + op + " x" + std::to_string(count);
  }
  std::cout << "[ fallback ] " << GetParam() << ":" << (listing.empty() ? " none" : listing)
            << "\n";
  EXPECT_EQ(remaining, std::set<std::string>{}) << GetParam();
}

INSTANTIATE_TEST_SUITE_P(ShapeZoo, ShapeZooFallbacks,
                         ::testing::Values("mlp", "transformer_block", "deep_and_wide", "cnn",
                                           "transformer_encoder_layer"),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           return info.param;
                         });

} // namespace
} // namespace srt::testing
