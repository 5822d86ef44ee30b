// ordo encode: texts -> vectors, pooled or one per token, human-readable or JSON.
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <iostream>
#include <numeric>

#include <ordo/errors.h>
#include <ordo/ordo.h>

#include "common/memory.h"
#include "tools/cli/cli.h"
#include "tools/cli/json_out.h"

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
  return size_t(std::min<uint64_t>(uint64_t(max_tokens) * 256, machine_memory_bytes() / 256));
}

// The longest prefix of at most n bytes that does not split a UTF-8 character.
size_t utf8_prefix(const std::string& s, size_t n) {
  if (n >= s.size()) return s.size();
  while (n > 0 && (static_cast<unsigned char>(s[n]) & 0xc0) == 0x80) --n;
  return n;
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
  // --max-tokens, or less where the model or this machine's memory allows less (stated as theirs).
  const bool flag_limits = max_tokens <= pipeline.max_tokens();
  const int limit = flag_limits ? max_tokens : pipeline.max_tokens();
  const std::string limit_name =
      flag_limits ? "--max-tokens " + std::to_string(max_tokens) : pipeline.max_tokens_reason();
  const std::string advice = flag_limits ? "raise it, or add --truncate" : "add --truncate to cut it";
  const size_t max_bytes = max_text_bytes(limit);
  std::vector<Tokenization> tokens;
  for (size_t i = 0; i < texts.size(); ++i) {
    if (texts[i].size() > max_bytes) {  // tokenizing takes ~70 bytes of memory per byte of text
      if (!args.count("truncate"))
        throw InputError(where[i], "text is " + std::to_string(texts[i].size()) + " bytes, more than " + limit_name +
                                       " allows (" + std::to_string(max_bytes) + " bytes; " + advice + ")");
      texts[i].resize(utf8_prefix(texts[i], max_bytes));
    }
    tokens.push_back(pipeline.tokenize(texts[i], where[i]));
    Tokenization& t = tokens.back();
    if (int(t.ids.size()) > limit) {
      if (!args.count("truncate"))
        throw InputError(where[i], "text has " + std::to_string(t.ids.size()) + " tokens, more than " + limit_name +
                                       " (" + advice + ")");
      pipeline.truncate(t, limit);
    }
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

}  // namespace ordo::cli
