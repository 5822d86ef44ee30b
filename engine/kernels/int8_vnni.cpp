#include "engine/kernels/int8_vnni.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <stdexcept>
#include <utility>

#include "engine/kernels/cpu.h"
#include "engine/kernels/parallel.h"
#include "engine/kernels/reduced.h"
#include "engine/kernels/tiles.h"

namespace ordo {

PackedInt8 pack_int8(const int8_t* w, int N, int K) {
  PackedInt8 p{tiles::pack<4>(w, N, K), {}};
  p.compensation.assign(size_t(N + 15) / 16 * 16, 0);
  for (int n = 0; n < N; ++n) {
    int32_t sum = 0;
    for (int k = 0; k < K; ++k) sum += w[size_t(n) * K + k];
    p.compensation[n] = 128 * sum;
  }
  return p;
}

void to_u8_rows(uint8_t* xu, const int8_t* xq, int M, int K, int K4) {
  for (int m = 0; m < M; ++m) {
    for (int k = 0; k < K; ++k) xu[size_t(m) * K4 + k] = uint8_t(xq[size_t(m) * K + k]) ^ 0x80;  // s8 + 128
    for (int k = K; k < K4; ++k) xu[size_t(m) * K4 + k] = 0x80;
  }
}

bool have_int8_vnni() {
  static const bool yes = isa_at_least(Isa::Avx512) && cpu_features().avx512vnni;
  return yes;
}

void quantize_row_u8_plain(uint8_t* xu, float* s, const float* x, int K, int K4) {
  thread_local std::vector<int8_t> q;
  q.resize(K);
  quantize_rows(q.data(), s, x, 1, K);
  to_u8_rows(xu, q.data(), 1, K, K4);
}

void quantize_row16_plain(int16_t* q, float* s, const float* x, int K, int ld, int top) {
  quantize_rows16_plain(q, s, x, 1, K, ld, top);
}

void quantize_rows_u8(uint8_t* xu, float* s, const float* x, int M, int K, int K4) {
  if (have_int8_vnni()) return avx512::quantize_rows_u8(xu, s, x, M, K, K4);
  for (int m = 0; m < M; ++m) quantize_row_u8_plain(xu + size_t(m) * K4, s + m, x + size_t(m) * K, K, K4);
}

void int8_vnni_products(int32_t* acc, const uint8_t* xu, const PackedInt8& w, int M, int threads) {
  if (!have_int8_vnni()) throw std::logic_error("int8_vnni_products: no AVX-512 VNNI at this level");
  avx512::int8_vnni_products(acc, xu, w, M, threads);
}

void int8_vnni_linear(float* y, const uint8_t* xu, const float* xs, const PackedInt8& w, const float* ws,
                      const float* b, int M, int ld, int threads) {
  if (!have_int8_vnni()) throw std::logic_error("int8_vnni_linear: no AVX-512 VNNI at this level");
  avx512::int8_vnni_linear(y, xu, xs, w, ws, b, M, ld, threads);
}

void int16_vnni(int32_t* acc, float* y, const int16_t* x, const float* xs, const int16_t* w, const float* ws,
                const float* b, int M, int N, int K2, int ld, int threads) {
  if (!have_int8_vnni()) throw std::logic_error("int16_vnni: no AVX-512 VNNI at this level");
  avx512::int16_vnni(acc, y, x, xs, w, ws, b, M, N, K2, ld, threads);
}

}  // namespace ordo
