// The contract between the layout passes and the copy kernel for the conversions they insert.
#pragma once

namespace srt::ops {

// Set (to 1) on an aten::contiguous(x, channels_last) that an optimization inserted before a
// convolution rather than one the model wrote: x of a rank that format has no layout for (an
// unbatched [C, H, W] image, which eager's convolutions take) stays in its own order, contiguous,
// where ATen's contiguous would raise. A model's own call keeps ATen's error.
constexpr const char* kLayoutForConvolution = "layout_for_convolution";

} // namespace srt::ops
