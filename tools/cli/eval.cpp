// ordo eval: held-out masked accuracy, word-order preferences and accuracy by position, for one or
// more models with a masked-language-model head. The rule is <ordo/eval.h>'s; this file reads the
// file, runs it for each model and prints the tables (or JSON, or a chart).
#include <sys/stat.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>

#include <ordo/errors.h>
#include <ordo/eval.h>
#include <ordo/ordo.h>

#include "common/regular_file.h"
#include "tools/cli/cli.h"
#include "tools/teach/figure.h"

namespace ordo::cli {

namespace {

struct Result {
  std::string dir;
  PositionalEncoding positions;
  eval::Report report;
};

double share(long part, long whole) {
  return whole > 0 ? double(part) / double(whole) : 0.0;
}

std::string percent(long part, long whole) {
  if (whole == 0) return "-";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f", 100.0 * double(part) / double(whole));
  return buf;
}

std::string positions_name(const Result& m) {
  if (m.positions == PositionalEncoding::Learned) return "learned " + std::to_string(m.report.limit);
  return to_string(m.positions);
}

nlohmann::json order_json(const eval::Order& o) {
  return {{"lines", o.lines},
          {"preferred", o.preferred},
          {"ties", o.ties},
          {"other", o.other},
          {"preferred_share", share(o.preferred, o.lines)},
          {"left_out", o.left_out},
          {"max_abs_difference", o.max_abs_difference},
          {"verdicts", o.verdicts}};
}

nlohmann::json report_json(const Result& m) {
  const eval::Report& r = m.report;
  nlohmann::json buckets = nlohmann::json::array();
  for (const eval::Bucket& b : r.buckets)
    buckets.push_back({{"from", b.from},
                       {"to", b.to},
                       {"masked", b.masked},
                       {"top1", share(b.top1, b.masked)},
                       {"top5", share(b.top5, b.masked)},
                       {"top1_hits", b.top1},
                       {"top5_hits", b.top5}});
  return {{"model", m.dir},
          {"positional_encoding", to_string(m.positions)},
          {"position_limit", r.limit > 0 ? nlohmann::json(r.limit) : nlohmann::json(nullptr)},
          {"lines", r.evaluated},
          {"max_pieces", r.max_pieces > 0 ? nlohmann::json(r.max_pieces) : nlohmann::json(nullptr)},
          {"left_out", r.left_out},
          {"empty", r.empty},
          {"masked", r.masked},
          {"top1", share(r.top1, r.masked)},
          {"top5", share(r.top5, r.masked)},
          {"top1_hits", r.top1},
          {"top5_hits", r.top5},
          {"order", {{"lines", r.order_lines}, {"shuffle", order_json(r.shuffle)}, {"swap", order_json(r.swap)}}},
          {"buckets", buckets}};
}

// pieces: each line's number of pieces, sorted.
void print_tables(const std::string& input, int lines, bool positions, int offset, const std::vector<Result>& results,
                  const std::vector<int>& pieces, const std::vector<HeadIndex>& masked) {
  int name_width = 5;
  for (const Result& m : results) name_width = std::max(name_width, columns(m.dir));
  const std::string name = pad_right("model", name_width);
  std::printf("ordo eval: %d lines of %s%s; masking seed %llu + line number\n", lines, input.c_str(),
              positions ? "" : ", run WITHOUT positions (--no-pe)", (unsigned long long)eval::kSeed);
  if (offset > 0) std::printf("every line starts at position %d (--offset)\n", offset);
  if (!masked.empty()) std::printf("heads switched off (--mask-head): %s\n", masked_heads_text(masked).c_str());
  if (!pieces.empty())
    std::printf("pieces per line (%s's tokenizer): median %d, from %d to %d\n", results[0].dir.c_str(),
                pieces[pieces.size() / 2], pieces.front(), pieces.back());

  std::printf("\nmasked pieces (15%% of each line's pieces, masked all at once)\n");
  int pe_width = 12;  // "alibi-symmetric" is wider than the others
  for (const Result& m : results) pe_width = std::max(pe_width, int(positions_name(m).size()));
  std::printf("  %s  %-*s %6s %9s %7s %8s %8s\n", name.c_str(), pe_width, "positions", "lines", "left out", "masked",
              "top-1 %", "top-5 %");
  for (const Result& m : results) {
    const eval::Report& r = m.report;
    std::printf("  %s  %-*s %6d %9d %7ld %8s %8s\n", pad_right(m.dir, name_width).c_str(), pe_width,
                positions_name(m).c_str(), r.evaluated, r.left_out, r.masked, percent(r.top1, r.masked).c_str(),
                percent(r.top5, r.masked).c_str());
  }

  if (results.size() > 1) {
    std::printf(
        "\npaired: top-1 on the masked pieces both models were scored on, each model against the first\n"
        "(McNemar's exact test over the pieces exactly one of the two gets right; 95%% interval of the\n"
        "difference, paired normal approximation; one trained model each: it says nothing of training seeds)\n");
    std::printf("  %s  %7s %8s %8s %12s %20s %9s\n", name.c_str(), "pieces", "only 1st", "only it", "difference",
                "95% interval", "p");
    for (size_t k = 1; k < results.size(); ++k) {
      const eval::Paired q = eval::paired_top1(results[0].report, results[k].report);
      std::printf("  %s  %7ld %8ld %8ld %+9.1f pt [%+6.1f, %+6.1f] pt %9.2g\n",
                  pad_right(results[k].dir, name_width).c_str(), q.pieces, q.a_only, q.b_only, 100 * q.difference,
                  100 * q.low, 100 * q.high, q.p);
    }
  }

  int order_lines = 0;
  for (const Result& m : results) order_lines = std::max(order_lines, m.report.order_lines);
  if (order_lines > 0) {
    std::printf("\nword order: the natural text's pseudo-log-likelihood against a shuffle's and one adjacent swap's\n");
    std::printf("(lines of %d-%d pieces; preferred = natural scored strictly higher)\n", eval::kOrderMin,
                eval::kOrderMax);
    std::printf("  %s  %-9s %6s %9s %6s %6s %6s   %-6s %6s %9s %6s %6s %6s\n", name.c_str(), "versus", "lines",
                "preferred", "%", "ties", "other", "versus", "lines", "preferred", "%", "ties", "other");
    for (const Result& m : results) {
      const eval::Order &s = m.report.shuffle, &w = m.report.swap;
      std::printf("  %s  %-9s %6d %9d %6s %6d %6d   %-6s %6d %9d %6s %6d %6d\n", pad_right(m.dir, name_width).c_str(),
                  "shuffle", s.lines, s.preferred, percent(s.preferred, s.lines).c_str(), s.ties, s.other, "swap",
                  w.lines, w.preferred, percent(w.preferred, w.lines).c_str(), w.ties, w.other);
    }
  }

  int last = -1;  // the last bucket any model has
  for (const Result& m : results)
    if (!m.report.buckets.empty()) last = std::max(last, m.report.buckets.back().from / eval::kBucket);
  if (last >= 0) {
    const char* titles[] = {"top-1 % by position", "top-5 % by position", "masked pieces by position"};
    for (int what = 0; what < 3; ++what) {
      std::printf("\n%s%s\n", titles[what], what == 0 ? " (buckets of 32 positions)" : "");
      std::printf("  %s", name.c_str());
      for (int k = 0; k <= last; ++k) {
        const std::string head = std::to_string(k * eval::kBucket) + "-" + std::to_string(k * eval::kBucket + 31);
        std::printf(" %7s", head.c_str());
      }
      std::printf("\n");
      for (const Result& m : results) {
        std::printf("  %s", pad_right(m.dir, name_width).c_str());
        for (int k = 0; k <= last; ++k) {
          const eval::Bucket* b = nullptr;
          for (const eval::Bucket& x : m.report.buckets)
            if (x.from == k * eval::kBucket) b = &x;
          std::string cell = "-";
          if (b && what == 0) cell = percent(b->top1, b->masked);
          if (b && what == 1) cell = percent(b->top5, b->masked);
          if (b && what == 2) cell = std::to_string(b->masked);
          std::printf(" %7s", cell.c_str());
        }
        std::printf("\n");
      }
    }
  }

  bool noted = false;
  for (const Result& m : results) {
    const eval::Report& r = m.report;
    if (r.left_out == 0 && r.empty == 0) continue;
    if (!noted) std::printf("\n");
    noted = true;
    if (r.left_out > 0 && r.max_pieces > 0 && (r.limit == 0 || r.max_pieces < r.limit))
      std::printf("%s: %d of %d lines left out: longer than --max-pieces %d (lines are never cut short)\n",
                  m.dir.c_str(), r.left_out, r.lines, r.max_pieces);
    else if (r.left_out > 0)
      std::printf("%s: %d of %d lines left out: longer than its %d learned positions%s (lines are never cut short)\n",
                  m.dir.c_str(), r.left_out, r.lines, r.limit,
                  offset > 0 ? (" from position " + std::to_string(offset)).c_str() : "");
    if (r.empty > 0) std::printf("%s: %d empty lines: nothing to mask\n", m.dir.c_str(), r.empty);
  }
}

}  // namespace

int cmd_eval(int argc, char** argv) {
  cxxopts::Options o("ordo eval",
                     "Held-out evaluation of masked-language models: masked top-1/top-5 (a fixed seed), natural word "
                     "order against a shuffle and one adjacent swap, and accuracy by position.");
  o.add_options()("model", "model directory with a head (repeat for several)",
                  cxxopts::value<std::vector<std::string>>())("input", "a text file, one text per line",
                                                              cxxopts::value<std::string>())(
      "no-pe", "run without the positional encoding (the ablation)")(
      "max-pieces",
      "leave out (and count) lines of more than N pieces, e.g. 32 to compare on the lines a 32-row "
      "learned table can run",
      cxxopts::value<int>()->default_value("0"))(
      "offset",
      "start every line at position K instead of 0: the same texts at unseen positions (sinusoidal and "
      "learned positions move; rope and alibi see only the offsets i - j)",
      cxxopts::value<int>()->default_value("0"))("json", "print one JSON object")(
      "png", "draw top-1 accuracy against position, one line per model (PNG, or SVG by the name's extension)",
      cxxopts::value<std::string>())("threads", "threads for the matrix work (0: one per core)",
                                     cxxopts::value<int>()->default_value("0"));
  add_compute_type_option(o);
  add_mask_head_option(o);
  cxxopts::ParseResult args;
  if (!parse(o, argc, argv, args)) return 0;
  if (!args.unmatched().empty()) throw UsageError("unexpected argument \"" + args.unmatched()[0] + "\"");
  if (!args.count("input")) throw UsageError("needs --input FILE (one text per line)");
  std::vector<std::string> dirs;
  if (args.count("model"))
    dirs = args["model"].as<std::vector<std::string>>();
  else
    dirs.push_back(model_dir(args));
  set_num_threads(threads_option(args));
  const ComputeType compute_type = compute_type_option(args);
  const std::vector<HeadIndex> masked = mask_heads(args);
  const std::string input = args["input"].as<std::string>();
  const std::vector<std::string> texts = read_texts(args, max_text_bytes(1 << 16));
  const bool positions = !args.count("no-pe");
  if (args.count("png")) teach::picture_format(args["png"].as<std::string>());  // a wrong name fails first
  const int train_length = training_length(dirs);

  eval::Options options;
  options.positions = positions;
  options.max_pieces = int_option(args, "max-pieces", 0, kMaxCount, " (0: no limit)");
  options.offset = int_option(args, "offset", 0, 1000000);
  std::vector<Result> results;
  std::vector<int> pieces;  // per line, sorted (the first model's tokenizer)
  for (const std::string& dir : dirs) {
    Pipeline pipeline(dir);
    pipeline.set_compute_type(compute_type);
    apply_mask_heads(pipeline, masked);
    pipeline.require_head(true);  // before the file is tokenized: the model is the first thing to be wrong
    std::vector<std::vector<int32_t>> lines;
    lines.reserve(texts.size());
    for (size_t i = 0; i < texts.size(); ++i)
      lines.push_back(pipeline.tokenizer().encode(texts[i], input + ": line " + std::to_string(i + 1)).ids);
    if (results.empty()) {
      for (const auto& l : lines) pieces.push_back(int(l.size()));
      std::sort(pieces.begin(), pieces.end());
    }
    results.push_back({dir, pipeline.config().positional_encoding, eval::evaluate(pipeline, lines, options)});
  }

  if (args.count("png")) {
    // Per bucket of positions, each model's top-1 (full colour) and top-5 (pale) as bars with 95%
    // intervals (Wilson's score interval for a proportion), and the masked pieces counted above.
    size_t slash = input.find_last_of('/');
    const std::string data = slash == std::string::npos ? input : input.substr(slash + 1);
    teach::Figure figure{std::string(results.size() <= 3 ? "Masked accuracy" : "Masked top-1 accuracy") +
                             " by position, " + data + " (" + std::to_string(texts.size()) + " lines)" +
                             (positions ? "" : ", run without positions"),
                         "position of the masked piece (buckets of 32; n = masked pieces in the bucket)",
                         "accuracy (%), bars: 95% intervals"};
    teach::LineChart chart;
    chart.bars = true;
    chart.bar_group = 0.8 * eval::kBucket;
    int last = 0;
    auto wilson = [](long hits, long n, double* lo, double* hi) {
      const double z = 1.96, p = double(hits) / n, z2n = z * z / n;
      const double centre = (p + z2n / 2) / (1 + z2n),
                   half = z * std::sqrt(p * (1 - p) / n + z2n / (4 * n)) / (1 + z2n);
      *lo = 100 * (centre - half), *hi = 100 * (centre + half);
    };
    // Top-5 beside top-1 for up to three models; with more, top-1 alone keeps the bars readable. The
    // count of masked pieces stands once per bucket, over the first model's bars.
    const bool with_top5 = results.size() <= 3;
    bool counted = false;
    for (size_t k = 0; k < results.size(); ++k) {
      const Result& m = results[k];
      teach::Series top1, top5;
      top1.name = m.dir + " top-1", top5.name = m.dir + " top-5";
      top1.colour = top5.colour = int(k);
      top5.light = true;
      for (const eval::Bucket& b : m.report.buckets) {
        double lo, hi;
        for (teach::Series* s : {&top1, &top5}) {
          const long hits = s == &top1 ? b.top1 : b.top5;
          wilson(hits, b.masked, &lo, &hi);
          s->x.push_back((b.from + b.to + 1) / 2.0);
          s->y.push_back(100.0 * share(hits, b.masked));
          s->lo.push_back(lo), s->hi.push_back(hi);
          s->notes.push_back(!counted && (s == &top5) == with_top5 ? "n=" + std::to_string(b.masked) : "");
        }
        last = std::max(last, b.to + 1);
      }
      if (m.report.buckets.empty() && m.report.left_out > 0) {
        top1.name = m.dir + ": no text fits its " + std::to_string(m.report.limit) + " positions";
        chart.series.push_back(std::move(top1));
        continue;
      }
      counted = counted || !m.report.buckets.empty();
      chart.series.push_back(std::move(top1));
      if (with_top5) chart.series.push_back(std::move(top5));
    }
    chart.x_min = 0;
    chart.x_max = std::max(last, 2 * eval::kBucket);
    chart.y_min = 0;
    if (train_length > 0) {
      chart.marker_x = train_length;
      chart.marker_label = "training length " + std::to_string(train_length);
    }
    teach::draw(args["png"].as<std::string>(), figure, chart);
  }

  if (args.count("json")) {
    nlohmann::json models = nlohmann::json::array();
    for (const Result& m : results) models.push_back(report_json(m));
    nlohmann::json off = nlohmann::json::array();
    for (const HeadIndex& h : masked) off.push_back({h.layer, h.head});
    const nlohmann::json j = {{"masked_heads", off},
                              {"input", input},
                              {"lines", texts.size()},
                              {"positions", positions},
                              {"seed", eval::kSeed},
                              {"bucket", eval::kBucket},
                              {"order_pieces", {eval::kOrderMin, eval::kOrderMax}},
                              {"models", models}};
    std::cout << j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
    return 0;
  }
  print_tables(input, int(texts.size()), positions, positions ? options.offset : 0, results, pieces, masked);
  if (args.count("png")) {
    const std::string marked = train_length > 0 ? ", training length " + std::to_string(train_length) + " marked" : "";
    std::printf(
        "\nwrote %s: %s accuracy by position, bars per bucket of 32 with 95%% intervals, one colour per model%s\n",
        args["png"].as<std::string>().c_str(), dirs.size() <= 3 ? "top-1 and top-5" : "top-1", marked.c_str());
  }
  return 0;
}

}  // namespace ordo::cli
