// The held-out evaluation rule of <ordo/eval.h>, and the batched runs that apply it.
#include <algorithm>
#include <climits>
#include <cmath>
#include <map>
#include <numeric>
#include <utility>

#include <ordo/engine/init.h>
#include <ordo/errors.h>
#include <ordo/eval.h>

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

namespace ordo::eval {

namespace {

// log Σ_v exp(z_v) in double, shifted by the largest z.
double log_sum_exp(const float* z, int n) {
  float m = z[0];
  for (int v = 1; v < n; ++v) m = std::max(m, z[v]);
  double s = 0;
  for (int v = 0; v < n; ++v) s += std::exp(double(z[v]) - double(m));
  return double(m) + std::log(s);
}

// Items of `lengths` (indices) grouped so each group's padded size (count × longest) stays within
// `tokens`; a single item larger than that is a group of its own. Items are taken shortest first, so
// a group holds texts of about one length and little padding.
std::vector<std::vector<int>> groups_by_length(const std::vector<int>& lengths, const std::vector<int>& cost,
                                               long tokens) {
  std::vector<int> order(lengths.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return lengths[a] < lengths[b]; });
  std::vector<std::vector<int>> out;
  long count = 0;
  for (int i : order) {
    // every item of the group is padded to the longest, which is this one (ascending order)
    if (out.empty() || (count + cost[i]) * long(lengths[i]) > tokens) {
      out.emplace_back();
      count = 0;
    }
    out.back().push_back(i);
    count += cost[i];
  }
  return out;
}

}  // namespace

std::vector<std::vector<double>> pseudo_log_likelihoods(Pipeline& pipeline,
                                                        const std::vector<std::vector<std::vector<int32_t>>>& sets,
                                                        bool positions, int batch_tokens, int first_position) {
  pipeline.require_head(true);
  const int V = pipeline.config().vocab_size;
  const int32_t mask = pipeline.mask_id();
  // A set costs (copies) × (its longest text) padded tokens; sets of about one length share a batch.
  std::vector<int> lengths, cost;
  for (const auto& set : sets) {
    int longest = 0, copies = 0;
    for (const auto& ids : set) longest = std::max(longest, int(ids.size())), copies += int(ids.size());
    lengths.push_back(longest);
    cost.push_back(copies);
  }
  std::vector<std::vector<double>> out(sets.size());
  for (const auto& group : groups_by_length(lengths, cost, batch_tokens)) {
    // Text of L pieces -> L copies, copy t with the mask at t; the head's logits at the masked row.
    std::vector<std::vector<int32_t>> seqs;
    std::vector<Row> rows;
    std::vector<int32_t> truth;
    for (int g : group)
      for (const auto& ids : sets[g])
        for (int t = 0; t < int(ids.size()); ++t) {
          std::vector<int32_t> x = ids;
          x[t] = mask;
          rows.push_back({int(seqs.size()), t});
          truth.push_back(ids[t]);
          seqs.push_back(std::move(x));
        }
    const std::vector<float> logits =
        seqs.empty() ? std::vector<float>() : pipeline.logits(seqs, rows, positions, first_position);
    size_t k = 0;
    for (int g : group)
      for (const auto& ids : sets[g]) {
        std::vector<double> log_probs;  // log p(true piece at t | the text with t masked)
        for (size_t t = 0; t < ids.size(); ++t, ++k) {
          const float* z = logits.data() + k * V;
          log_probs.push_back(double(z[truth[k]]) - log_sum_exp(z, V));
        }
        out[g].push_back(pll_sum(std::move(log_probs)));
      }
  }
  return out;
}

Report evaluate(Pipeline& pipeline, const std::vector<std::vector<int32_t>>& lines, const Options& options) {
  pipeline.require_head(true);
  const Config& c = pipeline.config();
  const int V = c.vocab_size;
  const int32_t mask = pipeline.mask_id();
  Report r;
  r.lines = int(lines.size());
  const bool learned = c.positional_encoding == PositionalEncoding::Learned;
  const int offset = options.positions ? std::max(options.offset, 0) : 0;  // without positions it changes nothing
  r.limit = learned ? c.max_positions : 0;
  r.max_pieces = std::max(options.max_pieces, 0);
  int longest = learned ? std::max(c.max_positions - offset, 0) : INT_MAX;  // the longest line that runs
  if (r.max_pieces > 0) longest = std::min(longest, r.max_pieces);

  std::vector<LinePlan> plans(lines.size());
  std::vector<int> runnable;  // line numbers that are masked and counted
  for (size_t i = 0; i < lines.size(); ++i) {
    const int L = int(lines[i].size());
    if (L == 0) {
      ++r.empty;
    } else if (L > longest) {
      ++r.left_out;
    } else {
      plans[i] = plan(lines[i], i);
      runnable.push_back(int(i));
    }
  }
  r.evaluated = int(runnable.size());

  // Masked accuracy: one copy of each line with all its chosen positions masked; many lines a batch.
  {
    std::vector<int> lengths, cost;
    for (int i : runnable) lengths.push_back(int(lines[i].size())), cost.push_back(1);
    std::map<int, Bucket> buckets;
    for (const auto& group : groups_by_length(lengths, cost, options.batch_tokens)) {
      std::vector<std::vector<int32_t>> seqs;
      std::vector<Row> rows;
      std::vector<int32_t> truth;
      for (int g : group) {
        const int i = runnable[g];
        std::vector<int32_t> x = lines[i];
        for (int p : plans[i].masked) {
          x[p] = mask;
          rows.push_back({int(seqs.size()), p});
          truth.push_back(lines[i][p]);
        }
        seqs.push_back(std::move(x));
      }
      const std::vector<float> logits = pipeline.logits(seqs, rows, options.positions, offset);
      for (size_t k = 0; k < rows.size(); ++k) {
        const int rank = rank_of(logits.data() + k * V, V, truth[k]);
        Bucket& b = buckets[rows[k].position / kBucket];
        b.from = rows[k].position / kBucket * kBucket;
        b.to = b.from + kBucket - 1;
        ++b.masked;
        b.top1 += rank == 0;
        b.top5 += rank < 5;
        ++r.masked;
        r.top1 += rank == 0;
        r.top5 += rank < 5;
        r.pieces.push_back({runnable[group[rows[k].sequence]], rows[k].position, rank});
      }
    }
    for (const auto& [k, b] : buckets) r.buckets.push_back(b);
    std::sort(r.pieces.begin(), r.pieces.end(), [](const Report::Piece& x, const Report::Piece& y) {
      return x.line != y.line ? x.line < y.line : x.position < y.position;
    });
  }
  if (!options.order) return r;

  // Order: each line's natural text and its reorderings are scored together (one set, one batch).
  std::vector<int> tested;  // line numbers
  std::vector<std::vector<std::vector<int32_t>>> sets;
  for (int i : runnable) {
    if (!plans[i].order) continue;
    tested.push_back(i);
    sets.push_back({lines[i]});
    if (!plans[i].shuffled.empty()) sets.back().push_back(plans[i].shuffled);
    if (!plans[i].swapped.empty()) sets.back().push_back(plans[i].swapped);
  }
  r.order_lines = int(tested.size());
  const auto scores = pseudo_log_likelihoods(pipeline, sets, options.positions, options.batch_tokens, offset);
  for (size_t n = 0; n < tested.size(); ++n) {
    const LinePlan& p = plans[tested[n]];
    const double natural = scores[n][0];
    size_t next = 1;
    const std::pair<Order*, bool> tests[] = {{&r.shuffle, !p.shuffled.empty()}, {&r.swap, !p.swapped.empty()}};
    for (auto [o, present] : tests) {
      if (!present) {
        ++o->left_out;
        continue;
      }
      const double s = scores[n][next++];
      ++o->lines;
      const int verdict = order_verdict(natural, s);
      o->preferred += verdict == 1;
      o->ties += verdict == 0;
      o->other += verdict == -1;
      o->verdicts.push_back(verdict);
      o->max_abs_difference = std::max(o->max_abs_difference, std::fabs(natural - s));
    }
  }
  return r;
}

int order_verdict(double natural, double reordered) {
  const double d = natural - reordered;
  if (std::fabs(d) <= kTieRelative * (std::fabs(natural) + std::fabs(reordered))) return 0;
  return d > 0 ? 1 : -1;
}

Paired paired_top1(const Report& a, const Report& b) {
  Paired out;
  size_t i = 0, j = 0;  // both lists are sorted by (line, position)
  while (i < a.pieces.size() && j < b.pieces.size()) {
    const Report::Piece &x = a.pieces[i], &y = b.pieces[j];
    if (x.line != y.line || x.position != y.position) {
      (x.line < y.line || (x.line == y.line && x.position < y.position)) ? ++i : ++j;
      continue;
    }
    ++out.pieces;
    const bool ha = x.rank == 0, hb = y.rank == 0;
    out.both += ha && hb;
    out.a_only += ha && !hb;
    out.b_only += hb && !ha;
    ++i, ++j;
  }
  if (out.pieces == 0) return out;
  const double n = double(out.pieces), d = double(out.b_only - out.a_only);
  out.difference = d / n;
  const double half = 1.96 * std::sqrt(std::max(0.0, double(out.a_only + out.b_only) - d * d / n)) / n;
  out.low = out.difference - half, out.high = out.difference + half;
  // P(X ≤ m) for X ~ Binomial(t, ½), summed in logs: C(t, k)·2^−t.
  const long t = out.a_only + out.b_only, m = std::min(out.a_only, out.b_only);
  double tail = 0;
  for (long k = 0; k <= m; ++k)
    tail += std::exp(std::lgamma(t + 1.0) - std::lgamma(k + 1.0) - std::lgamma(t - k + 1.0) - t * std::log(2.0));
  out.p = std::min(1.0, 2 * tail);
  return out;
}

}  // namespace ordo::eval
