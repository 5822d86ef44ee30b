// The fast paths against their plain references: linear's two kernels on sizes that are not
// multiples of the vector width or the tile, at several thread counts, and the thread pool itself.
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

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

TEST(Kernels, LinearPicksEitherPathAndBothAgree) {
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
