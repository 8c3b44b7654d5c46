// What oneDNN ran, for tests that check which of its kernels a node gets (its reference kernel
// and im2col + GEMM are correct, and hundreds of times or a few times slower): oneDNN's verbose
// log of one call, one line per primitive executed ("onednn_verbose,exec,cpu,convolution,
// jit:avx512_core,...").
#pragma once

#include <string>
#include <vector>

#include <ATen/core/ivalue.h>

#include <dnnl.h>
#include <gtest/gtest.h>

namespace srt::testing {

// The log of what `run` executes. Run it once before, so that the log shows the steady state, not
// the first run's one-time weight reorders.
template <typename Run> std::string oneDnnLog(const Run& run) {
  ::testing::internal::CaptureStdout();
  dnnl_set_verbose(1);
  run();
  dnnl_set_verbose(0);
  return ::testing::internal::GetCapturedStdout();
}

// The log of `runtime`'s second call on `inputs`: the first builds the primitives.
template <typename Runtime>
std::string steadyStateLog(Runtime& runtime, const std::vector<c10::IValue>& inputs) {
  static_cast<void>(runtime(inputs));
  return oneDnnLog([&] { static_cast<void>(runtime(inputs)); });
}

} // namespace srt::testing
