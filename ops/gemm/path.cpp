#include "ops/gemm/path.h"

#include "ops/gemm/openblas.h"
#include "ops/gemm/small_loops.h"

namespace srt::ops {

GemmBackend backendWithoutPackedWeight(GemmBackend configured) {
  return configured == GemmBackend::kOpenBlas ? GemmBackend::kOpenBlas : GemmBackend::kAten;
}

GemmPath chooseGemmPath(const GemmProblem& problem, GemmBackend backend) {
  if (smallGemmSupports(problem)) {
    return GemmPath::kSmallLoops;
  }
  if (backend == GemmBackend::kOpenBlas && openblasSupports(problem)) {
    return GemmPath::kOpenBlas;
  }
  return GemmPath::kAten;
}

bool runUnlessAten(GemmPath path, const GemmProblem& problem, const at::Tensor& out) {
  switch (path) {
  case GemmPath::kSmallLoops:
    runSmallGemm(problem, out);
    return true;
  case GemmPath::kOpenBlas:
    runOpenBlas(problem, out);
    return true;
  case GemmPath::kAten:
    break;
  }
  return false;
}

} // namespace srt::ops
