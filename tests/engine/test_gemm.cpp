// engine/kernels/gemm.h beyond the linear harness of test_kernels.cpp: a product deeper than one
// block, and gemm() in both of the attention's forms, with leading dimensions wider than the rows,
// against plain loops in double under the same tolerance.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <initializer_list>
#include <tuple>
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
  EXPECT_LE(diff, test::product_tolerance(K, test::max_abs(slow)));
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
  EXPECT_LE(diff, test::product_tolerance(K, scale))
      << (b_is_nk ? "NT " : "NN ") << M << "x" << N << "x" << K << ": max diff " << diff;
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

TEST(Gemm, EveryEdgeOfTheTilesAndTheDepth) {
  // Every M from 1 to 40 (the tiles' rows: 6 at AVX2, 12 at AVX-512, and their remainders),
  // against columns on either side of the panels (8 and 16 at AVX2, 16 and 32 at AVX-512) and
  // depths with a tail after the 8 or 16 columns that packing transposes at once.
  for (int M = 1; M <= 40; ++M)
    for (int N : {1, 5, 8, 15, 16, 17, 31, 33})
      for (int K : {1, 3, 8, 9, 17}) {
        expect_gemm_matches(true, M, N, K, 0.5f);
        expect_gemm_matches(false, M, N, K, 1.0f);
      }
}

TEST(Gemm, PackedOnceGivesTheBitsOfGemm) {
  // pack_b_all then gemm_packed is gemm() with its packing done ahead: the same blocks, the same
  // sums, the same bits; across depth blocks (K > 512) and column blocks (N > 256) too.
  for (auto [M, N, K] : {std::tuple{1, 1, 1}, std::tuple{7, 33, 13}, std::tuple{40, 100, 64}, std::tuple{13, 300, 600},
                         std::tuple{25, 17, 1100}})
    for (bool b_is_nk : {true, false}) {
      const int ldb = (b_is_nk ? K : N) + 3;
      const auto A = random_floats(size_t(M) * K, 31 + M), B = random_floats(size_t(b_is_nk ? N : K) * ldb, 37 + N);
      std::vector<float> direct(size_t(M) * N), packed(size_t(M) * N, -7.0f), Bp(packed_b_floats(N, K));
      gemm(direct.data(), N, A.data(), K, B.data(), ldb, b_is_nk, nullptr, 0.25f, M, N, K);
      pack_b_all(Bp.data(), B.data(), ldb, b_is_nk, N, K);
      gemm_packed(packed.data(), N, A.data(), K, Bp.data(), 0.25f, M, N, K);
      EXPECT_EQ(packed, direct) << (b_is_nk ? "NT " : "NN ") << M << "x" << N << "x" << K;
    }
}

TEST(Gemm, PrepackedGivesTheBitsOfTheStreamKernel) {
  // linear_prepacked sums each output over k in order with one FMA a step, as linear_stream does:
  // the same bits, at every edge of its tiles (rows: 8 at AVX-512, 4 at AVX2), of its panels (48 or
  // 24 columns) and of its blocks of k (128), with and without bias, on one thread and on two.
  if (prepacked_width() == 0) GTEST_SKIP() << "no prepacked kernel below AVX2";
  ThreadsGuard guard;
  for (int threads : {1, 2}) {
    set_kernel_threads(threads);
    for (int M : {1, 2, 3, 4, 5, 7, 8, 9, 12, 16, 17, 33, 100})
      for (int N : {1, 5, 23, 24, 25, 47, 48, 49, 97, 300})
        for (int K : {1, 3, 17, 128, 129, 300}) {
          const auto x = random_floats(size_t(M) * K, 41 + M), w = random_floats(size_t(N) * K, 43 + N),
                     b = random_floats(N, 47, 10.0f);
          std::vector<float> wp(prepacked_floats(N, K), -9.0f);
          prepack(wp.data(), w.data(), N, K);
          for (const float* bias : {b.data(), static_cast<const float*>(nullptr)}) {
            std::vector<float> packed(size_t(M) * N, -7.0f), stream(size_t(M) * N, -5.0f);
            linear_prepacked(packed.data(), x.data(), wp.data(), bias, M, K, N);
            linear_stream(stream.data(), x.data(), w.data(), bias, M, K, N);
            ASSERT_EQ(packed, stream) << M << "x" << K << "x" << N << (bias ? " with bias" : "") << ", " << threads
                                      << " threads";
          }
        }
  }
}

TEST(Gemm, PrepackedMatchesThePlainLoopsInDouble) {
  // The same kernel against the formula, where a wrong element could not hide behind the stream
  // kernel's making the same mistake: a depth of three blocks and a tail, two panels and a part.
  if (prepacked_width() == 0) GTEST_SKIP() << "no prepacked kernel below AVX2";
  for (auto [M, K, N] : {std::tuple{1, 384, 1536}, std::tuple{16, 1536, 384}, std::tuple{19, 300, 110}}) {
    const auto x = random_floats(size_t(M) * K, 51), w = random_floats(size_t(N) * K, 53),
               b = random_floats(N, 59, 50.0f);
    std::vector<float> wp(prepacked_floats(N, K)), fast(size_t(M) * N), slow(size_t(M) * N);
    prepack(wp.data(), w.data(), N, K);
    linear_prepacked(fast.data(), x.data(), wp.data(), b.data(), M, K, N);
    test::linear_reference(slow.data(), x.data(), w.data(), b.data(), M, K, N);
    EXPECT_LE(max_abs_diff(fast.data(), slow.data(), fast.size()), test::product_tolerance(K, test::max_abs(slow)))
        << M << "x" << K << "x" << N;
  }
  // An empty sum is the bias.
  const std::vector<float> b = {1.5f, -2.0f, 0.25f};
  std::vector<float> y(2 * 3, 9.0f);
  linear_prepacked(y.data(), nullptr, nullptr, b.data(), 2, 0, 3);
  EXPECT_EQ(y, (std::vector<float>{1.5f, -2.0f, 0.25f, 1.5f, -2.0f, 0.25f}));
}

}  // namespace
}  // namespace ordo
