// Transposed convolutions whose kernel equals their stride (a UNet decoder's
// ConvTranspose2d(k=2, s=2)): no two input pixels write the same output pixel, each writes its
// own kh x kw block, so the whole is one GEMM, [pixels, C_in] x [C_in, kh * kw * C_out], whose
// rows are the blocks, copied into place in the channels-last output. oneDNN 2.6's deconvolution
// ran such layers at 24-53 G multiply-adds/s on one AVX-512 core (a UNet's 64 -> 32 from 64x64:
// 1.37 ms), its matmul at over 100.
#pragma once

#include <optional>

#include <ATen/core/Tensor.h>

#include "ops/conv/onednn_conv.h"
#include "ops/core/kernel.h"

namespace srt::ops {

// The kernel for aten::conv_transpose2d of `weight` ([C_in, C_out, kh, kw] float32) and `bias`
// ([C_out] or undefined) with `arguments`, where the stride equals the kernel, ungrouped,
// unpadded, undilated, without output padding; std::nullopt for anything else (or a weight
// oneDNN's matmul cannot pack). It runs a channels-last float32 input of C_in channels into a
// channels-last output, and `fallback` for anything else (an NCHW input, other dtypes, ATen's
// errors).
std::optional<KernelFunction> makeBlockConvTransposeKernel(const at::Tensor& weight,
                                                           const at::Tensor& bias,
                                                           const ConvArguments& arguments,
                                                           KernelFunction fallback);

} // namespace srt::ops
