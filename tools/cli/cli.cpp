#include "tools/cli/cli.h"

#include <poll.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string_view>

#include <ordo/errors.h>
#include <ordo/ordo.h>

#include "common/regular_file.h"

namespace ordo::cli {

namespace {

// The value cxxopts could not read, from its message "Argument ‘abc’ failed to parse" (either quote).
std::string unreadable_value(const std::string& what) {
  const std::string head = "Argument ", tail = " failed to parse";
  if (what.rfind(head, 0) != 0 || what.size() < head.size() + tail.size() ||
      what.compare(what.size() - tail.size(), tail.size(), tail) != 0)
    return "";
  std::string v = what.substr(head.size(), what.size() - head.size() - tail.size());
  for (const std::string q : {"\u2018", "'"})
    if (v.rfind(q, 0) == 0) v.erase(0, q.size());
  for (const std::string q : {"\u2019", "'"})
    if (v.size() >= q.size() && v.compare(v.size() - q.size(), q.size(), q) == 0) v.erase(v.size() - q.size());
  return v;
}

// The option on the command line that was given `value`: "--threads abc", "--threads=abc", "-t abc".
std::string option_given(int argc, char** argv, const std::string& value) {
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a.size() < 2 || a[0] != '-') continue;
    const size_t eq = a.find('=');
    if (eq != std::string::npos && a.rfind("--", 0) == 0) {
      if (a.substr(eq + 1) == value) return a.substr(0, eq);
    } else if (i + 1 < argc && argv[i + 1] == value) {
      return a;
    }
  }
  return "";
}

// Whether `option` ("--truncate", "-t") names an option that takes no value (true or false, when given one).
bool is_switch(const cxxopts::Options& options, const std::string& option) {
  for (const std::string& group : options.groups())
    for (const cxxopts::HelpOptionDetails& o : options.group_help(group).options) {
      const bool named = option == "-" + o.s ||
                         std::any_of(o.l.begin(), o.l.end(), [&](const std::string& l) { return option == "--" + l; });
      if (named) return o.is_boolean;
    }
  return false;
}

}  // namespace

bool parse(cxxopts::Options& options, int argc, char** argv, cxxopts::ParseResult& result) {
  options.add_options("help")("h,help", "show this help");
  try {
    result = options.parse(argc, argv);
  } catch (const cxxopts::exceptions::incorrect_argument_type& e) {
    // cxxopts names the value, not the option: name both.
    const std::string value = unreadable_value(e.what()), option = option_given(argc, argv, value);
    if (option.empty()) throw;
    if (is_switch(options, option))
      throw UsageError(option + ": '" + value + "' is not true or false (a switch: " + option + " alone turns it on)");
    throw UsageError(option + ": '" + value + "' is not a number (or not one in its range)");
  }
  if (result.count("help")) {
    std::cout << options.help();
    return false;
  }
  return true;
}

bool parse_with_texts(cxxopts::Options& options, int argc, char** argv, cxxopts::ParseResult& result,
                      const char* usage) {
  options.add_options()("texts", usage, cxxopts::value<std::vector<std::string>>());
  options.parse_positional({"texts"});
  options.positional_help(usage);
  if (!parse(options, argc, argv, result)) return false;
  if (result.count("texts") && result.count("input"))
    throw UsageError("give texts as arguments or --input FILE, not both (the file's lines would be ignored)");
  return true;
}

void refuse_stray_arguments(const cxxopts::ParseResult& args, const std::string& hint) {
  if (args.unmatched().empty()) return;
  const std::string word = one_line(args.unmatched()[0]);
  std::string meant = hint;
  for (size_t at = meant.find("WORD"); at != std::string::npos; at = meant.find("WORD", at + word.size()))
    meant.replace(at, 4, word);
  throw UsageError("unexpected argument \"" + word + "\" (this command takes options only; did you mean " + meant +
                   "?)");
}

std::string model_dir(const cxxopts::ParseResult& args) {
  if (args.count("model")) return args["model"].as<std::string>();
  const std::string dir = default_model_dir();
  if (dir.empty()) throw UsageError("no model found: pass --model DIR or set ORDO_MODEL");
  // A directory named by the environment says so when it is wrong: the command line did not name it.
  const char* env = std::getenv("ORDO_MODEL");
  struct stat st {};
  if (env && *env && dir == env && !(::stat(dir.c_str(), &st) == 0 && S_ISDIR(st.st_mode)))
    throw InputError(dir,
                     "no such model directory (named by the environment variable ORDO_MODEL; unset it to use "
                     "the default model, or pass --model DIR)");
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

std::string one_line(const std::string& message, std::string_view also) {
  std::string out;
  for (unsigned char c : message) {
    if (c < 0x20 || c == 0x7f || also.find(char(c)) != std::string_view::npos) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", c);
      out += buf;
    } else {
      out += char(c);
    }
  }
  return out;
}

std::string count(long long n, const std::string& one, const std::string& many) {
  return std::to_string(n) + " " + (n == 1 ? one : many);
}

void add_input_format_option(cxxopts::Options& options) {
  options.add_options()("input-format",
                        "how --input holds its texts: lines (one per line), jsonl (one {\"text\": ...} per line) or "
                        "nul (each ended by a NUL byte, as find -print0 writes)",
                        cxxopts::value<std::string>()->default_value("lines"));
}

TextSource::TextSource(const cxxopts::ParseResult& args, size_t keep) : keep_(keep) {
  if (args.count("input-format")) {
    const std::string f = args["input-format"].as<std::string>();
    if (f == "jsonl")
      format_ = Format::Jsonl;
    else if (f == "nul")
      format_ = Format::Nul;
    else if (f != "lines")
      throw UsageError("--input-format must be lines, jsonl or nul, got \"" + f + "\"");
    if (format_ != Format::Lines && args.count("texts"))
      throw UsageError("--input-format " + f + " is for --input FILE or stdin, not for texts given as arguments");
  }
  if (args.count("texts")) {
    args_ = args["texts"].as<std::vector<std::string>>();
    return;
  }
  file_ = std::make_unique<InputFile>(args.count("input") ? args["input"].as<std::string>() : "-");
  struct stat st {};
  if (::fstat(::fileno(file_->get()), &st) == 0 && S_ISREG(st.st_mode)) total_bytes_ = uint64_t(st.st_size);
  if (format_ == Format::Nul) return;
  // A JSON line holds its text escaped: up to 6 bytes (\u00XX) for one of the text's.
  reader_ = std::make_unique<LineReader>(file_->get(), file_->name(), format_ == Format::Jsonl ? 6 * keep + 64 : keep);
}

bool TextSource::next_record(LineReader::Line* line) {
  std::FILE* f = file_->get();
  int c = getc_unlocked(f);
  if (c == EOF) {
    if (std::ferror(f)) throw InputError(file_->name(), std::string("cannot read: ") + std::strerror(errno));
    return false;
  }
  line->text.clear();
  line->bytes = 0;
  line->problem.clear();
  line->where = file_->name() + ": record " + std::to_string(++records_);
  for (; c != EOF && c != '\0'; c = getc_unlocked(f)) {
    if (line->text.size() < keep_ + 4) line->text.push_back(char(c));
    ++line->bytes;
  }
  if (c == EOF && std::ferror(f)) throw InputError(file_->name(), std::string("cannot read: ") + std::strerror(errno));
  return true;
}

bool TextSource::would_wait() const {
  if (!file_ || (reader_ && reader_->buffered())) return false;
  pollfd p{::fileno(file_->get()), POLLIN, 0};
  return ::poll(&p, 1, 0) == 0;  // nothing to read yet (a regular file is always readable)
}

bool TextSource::next(LineReader::Line* line) {
  if (file_ && format_ == Format::Nul) {
    if (!next_record(line)) return false;
    bytes_read_ += line->bytes + 1;
    return true;
  }
  if (reader_) {
    if (!reader_->next(line)) return false;
    bytes_read_ += line->bytes + 1;
    if (format_ != Format::Jsonl || !line->problem.empty()) return true;
    if (line->bytes > line->text.size()) {
      line->problem = "is " + std::to_string(line->bytes) + " bytes, more than a JSON line of a text of at most " +
                      std::to_string(keep_) + " bytes may have";
      return true;
    }
    const nlohmann::json j = nlohmann::json::parse(line->text, nullptr, false);
    if (j.is_discarded() || !j.is_object() || !j.contains("text") || !j["text"].is_string()) {
      line->problem =
          "is not a JSON object with a \"text\" string (--input-format jsonl), e.g. {\"text\": \"the cat\"}";
      return true;
    }
    std::string text = j["text"].get<std::string>();
    line->bytes = text.size();
    if (text.size() > keep_ + 4) text.resize(keep_ + 4);  // as LineReader keeps a long line
    if (line->problem.empty() && text.find('\0') != std::string::npos)
      line->problem = "holds a NUL byte (\\u0000) in its text";
    line->text = std::move(text);
    return true;
  }
  if (next_arg_ == args_.size()) return false;
  line->text = std::move(args_[next_arg_++]);
  line->bytes = line->text.size();
  line->where = "argument " + std::to_string(next_arg_);
  line->problem.clear();
  return true;
}

bool TextSource::next_text(LineReader::Line* line) {
  if (!next(line)) return false;
  if (!line->problem.empty()) throw InputError(line->where, line->problem);
  if (line->bytes > keep_)
    throw InputError(line->where, "is " + std::string(line->whole ? "" : "at least ") + std::to_string(line->bytes) +
                                      " bytes, more than the " + std::to_string(keep_) + " a text may have");
  return true;
}

std::vector<std::string> read_texts(const cxxopts::ParseResult& args, size_t max_bytes,
                                    std::vector<std::string>* where) {
  TextSource source(args, max_bytes);
  std::vector<std::string> texts;
  LineReader::Line line;
  while (source.next_text(&line)) {
    texts.push_back(std::move(line.text));
    if (where) where->push_back(line.where);
  }
  return texts;
}

std::string preview(const float* v, int n, int k, int precision) {
  std::string s = "[";
  char buf[96];  // a float's 39 integer digits, its sign and up to 50 after the point
  for (int i = 0; i < std::min(n, k); ++i) {
    std::snprintf(buf, sizeof buf, "%s%*.*f", i ? ", " : "", precision + 4, precision, v[i]);
    s += buf;
  }
  return s + (n > k ? ", ...]" : "]");
}

namespace {

// The code point starting at s[i] and its length in bytes (a bad byte: U+FFFD, 1 byte).
char32_t decode(const std::string& s, size_t i, size_t* len) {
  const unsigned char c = s[i];
  const size_t n = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
  if (n == 0 || i + n > s.size()) return *len = 1, U'\uFFFD';
  char32_t cp = n == 1 ? c : c & (0x7F >> n);
  for (size_t k = 1; k < n; ++k) {
    const unsigned char b = s[i + k];
    if ((b & 0xC0) != 0x80) return *len = 1, U'\uFFFD';
    cp = cp << 6 | (b & 0x3F);
  }
  *len = n;
  return cp;
}

}  // namespace

int display_width(char32_t cp) {
  if (cp < 0x20 || (cp >= 0x7F && cp < 0xA0)) return 0;
  // Combining marks and zero-width characters take no column of their own.
  if ((cp >= 0x0300 && cp <= 0x036F) || (cp >= 0x200B && cp <= 0x200F) || (cp >= 0x20D0 && cp <= 0x20FF) ||
      (cp >= 0xFE00 && cp <= 0xFE0F))
    return 0;
  // East Asian wide and fullwidth characters (Unicode's EastAsianWidth W and F, the common blocks) take two.
  static const char32_t wide[][2] = {{0x1100, 0x115F},   {0x2E80, 0x303E},  {0x3041, 0x33FF}, {0x3400, 0x4DBF},
                                     {0x4E00, 0x9FFF},   {0xA000, 0xA4CF},  {0xAC00, 0xD7A3}, {0xF900, 0xFAFF},
                                     {0xFE30, 0xFE4F},   {0xFF00, 0xFF60},  {0xFFE0, 0xFFE6}, {0x1F300, 0x1F64F},
                                     {0x1F900, 0x1F9FF}, {0x20000, 0x3FFFD}};
  for (const auto& r : wide)
    if (cp >= r[0] && cp <= r[1]) return 2;
  return 1;
}

int columns(const std::string& s) {
  int n = 0;
  for (size_t i = 0, len = 0; i < s.size(); i += len) n += display_width(decode(s, i, &len));
  return n;
}

std::string pad_right(const std::string& s, int width) {
  return s + std::string(std::max(0, width - columns(s)), ' ');
}

std::string fit(const std::string& s, int width) {
  std::string out;
  int n = 0;
  for (size_t i = 0, len = 0; i < s.size(); i += len) {
    const int w = display_width(decode(s, i, &len));
    if (n + w > width) break;  // a wide character that would straddle the edge is left out whole
    out.append(s, i, len);
    n += w;
  }
  return pad_right(out, width);
}

int int_option(const cxxopts::ParseResult& args, const std::string& name, int lo, int hi, const char* note) {
  const int v = args[name].as<int>();
  if (v < lo || v > hi)
    throw UsageError("--" + name + " must be in " + std::to_string(lo) + " .. " + std::to_string(hi) + note + ", got " +
                     std::to_string(v));
  return v;
}

double number_option(const cxxopts::ParseResult& args, const std::string& name, double lo, double hi,
                     const char* note) {
  const double v = args[name].as<double>();
  if (!std::isfinite(v) || v < lo || v > hi) {
    char buf[160];
    std::snprintf(buf, sizeof buf, " must be in %g .. %g%s, got %g", lo, hi, note, v);
    throw UsageError("--" + name + buf);
  }
  return v;
}

int threads_option(const cxxopts::ParseResult& args) {
  return int_option(args, "threads", 0, kMaxThreads, " (0: one per core)");
}

void add_model_options(cxxopts::Options& o) {
  o.add_options()("model", "model directory (default: the built-in model)", cxxopts::value<std::string>())(
      "threads", "threads for the matrix work (0: one per core)", cxxopts::value<int>()->default_value("0"));
  add_compute_type_option(o);
}

void add_mask_head_option(cxxopts::Options& o) {
  o.add_options()("mask-head",
                  "switch head H of layer L off: L,H, from 0 (repeat for several); its output A v becomes zeros "
                  "before the output projection",
                  cxxopts::value<std::vector<std::string>>());
}

std::vector<HeadIndex> mask_heads(const cxxopts::ParseResult& args) {
  std::vector<HeadIndex> heads;
  if (!args.count("mask-head")) return heads;
  for (const std::string& v : args["mask-head"].as<std::vector<std::string>>()) {
    HeadIndex h;
    char end = 0;
    if (std::sscanf(v.c_str(), "%d,%d%c", &h.layer, &h.head, &end) != 2 || h.layer < 0 || h.head < 0 ||
        v.find_first_not_of("0123456789,") != std::string::npos)
      throw UsageError("--mask-head takes LAYER,HEAD (two numbers from 0, e.g. 1,1), got \"" + one_line(v) + "\"");
    heads.push_back(h);
  }
  return heads;
}

void apply_mask_heads(Pipeline& pipeline, const std::vector<HeadIndex>& heads) {
  try {
    pipeline.set_masked_heads(heads);
  } catch (const std::invalid_argument& e) {
    throw UsageError(std::string("--mask-head ") + e.what());
  }
}

Pipeline load_pipeline(const cxxopts::ParseResult& args) {
  const ComputeType compute_type = compute_type_option(args);
  const std::vector<HeadIndex> masked = mask_heads(args);
  Pipeline pipeline(model_dir(args));
  pipeline.set_compute_type(compute_type);
  apply_mask_heads(pipeline, masked);
  return pipeline;
}

std::string masked_heads_text(const std::vector<HeadIndex>& heads) {
  std::string s;
  for (const HeadIndex& h : heads)
    s += (s.empty() ? "" : ", ") + std::string("layer ") + std::to_string(h.layer) + " head " + std::to_string(h.head);
  return s;
}

int training_length(const std::vector<std::string>& dirs) {
  int n = 0;
  for (const std::string& dir : dirs) {
    // Optional, but opened as the model's own files are: a FIFO or a device there is named, not waited on.
    const std::string path = dir + "/training.json";
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0) continue;
    const nlohmann::json j = nlohmann::json::parse(read_regular_file(path, 16 << 20, "training.json"), nullptr, false);
    if (j.is_discarded() || !j.is_object() || !j.contains("max_len") || !j["max_len"].is_number_integer()) continue;
    const int m = std::max(0, j["max_len"].get<int>());
    if (n != 0 && m != n) return 0;
    n = m;
  }
  return n;
}

int training_length(const std::string& model_dir) {
  return training_length(std::vector<std::string>{model_dir});
}

void add_compute_type_option(cxxopts::Options& o) {
  o.add_options()("compute-type",
                  "precision of the layers' weight products (the first in_proj stays in float): f32, bf16 or int8 "
                  "(docs/precision.md)",
                  cxxopts::value<std::string>()->default_value("f32"));
}

ComputeType compute_type_option(const cxxopts::ParseResult& args) {
  try {
    return compute_type_from_name(args["compute-type"].as<std::string>(), "--compute-type");
  } catch (const std::invalid_argument& e) {
    throw UsageError(e.what());
  }
}

cxxopts::Options text_command_options(const std::string& command, const std::string& description) {
  cxxopts::Options o("ordo " + command, description);
  o.add_options()("model", "model directory (default: the built-in model)", cxxopts::value<std::string>())(
      "no-pe", "skip the positional encoding (ablation)")("text", "the text (one argument: quote it)",
                                                          cxxopts::value<std::string>());
  add_compute_type_option(o);
  o.parse_positional({"text"});
  o.positional_help("TEXT");
  return o;
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

void print_token_table(const float* A, int L, int stride, const std::vector<std::string>& pieces, int width,
                       int precision) {
  std::printf("  %s", fit("query \\ key", kLabel).c_str());
  for (int u = 0; u < L; ++u) std::printf(" %s", fit(pieces[u], width).c_str());
  std::printf("\n");
  for (int t = 0; t < L; ++t) {
    std::printf("  %s", row_label(t, pieces[t]).c_str());
    for (int u = 0; u < L; ++u) std::printf(" %*.*f", width, precision, A[size_t(t) * stride + u]);
    std::printf("\n");
  }
}

void print_attention(const float* A, int L, int stride, const std::vector<std::string>& pieces) {
  print_token_table(A, L, stride, pieces, 7, 4);
}

}  // namespace ordo::cli
