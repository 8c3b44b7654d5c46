#include "ops/core/onednn_engine.h"

#include "ops/core/multiply_precision.h"

namespace srt::ops {

// Leaked on purpose: packed weights and node states may be destroyed after static destructors ran.
const dnnl::engine& oneDnnEngine() {
  static const auto* engine = new dnnl::engine(dnnl::engine::kind::cpu, 0);
  return *engine;
}

bool cpuMultipliesBFloat16() {
  // oneDNN's ISA values are sets of feature bits: AMX's include all of avx512_core_bf16's.
  const auto bits = [](dnnl::cpu_isa isa) { return static_cast<unsigned>(isa); };
  static const bool native =
      (bits(dnnl::get_effective_cpu_isa()) & bits(dnnl::cpu_isa::avx512_core_bf16)) ==
      bits(dnnl::cpu_isa::avx512_core_bf16);
  return native;
}

} // namespace srt::ops
