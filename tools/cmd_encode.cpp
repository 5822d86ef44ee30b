// ordo encode, ordo compare.
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <iostream>
#include <map>
#include <numeric>

#include "engine/errors.h"
#include "tools/cli.h"
#include "tools/json_out.h"
#include "tools/ordo.h"

namespace ordo::cli {

namespace {

Pooling parse_pooling(const std::string& s) {
  if (s == "mean") return Pooling::Mean;
  if (s == "first") return Pooling::First;
  if (s == "none") return Pooling::None;
  throw UsageError("--pooling must be mean, first or none, got \"" + s + "\"");
}

const char* pooling_name(Pooling p) {
  return p == Pooling::Mean ? "mean" : p == Pooling::First ? "first" : "none";
}

// Texts run in batches of similar length, so little compute goes to padding; the results come
// back in input order.
constexpr size_t kBatchTokens = 8192;  // padded tokens per batch (B · S)
constexpr size_t kBatchTexts = 256;

std::vector<Encoded> encode_all(Pipeline& pipeline, std::vector<Tokenization> tokens, Pooling pooling, bool normalize,
                                const EncodeOptions& options) {
  std::vector<size_t> order(tokens.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return tokens[a].ids.size() < tokens[b].ids.size(); });
  const bool progress = tokens.size() >= 1000 && ::isatty(STDERR_FILENO);
  std::vector<Encoded> out(tokens.size());
  size_t done = 0;
  while (done < order.size()) {
    size_t end = done + 1;  // sorted ascending, so the last text of a batch is its longest
    while (end < order.size() && end - done < kBatchTexts &&
           (end - done + 1) * std::max<size_t>(tokens[order[end]].ids.size(), 1) <= kBatchTokens)
      ++end;
    std::vector<Tokenization> batch;
    for (size_t i = done; i < end; ++i) batch.push_back(std::move(tokens[order[i]]));
    std::vector<Encoded> results = pipeline.encode(std::move(batch), pooling, normalize, options);
    for (size_t i = done; i < end; ++i) out[order[i]] = std::move(results[i - done]);
    done = end;
    if (progress) std::cerr << "\rencoded " << done << " / " << order.size() << " texts" << std::flush;
  }
  if (progress) std::cerr << "\n";
  return out;
}

// Bytes of one text that may go to the tokenizer: 256 per allowed token (a piece is at most 16
// characters of up to 4 bytes, with room for runs of spaces), and at most 1/256 of memory.
size_t max_text_bytes(int max_tokens) {
  const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGE_SIZE);
  const uint64_t memory = pages > 0 && page > 0 ? uint64_t(pages) * uint64_t(page) : uint64_t(8) << 30;
  return size_t(std::min<uint64_t>(uint64_t(max_tokens) * 256, memory / 256));
}

// The longest prefix of at most n bytes that does not split a UTF-8 character.
size_t utf8_prefix(const std::string& s, size_t n) {
  if (n >= s.size()) return s.size();
  while (n > 0 && (static_cast<unsigned char>(s[n]) & 0xc0) == 0x80) --n;
  return n;
}

// The attention scores alone are S² floats: a text too long for this machine's memory is refused
// by name here rather than by the encoder (or the out-of-memory killer) later.
void check_fits(Pipeline& pipeline, const Tokenization& t, const std::string& where) {
  const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGE_SIZE);
  const uint64_t memory = pages > 0 && page > 0 ? uint64_t(pages) * uint64_t(page) : uint64_t(8) << 30;
  const uint64_t need = pipeline.encoder().activation_bytes(1, t.ids.size());
  if (need > memory / 2)
    throw InputError(where, "text of " + std::to_string(t.ids.size()) + " tokens needs " + std::to_string(need >> 20) +
                                " MiB of working memory, more than half of this machine's " +
                                std::to_string(memory >> 20) + " MiB (lower --max-tokens, or add --truncate)");
}

void add_model_options(cxxopts::Options& o) {
  o.add_options()("model", "model directory (default: the built-in model)", cxxopts::value<std::string>())(
      "threads", "threads for the matrix work (0: one per core)", cxxopts::value<int>()->default_value("0"));
}

double cosine(const std::vector<float>& a, const std::vector<float>& b) {
  double ab = 0, aa = 0, bb = 0;
  for (size_t i = 0; i < a.size(); ++i) ab += double(a[i]) * b[i], aa += double(a[i]) * a[i], bb += double(b[i]) * b[i];
  return aa > 0 && bb > 0 ? ab / std::sqrt(aa * bb) : (aa == bb ? 1.0 : 0.0);
}

double max_abs_diff(const float* a, const float* b, size_t n) {
  double m = 0;
  for (size_t i = 0; i < n; ++i) m = std::max(m, std::fabs(double(a[i]) - b[i]));
  return m;
}

// `s` padded with spaces to `width` characters on screen: UTF-8 continuation bytes (10xxxxxx) take
// no column of their own, so "▁the" is 4 wide, not 6.
std::string pad_right(const std::string& s, size_t width) {
  size_t shown = 0;
  for (unsigned char c : s) shown += (c & 0xC0) != 0x80;
  return s + std::string(width > shown ? width - shown : 0, ' ');
}

double l2_diff(const float* a, const float* b, size_t n) {
  double s = 0;
  for (size_t i = 0; i < n; ++i) s += (double(a[i]) - b[i]) * (double(a[i]) - b[i]);
  return std::sqrt(s);
}

}  // namespace

int cmd_encode(int argc, char** argv) {
  cxxopts::Options o(
      "ordo encode",
      "Encode texts into vectors. Texts come from the arguments, else one per line from --input FILE or stdin.");
  add_model_options(o);
  o.add_options()("input", "read texts from FILE, one per line (- for stdin)", cxxopts::value<std::string>())(
      "pooling", "mean | first | none (one vector per token)", cxxopts::value<std::string>()->default_value("mean"))(
      "normalize", "scale each vector to unit L2 length")("no-pe", "skip the positional encoding (ablation)")(
      "json", "one JSON object per text, in input order")("max-tokens", "longest text accepted, in tokens",
                                                          cxxopts::value<int>()->default_value("8192"))(
      "truncate", "cut texts longer than --max-tokens instead of failing")("texts", "texts",
                                                                           cxxopts::value<std::vector<std::string>>());
  o.parse_positional({"texts"});
  o.positional_help("[TEXT ...]");
  cxxopts::ParseResult args;
  if (!parse(o, argc, argv, args)) return 0;

  const Pooling pooling = parse_pooling(args["pooling"].as<std::string>());
  const int max_tokens = args["max-tokens"].as<int>();
  if (max_tokens <= 0) throw UsageError("--max-tokens must be positive");
  set_num_threads(args["threads"].as<int>());
  Pipeline pipeline(model_dir(args));

  std::vector<std::string> where;
  std::vector<std::string> texts = read_texts(args, &where);
  const Config& config = pipeline.model().config();
  // A learned position table has no row past max_positions: the same limit, stated as the model's.
  const bool learned = config.positional_encoding == PositionalEncoding::Learned;
  const int limit = learned ? std::min(max_tokens, config.max_positions) : max_tokens;
  const std::string limit_name = learned && config.max_positions < max_tokens
                                     ? "the model's max_positions " + std::to_string(config.max_positions)
                                     : "--max-tokens " + std::to_string(max_tokens);
  const size_t max_bytes = max_text_bytes(limit);
  std::vector<Tokenization> tokens;
  for (size_t i = 0; i < texts.size(); ++i) {
    if (texts[i].size() > max_bytes) {  // tokenizing takes ~70 bytes of memory per byte of text
      if (!args.count("truncate"))
        throw InputError(where[i], "text is " + std::to_string(texts[i].size()) + " bytes, more than " + limit_name +
                                       " allows (" + std::to_string(max_bytes) +
                                       " bytes; raise it, or add --truncate)");
      texts[i].resize(utf8_prefix(texts[i], max_bytes));
    }
    tokens.push_back(pipeline.tokenize(texts[i], where[i]));
    Tokenization& t = tokens.back();
    if (int(t.ids.size()) > limit) {
      if (!args.count("truncate"))
        throw InputError(where[i], "text has " + std::to_string(t.ids.size()) + " tokens, more than " + limit_name +
                                       " (raise it, or add --truncate)");
      const bool keep_eos = config.add_eos;  // the cut text still ends the way the model expects
      t.ids.resize(limit);
      t.pieces.resize(limit);
      if (keep_eos) {
        t.ids.back() = pipeline.tokenizer().eos_id();
        t.pieces.back() = pipeline.tokenizer().piece(t.ids.back());
      }
    }
    check_fits(pipeline, t, where[i]);
  }
  EncodeOptions options;
  options.positions = !args.count("no-pe");
  const std::vector<Encoded> out = encode_all(pipeline, std::move(tokens), pooling, args.count("normalize"), options);

  const int d = pipeline.model().config().d_model;
  std::string text_out;
  for (size_t i = 0; i < out.size(); ++i) {
    const Encoded& e = out[i];
    if (args.count("json")) {
      nlohmann::json j = {{"text", texts[i]}, {"pieces", e.tokens.pieces}, {"ids", e.tokens.ids}};
      if (pooling == Pooling::None) {
        nlohmann::json rows = nlohmann::json::array();
        for (int r = 0; r < e.rows; ++r) rows.push_back(json_floats(e.values.data() + size_t(r) * d, d));
        j["hidden"] = std::move(rows);
      } else {
        j["embedding"] = json_floats(e.values.data(), d);
      }
      // A tokenizer's pieces are bytes it chose; one that is not UTF-8 is printed with U+FFFD.
      text_out += j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
    } else {
      text_out += "\"" + texts[i] + "\"\n  " + std::to_string(e.tokens.ids.size()) + " pieces:";
      for (const std::string& p : e.tokens.pieces) text_out += " " + p;
      text_out += "\n";
      for (int r = 0; r < e.rows; ++r) {
        const float* v = e.values.data() + size_t(r) * d;
        double sq = 0;
        for (int j = 0; j < d; ++j) sq += double(v[j]) * v[j];
        char norm[64];
        std::snprintf(norm, sizeof norm, "  |v| = %.4f", std::sqrt(sq));
        const std::string label = pooling == Pooling::None ? "  " + e.tokens.pieces[r] + ": "
                                                           : std::string("  ") + pooling_name(pooling) +
                                                                 "-pooled, d=" + std::to_string(d) + ": ";
        text_out += label + preview(v, d) + norm + "\n";
      }
    }
  }
  std::cout << text_out << std::flush;
  return 0;
}

int cmd_compare(int argc, char** argv) {
  cxxopts::Options o("ordo compare",
                     "The word-order report: encode two texts with and without the positional encoding and measure "
                     "how far apart they are.");
  add_model_options(o);
  o.add_options()("json", "print the report as one JSON object")("texts", "TEXT_A TEXT_B",
                                                                 cxxopts::value<std::vector<std::string>>());
  o.parse_positional({"texts"});
  o.positional_help("TEXT_A TEXT_B");
  cxxopts::ParseResult args;
  if (!parse(o, argc, argv, args)) return 0;
  if (args.count("texts") == 0 || args["texts"].as<std::vector<std::string>>().size() != 2)
    throw UsageError(
        "needs exactly two texts, e.g. ordo compare \"the cat sat on the mat\" \"the mat sat on the cat\"");
  const auto texts = args["texts"].as<std::vector<std::string>>();
  set_num_threads(args["threads"].as<int>());
  Pipeline pipeline(model_dir(args));
  const int d = pipeline.model().config().d_model;
  const bool has_positions = pipeline.model().config().positional_encoding != PositionalEncoding::None;

  const Tokenization a = pipeline.tokenize(texts[0], "argument 1"), b = pipeline.tokenize(texts[1], "argument 2");
  check_fits(pipeline, a, "argument 1");
  check_fits(pipeline, b, "argument 2");
  if (pipeline.model().config().positional_encoding == PositionalEncoding::Learned) {
    const int max_positions = pipeline.model().config().max_positions;
    const std::pair<const Tokenization*, const char*> both[] = {{&a, "argument 1"}, {&b, "argument 2"}};
    for (const auto& [t, where] : both)
      if (int(t->ids.size()) > max_positions)
        throw InputError(where, "text has " + std::to_string(t->ids.size()) +
                                    " tokens, more than the model's max_positions " + std::to_string(max_positions));
  }
  std::vector<int32_t> sa = a.ids, sb = b.ids;
  std::sort(sa.begin(), sa.end());
  std::sort(sb.begin(), sb.end());
  const bool reordered = sa == sb;

  // Per-token rows with and without positions; the pooled vector is their mean.
  EncodeOptions with_pe, without_pe;
  without_pe.positions = false;
  const auto rows_pe = pipeline.encode({a, b}, Pooling::None, false, with_pe);
  const auto rows_nope = pipeline.encode({a, b}, Pooling::None, false, without_pe);
  auto mean = [&](const Encoded& e) {
    std::vector<float> m(d, 0.0f);
    std::vector<double> s(d, 0.0);
    for (int r = 0; r < e.rows; ++r)
      for (int j = 0; j < d; ++j) s[j] += e.values[size_t(r) * d + j];
    for (int j = 0; j < d && e.rows > 0; ++j) m[j] = float(s[j] / e.rows);
    return m;
  };
  const auto pa = mean(rows_pe[0]), pb = mean(rows_pe[1]), na = mean(rows_nope[0]), nb = mean(rows_nope[1]);
  const double cos_pe = cosine(pa, pb), cos_nope = cosine(na, nb);
  const double diff_pe = max_abs_diff(pa.data(), pb.data(), d), diff_nope = max_abs_diff(na.data(), nb.data(), d);

  // Match the k-th occurrence of each id in A with the k-th occurrence in B.
  struct Move {
    int i, j;
    double with_pe, without_pe;
  };
  std::vector<Move> moves;
  if (reordered) {
    std::map<int32_t, std::vector<int>> where_in_b;
    for (int j = int(b.ids.size()) - 1; j >= 0; --j) where_in_b[b.ids[j]].push_back(j);
    for (int i = 0; i < int(a.ids.size()); ++i) {
      auto& slots = where_in_b[a.ids[i]];
      const int j = slots.back();
      slots.pop_back();
      moves.push_back({i, j, l2_diff(&rows_pe[0].values[size_t(i) * d], &rows_pe[1].values[size_t(j) * d], d),
                       l2_diff(&rows_nope[0].values[size_t(i) * d], &rows_nope[1].values[size_t(j) * d], d)});
    }
  }

  if (args.count("json")) {
    auto side = [](const std::string& text, const Tokenization& t) {
      return nlohmann::json{{"text", text}, {"pieces", t.pieces}, {"ids", t.ids}};
    };
    nlohmann::json tokens = nlohmann::json::array();
    for (const Move& m : moves)
      tokens.push_back({{"piece", a.pieces[m.i]},
                        {"position_a", m.i},
                        {"position_b", m.j},
                        {"moved_with_pe", m.with_pe},
                        {"moved_without_pe", m.without_pe}});
    nlohmann::json j = {{"a", side(texts[0], a)},
                        {"b", side(texts[1], b)},
                        {"same_tokens_reordered", reordered},
                        {"cosine", {{"with_pe", cos_pe}, {"without_pe", cos_nope}}},
                        {"max_abs_diff", {{"with_pe", diff_pe}, {"without_pe", diff_nope}}},
                        {"tokens", tokens}};
    std::cout << j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
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
  std::printf("  cosine similarity              %15.9f   %17.9f\n", cos_pe, cos_nope);
  std::printf("  max |A - B|                    %15.3g   %17.3g\n", diff_pe, diff_nope);
  if (!moves.empty()) {
    std::printf("\nper token: how far its output vector moved between A and B (L2 distance)\n");
    std::printf("  %-14s %5s %5s   %15s   %17s\n", "piece", "in A", "in B", "with positions", "without positions");
    for (const Move& m : moves)
      std::printf("  %s %5d %5d   %15.6f   %17.3g\n", pad_right(a.pieces[m.i], 14).c_str(), m.i, m.j, m.with_pe,
                  m.without_pe);
  }
  std::printf("\n");
  if (!reordered) {
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
    for (const Move& m : moves) worst_moved = std::max(worst_moved, m.without_pe);
    std::printf(
        "Without positional encoding the encoder sees the same bag of tokens: the pooled vectors match "
        "(cosine %.6f) and every token's output only moves with it (by at most %.1e). With positions the "
        "pooled cosine falls to %.4f: the order changes the result.\n",
        cos_nope, worst_moved, cos_pe);
  }
  return 0;
}

}  // namespace ordo::cli
