// The AVX2 and FMA GEMM (engine/kernels/gemm.h), compiled with -mavx2 -mfma (engine/CMakeLists.txt)
// and called only where engine/kernels/cpu.h allows AVX2. The blocking of gemm_avx512.cpp (read it
// first: the picture of the blocks is there) at half the width, with AVX2's 16 registers. No
// standard container here: their inline functions, compiled with these flags, could be the copy the
// linker keeps for the whole program.
#include <algorithm>

#include "engine/kernels/gemm.h"
#include "engine/kernels/gemm_blocks.h"
#include "engine/kernels/gemm_tile.h"
#include "engine/kernels/parallel.h"
#include "engine/kernels/simd.h"  // <immintrin.h>, with GCC 12's false warnings silenced

namespace ordo::avx2 {

namespace {

// C (M, N) = α · A (M, K) · B̂ (K, N) + bias, B̂ = Bᵀ or B, A read in place, B̂ packed in panels of
// NR columns, k-major. The micro-tile is MR × NR = 6 × 16: 12 accumulators, 2 registers of B̂
// and 1 broadcast of A, 15 of the 16 ymm registers; each step loads 2 vectors of B̂ and 6 values
// of A for 12 FMAs (4 × 24 would take 3 and 4 for 12 too, with one spare register less).
constexpr int MR = 6;
constexpr int NR = 16;
// KC: 6 rows of A are 12 KB, a B̂ panel 32 KB (from L2); NC: a packed block of B̂ is 512 KB.
constexpr int KC = 512;
constexpr int NC = 256;

// The first n lanes (n < 8) set, for a masked load.
inline __m256i first_lanes(int n) {
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(n), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}
// The 8 floats at p, or the first n of them (the others 0): never reads past p + n.
inline __m256 load_first(const float* p, int n) {
  return n >= 8 ? _mm256_loadu_ps(p) : n <= 0 ? _mm256_setzero_ps() : _mm256_maskload_ps(p, first_lanes(n));
}

// How simd::micro_kernel (gemm_tile.h) stores its sums, c0[i] and c1[i] the two halves of row i:
// C (mr, nr) = α · c + (first ? bias : C). A whole tile is stored straight from the registers; an
// edge tile goes through a small array, of which only the rows and columns that exist are written out.
inline void store_tile(float* C, int ldc, const __m256* c0, const __m256* c1, int mr, int nr, float alpha,
                       const float* bias, bool first) {
  const __m256 va = _mm256_set1_ps(alpha);
  if (mr == MR && nr == NR) {
    __m256 add0 = _mm256_setzero_ps(), add1 = _mm256_setzero_ps();
    if (first && bias) add0 = _mm256_loadu_ps(bias), add1 = _mm256_loadu_ps(bias + 8);
#pragma GCC unroll 6
    for (int i = 0; i < MR; ++i) {
      float* row = C + size_t(i) * ldc;
      if (!first) add0 = _mm256_loadu_ps(row), add1 = _mm256_loadu_ps(row + 8);
      _mm256_storeu_ps(row, _mm256_fmadd_ps(va, c0[i], add0));
      _mm256_storeu_ps(row + 8, _mm256_fmadd_ps(va, c1[i], add1));
    }
    return;
  }
  alignas(32) float tile[MR][NR];
#pragma GCC unroll 6
  for (int i = 0; i < MR; ++i) {
    _mm256_store_ps(&tile[i][0], _mm256_mul_ps(va, c0[i]));
    _mm256_store_ps(&tile[i][8], _mm256_mul_ps(va, c1[i]));
  }
  for (int i = 0; i < mr; ++i) {
    float* row = C + size_t(i) * ldc;
    for (int j = 0; j < nr; ++j) row[j] = tile[i][j] + (!first ? row[j] : bias ? bias[j] : 0.0f);
  }
}

// Writes the transpose of a block of up to 8 rows × kc columns (row stride ld; rows past `rows`
// read as zeros): for each k, the 8 rows' values side by side at dst + k·dst_ld. 8 columns at a
// time, transposed in registers: unpack pairs of rows, then pairs of pairs, then the 128-bit halves.
// With ahead > 0 it also asks, once per 64-byte line, for the same columns of the 8 rows `ahead`
// rows further on, the next panel's, as gemm_avx512.cpp's pack_transposed does (packing 80 MB of
// weights 256 × 512 at a time, out of cache: 0.84 of the time without).
void pack_transposed(float* dst, int dst_ld, const float* src, int ld, int rows, int kc, int ahead = 0) {
  for (int k0 = 0; k0 < kc; k0 += 8) {
    const int kn = std::min(8, kc - k0);
    if (ahead > 0 && k0 % 16 == 0)
      for (int i = 0; i < 8; ++i) __builtin_prefetch(src + size_t(ahead + i) * ld + k0);
    __m256 r[8], t[8];
    for (int i = 0; i < 8; ++i) r[i] = i < rows ? load_first(src + size_t(i) * ld + k0, kn) : _mm256_setzero_ps();
    for (int i = 0; i < 8; i += 2) {  // rows i, i+1 interleaved
      t[i] = _mm256_unpacklo_ps(r[i], r[i + 1]);
      t[i + 1] = _mm256_unpackhi_ps(r[i], r[i + 1]);
    }
    for (int i = 0; i < 8; i += 4) {  // rows i..i+3 interleaved, one column per 4 floats of a half
      r[i] = _mm256_shuffle_ps(t[i], t[i + 2], 0x44);
      r[i + 1] = _mm256_shuffle_ps(t[i], t[i + 2], 0xEE);
      r[i + 2] = _mm256_shuffle_ps(t[i + 1], t[i + 3], 0x44);
      r[i + 3] = _mm256_shuffle_ps(t[i + 1], t[i + 3], 0xEE);
    }
    for (int j = 0; j < 4; ++j) {  // all 8 rows of one column per vector: column j and j + 4
      t[j] = _mm256_permute2f128_ps(r[j], r[j + 4], 0x20);
      t[j + 4] = _mm256_permute2f128_ps(r[j], r[j + 4], 0x31);
    }
    for (int k = 0; k < kn; ++k) _mm256_storeu_ps(dst + size_t(k0 + k) * dst_ld, t[k]);
  }
}

// Bp (kc, NR) = B̂[p0 : p0+kc, j0 : j0+nr], columns past nr zero. B points at B̂[p0, j0].
void pack_b(float* Bp, const float* B, int ldb, bool b_is_nk, int nr, int kc) {
  if (b_is_nk) {  // B̂ = Bᵀ: column j of B̂ is row j of B
    pack_transposed(Bp, NR, B, ldb, std::min(nr, 8), kc, NR);
    if (nr > 8)
      pack_transposed(Bp + 8, NR, B + size_t(8) * ldb, ldb, nr - 8, kc, NR);
    else
      pack_transposed(Bp + 8, NR, B, ldb, 0, kc);  // zeros
  } else {                                         // B̂ = B: copy rows, zero the tail
    for (int k = 0; k < kc; ++k) {
      const float* src = B + size_t(k) * ldb;
      _mm256_storeu_ps(Bp + k * NR, load_first(src, nr));
      _mm256_storeu_ps(Bp + k * NR + 8, load_first(src + 8, nr - 8));
    }
  }
}

// The tile gemm_blocks.h's loops run.
struct Tile : gemm_blocks::TileOf<MR, NR, KC, NC, simd::micro_kernel<MR, store_tile>, pack_b> {};

// The weight-streaming kernel of gemm_avx512.cpp (read it first) at half the width: the rows of W
// are the broadcast operand, read in place, and x is packed once, 16 rows of x side by side for each
// k. Each tile holds 6 rows of W × 16 rows of x,
//   acc[i][v] = Σ_k W[n0+i][k] · x̂[k][8v .. 8v+7],
// over the whole of K: 12 accumulators, 2 vectors of x̂ and 1 broadcast, 15 of AVX2's 16 registers;
// each step loads 2 vectors of x̂ and 6 values of W for 12 FMAs, as the GEMM's 6 × 16 tile does, but
// nothing of W is packed (the GEMM packs every weight once per call, which at a few dozen rows of x
// is a second pass over 75 MB of weights).
constexpr int kStreamRows = 6, kStreamWidth = 16;

void stream_tile(float* y, int ldy, const float* w, int K, int rows, const float* xp, int tokens, const float* bias,
                 bool prefetch) {
  constexpr int R = kStreamRows;
  __m256 acc[R][2];
#pragma GCC unroll 6
  for (int i = 0; i < R; ++i) acc[i][0] = acc[i][1] = _mm256_setzero_ps();
  const size_t ld = size_t(K);
  const float* wi[R];  // rows past the edge read the last one again; their results are not stored
  for (int i = 0; i < R; ++i) wi[i] = w + size_t(std::min(i, rows - 1)) * ld;
  for (int k0 = 0; k0 < K; k0 += 16) {
    if (prefetch)  // the line 1 KB ahead in each row, and the same columns of the next tile's rows
      for (int i = 0; i < R; ++i) {
        __builtin_prefetch(wi[i] + k0 + 256);
        __builtin_prefetch(w + size_t(R + i) * ld + k0);
      }
    const int k_end = std::min(K, k0 + 16);
    for (int k = k0; k < k_end; ++k) {
      const __m256 x0 = _mm256_loadu_ps(xp + size_t(k) * kStreamWidth),
                   x1 = _mm256_loadu_ps(xp + size_t(k) * kStreamWidth + 8);
#pragma GCC unroll 6
      for (int i = 0; i < R; ++i) {
        const __m256 a = _mm256_broadcast_ss(wi[i] + k);
        acc[i][0] = _mm256_fmadd_ps(a, x0, acc[i][0]);
        acc[i][1] = _mm256_fmadd_ps(a, x1, acc[i][1]);
      }
    }
  }
  alignas(32) float tile[R][kStreamWidth];  // yᵀ: row i is output column n0 + i
#pragma GCC unroll 6
  for (int i = 0; i < R; ++i) {
    const __m256 b = _mm256_set1_ps(bias && i < rows ? bias[i] : 0.0f);
    _mm256_store_ps(&tile[i][0], _mm256_add_ps(acc[i][0], b));
    _mm256_store_ps(&tile[i][8], _mm256_add_ps(acc[i][1], b));
  }
  for (int t = 0; t < tokens; ++t)  // y[t][n0 + i] = tile[i][t]
    for (int i = 0; i < rows; ++i) y[size_t(t) * ldy + i] = tile[i][t];
}

// A panel of x for stream_tile: dst (K, 16) holds `rows` ≤ 16 rows of src (rows, K) side by side.
void pack_x(float* dst, const float* src, int K, int rows) {
  pack_transposed(dst, kStreamWidth, src, K, std::min(8, rows), K);
  pack_transposed(dst + 8, kStreamWidth, rows > 8 ? src + size_t(8) * K : src, K, rows - 8, K);  // rows ≤ 8: zeros
}

// What gemm_blocks::linear_stream runs: panels of 16 rows of x, tiles of 6 rows of W.
struct Stream : gemm_blocks::StreamOf<kStreamWidth, kStreamRows, pack_x, stream_tile> {};

// The prepacked kernel (gemm_tile.h's prepacked_tile, gemm_blocks.h's loops): 4 rows of x × 24 columns:
// 12 accumulators, 3 vectors of Ŵ and a broadcast, all 16 ymm registers.
struct Prepacked {
  static constexpr int kRows = 4, kWidth = simd::kPrepackVectors * simd::kLanes;
  static constexpr auto tiles = simd::prepacked_tiles<kRows>();
};

}  // namespace

}  // namespace ordo::avx2

namespace ordo {
const GemmKernels kGemmAvx2 = gemm_blocks::kernels<avx2::Tile, avx2::Stream, avx2::Prepacked>();
}  // namespace ordo
