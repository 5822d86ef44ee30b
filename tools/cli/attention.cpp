// ordo attention: one head's attention weights as a token x token table, and optionally a PNG.
#include <algorithm>
#include <cmath>
#include <cstdio>

#include <ordo/ordo.h>

#include "tools/cli/cli.h"
#include "tools/teach/figure.h"

namespace ordo::cli {

namespace {

// This layer's q and k of one head, (S, dh) each, from a run with or without positions.
void head_qk(Pipeline& pipeline, const Tokenization& tok, int layer, int head, bool positions, std::vector<double>* q,
             std::vector<double>* k) {
  const Config& c = pipeline.model().config();
  const int d = c.d_model, dh = c.head_dim();
  EncodeOptions options;
  options.positions = positions;
  options.observe = [&](const Stage& s) {
    if (s.kind != StageKind::Qkv || s.layer != layer) return;
    for (int t = 0; t < s.rows; ++t)
      for (int e = 0; e < dh; ++e) {
        q->push_back(s.data[size_t(t) * s.stride + head * dh + e]);
        k->push_back(s.data[size_t(t) * s.stride + d + head * dh + e]);
      }
  };
  pipeline.observe(tok.ids, options);
}

// The scaled scores q·kᵀ/√dh split by where q and k come from. The run without positions gives
// each piece's content part (q_c, k_c); what the positions add is the rest (q_p = q − q_c,
// k_p = k − k_c). Since the scores are bilinear in q and k,
//   q·k = q_c·k_c + q_c·k_p + q_p·k_c + q_p·k_p   exactly.
// In the first layer of a post-LN model q_c = (E[id]·√d)·W_qᵀ + b_q and q_p = PE(t)·W_qᵀ; in later
// layers q_p is everything the positions changed in q up to here.
void print_parts(Pipeline& pipeline, const Tokenization& tok, int layer, int head) {
  const int dh = pipeline.model().config().head_dim(), S = static_cast<int>(tok.ids.size());
  std::vector<double> q, k, qc, kc;
  head_qk(pipeline, tok, layer, head, true, &q, &k);
  head_qk(pipeline, tok, layer, head, false, &qc, &kc);
  const double scale = 1.0 / std::sqrt(double(dh));
  const char* names[4] = {"content . content", "content . position", "position . content", "position . position"};
  std::vector<float> part[4], total(size_t(S) * S);
  for (auto& p : part) p.assign(size_t(S) * S, 0.0f);
  for (int i = 0; i < S; ++i)
    for (int j = 0; j < S; ++j) {
      double sum[4] = {0, 0, 0, 0}, all = 0;
      for (int e = 0; e < dh; ++e) {
        const double a = qc[size_t(i) * dh + e], ap = q[size_t(i) * dh + e] - a;
        const double b = kc[size_t(j) * dh + e], bp = k[size_t(j) * dh + e] - b;
        sum[0] += a * b, sum[1] += a * bp, sum[2] += ap * b, sum[3] += ap * bp;
        all += q[size_t(i) * dh + e] * k[size_t(j) * dh + e];
      }
      for (int n = 0; n < 4; ++n) part[n][size_t(i) * S + j] = float(sum[n] * scale);
      total[size_t(i) * S + j] = float(all * scale);
    }
  std::printf(
      "\nthe scaled scores q k^T / sqrt(dh) of this head, split by where q and k come from:\n"
      "content = q, k of the same run without positions; position = what the positions add to them\n");
  for (int n = 0; n < 4; ++n) {
    std::printf("\n%s\n", names[n]);
    print_token_table(part[n].data(), S, S, tok.pieces, 8, 3);
  }
  std::printf("\nthe four added (= q k^T / sqrt(dh), whose softmax is the table above)\n");
  print_token_table(total.data(), S, S, tok.pieces, 8, 3);
  std::printf("\nmean of each part over the pairs at each distance j - i (key minus query; -1 = the piece before)\n");
  std::printf("  %8s %10s %10s %10s %10s %10s\n", "j - i", "c.c", "c.p", "p.c", "p.p", "sum");
  for (int off = -(S - 1); off <= S - 1; ++off) {
    double m[5] = {0, 0, 0, 0, 0};
    int n_pairs = 0;
    for (int i = 0; i < S; ++i) {
      const int j = i + off;
      if (j < 0 || j >= S) continue;
      for (int n = 0; n < 4; ++n) m[n] += part[n][size_t(i) * S + j];
      m[4] += total[size_t(i) * S + j];
      ++n_pairs;
    }
    std::printf("  %8d", off);
    for (double v : m) std::printf(" %10.3f", v / n_pairs);
    std::printf("\n");
  }
}

}  // namespace

int cmd_attention(int argc, char** argv) {
  cxxopts::Options o =
      text_command_options("attention",
                           "One head's attention weights for a text: a token x token table (row = the query token, "
                           "column = the key token it attends to), and optionally a heatmap PNG.");
  o.add_options()("layer", "layer, from 0", cxxopts::value<int>()->default_value("0"))(
      "head", "head, from 0", cxxopts::value<int>()->default_value("0"))(
      "png", "draw the table as a heatmap: FILE.png or FILE.svg (scale 0 .. 1)", cxxopts::value<std::string>())(
      "parts",
      "split the head's scaled scores into content.content, content.position, position.content and "
      "position.position (what positions add to q and k at this layer), with their mean per distance");
  add_scale_options(o);
  cxxopts::ParseResult args;
  if (!parse(o, argc, argv, args)) return 0;
  const std::string text = the_text(args, "attention");
  if (args.count("png")) teach::picture_format(args["png"].as<std::string>());
  double vmin = 0, vmax = 1;  // every picture on the same scale, so two of them compare at a glance
  scale(args, &vmin, &vmax);
  const ComputeType compute_type = compute_type_option(args);  // a wrong value fails before the model loads
  Pipeline pipeline(model_dir(args));
  pipeline.set_compute_type(compute_type);
  const Config& c = pipeline.model().config();
  const int layer = args["layer"].as<int>(), head = args["head"].as<int>();
  if (layer < 0 || layer >= c.n_layers)
    throw UsageError("--layer must be in 0 .. " + std::to_string(c.n_layers - 1) + " for this model");
  if (head < 0 || head >= c.n_heads)
    throw UsageError("--head must be in 0 .. " + std::to_string(c.n_heads - 1) + " for this model");
  const Tokenization tok = pipeline.tokenize(text, "argument 1");
  const int S = static_cast<int>(tok.ids.size());
  if (S == 0) throw UsageError("the text has no tokens");
  pipeline.check_runnable(tok, "argument 1");
  if (args.count("png") && S > 2048) throw UsageError("--png draws at most 2048 tokens");

  std::vector<float> A;  // (S, S)
  EncodeOptions options;
  options.positions = !args.count("no-pe");
  options.observe = [&](const Stage& s) {
    if (s.kind != StageKind::AttentionWeights || s.layer != layer || s.head != head) return;
    for (int t = 0; t < s.rows; ++t)
      A.insert(A.end(), s.data + size_t(t) * s.stride, s.data + size_t(t) * s.stride + s.cols);
  };
  pipeline.observe(tok.ids, options);

  if (args.count("parts")) {
    if (!pipeline.sees_order(options.positions))
      throw UsageError("--parts splits the scores by what the positions add; " +
                       std::string(options.positions ? "this model has no positions" : "--no-pe leaves them out"));
    if (args.count("png")) throw UsageError("--parts prints tables; draw the weights without it");
  }

  std::string picture;  // written before anything is printed, so a bad path prints nothing else
  if (args.count("png")) {
    teach::Heatmap hm;
    hm.rows = hm.cols = S, hm.values.assign(A.begin(), A.end()), hm.vmin = vmin, hm.vmax = vmax;
    hm.value_name = "attention weight";
    hm.row_labels = hm.col_labels = tok.pieces;
    teach::choose_cells(S, S, true, &hm.cell_w, &hm.cell_h, S <= 10 ? 480 : 720);
    hm.show_values = S <= 12;
    const std::string model_name = args.count("model") ? args["model"].as<std::string>() : "the default model";
    const std::string shown_text = text.size() <= 48 ? text : text.substr(0, 45) + "...";
    const teach::Figure f{"Attention, layer " + std::to_string(layer) + " head " + std::to_string(head) + ": \"" +
                              shown_text + "\", " + model_name +
                              (!pipeline.sees_order(true) ? " (no positions)"
                               : options.positions        ? ", with positions"
                                                          : ", positions removed (--no-pe)"),
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
  if (args.count("parts")) print_parts(pipeline, tok, layer, head);

  std::printf("%s", picture.c_str());
  return 0;
}

}  // namespace ordo::cli
