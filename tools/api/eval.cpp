// The held-out evaluation rule of <ordo/eval.h>, and the batched runs that apply it.
#include <ordo/engine/init.h>
#include <ordo/errors.h>
#include <ordo/eval.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>
#include <utility>

namespace ordo::eval {

int masked_count(int L) {
  return std::max(1, (15 * L + 50) / 100);
}

std::vector<int> mask_positions(int L, Rng& rng) {
  if (L <= 0) return {};
  const int k = masked_count(L);
  std::vector<int> p(L);
  std::iota(p.begin(), p.end(), 0);
  for (int j = 0; j < k; ++j) {
    const int r = j + int(rng.next() % uint64_t(L - j));
    std::swap(p[j], p[r]);
  }
  p.resize(k);
  return p;
}

std::vector<int32_t> shuffled(const std::vector<int32_t>& ids, Rng& rng) {
  const int L = int(ids.size());
  for (int attempt = 0; attempt < kShuffleTries; ++attempt) {
    std::vector<int> p(L);
    std::iota(p.begin(), p.end(), 0);
    for (int j = L - 1; j >= 1; --j) std::swap(p[j], p[int(rng.next() % uint64_t(j + 1))]);
    std::vector<int32_t> out(L);
    for (int t = 0; t < L; ++t) out[t] = ids[p[t]];
    if (out != ids) return out;
  }
  return {};
}

std::vector<int32_t> swapped(const std::vector<int32_t>& ids, Rng& rng) {
  std::vector<int> c;
  for (int j = 0; j + 1 < int(ids.size()); ++j)
    if (ids[j] != ids[j + 1]) c.push_back(j);
  if (c.empty()) return {};
  const int j = c[rng.next() % uint64_t(c.size())];
  std::vector<int32_t> out = ids;
  std::swap(out[j], out[j + 1]);
  return out;
}

LinePlan plan(const std::vector<int32_t>& ids, uint64_t line) {
  LinePlan out;
  const int L = int(ids.size());
  if (L == 0) return out;
  Rng rng(kSeed + line);
  out.masked = mask_positions(L, rng);
  out.order = L >= kOrderMin && L <= kOrderMax;
  if (out.order) {
    out.shuffled = shuffled(ids, rng);
    out.swapped = swapped(ids, rng);  // after every shuffle draw, given up or not
  }
  return out;
}

int rank_of(const float* logits, int n, int32_t truth) {
  const float z = logits[truth];
  int rank = 0;
  for (int v = 0; v < n; ++v) rank += logits[v] > z || (logits[v] == z && v < truth);
  return rank;
}

double pll_sum(std::vector<double> log_probs) {
  std::sort(log_probs.begin(), log_probs.end());
  double s = 0;
  for (double v : log_probs) s += v;
  return s;
}

}  // namespace ordo::eval
