// ordo view: one text (or two) through the encoder, written as one page that opens offline in a
// browser: the pieces, every layer × head of attention with and without the positional encoding, the
// encoding's table, and for two texts the report of `ordo compare`.
//
// The page is tools/teach/view/ (view.html, view.css, view.js), built into the binary as one string
// with a single placeholder; this file runs the encoder, gathers what the page shows into the JSON
// described at the top of view.js, and puts it in that placeholder.
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>

#include <ordo/compare.h>
#include <ordo/errors.h>
#include <ordo/ordo.h>

#include "common/atomic_file.h"
#include "common/regular_file.h"
#include "tools/cli/cli.h"
#include "tools/cli/json_out.h"
#include "tools/cli/results_json.h"
#include "tools/teach/pe_report.h"
#include "view_page.h"  // ordo::teach::view_page(), made from tools/teach/view/ by embed.cmake

namespace ordo::cli {

namespace {

// What one page holds. Each map holds S² numbers: at kMaxPieces = 256 pieces one run of the default
// model is half a million of them. Attention weights and encodings are stored with kDecimals = 4
// decimals, as `ordo attention` prints them. Section 2b, the chosen head from the inside, for text A with
// positions (where rope turns q and k and alibi adds its bias), has every layer × head when A has at
// most kInsidePieces pieces, so that any head picked can be shown; past it only layer 0, head 0, as the
// S² numbers of each head's scores and weights would make the page several times larger than its maps
// (`ordo serve` computes any head, either run). Section 5 for alibi shows the bias of at most
// kBiasPositions positions (S² per head; it depends on i − j).
constexpr int kMaxPieces = 256, kDecimals = 4, kInsidePieces = 64, kBiasPositions = 32;

double rounded(float v) {
  return std::round(double(v) * 1e4) / 1e4;
}

nlohmann::json rounded_rows(const float* data, int rows, int cols, int stride) {
  nlohmann::json m = nlohmann::json::array();
  for (int r = 0; r < rows; ++r) {
    nlohmann::json row = nlohmann::json::array();
    for (int c = 0; c < cols; ++c) row.push_back(rounded(data[size_t(r) * stride + c]));
    m.push_back(std::move(row));
  }
  return m;
}

double cosine(const float* a, const float* b, int n) {
  double ab = 0, aa = 0, bb = 0;
  for (int i = 0; i < n; ++i) ab += double(a[i]) * b[i], aa += double(a[i]) * a[i], bb += double(b[i]) * b[i];
  return aa > 0 && bb > 0 ? ab / std::sqrt(aa * bb) : (aa == bb ? 1.0 : 0.0);
}

double distance(const float* a, const float* b, int n) {
  double s = 0;
  for (int i = 0; i < n; ++i) s += (double(a[i]) - b[i]) * (double(a[i]) - b[i]);
  return std::sqrt(s);
}

std::vector<float> mean_rows(const std::vector<float>& rows, int S, int d) {
  std::vector<double> sum(d, 0.0);
  for (int t = 0; t < S; ++t)
    for (int j = 0; j < d; ++j) sum[j] += rows[size_t(t) * d + j];
  std::vector<float> m(d);
  for (int j = 0; j < d; ++j) m[j] = float(sum[j] / std::max(S, 1));
  return m;
}

// One forward pass of one text: what the encoder's trace hands over on the way, and its output.
struct Run {
  nlohmann::json attention;              // [L][H][S][S], row = query, column = key
  std::vector<float> positions;          // (S, d): what was added to the input (empty without positions)
  std::vector<float> hidden;             // (S, d): the encoder's output
  std::vector<std::vector<float>> bias;  // [H] (S, S): alibi's bias b_ij in layer 0 (empty without alibi)
  std::string rotation, bias_equation;   // the equations of rope's and alibi's stages, when met
};

// What one run with positions met of them, for section 5.
struct Positions {
  int count = 0;                         // S: the text's pieces
  std::vector<float> added;              // (S, d): sinusoids or learned rows added to the input, or empty
  std::vector<std::vector<float>> bias;  // [H] (S, S): alibi's b_ij in layer 0, or empty
  std::string rotation, bias_equation;   // rope's rotation and alibi's bias, as the engine states them
};

// `inside`, when given, sees every stage too (section 2b).
Run run(Pipeline& pipeline, const Tokenization& tokens, bool positions, HeadInsides* inside = nullptr) {
  const Config& c = pipeline.config();
  Run r;
  r.attention = nlohmann::json::array();
  for (int l = 0; l < c.n_layers; ++l) r.attention.push_back(std::vector<nlohmann::json>(c.n_heads));
  EncodeOptions options;
  options.positions = positions;
  options.observe = [&](const Stage& s) {
    if (s.kind == StageKind::AttentionWeights)
      r.attention[s.layer][s.head] = rounded_rows(s.data, s.rows, s.cols, s.stride);
    if (s.kind == StageKind::SinusoidalPositions || s.kind == StageKind::LearnedPositions)
      for (int t = 0; t < s.rows; ++t)
        r.positions.insert(r.positions.end(), s.data + size_t(t) * s.stride, s.data + size_t(t) * s.stride + s.cols);
    if (s.kind == StageKind::RotatedQk) r.rotation = s.equation;
    if (s.kind == StageKind::AlibiBias) r.bias_equation = s.equation;
    if (s.kind == StageKind::AlibiBias && s.layer == 0) {
      std::vector<float>& b = r.bias.emplace_back();
      for (int t = 0; t < s.rows; ++t)
        b.insert(b.end(), s.data + size_t(t) * s.stride, s.data + size_t(t) * s.stride + s.cols);
    }
    if (inside) inside->observe(s);
  };
  r.hidden = pipeline.encode({tokens}, Pooling::None, false, options)[0].values;
  return r;
}

// For each <mask> piece, the head's top 5 pieces there (an empty list without a head or a mask).
nlohmann::json predictions(Pipeline& pipeline, const Tokenization& tokens, bool positions) {
  nlohmann::json out = nlohmann::json::array();
  if (!pipeline.has_head() || pipeline.mask_id() < 0) return out;
  std::vector<Row> rows;
  for (int t = 0; t < int(tokens.ids.size()); ++t)
    if (tokens.ids[t] == pipeline.mask_id()) rows.push_back({0, t});
  if (rows.empty()) return out;
  const int V = pipeline.config().vocab_size;
  const std::vector<float> z = pipeline.logits({tokens.ids}, rows, positions);
  for (size_t i = 0; i < rows.size(); ++i) {
    nlohmann::json top = nlohmann::json::array();
    for (const auto& [id, p] : top_k(z.data() + i * size_t(V), V, 5))
      top.push_back({{"piece", pipeline.tokenizer().piece(id)}, {"id", id}, {"probability", p}});
    out.push_back({{"position", rows[i].position}, {"top", top}});
  }
  return out;
}

nlohmann::json model_json(const Config& c, const std::string& name) {
  return {{"name", name},
          {"d_model", c.d_model},
          {"n_heads", c.n_heads},
          {"head_dim", c.head_dim()},
          {"d_ff", c.d_ff},
          {"n_layers", c.n_layers},
          {"norm", c.norm_first ? "pre-LN" : "post-LN"},
          {"final_norm", c.final_norm},
          {"activation", to_string(c.activation)},
          {"positional_encoding", to_string(c.positional_encoding)},
          {"pe_layout", to_string(c.pe_layout)},
          {"pe_base", c.pe_base},
          {"scale_embedding", c.scale_embedding},
          {"masked_lm", c.head == Head::MaskedLM}};
}

// One text's part of the page: its pieces, both runs, and how its outputs differ between them.
// `longest`: what the longest text so far met of positions (section 5 shows it);
// `inside`, when given: the heads from the inside of this text with positions (section 2b).
nlohmann::json text_json(Pipeline& pipeline, const std::string& text, const Tokenization& tokens, Positions* longest,
                         nlohmann::json* inside) {
  const Config& c = pipeline.config();
  const int S = int(tokens.ids.size()), d = c.d_model;
  const bool every_head = S <= kInsidePieces;
  HeadInsides heads([&](int l, int h) { return every_head || (l == 0 && h == 0); });
  HeadInsides content([&](int l, int h) { return l == 0 && (every_head || h == 0); });  // for the parts
  Run with = run(pipeline, tokens, true, inside ? &heads : nullptr),
      without = run(pipeline, tokens, false, inside ? &content : nullptr);
  if (inside) {
    nlohmann::json all = nlohmann::json::array();
    for (int l = 0; l < c.n_layers; ++l) {
      nlohmann::json row = nlohmann::json::array();
      for (int h = 0; h < c.n_heads; ++h) {
        nlohmann::json head = heads.json(l, h, kDecimals);
        if (!head.is_null()) head["parts"] = HeadInsides::parts_json(c, l, h, heads, content, kDecimals);
        row.push_back(std::move(head));
      }
      all.push_back(std::move(row));
    }
    *inside = {{"text", 0}, {"run", "with_pe"}, {"heads", std::move(all)}};
  }
  nlohmann::json cos = nlohmann::json::array(), dist = nlohmann::json::array();
  for (int t = 0; t < S; ++t) {
    cos.push_back(cosine(&with.hidden[size_t(t) * d], &without.hidden[size_t(t) * d], d));
    dist.push_back(distance(&with.hidden[size_t(t) * d], &without.hidden[size_t(t) * d], d));
  }
  const std::vector<float> pooled_with = mean_rows(with.hidden, S, d), pooled_without = mean_rows(without.hidden, S, d);
  if (S > longest->count)
    *longest = {S, std::move(with.positions), std::move(with.bias), with.rotation, with.bias_equation};
  return {
      {"text", text},
      {"pieces", tokens.pieces},
      {"ids", tokens.ids},
      {"with_pe", {{"attention", std::move(with.attention)}, {"predictions", predictions(pipeline, tokens, true)}}},
      {"without_pe",
       {{"attention", std::move(without.attention)}, {"predictions", predictions(pipeline, tokens, false)}}},
      {"outputs",
       {{"cosine", cos}, {"distance", dist}, {"pooled_cosine", cosine(pooled_with.data(), pooled_without.data(), d)}}}};
}

// Section 5: the positions of the model as the longest text (N pieces) met them, by where they act
// (read from the stages the engine handed over, so that a new kind of bias shows as it is applied):
//   "table"     added to the input (sinusoidal, learned): the encodings (N, d) and the cosine of every two
//   "rotation"  rope: the angles t·θ_i its rotation turns pair i of q and k by (N, dh/2; ordo pe --model's)
//   "bias"      alibi: each head's b_ij as layer 0 added it (H × (n, n), n = min(N, kBiasPositions))
nlohmann::json positions_json(const Config& c, const Positions& p) {
  const int N = p.count, d = c.d_model, dh = c.head_dim();
  const std::string encoding = to_string(c.positional_encoding);
  if (!p.rotation.empty()) {
    const std::vector<double> angles = teach::rope_angles(N, dh, c.pe_base);
    nlohmann::json rows = nlohmann::json::array();
    for (int t = 0; t < N; ++t) {
      nlohmann::json row = nlohmann::json::array();
      for (int i = 0; i < dh / 2; ++i) row.push_back(std::round(angles[size_t(t) * (dh / 2) + i] * 1e4) / 1e4);
      rows.push_back(std::move(row));
    }
    return {{"kind", "rotation"}, {"encoding", encoding}, {"count", N}, {"equation", p.rotation}, {"angles", rows}};
  }
  if (!p.bias.empty()) {
    const int n = std::min(N, kBiasPositions);
    nlohmann::json heads = nlohmann::json::array();
    for (const std::vector<float>& b : p.bias) heads.push_back(rounded_rows(b.data(), n, n, N));
    return {{"kind", "bias"}, {"encoding", encoding}, {"count", n}, {"equation", p.bias_equation}, {"bias", heads}};
  }
  if (p.added.empty()) return nullptr;  // no positions at all
  const std::vector<float>& P = p.added;
  std::vector<float> similarity(size_t(N) * N);
  for (int s = 0; s < N; ++s)
    for (int t = 0; t < N; ++t) similarity[size_t(s) * N + t] = float(cosine(&P[size_t(s) * d], &P[size_t(t) * d], d));
  return {{"kind", "table"},
          {"encoding", encoding},
          {"count", N},
          {"table", rounded_rows(P.data(), N, d, d)},
          {"similarity", rounded_rows(similarity.data(), N, N, N)}};
}

}  // namespace

Tokenization view_tokens(Pipeline& pipeline, const std::string& text, const std::string& where) {
  // "<mask>" marks a piece for the head to fill in (ordo fill's rule), when the model has one.
  Tokenization t = pipeline.has_head() && pipeline.mask_id() >= 0 ? pipeline.tokenize_masked(text, where)
                                                                  : pipeline.tokenize(text, where);
  const int S = int(t.ids.size());
  if (S == 0) throw InputError(where, "the text has no pieces to show");
  // The model's (or the machine's) limit, and the page's own: each map holds S² numbers.
  if (S > std::min(kMaxPieces, pipeline.max_tokens()))
    throw InputError(where,
                     "text has " + std::to_string(S) + " pieces, more than " +
                         (pipeline.max_tokens() < kMaxPieces ? pipeline.max_tokens_reason()
                                                             : "the " + std::to_string(kMaxPieces) + " a page shows"));
  return t;
}

nlohmann::json view_json(Pipeline& pipeline, const std::vector<std::string>& texts,
                         const std::vector<Tokenization>& tokens, const std::string& model_name, bool with_inside) {
  const Config& c = pipeline.config();
  nlohmann::json data = {{"format", "ordo-view/1"}, {"decimals", kDecimals}};
  data["model"] = model_json(c, model_name);
  // The length of the texts it was trained on (training.json's max_len), where the page marks it.
  const int trained = training_length(std::vector<std::string>{pipeline.model_dir()});
  data["model"]["training_length"] = trained > 0 ? nlohmann::json(trained) : nlohmann::json(nullptr);
  Positions positions;  // those of the longer text
  nlohmann::json inside;
  data["texts"] = nlohmann::json::array();
  for (size_t i = 0; i < texts.size(); ++i)
    data["texts"].push_back(
        text_json(pipeline, texts[i], tokens[i], &positions, i == 0 && with_inside ? &inside : nullptr));
  data["positions"] = positions_json(c, positions);
  data["inside"] = std::move(inside);
  data["compare"] = texts.size() == 2 ? comparison_json(compare_texts(pipeline, tokens[0], tokens[1]), tokens[0])
                                      : nlohmann::ordered_json(nullptr);
  return data;
}

namespace {

// A standalone page carries the model's files; past this many bytes of them (the page is a third
// more, base64) it is refused, and `ordo serve` shows the model instead.
constexpr uint64_t kMaxStandaloneModel = uint64_t(32) << 20;

// Where ordo compiled to WebAssembly is (tools/web; the target ordo_web builds it): beside the binary
// in the build tree (build/web), or in share/ordo/web of an installation; "" if neither has it.
std::string web_dir() {
  char buf[4096];
  const ssize_t n = ::readlink("/proc/self/exe", buf, sizeof(buf) - 1);
  if (n <= 0) return "";
  const std::string exe = std::string(buf, size_t(n)).substr(0, std::string(buf, size_t(n)).find_last_of('/'));
  std::error_code ec;
  for (const std::string& dir : {exe + "/web", exe + "/../share/ordo/web"})
    if (std::filesystem::is_regular_file(dir + "/ordo_web.wasm", ec) &&
        std::filesystem::is_regular_file(dir + "/ordo_web.js", ec))
      return dir;
  return "";
}

std::string base64(const std::string& bytes) {
  static constexpr char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  for (size_t i = 0; i < bytes.size(); i += 3) {
    const size_t n = std::min<size_t>(3, bytes.size() - i);
    uint32_t v = 0;
    for (size_t k = 0; k < 3; ++k) v = v << 8 | (k < n ? static_cast<unsigned char>(bytes[i + k]) : 0u);
    for (size_t k = 0; k < 4; ++k) out += k <= n ? kAlphabet[(v >> (18 - 6 * k)) & 63] : '=';
  }
  return out;
}

// What `ordo view --standalone` puts in the page's <!--@ORDO_ENGINE@-->: ordo compiled to WebAssembly
// (tools/web: the wasm in base64 and emscripten's loader) and the model's files, each by its path
// under the engine's /ordo/model, in base64 (view.js reads them: "where fresh data comes from").
std::string engine_block(const std::string& dir, const Pipeline& pipeline) {
  // config.json, the weights and the tokenizer the config names, where the engine's Pipeline looks.
  const std::string tokenizer = pipeline.config().tokenizer;
  const std::filesystem::path inside = (std::filesystem::path("model") / tokenizer).lexically_normal();
  if (inside.empty() || inside.is_absolute() || *inside.begin() == "..")
    throw InputError(dir + "/config.json", "names its tokenizer \"" + tokenizer +
                                               "\" outside the model's folder, which a standalone page cannot carry");
  std::vector<std::pair<std::string, std::string>> files = {{"model/config.json", dir + "/config.json"},
                                                            {"model/model.safetensors", dir + "/model.safetensors"},
                                                            {inside.generic_string(), dir + "/" + tokenizer}};
  // training.json, when the model has one: the page marks the training length from it.
  std::error_code missing;
  if (std::filesystem::exists(dir + "/training.json", missing))
    files.push_back({"model/training.json", dir + "/training.json"});
  uint64_t total = 0;
  for (const auto& file : files) {
    std::error_code ec;
    const auto size = std::filesystem::file_size(file.second, ec);
    total += ec ? 0 : uint64_t(size);  // a file that cannot be read fails below, by name
  }
  if (total > kMaxStandaloneModel)
    throw InputError(dir, "the model's files are " + std::to_string((total + (1 << 19)) >> 20) + " MB, more than the " +
                              std::to_string(kMaxStandaloneModel >> 20) +
                              " MB a standalone page carries: show it with `ordo serve --model " + dir + "` instead");
  nlohmann::json model = nlohmann::json::object();
  for (const auto& [name, path] : files)
    model[name] = base64(read_regular_file(path, kMaxStandaloneModel, "a model file"));
  const std::string web = web_dir();
  if (web.empty())
    throw InputError(
        "ordo view --standalone",
        "needs ordo compiled to WebAssembly (web/ordo_web.wasm beside the binary), which this build "
        "lacks: install emscripten (apt-get install emscripten), then cmake --build build --target ordo_web");
  const std::string wasm_path = web + "/ordo_web.wasm", js_path = web + "/ordo_web.js";
  const std::string wasm = read_regular_file(wasm_path, uint64_t(64) << 20, "ordo's WebAssembly engine");
  std::string js = read_regular_file(js_path, uint64_t(16) << 20, "ordo's WebAssembly loader");
  // Inside <script>, the text "</script" would end the element early; "<\/" means the same in JS.
  for (size_t at = js.find("</"); at != std::string::npos; at = js.find("</", at + 3)) js.replace(at, 2, "<\\/");

  return "<script id=\"ordo-engine\" type=\"application/octet-stream\">" + base64(wasm) + "</script>\n" +
         "<script id=\"ordo-model\" type=\"application/json\">" + json_for_html(model.dump()) + "</script>\n" +
         "<script>\n" + js + "\n</script>";
}

}  // namespace

int cmd_view(int argc, char** argv) {
  cxxopts::Options o("ordo view",
                     "Write one page that shows a text's way through the encoder, to open in a browser (offline, "
                     "from the file): its pieces, every layer x head of attention with and without the positional "
                     "encoding, the encoding's table, and with a second text the report of ordo compare. How to read "
                     "it: docs/walkthrough.md, \"All of it in one page\".");
  add_model_options(o);
  o.add_options()("html", "the page to write", cxxopts::value<std::string>())(
      "standalone",
      "write a page that runs ordo itself (compiled to WebAssembly, with the model inside): the reader types any "
      "text, as on the page of ordo serve, with no server and no network (texts: where it starts; default the "
      "walkthrough's two)");
  cxxopts::ParseResult args;
  if (!parse_with_texts(o, argc, argv, args, "TEXT [TEXT_B]")) return 0;
  const bool standalone = args.count("standalone") > 0;
  auto texts = args.count("texts") ? args["texts"].as<std::vector<std::string>>() : std::vector<std::string>();
  if (standalone && texts.empty()) texts = {"the cat sat on the mat", "the mat sat on the cat"};
  if (texts.empty() || texts.size() > 2)
    throw UsageError("needs one or two texts, e.g. ordo view \"the cat sat on the mat\" --html view.html");
  if (!args.count("html")) throw UsageError("needs --html FILE, the page to write");
  const std::string path = args["html"].as<std::string>();
  set_num_threads(threads_option(args));
  const ComputeType compute_type = compute_type_option(args);  // a wrong value fails before the model loads
  const std::string dir = model_dir(args);
  Pipeline pipeline(dir);
  pipeline.set_compute_type(compute_type);
  // The engine and the model first: a model too large for a page fails before any pass.
  const std::string engine = standalone ? engine_block(dir, pipeline) : "";
  std::vector<Tokenization> tokens;
  for (size_t i = 0; i < texts.size(); ++i)
    tokens.push_back(view_tokens(pipeline, texts[i], "argument " + std::to_string(i + 1)));
  // A standalone page is live, as the page of ordo serve: it asks its engine for section 2b.
  nlohmann::json data =
      view_json(pipeline, texts, tokens, args.count("model") ? args["model"].as<std::string>() : "the default model",
                !standalone);
  if (standalone) data["live"] = true, data["standalone"] = true;

  const std::string json = json_for_html(data.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
  std::string page = teach::view_page();
  page.replace(page.find("@ORDO_VIEW_DATA@"), std::strlen("@ORDO_VIEW_DATA@"), json);
  page.replace(page.find("<!--@ORDO_ENGINE@-->"), std::strlen("<!--@ORDO_ENGINE@-->"), engine);
  write_atomically(path, [&](std::FILE* f) { std::fwrite(page.data(), 1, page.size(), f); });
  std::printf("wrote %s (%zu bytes): open it in a browser\n", path.c_str(), page.size());
  return 0;
}

}  // namespace ordo::cli
