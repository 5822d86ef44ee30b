#include "tools/teach/pe_report.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "engine/ops.h"

namespace ordo::teach {

namespace {

constexpr double kTwoPi = 6.283185307179586;

std::string format(const char* fmt, double a, double b = 0, double c = 0) {
  char buf[160];
  std::snprintf(buf, sizeof buf, fmt, a, b, c);
  return buf;
}

}  // namespace

namespace {

struct VariantText {
  PeVariant variant;
  const char* name;
  const char* frequency_rule;
};

// Each variant's name (as --variant spells it) and its frequency rule, in the order they are shown.
constexpr VariantText kVariants[] = {
    {PeVariant::Paper, "paper", "1 / base^(2i/d)"},
    {PeVariant::Split, "split", "1 / base^(2i/d)"},
    {PeVariant::Tensor2Tensor, "tensor2tensor", "exp(-i ln(base) / (d/2 - 1))"},
    {PeVariant::DoubledExponent, "doubled-exponent", "1 / base^(2(2i)/d)"},
};

const VariantText& text_of(PeVariant v) {
  for (const VariantText& t : kVariants)
    if (t.variant == v) return t;
  return kVariants[0];  // not reached: every variant has a row
}

}  // namespace

const std::vector<PeVariant>& all_variants() {
  static const std::vector<PeVariant> v = [] {
    std::vector<PeVariant> all;
    for (const VariantText& t : kVariants) all.push_back(t.variant);
    return all;
  }();
  return v;
}

const char* to_string(PeVariant v) {
  return text_of(v).name;
}

const char* frequency_rule(PeVariant v) {
  return text_of(v).frequency_rule;
}

bool parse_variant(const std::string& name, PeVariant* out) {
  for (PeVariant v : all_variants())
    if (name == to_string(v)) return *out = v, true;
  return false;
}

PeLayout layout_of(PeVariant v) {
  return v == PeVariant::Paper || v == PeVariant::DoubledExponent ? PeLayout::Interleaved : PeLayout::Split;
}

std::vector<double> frequencies(PeVariant v, int d, double base) {
  const int pairs = d / 2;
  std::vector<double> w(pairs);
  for (int i = 0; i < pairs; ++i) {
    switch (v) {
      case PeVariant::Paper:
      case PeVariant::Split:  // w_i = 1 / base^(2i/d)
        w[i] = 1.0 / std::pow(base, 2.0 * i / d);
        break;
      case PeVariant::Tensor2Tensor:  // w_i = exp(−i · ln(base) / (d/2 − 1)): the last one is exactly 1/base
        w[i] = pairs > 1 ? std::exp(-i * std::log(base) / (pairs - 1)) : 1.0;
        break;
      case PeVariant::DoubledExponent:  // the loop's j = 2i put where i belongs: 1 / base^(2·(2i)/d)
        w[i] = 1.0 / std::pow(base, 2.0 * (2 * i) / d);
        break;
    }
  }
  return w;
}

std::vector<double> rope_angles(int N, int dh, double base) {
  std::vector<double> a(size_t(N) * (dh / 2));
  for (int t = 0; t < N; ++t)
    for (int i = 0; i < dh / 2; ++i) a[size_t(t) * (dh / 2) + i] = t * std::pow(base, -2.0 * i / dh);
  return a;
}

std::vector<float> pe_table(PeVariant v, int N, int d, double base) {
  std::vector<float> P(size_t(N) * d);
  if (v == PeVariant::Paper || v == PeVariant::Split) {
    sinusoidal_positions(P.data(), N, d, layout_of(v), base);
    return P;
  }
  const std::vector<double> w = frequencies(v, d, base);
  const PeLayout layout = layout_of(v);
  for (int t = 0; t < N; ++t)
    for (int i = 0; i < d / 2; ++i) {
      const double angle = t * w[i];
      P[size_t(t) * d + sin_dim(layout, i)] = static_cast<float>(std::sin(angle));
      P[size_t(t) * d + cos_dim(layout, i, d)] = static_cast<float>(std::cos(angle));
    }
  return P;
}

bool PropertyReport::all_hold() const {
  return std::all_of(properties.begin(), properties.end(), [](const Property& p) { return p.holds; });
}

PropertyReport check_pe_properties(const float* P, int N, int d, PeLayout layout, const std::vector<double>& w,
                                   double base) {
  const int pairs = d / 2;
  auto at = [&](int t, int j) { return double(P[size_t(t) * d + j]); };
  PropertyReport report;

  // The offsets k the pairwise checks visit.
  std::vector<int> ks;
  if (N <= 1024) {
    for (int k = 1; k < N; ++k) ks.push_back(k);
    report.offsets_checked = "every t and every k = 1 .. N-1";
  } else {
    for (int k = 1; k <= 512; ++k) ks.push_back(k);
    for (int k = 1024; k < N - 1; k *= 2) ks.push_back(k);
    ks.push_back(N - 1);
    report.offsets_checked = "every t, k = 1 .. 512, the powers of two up to N, and N-1";
  }

  {  // range: |P| <= 1
    double worst = 0;
    for (size_t n = 0; n < size_t(N) * d; ++n) worst = std::max(worst, std::fabs(double(P[n])));
    report.properties.push_back({"range", "every value in [-1, 1]", std::max(0.0, worst - 1.0), 0.0, worst <= 1.0,
                                 format("largest |value| %.9f", worst)});
  }
  {  // norm: |P_t|² = Σ_i sin² + cos² = d/2
    double worst = 0;
    for (int t = 0; t < N; ++t) {
      double sq = 0;
      for (int j = 0; j < d; ++j) sq += at(t, j) * at(t, j);
      worst = std::max(worst, std::fabs(sq - d / 2.0));
    }
    const double tol = 1e-6 * d;
    report.properties.push_back({"norm", "|P_t|^2 = d/2", worst, tol, worst <= tol, format("d/2 = %g", d / 2.0)});
  }
  {  // rotation: (sin w(t+k), cos w(t+k)) = [[cos wk, sin wk], [−sin wk, cos wk]] · (sin wt, cos wt)
    double worst = 0;
    for (int k : ks)
      for (int i = 0; i < pairs; ++i) {
        const double c = std::cos(w[i] * k), s = std::sin(w[i] * k);
        const int js = sin_dim(layout, i), jc = cos_dim(layout, i, d);
        for (int t = 0; t + k < N; ++t) {
          const double sin_t = at(t, js), cos_t = at(t, jc);
          worst = std::max(worst, std::fabs(at(t + k, js) - (c * sin_t + s * cos_t)));
          worst = std::max(worst, std::fabs(at(t + k, jc) - (-s * sin_t + c * cos_t)));
        }
      }
    const double tol = 1e-5;
    report.properties.push_back({"rotation", "P_{t+k} = R_k P_t (R_k block-diagonal 2x2 rotations by w_i k)", worst,
                                 tol, worst <= tol,
                                 "R_k depends on k only, so one linear map shifts every position by k"});
  }
  {  // dot and distinct, from the same pairwise sweep
    double worst_dot = 0, closest = INFINITY;
    int closest_s = 0, closest_t = 0;
    std::vector<double> row_s(d);
    for (int k : ks) {
      double expected = 0;  // Σ_i cos(w_i k) = Σ_i sin(w_i t) sin(w_i (t+k)) + cos(w_i t) cos(w_i (t+k))
      for (int i = 0; i < pairs; ++i) expected += std::cos(w[i] * k);
      for (int t = 0; t + k < N; ++t) {
        double dot = 0, dist = 0;
        for (int j = 0; j < d; ++j) {
          const double a = at(t, j), b = at(t + k, j);
          dot += a * b;
          dist += (a - b) * (a - b);
        }
        worst_dot = std::max(worst_dot, std::fabs(dot - expected));
        if (std::sqrt(dist) < closest * (1 - 1e-6)) closest = std::sqrt(dist), closest_s = t, closest_t = t + k;
      }
    }
    const double tol = 1e-6 * d;
    report.properties.push_back({"dot", "<P_t, P_{t+k}> = sum_i cos(w_i k): a function of k, not t", worst_dot, tol,
                                 worst_dot <= tol, "a similarity of two positions that sees only their distance"});
    const double floor = 1e-3;
    char buf[160];
    std::snprintf(buf, sizeof buf, "smallest distance %.6f, first between t=%d and t=%d (must be > 0.001)", closest,
                  closest_s, closest_t);
    report.properties.push_back({"distinct", "every position differs: min |P_s - P_t| > 0 for s < t < N",
                                 std::max(0.0, floor - closest), 0.0, closest > floor, buf});
  }
  {  // wavelengths, measured: at t = 0 pair i is (0, 1), at t = 1 it is (sin w_i, cos w_i)
    double worst_formula = 0, worst_ratio = 0;
    std::vector<double> lambda(pairs);
    for (int i = 0; i < pairs; ++i) {
      const double measured = std::atan2(at(1, sin_dim(layout, i)), at(1, cos_dim(layout, i, d)));
      lambda[i] = kTwoPi / measured;
      worst_formula = std::max(worst_formula, std::fabs(measured / w[i] - 1.0));
    }
    for (int i = 1; i + 1 < pairs; ++i)
      worst_ratio = std::max(worst_ratio, std::fabs((lambda[i + 1] / lambda[i]) / (lambda[1] / lambda[0]) - 1.0));
    const double shortest = *std::min_element(lambda.begin(), lambda.end());
    const double longest = *std::max_element(lambda.begin(), lambda.end());
    const double past_range = std::max({0.0, std::fabs(shortest / kTwoPi - 1.0), longest / (base * kTwoPi) - 1.0});
    const double worst = std::max({worst_formula, worst_ratio, past_range});
    const double tol = 1e-5;
    report.properties.push_back(
        {"wavelengths", "2pi/w_i: geometric, from 2pi to at most base*2pi", worst, tol, worst <= tol,
         format("measured from 2pi x %.6g to 2pi x %.6g (base %g)", shortest / kTwoPi, longest / kTwoPi, base)});
  }
  return report;
}

}  // namespace ordo::teach
