// ordo trace: one sentence's path through the encoder, stage by stage.
#include <cmath>
#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>

#include <ordo/ordo.h>

#include "tools/cli/cli.h"
#include "tools/cli/results_json.h"

namespace ordo::cli {

namespace {

// A (rows, cols) view: the first k columns of each row, labelled with the pieces.
void print_rows(const float* data, int rows, int cols, int stride, int first_col, int k,
                const std::vector<std::string>& pieces) {
  const int shown = std::min(k, cols - first_col);
  std::printf("  %s", row_label_blank().c_str());
  for (int j = 0; j < shown; ++j) std::printf(" %8d", first_col + j);
  std::printf(shown < cols ? "   ... (of %d)\n" : "\n", cols);
  for (int t = 0; t < rows; ++t) {
    std::printf("  %s", row_label(t, pieces[t]).c_str());
    for (int j = 0; j < shown; ++j) std::printf(" %8.4f", data[size_t(t) * stride + first_col + j]);
    std::printf("\n");
  }
}

// One head's inside (q, k, v, the scores, A v): shown for the head --inside names.
bool inside_stage(StageKind k) {
  return k == StageKind::HeadQuery || k == StageKind::HeadKey || k == StageKind::HeadValue ||
         k == StageKind::AttentionScores || k == StageKind::AlibiBias || k == StageKind::ScaledScores ||
         k == StageKind::HeadOutput;
}

// "(S, 3d) = (6, 192)": the shape in the engine's letters and in numbers.
std::string shape(const Stage& s, const Config& c) {
  const bool square = s.kind == StageKind::AttentionWeights || s.kind == StageKind::AttentionScores ||
                      s.kind == StageKind::ScaledScores || s.kind == StageKind::AlibiBias;
  std::string cols = square                    ? "S"
                     : inside_stage(s.kind)    ? "dh"
                     : s.cols == c.d_model     ? "d"
                     : s.cols == 3 * c.d_model ? "3d"
                     : s.cols == c.d_ff        ? "F"
                                               : std::to_string(s.cols);
  return "(S, " + cols + ") = (" + std::to_string(s.rows) + ", " + std::to_string(s.cols) + ")";
}

}  // namespace

int cmd_trace(int argc, char** argv) {
  cxxopts::Options o = text_command_options(
      "trace",
      "Follow one text through the encoder: every stage's name, shape and equation, with the first "
      "dims of each row, and each head's attention weights as a token x token table.");
  o.add_options()("dims", "dimensions of each row to show", cxxopts::value<int>()->default_value("6"))(
      "json", "print every stage as JSON, all rows and all dims (for plotting elsewhere)")(
      "inside", "also show one head's inside: its q, k, v, the scores q k^T, the scores / sqrt(dh) and A v",
      cxxopts::value<std::string>(),
      "LAYER,HEAD")("reference",
                    "run the plain encoder of engine/reference.cpp (double precision, one loop per equation) "
                    "instead of the fast one: the code a reader reads is the code that prints these numbers")(
      "top", "masked-LM guesses shown per piece (models with a head)", cxxopts::value<int>()->default_value("3"));
  add_mask_head_option(o);
  cxxopts::ParseResult args;
  if (!parse(o, argc, argv, args)) return 0;
  const std::string text = the_text(args, "trace");
  const int K = int_option(args, "dims", 1, kMaxCount);
  const int top = int_option(args, "top", 0, 1000);
  Pipeline pipeline = load_pipeline(args);
  const Config& c = pipeline.config();
  int inside_layer = -1, inside_head = -1;
  if (args.count("inside")) {
    const std::string v = args["inside"].as<std::string>();
    char tail = 0;
    if (std::sscanf(v.c_str(), "%d,%d%c", &inside_layer, &inside_head, &tail) != 2 || inside_layer < 0 ||
        inside_layer >= c.n_layers || inside_head < 0 || inside_head >= c.n_heads)
      throw UsageError("--inside takes LAYER,HEAD with a layer in [0, " + std::to_string(c.n_layers) +
                       ") and a head in [0, " + std::to_string(c.n_heads) + "), e.g. --inside 1,1; got \"" + v + "\"");
  }
  const int d = c.d_model;
  const Tokenization tok = pipeline.tokenize(text, "argument 1");
  const int S = static_cast<int>(tok.ids.size());
  if (S == 0) throw UsageError("the text has no tokens to trace");
  pipeline.check_runnable(tok, "argument 1");  // before the first line is printed, not by the encoder halfway
  const std::vector<std::string>& pieces = tok.pieces;

  const std::string model_name = args.count("model") ? args["model"].as<std::string>() : "the default model";
  if (args.count("json")) {
    TraceRequest r;
    r.text = text, r.model_name = model_name, r.positions = !args.count("no-pe"), r.reference = args.count("reference");
    r.inside_layer = inside_layer, r.inside_head = inside_head, r.top = top;
    std::cout << trace_json(pipeline, r, tok).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
    return 0;
  }
  // Positions the model has but --no-pe leaves out: their stage keeps its number, marked skipped, so
  // two traces line up stage by stage.
  const bool skipped_positions = args.count("no-pe") && added_to_input(c.positional_encoding);
  {
    std::printf("model %s: d = %d, h = %s of dh = %d, F = %d, %s, %s, %s", model_name.c_str(), d,
                count(c.n_heads, "head", "heads").c_str(), c.head_dim(), c.d_ff,
                count(c.n_layers, "layer", "layers").c_str(), c.norm_first ? "pre-LN" : "post-LN",
                to_string(c.activation));
    std::printf("; positions: %s%s\n", args.count("no-pe") ? "off (--no-pe)" : to_string(c.positional_encoding),
                args.count("no-pe") ? ""
                : c.positional_encoding == PositionalEncoding::Sinusoidal
                    ? (std::string(", ") + to_string(c.pe_layout)).c_str()
                : c.family == Family::MPNet ? " + t5-buckets"  // MPNet: both
                                            : "");
    if (args.count("reference"))
      std::printf("encoder: the plain one of engine/reference.cpp, in double precision (--reference)\n");
    std::printf("each row shows its first %d dims; rows are labelled \"t piece\"\n", K);
  }

  int step = 0;
  auto heading = [&](const std::string& name, const std::string& shape_text, const std::string& equation) {
    ++step;
    std::printf("\n[%d] %s   %s\n    %s\n", step, name.c_str(), shape_text.c_str(), equation.c_str());
  };

  heading("pieces and ids", "(S) = (" + std::to_string(S) + ")",
          std::string(pipeline.tokenizer().kind()) + ": text -> pieces -> ids");
  for (int t = 0; t < S; ++t) std::printf("  %s id %d\n", row_label(t, pieces[t]).c_str(), tok.ids[t]);

  const std::string dims = "(S, d) = (" + std::to_string(S) + ", " + std::to_string(d) + ")";
  int last_layer = -2;
  EncodeOptions options;
  options.positions = !args.count("no-pe");
  options.observe = [&](const Stage& s) {
    if (inside_stage(s.kind) && (s.layer != inside_layer || s.head != inside_head)) return;
    if (s.kind == StageKind::Input && skipped_positions) {
      heading(c.positional_encoding == PositionalEncoding::Learned ? "learned positions" : "positional encoding",
              "skipped", "--no-pe: no positions are added");
    }
    if (s.layer != last_layer && s.layer >= 0) std::printf("\n======== layer %d of %d ========\n", s.layer, c.n_layers);
    last_layer = s.layer;
    if (s.kind == StageKind::ScaledEmbedding) {
      char eq[96];
      std::snprintf(eq, sizeof eq, "%s = e_t * %.4f   (token and position signals on one scale)", s.equation,
                    static_cast<float>(std::sqrt(double(d))));
      heading(s.name, shape(s, c), eq);
      print_rows(s.data, s.rows, s.cols, s.stride, 0, K, pieces);
    } else if (s.kind == StageKind::AttentionWeights) {
      const int dh = c.head_dim();
      heading("attention weights, head " + std::to_string(s.head), shape(s, c),
              std::string(s.equation) + "   (q_h, k_h: dims [" + std::to_string(s.head * dh) + ", " +
                  std::to_string((s.head + 1) * dh) + ") of q, k; each row sums to 1)");
      print_attention(s.data, s.rows, s.stride, pieces);
    } else if (s.kind == StageKind::AttentionScores || s.kind == StageKind::ScaledScores ||
               s.kind == StageKind::AlibiBias) {
      heading(std::string(s.name) + ", head " + std::to_string(s.head), shape(s, c),
              std::string(s.equation) + "   (row = query token, column = key token)");
      print_token_table(s.data, s.rows, s.stride, pieces, 8, 3);
    } else if (inside_stage(s.kind)) {
      heading(std::string(s.name) + ", head " + std::to_string(s.head), shape(s, c), s.equation);
      print_rows(s.data, s.rows, s.cols, s.stride, 0, K, pieces);
    } else if (s.kind == StageKind::Qkv || s.kind == StageKind::RotatedQk) {
      const int A = s.cols / 3;  // d, but for a T5 encoder whose d_kv says otherwise
      const char* columns = A == d ? "   (q = cols [0, d), k = [d, 2d), v = [2d, 3d))"
                                   : "   (q = cols [0, A), k = [A, 2A), v = [2A, 3A), A = h*dh)";
      heading(s.name, shape(s, c), std::string(s.equation) + (s.kind == StageKind::RotatedQk ? "" : columns));
      const bool rotated = s.kind == StageKind::RotatedQk;  // v is not turned
      for (const char* part : {"q", "k", "v"}) {
        if (rotated && part[0] == 'v') continue;
        const int offset = (part[0] == 'q' ? 0 : part[0] == 'k' ? 1 : 2) * A;
        std::printf("  %s:\n", part);
        print_rows(s.data + offset, s.rows, A, s.stride, 0, K, pieces);
      }
    } else {
      heading(s.name, shape(s, c), s.equation);
      print_rows(s.data, s.rows, s.cols, s.stride, 0, K, pieces);
    }
  };
  const std::vector<float> hidden = pipeline.observe(tok.ids, options, args.count("reference") > 0);  // (S, d)
  const std::vector<float> pooled = pool(hidden.data(), S, d, Pooling::Mean);
  // The masked-LM head on the final rows, for a model that has one: each piece's top guesses.
  std::vector<std::vector<std::pair<int32_t, double>>> guesses;
  if (pipeline.has_head() && top > 0) {
    const int V = c.vocab_size;
    const std::vector<float> logits = pipeline.head_logits(hidden.data(), S);
    for (int t = 0; t < S; ++t) guesses.push_back(top_k(logits.data() + size_t(t) * V, V, top));
  }
  auto piece_of = [&](int32_t id) { return pipeline.tokenizer().piece(id); };
  std::printf("\n======== output ========\n");
  heading("final hidden states", dims, "one vector per token: the encoder's output");
  print_rows(hidden.data(), S, d, d, 0, K, pieces);
  double sq = 0;
  for (float v : pooled) sq += double(v) * v;
  heading("pooled vector", "(d) = (" + std::to_string(d) + ")", "mean over the S rows: v = (1/S) sum_t h_t");
  std::printf("  %s |v| = %.4f\n", preview(pooled.data(), d, K).c_str(), std::sqrt(sq));
  if (!guesses.empty()) {
    heading("masked-LM logits", "(S, V) = (" + std::to_string(S) + ", " + std::to_string(c.vocab_size) + ")",
            "logits_t = h_t E^T + b, p_t = softmax(logits_t): the head's guess for the piece at t "
            "(no piece is masked here, so most rows guess their own piece)");
    for (int t = 0; t < S; ++t) {
      std::printf("  %s", row_label(t, pieces[t]).c_str());
      for (const auto& [id, p] : guesses[t]) std::printf("  %s %.4f", piece_of(id).c_str(), p);
      std::printf("\n");
    }
  }
  return 0;
}

}  // namespace ordo::cli
