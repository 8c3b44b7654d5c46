// The one error type of srt's own checks: a mistake in how srt was called.
#pragma once

#include <stdexcept>

namespace srt::cli {

// Bad arguments or an unreadable model: exit status 2. Errors from the model itself stay
// c10::Error (exit status 1), so the two never mix.
class UsageError : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

} // namespace srt::cli
