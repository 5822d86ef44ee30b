// engine/kernels/gemm.h against plain loops in double: linear_gemm and linear_stream against
// reference::linear on sizes that are not multiples of the tile (MR = 12, NR = 32) or the blocks (KC = 512, NC = 256),
// and gemm() in both of the attention's forms, with leading dimensions wider than the rows.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <initializer_list>
#include <vector>

#include "engine/kernels/gemm.h"
#include "engine/kernels/parallel.h"
#include "engine/ops.h"
#include "test_util.h"

namespace ordo {
namespace {

using test::max_abs_diff;
using test::random_floats;
using test::ThreadsGuard;

double max_abs(const std::vector<float>& v) {
  double m = 0;
  for (float f : v) m = std::max(m, double(std::fabs(f)));
  return m;
}

// Float sums of K products drift from the double sum by about √K ulps of the result's scale.
double tolerance(int K, double scale) {
  return 1e-5 * std::sqrt(double(std::max(K, 1))) * std::max(scale, 1.0);
}

using Linear = void (*)(float*, const float*, const float*, const float*, int, int, int);

void expect_linear_matches_reference(Linear linear_fast, const char* name, std::initializer_list<int> ms) {
  ThreadsGuard guard;
  double worst = 0;  // the largest diff / tolerance seen, printed at the end
  for (int threads : {1, 2, 3}) {
    set_kernel_threads(threads);
    for (int M : ms)
      for (int N : {1, 7, 31, 33, 100, 257, 513})
        for (int K : {1, 13, 64, 257, 513}) {
          if (double(M) * N * K > 2e7) continue;  // the double reference is slow
          const auto x = random_floats(size_t(M) * K, 11 + M), w = random_floats(size_t(N) * K, 13 + N),
                     b = random_floats(N, 17);
          std::vector<float> fast(size_t(M) * N, -7.0f), slow(size_t(M) * N);
          for (const float* bias : {b.data(), static_cast<const float*>(nullptr)}) {
            linear_fast(fast.data(), x.data(), w.data(), bias, M, K, N);
            test::linear_reference(slow.data(), x.data(), w.data(), bias, M, K, N);
            const double diff = max_abs_diff(fast.data(), slow.data(), fast.size()), tol = tolerance(K, max_abs(slow));
            worst = std::max(worst, diff / tol);
            ASSERT_LT(diff, tol) << name << " " << M << "x" << K << "x" << N << (bias ? " bias" : "") << " threads "
                                 << threads << ": max diff " << diff;
          }
        }
  }
  std::printf("%s: largest diff is %.3f of the tolerance\n", name, worst);
}

TEST(Gemm, LinearMatchesReferenceOnOddSizes) {
  expect_linear_matches_reference(linear_gemm, "linear_gemm", {1, 7, 13, 31, 33, 64, 100, 257});
}

// Around the panel widths (16 rows of x up to 16, 32 above) and the tiles of W (24 rows, then 12).
TEST(Gemm, StreamMatchesReferenceOnOddSizes) {
  expect_linear_matches_reference(linear_stream, "linear_stream", {1, 2, 9, 15, 16, 17, 31, 32, 33, 64, 65, 130});
}

TEST(Gemm, LinearTakesMoreThanOneDepthBlock) {
  // K = 1100 spans three KC blocks: the second and third add onto the first, bias added once; N = 300
  // spans two NC blocks.
  const int M = 130, K = 1100, N = 300;
  const auto x = random_floats(size_t(M) * K, 1), w = random_floats(size_t(N) * K, 2), b = random_floats(N, 3, 50.0f);
  std::vector<float> fast(size_t(M) * N), slow(size_t(M) * N);
  linear_gemm(fast.data(), x.data(), w.data(), b.data(), M, K, N);
  test::linear_reference(slow.data(), x.data(), w.data(), b.data(), M, K, N);
  const double diff = max_abs_diff(fast.data(), slow.data(), fast.size());
  std::printf("linear_gemm %dx%dx%d: max diff %.3g\n", M, K, N, diff);
  EXPECT_LT(diff, tolerance(K, max_abs(slow)));
}

// The attention's two products, computed in double from the same strided operands.
void expect_gemm_matches(bool b_is_nk, int M, int N, int K, float alpha) {
  const int lda = K + 5, ldb = (b_is_nk ? K : N) + 3, ldc = N + 9;  // rows wider than the matrices
  const auto A = random_floats(size_t(M) * lda, 21 + M), B = random_floats(size_t(b_is_nk ? N : K) * ldb, 23 + N);
  std::vector<float> C(size_t(M) * ldc, -7.0f);
  gemm(C.data(), ldc, A.data(), lda, B.data(), ldb, b_is_nk, nullptr, alpha, M, N, K);
  double diff = 0, scale = 0;
  for (int i = 0; i < M; ++i)
    for (int j = 0; j < N; ++j) {
      double acc = 0;
      for (int k = 0; k < K; ++k)
        acc += double(A[size_t(i) * lda + k]) * (b_is_nk ? B[size_t(j) * ldb + k] : B[size_t(k) * ldb + j]);
      diff = std::max(diff, std::fabs(alpha * acc - C[size_t(i) * ldc + j]));
      scale = std::max(scale, std::fabs(alpha * acc));
    }
  EXPECT_LT(diff, tolerance(K, scale)) << (b_is_nk ? "NT " : "NN ") << M << "x" << N << "x" << K << ": max diff "
                                       << diff;
  for (int i = 0; i < M; ++i)  // the padding between rows of C is left alone
    for (int j = N; j < ldc; ++j) ASSERT_EQ(C[size_t(i) * ldc + j], -7.0f) << i << "," << j;
}

TEST(Gemm, AttentionFormsWithLeadingDimensions) {
  for (int L : {1, 7, 33, 100, 257, 600})  // 600 > NC: two column blocks
    for (int dh : {1, 13, 64}) {
      expect_gemm_matches(true, L, L, dh, 0.125f);  // scores (L, L) = α · q (L, dh) · kᵀ
      expect_gemm_matches(false, L, dh, L, 1.0f);   // out (L, dh) = probs (L, L) · v (L, dh)
    }
}

}  // namespace
}  // namespace ordo
