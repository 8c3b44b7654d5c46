#include "ops/core/onednn_engine.h"

namespace srt::ops {

// Leaked on purpose: packed weights and node states may be destroyed after static destructors ran.
const dnnl::engine& oneDnnEngine() {
  static const auto* engine = new dnnl::engine(dnnl::engine::kind::cpu, 0);
  return *engine;
}

} // namespace srt::ops
