// ordo attention: one head's attention weights as a token x token table, and optionally a PNG.
#include <ordo/ordo.h>

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "tools/cli/cli.h"
#include "tools/teach/figure.h"

namespace ordo::cli {

int cmd_attention(int argc, char** argv) {
  cxxopts::Options o("ordo attention",
                     "One head's attention weights for a text: a token x token table (row = the query token, "
                     "column = the key token it attends to), and optionally a heatmap PNG.");
  add_text_options(o);
  o.add_options()("layer", "layer, from 0", cxxopts::value<int>()->default_value("0"))(
      "head", "head, from 0", cxxopts::value<int>()->default_value("0"))(
      "png", "draw the table as a heatmap: FILE.png or FILE.svg (scale 0 .. 1)", cxxopts::value<std::string>());
  add_scale_options(o);
  cxxopts::ParseResult args;
  if (!parse(o, argc, argv, args)) return 0;
  const std::string text = the_text(args, "attention");
  if (args.count("png")) teach::picture_format(args["png"].as<std::string>());
  double vmin = 0, vmax = 1;  // every picture on the same scale, so two of them compare at a glance
  scale(args, &vmin, &vmax);
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
    if (s.kind != StageKind::AttentionWeights || s.layer != layer || s.head != head) return;
    for (int t = 0; t < s.rows; ++t)
      A.insert(A.end(), s.data + size_t(t) * s.stride, s.data + size_t(t) * s.stride + s.cols);
  };
  pipeline.encoder().forward({tok.ids}, options);

  std::string picture;  // written before anything is printed, so a bad path prints nothing else
  if (args.count("png")) {
    teach::Heatmap hm;
    hm.rows = hm.cols = S, hm.values.assign(A.begin(), A.end()), hm.vmin = vmin, hm.vmax = vmax;
    hm.value_name = "attention weight";
    hm.row_labels = hm.col_labels = tok.pieces;
    teach::choose_cells(S, S, true, &hm.cell_w, &hm.cell_h, S <= 10 ? 480 : 720);
    const teach::Figure f{"Attention weights, layer " + std::to_string(layer) + ", head " + std::to_string(head) +
                              (options.positions ? "" : ", without positions"),
                          "key token (attended to)", "query token (attending)"};
    const std::string path = args["png"].as<std::string>();
    const auto drawn = teach::draw(path, f, hm);
    std::string order = "0 .. " + std::to_string(S - 1) + ", the pieces of the table above";
    if (S <= 12) {
      order.clear();
      for (int t = 0; t < S; ++t) order += (t ? " " : "") + tok.pieces[t];
    }
    picture = "\n" + teach::describe(path, f, hm, drawn, "query tokens " + order, "key tokens, same order");
  }
  std::printf("attention weights, layer %d, head %d%s: A = softmax(q k^T / sqrt(dh)), (S, S) = (%d, %d)\n", layer, head,
              options.positions ? "" : " (no positional encoding)", S, S);
  std::printf("row = query token, column = key token; each row sums to 1\n");
  print_attention(A.data(), S, S, tok.pieces);

  std::printf("%s", picture.c_str());
  return 0;
}

}  // namespace ordo::cli
