// Helpers shared by the tests.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <string>
#include <vector>

#include "engine/init.h"
#include "engine/parallel.h"

namespace ordo::test {

// Restores the kernel thread count a test changes.
struct ThreadsGuard {
  int saved = kernel_threads();
  ~ThreadsGuard() { set_kernel_threads(saved); }
};

inline std::vector<float> random_floats(size_t n, uint64_t seed, float scale = 1.0f) {
  Rng rng(seed);
  std::vector<float> v(n);
  for (float& x : v) x = static_cast<float>((2.0 * rng.uniform() - 1.0) * scale);
  return v;
}

inline double max_abs_diff(const float* a, const float* b, size_t n) {
  double m = 0;
  for (size_t i = 0; i < n; ++i) m = std::max(m, std::fabs(double(a[i]) - double(b[i])));
  return m;
}

// A fresh directory under the test temp dir, removed by the caller's TempDir destructor.
struct TempDir {
  std::string path;
  TempDir() {
    std::string tmpl = ::testing::TempDir() + "ordo-test-XXXXXX";
    path = ::mkdtemp(tmpl.data());
  }
  ~TempDir() { std::system(("rm -rf '" + path + "'").c_str()); }
};

}  // namespace ordo::test
