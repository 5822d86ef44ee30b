// The AVX-512 GEMM (engine/kernels/gemm.h), compiled with AVX-512 flags (engine/CMakeLists.txt) and
// called only where engine/kernels/cpu.h allows AVX-512. No standard container here: their inline
// functions, compiled with these flags, could be the copy the linker keeps for the whole program.
#include <algorithm>

#include "engine/kernels/gemm.h"
#include "engine/kernels/gemm_blocks.h"
#include "engine/kernels/gemm_tile.h"
#include "engine/kernels/parallel.h"
#include "engine/kernels/simd.h"  // <immintrin.h>, with GCC 12's false warnings silenced

namespace ordo::avx512 {

namespace {

// The Goto/BLIS blocking, with A read in place. C (M, N) = α · A (M, K) · B̂ (K, N) + bias, where
// B̂ = Bᵀ or B.
//
//            pc ─ KC ─►                         jc ───── NC ─────►
//      ┌───────────────┐                   pc ┌──────────────────┐
//      │ A (M × K)     │  read in place    KC │ B̂ block           │ packed as NC/NR panels
//      │ MR rows at    │  (row stride lda)  ▼ │ (KC × NC)         │ (kc, NR), k-major: for each k,
//      │ a time        │                      └──────────────────┘ NR contiguous floats
//      └───────────────┘
//
//   for jc (NC columns)  for pc (KC of K)  pack B̂ block (stays in L2)
//     for each MR rows of A (kc of them: 24 KB, stays in L1)
//       for each B̂ panel (kc, NR)  (streams from L2)
//         micro-kernel: C[MR × NR] += A rows · B̂ panel, in 2·MR zmm accumulators
//
// B̂ panels past the edge of N are padded with zeros; the kernel computes the full tile and stores
// only the rows and columns that exist (masked stores). Packing A as well, as BLIS does, cost more
// than it saved here: the attention's probabilities (L × L per head) were copied once per head, and x
// once per block of W (4 × 512 on the base model: 7% of the time in packing, 2% without A's).
constexpr int MR = 12;  // rows of C per micro-tile: 24 accumulators + 2 of B̂ + 1 broadcast ≤ 32 zmm
constexpr int NR = 32;  // columns of C per micro-tile: two zmm
// KC = 512 covers the model width in one pass, so C is stored once instead of stored, read back
// and stored again (8 × 128 and 4 × 512 on the base model: 8–10% faster than KC = 256, NC = 512;
// KC = 384 no faster; KC = 1024 or 2048 with narrower blocks no faster than 512).
constexpr int KC = 512;  // depth of one pass: 12 rows of A are 24 KB, a B̂ panel 64 KB
constexpr int NC = 256;  // columns per packed B̂ block (8 panels, 512 KB)

__mmask16 first_n(int n) {
  return n >= 16 ? __mmask16(0xFFFF) : n <= 0 ? __mmask16(0) : __mmask16((1u << n) - 1);
}

// How simd::micro_kernel (gemm_tile.h) stores its sums, c0[i] and c1[i] the two halves of row i:
// C (mr, nr) = α · c + (first ? bias : C), the rows and columns past mr and nr left alone (masks).
inline void store_tile(float* C, int ldc, const __m512* c0, const __m512* c1, int mr, int nr, float alpha,
                       const float* bias, bool first) {
  const __mmask16 m0 = first_n(nr), m1 = first_n(nr - 16);
  const __m512 va = _mm512_set1_ps(alpha);
  __m512 add0 = _mm512_setzero_ps(), add1 = _mm512_setzero_ps();
  if (first && bias) add0 = _mm512_maskz_loadu_ps(m0, bias), add1 = _mm512_maskz_loadu_ps(m1, bias + 16);
#pragma GCC unroll 12
  for (int i = 0; i < MR; ++i) {
    if (i >= mr) break;
    float* row = C + size_t(i) * ldc;
    if (!first) add0 = _mm512_maskz_loadu_ps(m0, row), add1 = _mm512_maskz_loadu_ps(m1, row + 16);
    _mm512_mask_storeu_ps(row, m0, _mm512_fmadd_ps(va, c0[i], add0));
    _mm512_mask_storeu_ps(row + 16, m1, _mm512_fmadd_ps(va, c1[i], add1));
  }
}

// Writes the transpose of a block of up to 16 rows × kc columns (row stride ld; rows past `rows`
// read as zeros): for each k, one vector of the 16 rows' values, stored at dst + k·dst_ld under
// `lanes` (16 for half a B̂ panel; fewer for the edge of a tile of yᵀ). 16 columns at a time,
// transposed in registers: unpack pairs of rows, then pairs of pairs, then 128-bit lanes twice.
// With ahead > 0 it also asks for the same columns of the 16 rows `ahead` rows further on, the
// next panel's, which would otherwise come from memory one short row at a time (8 × 128 and
// 1 × 512 on the base model: 2–3% faster).
void pack_transposed(float* dst, int dst_ld, __mmask16 lanes, const float* src, int ld, int rows, int kc,
                     int ahead = 0) {
  for (int k0 = 0; k0 < kc; k0 += 16) {
    const int kn = std::min(16, kc - k0);
    const __mmask16 kmask = first_n(kn);
    __m512 r[16], t[16];
    if (ahead > 0)
      for (int i = 0; i < 16; ++i) __builtin_prefetch(src + size_t(ahead + i) * ld + k0);
    for (int i = 0; i < 16; ++i)
      r[i] = i < rows ? _mm512_maskz_loadu_ps(kmask, src + size_t(i) * ld + k0) : _mm512_setzero_ps();
    for (int i = 0; i < 16; i += 2) {  // t[i], t[i+1]: rows i, i+1 interleaved
      t[i] = _mm512_unpacklo_ps(r[i], r[i + 1]);
      t[i + 1] = _mm512_unpackhi_ps(r[i], r[i + 1]);
    }
    for (int i = 0; i < 16; i += 4) {  // r[i..i+3]: rows i..i+3 interleaved, one column per 4 floats
      r[i] = _mm512_shuffle_ps(t[i], t[i + 2], 0x44);
      r[i + 1] = _mm512_shuffle_ps(t[i], t[i + 2], 0xEE);
      r[i + 2] = _mm512_shuffle_ps(t[i + 1], t[i + 3], 0x44);
      r[i + 3] = _mm512_shuffle_ps(t[i + 1], t[i + 3], 0xEE);
    }
    for (int i = 0; i < 16; i += 8)  // 128-bit lanes: rows i..i+7 of two columns per vector
      for (int j = 0; j < 4; ++j) {
        t[i + j] = _mm512_shuffle_f32x4(r[i + j], r[i + j + 4], 0x88);
        t[i + j + 4] = _mm512_shuffle_f32x4(r[i + j], r[i + j + 4], 0xDD);
      }
    for (int j = 0; j < 8; ++j) {  // all 16 rows of one column per vector
      r[j] = _mm512_shuffle_f32x4(t[j], t[j + 8], 0x88);
      r[j + 8] = _mm512_shuffle_f32x4(t[j], t[j + 8], 0xDD);
    }
    for (int k = 0; k < kn; ++k) _mm512_mask_storeu_ps(dst + size_t(k0 + k) * dst_ld, lanes, r[k]);
  }
}

// Bp (kc, NR) = B̂[p0 : p0+kc, j0 : j0+nr], columns past nr zero. B points at B̂[p0, j0].
void pack_b(float* Bp, const float* B, int ldb, bool b_is_nk, int nr, int kc) {
  if (b_is_nk) {  // B̂ = Bᵀ: column j of B̂ is row j of B
    pack_transposed(Bp, NR, 0xFFFF, B, ldb, nr, kc, NR);
    if (nr > 16)
      pack_transposed(Bp + 16, NR, 0xFFFF, B + size_t(16) * ldb, ldb, nr - 16, kc, NR);
    else
      pack_transposed(Bp + 16, NR, 0xFFFF, B, ldb, 0, kc);  // zeros
  } else {                                                  // B̂ = B: copy rows, zero the tail
    const __mmask16 m0 = first_n(nr), m1 = first_n(nr - 16);
    for (int k = 0; k < kc; ++k) {
      const float* src = B + size_t(k) * ldb;
      _mm512_storeu_ps(Bp + k * NR, _mm512_maskz_loadu_ps(m0, src));
      _mm512_storeu_ps(Bp + k * NR + 16, _mm512_maskz_loadu_ps(m1, src + 16));
    }
  }
}

// The weight-streaming kernel, for a few dozen rows of x. Roles swap: the rows of W are the
// broadcast operand, read in place from the model's weights, and x is packed once, like a B̂ panel
// (for each k, 32 rows of x side by side). Each tile holds R = 12 rows of W × 32 rows of x,
//   acc[i][v] = Σ_k W[n0+i][k] · x̂[k][16v .. 16v+15],
// over the whole of K (24 accumulators), so yᵀ comes out and is transposed once on the way to y. W
// is never copied. At 16 rows of x or fewer gemm.cpp runs the AVX2 kernel's 6 × 16 tile instead: a
// tile of 24 rows of W × 16 rows of x here, one vector each, was slower than it (and than the
// small-M kernel) on Zen 4, whose 512-bit FMAs run at the rate of two 256-bit ones.
constexpr int kStreamVectors = 2, kStreamRows = 12;

void stream_tile(float* y, int ldy, const float* w, int K, int rows, const float* xp, int tokens, const float* bias,
                 bool prefetch) {
  constexpr int R = kStreamRows, V = kStreamVectors;
  __m512 acc[R][V];
#pragma GCC unroll 24
  for (int i = 0; i < R; ++i)
    for (int v = 0; v < V; ++v) acc[i][v] = _mm512_setzero_ps();
  const size_t ld = size_t(K);
  const float* w_last = w + size_t(rows - 1) * ld;  // rows past the edge read the last one again
  const float* wi[R];
  for (int i = 0; i < R; ++i) wi[i] = i < rows ? w + size_t(i) * ld : w_last;
  for (int k0 = 0; k0 < K; k0 += 16) {
    if (prefetch)  // see gemm_blocks::linear_stream
      for (int i = 0; i < R; ++i) {
        __builtin_prefetch(wi[i] + k0 + 256);
        __builtin_prefetch(w + size_t(R + i) * ld + k0);
      }
    const int k_end = std::min(K, k0 + 16);
    for (int k = k0; k < k_end; ++k) {
      __m512 xv[V];
      for (int v = 0; v < V; ++v) xv[v] = _mm512_loadu_ps(xp + size_t(k) * 16 * V + 16 * v);
#pragma GCC unroll 24
      for (int i = 0; i < R; ++i) {
        const __m512 a = _mm512_set1_ps(wi[i][k]);
        for (int v = 0; v < V; ++v) acc[i][v] = _mm512_fmadd_ps(a, xv[v], acc[i][v]);
      }
    }
  }
  alignas(64) float tile[R][16 * V];  // yᵀ: row i is output column n0 + i
#pragma GCC unroll 24
  for (int i = 0; i < R; ++i) {
    const __m512 b = _mm512_set1_ps(bias && i < rows ? bias[i] : 0.0f);
    for (int v = 0; v < V; ++v) _mm512_store_ps(&tile[i][16 * v], _mm512_add_ps(acc[i][v], b));
  }
  for (int i0 = 0; i0 < rows; i0 += 16)  // y[t][n0 + i] = tile[i][t]
    pack_transposed(y + i0, ldy, first_n(rows - i0), &tile[i0][0], 16 * V, std::min(16, rows - i0), tokens);
}

// The tile gemm_blocks.h's loops run.
struct Tile : gemm_blocks::TileOf<MR, NR, KC, NC, simd::micro_kernel<MR, store_tile>, pack_b> {};

// A panel of x for stream_tile: dst (K, 32) holds `rows` ≤ 32 rows of src (rows, K) side by side.
void pack_x(float* dst, const float* src, int K, int rows) {
  pack_transposed(dst, 16 * kStreamVectors, 0xFFFF, src, K, std::min(16, rows), K);
  pack_transposed(dst + 16, 16 * kStreamVectors, 0xFFFF, rows > 16 ? src + size_t(16) * K : src, K, rows - 16, K);
}

// What gemm_blocks::linear_stream runs: panels of 32 rows of x, tiles of 12 rows of W.
struct Stream : gemm_blocks::StreamOf<16 * kStreamVectors, kStreamRows, pack_x, stream_tile> {};

// The prepacked kernel (gemm_tile.h's prepacked_tile, gemm_blocks.h's loops): 8 rows of x × 48 columns:
// 24 accumulators, 3 vectors of Ŵ and a broadcast, 28 of the 32 zmm registers.
struct Prepacked {
  static constexpr int kRows = 8, kWidth = simd::kPrepackVectors * simd::kLanes;
  static constexpr auto tiles = simd::prepacked_tiles<kRows>();
};

}  // namespace

}  // namespace ordo::avx512

namespace ordo {
const GemmKernels kGemmAvx512 = gemm_blocks::kernels<avx512::Tile, avx512::Stream, avx512::Prepacked>();
}  // namespace ordo
