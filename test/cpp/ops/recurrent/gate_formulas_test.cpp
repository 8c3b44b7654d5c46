// The gate loops (ops/recurrent/gate_loops.h) against the formulas in double precision, over
// pre-activations from -100 to 100, the infinities and NaN: their sigmoid is built on softmax's
// polynomial exp of -|x| and their tanh on that sigmoid, so this checks both ends of the range and
// the NaN path, which random model inputs rarely reach. 37 units: two full AVX-512 vectors and a
// tail.
#include <cmath>
#include <limits>
#include <vector>

#include <gtest/gtest.h>

#include "ops/recurrent/gate_loops.h"

namespace srt::testing {
namespace {

constexpr int64_t kUnits = 37;
constexpr float kInf = std::numeric_limits<float>::infinity();
const float kNaN = std::nanf("");

double sigmoid(double x) {
  return 1.0 / (1.0 + std::exp(-x));
}

// Pre-activations for `gates` gates of kUnits units: a sweep of -100..100 with the infinities and
// NaN among them, each gate's values shifted so that the gates do not see the same ones.
std::vector<float> preActivations(int gates) {
  std::vector<float> values(static_cast<size_t>(gates * kUnits));
  for (size_t i = 0; i < values.size(); ++i) {
    values[i] = -100.f + 200.f * static_cast<float>((i * 7) % values.size()) /
                             static_cast<float>(values.size() - 1);
  }
  values[3] = kInf;
  values[5] = -kInf;
  values[8] = 0.f;
  values[11] = 1e-3f;
  values[13] = -30.f;
  values[20] = kNaN;
  return values;
}

// Within 4e-7 absolutely, NaN where expected.
void expectNear(double expected, float actual, int64_t unit) {
  if (std::isnan(expected)) {
    EXPECT_TRUE(std::isnan(actual)) << "unit " << unit << ": " << actual;
  } else {
    EXPECT_NEAR(actual, expected, 4e-7) << "unit " << unit;
  }
}

TEST(GateFormulas, LstmMatchesDoublePrecision) {
  const std::vector<float> x = preActivations(4);
  const std::vector<float> h_proj(x.size(), 0.f);
  const std::vector<float> bias(x.size(), 0.f);
  std::vector<float> c(kUnits);
  for (int64_t u = 0; u < kUnits; ++u) {
    c[u] = 0.5f - static_cast<float>(u) / kUnits;
  }
  const std::vector<float> c_before = c;
  std::vector<float> h(kUnits);
  ops::recurrent::lstmGates(x.data(), h_proj.data(), bias.data(), c.data(), h.data(), kUnits);
  for (int64_t u = 0; u < kUnits; ++u) {
    const auto gate = [&](int g) { return static_cast<double>(x[g * kUnits + u]); };
    const double c_new = sigmoid(gate(1)) * c_before[u] + sigmoid(gate(0)) * std::tanh(gate(2));
    expectNear(c_new, c[u], u);
    expectNear(sigmoid(gate(3)) * std::tanh(c_new), h[u], u);
  }
}

TEST(GateFormulas, GruAndRnnMatchDoublePrecision) {
  const std::vector<float> x = preActivations(3);
  const std::vector<float> h_proj(x.size(), 0.25f);
  const std::vector<float> bias(x.size(), 0.f);
  const std::vector<float> bias_hn(kUnits, -0.5f);
  std::vector<float> h_prev(kUnits);
  for (int64_t u = 0; u < kUnits; ++u) {
    h_prev[u] = std::sin(static_cast<float>(u));
  }
  std::vector<float> h(kUnits);
  ops::recurrent::gruGates(x.data(), h_proj.data(), bias.data(), bias_hn.data(), h_prev.data(),
                           h.data(), kUnits);
  for (int64_t u = 0; u < kUnits; ++u) {
    const auto gate = [&](int g) { return static_cast<double>(x[g * kUnits + u]) + 0.25; };
    const double r = sigmoid(gate(0));
    const double z = sigmoid(gate(1));
    const double n = std::tanh(x[2 * kUnits + u] + r * (0.25 - 0.5));
    expectNear(n + z * (h_prev[u] - n), h[u], u);
  }
  std::vector<float> tanh_h(kUnits);
  ops::recurrent::rnnGates(x.data(), h_proj.data(), bias.data(), tanh_h.data(), kUnits, false);
  for (int64_t u = 0; u < kUnits; ++u) {
    expectNear(std::tanh(static_cast<double>(x[u]) + 0.25), tanh_h[u], u);
  }
}

} // namespace
} // namespace srt::testing
