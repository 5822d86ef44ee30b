#include "tools/cli/cli.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <iostream>

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

namespace {

// Input is read whole before it is tokenized; past this it fails with a clear error rather than
// by the out-of-memory killer. Tokens, pieces and vectors take several times the text's bytes.
uint64_t max_input_bytes() {
  return std::min<uint64_t>(uint64_t(1) << 30, machine_memory_bytes() / 16);
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
