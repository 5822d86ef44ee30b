#include "engine/reference_reduced.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

namespace ordo::reference {

namespace {
template <class T>
void quantize(T* q, float* s, const float* x, int M, int K, int top) {
  for (int m = 0; m < M; ++m) {
    double max = 0;
    bool finite = true;
    for (int k = 0; k < K; ++k) {
      max = std::max(max, std::fabs(double(x[size_t(m) * K + k])));
      finite = finite && std::isfinite(x[size_t(m) * K + k]);
    }
    s[m] = finite ? static_cast<float>(max / top) : std::numeric_limits<float>::quiet_NaN();
    // zeros for a row of zeros, and for one that is not finite (its scale NaN); clamped, for a row so
    // small that s is subnormal: its few bits can put max / s well past top
    for (int k = 0; k < K; ++k)
      q[size_t(m) * K + k] = s[m] == 0.0f || !finite
                                 ? 0
                                 : static_cast<T>(std::clamp(std::nearbyint(x[size_t(m) * K + k] / double(s[m])),
                                                             -double(top), double(top)));
  }
}
}  // namespace

void quantize_rows(int8_t* q, float* s, const float* x, int M, int K) {
  quantize(q, s, x, M, K, 127);
}

void quantize_rows16(int16_t* q, float* s, const float* x, int M, int K, int top) {
  quantize(q, s, x, M, K, top);
}

void linear_int8(double* y, int64_t* acc, const float* x, const float* w, const float* b, int M, int K, int N,
                 int wide) {
  if (wide < 0 || wide > N) wide = N;
  std::vector<int8_t> qx8(size_t(M) * K), qw8(size_t(N) * K);
  std::vector<int16_t> qx16(size_t(M) * K), qw16(size_t(N) * K);
  std::vector<float> sx8(M), sx16(M), sw(N);
  quantize_rows(qx8.data(), sx8.data(), x, M, K);
  quantize_rows16(qx16.data(), sx16.data(), x, M, K, wide_x_top(K));
  quantize_rows(qw8.data(), sw.data(), w, wide, K);  // channels before `wide`: int8
  quantize_rows16(qw16.data() + size_t(wide) * K, sw.data() + wide, w + size_t(wide) * K, N - wide, K, kWideWTop);
  for (int m = 0; m < M; ++m)
    for (int n = 0; n < N; ++n) {
      const bool fine = n >= wide;
      const float* sx = fine ? sx16.data() : sx8.data();
      int64_t sum = 0;
      for (int k = 0; k < K; ++k)
        sum += fine ? int64_t(qx16[size_t(m) * K + k]) * qw16[size_t(n) * K + k]
                    : int64_t(qx8[size_t(m) * K + k]) * qw8[size_t(n) * K + k];
      if (acc) acc[size_t(m) * N + n] = sum;
      y[size_t(m) * N + n] = double(sum) * sx[m] * sw[n] + (b ? b[n] : 0.0);
    }
}

double round_bf16(float v) {
  if (v == 0.0f || !std::isfinite(v)) return v;
  const double ulp = std::ldexp(1.0, std::max(std::ilogb(v), -126) - 7);
  const double r = std::nearbyint(double(v) / ulp) * ulp;
  return std::fabs(r) >= 0x1p128 ? std::copysign(HUGE_VAL, r) : r;  // past bf16's largest: infinity
}

void linear_bf16(double* y, const float* x, const float* w, const float* b, int M, int K, int N) {
  std::vector<double> xr(size_t(M) * K), wr(size_t(N) * K);
  for (size_t i = 0; i < xr.size(); ++i) xr[i] = round_bf16(x[i]);
  for (size_t i = 0; i < wr.size(); ++i) wr[i] = round_bf16(w[i]);
  for (int m = 0; m < M; ++m)
    for (int n = 0; n < N; ++n) {
      double acc = b ? b[n] : 0.0;
      for (int k = 0; k < K; ++k) acc += xr[size_t(m) * K + k] * wr[size_t(n) * K + k];
      y[size_t(m) * N + n] = acc;
    }
}

}  // namespace ordo::reference
