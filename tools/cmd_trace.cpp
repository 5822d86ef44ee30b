// ordo trace, ordo attention: one sentence's path through the encoder, stage by stage.
#include <cmath>
#include <cstdio>
#include <iostream>

#include "engine/errors.h"
#include "tools/cli.h"
#include "tools/ordo.h"
#include "tools/png_image.h"

namespace ordo::cli {

namespace {

// Display width of UTF-8 text: one column per code point (the pieces' "▁" is three bytes, one column).
int columns(const std::string& s) {
  int n = 0;
  for (unsigned char c : s) n += (c & 0xC0) != 0x80;
  return n;
}

// `s` cut or padded to `width` columns.
std::string fit(const std::string& s, int width) {
  std::string out;
  int n = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    const unsigned char c = s[i];
    if ((c & 0xC0) != 0x80 && n++ == width) break;
    out += s[i];
  }
  return out + std::string(std::max(0, width - columns(out)), ' ');
}

constexpr int kLabel = 14;  // row labels: "t piece"

std::string row_label(int t, const std::string& piece) {
  return fit(std::to_string(t) + " " + piece, kLabel);
}

// A (rows, cols) view: the first k columns of each row, labelled with the pieces.
void print_rows(const float* data, int rows, int cols, int stride, int first_col, int k,
                const std::vector<std::string>& pieces) {
  const int shown = std::min(k, cols - first_col);
  std::printf("  %s", fit("", kLabel).c_str());
  for (int j = 0; j < shown; ++j) std::printf(" %8d", first_col + j);
  std::printf(shown < cols ? "   ... (of %d)\n" : "\n", cols);
  for (int t = 0; t < rows; ++t) {
    std::printf("  %s", row_label(t, pieces[t]).c_str());
    for (int j = 0; j < shown; ++j) std::printf(" %8.4f", data[size_t(t) * stride + first_col + j]);
    std::printf("\n");
  }
}

// A token × token table: row t = query token, column u = key token.
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

// "(S, 3d) = (6, 192)": the shape in the engine's letters and in numbers.
std::string shape(const Stage& s, const Config& c) {
  std::string cols = s.name == "attention weights" ? "S"
                     : s.cols == c.d_model         ? "d"
                     : s.cols == 3 * c.d_model     ? "3d"
                     : s.cols == c.d_ff            ? "F"
                                                   : std::to_string(s.cols);
  return "(S, " + cols + ") = (" + std::to_string(s.rows) + ", " + std::to_string(s.cols) + ")";
}

void add_common_options(cxxopts::Options& o) {
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

}  // namespace

int cmd_trace(int argc, char** argv) {
  cxxopts::Options o("ordo trace",
                     "Follow one text through the encoder: every stage's name, shape and equation, with the first "
                     "dims of each row, and each head's attention weights as a token x token table.");
  add_common_options(o);
  o.add_options()("dims", "dimensions of each row to show", cxxopts::value<int>()->default_value("6"));
  cxxopts::ParseResult args;
  if (!parse(o, argc, argv, args)) return 0;
  const std::string text = the_text(args, "trace");
  const int K = args["dims"].as<int>();
  if (K <= 0) throw UsageError("--dims must be positive");
  Pipeline pipeline(model_dir(args));
  const Config& c = pipeline.model().config();
  const int d = c.d_model;
  const Tokenization tok = pipeline.tokenize(text, "argument 1");
  const int S = static_cast<int>(tok.ids.size());
  if (S == 0) throw UsageError("the text has no tokens to trace");
  const std::vector<std::string>& pieces = tok.pieces;

  const std::string model_name = args.count("model") ? args["model"].as<std::string>() : "the default model";
  std::printf("model %s: d = %d, h = %d heads of dh = %d, F = %d, %d layers, %s, %s", model_name.c_str(), d, c.n_heads,
              c.head_dim(), c.d_ff, c.n_layers, c.norm_first ? "pre-LN" : "post-LN", to_string(c.activation));
  std::printf("; positions: %s%s\n", args.count("no-pe") ? "off (--no-pe)" : to_string(c.positional_encoding),
              c.positional_encoding == PositionalEncoding::Sinusoidal && !args.count("no-pe")
                  ? (std::string(", ") + to_string(c.pe_layout)).c_str()
                  : "");
  std::printf("each row shows its first %d dims; rows are labelled \"t piece\"\n", K);

  int step = 0;
  auto heading = [&](const std::string& name, const std::string& shape_text, const std::string& equation) {
    std::printf("\n[%d] %s   %s\n    %s\n", ++step, name.c_str(), shape_text.c_str(), equation.c_str());
  };

  heading("pieces and ids", "(S) = (" + std::to_string(S) + ")", "sentencepiece: text -> pieces -> ids");
  for (int t = 0; t < S; ++t) std::printf("  %s id %d\n", row_label(t, pieces[t]).c_str(), tok.ids[t]);

  // The embedding lookup and its scale, from the weights (the engine fuses them with the positions).
  const std::string dims = "(S, d) = (" + std::to_string(S) + ", " + std::to_string(d) + ")";
  std::vector<float> e(size_t(S) * d);  // (S, d)
  for (int t = 0; t < S; ++t)
    std::copy_n(pipeline.model().weights().embedding + size_t(tok.ids[t]) * d, d, e.data() + size_t(t) * d);
  heading("embedding rows", dims, "e_t = E[id_t]   (row id_t of embedding.weight, (V, d))");
  print_rows(e.data(), S, d, d, 0, K, pieces);
  if (c.scale_embedding) {
    const float scale = static_cast<float>(std::sqrt(double(d)));
    for (float& v : e) v *= scale;
    char eq[96];
    std::snprintf(eq, sizeof eq, "e_t * sqrt(d) = e_t * %.4f   (token and position signals on one scale)", scale);
    heading("after x sqrt(d)", dims, eq);
    print_rows(e.data(), S, d, d, 0, K, pieces);
  }

  int last_layer = -2;
  EncodeOptions options;
  options.positions = !args.count("no-pe");
  options.observe = [&](const Stage& s) {
    if (s.layer != last_layer && s.layer >= 0) std::printf("\n======== layer %d of %d ========\n", s.layer, c.n_layers);
    last_layer = s.layer;
    if (s.name == "attention weights") {
      const int dh = c.head_dim();
      heading("attention weights, head " + std::to_string(s.head), shape(s, c),
              s.equation + "   (q_h, k_h: dims [" + std::to_string(s.head * dh) + ", " +
                  std::to_string((s.head + 1) * dh) + ") of q, k; each row sums to 1)");
      print_attention(s.data, s.rows, s.stride, pieces);
    } else if (s.name == "q | k | v") {
      heading(s.name, shape(s, c), s.equation + "   (q = cols [0, d), k = [d, 2d), v = [2d, 3d))");
      for (const char* part : {"q", "k", "v"}) {
        const int offset = (part[0] == 'q' ? 0 : part[0] == 'k' ? 1 : 2) * d;
        std::printf("  %s:\n", part);
        print_rows(s.data + offset, s.rows, d, s.stride, 0, K, pieces);
      }
    } else {
      heading(s.name, shape(s, c), s.equation);
      print_rows(s.data, s.rows, s.cols, s.stride, 0, K, pieces);
    }
  };
  const Hidden h = pipeline.encoder().forward({tok.ids}, options);

  std::printf("\n======== output ========\n");
  heading("final hidden states", dims, "one vector per token: the encoder's output");
  print_rows(h.row(0, 0), S, d, d, 0, K, pieces);
  const std::vector<float> pooled = pool(h, 0, Pooling::Mean);
  double sq = 0;
  for (float v : pooled) sq += double(v) * v;
  heading("pooled vector", "(d) = (" + std::to_string(d) + ")", "mean over the S rows: v = (1/S) sum_t h_t");
  std::printf("  %s |v| = %.4f\n", preview(pooled.data(), d, K).c_str(), std::sqrt(sq));
  return 0;
}

int cmd_attention(int argc, char** argv) {
  cxxopts::Options o("ordo attention",
                     "One head's attention weights for a text: a token x token table (row = the query token, "
                     "column = the key token it attends to), and optionally a heatmap PNG.");
  add_common_options(o);
  o.add_options()("layer", "layer, from 0", cxxopts::value<int>()->default_value("0"))(
      "head", "head, from 0", cxxopts::value<int>()->default_value("0"))("png", "draw the table as a heatmap PNG",
                                                                         cxxopts::value<std::string>());
  cxxopts::ParseResult args;
  if (!parse(o, argc, argv, args)) return 0;
  const std::string text = the_text(args, "attention");
  Pipeline pipeline(model_dir(args));
  const Config& c = pipeline.model().config();
  const int layer = args["layer"].as<int>(), head = args["head"].as<int>();
  if (layer < 0 || layer >= c.n_layers)
    throw UsageError("--layer must be in 0 .. " + std::to_string(c.n_layers - 1) + " for this model");
  if (head < 0 || head >= c.n_heads)
    throw UsageError("--head must be in 0 .. " + std::to_string(c.n_heads - 1) + " for this model");
  const Tokenization tok = pipeline.tokenize(text, "argument 1");
  const int S = static_cast<int>(tok.ids.size());
  if (S == 0) throw UsageError("the text has no tokens");
  if (args.count("png") && S > 2048) throw UsageError("--png draws at most 2048 tokens");

  std::vector<float> A;  // (S, S)
  EncodeOptions options;
  options.positions = !args.count("no-pe");
  options.observe = [&](const Stage& s) {
    if (s.name != "attention weights" || s.layer != layer || s.head != head) return;
    for (int t = 0; t < s.rows; ++t)
      A.insert(A.end(), s.data + size_t(t) * s.stride, s.data + size_t(t) * s.stride + s.cols);
  };
  pipeline.encoder().forward({tok.ids}, options);

  std::string picture;  // written before anything is printed, so a bad path prints nothing else
  if (args.count("png")) {
    double top = 0;
    for (float v : A) top = std::max(top, double(v));
    top = std::min(1.0, std::ceil(top * 20.0) / 20.0);  // the scale's top: the largest weight, up to a multiple of 0.05
    teach::Heatmap hm{S, S, std::vector<double>(A.begin(), A.end()), 0.0, top, teach::ColourMap::Sequential, 0, 0};
    hm.row_labels = hm.col_labels = tok.pieces;
    teach::choose_cells(S, S, true, &hm.cell_w, &hm.cell_h, S <= 10 ? 480 : 720);
    const auto image = teach::render(hm);
    const std::string path = args["png"].as<std::string>();
    teach::write_png(path, image);
    std::string order = "0 .. " + std::to_string(S - 1) + ", the pieces of the table above";
    if (S <= 12) {
      order.clear();
      for (int t = 0; t < S; ++t) order += (t ? " " : "") + tok.pieces[t];
    }
    picture =
        "\n" + teach::describe(hm, image, path, "query tokens " + order, "key tokens, same order", "attention weight");
  }
  std::printf("attention weights, layer %d, head %d%s: A = softmax(q k^T / sqrt(dh)), (S, S) = (%d, %d)\n", layer, head,
              options.positions ? "" : " (no positional encoding)", S, S);
  std::printf("row = query token, column = key token; each row sums to 1\n");
  print_attention(A.data(), S, S, tok.pieces);

  std::printf("%s", picture.c_str());
  return 0;
}

}  // namespace ordo::cli
