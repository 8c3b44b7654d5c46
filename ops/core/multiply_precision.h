// What the multiplications of a GEMM or a convolution with a packed weight read. bfloat16 keeps
// float32's range with an 8-bit mantissa: the weight is stored so, the activation rounded to it
// on each call, the products summed in float32. On a CPU with AMX or AVX512-BF16 it runs several
// times faster than float32 (StaticModuleOptions::fp32_precision = "bf16" asks for it).
#pragma once

namespace srt::ops {

enum class MultiplyPrecision { kFloat32, kBFloat16 };

// Whether this CPU multiplies bfloat16 natively (AVX512-BF16 or AMX). Elsewhere oneDNN emulates
// bfloat16, slower than float32, so a request for it keeps float32.
bool cpuMultipliesBFloat16();

} // namespace srt::ops
