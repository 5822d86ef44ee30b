// The fast paths against their plain references: linear's two kernels on sizes that are not
// multiples of the vector width or the tile, at several thread counts, and the thread pool itself.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <tuple>
#include <vector>

#include "engine/ops.h"
#include "engine/parallel.h"
#include "test_util.h"

namespace ordo {
namespace {

using test::max_abs_diff;
using test::random_floats;
using test::ThreadsGuard;

using Kernel = void (*)(float*, const float*, const float*, const float*, int, int, int);

void expect_matches_reference(Kernel kernel, const char* name, int M, int K, int N) {
  const auto x = random_floats(size_t(M) * K, 11 + M), w = random_floats(size_t(N) * K, 13 + N),
             b = random_floats(N, 17);
  std::vector<float> fast(size_t(M) * N, -7.0f), slow(size_t(M) * N);
  for (const float* bias : {b.data(), static_cast<const float*>(nullptr)}) {
    kernel(fast.data(), x.data(), w.data(), bias, M, K, N);
    linear_reference(slow.data(), x.data(), w.data(), bias, M, K, N);
    // |error| of a float dot product of K terms in [-1, 1] stays well under 1e-6·K
    const double diff = max_abs_diff(fast.data(), slow.data(), fast.size());
    EXPECT_LT(diff, 1e-6 * K + 1e-6) << name << " " << M << "x" << K << "x" << N << (bias ? " bias" : "") << " threads "
                                     << kernel_threads() << ": max diff " << diff;
  }
}

TEST(Kernels, SmallMMatchesReferenceOnOddSizes) {
  ThreadsGuard guard;
  for (int threads : {1, 2, 3}) {
    set_kernel_threads(threads);
    for (int M : {1, 2, 3, 4, 5, 7, 8, 9, 33, 48, 64, 65, 130})
      for (auto [K, N] : {std::tuple{1, 1}, {5, 3}, {15, 4}, {16, 5}, {17, 7}, {31, 33}, {64, 100}, {513, 67}})
        expect_matches_reference(linear_small_m, "linear_small_m", M, K, N);
  }
}

TEST(Kernels, BlasMatchesReferenceOnOddSizes) {
  ThreadsGuard guard;
  for (int threads : {1, 2, 3}) {
    set_kernel_threads(threads);
    for (auto [M, K, N] : {std::tuple{1, 3, 2}, {49, 17, 9}, {100, 64, 192}, {130, 33, 257}, {64, 512, 129}})
      expect_matches_reference(linear_blas, "linear_blas", M, K, N);
  }
}

TEST(Kernels, LinearPicksEachPathAndAllAgree) {
  for (int M : {1, 8, 9, 16, 17, 200}) expect_matches_reference(linear, "linear", M, 96, 80);
}

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

}  // namespace
}  // namespace ordo
