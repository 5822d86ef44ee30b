#include <sys/stat.h>

#include <cerrno>
#include <climits>
#include <cmath>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include <ordo/engine/config.h>
#include <ordo/errors.h>

#include "common/regular_file.h"
#include "engine/strict_json.h"

namespace ordo {

using nlohmann::json;

namespace {

// Sizes beyond this are not models but mistakes (and would overflow int products of two sizes
// only well past it); they are rejected before anything is sized from them.
constexpr int64_t kMaxSize = 1 << 24;

struct Reader {
  const json& j;
  const std::string& where;

  bool has(const char* key) const { return j.contains(key) && !j[key].is_null(); }

  int size(const char* key, bool required, int fallback) const {
    if (!has(key)) {
      if (required) throw InputError(where, std::string("missing required key \"") + key + "\"");
      return fallback;
    }
    const json& v = j[key];
    // 64 and 64.0 are the same size; 64.5, "64" and true are not sizes.
    const bool integral = v.is_number_integer() || (v.is_number_float() && std::isfinite(v.get<double>()) &&
                                                    v.get<double>() == std::floor(v.get<double>()));
    if (!integral)
      throw InputError(where, std::string("key \"") + key + "\" must be a positive integer, got " + brief(v));
    const double value = v.get<double>();
    if (value <= 0) throw InputError(where, std::string("key \"") + key + "\" must be positive, got " + brief(v));
    if (value > kMaxSize)
      throw InputError(where, std::string("key \"") + key + "\" is " + brief(v) + ", above the limit of " +
                                  std::to_string(kMaxSize));
    const int64_t n = static_cast<int64_t>(value);
    return static_cast<int>(n);
  }

  bool flag(const char* key, bool fallback) const {
    if (!has(key)) return fallback;
    if (!j[key].is_boolean())
      throw InputError(where, std::string("key \"") + key + "\" must be true or false, got " + brief(j[key]));
    return j[key].get<bool>();
  }

  double positive(const char* key, double fallback) const {
    if (!has(key)) return fallback;
    const json& v = j[key];
    if (!v.is_number() || !(v.get<double>() > 0) || !std::isfinite(v.get<double>()))
      throw InputError(where, std::string("key \"") + key + "\" must be a positive number, got " + brief(v));
    return v.get<double>();
  }

  std::string choice(const char* key, std::initializer_list<const char*> allowed, const char* fallback,
                     bool required = false) const {
    std::string options;
    for (const char* a : allowed) options += std::string(options.empty() ? "" : " | ") + "\"" + a + "\"";
    if (!has(key)) {
      if (required) throw InputError(where, std::string("missing required key \"") + key + "\" (" + options + ")");
      return fallback;
    }
    const json& v = j[key];
    if (v.is_string())
      for (const char* a : allowed)
        if (v.get<std::string>() == a) return a;
    throw InputError(where, std::string("key \"") + key + "\" must be " + options + ", got " + brief(v));
  }
};

}  // namespace

Config parse_config(const std::string& text, const std::string& where) {
  const json j = parse_strict_json(text.data(), text.data() + text.size(), where, "");
  if (!j.is_object()) throw InputError(where, "holds " + brief(j) + ", not a JSON object");
  Reader r{j, where};

  Config c;
  c.vocab_size = r.size("vocab_size", true, 0);
  c.d_model = r.size("d_model", true, 0);
  c.n_heads = r.size("n_heads", true, 0);
  c.d_ff = r.size("d_ff", true, 0);
  c.n_layers = r.size("n_layers", true, 0);
  if (c.d_model % c.n_heads != 0)
    throw InputError(where, "key \"d_model\" (" + std::to_string(c.d_model) + ") must be divisible by \"n_heads\" (" +
                                std::to_string(c.n_heads) + ")");

  c.activation =
      r.choice("activation", {"relu", "gelu"}, "relu") == std::string("gelu") ? Activation::GELU : Activation::ReLU;
  c.norm_first = r.flag("norm_first", false);
  c.final_norm = r.flag("final_norm", false);
  c.layer_norm_eps = r.positive("layer_norm_eps", 1e-5);
  if (static_cast<float>(c.layer_norm_eps) == 0.0f)  // LayerNorm runs in float: a constant row would give 0/0
    throw InputError(where,
                     "key \"layer_norm_eps\" is " + brief(j.at("layer_norm_eps")) + ", which rounds to 0 as a float");

  const std::string pe =
      r.choice("positional_encoding", {"sinusoidal", "learned", "none", "rope", "alibi", "alibi-symmetric"}, "", true);
  c.positional_encoding = pe == "sinusoidal"        ? PositionalEncoding::Sinusoidal
                          : pe == "learned"         ? PositionalEncoding::Learned
                          : pe == "rope"            ? PositionalEncoding::Rope
                          : pe == "alibi"           ? PositionalEncoding::Alibi
                          : pe == "alibi-symmetric" ? PositionalEncoding::AlibiSymmetric
                                                    : PositionalEncoding::None;
  c.pe_layout = r.choice("pe_layout", {"interleaved", "split"}, "interleaved") == std::string("split")
                    ? PeLayout::Split
                    : PeLayout::Interleaved;
  c.pe_base = r.positive("pe_base", 10000.0);
  if (c.pe_base < 1e-100)  // t / base^(2i/d) would overflow to infinity, and sin(inf) is NaN
    throw InputError(where,
                     "key \"pe_base\" is " + brief(j.at("pe_base")) + ", too small for finite positional encodings");
  c.max_positions = r.size("max_positions", c.positional_encoding == PositionalEncoding::Learned, 0);
  c.scale_embedding = r.flag("scale_embedding", true);

  if (r.has("tokenizer")) {
    const json& t = j["tokenizer"];
    if (!t.is_string() || t.get<std::string>().empty())
      throw InputError(where, "key \"tokenizer\" must be a file name, got " + brief(t));
    c.tokenizer = t.get<std::string>();
    if (c.tokenizer.find_first_of(std::string("/\0", 2)) != std::string::npos || c.tokenizer == "." ||
        c.tokenizer == "..")
      throw InputError(where, "key \"tokenizer\" must name a file inside the model directory, got " + brief(t));
    if (c.tokenizer == "config.json" || c.tokenizer == "model.safetensors")  // the tokenizer cannot be either
      throw InputError(where, "key \"tokenizer\" names " + brief(t) + ", a file of the model that is not a tokenizer");
  }
  c.add_bos = r.flag("add_bos", false);
  c.add_eos = r.flag("add_eos", false);

  // Only "mlm" or no key at all: a null here is not "no head" but a file that meant something else.
  if (j.contains("head")) {
    const json& h = j["head"];
    if (!h.is_string() || h.get<std::string>() != "mlm")
      throw InputError(where, "key \"head\" must be \"mlm\" (a masked-language-model head) or absent, got " + brief(h));
    c.head = Head::MaskedLM;
  }
  return c;
}

constexpr uint64_t kMaxConfigBytes = 16 << 20;  // a config is a few hundred bytes

Config load_config(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0 && errno == ENOENT)
    throw InputError(path, "cannot open (a model directory holds config.json, model.safetensors and tokenizer.model)");
  return parse_config(read_regular_file(path, kMaxConfigBytes, "a config"), path);
}

Config load_config_file_or_pipe(const std::string& path) {
  return parse_config(read_file_or_pipe(path, kMaxConfigBytes, "a config"), path);
}

int position_limit(const Config& c) {
  return c.positional_encoding == PositionalEncoding::Learned ? c.max_positions : INT_MAX;
}

void check_ids(const Config& c, const std::vector<int32_t>& ids, int first_position) {
  for (int32_t id : ids)
    if (id < 0 || id >= c.vocab_size)
      throw InputError("input", "token id " + std::to_string(id) + " is outside the vocabulary [0, " +
                                    std::to_string(c.vocab_size) + ")");
  if (ids.size() + size_t(first_position) > size_t(position_limit(c)))
    throw InputError("input", "a text of " + std::to_string(ids.size()) + " tokens" +
                                  (first_position ? " from position " + std::to_string(first_position) : "") +
                                  " is longer than the model's learned positions (max_positions = " +
                                  std::to_string(c.max_positions) + ")");
}

const char* to_string(Activation a) {
  return a == Activation::GELU ? "gelu" : "relu";
}
const char* to_string(PositionalEncoding p) {
  return p == PositionalEncoding::Sinusoidal       ? "sinusoidal"
         : p == PositionalEncoding::Learned        ? "learned"
         : p == PositionalEncoding::Rope           ? "rope"
         : p == PositionalEncoding::Alibi          ? "alibi"
         : p == PositionalEncoding::AlibiSymmetric ? "alibi-symmetric"
                                                   : "none";
}
const char* to_string(PeLayout l) {
  return l == PeLayout::Split ? "split" : "interleaved";
}
const char* to_string(Head h) {
  return h == Head::MaskedLM ? "mlm" : "none";
}

std::string config_to_json(const Config& c) {
  json j = json::object();
  j["vocab_size"] = c.vocab_size;
  j["d_model"] = c.d_model;
  j["n_heads"] = c.n_heads;
  j["d_ff"] = c.d_ff;
  j["n_layers"] = c.n_layers;
  j["activation"] = to_string(c.activation);
  j["norm_first"] = c.norm_first;
  j["final_norm"] = c.final_norm;
  j["layer_norm_eps"] = c.layer_norm_eps;
  j["positional_encoding"] = to_string(c.positional_encoding);
  j["pe_layout"] = to_string(c.pe_layout);
  j["pe_base"] = c.pe_base;
  if (c.positional_encoding == PositionalEncoding::Learned) j["max_positions"] = c.max_positions;
  j["scale_embedding"] = c.scale_embedding;
  j["tokenizer"] = c.tokenizer;
  j["add_bos"] = c.add_bos;
  j["add_eos"] = c.add_eos;
  if (c.head == Head::MaskedLM) j["head"] = "mlm";
  return j.dump(2) + "\n";
}

}  // namespace ordo
