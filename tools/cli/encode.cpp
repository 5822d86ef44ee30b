// ordo encode: texts -> vectors, pooled or one per token, as text for people, JSON lines, tab-separated
// values or a NumPy .npy file.
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cmath>
#include <cstring>
#include <exception>
#include <iostream>
#include <memory>

#include <ordo/errors.h>
#include <ordo/ordo.h>

#include "common/atomic_file.h"
#include "common/memory.h"
#include "tools/cli/cli.h"
#include "tools/cli/json_out.h"

namespace ordo::cli {

namespace {

enum class Format { Text, Jsonl, Npy, Tsv };

Format parse_format(const std::string& s) {
  if (s == "text") return Format::Text;
  if (s == "jsonl") return Format::Jsonl;
  if (s == "npy") return Format::Npy;
  if (s == "tsv") return Format::Tsv;
  throw UsageError("--format must be text, jsonl, npy or tsv, got \"" + s + "\"");
}

// How the results are written: the format, and digits after the point for text and tsv
// (tsv: -1 is the shortest decimal that reads back as the same float, as in JSON).
struct Output {
  Format format = Format::Text;
  int precision = 4;
  Pooling pooling = Pooling::Mean;
  int d = 0;
};

// A NumPy .npy file, format version 1.0: the magic string, the version, the header's length
// (2 bytes, little-endian), the header (a Python dict literal, padded with spaces and ending in a
// newline so that the data starts at a multiple of 64 bytes), then the floats as little-endian
// IEEE 754 single precision ('<f4'), row after row (C order).
std::string npy_bytes(const std::vector<float>& values, size_t rows, int d) {
  std::string header =
      "{'descr': '<f4', 'fortran_order': False, 'shape': (" + std::to_string(rows) + ", " + std::to_string(d) + "), }";
  const size_t prefix = 10;  // magic (6), version (2), header length (2)
  header.append((64 - (prefix + header.size() + 1) % 64) % 64, ' ');
  header += '\n';
  std::string out = "\x93NUMPY";
  out += '\x01';
  out += '\x00';
  out += char(header.size() & 0xff);
  out += char(header.size() >> 8);
  out += header;
  out.reserve(out.size() + values.size() * 4);
  for (float f : values) {
    uint32_t bits;
    std::memcpy(&bits, &f, 4);
    for (int k = 0; k < 4; ++k) out += char((bits >> (8 * k)) & 0xff);
  }
  return out;
}

// One row of tab-separated values.
void tsv_row(std::string& out, const float* v, int d, int precision) {
  char buf[96];
  for (int j = 0; j < d; ++j) {
    if (j) out += '\t';
    if (precision < 0) {
      const auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v[j]);
      out.append(buf, ec == std::errc() ? end : buf);
    } else {
      std::snprintf(buf, sizeof buf, "%.*f", precision, v[j]);
      out += buf;
    }
  }
  out += '\n';
}

// Texts run in batches of similar length (Pipeline::encode_sorted, the library's batching
// policy), so little compute goes to padding; the results come back in input order.
constexpr size_t kBatchTexts = Pipeline::kBatchTexts;

// Input is read, encoded and printed a window of texts at a time, so memory is bounded by the
// window whatever the input's length. Inside a window the texts are sorted by length into
// batches. The first window is small, so the first vectors print at once (and a reader that stops
// after them, `| head -1`, ends the command one small window later); each next window is twice as
// large up to kWindowTexts, so batches of similar lengths can be found. A window of short texts
// splits into whole batches (window sizes are multiples of kBatchTexts), so no batch of 8 tokens or
// fewer is made unless the input ends there.
constexpr size_t kFirstWindowTexts = 64;
constexpr size_t kWindowTexts = 4096;
static_assert(kFirstWindowTexts % kBatchTexts == 0 && kWindowTexts % kBatchTexts == 0, "windows of whole batches");
constexpr size_t kWindowTokens = 1 << 16;          // a window ends once it holds this many tokens
constexpr size_t kWindowBytes = size_t(16) << 20;  // ... or this many bytes of text

std::vector<Encoded> encode_all(Pipeline& pipeline, std::vector<Tokenization> tokens, Pooling pooling, bool normalize,
                                const EncodeOptions& options, const std::vector<std::string>& wheres) {
  std::vector<Encoded> out(tokens.size());
  pipeline.encode_sorted(
      std::move(tokens), pooling, normalize, options, kBatchTexts, [&](size_t i) { return wheres[i]; },
      [&](size_t i, Encoded& e) { out[i] = std::move(e); });
  return out;
}

// The text's tokens as it will be encoded, by the library's rules (Pipeline::prepare: cut when
// --truncate cuts it, *truncated says so, and line.text keeps the text as read); throws
// InputError(line.where) for a text that cannot be.
Tokenization prepare(const Pipeline& pipeline, const LineReader::Line& line, const TextLimits& limits,
                     bool* truncated) {
  *truncated = false;
  if (!line.problem.empty()) throw InputError(line.where, line.problem);
  return pipeline.prepare(line.text, line.where, limits, truncated, line.bytes, false, line.whole);
}

// One text's result as `ordo encode` prints it (npy rows are gathered by the caller).
// JSON keys in the documented order: text, truncated (when cut), pieces, ids, embedding or hidden.
// A text of no tokens has no vector: its embedding is null, not zeros, and its tsv line is empty.
void format(std::string& out, const std::string& text, bool truncated, const Encoded& e, int unknown, const Output& o) {
  const bool empty = e.tokens.ids.empty();
  const int d = o.d;
  const Pooling pooling = o.pooling;
  if (o.format == Format::Jsonl) {
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
  if (o.format == Format::Tsv) {
    if (empty && pooling != Pooling::None) out += "\n";
    for (int r = 0; r < (empty ? 0 : e.rows); ++r) tsv_row(out, e.values.data() + size_t(r) * d, d, o.precision);
    return;
  }
  out += "\"" + text + "\"" + (truncated ? " (truncated)" : "") + "\n  " +
         count(long(e.tokens.ids.size()), "piece", "pieces") + ":";
  for (const std::string& p : e.tokens.pieces) out += " " + p;
  if (unknown > 0) out += "  (" + count(unknown, "unknown piece", "unknown pieces") + ")";
  out += "\n";
  if (empty && pooling != Pooling::None) {
    out += "  no tokens, so no vector\n";
    return;
  }
  for (int r = 0; r < e.rows; ++r) {
    const float* v = e.values.data() + size_t(r) * d;
    double sq = 0;
    for (int j = 0; j < d; ++j) sq += double(v[j]) * v[j];
    char norm[96];
    std::snprintf(norm, sizeof norm, "  |v| = %.*f", o.precision, std::sqrt(sq));
    const std::string label =
        pooling == Pooling::None ? "  " + e.tokens.pieces[r] + ": "
                                 : std::string("  ") + pooling_name(pooling) + "-pooled, d=" + std::to_string(d) + ": ";
    out += label + preview(v, d, 8, o.precision) + norm + "\n";
  }
}

}  // namespace

int cmd_encode(int argc, char** argv) {
  cxxopts::Options o(
      "ordo encode",
      "Encode texts into vectors. Texts come from the arguments, else one per line from --input FILE or stdin, "
      "read, encoded and printed a few thousand lines at a time, in input order; on a long input, when stderr is a "
      "terminal, a count of the texts encoded so far is shown there. A bad line stops the command after everything "
      "before it is printed (exit 2); with --skip-bad it is reported on stderr and left out, and the command ends "
      "with exit 2 once the rest is printed.\n\nFormats: text (for people: the pieces, the first 8 values and the "
      "length |v|); jsonl (one JSON object per text); tsv (one line per text, the d values tab-separated, no "
      "header; an empty line for a text of no tokens); npy (a NumPy array of float32, shape (texts, d), a text of "
      "no tokens a row of NaN). With --pooling none, tsv and npy have one row per token, the texts' tokens in input "
      "order, so npy's shape is (total tokens, d). npy is written once every text is encoded, so it holds all "
      "the vectors in memory (rows x d x 4 bytes); it goes to --output FILE (written whole or not at all) or to "
      "stdout when that is not a terminal.");
  add_model_options(o);
  add_input_format_option(o);
  o.add_options()("input", "read texts from FILE, one per line (- for stdin)", cxxopts::value<std::string>())(
      "pooling",
      "mean | first | max | mean-sqrt-len | weighted-mean | last | none (one vector per token); default: the "
      "model's own (a sentence-transformers directory's 1_Pooling), else mean",
      cxxopts::value<std::string>())(
      "normalize", "scale each vector to unit L2 length (on by itself where the model's modules.json has Normalize)")(
      "no-pe", "skip the positional encoding (ablation)")("format", "text | jsonl | tsv | npy",
                                                          cxxopts::value<std::string>()->default_value("text"))(
      "json", "the same as --format jsonl")(
      "precision", "digits after the point, for text (default 4) and tsv (default: as many as the float needs)",
      cxxopts::value<int>())("output", "with --format npy: write the array to FILE", cxxopts::value<std::string>())(
      "max-tokens", "longest text accepted, in tokens",
      cxxopts::value<int>()->default_value(std::to_string(kDefaultMaxTokens)))(
      "truncate", "cut texts longer than --max-tokens instead of failing")(
      "skip-bad",
      "leave out lines that cannot be encoded (each named on stderr; in npy a row of NaN keeps its place) instead of "
      "stopping at the first");
  cxxopts::ParseResult args;
  if (!parse_with_texts(o, argc, argv, args)) return 0;

  Output output;
  const std::string pooling_arg = args.count("pooling") ? args["pooling"].as<std::string>() : "mean";
  if (!pooling_from_name(pooling_arg, &output.pooling))
    throw UsageError(std::string("--pooling must be ") + pooling_names() + ", got \"" + pooling_arg + "\"");
  output.format = parse_format(args["format"].as<std::string>());
  if (args.count("json")) {
    if (args.count("format") && output.format != Format::Jsonl)
      throw UsageError("--json is --format jsonl; it cannot go with --format " + args["format"].as<std::string>());
    output.format = Format::Jsonl;
  }
  const bool npy = output.format == Format::Npy;
  constexpr int kMaxPrecision = 40;
  if (args.count("precision")) {
    if (output.format != Format::Text && output.format != Format::Tsv)
      throw UsageError("--precision is for --format text and tsv (jsonl and npy keep every float exactly)");
    output.precision = int_option(args, "precision", 0, kMaxPrecision);
  } else if (output.format == Format::Tsv) {
    output.precision = -1;
  }
  const std::string output_file = args.count("output") ? args["output"].as<std::string>() : "";
  if (args.count("output") && !npy)
    throw UsageError("--output is for --format npy (the other formats stream to stdout: redirect it)");
  if (args.count("output") && output_file.empty()) throw UsageError("--output needs a file name");
  if (npy && output_file.empty() && ::isatty(STDOUT_FILENO))
    throw UsageError("--format npy writes binary data: give --output FILE, or redirect stdout to a file");
  const int max_tokens = int_option(args, "max-tokens", 1, kMaxCount);
  set_num_threads(threads_option(args));
  const ComputeType compute_type = compute_type_option(args);  // a wrong value fails before the model loads
  Pipeline pipeline(model_dir(args));
  pipeline.set_compute_type(compute_type);
  if (!args.count("pooling")) output.pooling = pipeline.model_pooling();
  const Pooling pooling = output.pooling;

  // --max-tokens, or less where the model or this machine's memory allows less (stated as theirs).
  TextLimits limits;
  limits.max_tokens = max_tokens;
  limits.truncate = args.count("truncate");
  limits.max_tokens_name = "--max-tokens ";
  limits.truncate_hint = "add --truncate";
  const bool skip_bad = args.count("skip-bad"), normalize = args.count("normalize") || pipeline.model_normalize();
  EncodeOptions options;
  options.positions = !args.count("no-pe");
  const int d = pipeline.width(pooling);  // a Dense module's out_features where the model has one
  output.d = d;
  std::vector<float> npy_values;  // --format npy: every row, written at the end
  size_t npy_rows = 0;
  auto write_npy = [&] {
    if (!npy) return;
    const std::string bytes = npy_bytes(npy_values, npy_rows, d);
    if (output_file.empty()) {
      std::cout.write(bytes.data(), std::streamsize(bytes.size()));
      std::cout.flush();
    } else {
      write_atomically(output_file, [&](std::FILE* f) { std::fwrite(bytes.data(), 1, bytes.size(), f); });
    }
  };
  // What a text of no tokens gets, for the note on stderr.
  const char* no_vector = pooling == Pooling::None         ? ""
                          : output.format == Format::Jsonl ? " (null)"
                          : output.format == Format::Tsv   ? " (an empty line)"
                          : output.format == Format::Npy   ? " (a row of NaN)"
                                                           : "";

  TextSource source(args, pipeline.byte_limit(limits));
  const bool progress = ::isatty(STDERR_FILENO);
  const auto started = std::chrono::steady_clock::now();
  uint64_t lines = 0, encoded = 0;
  // Texts longer than the model was trained on (training.json): encoded, and counted in one note.
  const int trained = training_length(pipeline.model_dir());
  std::vector<std::string> long_texts;  // where the first few are
  uint64_t long_count = 0;
  std::vector<std::string> skipped;  // the first few, for the summary
  uint64_t skipped_count = 0;
  bool shown = false;  // a progress line is on the terminal
  auto end_progress = [&] {
    if (shown) std::cerr << "\n";
    shown = false;
  };
  // Texts with no tokens (empty lines): one note at the end, however many there are.
  std::vector<std::string> empty;  // where the first few are
  uint64_t empty_count = 0;
  auto note_empty = [&] {
    if (empty_count == 0) return;
    end_progress();
    if (empty_count == 1) {
      std::cerr << "note: " << one_line(empty[0]) << ": " << kNoTokens << no_vector << "\n";
    } else {
      std::string list;
      for (const std::string& w : empty) {
        const size_t at = w.rfind(": line ");
        list += (list.empty() ? "" : ", ") + (at == std::string::npos ? w : w.substr(at + 2));
      }
      if (empty_count > empty.size()) list += ", ...";
      std::cerr << "note: " << one_line(source.name()) << ": " << empty_count << " texts have no tokens ("
                << one_line(list) << "), so they have no vector" << no_vector << "\n";
    }
    empty_count = 0;
  };

  auto note_long = [&] {
    if (long_count == 0) return;
    end_progress();
    std::string list;
    for (const std::string& w : long_texts) {
      const size_t at = w.rfind(": line ");
      list += (list.empty() ? "" : ", ") + (at == std::string::npos ? w : w.substr(at + 2));
    }
    if (long_count > long_texts.size()) list += ", ...";
    std::cerr << "note: " << one_line(source.name()) << ": " << count(long_count, "text is", "texts are")
              << " longer than the " << trained << " pieces the model was trained on (" << one_line(list)
              << "): encoded all the same, at positions it never saw (ordo info; docs/model.md)\n";
    long_count = 0;
  };

  bool more = true;
  for (size_t window = kFirstWindowTexts; more; window = std::min(2 * window, kWindowTexts)) {
    std::vector<std::string> texts, wheres;
    std::vector<bool> truncated, bad;  // bad: a line skipped (--skip-bad), kept as a NaN row of npy
    std::vector<Tokenization> tokens;
    size_t window_tokens = 0, window_bytes = 0;
    std::exception_ptr stop;  // a bad line: everything before it is printed first
    while (texts.size() < window && window_tokens < kWindowTokens && window_bytes < kWindowBytes) {
      // What has come in is answered before waiting for more (a pipe: a line out per line in).
      if (!texts.empty() && source.would_wait()) break;
      LineReader::Line line;
      if (!source.next(&line)) {
        more = false;
        break;
      }
      ++lines;
      try {
        bool cut = false;
        Tokenization t = prepare(pipeline, line, limits, &cut);
        if (t.ids.empty()) {
          if (empty.size() < 10) empty.push_back(line.where);
          ++empty_count;
        }
        if (trained > 0 && t.ids.size() > size_t(trained)) {
          if (long_texts.size() < 10) long_texts.push_back(line.where);
          ++long_count;
        }
        truncated.push_back(cut);
        bad.push_back(false);
        window_tokens += t.ids.size();
        window_bytes += line.text.size();
        texts.push_back(std::move(line.text));
        wheres.push_back(line.where);
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
        // Its place in the output: nothing in text, jsonl and tsv; a row of NaN in npy (as for an
        // empty line), so that row i stays line i.
        texts.emplace_back();
        wheres.push_back(line.where);
        truncated.push_back(false);
        bad.push_back(true);
        tokens.emplace_back();
      }
    }
    const std::vector<Encoded> out = encode_all(pipeline, std::move(tokens), pooling, normalize, options, wheres);
    std::string text_out;
    size_t printed = 0;
    for (size_t i = 0; i < out.size(); ++i) {
      if (bad[i] && !npy) continue;
      printed += !bad[i];
      if (npy) {
        const bool none = out[i].tokens.ids.empty() && pooling != Pooling::None;
        if (none)
          npy_values.insert(npy_values.end(), size_t(d), std::nanf(""));
        else
          npy_values.insert(npy_values.end(), out[i].values.begin(), out[i].values.end());
        npy_rows += none ? 1 : size_t(out[i].rows);
        continue;
      }
      format(text_out, texts[i], truncated[i], out[i], pipeline.unknown_pieces(out[i].tokens), output);
    }
    if (!npy) {
      std::cout << text_out << std::flush;
      if (!std::cout) return 1;  // stdout is gone (a full disk): main names it
    }
    encoded += printed;
    if (progress && encoded >= 1000) {
      // encoded N texts, P% of FILE, R texts/s, about T s left (the share and the time from the
      // bytes read, when the input is a regular file)
      const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
      std::string line = "\rencoded " + std::to_string(encoded) + " texts";
      char buf[160];
      if (source.total_bytes() > 0) {
        const double done = std::min(1.0, double(source.bytes_read()) / double(source.total_bytes()));
        std::snprintf(buf, sizeof buf, ", %.0f%% of %s", 100 * done, one_line(source.name()).c_str());
        line += buf;
        if (seconds > 0) {
          std::snprintf(buf, sizeof buf, ", %.0f texts/s", encoded / seconds);
          line += buf;
        }
        if (done > 0 && seconds > 1) {
          std::snprintf(buf, sizeof buf, ", about %.0f s left", seconds * (1 - done) / done);
          line += buf;
        }
      } else if (seconds > 0) {
        std::snprintf(buf, sizeof buf, ", %.0f texts/s", encoded / seconds);
        line += buf;
      }
      std::cerr << line << "\x1b[K" << std::flush;  // and clear what a longer line left
      shown = true;
    }
    if (stop) {
      end_progress();
      note_empty();
      note_long();
      // The texts before the bad line, as the other formats print them, when the array goes to stdout;
      // --output FILE is written whole or not at all: a previous FILE stays as it was.
      if (output_file.empty()) write_npy();
      std::rethrow_exception(stop);
    }
  }
  end_progress();
  note_empty();
  note_long();
  write_npy();
  if (!std::cout) return 1;
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
