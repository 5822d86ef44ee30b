// ordo compare: the word-order report, two texts with and without positional encoding.
#include "tools/cli/compare.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>

#include <ordo/errors.h>
#include <ordo/ordo.h>

#include "tools/cli/cli.h"

namespace ordo::cli {

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

std::string fixed(double v, int width, int decimals) {
  char buf[64];
  if (std::isnan(v))
    std::snprintf(buf, sizeof buf, "%*s", width, "undefined");
  else
    std::snprintf(buf, sizeof buf, "%*.*f", width, decimals, v);
  return buf;
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
    p.verdict = std::string("The texts hold different pieces, so their scores differ in more than order: ") +
                (p.prefers == "neither"
                     ? format("both score %.2f with positions", hi)
                     : std::string("the model prefers ") + which + format(" (PLL %.2f against %.2f)", hi, lo)) +
                format(", and without positions they score %.2f and %.2f.", p.a_nope, p.b_nope);
  }
  c->scored = true;
  c->pll_a_pe = p.a_pe, c->pll_b_pe = p.b_pe, c->pll_a_nope = p.a_nope, c->pll_b_nope = p.b_nope;
  c->prefers = p.prefers, c->verdict = p.verdict;
}

}  // namespace

Comparison compare_texts(Pipeline& pipeline, const Tokenization& a, const Tokenization& b) {
  const int d = pipeline.model().config().d_model;
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

int cmd_compare(int argc, char** argv) {
  cxxopts::Options o("ordo compare",
                     "The word-order report: encode two texts with and without the positional encoding and measure "
                     "how far apart they are.");
  add_model_options(o);
  o.add_options()("json", "print the report as one JSON object");
  cxxopts::ParseResult args;
  if (!parse_with_texts(o, argc, argv, args, "TEXT_A TEXT_B")) return 0;
  if (args.count("texts") == 0 || args["texts"].as<std::vector<std::string>>().size() != 2)
    throw UsageError(
        "needs exactly two texts, e.g. ordo compare \"the cat sat on the mat\" \"the mat sat on the cat\"");
  const auto texts = args["texts"].as<std::vector<std::string>>();
  set_num_threads(threads_option(args));
  const ComputeType compute_type = compute_type_option(args);  // a wrong value fails before the model loads
  Pipeline pipeline(model_dir(args));
  pipeline.encoder().set_compute_type(compute_type);
  const int d = pipeline.model().config().d_model;
  const bool has_positions = pipeline.model().config().positional_encoding != PositionalEncoding::None;

  const Tokenization a = pipeline.tokenize(texts[0], "argument 1"), b = pipeline.tokenize(texts[1], "argument 2");
  // An empty text has no tokens and so no vector to compare: said once, and its cosines are left
  // undefined rather than made up.
  for (const auto& [t, name] : {std::pair{&a, "A"}, std::pair{&b, "B"}})
    if (t->ids.empty())
      std::cerr << "note: text " << name << " has no tokens, so it has no vector: its cosines are undefined\n";
  for (const auto& [t, where] : {std::pair{&a, "argument 1"}, std::pair{&b, "argument 2"}})
    if (t->ids.size() > size_t(pipeline.max_tokens()))
      throw InputError(
          where, "text has " + std::to_string(t->ids.size()) + " tokens, more than " + pipeline.max_tokens_reason());
  const Comparison c = compare_texts(pipeline, a, b);
  const bool reordered = c.reordered;
  const double cos_pe = c.cosine_pe, cos_nope = c.cosine_nope;
  const double diff_pe = c.max_abs_diff_pe, diff_nope = c.max_abs_diff_nope;
  const std::vector<Comparison::Move>& moves = c.moves;

  if (args.count("json")) {
    std::cout << compare_json(texts[0], texts[1], a, b, c).dump(2, ' ', false, nlohmann::json::error_handler_t::replace)
              << "\n";
    return 0;
  }

  auto show = [](const char* label, const std::string& text, const Tokenization& t) {
    std::cout << label << " \"" << text << "\"\n   pieces:";
    for (const auto& p : t.pieces) std::cout << " " << p;
    std::cout << "\n   ids:   ";
    for (int32_t id : t.ids) std::cout << " " << id;
    std::cout << "\n";
  };
  show("A", texts[0], a);
  show("B", texts[1], b);
  std::printf("\nSame tokens reordered: %s\n\n", reordered ? (a.ids == b.ids ? "yes (in the same order)" : "yes")
                                                           : "no (the texts hold different tokens)");
  std::printf("mean-pooled vectors (d=%d)        with positions   without positions\n", d);
  std::printf("  cosine similarity              %s   %s\n", fixed(cos_pe, 15, 9).c_str(),
              fixed(cos_nope, 17, 9).c_str());
  std::printf("  max |A - B|                    %15.3g   %17.3g\n", diff_pe, diff_nope);
  if (!moves.empty()) {
    std::printf("\nper token: how far its output vector moved between A and B (L2 distance)\n");
    std::printf("  %-14s %5s %5s   %15s   %17s\n", "piece", "in A", "in B", "with positions", "without positions");
    for (const Comparison::Move& m : moves)
      std::printf("  %s %5d %5d   %15.6f   %17.3g\n", pad_right(a.pieces[m.i], 14).c_str(), m.i, m.j, m.with_pe,
                  m.without_pe);
  }
  if (c.scored) {
    std::printf("\npseudo-log-likelihood (ordo score; higher = more natural)   with positions   without positions\n");
    std::printf("  A                                                   %15.4f   %17.4f\n", c.pll_a_pe, c.pll_a_nope);
    std::printf("  B                                                   %15.4f   %17.4f\n", c.pll_b_pe, c.pll_b_nope);
  }
  std::printf("\n");
  if (a.ids.empty() || b.ids.empty()) {
    std::printf("An empty text has no tokens and no vector, so there is nothing to compare.\n");
  } else if (!reordered) {
    std::printf(
        "The texts hold different tokens, so they differ with or without positions; the order test needs "
        "the same tokens reordered.\n");
  } else if (a.ids == b.ids) {
    std::printf(
        "The two texts are the same tokens in the same order, so both rows agree: there is no order to tell apart.\n");
  } else if (!has_positions) {
    std::printf(
        "This model has no positional encoding, so it cannot tell the two orders apart: both columns are "
        "the same (cosine %.6f).\n",
        cos_pe);
  } else {
    double worst_moved = 0;
    for (const Comparison::Move& m : moves) worst_moved = std::max(worst_moved, m.without_pe);
    std::printf(
        "Without positional encoding the encoder sees the same bag of tokens: the pooled vectors match "
        "(cosine %.6f) and every token's output only moves with it (by at most %.1e). With positions the "
        "pooled cosine falls to %.4f: the order changes the result.\n",
        cos_nope, worst_moved, cos_pe);
  }
  if (c.scored) std::printf("%s\n", c.verdict.c_str());
  if (!c.unscored.empty()) std::printf("(%s)\n", c.unscored.c_str());
  return 0;
}

}  // namespace ordo::cli
