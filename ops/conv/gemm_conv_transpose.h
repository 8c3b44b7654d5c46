// 2-D transposed convolutions as products: each input pixel's contribution to the output, a
// kh x kw block of C_out-channel pixels, is one row of the GEMM [pixels, C_in] x [C_in, kh * kw *
// C_out]; the blocks are then placed into the channels-last output: copied where the kernel equals
// the stride (a UNet decoder's ConvTranspose2d(2, stride=2): no two blocks overlap), added up
// where they overlap (a DCGAN generator's ConvTranspose2d(4, 2, 1)), as ONNX Runtime computes
// them (GEMM + col2im). oneDNN 2.6's deconvolution ran such layers at 18-54 G multiply-adds/s on
// one AVX-512 core (AMD EPYC, Zen 5: a UNet's 64 -> 32 from 64x64 1.37 ms; DCGAN's 64 -> 3 from
// 32x32 176 us), its matmul at over 100.
#pragma once

#include <optional>

#include <ATen/core/Tensor.h>

#include "ops/conv/onednn_conv.h"
#include "ops/core/kernel.h"
#include "ops/core/multiply_precision.h"

namespace srt::ops {

// The kernel for aten::conv_transpose2d of `weight` ([C_in, C_out, kh, kw] float32) and `bias`
// ([C_out] or undefined) with `arguments` (ungrouped, undilated; any stride, padding and output
// padding), its products in `precision` (KernelOptions::weight_precision: the weight is packed
// here, not by passes/bf16_weights.cpp); std::nullopt for anything else (or a weight oneDNN's
// matmul cannot pack). It runs a channels-last or contiguous float32 input of C_in channels into an
// output laid out the same (an NCHW one transposed before and after), and `fallback` for anything
// else (other layouts and dtypes, ATen's errors).
std::optional<KernelFunction> makeGemmConvTransposeKernel(const at::Tensor& weight,
                                                          const at::Tensor& bias,
                                                          const ConvArguments& arguments,
                                                          MultiplyPrecision precision,
                                                          KernelFunction fallback);

} // namespace srt::ops
