// srt: run and inspect TorchScript models with static_runtime from the command line.
#include <iostream>
#include <string>
#include <vector>

#include <c10/util/Exception.h>

#include "tools/cli.h"
#include "tools/commands.h"
#include "tools/usage_error.h"

namespace {

constexpr int kModelFailed = 1;
constexpr int kUsageError = 2;

int dispatch(const srt::cli::Arguments& args) {
  switch (args.command) {
  case srt::cli::Command::kRun:
    return srt::cli::runCommand(args);
  case srt::cli::Command::kInspect:
    return srt::cli::inspectCommand(args);
  case srt::cli::Command::kBench:
    return srt::cli::benchCommand(args);
  case srt::cli::Command::kHelp:
    break;
  }
  std::cout << srt::cli::usageText();
  return 0;
}

} // namespace

int main(int argc, char** argv) {
  try {
    return dispatch(srt::cli::parseArguments({argv + 1, argv + argc}));
  } catch (const srt::cli::UsageError& error) {
    std::cerr << "srt: error: " << error.what() << "\n";
    return kUsageError;
  } catch (const c10::Error& error) {
    std::cerr << "srt: error: " << error.what_without_backtrace() << "\n";
    return kModelFailed;
  } catch (const std::exception& error) {
    std::cerr << "srt: error: " << error.what() << "\n";
    return kModelFailed;
  }
}
