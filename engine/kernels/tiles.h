// ordo: what the tiled kernels share (engine/kernels/small_m.cpp, int8_vnni.cpp, bf16_avx512.cpp):
// the table of tile functions for a block's edges, the split of y into tasks for the threads, and
// the panel layout of W for the dot-product instructions.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <type_traits>
#include <utility>
#include <vector>

#include "engine/kernels/parallel.h"

namespace ordo::tiles {

// "#pragma GCC unroll": a tile's loops over its rows and panels unrolled whole, so that each
// accumulator is a register of its own. GCC 12 at -O3 left the 8 × 3 loops rolled and the 24
// accumulators in an array on the stack, loaded and stored around every vpdpbusd.
#define ORDO_UNROLL _Pragma("GCC unroll 16")

// table<TM, TN>(tile)[mr − 1][nr − 1] is tile(mr, nr), the kernel's function for an MR × NR tile,
// for the edges of y where fewer than TM rows or TN columns (or panels) remain. `tile` takes mr and
// nr as std::integral_constant and names one instance of the kernel's template:
//   tiles::table<8, 3>([](auto mr, auto nr) { return &dot_tile<mr, nr>; })
template <int MR, class Tile, int... NR>
constexpr auto row_of(Tile tile, std::integer_sequence<int, NR...>) {
  return std::array{tile(std::integral_constant<int, MR>{}, std::integral_constant<int, NR + 1>{})...};
}
template <int TN, class Tile, int... MR>
constexpr auto rows_of(Tile tile, std::integer_sequence<int, MR...>) {
  return std::array{row_of<MR + 1>(tile, std::make_integer_sequence<int, TN>{})...};
}
template <int TM, int TN, class Tile>
constexpr auto table(Tile tile) {
  return rows_of<TN>(tile, std::make_integer_sequence<int, TM>{});
}

// Runs tile(m, mr, u, nu) over y of M rows × `units` columns (or panels of 16), in tiles of at most
// tile_m × tile_n, for a job of about `flops` operations. Tasks are blocks of 64 rows × runs of
// units (multiples of `round`): the tasks split_tasks asks for (kRunsPerThread per thread, one
// below kMinSplitFlops), but at least one run per thread across each row block, handed out as
// threads come for them, so a late helper holds the job up by one run. Each run of W is streamed
// in order, and inside a task each tile's weights stay in cache while the block's rows pass over them.
template <class Tile>
void for_each_tile(int M, int units, int tile_m, int tile_n, int round, int threads, double flops, const Tile& tile) {
  if (M == 0 || units == 0) return;
  constexpr int kRowsPerTask = 64;
  const int row_blocks = (M + kRowsPerTask - 1) / kRowsPerTask, rounds = (units + round - 1) / round;
  const int wanted = split_tasks(flops, row_blocks * rounds, threads);
  const int runs = wanted == 1 ? 1 : std::min(rounds, std::max(threads, (wanted + row_blocks - 1) / row_blocks));
  const int share = (rounds + runs - 1) / runs * round;
  const int tasks = row_blocks * ((units + share - 1) / share);
  auto task = [&](int t, int) {
    const int m0 = t % row_blocks * kRowsPerTask, m_end = std::min(M, m0 + kRowsPerTask);
    const int u0 = t / row_blocks * share, u_end = std::min(units, u0 + share);
    for (int u = u0; u < u_end; u += tile_n)
      for (int m = m0; m < m_end; m += tile_m) tile(m, std::min(tile_m, m_end - m), u, std::min(tile_n, u_end - u));
  };
  if (wanted == 1 || tasks == 1)
    for (int t = 0; t < tasks; ++t) task(t, 0);
  else
    parallel_for(tasks, task);
}

// W (N, K) in panels of 16 output columns, each panel ⌈K/G⌉ groups of G consecutive k for each of
// its 16 columns: out[p][g][c][i] = W[16p + c][G·g + i], 0 past N or K. One 64-byte load is then
// the operand of one dot-product instruction for 16 columns × G k (vpdpbusd: G = 4 bytes,
// vdpbf16ps: G = 2 bf16).
template <int G, class T>
std::vector<T> pack_panels(const T* w, int N, int K) {
  const int KG = (K + G - 1) / G * G, panels = (N + 15) / 16;
  std::vector<T> out(size_t(panels) * KG * 16, T(0));
  for (int n = 0; n < N; ++n) {
    T* column = out.data() + size_t(n / 16) * KG * 16 + (n % 16) * G;  // its G values in group 0
    for (int k = 0; k < K; ++k) column[size_t(k / G) * 16 * G + k % G] = w[size_t(n) * K + k];
  }
  return out;
}

// pack_panels' result with W's shape: KG is K rounded up to a multiple of G, the packed depth.
template <int G, class T>
struct Panels {
  int N = 0, K = 0, KG = 0;
  std::vector<T> w;  // (⌈N/16⌉, KG/G, 16, G)
};
template <int G, class T>
Panels<G, T> pack(const T* w, int N, int K) {
  return {N, K, (K + G - 1) / G * G, pack_panels<G>(w, N, K)};
}

}  // namespace ordo::tiles
