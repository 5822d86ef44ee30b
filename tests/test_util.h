// Helpers shared by the tests.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <ordo/errors.h>

#include "engine/init.h"
#include "engine/kernels/parallel.h"
#include "engine/reference.h"
#include "temp_dir.h"

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

// The one tolerance for a fast float product against the plain one in double: a float sum of K
// products drifts from the double sum by about √K roundings of the result's scale, so
//   |fast − reference| ≤ 1e-5 · √K · max(1, max |reference|).
inline double product_tolerance(int K, double scale) {
  return 1e-5 * std::sqrt(double(std::max(K, 1))) * std::max(scale, 1.0);
}

inline double max_abs(const std::vector<float>& v) {
  double m = 0;
  for (float f : v) m = std::max(m, double(std::fabs(f)));
  return m;
}

// The plain twins of engine/reference.h on float buffers, for the fast steps' tests: the inputs
// widened to double, the result rounded to float.
inline std::vector<double> widen(const float* x, size_t n) {
  return std::vector<double>(x, x + n);
}
inline void narrow(float* y, const std::vector<double>& v) {
  for (size_t i = 0; i < v.size(); ++i) y[i] = static_cast<float>(v[i]);
}
inline void linear_reference(float* y, const float* x, const float* w, const float* b, int M, int K, int N) {
  std::vector<double> out(size_t(M) * N);
  reference::linear(out.data(), widen(x, size_t(M) * K).data(), w, b, M, K, N);
  narrow(y, out);
}
inline void layer_norm_reference(float* y, const float* x, const float* gamma, const float* beta, int M, int d,
                                 float eps) {
  std::vector<double> out(size_t(M) * d);
  reference::layer_norm(out.data(), widen(x, size_t(M) * d).data(), gamma, beta, M, d, eps);
  narrow(y, out);
}
// q, k, v: (L, dh) views with row stride ld_qkv.
inline void attention_head_reference(float* out, const float* q, const float* k, const float* v, float* probs, int L,
                                     int dh, int ld_qkv, int ld_out, double alibi_before = 0.0,
                                     double alibi_after = 0.0) {
  const size_t n = L > 0 ? size_t(L - 1) * ld_qkv + dh : 0;
  std::vector<double> o(L > 0 ? size_t(L - 1) * ld_out + dh : 0), p(size_t(L) * L);
  reference::attention_head(o.data(), widen(q, n).data(), widen(k, n).data(), widen(v, n).data(), p.data(), L, dh,
                            ld_qkv, ld_out, alibi_before, alibi_after);
  for (int i = 0; i < L; ++i)
    for (int c = 0; c < dh; ++c) out[size_t(i) * ld_out + c] = static_cast<float>(o[size_t(i) * ld_out + c]);
  narrow(probs, p);
}

// What the InputError thrown by f() says ("" when f() throws none), for EXPECT_... on its words.
template <class F>
std::string input_error(F&& f) {
  try {
    f();
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

// A whole file's bytes ("" if it cannot be read).
inline std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// A config of these sizes, everything else at its default.
inline Config sized_config(int vocab, int d, int heads, int ff, int layers) {
  Config c;
  c.vocab_size = vocab;
  c.d_model = d;
  c.n_heads = heads;
  c.d_ff = ff;
  c.n_layers = layers;
  return c;
}

// dir/model.safetensors with every tensor the config asks for, random (biases and LayerNorm
// parameters included, the norms' weights around 1), so that a wrong wire shows.
inline void write_random_weights(const Config& c, const std::string& dir, uint64_t seed, float head_bias_scale = 0.5f) {
  std::vector<TensorBytes> tensors;
  for (const TensorSpec& spec : expected_tensors(c)) {
    uint64_t n = 1;
    for (uint64_t k : spec.shape) n *= k;
    auto v = random_floats(n, ++seed * 7919, spec.name == "head.bias" ? head_bias_scale : 0.5f);
    if (spec.name.find("norm") != std::string::npos && spec.name.find(".weight") != std::string::npos)
      for (float& x : v) x += 1.0f;
    tensors.push_back(f32_tensor(spec.name, spec.shape, v));
  }
  write_safetensors(dir + "/model.safetensors", tensors);
}

}  // namespace ordo::test
