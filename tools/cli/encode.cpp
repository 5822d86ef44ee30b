// ordo encode: texts -> vectors, pooled or one per token, human-readable or JSON.
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <exception>
#include <iostream>
#include <memory>
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

// Input is read, encoded and printed a window of texts at a time, so memory is bounded by the
// window whatever the input's length. Inside a window the texts are sorted by length into
// batches. The first window is small, so the first vectors print at once (and a reader that stops
// after them, `| head -1`, ends the command one small window later); each next window is twice as
// large up to kWindowTexts, so batches of similar lengths can be found. A window of short texts
// splits into whole batches (from 256 texts on, window sizes are multiples of kBatchTexts), so no
// batch of 8 tokens or fewer is made unless the input ends there.
constexpr size_t kFirstWindowTexts = 64;
constexpr size_t kWindowTexts = 16 * kBatchTexts;
constexpr size_t kWindowTokens = 1 << 16;          // a window ends once it holds this many tokens
constexpr size_t kWindowBytes = size_t(16) << 20;  // ... or this many bytes of text

std::vector<Encoded> encode_all(Pipeline& pipeline, std::vector<Tokenization> tokens, Pooling pooling, bool normalize,
                                const EncodeOptions& options) {
  std::vector<size_t> order(tokens.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return tokens[a].ids.size() < tokens[b].ids.size(); });
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
  }
  return out;
}

// The longest prefix of at most n bytes that does not split a UTF-8 character.
size_t utf8_prefix(const std::string& s, size_t n) {
  if (n >= s.size()) return s.size();
  while (n > 0 && (static_cast<unsigned char>(s[n]) & 0xc0) == 0x80) --n;
  return n;
}

// The rules a text meets before it is encoded, and what --truncate does to one that does not.
struct TextRules {
  int limit;               // tokens
  std::string limit_name;  // what sets the limit, for the message
  size_t max_bytes;
  std::string advice;  // how to get past it
  bool truncate;
};

// The text's tokens as it will be encoded (cut when --truncate cuts it: *truncated says so, and
// line.text keeps the text as read); throws InputError(line.where) for a text that cannot be.
Tokenization prepare(Pipeline& pipeline, LineReader::Line& line, const TextRules& rules, bool* truncated) {
  *truncated = false;
  if (!line.problem.empty()) throw InputError(line.where, line.problem);
  if (line.bytes > rules.max_bytes) {  // tokenizing takes ~70 bytes of memory per byte of text
    if (!rules.truncate)
      throw InputError(line.where, "text is " + std::to_string(line.bytes) + " bytes, more than " + rules.limit_name +
                                       " allows (" + std::to_string(rules.max_bytes) + " bytes; " + rules.advice + ")");
    // The cut falls before the character that crosses max_bytes; more than 3 bytes back can only
    // be a run of continuation bytes, which is not UTF-8 (and would otherwise leave nothing).
    const size_t cut = utf8_prefix(line.text, rules.max_bytes);
    if (rules.max_bytes - cut > 3) throw InputError(line.where, "invalid UTF-8 at byte " + std::to_string(cut));
    *truncated = true;
    Tokenization t = pipeline.tokenize(std::string_view(line.text).substr(0, cut), line.where);
    pipeline.truncate(t, rules.limit);
    return t;
  }
  Tokenization t = pipeline.tokenize(line.text, line.where);
  if (int(t.ids.size()) > rules.limit) {
    if (!rules.truncate)
      throw InputError(line.where, "text has " + std::to_string(t.ids.size()) + " tokens, more than " +
                                       rules.limit_name + " (" + rules.advice + ")");
    pipeline.truncate(t, rules.limit);
    *truncated = true;
  }
  return t;
}

// One text's result as `ordo encode` prints it.
// Keys in the documented order: text, truncated (when cut), pieces, ids, embedding or hidden. A
// text of no tokens has no vector: its embedding is null, not zeros.
void format(std::string& out, const std::string& text, bool truncated, const Encoded& e, int d, Pooling pooling,
            bool json) {
  const bool empty = e.tokens.ids.empty();
  if (json) {
    using ojson = nlohmann::ordered_json;
    ojson j = {{"text", text}};
    if (truncated) j["truncated"] = true;
    j["pieces"] = e.tokens.pieces;
    j["ids"] = e.tokens.ids;
    if (pooling == Pooling::None) {
      ojson rows = ojson::array();
      for (int r = 0; r < e.rows; ++r) rows.push_back(json_floats<ojson>(e.values.data() + size_t(r) * d, d));
      j["hidden"] = std::move(rows);
    } else {
      j["embedding"] = empty ? ojson(nullptr) : json_floats<ojson>(e.values.data(), d);
    }
    // A tokenizer's pieces are bytes it chose; one that is not UTF-8 is printed with U+FFFD.
    out += j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
    return;
  }
  out += "\"" + text + "\"" + (truncated ? " (truncated)" : "") + "\n  " +
         count(long(e.tokens.ids.size()), "piece", "pieces") + ":";
  for (const std::string& p : e.tokens.pieces) out += " " + p;
  out += "\n";
  if (empty && pooling != Pooling::None) {
    out += "  no tokens, so no vector\n";
    return;
  }
  for (int r = 0; r < e.rows; ++r) {
    const float* v = e.values.data() + size_t(r) * d;
    double sq = 0;
    for (int j = 0; j < d; ++j) sq += double(v[j]) * v[j];
    char norm[64];
    std::snprintf(norm, sizeof norm, "  |v| = %.4f", std::sqrt(sq));
    const std::string label =
        pooling == Pooling::None ? "  " + e.tokens.pieces[r] + ": "
                                 : std::string("  ") + pooling_name(pooling) + "-pooled, d=" + std::to_string(d) + ": ";
    out += label + preview(v, d) + norm + "\n";
  }
}

}  // namespace

int cmd_encode(int argc, char** argv) {
  cxxopts::Options o("ordo encode",
                     "Encode texts into vectors. Texts come from the arguments, else one per line from --input FILE "
                     "or stdin, read, encoded and printed a few thousand lines at a time, in input order. A bad line "
                     "stops the command after everything before it is printed (exit 2); with --skip-bad it is "
                     "reported on stderr and left out, and the command ends with exit 2 once the rest is printed.");
  add_model_options(o);
  o.add_options()("input", "read texts from FILE, one per line (- for stdin)", cxxopts::value<std::string>())(
      "pooling", "mean | first | none (one vector per token)", cxxopts::value<std::string>()->default_value("mean"))(
      "normalize", "scale each vector to unit L2 length")("no-pe", "skip the positional encoding (ablation)")(
      "json", "one JSON object per text, in input order")("max-tokens", "longest text accepted, in tokens",
                                                          cxxopts::value<int>()->default_value("8192"))(
      "truncate", "cut texts longer than --max-tokens instead of failing")(
      "skip-bad", "leave out lines that cannot be encoded (each named on stderr) instead of stopping at the first")(
      "texts", "texts", cxxopts::value<std::vector<std::string>>());
  o.parse_positional({"texts"});
  o.positional_help("[TEXT ...]");
  cxxopts::ParseResult args;
  if (!parse(o, argc, argv, args)) return 0;

  const Pooling pooling = parse_pooling(args["pooling"].as<std::string>());
  const int max_tokens = args["max-tokens"].as<int>();
  if (max_tokens <= 0) throw UsageError("--max-tokens must be positive");
  set_num_threads(threads_option(args));
  Pipeline pipeline(model_dir(args));

  // --max-tokens, or less where the model or this machine's memory allows less (stated as theirs).
  const bool flag_limits = max_tokens <= pipeline.max_tokens();
  TextRules rules;
  rules.limit = flag_limits ? max_tokens : pipeline.max_tokens();
  rules.limit_name = flag_limits ? "--max-tokens " + std::to_string(max_tokens) : pipeline.max_tokens_reason();
  rules.advice = flag_limits ? "raise it, or add --truncate" : "add --truncate to cut it";
  rules.max_bytes = max_text_bytes(rules.limit);
  rules.truncate = args.count("truncate");
  const bool skip_bad = args.count("skip-bad"), json = args.count("json"), normalize = args.count("normalize");
  if (args.count("texts") && args.count("input"))
    throw UsageError("give texts as arguments or --input FILE, not both (the file's lines would be ignored)");
  EncodeOptions options;
  options.positions = !args.count("no-pe");
  const int d = pipeline.model().config().d_model;

  TextSource source(args, rules.max_bytes);
  const bool progress = ::isatty(STDERR_FILENO);
  uint64_t lines = 0, encoded = 0;
  std::vector<std::string> skipped;  // the first few, for the summary
  uint64_t skipped_count = 0;
  bool shown = false;  // a progress line is on the terminal
  auto end_progress = [&] {
    if (shown) std::cerr << "\n";
    shown = false;
  };

  bool more = true;
  for (size_t window = kFirstWindowTexts; more; window = std::min(2 * window, kWindowTexts)) {
    std::vector<std::string> texts;
    std::vector<bool> truncated;
    std::vector<Tokenization> tokens;
    size_t window_tokens = 0, window_bytes = 0;
    std::exception_ptr stop;  // a bad line: everything before it is printed first
    while (texts.size() < window && window_tokens < kWindowTokens && window_bytes < kWindowBytes) {
      LineReader::Line line;
      if (!source.next(&line)) {
        more = false;
        break;
      }
      ++lines;
      try {
        bool cut = false;
        Tokenization t = prepare(pipeline, line, rules, &cut);
        if (t.ids.empty()) {
          end_progress();
          std::cerr << "note: " << one_line(line.where) << ": the text has no tokens, so it has no vector"
                    << (json && pooling != Pooling::None ? " (null)" : "") << "\n";
        }
        truncated.push_back(cut);
        window_tokens += t.ids.size();
        window_bytes += line.text.size();
        texts.push_back(std::move(line.text));
        tokens.push_back(std::move(t));
      } catch (const InputError& e) {
        if (!skip_bad) {
          stop = std::current_exception();
          more = false;
          break;
        }
        end_progress();
        std::cerr << "skipped: " << one_line(e.what()) << "\n";
        if (skipped.size() < 10) {
          const size_t at = line.where.rfind(": line ");
          skipped.push_back(at == std::string::npos ? line.where : line.where.substr(at + 2));
        }
        ++skipped_count;
      }
    }
    const std::vector<Encoded> out = encode_all(pipeline, std::move(tokens), pooling, normalize, options);
    std::string text_out;
    for (size_t i = 0; i < out.size(); ++i) format(text_out, texts[i], truncated[i], out[i], d, pooling, json);
    std::cout << text_out << std::flush;
    if (!std::cout) return 1;  // stdout is gone (a full disk): main names it
    encoded += out.size();
    if (progress && encoded >= 1000) {
      std::cerr << "\rencoded " << encoded << " texts" << std::flush;
      shown = true;
    }
    if (stop) {
      end_progress();
      std::rethrow_exception(stop);
    }
  }
  end_progress();
  if (skipped_count > 0) {
    std::string list;
    for (const std::string& s : skipped) list += (list.empty() ? "" : ", ") + s;
    if (skipped_count > skipped.size()) list += ", ...";
    throw InputError(source.name(), "skipped " + std::to_string(skipped_count) + " of " + std::to_string(lines) +
                                        " texts that could not be encoded (" + list + "); the other " +
                                        std::to_string(encoded) + " were printed");
  }
  return 0;
}

}  // namespace ordo::cli
