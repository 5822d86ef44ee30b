#include <ordo/errors.h>
#include <ordo/ordo.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>

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
  // A batch of empty texts has no rows to run (S = 0): every result is zeros, without a forward.
  const bool empty = std::all_of(ids.begin(), ids.end(), [](const auto& seq) { return seq.empty(); });
  Hidden hidden;
  if (empty) {
    hidden.B = int(ids.size());
    hidden.d = model_.config().d_model;
    hidden.lengths.assign(ids.size(), 0);
  } else {
    hidden = encoder_.forward(ids, options);
  }
  std::vector<Encoded> out(tokens.size());
  for (size_t b = 0; b < tokens.size(); ++b) {
    out[b].tokens = std::move(tokens[b]);
    out[b].values = pool(hidden, int(b), pooling);
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
