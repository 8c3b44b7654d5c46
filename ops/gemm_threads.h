// Makes oneDNN and OpenBLAS use the caller's at::get_num_threads() for the next GEMM call.
#pragma once

namespace srt::ops {

// Sets the calling thread's OpenMP thread count, which oneDNN (OpenMP runtime on Debian) reads at
// primitive creation and execution. Returns the count, part of a cached primitive's key.
int useAtenThreadsForOneDnn();

// Sets OpenBLAS's process-wide thread count. Also called before ATen's own GEMMs, which on Debian
// go to OpenBLAS without ATen passing its thread count on.
void useAtenThreadsForOpenBlas();

} // namespace srt::ops
