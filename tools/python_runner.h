// Running the Python half of static_runtime (the `static_runtime` package) from srt: one
// implementation of bench and of the plots, in Python, reached through /usr/bin/python3, the
// interpreter torch is installed for.
#pragma once

#include <string>
#include <vector>

namespace srt::cli {

// Where the package `static_runtime` is looked for, in order: $SRT_PYTHONPATH, an installed copy
// (<exe>/../lib/python3.X/dist-packages, or SRT_PYTHON_INSTALL_DIR's directory), the build tree
// srt was built in.
std::vector<std::string> pythonPackageCandidates();

// Replaces this process with `python3 -m <module> <args...>` (PYTHONPATH set to the package).
// Returns only by throwing UsageError: no interpreter, no built package, exec failed. Missing
// torch or matplotlib is reported by the Python side in one line, before anything runs.
[[noreturn]] void execPythonModule(const std::string& module, const std::vector<std::string>& args);

// Runs `python3 -m <module> <args...>` as a child and waits; throws std::runtime_error naming the
// command when it cannot start or exits non-zero (its stderr is passed through).
void runPythonModule(const std::string& module, const std::vector<std::string>& args);

} // namespace srt::cli
