// A registry of subgraph-rewrite patterns, grouped into families; each family is one pass of the
// pipeline (e.g. "linear_activation"), so a user can switch off a family by name.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

namespace torch::jit {
struct Graph;
struct Match;
struct Value;
} // namespace torch::jit

namespace srt::passes {

// Extra condition on a match, beyond its shape. `values` maps the pattern's value names ("x"
// for %x) to the PATTERN graph's values; the matched graph's value is
// match.values_map.at(values.at("x")).
using FusionFilter =
    std::function<bool(const torch::jit::Match& match,
                       const std::unordered_map<std::string, torch::jit::Value*>& values)>;

struct FusionPattern {
  // What the pattern fuses, for error messages and tests ("linear + relu").
  std::string name;
  // IR text of the subgraph to find and of the one that replaces it (LibTorch's
  // SubgraphRewriter syntax: graph(%inputs...): ... return (%outputs)).
  std::string pattern;
  std::string replacement;
  // Empty: every structural match is rewritten.
  FusionFilter filter;
};

// A filter taking a match only where the pattern's value `name` is the constant string
// `expected`: gelu's `approximate`, each mode its own pattern (an activation chosen at run time
// stays unfused).
FusionFilter constantStringIs(std::string name, std::string expected);
// The same for a constant bool (batch_norm's `training`). A flag is a pattern input with this
// filter rather than a constant inside the pattern: the graph shares one constant among every op
// that takes the same value, and a match must not take a node whose output is used outside it.
FusionFilter constantBoolIs(std::string name, bool expected);
// A filter taking a match only where each of the pattern's values `names` is a constant number
// (int or float, not None): clamp's bounds, where both make it hardtanh.
FusionFilter constantNumbers(std::vector<std::string> names);

// Adds a pattern to `family`; patterns of a family are tried in registration order.
void registerFusionPattern(const std::string& family, FusionPattern pattern);

// The patterns of one family, in registration order (empty if none registered).
const std::vector<FusionPattern>& fusionPatterns(const std::string& family);

// Rewrites every match of every pattern of `family`; returns whether anything was rewritten.
bool applyFusionPatterns(const std::string& family, std::shared_ptr<torch::jit::Graph>& graph);

namespace detail {
struct FusionPatternRegistrar {
  FusionPatternRegistrar(const char* family, FusionPattern pattern) {
    registerFusionPattern(family, std::move(pattern));
  }
};
} // namespace detail

} // namespace srt::passes

#define SRT_FUSION_CONCAT_IMPL(a, b) a##b
#define SRT_FUSION_CONCAT(a, b) SRT_FUSION_CONCAT_IMPL(a, b)

// Registers a FusionPattern in the file that implements what it fuses into:
//   SRT_REGISTER_FUSION_PATTERN("linear_activation", {"linear + relu", R"IR(...)IR",
//   R"IR(...)IR"});
#define SRT_REGISTER_FUSION_PATTERN(family, ...)                                                   \
  static const ::srt::passes::detail::FusionPatternRegistrar SRT_FUSION_CONCAT(                    \
      srt_fusion_pattern_, __COUNTER__)(family, ::srt::passes::FusionPattern __VA_ARGS__)
