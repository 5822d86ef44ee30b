#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <string>

#include <ordo/errors.h>
#include <ordo/ordo.h>

#include "common/memory.h"

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
  if (!is_dir(dir)) throw InputError(dir, "no such model directory");
  return Model::load(dir);
}

}  // namespace

std::vector<float> pool(const float* rows, int L, int d, Pooling pooling) {
  std::vector<float> v(size_t(pooling == Pooling::None ? L : 1) * d, 0.0f);
  if (pooling == Pooling::None) {
    std::copy_n(rows, size_t(L) * d, v.data());
  } else if (pooling == Pooling::First) {
    if (L > 0) std::copy_n(rows, d, v.data());
  } else if (L > 0) {
    std::vector<double> sum(d, 0.0);
    for (int t = 0; t < L; ++t)
      for (int j = 0; j < d; ++j) sum[j] += rows[size_t(t) * d + j];
    for (int j = 0; j < d; ++j) v[j] = static_cast<float>(sum[j] / L);
  }
  return v;
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

std::string default_model_dir(const std::string& installed) {
  if (const char* env = std::getenv("ORDO_MODEL"); env && *env) return env;
  const std::string exe = executable_dir();
  for (const std::string& dir : {exe + "/models/default", exe + "/../share/ordo/models/default"})
    if (!exe.empty() && is_dir(dir)) return dir;
  return installed;
}

Pipeline::Pipeline(const std::string& model_dir)
    : model_(load_model_dir(model_dir)),
      tokenizer_(Tokenizer::load(model_dir + "/" + model_.config().tokenizer)),
      encoder_(model_) {
  const Config& c = model_.config();
  const std::string& where = tokenizer_.path();
  if (tokenizer_.size() > c.vocab_size)
    throw InputError(where, "has " + std::to_string(tokenizer_.size()) + " pieces but vocab_size is " +
                                std::to_string(c.vocab_size) + " (its ids would index past the embedding table)");
  if (c.add_bos && tokenizer_.bos_id() < 0)
    throw InputError(where, "config sets add_bos but the tokenizer has no BOS piece");
  if (c.add_eos && tokenizer_.eos_id() < 0)
    throw InputError(where, "config sets add_eos but the tokenizer has no EOS piece");
}

Tokenization Pipeline::tokenize(std::string_view text, const std::string& where) const {
  Tokenization t = tokenizer_.encode(text, where);
  const Config& c = model_.config();
  if (c.add_bos) {
    t.ids.insert(t.ids.begin(), tokenizer_.bos_id());
    t.pieces.insert(t.pieces.begin(), tokenizer_.piece(tokenizer_.bos_id()));
  }
  if (c.add_eos) {
    t.ids.push_back(tokenizer_.eos_id());
    t.pieces.push_back(tokenizer_.piece(tokenizer_.eos_id()));
  }
  return t;
}

int Pipeline::max_tokens() const {
  // The largest S whose working memory for one text fits in half of this machine's memory;
  // activation_bytes grows with S, so a binary search finds it.
  const uint64_t budget = machine_memory_bytes() / 2;
  int lo = 0, hi = std::min(position_limit(model_.config()), 1 << 24);  // 2^24 tokens: petabytes of scores
  if (encoder_.activation_bytes(1, uint64_t(hi)) <= budget) return hi;
  while (lo + 1 < hi) {
    const int mid = lo + (hi - lo) / 2;
    (encoder_.activation_bytes(1, uint64_t(mid)) <= budget ? lo : hi) = mid;
  }
  return lo;
}

std::string Pipeline::max_tokens_reason() const {
  const int n = max_tokens();
  if (n == position_limit(model_.config())) return "the model's max_positions " + std::to_string(n);
  return "this machine's memory (a text of at most " + std::to_string(n) + " tokens)";
}

void Pipeline::truncate(Tokenization& t, int n) const {
  if (n < 1 || t.ids.size() <= size_t(n)) return;
  t.ids.resize(n);
  t.pieces.resize(n);
  if (model_.config().add_eos) {
    t.ids.back() = tokenizer_.eos_id();
    t.pieces.back() = tokenizer_.piece(t.ids.back());
  }
}

std::vector<Encoded> Pipeline::encode(const std::vector<std::string>& texts, Pooling pooling, bool normalize,
                                      const EncodeOptions& options) {
  std::vector<Tokenization> tokens;
  for (const std::string& text : texts) tokens.push_back(tokenize(text));
  return encode(std::move(tokens), pooling, normalize, options);
}

std::vector<Encoded> Pipeline::encode(std::vector<Tokenization> tokens, Pooling pooling, bool normalize,
                                      const EncodeOptions& options) {
  std::vector<std::vector<int32_t>> ids;
  for (const Tokenization& t : tokens) ids.push_back(t.ids);
  const Hidden hidden = encoder_.forward(ids, options);
  std::vector<Encoded> out(tokens.size());
  for (size_t b = 0; b < tokens.size(); ++b) {
    out[b].tokens = std::move(tokens[b]);
    out[b].values = pool(hidden.row(int(b), 0), hidden.lengths[b], hidden.d, pooling);
    out[b].rows = pooling == Pooling::None ? hidden.lengths[b] : 1;
    if (normalize)  // v / ‖v‖₂, row by row; a zero row stays zero
      for (int r = 0; r < out[b].rows; ++r) {
        float* v = out[b].values.data() + size_t(r) * hidden.d;
        double sq = 0.0;
        for (int j = 0; j < hidden.d; ++j) sq += double(v[j]) * v[j];
        if (sq > 0)
          for (int j = 0; j < hidden.d; ++j) v[j] = static_cast<float>(v[j] / std::sqrt(sq));
      }
  }
  return out;
}

}  // namespace ordo
