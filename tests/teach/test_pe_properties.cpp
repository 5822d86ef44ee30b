// ordo pe's property checks and variants: the engine's encodings pass, broken ones fail, and each
// variant's numbers match its formula evaluated here in double.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "engine/ops.h"
#include "tools/teach/pe_report.h"

namespace ordo::teach {
namespace {

const Property& find(const PropertyReport& r, const std::string& name) {
  for (const Property& p : r.properties)
    if (p.name == name) return p;
  throw std::runtime_error("no property " + name);
}

PropertyReport check(const std::vector<float>& P, int N, int d, PeVariant v) {
  return check_pe_properties(P.data(), N, d, layout_of(v), frequencies(v, d, 10000.0), 10000.0);
}

TEST(PeProperties, TheEnginesEncodingHasThemAllWithTinyErrors) {
  for (auto [N, d] : {std::pair{2, 2}, {8, 16}, {50, 64}, {300, 512}, {1100, 8}})
    for (PeLayout layout : {PeLayout::Interleaved, PeLayout::Split}) {
      std::vector<float> P(size_t(N) * d);
      sinusoidal_positions(P.data(), N, d, layout, 10000.0);
      const auto r = check_pe_properties(P.data(), N, d, layout, frequencies(PeVariant::Paper, d, 10000.0), 10000.0);
      ASSERT_EQ(r.properties.size(), 6u);
      for (const Property& p : r.properties) {
        EXPECT_TRUE(p.holds) << p.name << " N=" << N << " d=" << d << " error " << p.error;
        if (p.name != "distinct") {
          EXPECT_LT(p.error, 2e-6 * std::max(1, d / 16)) << p.name << " N=" << N << " d=" << d;
        }
      }
    }
}

TEST(PeProperties, NormAndDotAreTheClosedForms) {
  // d = 2, one pair: |P_t|² = sin² t + cos² t = 1 and |P_s − P_t|² = 2 − 2 cos(t − s), so for N = 3 the
  // smallest distance is √(2 − 2 cos 1) = 0.958851 (k = 1), below √(2 − 2 cos 2) = 1.818595 (k = 2).
  std::vector<float> P(3 * 2);
  sinusoidal_positions(P.data(), 3, 2, PeLayout::Interleaved, 10000.0);
  const auto r = check(P, 3, 2, PeVariant::Paper);
  EXPECT_TRUE(r.all_hold());
  EXPECT_LT(find(r, "norm").error, 1e-7);
  char want[64];
  std::snprintf(want, sizeof want, "%.6f", std::sqrt(2 - 2 * std::cos(1.0)));
  EXPECT_NE(find(r, "distinct").detail.find(want), std::string::npos) << find(r, "distinct").detail;
}

TEST(PeProperties, ABrokenEncodingFailsThem) {
  const int N = 40, d = 32;
  std::vector<float> good(size_t(N) * d);
  sinusoidal_positions(good.data(), N, d, PeLayout::Interleaved, 10000.0);

  auto sines_only = good;  // cos replaced by sin: no pair has sin² + cos² = 1, no rotation maps t to t+k
  for (int t = 0; t < N; ++t)
    for (int j = 1; j < d; j += 2) sines_only[size_t(t) * d + j] = sines_only[size_t(t) * d + j - 1];
  auto r = check(sines_only, N, d, PeVariant::Paper);
  EXPECT_FALSE(find(r, "norm").holds);
  EXPECT_FALSE(find(r, "rotation").holds);
  EXPECT_FALSE(find(r, "dot").holds);
  EXPECT_GT(find(r, "norm").error, 1.0);

  auto scaled = good;  // 1.5 · P: values past 1, norm 1.5² · d/2
  for (float& v : scaled) v *= 1.5f;
  r = check(scaled, N, d, PeVariant::Paper);
  EXPECT_FALSE(find(r, "range").holds);
  EXPECT_NEAR(find(r, "range").error, 0.5, 1e-6);
  EXPECT_FALSE(find(r, "norm").holds);

  auto repeated = good;  // position 7 made a copy of position 3
  std::copy_n(good.begin() + 3 * d, d, repeated.begin() + 7 * d);
  r = check(repeated, N, d, PeVariant::Paper);
  EXPECT_FALSE(find(r, "distinct").holds);
  EXPECT_FALSE(find(r, "rotation").holds);

  auto noisy = good;                   // one value nudged by 1e-3: only the checks that look at it notice
  noisy[size_t(20) * d + 4] += 1e-3f;  // sin(20 · 10000^(-4/32)) = 0.04, so still within [-1, 1]
  r = check(noisy, N, d, PeVariant::Paper);
  EXPECT_TRUE(find(r, "range").holds);
  EXPECT_FALSE(find(r, "rotation").holds);
  EXPECT_NEAR(find(r, "rotation").error, 1e-3, 1e-4);

  // The right numbers checked against the wrong frequencies: the rotation by the claimed w_i k fails.
  r = check_pe_properties(good.data(), N, d, PeLayout::Interleaved, frequencies(PeVariant::DoubledExponent, d, 10000.0),
                          10000.0);
  EXPECT_FALSE(find(r, "rotation").holds);
  EXPECT_FALSE(find(r, "wavelengths").holds);
}

TEST(PeVariants, ValuesAreTheirFormulasInDouble) {
  const int N = 60, d = 512;
  const double ln_base = std::log(10000.0);
  const auto paper = pe_table(PeVariant::Paper, N, d, 10000.0);
  const auto split = pe_table(PeVariant::Split, N, d, 10000.0);
  const auto t2t = pe_table(PeVariant::Tensor2Tensor, N, d, 10000.0);
  const auto doubled = pe_table(PeVariant::DoubledExponent, N, d, 10000.0);
  double worst = 0;
  for (int t = 0; t < N; ++t)
    for (int i = 0; i < d / 2; ++i) {
      const double a = t / std::pow(10000.0, 2.0 * i / d);          // the paper's angle
      const double b = t * std::exp(-i * ln_base / (d / 2 - 1));    // tensor2tensor's
      const double c = t / std::pow(10000.0, 2.0 * (2.0 * i) / d);  // the loop index 2i put in for i
      const float* row = [&](const std::vector<float>& v) { return &v[size_t(t) * d]; }(paper);
      worst = std::max({worst, std::fabs(row[2 * i] - std::sin(a)), std::fabs(row[2 * i + 1] - std::cos(a))});
      row = &split[size_t(t) * d];
      worst = std::max({worst, std::fabs(row[i] - std::sin(a)), std::fabs(row[d / 2 + i] - std::cos(a))});
      row = &t2t[size_t(t) * d];
      worst = std::max({worst, std::fabs(row[i] - std::sin(b)), std::fabs(row[d / 2 + i] - std::cos(b))});
      row = &doubled[size_t(t) * d];
      worst = std::max({worst, std::fabs(row[2 * i] - std::sin(c)), std::fabs(row[2 * i + 1] - std::cos(c))});
    }
  EXPECT_LT(worst, 1e-7);
}

TEST(PeVariants, HandValuesAtDimFour) {
  // d = 4, t = 1. Paper: w = 1, 10000^(-2/4) = 0.01. tensor2tensor: w = 1, exp(−ln 10000 / 1) = 1e-4, split
  // layout. Doubled exponent: w = 1, 10000^(-4/4) = 1e-4, interleaved.
  const auto paper = pe_table(PeVariant::Paper, 2, 4, 10000.0);
  const auto t2t = pe_table(PeVariant::Tensor2Tensor, 2, 4, 10000.0);
  const auto doubled = pe_table(PeVariant::DoubledExponent, 2, 4, 10000.0);
  const double s1 = std::sin(1.0), c1 = std::cos(1.0);
  const double want_paper[] = {s1, c1, std::sin(0.01), std::cos(0.01)};
  const double want_t2t[] = {s1, std::sin(1e-4), c1, std::cos(1e-4)};
  const double want_doubled[] = {s1, c1, std::sin(1e-4), std::cos(1e-4)};
  for (int j = 0; j < 4; ++j) {
    EXPECT_NEAR(paper[4 + j], want_paper[j], 1e-7) << j;
    EXPECT_NEAR(t2t[4 + j], want_t2t[j], 1e-7) << j;
    EXPECT_NEAR(doubled[4 + j], want_doubled[j], 1e-7) << j;
  }
}

TEST(PeVariants, PaperAndSplitAreTheEngines) {
  const int N = 33, d = 24;
  std::vector<float> engine(size_t(N) * d);
  for (PeVariant v : {PeVariant::Paper, PeVariant::Split}) {
    sinusoidal_positions(engine.data(), N, d, layout_of(v), 10000.0);
    EXPECT_EQ(pe_table(v, N, d, 10000.0), engine) << to_string(v);
  }
}

TEST(PeVariants, WavelengthsTellThemApart) {
  // Every variant keeps the pairs, so norm, rotation, dot and distinct hold for all of them; the
  // doubled exponent's longest wavelength, 2π · 10000^(2·510/512) ≈ 2π · 9.3e7, is far past 10000 · 2π.
  const int N = 64, d = 512;
  for (PeVariant v : all_variants()) {
    const auto r = check(pe_table(v, N, d, 10000.0), N, d, v);
    for (const char* name : {"range", "norm", "rotation", "dot", "distinct"})
      EXPECT_TRUE(find(r, name).holds) << to_string(v) << " " << name;
    EXPECT_EQ(find(r, "wavelengths").holds, v != PeVariant::DoubledExponent) << to_string(v);
  }
  const auto w = frequencies(PeVariant::Tensor2Tensor, d, 10000.0);
  EXPECT_NEAR(w.front(), 1.0, 1e-15);
  EXPECT_NEAR(w.back(), 1e-4, 1e-15);  // exactly 1/base: wavelengths from 2π to 10000 · 2π
  const auto doubled = frequencies(PeVariant::DoubledExponent, d, 10000.0);
  EXPECT_NEAR(1.0 / doubled.back(), std::pow(10000.0, 1020.0 / 512.0), 1.0);
}

}  // namespace
}  // namespace ordo::teach
