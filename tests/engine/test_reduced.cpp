// Reduced precision (--compute-type bf16 and int8): the fast products (engine/kernels/reduced.h)
// against their plain twins in double (engine/reference.h), and the whole encoder against itself in
// float. Skipped in a build without oneDNN.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <numeric>
#include <string>
#include <utility>
#include <vector>

#include <ordo/engine/encoder.h>

#include "engine/init.h"
#include "engine/kernels/parallel.h"
#include "engine/kernels/reduced.h"
#include "engine/ops.h"
#include "engine/reference.h"
#include "engine/reference_reduced.h"
#include "paths.h"
#include "test_util.h"

namespace ordo {
namespace {

#define SKIP_WITHOUT_ONEDNN() \
  if (!have_onednn()) GTEST_SKIP() << "this build has no oneDNN"

// (M, K, N): one row, a few, a count that fits no block, more rows than one block of 128, and
// column counts that are not a multiple of the 256-column chunks.
struct Shape {
  int M, K, N;
};
const std::vector<Shape> kShapes = {{1, 64, 96},    {8, 512, 1536}, {13, 512, 700},  {128, 2048, 512}, {1, 2048, 512},
                                    {200, 96, 300}, {3, 5, 7},      {1500, 64, 192}, {2048, 256, 64}};

// The own kernels' edges: every row count of their 8-row tiles, two of them and one more (1..17),
// a full block of 128 rows and one more, column counts that end inside a 16-column panel or a
// 3-panel tile, and K that is not a multiple of a group of `group` k nor of a cache line.
std::vector<Shape> edge_shapes(int group) {
  std::vector<Shape> shapes;
  for (int M = 1; M <= 17; ++M)
    for (auto [K, N] : {std::pair{5, 7}, std::pair{63, 49}, std::pair{130, 33}}) shapes.push_back({M, K, N});
  for (const Shape& sh : {Shape{128, 511, 97}, Shape{129, 1, 1}, Shape{65, group, 16}}) shapes.push_back(sh);
  return shapes;
}

// check(shape, threads, kernel) for every kernel and shape, on one thread and on two.
template <class Check>
void for_each_case(const std::vector<ReducedKernel>& kernels, const std::vector<Shape>& shapes, const Check& check) {
  test::ThreadsGuard guard;
  for (ReducedKernel kernel : kernels)
    for (const Shape& sh : shapes)
      for (int threads : {1, 2}) {
        set_kernel_threads(threads);
        check(sh, threads, kernel);
      }
}

TEST(Reduced, QuantizationMatchesThePlainOne) {
  const auto x = test::random_floats(13 * 300, 11, 3.0f);
  std::vector<int8_t> q(x.size()), qr(x.size());
  std::vector<float> s(13), sr(13);
  quantize_rows(q.data(), s.data(), x.data(), 13, 300);
  reference::quantize_rows(qr.data(), sr.data(), x.data(), 13, 300);
  EXPECT_EQ(q, qr);
  EXPECT_EQ(s, sr);
  // by hand: s = 2/127; 1/s = 63.5 rounds to even 64, −2 to −127, 0.5/s = 31.75 to 32
  const float row[] = {1.0f, -2.0f, 0.5f, 0.0f};
  int8_t h[4];
  float hs;
  quantize_rows(h, &hs, row, 1, 4);
  EXPECT_EQ(hs, 2.0f / 127.0f);
  EXPECT_EQ(h[0], 64);
  EXPECT_EQ(h[1], -127);
  EXPECT_EQ(h[2], 32);
  EXPECT_EQ(h[3], 0);
  const float zeros[3] = {0, 0, 0};
  quantize_rows(h, &hs, zeros, 1, 3);
  EXPECT_EQ(hs, 0.0f);
  EXPECT_EQ(h[0] | h[1] | h[2], 0);
  // a row that is not finite: zeros and a NaN scale (its product's row becomes NaN, reported as such)
  for (float bad : {std::numeric_limits<float>::infinity(), std::numeric_limits<float>::quiet_NaN()}) {
    const float row2[3] = {1.0f, bad, -3.0f};
    quantize_rows(h, &hs, row2, 1, 3);
    EXPECT_TRUE(std::isnan(hs));
    EXPECT_EQ(h[0] | h[1] | h[2], 0);
    reference::quantize_rows(h, &hs, row2, 1, 3);
    EXPECT_TRUE(std::isnan(hs));
    EXPECT_EQ(h[0] | h[1] | h[2], 0);
  }
  // the largest floats quantize like any others
  const float huge[2] = {std::numeric_limits<float>::max(), -std::numeric_limits<float>::max() / 4};
  quantize_rows(h, &hs, huge, 1, 2);
  EXPECT_EQ(h[0], 127);
  EXPECT_EQ(h[1], -32);  // −31.75
}

// Eleven rows of K for the quantization tests, at a grid of `top` steps each side: random, zeros, an
// infinity, a NaN (last), the largest float, values halfway between two integers, s = 1 (max = top)
// with x/s exactly a half (a tie that rounds to even), x/s a float rounding away from a half
// (s = 3/top, x = (n + ½)·s), and x/s exactly a half where x·(1/s) in double falls beside it
// (s = 12.0390625, x = s·(n + ½): for n = −126, −510, −1024 and −2046, among others, at the four grids
// of the tests, x·(1/s) rounds to the odd neighbour where x/s rounds to the even one); then random
// rows so small that s is subnormal (1/s past the largest float), and that s is just normal.
constexpr int kHostileRows = 11;
std::vector<float> hostile_rows(int K, int seed, int top) {
  auto x = test::random_floats(size_t(kHostileRows) * K, seed, 3.0f);
  std::fill(x.begin() + K, x.begin() + 2 * K, 0.0f);
  x[2 * K + K / 2] = std::numeric_limits<float>::infinity();
  x[3 * K + K - 1] = std::numeric_limits<float>::quiet_NaN();
  x[4 * K] = std::numeric_limits<float>::max();
  const float t = float(top);
  for (int k = 0; k < K; ++k) {
    const float n = float(k % (2 * top - 1) - top + 1);
    x[5 * K + k] = float(k % (2 * top + 1) - top) + 0.5f;
    x[6 * K + k] = k == 0 ? t : n - 0.5f;
    x[7 * K + k] = k == 0 ? 3.0f : (n + 0.5f) * (3.0f / t);
    x[8 * K + k] = 12.0390625f * (k == 0 ? t : n + 0.5f);
    x[9 * K + k] *= 1e-41f;
    x[10 * K + k] *= std::numeric_limits<float>::min() * t / 2.0f;
  }
  return x;
}

// The VNNI path's quantization (16 values a step in float, 8 in double near a half, u8 = s8 + 128,
// rows padded to K4) gives the plain one's scales and integers: row lengths around its 8- and
// 16-lane steps and the hostile rows.
TEST(Reduced, QuantizationU8MatchesThePlainOne) {
  for (int K : {1, 3, 7, 8, 9, 15, 16, 17, 31, 33, 100, 512, 2048}) {
    const int M = kHostileRows, K4 = (K + 3) / 4 * 4;
    const auto x = hostile_rows(K, 40 + K, 127);
    std::vector<int8_t> q(x.size());
    std::vector<float> s(M), su(M);
    reference::quantize_rows(q.data(), s.data(), x.data(), M, K);
    std::vector<uint8_t> xu(size_t(M) * K4, 7);
    quantize_rows_u8(xu.data(), su.data(), x.data(), M, K, K4);
    for (int m = 0; m < M; ++m) {
      EXPECT_TRUE(s[m] == su[m] || (std::isnan(s[m]) && std::isnan(su[m]))) << "K " << K << " row " << m;
      for (int k = 0; k < K4; ++k)
        ASSERT_EQ(int(xu[size_t(m) * K4 + k]), k < K ? q[size_t(m) * K + k] + 128 : 128)
            << "K " << K << " row " << m << " k " << k;
    }
  }
}

// The finer grids' quantization (reduced.h: 16-bit, `top` steps each side, rows padded to ld) at
// every level (ORDO_ISA picks: 16 values a step at AVX-512, 4 at AVX2, one at the plain level)
// gives the plain twin's scales and integers, on the same hostile rows.
TEST(Reduced, Quantization16MatchesThePlainOne) {
  for (int top : {2047, 511, 1026, 127})  // 127: int8's grid, which the AVX2 int8 path takes this way
    for (int K : {1, 3, 4, 5, 7, 8, 9, 15, 16, 17, 31, 33, 100, 512, 2048}) {
      const int M = kHostileRows, ld = (K + 1) / 2 * 2 + 2;
      const auto x = hostile_rows(K, 80 + K, top);
      std::vector<int16_t> q(x.size()), fast(size_t(M) * ld, 7);
      std::vector<float> s(M), sf(M);
      reference::quantize_rows16(q.data(), s.data(), x.data(), M, K, top);
      quantize_rows16(fast.data(), sf.data(), x.data(), M, K, ld, top);
      for (int m = 0; m < M; ++m) {
        EXPECT_TRUE(s[m] == sf[m] || (std::isnan(s[m]) && std::isnan(sf[m]))) << "K " << K << " row " << m;
        for (int k = 0; k < ld; ++k)
          ASSERT_EQ(int(fast[size_t(m) * ld + k]), k < K ? q[size_t(m) * K + k] : 0)
              << "top " << top << " K " << K << " row " << m << " k " << k;
      }
    }
  // the grids: x at 2,047 steps unless 2,047·511·K would pass int32's largest, then the most that fit
  EXPECT_EQ(wide_x_top(384), 2047);
  EXPECT_EQ(wide_x_top(2052), 2047);  // 2,047·511·2,052 = 2,146,426,884 < 2^31
  EXPECT_EQ(wide_x_top(4096), 1026);  // 1,026·511·4,096 = 2,147,475,456; 1,027 would pass 2^31 − 1
  EXPECT_EQ(kWideWTop, 511);
}

TEST(Reduced, Bf16RoundingMatchesThePlainOne) {
  // by hand: 1 + 2^-8 lies halfway between 1 and 1 + 2^-7 and goes to the even one, 1;
  // 1 + 3·2^-8 lies halfway between 1 + 2^-7 and 1 + 2^-6 and goes to 1 + 2^-6.
  EXPECT_EQ(from_bf16(to_bf16(1.0f + 0x1p-8f)), 1.0f);
  EXPECT_EQ(from_bf16(to_bf16(1.0f + 3 * 0x1p-8f)), 1.0f + 0x1p-6f);
  EXPECT_EQ(reference::round_bf16(1.0f + 3 * 0x1p-8f), 1.0 + 0x1p-6);
  const auto v = test::random_floats(100000, 5, 1e3f);
  for (float f : v) ASSERT_EQ(double(from_bf16(to_bf16(f))), reference::round_bf16(f)) << f;
  for (float f : {1e-39f, -3e-40f, 3.4e38f}) EXPECT_EQ(double(from_bf16(to_bf16(f))), reference::round_bf16(f)) << f;
}

// The int8 kernels to hold against the plain twin: ordo's own at the kernels' level (VNNI, AVX2 or
// the plain loop: ORDO_ISA picks), and oneDNN's matmul where it is exact (with VNNI: without, its
// byte products saturate, engine/kernels/reduced_avx2.h).
std::vector<ReducedKernel> int8_kernels() {
  std::vector<ReducedKernel> k{ReducedKernel::Own};
  if (onednn_int8_exact()) k.push_back(ReducedKernel::OneDnn);
  return k;
}
const char* name(ReducedKernel k) {
  return k == ReducedKernel::Own ? "own" : k == ReducedKernel::OneDnn ? "onednn" : "auto";
}

// acc and y of one int8 product against the plain one, the channels from `wide` on (none: −1) on
// the finer grids: the int32 sums equal exactly, and y differs from the plain one in double by
// float rounding only: a few roundings of acc·sx·sw and of the bias,
// |fast − plain| ≤ 2^-21·(|acc·sx·sw| + |b|).
void expect_int8_exact(const Shape& sh, int threads, ReducedKernel kernel, int wide = -1) {
  const auto x = test::random_floats(size_t(sh.M) * sh.K, 100 + sh.M, 2.0f);
  const auto w = test::random_floats(size_t(sh.N) * sh.K, 200 + sh.N, 0.1f);
  const auto b = test::random_floats(sh.N, 300 + sh.K, 0.5f);
  ReducedLinear lin(ComputeType::Int8, w.data(), b.data(), sh.N, sh.K, wide);
  const int Nn = lin.wide(), Nw = sh.N - Nn, K2 = (sh.K + 1) / 2 * 2;
  std::vector<int8_t> xq(x.size());
  std::vector<int16_t> x16(size_t(sh.M) * K2);
  std::vector<float> xs(sh.M), xs16(sh.M);
  quantize_rows(xq.data(), xs.data(), x.data(), sh.M, sh.K);
  quantize_rows16(x16.data(), xs16.data(), x.data(), sh.M, sh.K, K2, wide_x_top(sh.K));
  std::vector<int32_t> narrow(size_t(sh.M) * Nn), fine(size_t(sh.M) * Nw);
  lin.products_int8(narrow.data(), xq.data(), sh.M, threads, kernel);
  lin.products_wide(fine.data(), x16.data(), sh.M, threads);
  std::vector<double> ref(size_t(sh.M) * sh.N);
  std::vector<int64_t> ref_acc(ref.size());
  reference::linear_int8(ref.data(), ref_acc.data(), x.data(), w.data(), b.data(), sh.M, sh.K, sh.N, wide);
  const std::string where = std::to_string(sh.M) + "x" + std::to_string(sh.K) + "x" + std::to_string(sh.N) +
                            ", wide from " + std::to_string(Nn) + ", " + std::to_string(threads) + " threads, " +
                            name(kernel);
  for (int m = 0; m < sh.M; ++m)
    for (int n = 0; n < sh.N; ++n)
      ASSERT_EQ(n < Nn ? narrow[size_t(m) * Nn + n] : fine[size_t(m) * Nw + n - Nn], ref_acc[size_t(m) * sh.N + n])
          << where << " at " << m << ", " << n;

  std::vector<float> y(ref.size());
  lin.forward(y.data(), x.data(), sh.M, threads, kernel);
  double worst = 0;
  for (size_t i = 0; i < y.size(); ++i) {
    const double bound = 0x1p-21 * (std::fabs(ref[i] - b[i % sh.N]) + std::fabs(b[i % sh.N]));
    worst = std::max(worst, std::fabs(y[i] - ref[i]) / std::max(bound, 1e-30));
  }
  EXPECT_LE(worst, 1.0) << where << ": worst |diff| / bound";
}

TEST(Reduced, Int8ProductsAreExact) {
  SKIP_WITHOUT_ONEDNN();
  for_each_case(int8_kernels(), kShapes, [](const Shape& sh, int threads, ReducedKernel kernel) {
    for (int wide : {-1, sh.N / 3}) expect_int8_exact(sh, threads, kernel, wide);
  });
}

// The own kernel's edges (VNNI: 4-byte groups of k; AVX2: pairs), and in_proj's shape at a tile's
// worth of rows and either side of it (kShapes has the larger ones).
TEST(Reduced, Int8OwnKernelEdgesAreExact) {
  SKIP_WITHOUT_ONEDNN();
  std::vector<Shape> shapes = edge_shapes(4);
  for (int M : {1, 8, 9, 16, 17}) shapes.push_back({M, 512, 1536});
  for_each_case({ReducedKernel::Own}, shapes, [](const Shape& sh, int threads, ReducedKernel kernel) {
    for (int wide : {-1, 0, sh.N / 2}) expect_int8_exact(sh, threads, kernel, wide);
  });
}

// The finer grids' kernels by hand at their extremes: x at 2,047 steps against W at 511 (the
// largest pairs, 2·2,047·511, and sums to within 8,191 of 2^31 at K = 4,096, where x gets 1,026
// steps), and signs that cancel: (2047, −2047, 0, 5)·(511, 511, −3, 511) = 2,555.
TEST(Reduced, WideKernelByHand) {
  SKIP_WITHOUT_ONEDNN();
  const float w[4] = {511, 511, -3, 511};
  ReducedLinear lin(ComputeType::Int8, w, nullptr, 1, 4, 0);
  EXPECT_EQ(lin.weight_wide(), (std::vector<int16_t>{511, 511, -3, 511}));
  const int16_t xq[4] = {2047, -2047, 0, 5};
  int32_t acc[1];
  lin.products_wide(acc, xq, 1, 1);
  EXPECT_EQ(acc[0], 2555);
  const int K = 4096;
  std::vector<float> ones(size_t(2) * K, 1.0f);
  for (int k = 0; k < K; ++k) ones[K + k] = k % 2 ? -1.0f : 1.0f;  // a second channel: +1, −1, ...
  ReducedLinear big(ComputeType::Int8, ones.data(), nullptr, 2, K, 0);
  std::vector<int16_t> xt(K, int16_t(wide_x_top(K)));
  int32_t sums[2];
  big.products_wide(sums, xt.data(), 1, 1);
  EXPECT_EQ(sums[0], 1026 * 511 * K);  // 2,147,475,456
  EXPECT_EQ(sums[1], 0);
}

// By hand, at the extremes of s8 (VNNI: through the u8 + 128 compensation; AVX2: pairs of 127·127,
// which a saturating 16-bit sum would cut to 32,767): x = (−127, 127, 0, 5) against W's rows
// (1, −2, 3, 127) and (−127, −127, −127, −127), which quantize to themselves (s = 1):
// −127 − 254 + 0 + 635 = 254 and 127·127 − 127·127 + 0 − 5·127 = −635; and x = (127, 127, 127, 127)
// against (127, 127, 127, 127): 4·127² = 64,516.
TEST(Reduced, Int8OwnKernelByHand) {
  SKIP_WITHOUT_ONEDNN();
  const float w[8] = {1, -2, 3, 127, -127, -127, -127, -127};
  ReducedLinear lin(ComputeType::Int8, w, nullptr, 2, 4);
  const int8_t xq[4] = {-127, 127, 0, 5};
  int32_t acc[2];
  lin.products_int8(acc, xq, 1, 1, ReducedKernel::Own);
  EXPECT_EQ(acc[0], 254);
  EXPECT_EQ(acc[1], -635);
  const float big[4] = {127, 127, 127, 127};
  ReducedLinear top(ComputeType::Int8, big, nullptr, 1, 4);
  const int8_t xt[4] = {127, 127, 127, 127};
  top.products_int8(acc, xt, 1, 1, ReducedKernel::Own);
  EXPECT_EQ(acc[0], 64516);
}

// bf16: both operands rounded to bf16 exactly as the reference rounds them, the K products summed
// in float. A float sum of K terms is within K·2^-24·Σ|terms| of the exact one (the standard
// bound for recursive summation, Higham §4.2), plus a rounding of the bias:
//   |fast − plain| ≤ (K + 2)·2^-24·(Σ_k |x̂_k·ŵ_k| + |b|).
void expect_bf16_within_bound(const Shape& sh, int threads, ReducedKernel kernel) {
  const auto x = test::random_floats(size_t(sh.M) * sh.K, 400 + sh.M, 2.0f);
  const auto w = test::random_floats(size_t(sh.N) * sh.K, 500 + sh.N, 0.1f);
  const auto b = test::random_floats(sh.N, 600 + sh.K, 0.5f);
  ReducedLinear lin(ComputeType::BF16, w.data(), b.data(), sh.N, sh.K);
  std::vector<float> y(size_t(sh.M) * sh.N);
  lin.forward(y.data(), x.data(), sh.M, threads, kernel);
  std::vector<double> ref(y.size());
  reference::linear_bf16(ref.data(), x.data(), w.data(), b.data(), sh.M, sh.K, sh.N);
  std::vector<double> xr(x.size()), wr(w.size());
  for (size_t i = 0; i < x.size(); ++i) xr[i] = std::fabs(reference::round_bf16(x[i]));
  for (size_t i = 0; i < w.size(); ++i) wr[i] = std::fabs(reference::round_bf16(w[i]));
  double worst = 0;
  for (int m = 0; m < sh.M; ++m)
    for (int n = 0; n < sh.N; ++n) {
      double magnitude = std::fabs(b[n]);
      for (int k = 0; k < sh.K; ++k) magnitude += xr[size_t(m) * sh.K + k] * wr[size_t(n) * sh.K + k];
      const double bound = (sh.K + 2) * 0x1p-24 * magnitude;
      worst = std::max(worst, std::fabs(y[size_t(m) * sh.N + n] - ref[size_t(m) * sh.N + n]) / bound);
    }
  EXPECT_LE(worst, 1.0) << sh.M << "x" << sh.K << "x" << sh.N << ", " << threads << " threads, " << name(kernel)
                        << ": worst |diff| / bound";
}

TEST(Reduced, Bf16ProductsWithinTheSummationBound) {
  SKIP_WITHOUT_ONEDNN();
  std::vector<ReducedKernel> kernels;
  if (have_own_kernel(ComputeType::BF16)) kernels.push_back(ReducedKernel::Own);
  if (onednn_bf16()) kernels.push_back(ReducedKernel::OneDnn);
  if (kernels.empty()) GTEST_SKIP() << "no bf16 kernel here: Reduced.Bf16WithoutAKernelSaysWhatItNeeds";
  for_each_case(kernels, kShapes, expect_bf16_within_bound);
}

// The own bf16 kernel's edges (AVX-512 BF16: pairs of k, odd K leaving the last pair half padding;
// AVX2: tiles of 6 rows), as for int8.
TEST(Reduced, Bf16OwnKernelEdgesWithinTheBound) {
  SKIP_WITHOUT_ONEDNN();
  if (!have_own_kernel(ComputeType::BF16)) GTEST_SKIP() << "no bf16 kernel of ordo's own at this level";
  for_each_case({ReducedKernel::Own}, edge_shapes(2), expect_bf16_within_bound);
}

// Cosine of two vectors, in double.
double cosine(const std::vector<double>& a, const std::vector<double>& b) {
  double ab = 0, aa = 0, bb = 0;
  for (size_t i = 0; i < a.size(); ++i) ab += a[i] * b[i], aa += a[i] * a[i], bb += b[i] * b[i];
  return ab / std::sqrt(aa * bb);
}

std::vector<double> mean_pool(const Hidden& h, int b) {
  std::vector<double> v(h.d, 0.0);
  for (int t = 0; t < h.lengths[b]; ++t)
    for (int j = 0; j < h.d; ++j) v[j] += h.row(b, t)[j] / h.lengths[b];
  return v;
}

// The whole encoder at each compute type against itself in float: the mean-pooled vectors of a
// batch of random texts keep a cosine of at least 0.9999 (bf16) and 0.999 (int8) to float's. Five
// texts of 1–64 pieces, and 40 short ones of 1–4 pieces: a short text averages few rows, so one
// row's error stays in its vector (the held-out lines' lowest cosines are those of short texts).
void expect_close_to_f32(const Model& model, const char* name) {
  Encoder enc(model);
  Rng rng(7);
  std::vector<std::vector<int32_t>> ids;
  std::vector<int> lengths{1, 7, 12, 30, 64};
  for (int i = 0; i < 40; ++i) lengths.push_back(1 + i % 4);
  for (int L : lengths) {
    ids.emplace_back();
    for (int t = 0; t < L; ++t) ids.back().push_back(int32_t(rng.next() % model.config().vocab_size));
  }
  const Hidden f32 = enc.forward(ids);
  for (auto [type, floor] : {std::pair{ComputeType::BF16, 0.9999}, std::pair{ComputeType::Int8, 0.999}}) {
    if (!compute_type_available(type)) continue;  // bf16 at ORDO_ISA=scalar without oneDNN's: Reduced.Bf16*
    enc.set_compute_type(type);
    EXPECT_EQ(enc.compute_type(), type);
    const Hidden h = enc.forward(ids);
    double worst = 1;
    for (size_t b = 0; b < ids.size(); ++b) worst = std::min(worst, cosine(mean_pool(h, b), mean_pool(f32, b)));
    EXPECT_GE(worst, floor) << name << " at " << compute_type_name(type) << ": lowest cosine to f32";
    std::printf("%s %s: lowest mean-pooled cosine to f32 %.6f\n", name, compute_type_name(type), worst);
  }
  enc.set_compute_type(ComputeType::F32);  // back to the model's floats: the same as before, bit for bit
  const Hidden again = enc.forward(ids);
  EXPECT_EQ(again.data, f32.data);
}

TEST(Reduced, DefaultModelStaysCloseToF32) {
  SKIP_WITHOUT_ONEDNN();
  const Model m = Model::load(ORDO_DEFAULT_MODEL);
  expect_close_to_f32(m, "default model");
}

TEST(Reduced, RandomBaseSizeModelStaysCloseToF32) {
  SKIP_WITHOUT_ONEDNN();
  Config c;  // the base encoder of Vaswani et al. (tools/dev/bench_peers.py)
  c.vocab_size = 8000;
  c.d_model = 512;
  c.n_heads = 8;
  c.d_ff = 2048;
  c.n_layers = 6;
  c.activation = Activation::ReLU;
  // Its embeddings at PyTorch's nn.Embedding initialisation, N(0, 1), as bench_peers.py's base model
  // has them: √d times ordo's (engine/init.h), so the first layer reads rows of E[id]·√d with
  // entries of about √d, the case in which a quantized first in_proj lost most (reduced.h).
  std::vector<TensorBytes> tensors = random_weights(c, 3);
  for (TensorBytes& t : tensors) {
    if (t.name != "embedding.weight") continue;
    for (size_t i = 0; i < t.bytes.size(); i += 4) {
      float v;
      std::memcpy(&v, &t.bytes[i], 4);
      v *= std::sqrt(float(c.d_model));
      std::memcpy(&t.bytes[i], &v, 4);
    }
  }
  test::TempDir dir;
  write_random_model(c, 3, dir.path);  // config.json
  write_safetensors(dir.path + "/model.safetensors", tensors);
  const Model m = Model::load(dir.path);
  expect_close_to_f32(m, "random base model");
}

// At either reduced type the first layer's in_proj stays in float and every other product is
// converted (reduced.h says why), in a model whose embedding sum is not normed.
TEST(Reduced, FirstInProjectionStaysInFloat) {
  SKIP_WITHOUT_ONEDNN();
  const Model m = Model::load(ORDO_DEFAULT_MODEL);
  for (ComputeType type : {ComputeType::Int8, ComputeType::BF16}) {
    if (!compute_type_available(type)) continue;
    const auto r = convert_model(m, type);
    ASSERT_EQ(r->layers.size(), size_t(m.config().n_layers));
    for (size_t l = 0; l < r->layers.size(); ++l) {
      const ReducedModel::Layer& layer = r->layers[l];
      EXPECT_EQ(layer.in_proj->type(), l == 0 ? ComputeType::F32 : type) << "layer " << l;
      for (const auto* p : {&layer.out_proj, &layer.linear1, &layer.linear2}) EXPECT_EQ((*p)->type(), type);
      // int8's finer grids: in_proj's value third, linear1 and linear2 whole (reduced.h); none at bf16
      const int d = m.config().d_model;
      const bool int8 = type == ComputeType::Int8;
      EXPECT_EQ(layer.in_proj->wide(), int8 && l > 0 ? 2 * d : 3 * d) << "layer " << l;
      EXPECT_EQ(layer.out_proj->wide(), d);
      EXPECT_EQ(layer.linear1->wide(), int8 ? 0 : m.config().d_ff);
      EXPECT_EQ(layer.linear2->wide(), int8 ? 0 : d);
    }
  }
  // kept in float, the product is the model's own: the same bytes as ordo::linear, and within float
  // rounding of the plain product in double
  const LayerWeights& w = m.weights().layers[0];
  const int d = m.config().d_model, M = 5;
  const auto x = test::random_floats(size_t(M) * d, 17, 2.0f);
  ReducedLinear kept(ComputeType::F32, w.in_proj_weight, w.in_proj_bias, 3 * d, d);
  std::vector<float> y(size_t(M) * 3 * d), plain(y.size());
  kept.forward(y.data(), x.data(), M, 2);
  linear(plain.data(), x.data(), w.in_proj_weight, w.in_proj_bias, M, d, 3 * d);
  EXPECT_EQ(y, plain);
  std::vector<double> xd(x.begin(), x.end()), ref(y.size());
  reference::linear(ref.data(), xd.data(), w.in_proj_weight, w.in_proj_bias, M, d, 3 * d);
  for (size_t i = 0; i < y.size(); ++i) EXPECT_NEAR(y[i], ref[i], 1e-4 * (1 + std::fabs(ref[i]))) << i;
  EXPECT_THROW(kept.products_int8(nullptr, nullptr, 0, 1), std::logic_error);
}

// A Hugging Face encoder's first layer reads the embedding sum through its LayerNorm (embedding_norm),
// a row like every later layer's input and unlike the unnormed E[id]·√d + PE that keeps a post-LN
// model's first in_proj in float: there it is converted with the others (value on the finer grids),
// and the encoder stays as close to f32 as the other models. BERT's tensors, and DistilBERT's (no
// token types).
TEST(Reduced, NormedEmbeddingConvertsTheFirstInProjection) {
  SKIP_WITHOUT_ONEDNN();
  for (Family family : {Family::Bert, Family::DistilBert}) {
    Config c;
    c.vocab_size = 97, c.d_model = 64, c.n_heads = 4, c.d_ff = 160, c.n_layers = 2;
    c.family = family, c.activation = Activation::GELU, c.token_types = family == Family::Bert ? 2 : 0;
    c.positional_encoding = PositionalEncoding::Learned, c.max_positions = 80, c.scale_embedding = false;
    c.embedding_norm = true, c.layer_norm_eps = 1e-12;
    test::TempDir dir;
    test::write_random_weights(c, dir.path, 41);
    const Model m(c, dir.path + "/model.safetensors");
    const auto r = convert_model(m, ComputeType::Int8);
    ASSERT_EQ(r->layers.size(), size_t(2));
    for (const ReducedModel::Layer& layer : r->layers) {
      EXPECT_EQ(layer.in_proj->type(), ComputeType::Int8);
      EXPECT_EQ(layer.in_proj->wide(), 2 * c.d_model);
    }
    expect_close_to_f32(
        m, family == Family::Bert ? "normed-embedding model (bert)" : "normed-embedding model (distilbert)");
  }
}

// Without positions, a text and its permutation tie bit for bit at every compute type:
// tests/lib/test_head.cpp (HeadApi.WithoutPositionsReorderingsTieAtEveryComputeType).

TEST(Reduced, ComputeTypeNames) {
  for (ComputeType t : {ComputeType::F32, ComputeType::BF16, ComputeType::Int8})
    EXPECT_EQ(parse_compute_type(compute_type_name(t)), t);
  EXPECT_THROW(parse_compute_type("fp16"), std::invalid_argument);
  EXPECT_TRUE(compute_type_available(ComputeType::F32));
  EXPECT_EQ(compute_type_available(ComputeType::Int8), have_onednn());
  EXPECT_EQ(compute_type_available(ComputeType::BF16),
            have_onednn() && (have_own_kernel(ComputeType::BF16) || onednn_bf16()));
}

// Where nothing runs bf16 (the plain level, whose oneDNN has no bf16 matmul: tests/CMakeLists.txt
// runs this at ORDO_ISA=scalar, which holds oneDNN to SSE4.1), asking for it is one clear error
// naming what it needs, not oneDNN's "could not create a primitive descriptor iterator".
TEST(Reduced, Bf16WithoutAKernelSaysWhatItNeeds) {
  SKIP_WITHOUT_ONEDNN();
  if (compute_type_available(ComputeType::BF16)) GTEST_SKIP() << "bf16 runs here";
  const float w[4] = {1, 2, 3, 4};
  try {
    ReducedLinear lin(ComputeType::BF16, w, nullptr, 2, 2);
    FAIL() << "bf16 was converted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("needs a CPU with AVX2 and FMA, or with AVX-512"), std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace ordo
