#include "tools/cli/cli.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <string_view>

#include <ordo/errors.h>
#include <ordo/ordo.h>

#include "common/memory.h"

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

InputFile::InputFile(const std::string& path) : name_(path == "-" ? "stdin" : path) {
  if (path == "-") {
    f_ = stdin;
    return;
  }
  const std::string& name = path;
  struct stat st {};
  if (::stat(name.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) throw InputError(name, "is a directory, not a text file");
  f_ = std::fopen(name.c_str(), "rb");
  if (!f_) throw InputError(name, std::string("cannot open: ") + std::strerror(errno));
}

InputFile::~InputFile() {
  if (f_ && f_ != stdin) std::fclose(f_);
}

std::string one_line(const std::string& message) {
  std::string out;
  for (unsigned char c : message) {
    if (c < 0x20 || c == 0x7f) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", c);
      out += buf;
    } else {
      out += char(c);
    }
  }
  return out;
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

void check_runnable(Pipeline& pipeline, const Tokenization& t, const std::string& where) {
  if (int(t.ids.size()) > pipeline.max_tokens())
    throw InputError(where, "text has " + std::to_string(t.ids.size()) + " tokens, more than " +
                                pipeline.max_tokens_reason() + " allows");
}

int threads_option(const cxxopts::ParseResult& args) {
  const int n = args["threads"].as<int>();
  if (n < 0 || n > kMaxThreads)
    throw UsageError("--threads must be in 0 .. " + std::to_string(kMaxThreads) + " (0: one per core), got " +
                     std::to_string(n));
  return n;
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
