// The blocking of ordo's packed GEMM, the same at every instruction set (the picture of the blocks is
// in gemm_avx512.cpp): the loops over blocks of B̂ and rows of A, the packed form of B̂, and the split
// of y = x·Wᵀ + b between the engine's threads. Each instruction set's file supplies a Tile:
//   Tile::MR, Tile::NR   the micro-tile, rows × columns of C
//   Tile::KC, Tile::NC   the depth of one pass and the width of one packed block of B̂
//   Tile::micro_kernel(C, ldc, A, lda, Bp, kc, mr, nr, alpha, bias, first)
//       C (mr, nr) = α · A (mr, kc) · Bp (kc, NR) + (first ? bias : C), for mr ≤ MR, nr ≤ NR
//   Tile::pack_b(Bp, B, ldb, b_is_nk, nr, kc)
//       Bp (kc, NR) = B̂[p0 : p0+kc, j0 : j0+nr], columns past nr zero; B points at B̂[p0, j0]
// (made of the file's sizes and functions by TileOf below). Tile is declared in an unnamed namespace,
// so every function below is compiled once in each file, with that file's instruction set, and the
// linker never keeps one file's copy for another's.
#pragma once

#include <algorithm>
#include <cstddef>

#include "engine/kernels/gemm.h"
#include "engine/kernels/parallel.h"

namespace ordo::gemm_blocks {

// A Tile made of a file's sizes and functions, for the file's own struct in its unnamed namespace:
//   struct Tile : TileOf<MR, NR, KC, NC, micro_kernel, pack_b> {};
template <int Rows, int Cols, int Depth, int Width, auto Kernel, auto Pack>
struct TileOf {
  static constexpr int MR = Rows, NR = Cols, KC = Depth, NC = Width;
  static constexpr auto micro_kernel = Kernel;
  static constexpr auto pack_b = Pack;
};

template <class Tile>
void gemm(float* C, int ldc, const float* A, int lda, const float* B, int ldb, bool b_is_nk, const float* bias,
          float alpha, int M, int N, int K) {
  constexpr int MR = Tile::MR, NR = Tile::NR, KC = Tile::KC, NC = Tile::NC;
  if (M <= 0 || N <= 0) return;
  float* b_block = thread_scratch(0, size_t(NC) * KC);  // packed panels of B̂
  if (K <= 0) {                                         // an empty sum: C = bias
    for (int i = 0; i < M; ++i)
      for (int j = 0; j < N; ++j) C[size_t(i) * ldc + j] = bias ? bias[j] : 0.0f;
    return;
  }
  for (int jc = 0; jc < N; jc += NC) {
    const int nc = std::min(NC, N - jc);
    for (int pc = 0; pc < K; pc += KC) {
      const int kc = std::min(KC, K - pc);
      for (int jr = 0; jr < nc; jr += NR) {
        const float* src = b_is_nk ? B + size_t(jc + jr) * ldb + pc : B + size_t(pc) * ldb + jc + jr;
        Tile::pack_b(b_block + size_t(jr) * kc, src, ldb, b_is_nk, std::min(NR, nc - jr), kc);
      }
      for (int ir = 0; ir < M; ir += MR)
        for (int jr = 0; jr < nc; jr += NR)
          Tile::micro_kernel(C + size_t(ir) * ldc + jc + jr, ldc, A + size_t(ir) * lda + pc, lda,
                             b_block + size_t(jr) * kc, kc, std::min(MR, M - ir), std::min(NR, nc - jr), alpha,
                             bias ? bias + jc + jr : nullptr, pc == 0);
    }
  }
}

// The packed B̂ holds its (NC, KC) blocks in the order gemm() packs them: block (jc, pc) starts at
// jc·K + pc·nc, and within it panel jr at jr·kc. Columns are padded to whole panels of NR.
template <class Tile>
size_t packed_b_floats(int N, int K) {
  return size_t((N + Tile::NR - 1) / Tile::NR) * Tile::NR * size_t(std::max(K, 0));
}

// The blocks of B̂ one after another, each as gemm() packs it: (jc, pc) at jc·K + pc·(nc padded to NR).
template <class Tile, class Block>
void for_each_block(int N, int K, Block block) {
  for (int jc = 0; jc < N; jc += Tile::NC) {
    const int nc = std::min(Tile::NC, N - jc), nc_panels = (nc + Tile::NR - 1) / Tile::NR * Tile::NR;
    for (int pc = 0; pc < K; pc += Tile::KC)
      block(jc, nc, pc, std::min(Tile::KC, K - pc), size_t(jc) * K + size_t(pc) * nc_panels);
  }
}

template <class Tile>
void pack_b_all(float* Bp, const float* B, int ldb, bool b_is_nk, int N, int K) {
  for_each_block<Tile>(N, K, [&](int jc, int nc, int pc, int kc, size_t at) {
    for (int jr = 0; jr < nc; jr += Tile::NR) {
      const float* src = b_is_nk ? B + size_t(jc + jr) * ldb + pc : B + size_t(pc) * ldb + jc + jr;
      Tile::pack_b(Bp + at + size_t(jr) * kc, src, ldb, b_is_nk, std::min(Tile::NR, nc - jr), kc);
    }
  });
}

template <class Tile>
void gemm_packed(float* C, int ldc, const float* A, int lda, const float* Bp, float alpha, int M, int N, int K) {
  if (M <= 0 || N <= 0 || K <= 0) return;
  for_each_block<Tile>(N, K, [&](int jc, int nc, int pc, int kc, size_t at) {
    for (int ir = 0; ir < M; ir += Tile::MR)
      for (int jr = 0; jr < nc; jr += Tile::NR)
        Tile::micro_kernel(C + size_t(ir) * ldc + jc + jr, ldc, A + size_t(ir) * lda + pc, lda,
                           Bp + at + size_t(jr) * kc, kc, std::min(Tile::MR, M - ir), std::min(Tile::NR, nc - jr),
                           alpha, nullptr, pc == 0);
  });
}

// Tasks are blocks of columns of y (rows of W), at most NC wide and a whole number per thread; each
// packs its own rows of W once.
template <class Tile>
void linear_gemm(float* y, const float* x, const float* w, const float* b, int M, int K, int N) {
  if (M <= 0 || N <= 0) return;
  const int threads = kernel_threads();
  const int tasks = threads * ((N + threads * Tile::NC - 1) / (threads * Tile::NC));
  const int cols = ((N + tasks - 1) / tasks + Tile::NR - 1) / Tile::NR * Tile::NR;  // a multiple of NR, ≤ NC
  parallel_for(tasks, [&](int task, int) {
    const int n0 = task * cols, n = std::min(cols, N - n0);
    if (n > 0) gemm<Tile>(y + n0, N, x, K, w + size_t(n0) * K, K, true, b ? b + n0 : nullptr, 1.0f, M, n, K);
  });
}

// The weight-streaming kernel's loops (gemm_avx512.cpp describes the kernel). Each instruction set's
// file supplies a Stream:
//   Stream::kWidth, Stream::kRows   rows of x in a packed panel, rows of W in a tile
//   Stream::pack_x(dst, src, K, rows)
//       dst (K, kWidth): for each k, the `rows` rows of src (rows, K) side by side, zeros past them
//   Stream::tile(y, ldy, w, K, rows, xp, tokens, bias, prefetch)
//       y[t][i] = bias[i] + Σ_k w[i][k] · xp[k][t] for `rows` rows of W and `tokens` rows of x,
//       asking for lines of W ahead when prefetch
// as a struct of its own made like Tile: struct Stream : StreamOf<kWidth, kRows, pack_x, tile> {}.
// Tasks are equal runs of rows of W (columns of y), as many as split_tasks says; x is packed first.
// Within a task each tile of W meets every panel of x: the first meeting reads it from memory,
// asking for the line 1 KB ahead in each row and for the same columns of the next tile's rows, the
// others read it from cache. As in linear_small_m, long contiguous runs with the next tile asked for
// ahead are what keep the memory busy (the measurements against small blocks of tiles handed out as
// threads came free: docs/performance.md).
template <int Width, int Rows, auto Pack, auto Tile>
struct StreamOf {
  static constexpr int kWidth = Width, kRows = Rows;
  static constexpr auto pack_x = Pack;
  static constexpr auto tile = Tile;
};

template <class Tile, class Stream>
void linear_stream(float* y, const float* x, const float* w, const float* b, int M, int K, int N) {
  if (M <= 0 || N <= 0) return;
  if (K <= 0) return gemm<Tile>(y, N, x, K, w, K, true, b, 1.0f, M, N, K);
  constexpr int width = Stream::kWidth, R = Stream::kRows;
  const int panels = (M + width - 1) / width;
  float* xp = thread_scratch(1, size_t(panels) * width * K);
  parallel_for(panels, [&](int p, int) {
    Stream::pack_x(xp + size_t(p) * width * K, x + size_t(p) * width * K, K, std::min(width, M - p * width));
  });
  const int tiles = (N + R - 1) / R, runs = split_tasks(2.0 * M * K * N, tiles, kernel_threads());
  const int tiles_per_task = (tiles + runs - 1) / runs;
  parallel_for((tiles + tiles_per_task - 1) / tiles_per_task, [&](int task, int) {
    const int t_end = std::min(tiles, (task + 1) * tiles_per_task);
    for (int t = task * tiles_per_task; t < t_end; ++t) {
      const int n0 = t * R, rows = std::min(R, N - n0);
      for (int p = 0; p < panels; ++p)
        Stream::tile(y + size_t(p) * width * N + n0, N, w + size_t(n0) * K, K, rows, xp + size_t(p) * width * K,
                     std::min(width, M - p * width), b ? b + n0 : nullptr, p == 0);
    }
  });
}

// The table of one instruction set's functions (gemm.h's GemmKernels).
template <class Tile, class Stream>
constexpr GemmKernels kernels() {
  return {gemm<Tile>,        packed_b_floats<Tile>, pack_b_all<Tile>,
          gemm_packed<Tile>, linear_gemm<Tile>,     linear_stream<Tile, Stream>};
}

}  // namespace ordo::gemm_blocks
