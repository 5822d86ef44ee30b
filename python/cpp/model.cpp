// ordo.Model: one model directory's ordo::Pipeline, with the commands' calls as methods.
// Each method converts its arguments while it holds the GIL, releases it for the engine's work
// (other Python threads run meanwhile; one Model may serve several of them, see ordo.h on
// threads), and takes it back to build the results.
#include <pybind11/stl.h>
#include <sys/stat.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>

#include <ordo/compare.h>
#include <ordo/errors.h>
#include <ordo/heads.h>
#include <ordo/ordo.h>

#include "python/cpp/binding.h"

namespace ordo::python {

namespace {

// A str as UTF-8. Only a lone surrogate (U+D800 .. U+DFFF) has no UTF-8 form. Those of a file
// decoded with errors="surrogateescape" (U+DC80 .. U+DCFF) stand for the bytes that were not
// UTF-8: they become those bytes again, so the library's rules name the byte as the command line
// does ("invalid UTF-8 at byte 4"); any other is an ArgumentError.
std::string utf8(const py::handle& s, const std::string& where) {
  Py_ssize_t n = 0;
  if (const char* p = PyUnicode_AsUTF8AndSize(s.ptr(), &n)) return std::string(p, size_t(n));
  PyErr_Clear();
  if (PyObject* raw = PyUnicode_AsEncodedString(s.ptr(), "utf-8", "surrogateescape")) {
    std::string bytes(PyBytes_AS_STRING(raw), size_t(PyBytes_GET_SIZE(raw)));
    Py_DECREF(raw);
    return bytes;
  }
  PyErr_Clear();
  throw ArgumentError(where + ": the text has a lone surrogate (U+D800 .. U+DFFF), which is not UTF-8");
}

// One text argument (`name`): a str, as UTF-8; anything else an ArgumentError in the library's words
// (pybind11's own conversion said "incompatible function arguments", a TypeError, for a lone surrogate too).
std::string text_of(const py::handle& text, const char* name) {
  if (!py::isinstance<py::str>(text))
    throw ArgumentError(std::string(name) + " must be a str, not " +
                        std::string(py::str(py::type::handle_of(text).attr("__name__"))));
  return utf8(text, name);
}

// A model directory: a str or a path-like (pathlib.Path, os.fspath), as a path with no NUL byte
// (the system would read it only up to the NUL, and messages would name that much).
std::string path_of(const py::handle& path) {
  py::object p = py::reinterpret_borrow<py::object>(path);
  if (!py::isinstance<py::str>(p) && py::hasattr(p, "__fspath__")) p = p.attr("__fspath__")();
  if (!py::isinstance<py::str>(p))
    throw ArgumentError("path must be a str or a path-like (pathlib.Path), not " +
                        std::string(py::str(py::type::handle_of(p).attr("__name__"))));
  const std::string s = utf8(p, "path");
  if (s.find('\0') != std::string::npos)
    throw ArgumentError("path holds a NUL byte at byte " + std::to_string(s.find('\0')) + ", which no file name has");
  return s;
}

// A str, or a sequence of str: the texts, and whether one str was given.
std::vector<std::string> texts_of(const py::handle& texts, bool* single) {
  *single = py::isinstance<py::str>(texts);
  if (*single) return {utf8(texts, "texts")};
  if (py::isinstance<py::bytes>(texts)) throw ArgumentError("texts must be a str or a sequence of str, not bytes");
  std::vector<std::string> out;
  for (const py::handle& t : py::iter(texts)) {
    const std::string where = "texts[" + std::to_string(out.size()) + "]";
    if (!py::isinstance<py::str>(t))
      throw ArgumentError(where + " is " + std::string(py::str(py::type::handle_of(t).attr("__name__"))) + ", not str");
    out.push_back(utf8(t, where));
  }
  return out;
}

// A JSON value (nlohmann) as the Python value json.loads would give.
py::object to_python(const nlohmann::ordered_json& j) {
  return py::module_::import("json").attr("loads")(j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
}

}  // namespace

class Model {
 public:
  Model(const py::object& path_in, const std::string& compute_type) {
    // Checked before the model loads, in the library's words (ordo --compute-type says the same).
    ComputeType type;
    try {
      type = compute_type_from_name(compute_type);
    } catch (const std::invalid_argument& e) {
      throw ArgumentError(e.what());
    }
    const std::optional<std::string> path =
        path_in.is_none() ? std::nullopt : std::optional<std::string>(path_of(path_in));
    path_ = path ? *path : default_model_dir(default_model_dir_hint);
    if (path_.empty()) throw ArgumentError("no model found: pass Model(path) or set ORDO_MODEL");
    // A directory named by the environment says so when it is wrong: the call did not name it.
    const char* env = std::getenv("ORDO_MODEL");
    struct stat st {};
    if (!path && env && *env && path_ == env && !(::stat(env, &st) == 0 && S_ISDIR(st.st_mode)))
      throw InputError(path_,
                       "no such model directory (named by the environment variable ORDO_MODEL; unset it to use "
                       "the default model, or pass Model(path))");
    py::gil_scoped_release unlocked;
    pipeline_ = std::make_unique<Pipeline>(path_);
    pipeline_->set_compute_type(type);
  }

  const std::string& path() const { return path_; }
  std::string compute_type() const { return compute_type_name(pipeline_->compute_type()); }
  py::object config() const { return to_python(nlohmann::ordered_json::parse(config_to_json(cfg()))); }

  // `ordo tokenize --json`: pieces, ids, offsets ([begin, end) bytes of the text), unknown.
  py::dict tokenize(const py::handle& text_in) const {
    const std::string text = text_of(text_in, "text");
    std::vector<Span> spans;
    Tokenization t;
    int unknown = 0;
    {
      py::gil_scoped_release unlocked;
      t = pipeline_->tokenize(text, "text", &spans);
      unknown = pipeline_->unknown_pieces(t);
    }
    py::list offsets;
    for (const Span& s : spans) offsets.append(py::make_tuple(s.begin, s.end));
    py::dict out;
    out["pieces"] = t.pieces, out["ids"] = t.ids, out["offsets"] = offsets, out["unknown"] = unknown;
    return out;
  }

  // `ordo encode`: the same rules for a text too long (max_tokens, truncate), the same batches.
  py::object encode(const py::handle& texts_in, const std::optional<std::string>& pooling_arg,
                    const std::optional<bool>& normalize_arg, bool positions, long long batch_size_in,
                    long long max_tokens_in, bool truncate) {
    bool single = false;
    const std::vector<std::string> texts = texts_of(texts_in, &single);
    // None: the model's own (a sentence-transformers directory's pooling and Normalize), else mean, not normalized
    Pooling pooling = pipeline_->model_pooling();
    const bool normalize = normalize_arg ? *normalize_arg : pipeline_->model_normalize();
    if (pooling_arg && !pooling_from_name(*pooling_arg, &pooling))
      throw ArgumentError(std::string("pooling must be ") + pooling_names() + ", got \"" + *pooling_arg + "\"");
    const size_t batch_size = size_t(checked("batch_size", batch_size_in, 1, kMaxCount));
    TextLimits limits;  // the library's rules, named by Python's keywords (its defaults)
    limits.max_tokens = checked("max_tokens", max_tokens_in, 1, kMaxCount);
    limits.truncate = truncate;
    const size_t n = texts.size();
    const int d = pipeline_->width(pooling);  // a Dense module's out_features where the model has one
    // Pooled: one (n, d) array, allocated first so that each batch's rows go straight into it.
    py::array_t<float> pooled;
    float* rows_out = nullptr;
    if (pooling != Pooling::None) {
      pooled = py::array_t<float>({py::ssize_t(n), py::ssize_t(d)});
      rows_out = pooled.mutable_data();
    }
    std::vector<std::vector<float>> per_token(pooling == Pooling::None ? n : 0);  // (S_i, d) each
    {
      py::gil_scoped_release unlocked;
      std::vector<Tokenization> tokens(n);
      for (size_t i = 0; i < n; ++i)
        tokens[i] = pipeline_->prepare(texts[i], "texts[" + std::to_string(i) + "]", limits);
      // Sorted by length, so each batch holds texts of similar lengths; results go back in input order.
      EncodeOptions options;
      options.positions = positions;
      pipeline_->encode_sorted(
          std::move(tokens), pooling, normalize, options, batch_size,
          [](size_t i) { return "texts[" + std::to_string(i) + "]"; },
          [&](size_t i, Encoded& r) {
            if (pooling == Pooling::None)
              per_token[i] = std::move(r.values);
            else if (r.tokens.ids.empty())  // no tokens, no vector: NaN, as in `ordo encode --format npy`
              std::fill_n(rows_out + i * d, d, std::nanf(""));
            else
              std::copy_n(r.values.data(), d, rows_out + i * d);
          });
    }
    if (pooling != Pooling::None) return single ? py::object(pooled[py::int_(0)]) : py::object(pooled);
    py::list out;
    for (auto& v : per_token) {
      const py::ssize_t rows = py::ssize_t(v.size() / size_t(d));
      out.append(as_array(std::move(v), {rows, d}));
    }
    return single ? out[0] : py::object(out);
  }

  // `ordo fill --json`: for each <mask>, the top pieces as (piece, id, prob).
  py::list fill(const py::handle& text_in, long long top_in, bool positions) {
    const std::string text = text_of(text_in, "text");
    const int top = checked("top", top_in, 1, kMaxCount);
    Filled f;
    {
      py::gil_scoped_release unlocked;
      pipeline_->require_head();
      const std::string where = "text";
      pipeline_->check_runnable(pipeline_->tokenize_masked(text, where), where);
      try {
        f = pipeline_->fill(text, std::min(top, cfg().vocab_size), positions, where);
      } catch (const NonFiniteActivations& e) {
        throw InputError(e.file, where + ": " + e.message);
      }
    }
    py::list out;
    for (const Filled::Mask& m : f.masks) {
      py::list guesses;
      for (const Guess& g : m.top) guesses.append(py::make_tuple(g.piece, g.id, g.prob));
      out.append(guesses);
    }
    return out;
  }

  // `ordo score`: each text's pseudo-log-likelihood, one text per pass as the command runs them.
  py::object score(const py::handle& texts_in, bool positions, bool per_piece, long long max_tokens_in) {
    bool single = false;
    const std::vector<std::string> texts = texts_of(texts_in, &single);
    const int max_pieces = checked("max_tokens", max_tokens_in, 1, kMaxCount);
    std::vector<double> plls(texts.size());
    std::vector<std::vector<double>> log_probs(texts.size());
    {
      py::gil_scoped_release unlocked;
      pipeline_->require_head();
      TextLimits limits;  // what the model can run (the byte cap, the token limit), never cut
      limits.max_tokens = kMaxCount;
      limits.truncate_hint = "";
      for (size_t i = 0; i < texts.size(); ++i) {
        const std::string where = "texts[" + std::to_string(i) + "]";
        Tokenization t = pipeline_->prepare(texts[i], where, limits);
        pipeline_->check_scorable(t, where, max_pieces, "max_tokens=");
        Scored s;
        try {
          s = std::move(pipeline_->score({std::move(t)}, positions)[0]);
        } catch (const NonFiniteActivations& e) {
          throw InputError(e.file, where + ": " + e.message);
        }
        plls[i] = s.pll;
        log_probs[i] = std::move(s.log_probs);
      }
    }
    py::list pieces;
    for (auto& v : log_probs) {
      const py::ssize_t L = py::ssize_t(v.size());
      pieces.append(as_array(std::move(v), {L}));
    }
    if (single) return per_piece ? py::object(py::make_tuple(plls[0], pieces[0])) : py::object(py::float_(plls[0]));
    const py::ssize_t count = py::ssize_t(plls.size());
    py::object out = as_array(std::move(plls), {count});
    return per_piece ? py::object(py::make_tuple(out, pieces)) : out;
  }

  // `ordo compare --json`: the same report, as a dict.
  py::object compare(const py::handle& a_in, const py::handle& b_in) {
    const std::string text_a = text_of(a_in, "a"), text_b = text_of(b_in, "b");
    nlohmann::ordered_json j;
    {
      py::gil_scoped_release unlocked;
      const Tokenization a = pipeline_->tokenize(text_a, "a"), b = pipeline_->tokenize(text_b, "b");
      pipeline_->check_runnable(a, "a");
      pipeline_->check_runnable(b, "b");
      const Comparison c = compare_texts(*pipeline_, a, b);
      auto side = [](const std::string& text, const Tokenization& t) {
        return nlohmann::ordered_json{{"text", text}, {"pieces", t.pieces}, {"ids", t.ids}};
      };
      j = {{"a", side(text_a, a)}, {"b", side(text_b, b)}};
      j.update(comparison_json(c, a));
    }
    return to_python(j);
  }

  // `ordo trace --json`: every stage the engine shows, as arrays, then the final rows and their mean.
  py::dict trace(const py::handle& text_in, bool positions) {
    const std::string text = text_of(text_in, "text");
    struct Kept {
      std::string key;
      std::vector<float> values;
      int rows, cols;
    };
    std::vector<Kept> stages;
    std::vector<float> hidden;
    int S = 0;
    const int d = cfg().d_model;
    {
      py::gil_scoped_release unlocked;
      const Tokenization tok = runnable(text);
      S = int(tok.ids.size());
      EncodeOptions options;
      options.positions = positions;
      options.observe = [&](const Stage& s) {
        // "layer 0: qkv", "layer 1, head 2: attention weights": the stage's name where trace prints it.
        std::string key = s.name;
        if (s.head >= 0) key = "head " + std::to_string(s.head) + ": " + key;
        if (s.layer >= 0) key = "layer " + std::to_string(s.layer) + (s.head >= 0 ? ", " : ": ") + key;
        Kept k{key, std::vector<float>(size_t(s.rows) * s.cols), s.rows, s.cols};
        for (int t = 0; t < s.rows; ++t)
          std::copy_n(s.data + size_t(t) * s.stride, s.cols, k.values.data() + size_t(t) * s.cols);
        stages.push_back(std::move(k));
      };
      hidden = pipeline_->observe(tok.ids, options);
    }
    py::dict out;
    for (Kept& k : stages) out[py::str(k.key)] = as_array(std::move(k.values), {k.rows, k.cols});
    std::vector<float> mean = pool(hidden.data(), S, d, Pooling::Mean);
    out["hidden"] = as_array(std::move(hidden), {S, d});
    out["pooled"] = as_array(std::move(mean), {d});
    return out;
  }

  // `ordo attention`, every layer and head at once: A[l, h] = softmax(q_h k_hᵀ / √dh).
  py::array_t<float> attention(const py::handle& text_in, bool positions) {
    const std::string text = text_of(text_in, "text");
    const Config& c = cfg();
    std::vector<float> A;
    int S = 0;
    {
      py::gil_scoped_release unlocked;
      const Tokenization tok = runnable(text);
      S = int(tok.ids.size());
      A.assign(size_t(c.n_layers) * c.n_heads * S * S, 0.0f);
      EncodeOptions options;
      options.positions = positions;
      options.observe = [&](const Stage& s) {
        if (s.kind != StageKind::AttentionWeights) return;
        float* to = A.data() + (size_t(s.layer) * c.n_heads + s.head) * S * S;
        for (int t = 0; t < s.rows; ++t) std::copy_n(s.data + size_t(t) * s.stride, s.cols, to + size_t(t) * S);
      };
      pipeline_->observe(tok.ids, options);
    }
    return as_array(std::move(A), {c.n_layers, c.n_heads, S, S});
  }

  // `ordo attention --by-distance`: every head's mean weight by offset j − i over many texts.
  py::dict heads_by_distance(const py::handle& texts_in, long long max_offset_in, std::optional<long long> split_in,
                             bool positions) {
    bool single = false;
    const std::vector<std::string> texts = texts_of(texts_in, &single);
    const int max_offset = checked("max_offset", max_offset_in, 0, 1024);
    std::vector<int> starts = {0};
    if (split_in && *split_in != 0) starts.push_back(checked("split", *split_in, 1, 1 << 24));
    HeadsByDistance r;
    {
      py::gil_scoped_release unlocked;
      std::vector<Tokenization> tokens;
      for (size_t i = 0; i < texts.size(); ++i) {
        Tokenization t = pipeline_->tokenize(texts[i], "texts[" + std::to_string(i) + "]");
        if (int(t.ids.size()) > pipeline_->max_tokens())
          throw InputError(
              "texts[" + std::to_string(i) + "]",
              "text has " + std::to_string(t.ids.size()) + " tokens, more than " + pipeline_->max_tokens_reason());
        tokens.push_back(std::move(t));
      }
      r = ordo::heads_by_distance(*pipeline_, tokens, max_offset, starts, positions);
    }
    const int B = r.buckets(), O = r.offsets();
    std::vector<double> mean(r.weight.size()), most(r.weight.size());
    for (int l = 0; l < r.layers; ++l)
      for (int h = 0; h < r.heads; ++h)
        for (int b = 0; b < B; ++b)
          for (int o = -max_offset; o <= max_offset; ++o)
            mean[r.at(l, h, b, o)] = r.mean(l, h, b, o), most[r.at(l, h, b, o)] = r.most(l, h, b, o);
    std::vector<int64_t> rows(r.rows.begin(), r.rows.end()), offsets;
    for (int o = -max_offset; o <= max_offset; ++o) offsets.push_back(o);
    py::dict out;
    out["mean"] = as_array(std::move(mean), {r.layers, r.heads, B, O});
    out["most"] = as_array(std::move(most), {r.layers, r.heads, B, O});
    out["rows"] = as_array(std::move(rows), {B, O});
    out["offsets"] = as_array(std::move(offsets), {O});
    out["starts"] = py::cast(r.starts);
    out["texts"] = r.texts;
    return out;
  }

  // Heads switched off for every later call (--mask-head): a list of (layer, head).
  std::vector<std::pair<int, int>> masked_heads() const {
    std::vector<std::pair<int, int>> out;
    for (const HeadIndex& h : pipeline_->masked_heads()) out.emplace_back(h.layer, h.head);
    return out;
  }
  void set_masked_heads(const std::vector<std::pair<int, int>>& heads) {
    std::vector<HeadIndex> list;
    for (const auto& [l, h] : heads) list.push_back({l, h});
    try {
      pipeline_->set_masked_heads(list);
    } catch (const std::invalid_argument& e) {
      throw ArgumentError(std::string("masked_heads: ") + e.what());
    }
  }

 private:
  const Config& cfg() const { return pipeline_->config(); }

  // One text for trace and attention: at least one token, no more than the model can run.
  Tokenization runnable(const std::string& text) const {
    Tokenization tok = pipeline_->tokenize(text, "text");
    if (tok.ids.empty()) throw ArgumentError("the text has no tokens");
    pipeline_->check_runnable(tok, "text");
    return tok;
  }

  std::string path_;
  std::unique_ptr<Pipeline> pipeline_;
};

// The Model behind `self`, or nullptr for one made by Model.__new__ without __init__: pybind11 then
// hands a method memory that holds no Model (allocated on first use, never constructed), which
// crashed. Whether __init__ ran is pybind11's holder flag.
Model* initialised(const py::handle& self) {
  auto* inst = reinterpret_cast<py::detail::instance*>(self.ptr());
  const py::detail::value_and_holder v = inst->get_value_and_holder(py::detail::get_type_info(typeid(Model)), false);
  return v && v.holder_constructed() ? v.value_ptr<Model>() : nullptr;
}

Model& checked_self(const py::handle& self) {
  Model* m = initialised(self);
  if (!m) throw ArgumentError("this Model was never initialised (made by Model.__new__): use ordo.Model(path)");
  return *m;
}

// A method bound so that it checks its Model first.
template <class R, class... A>
auto method(R (Model::*f)(A...)) {
  return [f](const py::handle& self, A... a) -> R { return (checked_self(self).*f)(std::forward<A>(a)...); };
}
template <class R, class... A>
auto method(R (Model::*f)(A...) const) {
  return [f](const py::handle& self, A... a) -> R { return (checked_self(self).*f)(std::forward<A>(a)...); };
}

void bind_model(py::module_& m) {
  py::class_<Model>(m, "Model", R"(A model directory (config.json, model.safetensors, tokenizer.model), loaded once.

Model(path=None): None loads the default model (see ordo.default_model_dir()). A Model may be
shared by Python threads: the engine runs without the GIL, and each call gets what it would get
alone. It pickles as its path, so it can be sent to other processes (Dask workers), which load it
again.)")
      .def(py::init<const py::object&, const std::string&>(), py::arg("path") = py::none(),
           py::arg("compute_type") = "f32")
      .def_property_readonly("path", method(&Model::path), "The model directory.")
      .def_property_readonly("compute_type", method(&Model::compute_type),
                             "The precision of the layers' weight products: 'f32', 'bf16' or 'int8'.")
      .def_property_readonly("config", method(&Model::config),
                             "config.json as the engine reads it, every key written (a dict; `ordo info`).")
      .def("tokenize", method(&Model::tokenize), py::arg("text"),
           R"(tokenize(text) -> dict

The text's pieces as `ordo tokenize --json` gives them: {"pieces": [str], "ids": [int],
"offsets": [(begin, end)], "unknown": int}. offsets are the bytes of the UTF-8 text each piece
came from; unknown counts the pieces the vocabulary cannot spell (<unk>).)")
      .def(
          "encode", method(&Model::encode), py::arg("texts"), py::arg("pooling") = py::none(),
          py::arg("normalize") = py::none(), py::arg("positions") = true, py::arg("batch_size") = Pipeline::kBatchTexts,
          py::arg("max_tokens") = kDefaultMaxTokens, py::arg("truncate") = false,
          R"(encode(texts, pooling=None, normalize=None, positions=True, batch_size=64, max_tokens=8192, truncate=False)

Texts -> vectors, as `ordo encode` computes them.
texts: a str, or a sequence of str.
pooling: 'mean' | 'first' | 'max' | 'mean-sqrt-len' | 'weighted-mean' | 'last' give one vector per
  text: a float32 array (n, d), or (d,) for one str, through the model's Dense modules where it has
  some (d: the last one's out_features); a text of no tokens gets a row of NaN. 'none' gives each
  text's rows: a list of float32 arrays (S_i, d_model), or one array (S, d_model) for one str.
  None: the model's own (a sentence-transformers directory's 1_Pooling), else 'mean'.
normalize: scale each vector (each row with 'none') to unit L2 length. None: as the model's
  modules.json says (True where it has Normalize), else False.
positions: False leaves out the positional encoding (the ablation of `ordo encode --no-pe`).
batch_size: at most this many texts per forward pass (texts are sorted by length into batches
  of at most 8192 padded tokens; the results come back in input order).
max_tokens, truncate: a text of more tokens is an InputError, or with truncate=True is cut.
Raises InputError naming the text: "texts[2]: text has 9000 tokens, more than max_tokens=8192 ...".)")
      .def("fill", method(&Model::fill), py::arg("text"), py::arg("top") = 5, py::arg("positions") = true,
           R"(fill(text, top=5, positions=True) -> [[(piece, id, prob)]]

The masked-language-model head at work (`ordo fill`): for each "<mask>" in the text, in order,
the `top` pieces most likely there, highest first, each with its probability over the whole
vocabulary. Needs a model with a head (the default model has one).)")
      .def("score", method(&Model::score), py::arg("texts"), py::arg("positions") = true, py::arg("per_piece") = false,
           py::arg("max_tokens") = 512,
           R"(score(texts, positions=True, per_piece=False, max_tokens=512)

Each text's pseudo-log-likelihood (`ordo score`): PLL = sum over pieces t of log p(piece t | the
text with piece t masked), natural log; higher = more natural to the model. A float64 array (n,)
for a sequence of texts, a float for one str. per_piece=True returns (plls, log_probs), log_probs
one float64 array per text. A text of more than max_tokens pieces is an InputError (scoring S
pieces costs S passes of S pieces).)")
      .def("compare", method(&Model::compare), py::arg("a"), py::arg("b"),
           R"(compare(a, b) -> dict

The word-order report of `ordo compare --json`: both texts encoded with and without positions;
keys a, b (text, pieces, ids), same_tokens_reordered, cosine and max_abs_diff (with_pe,
without_pe), tokens (how far each piece moved), and with a head pll, prefers and verdict.)")
      .def("trace", method(&Model::trace), py::arg("text"), py::arg("positions") = true,
           R"(trace(text, positions=True) -> dict of str -> ndarray

One text through the encoder, every stage `ordo trace --json` shows, as float32 arrays (rows =
tokens): "scaled embedding", "layer 0: qkv", "layer 0, head 1: attention weights", ...; then
"hidden" (S, d), the final rows, and "pooled" (d,), their mean. Each head's inside (its q, k, v,
the scores) is there too: "layer 0, head 1: head query", ... Keys in the order the encoder runs.)")
      .def("attention", method(&Model::attention), py::arg("text"), py::arg("positions") = true,
           R"(attention(text, positions=True) -> ndarray (layers, heads, S, S)

Every head's attention weights (`ordo attention`): A[l, h, i, j] is how much query piece i attends
to key piece j in layer l, head h; each row sums to 1.)")
      .def("heads_by_distance", &Model::heads_by_distance, py::arg("texts"), py::arg("max_offset") = 4,
           py::arg("split") = py::none(), py::arg("positions") = true,
           R"(heads_by_distance(texts, max_offset=4, split=None, positions=True) -> dict

Every head's attention by offset o = j - i (key minus query; -1 = the piece before) over many
texts (`ordo attention --by-distance`). Query positions fall in buckets: [0, split) and
[split, ...) with a split (e.g. the training length, 32), one bucket without.
"mean"[l, h, b, o]: the mean weight head (l, h) puts on the key at offset offsets[o], over the
  query rows of bucket b that have such a key (NaN where none has);
"most"[l, h, b, o]: the share of those rows whose largest weight is on that key;
"rows"[b, o]: how many rows that is; "offsets", "starts" (each bucket's first position), "texts".)")
      .def_property("masked_heads", &Model::masked_heads, &Model::set_masked_heads,
                    R"(Heads switched off for every later call, as a list of (layer, head) (`--mask-head L,H`):
a masked head's output A v is zeros in its slot of the concatenation, so it adds nothing through
the output projection; its weights are still computed (attention() still shows them). [] switches
every head on again. A head the model does not have raises InputError.)")
      .def("__repr__",
           [](const py::handle& self) {
             const Model* m = initialised(self);
             if (!m) return std::string("ordo.Model(<not initialised>)");
             const std::string type = m->compute_type();
             return "ordo.Model(" + std::string(py::repr(py::str(m->path()))) +
                    (type == "f32" ? "" : ", compute_type='" + type + "'") + ")";
           })
      // Pickled as an absolute path (the process that loads it, a Dask worker, may run elsewhere in
      // the tree) and its compute type.
      .def(py::pickle(
          [](const py::handle& self) {
            const Model& m = checked_self(self);
            return py::make_tuple(std::filesystem::absolute(m.path()).string(), m.compute_type());
          },
          [](const py::tuple& state) {
            if (state.size() != 1 && state.size() != 2)
              throw ArgumentError("a pickled ordo.Model holds its path and compute type");
            return Model(state[0], state.size() == 2 ? state[1].cast<std::string>() : "f32");
          }));
}

}  // namespace ordo::python
