// aten::stft (torch.stft, torchaudio's Spectrogram / MelSpectrogram / MFCC front ends) writing
// its spectrum into last run's output.
//
// ATen's stft frames the signal as a strided view, multiplies the frames by the window into a new
// tensor, runs the real-to-complex FFT into another and returns it transposed to (freq, frame).
// Here the windowed frames go to the node's planned scratch and the FFT into the node's output, by
// the same ATen calls, so the values are ATen's. The common case runs so: a real float input of
// one or two dimensions, a window as long as the FFT or none, a complex result. Anything else
// (a shorter window, complex input, return_complex=False) runs ATen's stft whole, into a fresh
// tensor.
#include <ATen/ATen.h>

#include "ops/core/inference_dispatch.h"
#include "ops/core/out_variant.h"
#include "ops/core/processed_node.h"
#include "ops/core/registry.h"
#include "ops/core/schema_match.h"

namespace srt::ops {
namespace {

struct StftArguments {
  const at::Tensor& self;
  int64_t n_fft;
  c10::optional<int64_t> hop_length;
  c10::optional<int64_t> win_length;
  c10::optional<at::Tensor> window;
  bool normalized;
  c10::optional<bool> onesided;
  c10::optional<bool> return_complex;
};

StftArguments readArguments(const ProcessedNode& p) {
  return {p.input(0).toTensor(),
          p.input(1).toInt(),
          p.input(2).toOptional<int64_t>(),
          p.input(3).toOptional<int64_t>(),
          p.input(4).toOptional<at::Tensor>(),
          p.input(5).toBool(),
          p.input(6).toOptional<bool>(),
          p.input(7).toOptional<bool>()};
}

at::Tensor atenStft(const StftArguments& a) {
  return at::stft(a.self, a.n_fft, a.hop_length, a.win_length, a.window, a.normalized, a.onesided,
                  a.return_complex);
}

// The case written into the node's own output (see the top of the file).
bool takesPlannedPath(const StftArguments& a) {
  const at::Tensor& x = a.self;
  if (x.scalar_type() != at::kFloat || (x.dim() != 1 && x.dim() != 2) ||
      !a.return_complex.value_or(false) || a.onesided == c10::optional<bool>(false)) {
    return false;
  }
  const int64_t length = x.size(-1);
  const int64_t hop = a.hop_length.value_or(a.n_fft >> 2);
  const int64_t win_length = a.win_length.value_or(a.n_fft);
  // Where ATen would refuse the arguments, its own stft says so.
  if (a.n_fft <= 0 || a.n_fft > length || hop <= 0 || win_length != a.n_fft) {
    return false;
  }
  return !a.window || (a.window->scalar_type() == at::kFloat && a.window->dim() == 1 &&
                       a.window->size(0) == a.n_fft);
}

void stft(ProcessedNode& p) {
  const StftArguments a = readArguments(p);
  const InferenceDispatch below_autograd;
  if (!takesPlannedPath(a)) {
    p.output(0) = atenStft(a);
    return;
  }
  const at::Tensor input = a.self.dim() == 1 ? a.self.unsqueeze(0) : a.self;
  const int64_t batch = input.size(0);
  const int64_t hop = a.hop_length.value_or(a.n_fft >> 2);
  const int64_t frames = 1 + (input.size(1) - a.n_fft) / hop;
  const at::Tensor framed = input.as_strided(
      {batch, frames, a.n_fft}, {input.stride(0), hop * input.stride(1), input.stride(1)});
  at::Tensor windowed = framed;
  if (a.window) {
    void* scratch = p.scratch(static_cast<size_t>(batch * frames * a.n_fft) * sizeof(float));
    windowed = at::from_blob(scratch, {batch, frames, a.n_fft}, input.options());
    at::mul_out(windowed, framed, *a.window);
  }
  at::Tensor& out = outputTensor(p, 0, input.options().dtype(at::kComplexFloat));
  const int64_t normalization = a.normalized ? 1 : 0; // fft_norm_mode: none, by_root_n
  at::_fft_r2c_out(out, windowed, {2}, normalization, /*onesided=*/true);
  out.transpose_(1, 2);
  if (a.self.dim() == 1) {
    out.squeeze_(0);
  }
}

} // namespace

SRT_REGISTER_KERNEL("aten::stft", kOutVariant,
                    whenMatches("aten::stft(Tensor self, int n_fft, int? hop_length=None, int? "
                                "win_length=None, Tensor? window=None, bool normalized=False, "
                                "bool? onesided=None, bool? return_complex=None) -> Tensor",
                                stft));

} // namespace srt::ops
