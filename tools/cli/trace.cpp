// ordo trace: one sentence's path through the encoder, stage by stage.
#include <cmath>
#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>

#include <ordo/ordo.h>

#include "tools/cli/cli.h"
#include "tools/cli/json_out.h"

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

// "(S, 3d) = (6, 192)": the shape in the engine's letters and in numbers.
std::string shape(const Stage& s, const Config& c) {
  std::string cols = s.kind == StageKind::AttentionWeights ? "S"
                     : s.cols == c.d_model                 ? "d"
                     : s.cols == 3 * c.d_model             ? "3d"
                     : s.cols == c.d_ff                    ? "F"
                                                           : std::to_string(s.cols);
  return "(S, " + cols + ") = (" + std::to_string(s.rows) + ", " + std::to_string(s.cols) + ")";
}

}  // namespace

int cmd_trace(int argc, char** argv) {
  cxxopts::Options o("ordo trace",
                     "Follow one text through the encoder: every stage's name, shape and equation, with the first "
                     "dims of each row, and each head's attention weights as a token x token table.");
  add_text_options(o);
  o.add_options()("dims", "dimensions of each row to show", cxxopts::value<int>()->default_value("6"))(
      "json", "print every stage as JSON, all rows and all dims (for plotting elsewhere)");
  cxxopts::ParseResult args;
  if (!parse(o, argc, argv, args)) return 0;
  const std::string text = the_text(args, "trace");
  const int K = int_option(args, "dims", 1, kMaxCount);
  Pipeline pipeline(model_dir(args));
  const Config& c = pipeline.model().config();
  const int d = c.d_model;
  const Tokenization tok = pipeline.tokenize(text, "argument 1");
  const int S = static_cast<int>(tok.ids.size());
  if (S == 0) throw UsageError("the text has no tokens to trace");
  if (S > pipeline.max_tokens())  // checked before the first line is printed, not by the encoder halfway
    throw InputError("argument 1",
                     "text has " + std::to_string(S) + " tokens, more than " + pipeline.max_tokens_reason());
  const std::vector<std::string>& pieces = tok.pieces;

  const std::string model_name = args.count("model") ? args["model"].as<std::string>() : "the default model";
  const bool json = args.count("json") > 0;
  // Positions the model has but --no-pe leaves out: their stage keeps its number, marked skipped, so
  // two traces line up stage by stage.
  const bool skipped_positions = args.count("no-pe") && c.positional_encoding != PositionalEncoding::None;
  using ojson = nlohmann::ordered_json;
  ojson stages = ojson::array();
  auto rows_json = [](const float* data, int rows, int cols, int stride) {
    ojson out = ojson::array();
    for (int t = 0; t < rows; ++t) out.push_back(json_floats<ojson>(data + size_t(t) * stride, size_t(cols)));
    return out;
  };
  if (!json) {
    std::printf("model %s: d = %d, h = %s of dh = %d, F = %d, %s, %s, %s", model_name.c_str(), d,
                count(c.n_heads, "head", "heads").c_str(), c.head_dim(), c.d_ff,
                count(c.n_layers, "layer", "layers").c_str(), c.norm_first ? "pre-LN" : "post-LN",
                to_string(c.activation));
    std::printf("; positions: %s%s\n", args.count("no-pe") ? "off (--no-pe)" : to_string(c.positional_encoding),
                c.positional_encoding == PositionalEncoding::Sinusoidal && !args.count("no-pe")
                    ? (std::string(", ") + to_string(c.pe_layout)).c_str()
                    : "");
    std::printf("each row shows its first %d dims; rows are labelled \"t piece\"\n", K);
  }

  int step = 0;
  auto heading = [&](const std::string& name, const std::string& shape_text, const std::string& equation) {
    ++step;
    if (!json) std::printf("\n[%d] %s   %s\n    %s\n", step, name.c_str(), shape_text.c_str(), equation.c_str());
  };

  heading("pieces and ids", "(S) = (" + std::to_string(S) + ")", "sentencepiece: text -> pieces -> ids");
  if (json) stages.push_back({{"stage", step}, {"name", "pieces and ids"}, {"shape", {S}}});  // top-level pieces, ids
  if (!json)
    for (int t = 0; t < S; ++t) std::printf("  %s id %d\n", row_label(t, pieces[t]).c_str(), tok.ids[t]);

  const std::string dims = "(S, d) = (" + std::to_string(S) + ", " + std::to_string(d) + ")";
  int last_layer = -2;
  EncodeOptions options;
  options.positions = !args.count("no-pe");
  options.observe = [&](const Stage& s) {
    if (s.kind == StageKind::Input && skipped_positions) {
      heading(c.positional_encoding == PositionalEncoding::Learned ? "learned positions" : "positional encoding",
              "skipped", "--no-pe: no positions are added");
      if (json) stages.push_back({{"stage", step}, {"name", "positions"}, {"skipped", true}});
    }
    if (json) {
      heading(s.name, "", "");
      stages.push_back({{"stage", step},
                        {"name", s.name},
                        {"equation", s.equation},
                        {"layer", s.layer >= 0 ? ojson(s.layer) : ojson(nullptr)},
                        {"head", s.head >= 0 ? ojson(s.head) : ojson(nullptr)},
                        {"shape", {s.rows, s.cols}},
                        {"values", rows_json(s.data, s.rows, s.cols, s.stride)}});
      return;
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
    } else if (s.kind == StageKind::Qkv) {
      heading(s.name, shape(s, c), std::string(s.equation) + "   (q = cols [0, d), k = [d, 2d), v = [2d, 3d))");
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
  const std::vector<float> pooled = pool(h.row(0, 0), S, d, Pooling::Mean);
  if (json) {
    ojson j = {{"text", text},
               {"model", model_name},
               {"positions", !args.count("no-pe") && c.positional_encoding != PositionalEncoding::None},
               {"pieces", pieces},
               {"ids", tok.ids},
               {"stages", std::move(stages)},
               {"hidden", rows_json(h.row(0, 0), S, d, d)},
               {"pooled", json_floats<ojson>(pooled.data(), pooled.size())}};
    std::cout << j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
    return 0;
  }

  std::printf("\n======== output ========\n");
  heading("final hidden states", dims, "one vector per token: the encoder's output");
  print_rows(h.row(0, 0), S, d, d, 0, K, pieces);
  double sq = 0;
  for (float v : pooled) sq += double(v) * v;
  heading("pooled vector", "(d) = (" + std::to_string(d) + ")", "mean over the S rows: v = (1/S) sum_t h_t");
  std::printf("  %s |v| = %.4f\n", preview(pooled.data(), d, K).c_str(), std::sqrt(sq));
  return 0;
}

}  // namespace ordo::cli
