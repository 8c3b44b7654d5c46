// What every benchmark prints next to its numbers: machine facts that change them.
#pragma once

namespace srt::bench {

// Sets the intra-op thread count and adds it, with OPENBLAS_CORETYPE / OPENBLAS_L2_SIZE, to the
// Google Benchmark context. Call after benchmark::Initialize.
void addStandardContext(int threads);

} // namespace srt::bench
