#include "tools/cli/cli.h"

#include <ordo/errors.h>
#include <ordo/ordo.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <string_view>

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

LineReader::LineReader(std::FILE* in, std::string name, size_t keep)
    : in_(in), name_(std::move(name)), keep_(keep), buf_(size_t(1) << 16) {}

bool LineReader::fill() {
  if (eof_) return false;
  pos_ = 0;
  end_ = std::fread(buf_.data(), 1, buf_.size(), in_);
  if (end_ == 0) {
    if (std::ferror(in_)) throw InputError(name_, std::string("cannot read: ") + std::strerror(errno));
    eof_ = true;
    return false;
  }
  return true;
}

bool LineReader::next(Line* line) {
  if (pos_ == end_ && !fill()) return false;
  if (number_ == 0) {                   // the start of the stream: byte-order marks
    while (end_ - pos_ < 3 && !eof_) {  // a short read (a pipe): gather the first three bytes
      std::memmove(buf_.data(), buf_.data() + pos_, end_ - pos_);
      end_ -= pos_;
      pos_ = 0;
      const size_t n = std::fread(buf_.data() + end_, 1, buf_.size() - end_, in_);
      if (n == 0) {
        if (std::ferror(in_)) throw InputError(name_, std::string("cannot read: ") + std::strerror(errno));
        eof_ = true;
      }
      end_ += n;
    }
    const std::string_view head(buf_.data() + pos_, std::min<size_t>(end_ - pos_, 3));
    if (head.substr(0, 2) == "\xFF\xFE" || head.substr(0, 2) == "\xFE\xFF")
      throw InputError(
          name_, "starts with a UTF-16 byte-order mark; ordo reads UTF-8 (convert with iconv -f UTF-16 -t UTF-8)");
    if (head == "\xEF\xBB\xBF") pos_ += 3;  // UTF-8 byte-order mark
    if (pos_ == end_ && !fill()) return false;
  }
  ++number_;
  line->text.clear();
  line->bytes = 0;
  line->where = name_ + ": line " + std::to_string(number_);
  line->problem.clear();
  const size_t limit = keep_ + 4;
  char last = 0;
  for (;;) {
    const char* begin = buf_.data() + pos_;
    const char* nl = static_cast<const char*>(std::memchr(begin, '\n', end_ - pos_));
    const size_t n = nl ? size_t(nl - begin) : end_ - pos_;
    if (n > 0) {
      if (line->problem.empty())
        if (const void* nul = std::memchr(begin, '\0', n))
          line->problem = "holds a NUL byte at byte " +
                          std::to_string(line->bytes + size_t(static_cast<const char*>(nul) - begin)) +
                          " (binary data, not text)";
      if (line->text.size() < limit) line->text.append(begin, std::min(n, limit - line->text.size()));
      line->bytes += n;
      last = begin[n - 1];
    }
    pos_ += n;
    if (nl) {
      ++pos_;
      break;
    }
    if (!fill()) break;
  }
  if (last == '\r') {  // CRLF
    --line->bytes;
    if (line->text.size() > line->bytes) line->text.resize(line->bytes);
  }
  return true;
}

std::vector<std::string> split_lines(const std::string& all, const std::string& name, std::vector<std::string>* where) {
  if (all.empty()) return {};
  std::FILE* in = ::fmemopen(const_cast<char*>(all.data()), all.size(), "rb");
  if (!in) throw std::runtime_error("fmemopen failed");
  std::vector<std::string> texts;
  try {
    LineReader reader(in, name, SIZE_MAX - 8);
    LineReader::Line line;
    while (reader.next(&line)) {
      if (!line.problem.empty()) throw InputError(line.where, line.problem);
      texts.push_back(std::move(line.text));
      if (where) where->push_back(line.where);
    }
  } catch (...) {
    std::fclose(in);
    throw;
  }
  std::fclose(in);
  return texts;
}

std::vector<std::string> read_texts(const cxxopts::ParseResult& args, std::vector<std::string>* where) {
  if (args.count("texts")) {
    std::vector<std::string> texts = args["texts"].as<std::vector<std::string>>();
    if (where)
      for (size_t i = 0; i < texts.size(); ++i) where->push_back("argument " + std::to_string(i + 1));
    return texts;
  }
  InputFile in(args.count("input") ? args["input"].as<std::string>() : "-");
  std::vector<std::string> texts;
  LineReader reader(in.get(), in.name(), SIZE_MAX - 8);
  LineReader::Line line;
  while (reader.next(&line)) {
    if (!line.problem.empty()) throw InputError(line.where, line.problem);
    texts.push_back(std::move(line.text));
    if (where) where->push_back(line.where);
  }
  return texts;
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
