#include <cblas.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <map>
#include <numeric>
#include <stdexcept>
#include <string>
#include <string_view>

#include <ordo/engine/encoder.h>
#include <ordo/engine/head.h>
#include <ordo/engine/model.h>
#include <ordo/engine/reference.h>
#include <ordo/errors.h>
#include <ordo/ordo.h>

#include "common/memory.h"
#include "engine/kernels/reduced.h"
#include "engine/ops.h"

namespace ordo {

namespace {

bool is_dir(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

std::string executable_dir() {
  char buf[4096];
  const ssize_t n = ::readlink("/proc/self/exe", buf, sizeof(buf) - 1);
  if (n <= 0) return "";
  std::string path(buf, size_t(n));
  return path.substr(0, path.find_last_of('/'));
}

Model load_model_dir(const std::string& dir) {
  // default_model_dir() finds none: say so, not ": no such model directory".
  if (dir.empty())
    throw InputError("ordo::Pipeline",
                     "no model directory given (default_model_dir() found none: set ORDO_MODEL, "
                     "or install ordo with cmake --install, or pass a model directory)");
  if (!is_dir(dir)) throw InputError(dir, "no such model directory");
  return Model::load(dir);
}

}  // namespace

namespace {
// Each pooling's name, as the command line, Python and the messages spell it.
const std::pair<const char*, Pooling> kPoolingNames[] = {{"mean", Pooling::Mean},
                                                         {"first", Pooling::First},
                                                         {"max", Pooling::Max},
                                                         {"mean-sqrt-len", Pooling::MeanSqrtLen},
                                                         {"weighted-mean", Pooling::WeightedMean},
                                                         {"last", Pooling::Last},
                                                         {"none", Pooling::None}};
}  // namespace

bool pooling_from_name(const std::string& name, Pooling* out) {
  for (const auto& [n, p] : kPoolingNames)
    if (name == n) return *out = p, true;
  return false;
}

const char* pooling_name(Pooling pooling) {
  for (const auto& [n, p] : kPoolingNames)
    if (p == pooling) return n;
  return "none";
}

const char* pooling_names() {  // "mean, first, ... or none"
  static const std::string names = [] {
    std::string s;
    const size_t count = std::size(kPoolingNames);
    for (size_t i = 0; i < count; ++i)
      s += std::string(i == 0 ? "" : i + 1 == count ? " or " : ", ") + kPoolingNames[i].first;
    return s;
  }();
  return names.c_str();
}

std::vector<float> pool(const float* rows, int L, int d, Pooling pooling) {
  std::vector<float> v(size_t(pooling == Pooling::None ? L : 1) * d, 0.0f);
  if (pooling == Pooling::None) {
    std::copy_n(rows, size_t(L) * d, v.data());
  } else if (pooling == Pooling::First) {
    if (L > 0) std::copy_n(rows, d, v.data());
  } else if (pooling == Pooling::Last) {
    if (L > 0) std::copy_n(rows + size_t(L - 1) * d, d, v.data());
  } else if (pooling == Pooling::Max) {
    if (L > 0) std::copy_n(rows, d, v.data());
    for (int t = 1; t < L; ++t)
      for (int j = 0; j < d; ++j) v[j] = std::max(v[j], rows[size_t(t) * d + j]);
  } else if (L > 0) {  // Σ_t w_t·h_t / Σ_t w_t: w_t = 1 (Mean), t + 1 (WeightedMean); √L the divisor of MeanSqrtLen
    const bool weighted = pooling == Pooling::WeightedMean;
    std::vector<double> sum(d, 0.0);
    for (int t = 0; t < L; ++t)
      for (int j = 0; j < d; ++j) sum[j] += (weighted ? t + 1.0 : 1.0) * rows[size_t(t) * d + j];
    const double divisor = pooling == Pooling::MeanSqrtLen ? std::sqrt(double(L))
                           : weighted                      ? 0.5 * double(L) * (L + 1.0)
                                                           : double(L);
    for (int j = 0; j < d; ++j) v[j] = static_cast<float>(sum[j] / divisor);
  }
  return v;
}

LineReader::LineReader(std::FILE* in, std::string name, size_t keep)
    : in_(in), name_(std::move(name)), keep_(keep), buf_(size_t(1) << 16) {}

namespace {

// Up to n bytes of what has arrived: one read(2), which returns a pipe's line as soon as it is
// written, where fread would wait for all n; fread for a stream without a descriptor (fmemopen).
size_t read_some(std::FILE* in, char* dst, size_t n, const std::string& name) {
  const int fd = ::fileno(in);
  if (fd < 0) {
    const size_t got = std::fread(dst, 1, n, in);
    if (got == 0 && std::ferror(in)) throw InputError(name, std::string("cannot read: ") + std::strerror(errno));
    return got;
  }
  for (;;) {
    const ssize_t got = ::read(fd, dst, n);
    if (got >= 0) return size_t(got);
    if (errno != EINTR) throw InputError(name, std::string("cannot read: ") + std::strerror(errno));
  }
}

}  // namespace

bool LineReader::fill() {
  if (eof_) return false;
  pos_ = 0;
  end_ = read_some(in_, buf_.data(), buf_.size(), name_);
  if (end_ == 0) {
    eof_ = true;
    return false;
  }
  return true;
}

bool LineReader::next(Line* line) {
  while (rest_of_line_) {  // the end of a line returned before it
    if (pos_ == end_ && !fill()) return false;
    const char* nl = static_cast<const char*>(std::memchr(buf_.data() + pos_, '\n', end_ - pos_));
    pos_ = nl ? size_t(nl - buf_.data()) + 1 : end_;
    rest_of_line_ = !nl;
  }
  if (pos_ == end_ && !fill()) return false;
  if (number_ == 0) {                   // the start of the stream: byte-order marks
    while (end_ - pos_ < 3 && !eof_) {  // a short read (a pipe): gather the first three bytes
      std::memmove(buf_.data(), buf_.data() + pos_, end_ - pos_);
      end_ -= pos_;
      pos_ = 0;
      const size_t n = read_some(in_, buf_.data() + end_, buf_.size() - end_, name_);
      if (n == 0) eof_ = true;
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
  line->whole = true;
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
    if (!fill()) break;         // the end of the input ends the line (and its CR is dropped below)
    if (line->bytes > limit) {  // too long already, and more follows: the rest is not read now
      line->whole = false;
      rest_of_line_ = true;
      return true;
    }
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

// Where `cmake --install` puts the default model when the prefix is the one configured.
#ifndef ORDO_CONFIGURED_MODEL_DIR
#define ORDO_CONFIGURED_MODEL_DIR ""
#endif

std::string default_model_dir(const std::string& installed) {
  if (const char* env = std::getenv("ORDO_MODEL"); env && *env) return env;
  const std::string exe = executable_dir();
  for (const std::string& dir : {exe + "/models/default", exe + "/../share/ordo/models/default"})
    if (!exe.empty() && is_dir(dir)) return dir;
  if (!installed.empty()) return installed;
  // A program built without find_package(ordo) (plain flags, pkg-config) still finds the model of
  // an installation at the configured prefix.
  return is_dir(ORDO_CONFIGURED_MODEL_DIR) ? ORDO_CONFIGURED_MODEL_DIR : "";
}

namespace {
// A Dense module's tensor as float32 (F32, F16 or BF16 in the file), of the shape its config.json gives,
// every value finite.
std::vector<float> dense_tensor(const SafeTensors& f, const std::string& name, const std::vector<uint64_t>& shape) {
  const auto text = [](const std::vector<uint64_t>& s) {
    std::string t = "[";
    for (size_t i = 0; i < s.size(); ++i) t += (i ? "," : "") + std::to_string(s[i]);
    return t + "]";
  };
  const TensorInfo* t = f.find(name);
  if (!t) throw InputError(f.path(), "missing tensor " + name + " " + text(shape));
  if (t->shape != shape)
    throw InputError(f.path(),
                     "tensor " + name + " has shape " + text(t->shape) + ", config.json wants " + text(shape));
  std::vector<float> v = widen_to_f32(*t, f.path());
  for (size_t i = 0; i < v.size(); ++i) {
    if (!std::isfinite(v[i]))
      throw InputError(f.path(), "tensor " + name + " holds " + (std::isnan(v[i]) ? "NaN" : "infinity") +
                                     " at element " + std::to_string(i));
  }
  return v;
}

// The weights of the model's Dense modules (Config::dense), read once: W (out, in), b (out) or empty.
struct DenseWeights {
  std::vector<float> w, b;
};
std::vector<DenseWeights> load_dense(const Model& m) {
  std::vector<DenseWeights> all;
  for (const DenseModule& d : m.config().dense) {
    const std::string dir = m.dir + "/" + d.path;
    require_safetensors(dir);  // pytorch_model.bin alone: the one-line conversion, as for the encoder
    const SafeTensors f(dir + "/model.safetensors");
    DenseWeights w;
    w.w = dense_tensor(f, "linear.weight", {uint64_t(d.out_features), uint64_t(d.in_features)});
    if (d.bias) w.b = dense_tensor(f, "linear.bias", {uint64_t(d.out_features)});
    all.push_back(std::move(w));
  }
  return all;
}

// v' = act(v·Wᵀ + b) for each Dense module in turn, on n pooled vectors at once (rows, n × d_model wide);
// returns them (n × the last out_features).
std::vector<float> apply_dense(std::vector<float> rows, int n, const Config& c, const std::vector<DenseWeights>& w) {
  for (size_t k = 0; k < c.dense.size(); ++k) {
    const DenseModule& d = c.dense[k];
    std::vector<float> y(size_t(n) * d.out_features);
    linear(y.data(), rows.data(), w[k].w.data(), w[k].b.empty() ? nullptr : w[k].b.data(), n, d.in_features,
           d.out_features);
    for (float& x : y) {
      const double v = x;
      x = static_cast<float>(d.activation == DenseActivation::Tanh      ? std::tanh(v)
                             : d.activation == DenseActivation::ReLU    ? std::max(v, 0.0)
                             : d.activation == DenseActivation::Sigmoid ? 1.0 / (1.0 + std::exp(-v))
                             : d.activation == DenseActivation::GELU    ? 0.5 * v * (1.0 + std::erf(v / std::sqrt(2.0)))
                                                                        : v);
    }
    rows = std::move(y);
  }
  return rows;
}
}  // namespace

// What a Pipeline holds, in one place that never moves: the encoder keeps a reference to the model.
struct Pipeline::Impl {
  explicit Impl(const std::string& model_dir)
      : model(load_model_dir(model_dir)),
        tokenizer(Tokenizer::load(model_dir + "/" + model.config().tokenizer)),
        encoder(model),
        dense(load_dense(model)) {}
  // InputError naming the first layer and stage with a value that is not finite, if the output
  // `h` of `ids` holds one; `what` names the sequences in the message ("texts[2]").
  void check_finite(const Hidden& h, const std::vector<std::vector<int32_t>>& ids, const EncodeOptions& options,
                    const char* what);
  // BOS before t and EOS after it, where the config asks for them.
  void add_specials(Tokenization& t) const {
    const Config& c = model.config();
    if (c.add_bos) {
      t.ids.insert(t.ids.begin(), tokenizer.bos_id());
      t.pieces.insert(t.pieces.begin(), tokenizer.piece(tokenizer.bos_id()));
    }
    // T5Tokenizer adds no </s> to a text whose last piece is one already ("... </s>" in the text)
    if (c.add_eos && !(c.family == Family::T5 && !t.ids.empty() && t.ids.back() == tokenizer.eos_id())) {
      t.ids.push_back(tokenizer.eos_id());
      t.pieces.push_back(tokenizer.piece(tokenizer.eos_id()));
    }
  }

  Model model;
  Tokenizer tokenizer;
  Encoder encoder;
  std::vector<DenseWeights> dense;
};

Pipeline::Pipeline(Pipeline&&) noexcept = default;
Pipeline& Pipeline::operator=(Pipeline&&) noexcept = default;
Pipeline::~Pipeline() = default;

const Config& Pipeline::config() const {
  return impl_->model.config();
}
const std::string& Pipeline::model_dir() const {
  return impl_->model.dir;
}
const Tokenizer& Pipeline::tokenizer() const {
  return impl_->tokenizer;
}
const Model& Pipeline::model() const {
  return impl_->model;
}
void Pipeline::set_compute_type(ComputeType type) {
  impl_->encoder.set_compute_type(type);
}
ComputeType Pipeline::compute_type() const {
  return impl_->encoder.compute_type();
}
void Pipeline::set_masked_heads(const std::vector<HeadIndex>& heads) {
  impl_->encoder.set_masked_heads(heads);
}
std::vector<HeadIndex> Pipeline::masked_heads() const {
  return impl_->encoder.masked_heads();
}

std::vector<float> Pipeline::head_logits(const float* hidden, int rows) const {
  require_head(false);
  std::vector<float> out(size_t(std::max(rows, 0)) * config().vocab_size);
  mlm_logits(out.data(), hidden, rows, impl_->model);
  return out;
}

Pipeline::Pipeline(const std::string& model_dir) : impl_(std::make_unique<Impl>(model_dir)) {
  const Config& c = config();
  const std::string& where = impl_->tokenizer.path();
  if (impl_->tokenizer.size() > c.vocab_size)
    throw InputError(where, "has " + std::to_string(impl_->tokenizer.size()) + " pieces but vocab_size is " +
                                std::to_string(c.vocab_size) + " (its ids would index past the embedding table)");
  if (c.add_bos && impl_->tokenizer.bos_id() < 0)
    throw InputError(where, "config sets add_bos but the tokenizer has no BOS piece");
  if (c.add_eos && impl_->tokenizer.eos_id() < 0)
    throw InputError(where, "config sets add_eos but the tokenizer has no EOS piece");
  impl_->tokenizer.keep_special_tokens_below(c.vocab_size);  // T5's sentinels past a small vocabulary
}

// The most bytes the tokenizer may make of one text on this model and machine, whoever calls (prepare
// holds a text to its caller's limit first): 3 per byte of max_text_bytes(max_tokens()), + 3.
void Pipeline::check_normalized(std::string_view text, const std::string& where) const {
  const uint64_t ceiling = 3 * uint64_t(max_text_bytes(max_tokens())) + 3;
  if (impl_->tokenizer.normalized_bytes(text, ceiling) > ceiling)
    throw InputError(where, "text normalizes (NFKC) to more than " + std::to_string(ceiling) + " bytes, more than " +
                                max_tokens_reason() + " allows (3 per byte of a text's " +
                                std::to_string(max_text_bytes(max_tokens())) + ")");
}

Tokenization Pipeline::tokenize(std::string_view text, const std::string& where, std::vector<Span>* spans) const {
  if (spans) spans->clear();
  check_normalized(text, where);
  Tokenization t = impl_->tokenizer.encode(text, where, spans);
  impl_->add_specials(t);
  if (spans && config().add_bos) spans->insert(spans->begin(), Span{0, 0});
  if (spans && config().add_eos) spans->push_back(Span{text.size(), text.size()});
  return t;
}

int Pipeline::unknown_pieces(const Tokenization& t) const {
  const int unk = impl_->tokenizer.unk_id();
  return int(std::count(t.ids.begin(), t.ids.end(), unk));
}

int Pipeline::max_tokens() const {
  // The largest S whose working memory for one text fits in half of this machine's memory;
  // activation_bytes grows with S, so a binary search finds it.
  const uint64_t budget = machine_memory_bytes() / 2;
  int lo = 0, hi = std::min(position_limit(config()), 1 << 24);  // 2^24 tokens: petabytes of scores
  if (impl_->encoder.activation_bytes(1, uint64_t(hi)) <= budget) return hi;
  while (lo + 1 < hi) {
    const int mid = lo + (hi - lo) / 2;
    (impl_->encoder.activation_bytes(1, uint64_t(mid)) <= budget ? lo : hi) = mid;
  }
  return lo;
}

std::string Pipeline::max_tokens_reason() const {
  const int n = max_tokens();
  const Config& c = config();
  if (n == position_limit(c) && n == c.max_length) return "the model's max_seq_length " + std::to_string(n);
  if (n == position_limit(c)) return "the model's max_positions " + std::to_string(n);
  return "this machine's memory (a text of at most " + std::to_string(n) + " tokens)";
}

void Pipeline::truncate(Tokenization& t, int n) const {
  if (n < 1 || t.ids.size() <= size_t(n)) return;
  t.ids.resize(n);
  t.pieces.resize(n);
  if (config().add_eos) {
    t.ids.back() = impl_->tokenizer.eos_id();
    t.pieces.back() = impl_->tokenizer.piece(t.ids.back());
  }
}

const char* version() {
  return ORDO_VERSION;
}

// ---- Process start-up -----------------------------------------------------------------------------

bool under_memory_limit() {
  for (int resource : {RLIMIT_AS, RLIMIT_DATA}) {
    struct rlimit r {};
    if (::getrlimit(resource, &r) == 0 && r.rlim_cur != RLIM_INFINITY) return true;
  }
  return false;
}

void start_without_openblas_workers(char** argv) {
  static constexpr const char* kUserThreads = "ORDO_USER_OPENBLAS_NUM_THREADS";
  if (const char* saved = std::getenv(kUserThreads)) {  // the second start: put the user's value back
    if (*saved)
      ::setenv("OPENBLAS_NUM_THREADS", saved + 1, 1);  // "=" + the value, or "" when it was unset
    else
      ::unsetenv("OPENBLAS_NUM_THREADS");
    ::unsetenv(kUserThreads);
    return;
  }
  if (openblas_get_num_threads() <= 1 || !under_memory_limit()) return;
  const char* set = std::getenv("OPENBLAS_NUM_THREADS");
  const bool had = set != nullptr;
  const std::string user = had ? set : "";
  ::setenv(kUserThreads, had ? ("=" + user).c_str() : "", 1);
  ::setenv("OPENBLAS_NUM_THREADS", "1", 1);
  ::execv("/proc/self/exe", argv);
  ::unsetenv(kUserThreads);  // no second start (no /proc): go on as before
  had ? ::setenv("OPENBLAS_NUM_THREADS", user.c_str(), 1) : ::unsetenv("OPENBLAS_NUM_THREADS");
}

std::vector<float> Pipeline::observe(const std::vector<int32_t>& ids, const EncodeOptions& options, bool reference) {
  const Config& c = config();
  if (reference) {
    std::vector<float> rows;
    const reference::Watch watch(
        [&](StageKind kind, int layer, int head, const double* data, int n, int cols, int stride) {
          rows.resize(size_t(n) * cols);
          for (int t = 0; t < n; ++t)
            for (int j = 0; j < cols; ++j) rows[size_t(t) * cols + j] = float(data[size_t(t) * stride + j]);
          if (!options.observe) return;
          const StageText& st = stage_text(kind, c, sees_order(options.positions));
          options.observe({kind, st.name, st.equation, layer, head, rows.data(), n, cols, cols});
        });
    const std::vector<double> h =
        reference::forward(impl_->model, ids, options.positions, impl_->encoder.masked_heads());
    return std::vector<float>(h.begin(), h.end());
  }
  const Hidden h = impl_->encoder.forward({ids}, options);
  return std::vector<float>(h.row(0, 0), h.row(0, 0) + ids.size() * size_t(c.d_model));
}

// ---- The rules a text meets on its way in --------------------------------------------------------

size_t max_text_bytes(int max_tokens) {
  return size_t(std::min<uint64_t>(uint64_t(std::max(max_tokens, 0)) * 256, machine_memory_bytes() / 256));
}

size_t utf8_prefix(std::string_view s, size_t n) {
  if (n >= s.size()) return s.size();
  while (n > 0 && (static_cast<unsigned char>(s[n]) & 0xc0) == 0x80) --n;
  return n;
}

ComputeType compute_type_from_name(const std::string& name, const std::string& option) {
  ComputeType type;
  try {
    type = parse_compute_type(name);
  } catch (const std::invalid_argument&) {
    throw std::invalid_argument(option + " must be f32, bf16 or int8, got \"" + name + "\"");
  }
  if (!compute_type_available(type) && !have_onednn())
    throw std::invalid_argument(option + " " + name + ": this build has no oneDNN (install libdnnl-dev)");
  if (!compute_type_available(type))  // bf16 where no kernel runs it (engine/kernels/reduced.h)
    throw std::invalid_argument(option + " " + name + ": " + kBf16Needs);
  return type;
}

Tokenization Pipeline::prepare(std::string_view text, const std::string& where, const TextLimits& limits,
                               bool* truncated, uint64_t bytes, bool masked, bool whole) const {
  if (truncated) *truncated = false;
  if (bytes == 0) bytes = text.size();
  // The limit is the caller's, or less where the model or this machine's memory allows less
  // (and then the message names theirs).
  const bool callers = limits.max_tokens <= max_tokens();
  const int limit = token_limit(limits);
  const std::string limit_name =
      callers ? limits.max_tokens_name + std::to_string(limits.max_tokens) : max_tokens_reason();
  const std::string& hint = limits.truncate_hint;  // empty: the caller cannot truncate
  const std::string advice = callers        ? "raise it" + (hint.empty() ? "" : ", or " + hint)
                             : hint.empty() ? ""
                                            : hint + " to cut it";
  const size_t max_bytes = max_text_bytes(limit);
  const bool may_cut = limits.truncate && !masked;
  std::string_view use = text;  // what goes to the tokenizer
  bool cut = false;
  if (bytes > max_bytes) {  // tokenizing takes ~70 bytes of memory per byte of text
    if (!may_cut)
      throw InputError(where, "text is " + std::string(whole ? "" : "at least ") + std::to_string(bytes) +
                                  " bytes, more than " + limit_name + " allows (" + std::to_string(max_bytes) +
                                  " bytes" + (advice.empty() ? "" : "; " + advice) + ")");
    // The cut falls before the character that crosses max_bytes; more than 3 bytes back can only
    // be a run of continuation bytes, which is not UTF-8 (and would otherwise leave nothing).
    const size_t at = utf8_prefix(text, max_bytes);
    if (max_bytes - at > 3) throw InputError(where, "invalid UTF-8 at byte " + std::to_string(at));
    use = text.substr(0, at), cut = true;
  }
  // ... and per byte the tokenizer makes of it: NFKC makes 33 bytes of the 3 of U+FDFA, so a line
  // of them within the byte limit took 18 times the memory of one of ASCII. The bytes it makes are
  // bounded before it makes them (Tokenizer::normalized_bytes): at most 3 per byte allowed (+ 3),
  // what a text of spaces makes (each a "▁" of 3 bytes), so only text that expands more than that
  // can meet this limit before the byte limit.
  const uint64_t max_normalized = 3 * uint64_t(max_bytes) + 3;
  size_t within = use.size();
  if (impl_->tokenizer.normalized_bytes(use, max_normalized, &within) > max_normalized) {
    if (!may_cut)
      throw InputError(where, "text normalizes (NFKC) to more than " + std::to_string(max_normalized) +
                                  " bytes, more than " + limit_name + " allows (3 per byte of its " +
                                  std::to_string(max_bytes) + (advice.empty() ? "" : "; " + advice) + ")");
    use = use.substr(0, within), cut = true;
  }
  if (cut) {
    if (truncated) *truncated = true;
    Tokenization t = tokenize(use, where);
    truncate(t, limit);
    return t;
  }
  Tokenization t = masked ? tokenize_masked(text, where) : tokenize(text, where);
  if (int(t.ids.size()) > limit) {
    if (!may_cut)
      throw InputError(where, "text has " + std::to_string(t.ids.size()) + " tokens, more than " + limit_name +
                                  (advice.empty() ? "" : " (" + advice + ")"));
    truncate(t, limit);
    if (truncated) *truncated = true;
  }
  return t;
}

void Pipeline::check_runnable(const Tokenization& t, const std::string& where) const {
  if (int(t.ids.size()) > max_tokens())
    throw InputError(
        where, "text has " + std::to_string(t.ids.size()) + " tokens, more than " + max_tokens_reason() + " allows");
}

void Pipeline::check_scorable(const Tokenization& t, const std::string& where, int max_pieces,
                              const std::string& option) const {
  check_runnable(t, where);
  if (int(t.ids.size()) > max_pieces) {
    std::string bare = option;  // "--max-tokens " or "max_tokens=" as a word
    while (!bare.empty() && (bare.back() == ' ' || bare.back() == '=')) bare.pop_back();
    throw InputError(where, "text has " + std::to_string(t.ids.size()) + " pieces, more than " + option +
                                std::to_string(max_pieces) +
                                " (scoring S pieces costs S passes of S pieces, growing with S^3: raise " + bare +
                                " to score it anyway)");
  }
  // The mask piece in a text to score (a tokenizer whose <mask> is a user-defined piece, matched in
  // text): its probability at a masked copy is no likelihood of the text, so it is refused by name.
  const int mask = mask_id();
  if (mask >= 0 && std::find(t.ids.begin(), t.ids.end(), mask) != t.ids.end())
    throw InputError(where, "the text holds <mask>, the model's mask piece (id " + std::to_string(mask) +
                                "), which score cannot score: it gives the likelihood of a text (ordo fill fills "
                                "masks)");
}

std::vector<Encoded> Pipeline::encode(const std::vector<std::string>& texts, Pooling pooling, bool normalize,
                                      const EncodeOptions& options) {
  std::vector<Tokenization> tokens;  // an error names the text: "texts[2]: ..."
  for (size_t i = 0; i < texts.size(); ++i) tokens.push_back(tokenize(texts[i], "texts[" + std::to_string(i) + "]"));
  if (options.observe || tokens.size() <= 1) return encode(std::move(tokens), pooling, normalize, options);
  std::vector<Encoded> out(tokens.size());
  encode_sorted(
      std::move(tokens), pooling, normalize, options, kBatchTexts,
      [](size_t i) { return "texts[" + std::to_string(i) + "]"; },
      [&](size_t i, Encoded& e) { out[i] = std::move(e); });
  return out;
}

// Finite weights can still give activations past float32's range (weights large enough that a
// product overflows). Such a pass is refused, naming where it first happens: the sequence is run
// once more, alone, with an observer that stops at the first stage holding a value that is not
// finite. Only a failed pass pays for that; a good one costs a scan of its output.
void Pipeline::Impl::check_finite(const Hidden& h, const std::vector<std::vector<int32_t>>& ids,
                                  const EncodeOptions& options, const char* what) {
  for (int b = 0; b < h.B; ++b) {
    const float* x = h.row(b, 0);
    const size_t n = size_t(h.lengths[b]) * h.d;
    size_t bad = 0;
    while (bad < n && std::isfinite(x[bad])) ++bad;
    if (bad == n) continue;
    std::string where = "the output";
    EncodeOptions find = options;
    find.observe = [&, found = false](const Stage& s) mutable {
      if (found) return;
      for (int r = 0; r < s.rows && !found; ++r)
        for (int c = 0; c < s.cols && !found; ++c)
          if (!std::isfinite(s.data[size_t(r) * s.stride + c])) {
            found = true;
            where = (s.layer >= 0 ? "layer " + std::to_string(s.layer) + ", " : std::string()) + "stage \"" + s.name +
                    "\"" + (s.head >= 0 ? " (head " + std::to_string(s.head) + ")" : "") + ", token " +
                    std::to_string(r) + " (" + s.equation + ")";
          }
    };
    encoder.forward({ids[b]}, find);
    throw NonFiniteActivations((model.dir.empty() ? std::string("model") : model.dir) + "/model.safetensors", what,
                               size_t(b),
                               "the activations are not finite (the weights are finite, but too large for float32 "
                               "arithmetic); the first value that is not is in " +
                                   where);
  }
}

void Pipeline::encode_sorted(std::vector<Tokenization> tokens, Pooling pooling, bool normalize,
                             const EncodeOptions& options, size_t max_texts,
                             const std::function<std::string(size_t)>& name,
                             const std::function<void(size_t, Encoded&)>& take) {
  const size_t n = tokens.size();
  std::vector<size_t> order(n);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return tokens[a].ids.size() < tokens[b].ids.size(); });
  for (size_t done = 0; done < n;) {
    size_t end = done + 1;  // sorted ascending, so the last text of a batch is its longest
    while (end < n && end - done < max_texts &&
           (end - done + 1) * std::max<size_t>(tokens[order[end]].ids.size(), 1) <= kBatchTokens)
      ++end;
    std::vector<Tokenization> batch;
    for (size_t i = done; i < end; ++i) batch.push_back(std::move(tokens[order[i]]));
    std::vector<Encoded> results;
    try {
      results = encode(std::move(batch), pooling, normalize, options);
    } catch (const NonFiniteActivations& e) {  // named by the caller's name, not its place in a batch
      throw InputError(e.file, name(order[done + e.sequence]) + ": " + e.message);
    }
    for (size_t i = done; i < end; ++i) take(order[i], results[i - done]);
    done = end;
  }
}

std::vector<Encoded> Pipeline::encode(std::vector<Tokenization> tokens, Pooling pooling, bool normalize,
                                      const EncodeOptions& options) {
  std::vector<std::vector<int32_t>> ids;
  for (const Tokenization& t : tokens) ids.push_back(t.ids);
  const Hidden hidden = impl_->encoder.forward(ids, options);
  impl_->check_finite(hidden, ids, options, "texts");
  std::vector<Encoded> out(tokens.size());
  for (size_t b = 0; b < tokens.size(); ++b) {
    out[b].tokens = std::move(tokens[b]);
    out[b].values = pool(hidden.row(int(b), 0), hidden.lengths[b], hidden.d, pooling);
    out[b].rows = pooling == Pooling::None ? hidden.lengths[b] : 1;
  }
  const int w = width(pooling);
  if (pooling != Pooling::None && !impl_->dense.empty()) {  // the pooled vectors through the Dense modules, at once
    const int n = int(out.size());
    std::vector<float> rows(size_t(n) * hidden.d);
    for (int b = 0; b < n; ++b) std::copy_n(out[b].values.data(), hidden.d, rows.data() + size_t(b) * hidden.d);
    rows = apply_dense(std::move(rows), n, config(), impl_->dense);
    for (int b = 0; b < n; ++b) out[b].values.assign(rows.begin() + size_t(b) * w, rows.begin() + size_t(b + 1) * w);
  }
  if (normalize)  // v / ‖v‖₂, row by row; a zero row stays zero
    for (Encoded& e : out)
      for (int r = 0; r < e.rows; ++r) {
        float* v = e.values.data() + size_t(r) * w;
        double sq = 0.0;
        for (int j = 0; j < w; ++j) sq += double(v[j]) * v[j];
        if (sq > 0)
          for (int j = 0; j < w; ++j) v[j] = static_cast<float>(v[j] / std::sqrt(sq));
      }
  return out;
}

Pooling Pipeline::model_pooling() const {
  Pooling p = Pooling::Mean;
  pooling_from_name(config().pooling, &p);  // "" (the directory says nothing): the mean
  return p;
}

int Pipeline::width(Pooling pooling) const {
  const Config& c = config();
  return pooling == Pooling::None || c.dense.empty() ? c.d_model : c.dense.back().out_features;
}

std::vector<std::pair<int32_t, double>> top_k(const float* logits, int n, int k) {
  k = std::max(0, std::min(k, n));
  std::vector<int32_t> ids(n);
  std::iota(ids.begin(), ids.end(), 0);
  std::partial_sort(ids.begin(), ids.begin() + k, ids.end(),
                    [&](int32_t a, int32_t b) { return logits[a] > logits[b] || (logits[a] == logits[b] && a < b); });
  const double lse = log_sum_exp(logits, n);
  std::vector<std::pair<int32_t, double>> out;
  for (int i = 0; i < k; ++i) out.emplace_back(ids[i], std::exp(double(logits[ids[i]]) - lse));
  return out;
}

void Pipeline::require_head(bool need_mask) const {
  const std::string dir = model_dir().empty() ? std::string("model") : model_dir();
  if (!has_head() && config().family != Family::Ordo)  // a BertModel, as sentence-transformers' models are
    throw InputError(dir,
                     "has no masked-LM head (fill and score need a BertForMaskedLM, XLMRobertaForMaskedLM or "
                     "DistilBertForMaskedLM checkpoint, with cls.predictions.* / lm_head.* / vocab_* weights)");
  if (!has_head())
    throw InputError(dir + "/config.json",
                     "the model has no masked-language-model head (\"head\": \"mlm\"), so it cannot fill or score "
                     "text; the default model has one");
  if (need_mask && mask_id() < 0)
    throw InputError(impl_->tokenizer.path(), std::string("has no ") + impl_->tokenizer.mask_marker() +
                                                  " piece, so the head cannot be asked about a piece (a masked "
                                                  "language model's tokenizer has it as a control symbol)");
}

Tokenization Pipeline::tokenize_masked(std::string_view text, const std::string& where, std::vector<int>* masks) const {
  check_normalized(text, where);
  Tokenization t = impl_->tokenizer.encode_masked(text, where, masks);
  impl_->add_specials(t);
  if (masks && config().add_bos)
    for (int& m : *masks) ++m;
  return t;
}

std::vector<float> Pipeline::logits(const std::vector<std::vector<int32_t>>& ids, const std::vector<Row>& rows,
                                    bool positions, int first_position) {
  require_head(false);
  const int d = config().d_model, V = config().vocab_size;
  for (const Row& r : rows)
    if (r.sequence < 0 || size_t(r.sequence) >= ids.size() || r.position < 0 ||
        size_t(r.position) >= ids[r.sequence].size())
      throw std::out_of_range("Pipeline::logits: row (" + std::to_string(r.sequence) + ", " +
                              std::to_string(r.position) + ") is outside the batch");
  std::vector<float> out(rows.size() * size_t(V));
  if (rows.empty()) return out;

  // Without order the encoder computes the same numbers for any permutation of a sequence, up to
  // summation order: run the ids sorted, each distinct sorted sequence once, and read each row where
  // its piece went. Two reorderings of one text then get the very same numbers, wherever they sit
  // in the batch.
  const std::vector<std::vector<int32_t>>* run = &ids;
  std::vector<std::vector<int32_t>> sorted;
  std::vector<int> slot(ids.size());    // slot[b]: the sequence that runs for sequence b
  std::vector<std::vector<int>> moved;  // moved[b][t]: where position t of sequence b went
  std::iota(slot.begin(), slot.end(), 0);
  if (!sees_order(positions)) {
    std::map<std::vector<int32_t>, int> seen;
    moved.resize(ids.size());
    for (size_t b = 0; b < ids.size(); ++b) {
      std::vector<int> order(ids[b].size());
      std::iota(order.begin(), order.end(), 0);
      std::stable_sort(order.begin(), order.end(), [&](int x, int y) { return ids[b][x] < ids[b][y]; });
      std::vector<int32_t> key(order.size());
      moved[b].resize(order.size());
      for (size_t i = 0; i < order.size(); ++i) {
        key[i] = ids[b][order[i]];
        moved[b][order[i]] = int(i);
      }
      const auto [at, fresh] = seen.emplace(std::move(key), int(sorted.size()));
      if (fresh) sorted.push_back(at->first);
      slot[b] = at->second;
    }
    run = &sorted;
  }
  EncodeOptions options;
  options.positions = positions;
  options.first_position = first_position;
  const Hidden h = impl_->encoder.forward(*run, options);
  impl_->check_finite(h, *run, options, "sequences");
  // The rows asked for, each distinct one once (a matrix product's rounding may depend on where a
  // row sits in it, so equal rows are computed once and copied).
  std::map<std::pair<int, int>, int> unique;
  std::vector<int> source(rows.size());
  std::vector<float> gathered;
  for (size_t i = 0; i < rows.size(); ++i) {
    const int b = slot[rows[i].sequence];
    const int t = moved.empty() ? rows[i].position : moved[rows[i].sequence][rows[i].position];
    const auto [at, fresh] = unique.emplace(std::pair{b, t}, int(unique.size()));
    if (fresh) gathered.insert(gathered.end(), h.row(b, t), h.row(b, t) + d);
    source[i] = at->second;
  }
  std::vector<float> z(unique.size() * size_t(V));
  mlm_logits(z.data(), gathered.data(), int(unique.size()), impl_->model);
  for (size_t i = 0; i < rows.size(); ++i) std::copy_n(z.data() + size_t(source[i]) * V, V, out.data() + i * size_t(V));
  return out;
}

std::vector<Scored> Pipeline::pseudo_log_likelihood(const std::vector<std::vector<int32_t>>& ids, bool positions,
                                                    int skip_front, int skip_back) {
  require_head(true);
  const int32_t mask = mask_id();
  const int V = config().vocab_size;
  std::vector<Scored> out(ids.size());
  for (size_t s = 0; s < ids.size(); ++s) {
    const std::vector<int32_t>& seq = ids[s];
    const int L = int(seq.size());
    const int first = std::min(std::max(skip_front, 0), L), end = std::max(first, L - std::max(skip_back, 0));
    out[s].tokens.ids = seq;
    out[s].log_probs.assign(L, 0.0);
    // The positions to mask. Without order they go in the order of their pieces' ids, so that a
    // reordered sequence makes the very same batches (see logits()) and the same sum.
    std::vector<int> targets(std::max(end - first, 0));
    std::iota(targets.begin(), targets.end(), first);
    if (!sees_order(positions))
      std::stable_sort(targets.begin(), targets.end(), [&](int x, int y) { return seq[x] < seq[y]; });
    // The copies of one sequence, as few batches as fit kPllBatchTokens (each copy is L tokens).
    const size_t per_batch = size_t(std::max(1, kPllBatchTokens / std::max(L, 1)));
    for (size_t i0 = 0; i0 < targets.size(); i0 += per_batch) {
      const size_t n = std::min(per_batch, targets.size() - i0);
      std::vector<std::vector<int32_t>> copies(n, seq);
      std::vector<Row> rows(n);
      for (size_t i = 0; i < n; ++i) {
        copies[i][targets[i0 + i]] = mask;
        rows[i] = {int(i), targets[i0 + i]};
      }
      const std::vector<float> z = logits(copies, rows, positions);
      for (size_t i = 0; i < n; ++i) {
        const float* row = z.data() + i * V;
        const int t = targets[i0 + i];
        out[s].log_probs[t] = double(row[seq[t]]) - log_sum_exp(row, V);
      }
    }
    double pll = 0.0;
    for (int t : targets) pll += out[s].log_probs[t];
    out[s].pll = pll;
  }
  return out;
}

Filled Pipeline::fill(std::string_view text, int k, bool positions, const std::string& where, bool words,
                      int first_position) {
  require_head(true);
  Filled f;
  std::vector<int> masks;
  f.tokens = tokenize_masked(text, where, &masks);
  if (masks.empty()) {
    const std::string marker = tokenizer().mask_marker();
    throw InputError(where, "holds no " + marker + ": write " + marker +
                                " where a piece should be filled in, e.g. \"the cat sat on the " + marker + ".\"");
  }
  std::vector<Row> rows;
  for (int m : masks) rows.push_back({0, m});
  const int V = config().vocab_size;
  const std::vector<float> z = logits({f.tokens.ids}, rows, positions, first_position);
  for (size_t i = 0; i < masks.size(); ++i) {
    Filled::Mask m;
    m.position = masks[i];
    const float* row = z.data() + i * size_t(V);
    if (!words) {
      for (const auto& [id, p] : top_k(row, V, k)) m.top.push_back({id, impl_->tokenizer.piece(id), p});
    } else {  // the pieces that start a word ("▁" and more; byte-level BPE's "Ġ"), by logit; p still over the whole
              // vocabulary
      const std::string kWordStart = impl_->tokenizer.kind() == std::string("byte-level bpe") ? "\u0120" : "\u2581";
      std::vector<int32_t> ids;
      for (int32_t id = 0; id < V; ++id) {
        const std::string piece = impl_->tokenizer.piece(id);
        if (piece.size() > kWordStart.size() && piece.compare(0, kWordStart.size(), kWordStart) == 0) ids.push_back(id);
      }
      const size_t n = std::min(ids.size(), size_t(std::max(k, 0)));
      std::partial_sort(ids.begin(), ids.begin() + n, ids.end(),
                        [&](int32_t a, int32_t b) { return row[a] > row[b] || (row[a] == row[b] && a < b); });
      const double lse = log_sum_exp(row, V);
      for (size_t r = 0; r < n; ++r)
        m.top.push_back({ids[r], impl_->tokenizer.piece(ids[r]), std::exp(double(row[ids[r]]) - lse)});
    }
    m.logits.assign(z.begin() + i * size_t(V), z.begin() + (i + 1) * size_t(V));
    f.masks.push_back(std::move(m));
  }
  return f;
}

std::vector<Scored> Pipeline::score(const std::vector<std::string>& texts, bool positions) {
  std::vector<Tokenization> tokens;
  for (const std::string& text : texts) tokens.push_back(tokenize(text));
  return score(std::move(tokens), positions);
}

std::vector<Scored> Pipeline::score(std::vector<Tokenization> tokens, bool positions) {
  require_head(true);
  const Config& c = config();
  std::vector<Scored> out;
  for (Tokenization& t : tokens) {
    // A text of nothing but the BOS/EOS a config adds has nothing to score.
    const bool empty = int(t.ids.size()) <= int(c.add_bos) + int(c.add_eos);
    Scored s = empty ? Scored{} : std::move(pseudo_log_likelihood({t.ids}, positions, c.add_bos, c.add_eos)[0]);
    if (empty) s.log_probs.assign(t.ids.size(), 0.0);
    s.tokens = std::move(t);
    out.push_back(std::move(s));
  }
  return out;
}

}  // namespace ordo
