// srt's commands. Each returns the process exit status; errors propagate as exceptions
// (UsageError: bad arguments or unreadable model; c10::Error: the model failed).
#pragma once

#include "tools/cli.h"

namespace srt::cli {

// Runs the model once, prints its outputs, checks them against TorchScript and compares latency.
int runCommand(const Arguments& args);

// Prints the prepared graph, node counts by kernel kind, fallback ops, and the memory plan after
// one run on the example inputs (or --input).
int inspectCommand(const Arguments& args);

// Replaces srt with `/usr/bin/python3 -m static_runtime bench <args>`; returns only by throwing.
int benchCommand(const Arguments& args);

} // namespace srt::cli
