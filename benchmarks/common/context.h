// What every benchmark prints next to its numbers: machine facts that change them.
#pragma once

namespace srt::bench {

// Adds thread count, OPENBLAS_CORETYPE / OPENBLAS_L2_SIZE and torch's parallel backend to the
// Google Benchmark context. Sets the intra-op thread count to $SRT_BENCH_THREADS (default 1).
void addStandardContext();

} // namespace srt::bench
