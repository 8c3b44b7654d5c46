// The ATen backend: ATen's CPU out-variant kernels, called directly (no dispatcher). Also what the
// oneDNN and OpenBLAS backends run for what they do not cover (other dtypes, awkward ranks).
#pragma once

namespace srt::ops {

class ProcessedNode;

void atenLinear(ProcessedNode& p);
void atenAddmm(ProcessedNode& p);
void atenMm(ProcessedNode& p);
void atenMatmul(ProcessedNode& p);
void atenBmm(ProcessedNode& p);
void atenBaddbmm(ProcessedNode& p);

} // namespace srt::ops
