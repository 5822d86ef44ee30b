// The fast paths against their plain twins in engine/reference.h: every kernel of linear() in one
// harness, softmax and LayerNorm, on sizes that are not multiples of the vector width or the tile,
// at several thread counts; and the thread pool itself.
#include <gtest/gtest.h>
#include <sched.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <initializer_list>
#include <optional>
#include <thread>
#include <tuple>
#include <vector>

#include "engine/kernels/blas.h"
#include "engine/kernels/cpu.h"
#include "engine/kernels/gemm.h"
#include "engine/kernels/parallel.h"
#include "engine/kernels/rows.h"
#include "engine/kernels/small_m.h"
#include "engine/kernels/tiles.h"
#include "engine/ops.h"
#include "test_util.h"

namespace ordo {
namespace {

using test::max_abs_diff;
using test::random_floats;
using test::ThreadsGuard;

// ----- every kernel of y = x·Wᵀ + b against reference::linear, one harness, one tolerance -----

using Linear = void (*)(float*, const float*, const float*, const float*, int, int, int);
using Sizes = std::vector<std::tuple<int, int, int>>;  // (M, K, N)

// Every (M, K, N) of Ms × Ks × Ns with M·K·N ≤ 2·10⁷ (the double reference is slow).
Sizes grid(std::initializer_list<int> Ms, std::initializer_list<int> Ks, std::initializer_list<int> Ns) {
  Sizes sizes;
  for (int M : Ms)
    for (int K : Ks)
      for (int N : Ns)
        if (double(M) * K * N <= 2e7) sizes.emplace_back(M, K, N);
  return sizes;
}

struct LinearKernel {
  const char* name;
  Linear run;
  Sizes sizes;  // around each kernel's tile, panel and vector widths
};

std::vector<LinearKernel> linear_kernels() {
  return {
      {"linear_small_m", linear_small_m,
       grid({1, 2, 3, 4, 5, 7, 8, 9, 16, 17, 33, 48, 64, 65, 130}, {1, 5, 15, 16, 17, 31, 64, 513},
            {1, 3, 4, 5, 6, 7, 12, 13, 33, 67})},
      {"linear_blas", linear_blas, {{1, 3, 2}, {49, 17, 9}, {100, 64, 192}, {130, 33, 257}, {64, 512, 129}}},
      // the tiles of C (MR = 12, NR = 32) and the blocks (KC = 512, NC = 256)
      {"linear_gemm", linear_gemm,
       grid({1, 7, 13, 31, 33, 64, 100, 257}, {1, 13, 64, 257, 513}, {1, 7, 31, 33, 100, 257, 513})},
      // the panel widths (16 rows of x up to 16, in two halves of 8 at AVX2; 32 above at AVX-512) and the
      // tiles of W (6 rows at AVX2 and up to 16 rows at AVX-512, 12 above)
      {"linear_stream", linear_stream,
       grid({1, 2, 7, 8, 9, 15, 16, 17, 31, 32, 33, 64, 65, 130}, {1, 13, 64, 257, 513},
            {1, 5, 7, 13, 31, 33, 100, 257, 513})},
      // the front-end, on either side of each switch between kernels
      {"linear", linear, grid({1, 5, 8, 9, 16, 17, 33, 200, 257}, {3, 17, 96, 128}, {2, 7, 80, 192})},
  };
}

class LinearMatchesReference : public ::testing::TestWithParam<LinearKernel> {};

TEST_P(LinearMatchesReference, OnOddSizesWithAndWithoutBiasAtOneToThreeThreads) {
  const LinearKernel& kernel = GetParam();
  ThreadsGuard guard;
  double worst = 0;  // the largest diff / tolerance seen, printed at the end
  for (int threads : {1, 2, 3}) {
    set_kernel_threads(threads);
    for (auto [M, K, N] : kernel.sizes) {
      const auto x = random_floats(size_t(M) * K, 11 + M), w = random_floats(size_t(N) * K, 13 + N),
                 b = random_floats(N, 17);
      std::vector<float> fast(size_t(M) * N, -7.0f), slow(size_t(M) * N);
      for (const float* bias : {b.data(), static_cast<const float*>(nullptr)}) {
        kernel.run(fast.data(), x.data(), w.data(), bias, M, K, N);
        test::linear_reference(slow.data(), x.data(), w.data(), bias, M, K, N);
        const double diff = max_abs_diff(fast.data(), slow.data(), fast.size());
        const double tol = test::product_tolerance(K, test::max_abs(slow));
        worst = std::max(worst, diff / tol);
        ASSERT_LE(diff, tol) << kernel.name << " " << M << "x" << K << "x" << N << (bias ? " bias" : "") << " threads "
                             << threads << ": max diff " << diff;
      }
    }
  }
  std::printf("%s: largest diff is %.3f of the tolerance\n", kernel.name, worst);
}

INSTANTIATE_TEST_SUITE_P(Kernels, LinearMatchesReference, ::testing::ValuesIn(linear_kernels()),
                         [](const ::testing::TestParamInfo<LinearKernel>& info) { return info.param.name; });

TEST(Kernels, SmallMGivesTheSameBitsAtAnyThreadCount) {
  // Each output is one tile's dot product, whoever computes it: the split cannot change a bit.
  ThreadsGuard guard;
  const int M = 7, K = 300, N = 250;
  const auto x = random_floats(size_t(M) * K, 1), w = random_floats(size_t(N) * K, 2), b = random_floats(N, 3);
  std::vector<float> one(size_t(M) * N), three(size_t(M) * N);
  set_kernel_threads(1);
  linear_small_m(one.data(), x.data(), w.data(), b.data(), M, K, N);
  set_kernel_threads(3);
  linear_small_m(three.data(), x.data(), w.data(), b.data(), M, K, N);
  EXPECT_EQ(one, three);
}

// softmax_rows on one row of scores z, each weight held to exp(z_j − max) / Σ exp(z_i − max) in double:
// within 1e-6 of it relatively, or `floor` absolutely.
void expect_softmax_of_one_row(std::vector<float> z, double floor) {
  const std::vector<float> in = z;
  const int valid = int(z.size());
  softmax_rows(z.data(), 1, valid, valid);
  const double max = *std::max_element(in.begin(), in.end());
  double sum = 0;
  for (float v : in) sum += std::exp(double(v) - max);
  for (int j = 0; j < valid; ++j) {
    const double want = std::exp(double(in[j]) - max) / sum;
    ASSERT_NEAR(z[j], want, 1e-6 * want + floor) << "valid " << valid << " col " << j;
  }
}

TEST(Kernels, SoftmaxMatchesTheFormulaInDouble) {
  // Rows of every length from 1 to 40 (vector tails), scores spread over ±60 so some weights
  // underflow towards 0, and a masked tail.
  for (int valid = 1; valid <= 40; ++valid) {
    const int cols = valid + 3;
    auto z = random_floats(size_t(2) * cols, 100 + valid, 60.0f);
    const auto in = z;
    softmax_rows(z.data(), 2, cols, valid);
    for (int r = 0; r < 2; ++r) {
      const float* zi = in.data() + size_t(r) * cols;
      const double max = *std::max_element(zi, zi + valid);
      double sum = 0;
      for (int j = 0; j < valid; ++j) sum += std::exp(double(zi[j]) - max);
      for (int j = 0; j < cols; ++j) {
        const double want = j < valid ? std::exp(double(zi[j]) - max) / sum : 0.0;
        ASSERT_NEAR(z[size_t(r) * cols + j], want, 1e-6 * want + 1e-12) << "valid " << valid << " col " << j;
      }
    }
  }
}

TEST(Kernels, SoftmaxWeightsUnderTheFloorAreZeroAndNoneIsSubnormal) {
  // Scores 70 to 103 below the row's maximum, every third one, mixed in blocks of 8 with ordinary
  // scores: those more than 87 − ln(valid) below it (the floor, rows.h) get weight 0, the others
  // stay close to the formula in double relatively, and no weight is a subnormal float (each
  // costs a microcode assist on Intel cores). Scores within 0.01 of the floor are left unchecked:
  // float's z − max may fall on either side.
  for (int valid : {8, 11, 24, 40, 2049}) {
    auto z = random_floats(size_t(valid), 1200 + valid, 2.0f);
    for (int j = 1; j < valid; j += 3) z[j] = -70.0f - 33.0f * float(j) / float(valid);
    const std::vector<float> in = z;
    softmax_rows(z.data(), 1, valid, valid);
    const double max = *std::max_element(in.begin(), in.end()), floor = -87.0 + std::log(double(valid));
    double sum = 0;
    for (float v : in) sum += std::exp(double(v) - max);
    int zeros = 0, kept_tiny = 0;
    for (int j = 0; j < valid; ++j) {
      const double x = double(in[j]) - max, want = std::exp(x) / sum;
      ASSERT_NE(std::fpclassify(z[j]), FP_SUBNORMAL) << "valid " << valid << " col " << j;
      if (x < floor - 0.01) {
        ASSERT_EQ(z[j], 0.0f) << "valid " << valid << " col " << j << ", " << x << " below the maximum";
        ++zeros;
      } else if (x > floor + 0.01) {
        // float's z − max moves e^x by up to |x|·2⁻²⁴ relatively
        ASSERT_NEAR(z[j], want, (1e-6 + std::fabs(x) * std::ldexp(1.0, -24)) * want)
            << "valid " << valid << " col " << j;
        kept_tiny += x < -60;
      }
    }
    EXPECT_GT(zeros, 0) << "valid " << valid;  // the test has scores on both sides of the floor
    EXPECT_GT(kept_tiny, 0) << "valid " << valid;
  }
}

TEST(Kernels, SoftmaxGivesTheSameBitsAtAvx2AndAvx512) {
  // The two vector kernels round every weight alike (rows_avx2.cpp's exp8_nonpositive): the same
  // input rows, with tails, give the same floats; rows of scores within the floor of their maximum
  // (the AVX2 kernel's exponent-bit sum alone) and rows with −∞ scores and scores under the floor
  // (held to it, then masked to 0).
  const CpuFeatures& f = cpu_features();
  if (!(f.avx512f && f.avx512bw && f.avx512dq && f.avx512vl)) GTEST_SKIP() << "this CPU has no AVX-512";
  for (int valid : {1, 7, 8, 9, 16, 17, 31, 32, 33, 100, 2049})
    for (bool wide : {false, true}) {
      auto z = random_floats(size_t(valid), 1300 + valid, wide ? 60.0f : 3.0f);
      if (wide)
        for (int j = 2; j < valid; j += 5) z[j] = -INFINITY;
      z[0] = 1.0f;
      auto at_avx2 = z, at_avx512 = z;
      kRowsAvx2.softmax_row(at_avx2.data(), valid);
      kRowsAvx512.softmax_row(at_avx512.data(), valid);
      EXPECT_EQ(at_avx2, at_avx512) << "valid " << valid << (wide ? ", wide" : ", narrow");
    }
}

TEST(Kernels, Avx2SoftmaxGivesANaNScoreTheWeightOfMinusInfinity) {
  // A NaN score (not in the row's last block of 8, where it can become the maximum) gets weight 0
  // and leaves the others as a score of −∞ there would: the same floats, in a row within 87 of its
  // maximum (where the kernel sums exponent bits without a lower bound, and puts the 0 in
  // afterwards) and in a wider one.
  const CpuFeatures& f = cpu_features();
  if (!(f.avx2 && f.fma)) GTEST_SKIP() << "this CPU has no AVX2 and FMA";
  for (int valid : {40, 2049})
    for (float spread : {3.0f, 60.0f}) {
      auto z = random_floats(size_t(valid), 1400 + valid, spread);
      auto with_nan = z, with_minus_infinity = z;
      for (int j : {3, 17}) with_nan[j] = NAN, with_minus_infinity[j] = -INFINITY;
      kRowsAvx2.softmax_row(with_nan.data(), valid);
      kRowsAvx2.softmax_row(with_minus_infinity.data(), valid);
      EXPECT_EQ(with_nan[3], 0.0f);
      EXPECT_EQ(with_nan, with_minus_infinity) << "valid " << valid << ", spread " << spread;
    }
}

// n floats that end where an unreadable page begins: a kernel reading past its last value faults.
class GuardedFloats {
 public:
  explicit GuardedFloats(const std::vector<float>& values) : n_(values.size()) {
    const size_t page = size_t(sysconf(_SC_PAGESIZE)), data_pages = (n_ * sizeof(float) + page - 1) / page;
    bytes_ = (data_pages + 1) * page;
    base_ = mmap(nullptr, bytes_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    EXPECT_NE(base_, MAP_FAILED);
    EXPECT_EQ(mprotect(static_cast<char*>(base_) + data_pages * page, page, PROT_NONE), 0);
    data_ = reinterpret_cast<float*>(static_cast<char*>(base_) + data_pages * page) - n_;
    std::copy(values.begin(), values.end(), data_);
  }
  ~GuardedFloats() { munmap(base_, bytes_); }
  GuardedFloats(const GuardedFloats&) = delete;
  GuardedFloats& operator=(const GuardedFloats&) = delete;
  float* data() { return data_; }
  std::vector<float> values() const { return std::vector<float>(data_, data_ + n_); }

 private:
  size_t n_, bytes_ = 0;
  void* base_ = nullptr;
  float* data_ = nullptr;
};

TEST(Kernels, SoftmaxReadsNoFurtherThanItsRows) {
  for (int valid : {1, 5, 17, 33}) {
    const auto z = random_floats(size_t(2) * valid, 500 + valid, 5.0f);
    GuardedFloats guarded(z);
    softmax_rows(guarded.data(), 2, valid, valid);
    auto want = z;
    softmax_rows(want.data(), 2, valid, valid);
    EXPECT_EQ(guarded.values(), want) << "valid " << valid;
  }
}

TEST(Kernels, SoftmaxRowsSumToOne) {
  // The probabilities `ordo attention` shows: each row a distribution, at lengths past 64 too.
  for (int valid : {1, 15, 16, 17, 63, 64, 65, 70, 200}) {
    auto z = random_floats(size_t(3) * valid, 300 + valid, 20.0f);
    softmax_rows(z.data(), 3, valid, valid);
    for (int r = 0; r < 3; ++r) {
      double sum = 0;
      for (int j = 0; j < valid; ++j) {
        ASSERT_GE(z[size_t(r) * valid + j], 0.0f);
        sum += z[size_t(r) * valid + j];
      }
      EXPECT_NEAR(sum, 1.0, 1e-6) << "valid " << valid << " row " << r;
    }
  }
}

// Rows centred away from 0 (mean 3, spread 2), as the residual stream is: the float lanes of the
// fast path must not lose the variance to the mean. γ and β random.
struct NormCase {
  std::vector<float> x, r, gamma, beta;
  NormCase(int M, int d)
      : x(random_floats(size_t(M) * d, 40 + M * 7 + d, 2.0f)),
        r(random_floats(size_t(M) * d, 50 + d, 1.0f)),
        gamma(random_floats(d, 60 + d, 1.5f)),
        beta(random_floats(d, 70 + d, 0.5f)) {
    for (float& v : x) v += 3.0f;
  }
};

// Per row: |fast − reference| ≤ 1e-6 · max(1, max |reference|) + 4ε · max |x| / σ · max |γ|, ε = 2⁻²⁴.
// The second term is the float rounding of x and of the mean, which the division by the standard
// deviation σ = √(var + eps) magnifies on rows of small spread (PyTorch's float LayerNorm shares it).
void expect_norm_close(const std::vector<float>& fast, const std::vector<float>& want, const std::vector<float>& x,
                       const std::vector<float>& gamma, const char* name, int M, int d, float eps) {
  double max_gamma = 0;
  for (float g : gamma) max_gamma = std::max(max_gamma, std::fabs(double(g)));
  for (int m = 0; m < M; ++m) {
    const float *xi = x.data() + size_t(m) * d, *wi = want.data() + size_t(m) * d;
    double mean = 0, var = 0, max_x = 0, max_y = 1;
    for (int j = 0; j < d; ++j) mean += xi[j] / double(d);
    for (int j = 0; j < d; ++j) {
      var += (xi[j] - mean) * (xi[j] - mean) / d;
      max_x = std::max(max_x, std::fabs(double(xi[j])));
      max_y = std::max(max_y, std::fabs(double(wi[j])));
    }
    const double tolerance = 1e-6 * max_y + 4 * std::ldexp(1.0, -24) * max_x / std::sqrt(var + eps) * max_gamma;
    const double diff = max_abs_diff(fast.data() + size_t(m) * d, wi, d);
    ASSERT_LE(diff, tolerance) << name << " M " << M << " d " << d << " row " << m << " threads " << kernel_threads()
                               << ": max diff " << diff;
  }
}

TEST(Kernels, LayerNormMatchesReferenceOnOddSizes) {
  ThreadsGuard guard;
  for (int threads : {1, 2, 3}) {
    set_kernel_threads(threads);
    for (int d : {1, 2, 3, 15, 16, 17, 33, 80, 512, 515})
      for (int M = 1; M <= 70; M += (d > 100 ? 23 : 1)) {
        const NormCase c(M, d);
        std::vector<float> fast(c.x.size(), -7.0f), want(c.x.size());
        layer_norm(fast.data(), c.x.data(), c.gamma.data(), c.beta.data(), M, d, 1e-5f);
        test::layer_norm_reference(want.data(), c.x.data(), c.gamma.data(), c.beta.data(), M, d, 1e-5f);
        expect_norm_close(fast, want, c.x, c.gamma, "layer_norm", M, d, 1e-5f);
        std::vector<float> in_place = c.x;  // out == x
        layer_norm(in_place.data(), in_place.data(), c.gamma.data(), c.beta.data(), M, d, 1e-5f);
        EXPECT_EQ(in_place, fast) << "in place, M " << M << " d " << d;
      }
  }
}

TEST(Kernels, LayerNormReadsNoFurtherThanItsRows) {
  // x, r, γ and β each end at an unreadable page, at widths with a masked tail.
  for (int d : {3, 17, 40}) {
    const int M = 3;
    const NormCase c(M, d);
    GuardedFloats x(c.x), r(c.r), gamma(c.gamma), beta(c.beta), out(std::vector<float>(c.x.size()));
    std::vector<float> want(c.x.size());
    layer_norm(out.data(), x.data(), gamma.data(), beta.data(), M, d, 1e-5f);
    layer_norm(want.data(), c.x.data(), c.gamma.data(), c.beta.data(), M, d, 1e-5f);
    EXPECT_EQ(out.values(), want) << "layer_norm d " << d;
    add_layer_norm(x.data(), r.data(), gamma.data(), beta.data(), M, d, 1e-5f);
    auto sum = c.x;
    add_layer_norm(sum.data(), c.r.data(), c.gamma.data(), c.beta.data(), M, d, 1e-5f);
    EXPECT_EQ(x.values(), sum) << "add_layer_norm d " << d;
  }
}

TEST(Kernels, AddLayerNormIsTheSumNormed) {
  ThreadsGuard guard;
  for (int threads : {1, 2, 3}) {
    set_kernel_threads(threads);
    for (int d : {1, 7, 16, 17, 100, 512})
      for (int M : {1, 2, 31, 32, 33, 64, 65, 70, 200}) {
        const NormCase c(M, d);
        std::vector<float> sum(c.x.size()), want(c.x.size());
        for (size_t i = 0; i < sum.size(); ++i) sum[i] = c.x[i] + c.r[i];
        test::layer_norm_reference(want.data(), sum.data(), c.gamma.data(), c.beta.data(), M, d, 1e-5f);
        std::vector<float> x = c.x;
        add_layer_norm(x.data(), c.r.data(), c.gamma.data(), c.beta.data(), M, d, 1e-5f);
        expect_norm_close(x, want, sum, c.gamma, "add_layer_norm", M, d, 1e-5f);
        x = c.x;
        residual(x.data(), c.r.data(), M, d);
        EXPECT_EQ(x, sum) << "residual M " << M << " d " << d;
      }
  }
}

TEST(Kernels, ActivateEveryValueAcrossBlocks) {
  // More values than one block of the split (2^16), and a ragged end; values over ±12, where the
  // GELUs' negative side is a tail of 10⁻³³ and the positive side is v itself.
  ThreadsGuard guard;
  set_kernel_threads(2);
  const size_t n = (size_t(1) << 17) + 5;
  const auto x = random_floats(n, 5, 12.0f);
  auto relu = x, gelu = x, gelu_tanh = x;
  activation(relu.data(), n, Activation::ReLU);
  activation(gelu.data(), n, Activation::GELU);
  activation(gelu_tanh.data(), n, Activation::GELUTanh);
  for (size_t i = 0; i < n; ++i) {
    ASSERT_EQ(relu[i], std::max(x[i], 0.0f)) << i;
    const double v = x[i], want = 0.5 * v * (1.0 + std::erf(v / std::sqrt(2.0)));
    ASSERT_NEAR(gelu[i], want, 1e-6 * std::max(1.0, std::fabs(want))) << "gelu of " << v;
    const double want_tanh = 0.5 * v * (1.0 + std::tanh(std::sqrt(2.0 / M_PI) * (v + 0.044715 * v * v * v)));
    ASSERT_NEAR(gelu_tanh[i], want_tanh, 1e-6 * std::max(1.0, std::fabs(want_tanh))) << "gelu-tanh of " << v;
  }
}

TEST(Kernels, GeluKeepsItsRelativeAccuracyOnTheNegativeSide) {
  // GELU(v) for v from −1 to −9: values from −0.16 down to 10⁻¹⁹, each close to the formula in
  // double relatively (1 + erf(·) in float would lose them all to cancellation); the tanh form,
  // whose tail is e^(−2u)-small, likewise down to v = −6. Relatively within 2·10⁻⁶ + 4v²·2⁻²⁴:
  // the tail falls like e^(−v²/2), so float's rounding of v/√2 (or of u) alone moves it by about
  // v²·2⁻²⁴ relatively. Odd counts: the vector tails too.
  for (size_t n : {size_t(1), size_t(7), size_t(801)}) {
    std::vector<float> x(n);
    for (size_t i = 0; i < n; ++i) x[i] = -1.0f - 8.0f * float(i) / float(std::max<size_t>(n - 1, 1));
    auto gelu = x, gelu_tanh = x;
    activation(gelu.data(), n, Activation::GELU);
    activation(gelu_tanh.data(), n, Activation::GELUTanh);
    for (size_t i = 0; i < n; ++i) {
      const double v = x[i], relative = 2e-6 + 4 * v * v * std::ldexp(1.0, -24);
      const double want = 0.5 * v * std::erfc(-v / std::sqrt(2.0));
      EXPECT_NEAR(gelu[i], want, relative * std::fabs(want)) << "gelu of " << v;
      if (v < -6) continue;
      const double u = std::sqrt(2.0 / M_PI) * (v + 0.044715 * v * v * v), want_tanh = v / (1.0 + std::exp(-2.0 * u));
      EXPECT_NEAR(gelu_tanh[i], want_tanh, relative * std::fabs(want_tanh)) << "gelu-tanh of " << v;
    }
  }
}

TEST(Kernels, GeluReadsNoFurtherThanItsValues) {
  for (size_t n : {size_t(1), size_t(5), size_t(17), size_t(33)})
    for (Activation act : {Activation::GELU, Activation::GELUTanh}) {
      const auto x = random_floats(n, 700 + n, 3.0f);
      GuardedFloats guarded(x);
      activation(guarded.data(), n, act);
      auto want = x;
      activation(want.data(), n, act);
      EXPECT_EQ(guarded.values(), want) << "n " << n;
    }
}

TEST(Kernels, SoftmaxOfLongRowsAndOfMaskedScores) {
  // Rows as long as the longest inputs' (8192 keys, and a ragged 2049), scores over ±30: each
  // weight within 1e-6 of the formula in double, relatively. And −∞ scores (ALiBi's infinite
  // slope) get no weight while the others still sum to 1.
  for (int valid : {2049, 8192}) expect_softmax_of_one_row(random_floats(size_t(valid), 900 + valid, 30.0f), 1e-12);
  for (int valid : {3, 8, 13}) {
    auto z = random_floats(size_t(valid), 950 + valid, 2.0f);
    for (int j = 0; j < valid; j += 2) z[j] = -INFINITY;
    if (valid % 2 == 1) z[valid - 1] = 1.0f;  // one finite score at least
    softmax_rows(z.data(), 1, valid, valid);
    double sum = 0;
    for (int j = 0; j < valid; ++j) {
      if (j % 2 == 0 && j != valid - 1) {
        EXPECT_EQ(z[j], 0.0f) << "valid " << valid << " col " << j;
      }
      sum += z[j];
    }
    EXPECT_NEAR(sum, 1.0, 1e-6) << "valid " << valid;
  }
}

TEST(Parallel, EveryTaskRunsOnceOnAValidThread) {
  ThreadsGuard guard;
  for (int threads : {1, 2, 4}) {
    set_kernel_threads(threads);
    ASSERT_EQ(kernel_threads(), threads);
    for (int n : {0, 1, 5, 1000}) {
      std::vector<std::atomic<int>> runs(n);
      std::atomic<int> bad_thread{0};
      parallel_for(n, [&](int task, int thread) {
        runs[task].fetch_add(1);
        if (thread < 0 || thread >= threads) bad_thread.fetch_add(1);
      });
      for (int i = 0; i < n; ++i) ASSERT_EQ(runs[i].load(), 1) << "task " << i << " of " << n;
      EXPECT_EQ(bad_thread.load(), 0);
    }
  }
}

// Jobs back to back, inside a pass (the helpers spin between them) and outside (they sleep), at
// several sizes: a helper that wakes late must never take a task of a job that has ended or run one twice.
TEST(Parallel, JobsBackToBackEachTaskOnce) {
  ThreadsGuard guard;
  for (int threads : {2, 3}) {
    set_kernel_threads(threads);
    for (bool in_pass : {true, false}) {
      std::optional<PassThreads> pass;
      if (in_pass) pass.emplace();
      for (int job = 0; job < 3000; ++job) {
        const int n = 1 + job % 7;
        std::vector<std::atomic<int>> runs(n);
        parallel_for(n, [&](int task, int) { runs[task].fetch_add(1); });
        for (int i = 0; i < n; ++i) ASSERT_EQ(runs[i].load(), 1) << "job " << job << " task " << i;
      }
    }
  }
}

// More tasks than one job word can count (2^20 - 1) run in several jobs, each task once.
TEST(Parallel, MoreTasksThanOneJobHolds) {
  ThreadsGuard guard;
  set_kernel_threads(2);
  const int n = (1 << 20) + 3;
  std::vector<std::atomic<uint8_t>> runs(n);
  parallel_for(n, [&](int task, int) { runs[task].fetch_add(1, std::memory_order_relaxed); });
  for (int i = 0; i < n; ++i) ASSERT_EQ(runs[i].load(), 1) << i;
}

// A job smaller than the cost of waking a helper runs on the caller alone; a larger one is shared out.
TEST(Parallel, SmallJobsStayOnTheCaller) {
  ThreadsGuard guard;
  set_kernel_threads(2);
  std::atomic<int> off_caller{0}, runs{0};
  parallel_for(64, kMinSplitFlops / 2, [&](int, int thread) {
    runs.fetch_add(1);
    if (thread != 0) off_caller.fetch_add(1);
  });
  EXPECT_EQ(runs.load(), 64);
  EXPECT_EQ(off_caller.load(), 0);
  runs = 0;
  parallel_for(64, kMinSplitFlops * 2, [&](int, int thread) {
    runs.fetch_add(1);
    ASSERT_TRUE(thread == 0 || thread == 1);
  });
  EXPECT_EQ(runs.load(), 64);
}

// A helper that comes for a job late holds nothing up and takes nothing twice: the caller takes the
// runs it has not come for. The hook holds the helper back until the caller has computed `release`
// tiles (no clock: the order is forced), for jobs cut as split_tasks cuts them at 1 × 8 and 8 × 768.
struct LateHelper {
  static inline std::atomic<int> caller_tiles{0}, release{0};
  static void hold(int) {
    while (caller_tiles.load() < release.load()) std::this_thread::yield();
  }
  explicit LateHelper(int tiles) {
    caller_tiles = 0, release = tiles;
    set_helper_hook(hold);
  }
  ~LateHelper() {
    release = 0;  // a helper still held goes on (to a job that has ended: it takes nothing)
    set_helper_hook(nullptr);
  }
};

TEST(Parallel, ALateHelperLeavesEveryOutputWrittenOnce) {
  ThreadsGuard guard;
  set_kernel_threads(2);
  const std::thread::id caller = std::this_thread::get_id();
  for (const int M : {8, 64, 200}) {
    const int N = 768, tile_m = 4, tile_n = 6;
    const double flops = 2.0 * M * 768 * N;
    ASSERT_GT(split_tasks(flops, N / tile_n, 2), 2);  // runs for the helper to come late for
    // Never, while the job lasts (the helper is let go after it has ended); after the caller's
    // first tile, waiting then until the helper has computed one itself (both take part); after 3.
    for (const int late : {1 << 30, 1, 3}) {
      std::vector<std::atomic<int>> writes(size_t(M) * N);
      std::atomic<int> helper_tiles{0};
      {
        const LateHelper hold(late);
        tiles::for_each_tile(M, N, tile_m, tile_n, tile_n, 2, flops, [&](int m, int mr, int n, int nr) {
          for (int i = 0; i < mr; ++i)
            for (int j = 0; j < nr; ++j) writes[size_t(m + i) * N + n + j].fetch_add(1);
          if (std::this_thread::get_id() != caller) {
            helper_tiles.fetch_add(1);
            return;
          }
          if (LateHelper::caller_tiles.fetch_add(1) + 1 == 1 && late == 1)
            while (helper_tiles.load() == 0) std::this_thread::yield();
        });
      }
      for (size_t i = 0; i < writes.size(); ++i)
        ASSERT_EQ(writes[i].load(), 1) << "M " << M << ", helper after " << late << " tiles, output " << i;
      if (late == 1 << 30) {
        EXPECT_EQ(helper_tiles.load(), 0) << M;
      }
      if (late == 1) {
        EXPECT_GT(helper_tiles.load(), 0) << M;
      }
    }
  }
}

// The same through a kernel: with the helper late, linear_small_m's bits are those of one thread.
TEST(Parallel, ALateHelperLeavesSmallMBitsAsOneThread) {
  ThreadsGuard guard;
  const int M = 8, K = 384, N = 1536;
  const auto x = random_floats(size_t(M) * K, 5), w = random_floats(size_t(N) * K, 6), b = random_floats(N, 7);
  std::vector<float> one(size_t(M) * N), late(size_t(M) * N, -1.0f);
  set_kernel_threads(1);
  linear_small_m(one.data(), x.data(), w.data(), b.data(), M, K, N);
  set_kernel_threads(2);
  {
    const LateHelper hold(1 << 30);
    linear_small_m(late.data(), x.data(), w.data(), b.data(), M, K, N);
  }
  EXPECT_EQ(one, late);
}

// A helper that takes a task and then loses its core holds the job up, by a time slice where the job
// takes microseconds. The body plays that helper: the task it takes waits until the caller has done
// all the others, then 100 ms more (no clock is asserted on; the wait only makes the job longer than
// the caller alone would have taken, by far). The next jobs (for as long as that wait) run on the
// caller alone, and later the helper takes part again.
TEST(Parallel, AJobAHelperHeldUpLeavesTheNextJobsToTheCaller) {
  ThreadsGuard guard;
  set_kernel_threads(1);
  set_kernel_threads(2);  // a new pool: no spell left by an earlier test
  const int n = 8;
  bool held = false;
  for (int attempt = 0; attempt < 100 && !held; ++attempt) {  // until the helper comes for a task
    std::atomic<int> by_caller{0};
    std::atomic<bool> helper_took{false};
    parallel_for(n, [&](int, int thread) {
      if (thread == 0) {  // the caller's first task gives the helper time to come
        for (int i = 0; i < 100000 && by_caller.load() == 0 && !helper_took.load(); ++i) std::this_thread::yield();
        by_caller.fetch_add(1);
        return;
      }
      helper_took = true;
      while (by_caller.load() < n - 1) std::this_thread::yield();
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    });
    held = helper_took;
  }
  ASSERT_TRUE(held) << "the helper never came for a task";
  // Inside a pass (the helper spins for jobs) and with some work in each task (~10 µs, ~1 ms a job),
  // a helper that was given tasks would take some.
  const auto some_work = [] {
    volatile double sink = 0;
    for (int i = 0; i < 5000; ++i) sink = sink + i;
  };
  std::atomic<int> off_caller{0};
  {
    const PassThreads pass;
    for (int job = 0; job < 10; ++job)
      parallel_for(64, [&](int, int thread) {
        if (thread != 0) off_caller.fetch_add(1);
        some_work();
      });
  }
  EXPECT_EQ(off_caller.load(), 0) << "tasks run by the helper right after it held a job up";
  // After the spell (at most 100 ms), the helper is given tasks again.
  std::this_thread::sleep_for(std::chrono::milliseconds(150));
  std::atomic<bool> back{false};
  const PassThreads pass;
  for (int job = 0; job < 1000 && !back.load(); ++job)
    parallel_for(64, [&](int, int thread) {
      if (thread != 0) back = true;
      some_work();
    });
  EXPECT_TRUE(back.load()) << "the helper was never given a task again";
}

// A helper on the caller's core may step off it (when no other thread waits for a core), and does so
// by narrowing its CPU set for a moment: afterwards its set is the one it had, and a set narrowed to
// the caller's core alone (as a user may with taskset) is left as it is, with every job still done.
struct HelperCpus {
  static inline cpu_set_t sets[2];         // the whole set, the caller's core alone (written before the hook is set)
  static inline std::atomic<int> want{0};  // which of them the helper's set must be at each job
  static inline std::atomic<int> jobs{0}, wrong_set{0}, off_caller{0}, caller{-1};
  static inline std::atomic<bool> narrow{false};  // the helper narrows itself to the caller's core
  static void look(int) {
    if (narrow.exchange(false)) sched_setaffinity(0, sizeof sets[1], &sets[1]);
    cpu_set_t now;
    if (sched_getaffinity(0, sizeof now, &now) != 0 || !CPU_EQUAL(&now, &sets[want.load()])) wrong_set.fetch_add(1);
    if (sched_getcpu() != caller.load()) off_caller.fetch_add(1);
    jobs.fetch_add(1);
  }
};

TEST(Parallel, AHelperKeepsItsCpuSet) {
  ThreadsGuard guard;
  cpu_set_t all;
  ASSERT_EQ(sched_getaffinity(0, sizeof all, &all), 0);
  if (CPU_COUNT(&all) < 2) GTEST_SKIP() << "one CPU";
  set_kernel_threads(1);
  set_kernel_threads(2);  // a helper started with this thread's set
  int first = 0;
  while (!CPU_ISSET(first, &all)) ++first;
  cpu_set_t one;
  CPU_ZERO(&one);
  CPU_SET(first, &one);
  ASSERT_EQ(sched_setaffinity(0, sizeof one, &one), 0);  // the caller on one core
  HelperCpus::sets[0] = all, HelperCpus::sets[1] = one;
  HelperCpus::caller = first, HelperCpus::want = 0, HelperCpus::jobs = 0, HelperCpus::wrong_set = 0;
  set_helper_hook(HelperCpus::look);
  const auto jobs = [](int n) {
    const PassThreads pass;
    for (int job = 0; job < n; ++job)
      parallel_for(16, [&](int, int) {
        volatile double sink = 0;
        for (int i = 0; i < 2000; ++i) sink = sink + i;
      });
  };
  jobs(2000);
  EXPECT_GT(HelperCpus::jobs.load(), 0);
  EXPECT_EQ(HelperCpus::wrong_set.load(), 0) << "the helper's CPU set changed";
  HelperCpus::want = 1, HelperCpus::jobs = 0, HelperCpus::wrong_set = 0, HelperCpus::off_caller = 0;
  HelperCpus::narrow = true;  // at its next job
  while (HelperCpus::narrow.load()) jobs(1);
  HelperCpus::jobs = 0, HelperCpus::wrong_set = 0, HelperCpus::off_caller = 0;
  jobs(2000);
  EXPECT_GT(HelperCpus::jobs.load(), 0);
  EXPECT_EQ(HelperCpus::wrong_set.load(), 0) << "the narrowed set was widened";
  EXPECT_EQ(HelperCpus::off_caller.load(), 0) << "the helper ran outside its narrowed set";
  set_helper_hook(nullptr);
  sched_setaffinity(0, sizeof all, &all);
  set_kernel_threads(1);  // the narrowed helper ends here
}

// The decision in one place: the caller alone below the threshold or with one thread, then
// kRunsPerThread runs per thread, never more than the pieces there are.
TEST(Parallel, SplitTasksFollowsTheThreshold) {
  EXPECT_EQ(split_tasks(kMinSplitFlops / 2, 1000, 2), 1);
  EXPECT_EQ(split_tasks(kMinSplitFlops * 2, 1000, 1), 1);
  EXPECT_EQ(split_tasks(kMinSplitFlops * 2, 1000, 2), 2 * kRunsPerThread);
  EXPECT_EQ(split_tasks(kMinSplitFlops * 2, 3, 2), 3);
  EXPECT_EQ(split_tasks(kMinSplitFlops * 2, 1, 2), 1);
}

}  // namespace
}  // namespace ordo
