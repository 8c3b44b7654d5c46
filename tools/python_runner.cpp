#include "tools/python_runner.h"

#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <stdexcept>

#include "tools/usage_error.h"

#ifndef SRT_PYTHON_BUILD_DIR
#error "SRT_PYTHON_BUILD_DIR must name <build>/python (see CMakeLists.txt)"
#endif
#ifndef SRT_PYTHON_INSTALL_SITE // python/CMakeLists.txt: where cmake --install puts the package
#define SRT_PYTHON_INSTALL_SITE "lib/python3/dist-packages"
#endif

namespace srt::cli {
namespace {

// torch exists only for the system interpreter (Debian python3-torch).
constexpr const char* kPython = "/usr/bin/python3";

// Checks the imports first so that a missing piece is one clear line, not a traceback, then runs
// the module as `python3 -m` would.
constexpr const char* kBootstrap = R"(import sys
module, sys.argv = sys.argv[1], ["python3 -m " + sys.argv[1]] + sys.argv[2:]
try:
    import torch
except ImportError as error:
    sys.exit(f"srt: {sys.executable} cannot import torch ({error}); install python3-torch")
try:
    import static_runtime
except ImportError as error:
    sys.exit(f"srt: cannot import static_runtime ({error}); build the Python module "
             "(cmake --build build --target _C) or set SRT_PYTHONPATH")
import runpy
runpy.run_module(module, run_name="__main__", alter_sys=True)
)";

std::filesystem::path executableDir() {
  std::error_code error;
  std::filesystem::path exe = std::filesystem::read_symlink("/proc/self/exe", error);
  return error ? std::filesystem::path() : exe.parent_path();
}

std::string findPackageDir() {
  std::string tried;
  for (const std::string& candidate : pythonPackageCandidates()) {
    if (std::filesystem::exists(std::filesystem::path(candidate) / "static_runtime" /
                                "__init__.py")) {
      return candidate;
    }
    tried += (tried.empty() ? "" : ", ") + candidate;
  }
  throw UsageError("the Python package static_runtime is not built (looked in " + tried +
                   "); build it with cmake --build build --target _C (SRT_BUILD_PYTHON=ON)");
}

// argv for execv: python3 -c BOOTSTRAP MODULE ARGS...; PYTHONPATH is set in this process.
std::vector<std::string> commandLine(const std::string& module,
                                     const std::vector<std::string>& args) {
  if (access(kPython, X_OK) != 0) {
    throw UsageError(std::string(kPython) +
                     " is missing; install python3 and python3-torch to use this command");
  }
  std::string path = findPackageDir();
  if (const char* existing = std::getenv("PYTHONPATH"); existing && *existing) {
    path += std::string(":") + existing;
  }
  setenv("PYTHONPATH", path.c_str(), 1);
  std::vector<std::string> command = {kPython, "-c", kBootstrap, module};
  command.insert(command.end(), args.begin(), args.end());
  return command;
}

std::vector<char*> pointers(std::vector<std::string>& command) {
  std::vector<char*> argv;
  for (std::string& part : command) {
    argv.push_back(part.data());
  }
  argv.push_back(nullptr);
  return argv;
}

} // namespace

std::vector<std::string> pythonPackageCandidates() {
  std::vector<std::string> candidates;
  if (const char* given = std::getenv("SRT_PYTHONPATH"); given && *given) {
    candidates.emplace_back(given);
  }
  std::filesystem::path exe_dir = executableDir();
  if (!exe_dir.empty()) {
    // Relative to the prefix, or absolute (then operator/ keeps it as it is).
    candidates.push_back((exe_dir / ".." / SRT_PYTHON_INSTALL_SITE).lexically_normal().string());
  }
  candidates.emplace_back(SRT_PYTHON_BUILD_DIR);
  return candidates;
}

void execPythonModule(const std::string& module, const std::vector<std::string>& args) {
  std::vector<std::string> command = commandLine(module, args);
  std::vector<char*> argv = pointers(command);
  execv(kPython, argv.data());
  throw UsageError(std::string("cannot run ") + kPython + ": " + std::strerror(errno));
}

void runPythonModule(const std::string& module, const std::vector<std::string>& args) {
  std::vector<std::string> command = commandLine(module, args);
  std::vector<char*> argv = pointers(command);
  std::string description = "python3 -m " + module;
  for (const std::string& arg : args) {
    description += " " + arg;
  }
  pid_t child = fork();
  if (child < 0) {
    throw std::runtime_error("cannot start " + description + ": " + std::strerror(errno));
  }
  if (child == 0) {
    execv(kPython, argv.data());
    _exit(127);
  }
  int status = 0;
  while (waitpid(child, &status, 0) < 0) {
    if (errno != EINTR) {
      throw std::runtime_error("waiting for " + description + ": " + std::strerror(errno));
    }
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    throw std::runtime_error(description + " failed (exit status " +
                             std::to_string(WIFEXITED(status) ? WEXITSTATUS(status) : -1) + ")");
  }
}

} // namespace srt::cli
