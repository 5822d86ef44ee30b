#include "tools/cli/cli.h"

#include <ordo/errors.h>
#include <ordo/ordo.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <iostream>

namespace ordo::cli {

bool parse(cxxopts::Options& options, int argc, char** argv, cxxopts::ParseResult& result) {
  options.add_options("help")("h,help", "show this help");
  result = options.parse(argc, argv);
  if (result.count("help")) {
    std::cout << options.help();
    return false;
  }
  return true;
}

std::string model_dir(const cxxopts::ParseResult& args) {
  if (args.count("model")) return args["model"].as<std::string>();
  const std::string dir = default_model_dir();
  if (dir.empty()) throw UsageError("no model found: pass --model DIR or set ORDO_MODEL");
  return dir;
}

std::vector<std::string> split_lines(const std::string& all, const std::string& name, std::vector<std::string>* where) {
  std::vector<std::string> texts;
  size_t start = 0, line = 1;
  if (all.compare(0, 3, "\xEF\xBB\xBF") == 0) start = 3;  // UTF-8 byte-order mark
  if (all.compare(0, 2, "\xFF\xFE") == 0 || all.compare(0, 2, "\xFE\xFF") == 0)
    throw InputError(name,
                     "starts with a UTF-16 byte-order mark; ordo reads UTF-8 (convert with iconv -f UTF-16 -t UTF-8)");
  while (start < all.size()) {
    size_t end = all.find('\n', start);
    if (end == std::string::npos) end = all.size();
    std::string text = all.substr(start, end - start);
    if (!text.empty() && text.back() == '\r') text.pop_back();
    const std::string at = name + ": line " + std::to_string(line);
    if (const size_t nul = text.find('\0'); nul != std::string::npos)
      throw InputError(at, "holds a NUL byte at byte " + std::to_string(nul) + " (binary data, not text)");
    texts.push_back(std::move(text));
    if (where) where->push_back(at);
    start = end + 1;
    ++line;
  }
  return texts;
}

namespace {

// Input is read whole before it is tokenized; past this it fails with a clear error rather than
// by the out-of-memory killer. Tokens, pieces and vectors take several times the text's bytes.
uint64_t max_input_bytes() {
  const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGE_SIZE);
  const uint64_t memory = pages > 0 && page > 0 ? uint64_t(pages) * uint64_t(page) : uint64_t(8) << 30;
  return std::min<uint64_t>(uint64_t(1) << 30, memory / 16);
}

std::string read_all(std::FILE* in, const std::string& name) {
  const uint64_t limit = max_input_bytes();
  std::string all;
  char buf[1 << 16];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, in)) > 0) {
    if (all.size() + n > limit)
      throw InputError(name, "is larger than " + std::to_string(limit >> 20) +
                                 " MiB, more than ordo reads at once; split it into smaller files");
    all.append(buf, n);
  }
  if (std::ferror(in)) throw InputError(name, std::string("cannot read: ") + std::strerror(errno));
  return all;
}

}  // namespace

std::vector<std::string> read_texts(const cxxopts::ParseResult& args, std::vector<std::string>* where) {
  if (args.count("texts")) {
    std::vector<std::string> texts = args["texts"].as<std::vector<std::string>>();
    if (where)
      for (size_t i = 0; i < texts.size(); ++i) where->push_back("argument " + std::to_string(i + 1));
    return texts;
  }
  if (args.count("input") && args["input"].as<std::string>() != "-") {
    const std::string name = args["input"].as<std::string>();
    struct stat st {};
    if (::stat(name.c_str(), &st) == 0 && S_ISDIR(st.st_mode))
      throw InputError(name, "is a directory, not a text file");
    std::FILE* in = std::fopen(name.c_str(), "rb");
    if (!in) throw InputError(name, std::string("cannot open: ") + std::strerror(errno));
    std::string all;
    try {
      all = read_all(in, name);
    } catch (...) {
      std::fclose(in);
      throw;
    }
    std::fclose(in);
    return split_lines(all, name, where);
  }
  return split_lines(read_all(stdin, "stdin"), "stdin", where);
}

std::string preview(const float* v, int n, int k) {
  std::string s = "[";
  char buf[32];
  for (int i = 0; i < std::min(n, k); ++i) {
    std::snprintf(buf, sizeof buf, "%s%8.4f", i ? ", " : "", v[i]);
    s += buf;
  }
  return s + (n > k ? ", ...]" : "]");
}

int columns(const std::string& s) {
  int n = 0;
  for (unsigned char c : s) n += (c & 0xC0) != 0x80;
  return n;
}

std::string pad_right(const std::string& s, int width) {
  return s + std::string(std::max(0, width - columns(s)), ' ');
}

std::string fit(const std::string& s, int width) {
  std::string out;
  int n = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    const unsigned char c = s[i];
    if ((c & 0xC0) != 0x80 && n++ == width) break;
    out += s[i];
  }
  return pad_right(out, width);
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

// A text with learned positions must fit the table; a text too long for memory is refused by name.
void check_runnable(Pipeline& pipeline, const Tokenization& t, const std::string& where, bool positions) {
  const Config& c = pipeline.model().config();
  if (c.positional_encoding == PositionalEncoding::Learned && int(t.ids.size()) > c.max_positions)
    throw InputError(where, "text has " + std::to_string(t.ids.size()) +
                                " tokens, more than the model's max_positions " + std::to_string(c.max_positions) +
                                (positions ? "" : " (its table bounds any text)"));
  check_fits(pipeline, t, where);
}

void add_model_options(cxxopts::Options& o) {
  o.add_options()("model", "model directory (default: the built-in model)", cxxopts::value<std::string>())(
      "threads", "threads for the matrix work (0: one per core)", cxxopts::value<int>()->default_value("0"));
}

void add_text_options(cxxopts::Options& o) {
  o.add_options()("model", "model directory (default: the built-in model)", cxxopts::value<std::string>())(
      "no-pe", "skip the positional encoding (ablation)")("text", "the text (one argument: quote it)",
                                                          cxxopts::value<std::string>());
  o.parse_positional({"text"});
  o.positional_help("TEXT");
}

// One text: a plain string option, not a list, so that commas stay inside the text.
std::string the_text(const cxxopts::ParseResult& args, const char* command) {
  if (!args.count("text") || !args.unmatched().empty())
    throw UsageError(std::string("needs one text, e.g. ordo ") + command + " \"the cat sat on the mat\"");
  return args["text"].as<std::string>();
}

void add_scale_options(cxxopts::Options& o) {
  o.add_options()("vmin", "the value at the colour scale's low end (values below take its colour)",
                  cxxopts::value<double>())(
      "vmax", "the value at the colour scale's high end (values above take its colour)", cxxopts::value<double>());
}

void scale(const cxxopts::ParseResult& args, double* vmin, double* vmax) {
  if (args.count("vmin")) *vmin = args["vmin"].as<double>();
  if (args.count("vmax")) *vmax = args["vmax"].as<double>();
  if (!std::isfinite(*vmin) || !std::isfinite(*vmax) || !(*vmin < *vmax)) {
    char buf[128];
    std::snprintf(buf, sizeof buf, "--vmin must be below --vmax (the scale would run from %g to %g)", *vmin, *vmax);
    throw UsageError(buf);
  }
}

namespace {
constexpr int kLabel = 14;  // row labels: "t piece"
}  // namespace

std::string row_label(int t, const std::string& piece) {
  return fit(std::to_string(t) + " " + piece, kLabel);
}

std::string row_label_blank() {
  return std::string(kLabel, ' ');
}

void print_attention(const float* A, int L, int stride, const std::vector<std::string>& pieces) {
  std::printf("  %s", fit("query \\ key", kLabel).c_str());
  for (int u = 0; u < L; ++u) std::printf(" %s", fit(pieces[u], 7).c_str());
  std::printf("\n");
  for (int t = 0; t < L; ++t) {
    std::printf("  %s", row_label(t, pieces[t]).c_str());
    for (int u = 0; u < L; ++u) std::printf(" %7.4f", A[size_t(t) * stride + u]);
    std::printf("\n");
  }
}

}  // namespace ordo::cli
