// The word-order report's numbers (<ordo/compare.h>): two texts with and without positional encoding.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <nlohmann/json.hpp>

#include <ordo/compare.h>
#include <ordo/errors.h>
#include <ordo/ordo.h>

namespace ordo {

namespace {

// NaN when either vector is zero (an empty text): the angle to a zero vector is undefined.
double cosine(const std::vector<float>& a, const std::vector<float>& b) {
  double ab = 0, aa = 0, bb = 0;
  for (size_t i = 0; i < a.size(); ++i) ab += double(a[i]) * b[i], aa += double(a[i]) * a[i], bb += double(b[i]) * b[i];
  return aa > 0 && bb > 0 ? ab / std::sqrt(aa * bb) : NAN;
}

nlohmann::ordered_json number_or_null(double v) {
  return std::isnan(v) ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(v);
}

double max_abs_diff(const float* a, const float* b, size_t n) {
  double m = 0;
  for (size_t i = 0; i < n; ++i) m = std::max(m, std::fabs(double(a[i]) - b[i]));
  return m;
}

double l2_diff(const float* a, const float* b, size_t n) {
  double s = 0;
  for (size_t i = 0; i < n; ++i) s += (double(a[i]) - b[i]) * (double(a[i]) - b[i]);
  return std::sqrt(s);
}

std::string format(const char* f, double x, double y = 0, double z = 0) {
  char buf[512];
  std::snprintf(buf, sizeof buf, f, x, y, z);
  return buf;
}

// What the masked-language-model head says about the two texts: each one's pseudo-log-likelihood
// with and without positions, and which order it prefers.
void prefer(Pipeline& pipeline, const Tokenization& a, const Tokenization& b, Comparison* c) {
  const auto with_pe = pipeline.score({a, b}, true), without_pe = pipeline.score({a, b}, false);
  struct {
    double a_pe, b_pe, a_nope, b_nope;
    std::string prefers, verdict;
  } p{with_pe[0].pll, with_pe[1].pll, without_pe[0].pll, without_pe[1].pll, "", ""};
  const bool reordered = c->reordered;
  p.prefers = p.a_pe > p.b_pe ? "a" : p.b_pe > p.a_pe ? "b" : "neither";
  const char* which = p.prefers == "a" ? "A" : "B";
  const double hi = std::max(p.a_pe, p.b_pe), lo = std::min(p.a_pe, p.b_pe);
  if (a.ids == b.ids) {
    p.verdict = format("Both texts are the same pieces in the same order, so they score the same (PLL %.2f).", p.a_pe);
  } else if (reordered && !pipeline.sees_order(true)) {
    p.verdict = format(
        "This model has no positional encoding, so it cannot prefer either order: both score %.2f (PLL).", p.a_pe);
  } else if (reordered) {
    p.verdict =
        (p.prefers == "neither" ? format("With positions both orders score the same (PLL %.2f).", hi)
                                : std::string("The model finds ") + which +
                                      format("'s order more natural: PLL %.2f against %.2f with positions.", hi, lo)) +
        (p.a_nope == p.b_nope
             ? format(" Without positions both score %.2f: the encoder then sees the same bag of pieces and "
                      "cannot prefer either order.",
                      p.a_nope)
             : format(" Without positions they score %.2f and %.2f.", p.a_nope, p.b_nope));
  } else {
    // A PLL is a sum over the text's own pieces: across different pieces (a shorter text, the empty
    // one at 0, other words) a higher score is not a preference, so none is stated.
    p.prefers = "neither";
    p.verdict =
        format("The texts hold different pieces, so their PLLs (A %.2f, B %.2f with positions; ", p.a_pe, p.b_pe) +
        format(
            "%.2f and %.2f without) do not say which is more natural: a PLL compares orders of the same "
            "pieces.",
            p.a_nope, p.b_nope);
  }
  c->scored = true;
  c->pll_a_pe = p.a_pe, c->pll_b_pe = p.b_pe, c->pll_a_nope = p.a_nope, c->pll_b_nope = p.b_nope;
  c->prefers = p.prefers, c->verdict = p.verdict;
}

}  // namespace

Comparison compare_texts(Pipeline& pipeline, const Tokenization& a, const Tokenization& b) {
  const int d = pipeline.config().d_model;
  Comparison c;
  std::vector<int32_t> sa = a.ids, sb = b.ids;
  std::sort(sa.begin(), sa.end());
  std::sort(sb.begin(), sb.end());
  c.reordered = sa == sb;

  // Per-token rows with and without positions; the pooled vector is their mean.
  EncodeOptions with_pe, without_pe;
  without_pe.positions = false;
  const auto rows_pe = pipeline.encode({a, b}, Pooling::None, false, with_pe);
  const auto rows_nope = pipeline.encode({a, b}, Pooling::None, false, without_pe);
  auto mean = [&](const Encoded& e) { return pool(e.values.data(), e.rows, d, Pooling::Mean); };
  const auto pa = mean(rows_pe[0]), pb = mean(rows_pe[1]), na = mean(rows_nope[0]), nb = mean(rows_nope[1]);
  c.cosine_pe = cosine(pa, pb), c.cosine_nope = cosine(na, nb);
  c.max_abs_diff_pe = max_abs_diff(pa.data(), pb.data(), d);
  c.max_abs_diff_nope = max_abs_diff(na.data(), nb.data(), d);

  // Match the k-th occurrence of each id in A with the k-th occurrence in B.
  if (c.reordered) {
    std::map<int32_t, std::vector<int>> where_in_b;
    for (int j = int(b.ids.size()) - 1; j >= 0; --j) where_in_b[b.ids[j]].push_back(j);
    for (int i = 0; i < int(a.ids.size()); ++i) {
      auto& slots = where_in_b[a.ids[i]];
      const int j = slots.back();
      slots.pop_back();
      c.moves.push_back({i, j, l2_diff(&rows_pe[0].values[size_t(i) * d], &rows_pe[1].values[size_t(j) * d], d),
                         l2_diff(&rows_nope[0].values[size_t(i) * d], &rows_nope[1].values[size_t(j) * d], d)});
    }
  }
  // A model with a masked-language-model head can also say which order it finds more natural.
  // Not past kScoreMaxPieces: the cost grows with the cube of the length (ordo score --max-tokens
  // scores longer texts).
  if (pipeline.has_head() && pipeline.mask_id() >= 0) {
    if (std::max(a.ids.size(), b.ids.size()) <= size_t(kScoreMaxPieces))
      prefer(pipeline, a, b, &c);
    else
      c.unscored = "no pseudo-log-likelihood: a text has more than " + std::to_string(kScoreMaxPieces) +
                   " pieces, and its cost grows with the cube of the length (ordo score --max-tokens N scores it)";
  }
  return c;
}

nlohmann::ordered_json comparison_json(const Comparison& c, const Tokenization& a) {
  nlohmann::ordered_json tokens = nlohmann::ordered_json::array();
  for (const Comparison::Move& m : c.moves)
    tokens.push_back({{"piece", a.pieces[m.i]},
                      {"position_a", m.i},
                      {"position_b", m.j},
                      {"moved_with_pe", m.with_pe},
                      {"moved_without_pe", m.without_pe}});
  nlohmann::ordered_json j = {
      {"same_tokens_reordered", c.reordered},
      {"cosine", {{"with_pe", number_or_null(c.cosine_pe)}, {"without_pe", number_or_null(c.cosine_nope)}}},
      {"max_abs_diff", {{"with_pe", c.max_abs_diff_pe}, {"without_pe", c.max_abs_diff_nope}}},
      {"tokens", tokens}};
  if (c.scored) {
    j["pll"] = {{"a", {{"with_pe", c.pll_a_pe}, {"without_pe", c.pll_a_nope}}},
                {"b", {{"with_pe", c.pll_b_pe}, {"without_pe", c.pll_b_nope}}}};
    j["prefers"] = c.prefers;
    j["verdict"] = c.verdict;
  }
  return j;
}

nlohmann::ordered_json compare_json(const std::string& text_a, const std::string& text_b, const Tokenization& a,
                                    const Tokenization& b, const Comparison& c) {
  using ojson = nlohmann::ordered_json;  // keys in the order documented, not alphabetical
  auto side = [](const std::string& text, const Tokenization& t) {
    return ojson{{"text", text}, {"pieces", t.pieces}, {"ids", t.ids}};
  };
  ojson j = {{"a", side(text_a, a)}, {"b", side(text_b, b)}};
  j.update(comparison_json(c, a));
  return j;
}

}  // namespace ordo
