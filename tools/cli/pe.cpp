// ordo pe: the sinusoidal positional encodings, their properties checked with numbers, their
// common variants side by side, and pictures of them.
#include <algorithm>
#include <cmath>
#include <cstdio>

#include <ordo/engine/model.h>
#include <ordo/engine/reference.h>
#include <ordo/errors.h>

#include "common/atomic_file.h"
#include "tools/cli/cli.h"
#include "tools/teach/figure.h"
#include "tools/teach/pe_report.h"

namespace ordo::cli {

namespace {

using teach::PeVariant;

// Multiply-adds a report or picture may take (a few seconds).
constexpr double kMaxProducts = 4e9;

void write_csv(const std::string& path, const std::vector<float>& pe, int N, int d) {
  write_atomically(path, [&](std::FILE* f) {
    std::fprintf(f, "position");
    for (int j = 0; j < d; ++j) std::fprintf(f, ",d%d", j);
    std::fprintf(f, "\n");
    for (int t = 0; t < N; ++t) {
      std::fprintf(f, "%d", t);
      for (int j = 0; j < d; ++j) std::fprintf(f, ",%.9g", pe[size_t(t) * d + j]);
      std::fprintf(f, "\n");
    }
  });
}

void print_properties(const std::vector<float>& pe, int N, int d, PeVariant v, double base) {
  if (d % 2 != 0 || N < 2) {
    std::printf("\n(the property report needs an even --dim and at least 2 positions)\n");
    return;
  }
  const int ks = N <= 1024 ? N - 1 : 512 + 16;
  if (double(N) * d * ks > kMaxProducts) {
    std::printf("\n(property report skipped: %d positions x %d dims is too many pairs to check; try fewer)\n", N, d);
    return;
  }
  const auto report =
      teach::check_pe_properties(pe.data(), N, d, teach::layout_of(v), teach::frequencies(v, d, base), base);
  std::printf("\nproperties of these %d x %d encodings, checked numerically (pairs: %s)\n", N, d,
              report.offsets_checked.c_str());
  for (const auto& p : report.properties) {
    std::printf("  %-12s %-5s worst error %-10.3g (tolerance %.3g)\n", p.name.c_str(), p.holds ? "holds" : "FAILS",
                p.error, p.tolerance);
    std::printf("  %-12s %s\n", "", p.claim.c_str());
    std::printf("  %-12s %s\n", "", p.detail.c_str());
  }
}

// Each variant beside the paper's numbers at width d, over positions 0 .. N-1.
void print_variants(int N, int d, double base) {
  const auto paper = teach::pe_table(PeVariant::Paper, N, d, base);
  const int last = N - 1;
  std::printf(
      "\nvariants at d = %d, positions 0 .. %d, against the paper's numbers (max|diff| paired up: each\n"
      "sin/cos pair against the paper's pair of the same index, wherever the layout keeps it; flat dims:\n"
      "dims that move by less than 0.01 over all %d positions)\n",
      d, last, N);
  std::printf("  %-17s %-12s %-29s %10s %10s %17s %6s\n", "variant", "layout", "w_i", "max|diff|", "max|diff|",
              "longest", "flat");
  std::printf("  %-17s %-12s %-29s %10s %10s %17s %6s\n", "", "", "", "as stored", "paired up", "wavelength", "dims");
  for (PeVariant v : teach::all_variants()) {
    const auto table = teach::pe_table(v, N, d, base);
    const auto w = teach::frequencies(v, d, base);
    const PeLayout layout = teach::layout_of(v);
    double stored = 0, paired = 0;  // paired: pair i against the paper's pair i, wherever each layout keeps it
    for (int t = 0; t < N; ++t)
      for (int i = 0; i < d / 2; ++i) {
        const float* a = &table[size_t(t) * d];
        const float* p = &paper[size_t(t) * d];
        paired = std::max({paired, std::fabs(double(a[teach::sin_dim(layout, i)]) - p[2 * i]),
                           std::fabs(double(a[teach::cos_dim(layout, i, d)]) - p[2 * i + 1])});
        stored =
            std::max({stored, std::fabs(double(a[2 * i]) - p[2 * i]), std::fabs(double(a[2 * i + 1]) - p[2 * i + 1])});
      }
    int flat = 0;  // dims whose value moves by less than 0.01 over all N positions: no use for telling them apart
    for (int j = 0; j < d; ++j) {
      float lo = table[j], hi = table[j];
      for (int t = 1; t < N; ++t)
        lo = std::min(lo, table[size_t(t) * d + j]), hi = std::max(hi, table[size_t(t) * d + j]);
      flat += hi - lo < 0.01f;
    }
    char wavelength[32];
    std::snprintf(wavelength, sizeof wavelength, "2pi x %.6g", 1.0 / w.back());
    std::printf("  %-17s %-12s %-29s %10.6f %10.6f %17s %6d\n", teach::to_string(v),
                layout == PeLayout::Interleaved ? "interleaved" : "[sin | cos]", teach::frequency_rule(v), stored,
                paired, wavelength, flat);
  }
  // A few values as each variant stores them: positions 1 and N-1, dims 2, 3, d/2, d/2+1, d-2
  // (those that exist, each once).
  std::vector<int> ts, cols;
  for (int t : {1, last})
    if (t < N && std::find(ts.begin(), ts.end(), t) == ts.end()) ts.push_back(t);
  for (int j : {2, 3, d / 2, d / 2 + 1, d - 2})
    if (j < d && std::find(cols.begin(), cols.end(), j) == cols.end()) cols.push_back(j);
  std::printf("\n  sample values P(t, dim)      ");
  for (int t : ts)
    for (int j : cols) {
      char head[32];
      std::snprintf(head, sizeof head, "(%d,%d)", t, j);
      std::printf(" %9s", head);
    }
  std::printf("\n");
  for (PeVariant v : teach::all_variants()) {
    const auto table = teach::pe_table(v, N, d, base);
    std::printf("  %-28s", teach::to_string(v));
    for (int t : ts)
      for (int j : cols) std::printf(" %9.5f", table[size_t(t) * d + j]);
    std::printf("\n");
  }
}

// The least alike pairs of positions. The sinusoids make the cosine depend on t - s alone, so the
// lowest value is shared by every pair at the same distance (and sometimes by several distances):
// all of them are named, not the first one found.
std::string least_alike(const std::vector<double>& S, int N) {
  if (N < 2) return "";
  double low = S[1];
  for (int s = 0; s < N; ++s)
    for (int t = s + 1; t < N; ++t) low = std::min(low, S[size_t(s) * N + t]);
  const double tol = 1e-6;  // float sums of the same cosines, in different order
  std::vector<int> distances;
  int first_s = -1, first_t = -1, last_s = -1, last_t = -1, pairs = 0;
  for (int k = 1; k < N; ++k)
    for (int s = 0; s + k < N; ++s) {
      if (S[size_t(s) * N + s + k] > low + tol) continue;
      if (distances.empty() || distances.back() != k) distances.push_back(k);
      if (first_s < 0) first_s = s, first_t = s + k;
      last_s = s, last_t = s + k, ++pairs;
    }
  char buf[256];
  if (pairs == 1) {
    std::snprintf(buf, sizeof buf, "\nleast alike: positions %d and %d, cosine %.4f\n", first_s, first_t, low);
    return buf;
  }
  std::string apart;
  for (size_t i = 0; i < distances.size(); ++i)
    apart += (i == 0 ? "" : i + 1 == distances.size() ? " or " : ", ") + std::to_string(distances[i]);
  std::snprintf(
      buf, sizeof buf,
      "\nleast alike: cosine %.4f, shared by all %d pairs of positions %s apart (%d and %d, ..., %d and %d)\n", low,
      pairs, apart.c_str(), first_s, first_t, last_s, last_t);
  return buf;
}

// --similarity-png: the N × N cosines in h.values drawn; returns the paragraph saying how to read it.
std::string similarity_picture(const cxxopts::ParseResult& args, teach::Heatmap h, int N, const std::string& title) {
  h.rows = h.cols = N;
  h.value_name = "cosine of P_s and P_t";
  teach::choose_cells(N, N, true, &h.cell_w, &h.cell_h);
  const teach::Figure f{title, "position t", "position s"};
  const std::string path = args["similarity-png"].as<std::string>();
  const auto drawn = teach::draw(path, f, h);
  return "\n" + teach::describe(path, f, h, drawn, "positions s = 0 .. " + std::to_string(N - 1),
                                "positions t = 0 .. " + std::to_string(N - 1));
}

// cos(P_s, P_t) for every pair of N rows of width d.
std::vector<double> cosines(const float* P, int N, int d) {
  std::vector<double> norm(N), out(size_t(N) * N);
  for (int t = 0; t < N; ++t) {
    double sq = 0;
    for (int j = 0; j < d; ++j) sq += double(P[size_t(t) * d + j]) * P[size_t(t) * d + j];
    norm[t] = std::sqrt(sq);
  }
  for (int s = 0; s < N; ++s)
    for (int t = 0; t < N; ++t) {
      double dot = 0;
      for (int j = 0; j < d; ++j) dot += double(P[size_t(s) * d + j]) * P[size_t(t) * d + j];
      out[size_t(s) * N + t] = norm[s] > 0 && norm[t] > 0 ? dot / (norm[s] * norm[t]) : 0.0;
    }
  return out;
}

// One line: the mean cosine of the rows k apart, for k = 1, 2, 4, ... below N.
void print_cosine_by_distance(const char* label, const std::vector<double>& C, int N) {
  std::printf("  %-28s", label);
  for (int k = 1; k < N; k *= 2) {
    double sum = 0;
    for (int s = 0; s + k < N; ++s) sum += C[size_t(s) * N + s + k];
    std::printf("  k=%d %.3f", k, sum / (N - k));
  }
  std::printf("\n");
}

// `ordo pe --model DIR` for rope, alibi(-symmetric) and t5-buckets, which add nothing to the token vectors:
// what they apply inside every head's attention, and the property that makes them relative: shifting
// every position by k changes no score (checked here in double with seeded random q and k through the
// plain code).
// The largest ALiBi slope of the model: config.json's alibi_slopes, or the default rule's first.
double steepest_slope(const Config& c) {
  const std::vector<double> m = c.alibi_slopes.empty() ? reference::alibi_slopes(c.n_heads) : c.alibi_slopes;
  return *std::max_element(m.begin(), m.end());
}

int relative_positions(const cxxopts::ParseResult& args, const std::string& dir, const Model& model) {
  const Config& c = model.config();
  const int h = c.n_heads, dh = c.head_dim();
  const int N = args.count("positions") ? args["positions"].as<int>() : 16;
  if (N <= 1 || N > 4096) throw UsageError("--positions must be in 2 .. 4096");
  const PositionalEncoding pe = c.positional_encoding;
  const bool buckets = pe == PositionalEncoding::T5Buckets;
  const bool alibi = pe == PositionalEncoding::Alibi || pe == PositionalEncoding::AlibiSymmetric || buckets;
  // The bias of head `head` on a key at offset j − i from its query (reference::attention_head's b_ij);
  // t5-buckets: W[head, bucket(j − i)] of the model's table.
  auto bias = [&](int head, int offset) {
    if (buckets)
      return double(model.weights().position_bias[size_t(head) * c.relative_buckets +
                                                  reference::relative_bucket(offset, c.relative_buckets,
                                                                             c.relative_max_distance)]);
    const reference::AlibiSlopes m = reference::alibi_head_slopes(pe, h, head, c.alibi_slopes);
    return reference::alibi_bias(0, offset, m.before, m.after);  // query 0, key at the offset
  };
  std::vector<float> picture;  // rows × cols
  int rows = 0, cols = 0;
  double steepest = 0;  // the picture's scale: the largest |bias| drawn
  if (buckets) {
    std::printf(
        "positions of %s: t5-buckets, nothing added to the token vectors; each head's scores %s get\n"
        "b_ij = W[h, bucket(j - i)] before the softmax, W (%d heads x %d buckets) learned and shared by all layers:\n"
        "%d buckets a side, distances 0 .. %d one bucket each, then log-spaced to %d, every distance past it in\n"
        "the side's last bucket\n",
        dir.c_str(), c.scale_attention ? "q.k/sqrt(dh)" : "q.k (T5's, not divided by sqrt(dh))", h, c.relative_buckets,
        c.relative_buckets / 2, c.relative_buckets / 4 - 1, c.relative_max_distance);
    const int shown = std::min(N - 1, 40);
    auto listed = [&](int o) { return std::abs(o) <= 4 || o % 8 == 0 || std::abs(o) == shown; };
    std::printf("%-8s", "offset");
    for (int o = -shown; o <= shown; ++o)
      if (listed(o)) std::printf(" %7d", o);
    std::printf("\n%-8s", "bucket");
    for (int o = -shown; o <= shown; ++o)
      if (listed(o)) std::printf(" %7d", reference::relative_bucket(o, c.relative_buckets, c.relative_max_distance));
    std::printf("\n");
    for (int k = 0; k < h; ++k) {
      std::printf("head %-3d", k);
      for (int o = -shown; o <= shown; ++o)
        if (listed(o)) std::printf(" %7.3f", bias(k, o));
      std::printf("\n");
    }
    rows = h, cols = 2 * N - 1;
    for (int k = 0; k < h; ++k)
      for (int o = -(N - 1); o <= N - 1; ++o) {
        picture.push_back(float(bias(k, o)));
        steepest = std::max(steepest, std::fabs(double(picture.back())));
      }
  } else if (alibi) {
    if (pe == PositionalEncoding::Alibi)
      std::printf(
          "positions of %s: alibi-pairs, nothing added to the token vectors; each head's scores q.k/sqrt(dh)\n"
          "get b_ij = -m_before (i - j) for a key before the query (j < i), -m_after (j - i) for one after it\n"
          "(j > i), before the softmax; the heads go in pairs, the even one seeing only back (m_after = inf:\n"
          "-inf, no weight), the odd one only ahead, both with the slope m of %s\n",
          dir.c_str(), c.alibi_slopes.empty() ? "the pair's first head" : "the pair (config.json's alibi_slopes)");
    else
      std::printf(
          "positions of %s: alibi-symmetric, nothing added to the token vectors; each head's scores q.k/sqrt(dh)\n"
          "get b_ij = -m_h |i - j| before the softmax (the same slope on both sides of the query)\n",
          dir.c_str());
    const int shown = std::min(N - 1, 3);  // offsets −shown .. shown in the table
    std::printf("%-6s %10s %10s   the bias b_ij at offset j - i\n%28s", "", "", "", "");
    for (int o = -shown; o <= shown; ++o) std::printf(" %8d", o);
    std::printf("\n%-6s %10s %10s\n", "head", "m_before", "m_after");
    for (int k = 0; k < h; ++k) {
      const reference::AlibiSlopes m = reference::alibi_head_slopes(pe, h, k, c.alibi_slopes);
      std::printf("%-6d %10.6g %10.6g ", k, m.before, m.after);
      for (int o = -shown; o <= shown; ++o) std::printf(" %8.4f", bias(k, o));
      std::printf("\n");
    }
    rows = h, cols = 2 * N - 1;  // offsets −(N − 1) .. N − 1
    for (int k = 0; k < h; ++k)
      for (int o = -(N - 1); o <= N - 1; ++o) picture.push_back(float(bias(k, o)));
  } else {
    const int pairs = dh / 2;
    std::printf(
        "positions of %s: rope, nothing added to the token vectors; in every head q and k are turned pair by\n"
        "pair (2i, 2i+1) by the angle t*theta_i of their position t, theta_i = %g^(-2i/dh), dh = %d: %d pairs\n",
        dir.c_str(), c.pe_base, dh, pairs);
    std::printf(
        "the angles t*theta_i in radians (a pair's wavelength 2pi/theta_i: %.4g positions for pair 0, %.4g for "
        "pair %d)\n",
        2 * M_PI, 2 * M_PI / std::pow(c.pe_base, -2.0 * (pairs - 1) / dh), pairs - 1);
    const std::vector<double> angles = teach::rope_angles(N, dh, c.pe_base);  // (N, pairs), as ordo view shows them
    std::printf("%8s", "t \\ i");
    for (int i = 0; i < std::min(pairs, 8); ++i) std::printf(" %9d", i);
    std::printf("\n");
    for (int t = 0; t < std::min(N, 8); ++t) {
      std::printf("%8d", t);
      for (int i = 0; i < std::min(pairs, 8); ++i) std::printf(" %9.4f", angles[size_t(t) * pairs + i]);
      std::printf("\n");
    }
    rows = N, cols = pairs;
    for (int t = 0; t < N; ++t)
      for (int i = 0; i < pairs; ++i) picture.push_back(float(std::remainder(angles[size_t(t) * pairs + i], 2 * M_PI)));
  }
  // Shift invariance: the scores of positions 0..N−1 against those of k..k+N−1.
  std::vector<double> q(size_t(N) * dh), key(size_t(N) * dh);
  uint64_t x = 20170612;
  auto next = [&] {  // a small fixed generator: the same numbers on every machine
    x = x * 6364136223846793005ull + 1442695040888963407ull;
    return double(x >> 11) / double(1ull << 53) * 2 - 1;
  };
  for (double& v : q) v = next();
  for (double& v : key) v = next();
  auto scores = [&](int first, int head) {
    std::vector<double> a(q), b(key), out(size_t(N) * N);
    if (!alibi)
      reference::rope(a.data(), N, dh, 1, dh, c.pe_base, first),
          reference::rope(b.data(), N, dh, 1, dh, c.pe_base, first);
    for (int i = 0; i < N; ++i)
      for (int j = 0; j < N; ++j) {
        double s = 0;
        for (int e = 0; e < dh; ++e) s += a[size_t(i) * dh + e] * b[size_t(j) * dh + e];
        const double scaled = c.scale_attention ? s / std::sqrt(double(dh)) : s;  // T5's: not divided by √dh
        out[size_t(i) * N + j] = scaled + (alibi ? bias(head, (first + j) - (first + i)) : 0.0);
      }
    return out;
  };
  double worst = 0, largest = 0;
  for (int head = 0; head < (alibi ? h : 1); ++head) {
    const std::vector<double> s0 = scores(0, head);
    for (double v : s0)
      if (std::isfinite(v)) largest = std::max(largest, std::fabs(v));
    for (int shift : {1, 7, 100, 1000}) {
      const std::vector<double> s1 = scores(shift, head);
      for (size_t n = 0; n < s0.size(); ++n)  // −∞ (a side alibi's head does not see) must stay −∞
        worst = std::max(worst, s1[n] == s0[n]                 ? 0.0
                                : std::isfinite(s1[n] - s0[n]) ? std::fabs(s1[n] - s0[n])
                                                               : HUGE_VAL);
    }
  }
  std::printf(
      "\nrelative: shifting every position by k = 1, 7, 100, 1000 changes no score %s%s: %s, worst "
      "change %.3g (scores up to %.3g; random q, k of %d positions, in double)\n",
      c.scale_attention ? "q.k/sqrt(dh)" : "q.k", alibi ? " + b_ij" : "",
      worst <= 1e-9 * std::max(1.0, largest) ? "holds" : "FAILS", worst, largest, N);

  if (args.count("png")) {
    teach::Heatmap hm;
    hm.rows = rows, hm.cols = cols, hm.values.assign(picture.begin(), picture.end());
    const double m = buckets ? std::max(steepest, 1e-6)
                     : alibi ? steepest_slope(c) * (N - 1)
                             : M_PI;  // the steepest slope's far end
    hm.vmin = -m, hm.vmax = m;
    scale(args, &hm.vmin, &hm.vmax);
    hm.value_name = alibi ? "bias b_ij" : "angle t*theta_i (wrapped to -pi .. pi)";
    teach::choose_cells(rows, cols, false, &hm.cell_w, &hm.cell_h);
    const teach::Figure f{
        buckets ? "T5 bucket bias by offset, " + dir + ": one row per head, N = " + std::to_string(N)
        : alibi ? "ALiBi bias by offset, " + dir + ": one row per head, N = " + std::to_string(N)
                : "RoPE rotation angles, " + dir + ": N = " + std::to_string(N) + ", dh = " + std::to_string(dh),
        alibi ? "offset j - i (keys before the query on the left)" : "pair i", alibi ? "head" : "position t"};
    const std::string path = args["png"].as<std::string>();
    const auto drawn = teach::draw(path, f, hm);
    std::printf("\n%s", teach::describe(path, f, hm, drawn,
                                        alibi ? "heads 0 .. " + std::to_string(h - 1)
                                              : "positions t = 0 .. " + std::to_string(N - 1),
                                        alibi ? "offsets " + std::to_string(1 - N) + " .. " + std::to_string(N - 1)
                                              : "pairs 0 .. " + std::to_string(cols - 1))
                            .c_str());
  }
  return 0;
}

// `ordo pe --model DIR`: the positions a model adds to its token vectors, as it has them: the
// sinusoids of its config, or the table it learned, with the same numbers for both (row norms,
// how alike rows k apart are) and the same pictures.
int model_positions(const cxxopts::ParseResult& args) {
  for (const char* other : {"dim", "layout", "variant", "base"})
    if (args.count(other))
      throw UsageError(std::string("--model takes the positions from the model; --") + other + " does not apply");
  const std::string dir = model_dir(args);
  const Model model = Model::load(dir);
  const Config& c = model.config();
  const int d = c.d_model;
  if (c.positional_encoding == PositionalEncoding::None) {
    std::printf(
        "%s has no positions (\"positional_encoding\": \"none\"): nothing is added to its token vectors,\n"
        "so it sees every order of the same pieces alike\n",
        dir.c_str());
    return 0;
  }
  if (!added_to_input(c.positional_encoding)) {
    if (args.count("similarity-png"))
      throw UsageError("--similarity-png compares position vectors; this model adds none");
    return relative_positions(args, dir, model);
  }
  const bool learned = c.positional_encoding == PositionalEncoding::Learned;
  const int most = learned ? c.max_positions : 4096;
  const int N = args.count("positions") ? args["positions"].as<int>() : learned ? c.max_positions : 64;
  if (N <= 0 || N > most)
    throw UsageError("--positions must be in 1 .. " + std::to_string(most) +
                     (learned ? " (the model's learned table has " + std::to_string(most) + " rows)" : ""));
  std::vector<float> P(size_t(N) * d);
  if (learned)
    std::copy_n(model.weights().position_embedding, P.size(), P.begin());
  else
    P = teach::pe_table(c.pe_layout == PeLayout::Split ? PeVariant::Split : PeVariant::Paper, N, d, c.pe_base);
  const std::vector<float> sines = teach::pe_table(PeVariant::Paper, N, d, 10000.0);

  double lo = 1e300, hi = 0, mean = 0;
  int lo_t = 0, hi_t = 0;
  for (int t = 0; t < N; ++t) {
    double sq = 0;
    for (int j = 0; j < d; ++j) sq += double(P[size_t(t) * d + j]) * P[size_t(t) * d + j];
    const double n = std::sqrt(sq);
    mean += n / N;
    if (n < lo) lo = n, lo_t = t;
    if (n > hi) hi = n, hi_t = t;
  }
  const std::vector<double> C = cosines(P.data(), N, d);
  char base_text[32];
  std::snprintf(base_text, sizeof base_text, "%g", c.pe_base);
  const std::string what = learned ? "learned table P[t]"
                                   : std::string("sinusoids, ") + to_string(c.pe_layout) + " layout, base " + base_text;
  std::string pictures;
  std::vector<std::string> written;
  try {
    if (args.count("png")) {
      teach::Heatmap h;
      h.rows = N, h.cols = d, h.values.assign(P.begin(), P.end());
      h.vmin = -1, h.vmax = 1;
      if (learned) {  // a learned table is not bounded by 1: the scale is its own largest value
        float m = 0;
        for (float v : P) m = std::max(m, std::fabs(v));
        h.vmin = -m, h.vmax = m;
      }
      scale(args, &h.vmin, &h.vmax);
      h.value_name = learned ? "P[t][dim]" : "PE(t, dim)";
      teach::choose_cells(N, d, false, &h.cell_w, &h.cell_h);
      const teach::Figure f{
          "Positions of " + dir + ": " + what + ", N = " + std::to_string(N) + ", d = " + std::to_string(d),
          "dimension", "position t"};
      const std::string path = args["png"].as<std::string>();
      const auto drawn = teach::draw(path, f, h);
      written.push_back(path);
      pictures += "\n" + teach::describe(path, f, h, drawn, "positions t = 0 .. " + std::to_string(N - 1),
                                         "dimensions 0 .. " + std::to_string(d - 1));
    }
    if (args.count("similarity-png")) {
      teach::Heatmap h;
      h.values.assign(C.begin(), C.end()), h.vmin = -1, h.vmax = 1;
      scale(args, &h.vmin, &h.vmax);
      pictures += similarity_picture(args, h, N,
                                     "Cosine similarity of the positions of " + dir + ": " + what +
                                         ", N = " + std::to_string(N) + ", d = " + std::to_string(d));
      written.push_back(args["similarity-png"].as<std::string>());
    }
  } catch (...) {
    for (const std::string& path : written) std::remove(path.c_str());
    throw;
  }

  const int cols = std::min(d, int_option(args, "columns", 1, 65536));
  std::printf("positions of %s: %s, %d positions x %d dims%s\n", dir.c_str(), what.c_str(), N, d,
              cols < d ? (" (first " + std::to_string(cols) + " dims shown)").c_str() : "");
  std::printf("%8s", "t \\ dim");
  for (int j = 0; j < cols; ++j) std::printf(" %8d", j);
  std::printf("\n");
  for (int t = 0; t < std::min(N, 8); ++t) {
    std::printf("%8d", t);
    for (int j = 0; j < cols; ++j) std::printf(" %8.4f", P[size_t(t) * d + j]);
    std::printf("\n");
  }
  if (N > 8) std::printf("%8s (rows 8 .. %d not shown)\n", "...", N - 1);
  if (learned)
    std::printf("\nrow norms |P[t]|: mean %.4f, smallest %.4f (t = %d), largest %.4f (t = %d)\n", mean, lo, lo_t, hi,
                hi_t);
  else
    std::printf("\nrow norms: every row has |PE(t)| = sqrt(d/2) = %.4f (a sine and a cosine per pair)\n", mean);
  std::printf("how alike rows k apart are: the mean cosine over all pairs (t, t + k)\n");
  print_cosine_by_distance(learned ? "this model's learned table" : "this model's sinusoids", C, N);
  if (learned) print_cosine_by_distance("the paper's sinusoids", cosines(sines.data(), N, d), N);
  std::printf("%s", pictures.c_str());
  return 0;
}

}  // namespace

int cmd_pe(int argc, char** argv) {
  cxxopts::Options o("ordo pe",
                     "The sinusoidal positional encodings of \"Attention Is All You Need\" (section 3.5): "
                     "PE(t, 2i) = sin(t / base^(2i/d)), PE(t, 2i+1) = cos(t / base^(2i/d)); their "
                     "properties checked numerically, their variants side by side, and pictures.");
  o.add_options()("positions", "number of positions N (rows 0 .. N-1)", cxxopts::value<int>()->default_value("8"))(
      "dim", "model width d", cxxopts::value<int>()->default_value("16"))(
      "layout", "interleaved (sin, cos, sin, cos, ...) | split (all sines, then all cosines)",
      cxxopts::value<std::string>()->default_value("interleaved"))(
      "variant",
      "paper | split | tensor2tensor | doubled-exponent: the table to show; all: only the side-by-side comparison",
      cxxopts::value<std::string>())("base", "the base of the wavelengths",
                                     cxxopts::value<double>()->default_value("10000"))(
      "columns", "dimensions to print (the CSV always holds all)", cxxopts::value<int>()->default_value("8"))(
      "csv", "write the whole N x d table to FILE", cxxopts::value<std::string>())(
      "png", "draw the N x d table as a heatmap: FILE.png or FILE.svg (scale -1 .. 1)", cxxopts::value<std::string>())(
      "similarity-png", "draw the N x N cosines P P^T / (d/2) as a heatmap: FILE.png or FILE.svg (scale -1 .. 1)",
      cxxopts::value<std::string>())(
      "lines-png", "draw a few dimensions (--line-dims) against position, one line each: FILE.png or FILE.svg",
      cxxopts::value<std::string>())("line-dims", "the dimensions --lines-png draws",
                                     cxxopts::value<std::string>()->default_value("4,5,6,7"))(
      "no-properties", "skip the property report")(
      "model",
      "show the positions this model adds (its sinusoids or its learned table), with their norms and how "
      "alike rows k apart are; --positions, --columns and the pictures apply",
      cxxopts::value<std::string>());
  add_scale_options(o);
  cxxopts::ParseResult args;
  if (!parse(o, argc, argv, args)) return 0;
  refuse_stray_arguments(args, "--model WORD");
  for (const char* file : {"png", "similarity-png"})
    if (args.count(file)) teach::picture_format(args[file].as<std::string>());
  if (args.count("model")) return model_positions(args);
  const int N = int_option(args, "positions", 1, kMaxCount), d = int_option(args, "dim", 1, 65536);
  const int columns = int_option(args, "columns", 1, 65536);
  const double base = args["base"].as<double>();
  if (!(base > 0) || !std::isfinite(base)) throw UsageError("--base must be a positive number");
  if (uint64_t(N) * uint64_t(d) > (uint64_t(1) << 28))
    throw UsageError("--positions x --dim is too large (max 2^28 values)");
  const std::string layout_name = args["layout"].as<std::string>();
  if (layout_name != "interleaved" && layout_name != "split") throw UsageError("--layout must be interleaved or split");
  PeVariant variant = layout_name == "split" ? PeVariant::Split : PeVariant::Paper;
  const std::string variant_name = args.count("variant") ? args["variant"].as<std::string>() : "";
  const bool all = variant_name == "all";
  if (!variant_name.empty() && !all && !teach::parse_variant(variant_name, &variant))
    throw UsageError("--variant must be paper, split, tensor2tensor, doubled-exponent or all, got \"" + variant_name +
                     "\"");
  if (!variant_name.empty() && args.count("layout"))
    throw UsageError("give --layout or --variant, not both (the variant fixes the layout)");
  if (variant != PeVariant::Paper && variant != PeVariant::Split && d % 2 != 0)
    throw UsageError("--variant " + variant_name + " needs an even --dim");
  if (args.count("similarity-png") && N > 4096) throw UsageError("--similarity-png draws at most 4096 positions");
  // N² dot products of d terms each: the same budget as the property report's.
  if (args.count("similarity-png") && double(N) * N * d > kMaxProducts)
    throw UsageError("--similarity-png of " + std::to_string(N) + " positions x " + std::to_string(d) +
                     " dims is too many products to compute (N x N x d at most 4e9); try fewer");
  if (args.count("png") && (N > 4096 || d > 4096)) throw UsageError("--png draws at most 4096 positions and 4096 dims");

  // Files are named before any work: a wrong extension stops the command first.
  for (const char* file : {"png", "similarity-png", "lines-png"})
    if (args.count(file)) teach::picture_format(args[file].as<std::string>());
  std::vector<int> line_dims;
  if (args.count("lines-png")) {
    const std::string list = args["line-dims"].as<std::string>();
    for (size_t at = 0; at <= list.size();) {
      const size_t comma = std::min(list.find(',', at), list.size());
      const std::string item = list.substr(at, comma - at);
      char* end = nullptr;
      const long j = std::strtol(item.c_str(), &end, 10);
      if (item.empty() || *end != '\0' || j < 0 || j >= d)
        throw UsageError("--line-dims takes dimensions in 0 .. " + std::to_string(d - 1) + ", comma-separated; got \"" +
                         list + "\"");
      line_dims.push_back(int(j));
      at = comma + 1;
    }
    if (line_dims.size() > 7) throw UsageError("--line-dims takes 1 to 7 dimensions");
  }
  double vmin = -1, vmax = 1;
  scale(args, &vmin, &vmax);

  if (all) {
    for (const char* file : {"csv", "png", "similarity-png", "lines-png"})
      if (args.count(file))
        throw UsageError(std::string("--variant all prints the side-by-side comparison only; --") + file +
                         " writes one table: name one variant (paper, split, tensor2tensor or doubled-exponent)");
    if (d % 2 != 0) throw UsageError("--variant all needs an even --dim");
    if (uint64_t(N) * 512 > (uint64_t(1) << 26)) throw UsageError("--variant all compares at most 131072 positions");
    print_variants(N, d, base);
    if (d != 512) print_variants(N, 512, base);
    return 0;
  }

  const std::vector<float> pe = teach::pe_table(variant, N, d, base);
  const PeLayout layout = teach::layout_of(variant);
  // All the files or none: each is written whole; if a later one fails, the earlier ones go too.
  std::vector<std::string> written;
  std::string pictures;  // what to print about each picture
  // "N = 64, d = 128, interleaved layout, base 10000", naming the variant where it is not only a layout.
  char what[200];
  const bool named = variant != PeVariant::Paper && variant != PeVariant::Split;
  std::snprintf(what, sizeof what, "N = %d, d = %d, %s%s%s layout, base %g", N, d,
                named ? teach::to_string(variant) : "", named ? ", " : "",
                layout == PeLayout::Split ? "split (sines | cosines)" : "interleaved (sin, cos, ...)", base);
  try {
    if (args.count("csv")) {
      write_csv(args["csv"].as<std::string>(), pe, N, d);
      written.push_back(args["csv"].as<std::string>());
    }
    if (args.count("png")) {
      teach::Heatmap h;
      h.rows = N, h.cols = d, h.values.assign(pe.begin(), pe.end()), h.vmin = vmin, h.vmax = vmax;
      h.value_name = "PE(t, dim)";
      teach::choose_cells(N, d, false, &h.cell_w, &h.cell_h);
      const teach::Figure f{std::string("Positional encoding, ") + what, "dimension", "position t"};
      const std::string path = args["png"].as<std::string>();
      const auto drawn = teach::draw(path, f, h);
      written.push_back(path);
      pictures += "\n" + teach::describe(path, f, h, drawn, "positions t = 0 .. " + std::to_string(N - 1),
                                         "dimensions 0 .. " + std::to_string(d - 1));
    }
    if (args.count("lines-png")) {  // a few dimensions against position, one line each
      teach::LineChart chart;
      for (int j : line_dims) {
        teach::Series line;
        line.name = "dim " + std::to_string(j) +
                    (layout == PeLayout::Interleaved ? (j % 2 ? " (cos)" : " (sin)")
                     : j < (d + 1) / 2               ? " (sin)"
                                                     : " (cos)");
        for (int t = 0; t < N; ++t) line.x.push_back(t), line.y.push_back(pe[size_t(t) * d + j]);
        chart.series.push_back(std::move(line));
      }
      chart.x_min = 0, chart.x_max = std::max(1, N - 1), chart.y_min = -1, chart.y_max = 1;
      chart.plot_h = 320;
      const teach::Figure f{std::string("Positional encoding, ") + what + ": a few dimensions", "position t",
                            "PE(t, dim)"};
      const std::string path = args["lines-png"].as<std::string>();
      teach::draw(path, f, chart);
      written.push_back(path);
      pictures += "\nwrote " + path + ", \"" + f.title + "\": PE(t, dim) against t, one line per dimension.\n";
    }
    if (args.count("similarity-png")) {
      // S[s][t] = <P_s, P_t> / (d/2): every row has |P|^2 = d/2 (d even), so this is the cosine of the two positions.
      teach::Heatmap h;
      h.rows = h.cols = N, h.values.resize(size_t(N) * N), h.vmin = vmin, h.vmax = vmax;
      h.value_name = "cosine of P_s and P_t";
      const double scale = 2.0 / d;
      for (int s = 0; s < N; ++s)
        for (int t = 0; t < N; ++t) {
          double dot = 0;
          for (int j = 0; j < d; ++j) dot += double(pe[size_t(s) * d + j]) * pe[size_t(t) * d + j];
          h.values[size_t(s) * N + t] = dot * scale;
        }
      // The colours spread over the values there are: from the lowest, rounded down to a tenth, to 1
      // (unless --vmin/--vmax say otherwise).
      if (!args.count("vmin") && !args.count("vmax") && N > 1) {
        const double low = *std::min_element(h.values.begin(), h.values.end());
        h.vmin = std::floor(low * 10 + 1e-9) / 10, h.vmax = 1;
      }
      pictures += least_alike(h.values, N);
      pictures += similarity_picture(args, h, N, std::string("Cosine similarity of positions, ") + what);
      written.push_back(args["similarity-png"].as<std::string>());
    }
  } catch (...) {
    for (const std::string& path : written) std::remove(path.c_str());
    throw;
  }
  const int cols = std::min(d, columns);
  std::printf("positional encoding, %d positions x %d dims, %s layout, base %g", N, d,
              layout == PeLayout::Split ? "split" : "interleaved", base);
  if (variant == PeVariant::Tensor2Tensor || variant == PeVariant::DoubledExponent)
    std::printf(", %s frequencies w_i = %s", teach::to_string(variant), teach::frequency_rule(variant));
  std::printf(cols < d ? " (first %d dims shown)\n" : "\n", cols);
  std::printf("%8s", "t \\ dim");
  for (int j = 0; j < cols; ++j) std::printf(" %8d", j);
  std::printf("\n");
  for (int t = 0; t < N; ++t) {
    std::printf("%8d", t);
    for (int j = 0; j < cols; ++j) std::printf(" %8.4f", pe[size_t(t) * d + j]);
    std::printf("\n");
  }
  if (args.count("csv")) std::printf("wrote %s (%d x %d)\n", args["csv"].as<std::string>().c_str(), N, d);
  if (!args.count("no-properties")) print_properties(pe, N, d, variant, base);
  if (!variant_name.empty()) {
    if (d % 2 == 0)
      print_variants(N, d, base);
    else  // the variants pair sines with cosines
      std::printf("\n(the comparison of variants needs an even --dim)\n");
  }

  std::printf("%s", pictures.c_str());
  return 0;
}

}  // namespace ordo::cli
