#include "tools/ivalue_report.h"

#include <algorithm>
#include <iomanip>
#include <sstream>

#include <ATen/ATen.h>

#include "tools/input_spec.h"

namespace srt::cli {
namespace {

struct Leaf {
  std::string path;
  c10::IValue value;
};

std::string formatNumber(double value) {
  std::ostringstream text;
  text << std::setprecision(6) << value;
  return text.str();
}

std::string formatShape(const at::Tensor& tensor) {
  std::ostringstream text;
  text << tensor.sizes();
  return text.str();
}

std::string dictKeyPath(const c10::IValue& key) {
  std::ostringstream text;
  if (key.isString()) {
    text << "[\"" << key.toStringRef() << "\"]";
  } else {
    text << "[" << key << "]";
  }
  return text.str();
}

void collectLeaves(const std::string& path, const c10::IValue& value, std::vector<Leaf>& leaves) {
  if (value.isTuple()) {
    const auto& elements = value.toTupleRef().elements();
    for (size_t i = 0; i < elements.size(); ++i) {
      collectLeaves(path + "[" + std::to_string(i) + "]", elements[i], leaves);
    }
  } else if (value.isList()) {
    c10::List<c10::IValue> elements = value.toList();
    for (size_t i = 0; i < elements.size(); ++i) {
      collectLeaves(path + "[" + std::to_string(i) + "]", elements.get(i), leaves);
    }
  } else if (value.isGenericDict()) {
    for (const auto& entry : value.toGenericDict()) {
      collectLeaves(path + dictKeyPath(entry.key()), entry.value(), leaves);
    }
  } else {
    leaves.push_back({path, value});
  }
}

std::vector<Leaf> flattenLeaves(const std::string& root, const c10::IValue& value) {
  std::vector<Leaf> leaves;
  collectLeaves(root, value, leaves);
  return leaves;
}

int widestPath(const std::vector<Leaf>& leaves) {
  int width = 0;
  for (const Leaf& leaf : leaves) {
    width = std::max(width, static_cast<int>(leaf.path.size()));
  }
  return width;
}

std::string describeTensor(const at::Tensor& tensor) {
  if (!tensor.defined()) {
    return "undefined tensor";
  }
  double checksum = tensor.to(at::kDouble).sum().item<double>();
  return "shape=" + formatShape(tensor) + "  dtype=" + dtypeName(tensor.scalar_type()) +
         "  sum=" + formatNumber(checksum);
}

std::string describeLeaf(const c10::IValue& value) {
  if (value.isTensor()) {
    return describeTensor(value.toTensor());
  }
  if (value.isInt()) {
    return "int " + std::to_string(value.toInt());
  }
  if (value.isDouble()) {
    return "float " + formatNumber(value.toDouble());
  }
  if (value.isBool()) {
    return std::string("bool ") + (value.toBool() ? "true" : "false");
  }
  if (value.isString()) {
    return "str \"" + value.toStringRef() + "\"";
  }
  if (value.isNone()) {
    return "None";
  }
  return value.tagKind();
}

// Writes how one pair of leaves compares. Returns false when they differ in kind, shape or (for
// non-tensors) value; raises `max_diff` to the tensors' max abs difference.
bool compareLeaf(std::ostream& out, const c10::IValue& expected, const c10::IValue& actual,
                 double& max_diff) {
  if (!expected.isTensor() || !actual.isTensor()) {
    if (expected.tagKind() == actual.tagKind() && expected == actual) {
      out << "equal";
      return true;
    }
    out << "DIFFERENT: " << describeLeaf(expected) << " vs " << describeLeaf(actual);
    return false;
  }
  const at::Tensor& want = expected.toTensor();
  const at::Tensor& got = actual.toTensor();
  if (want.sizes() != got.sizes()) {
    out << "SHAPE DIFFERS: " << formatShape(want) << " vs " << formatShape(got);
    return false;
  }
  // Compared as double so int and bool tensors get a difference too.
  double diff = want.numel() == 0
                    ? 0.0
                    : (want.to(at::kDouble) - got.to(at::kDouble)).abs().max().item<double>();
  max_diff = std::max(max_diff, diff);
  out << "max abs diff " << formatNumber(diff);
  if (want.scalar_type() != got.scalar_type()) {
    out << "  DTYPE DIFFERS: " << dtypeName(want.scalar_type()) << " vs "
        << dtypeName(got.scalar_type());
    return false;
  }
  return true;
}

} // namespace

void printLeaves(std::ostream& out, const std::string& root, const c10::IValue& value) {
  std::vector<Leaf> leaves = flattenLeaves(root, value);
  int width = widestPath(leaves);
  for (const Leaf& leaf : leaves) {
    out << "  " << std::left << std::setw(width) << leaf.path << "  " << describeLeaf(leaf.value)
        << "\n";
  }
}

void printOutputMatch(std::ostream& out, const c10::IValue& expected, const c10::IValue& actual) {
  std::vector<Leaf> want = flattenLeaves("output", expected);
  std::vector<Leaf> got = flattenLeaves("output", actual);
  int width = widestPath(want);
  bool all_matched = want.size() == got.size();
  double max_diff = 0.0;
  for (size_t i = 0; i < std::min(want.size(), got.size()); ++i) {
    if (want[i].path != got[i].path) {
      out << "  STRUCTURE DIFFERS: TorchScript has " << want[i].path << " where static_runtime has "
          << got[i].path << "\n";
      return;
    }
    out << "  " << std::left << std::setw(width) << want[i].path << "  ";
    all_matched &= compareLeaf(out, want[i].value, got[i].value, max_diff);
    out << "\n";
  }
  if (want.size() != got.size()) {
    out << "  STRUCTURE DIFFERS: TorchScript returned " << want.size() << " leaves, static_runtime "
        << got.size() << "\n";
  }
  out << "  max abs diff over all tensors: " << formatNumber(max_diff)
      << (all_matched ? "" : " (and the outputs DIFFER as marked above)") << "\n";
}

} // namespace srt::cli
