// ordo attention: one head's attention weights as a token x token table, and optionally a PNG.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>

#include <ordo/heads.h>
#include <ordo/ordo.h>

#include "tools/cli/cli.h"
#include "tools/teach/figure.h"

namespace ordo::cli {

namespace {

// This layer's q and k of one head, (S, dh) each, from a run with or without positions.
void head_qk(Pipeline& pipeline, const Tokenization& tok, int layer, int head, bool positions, std::vector<double>* q,
             std::vector<double>* k) {
  const Config& c = pipeline.config();
  const int A = c.attention_width(), dh = c.head_dim();  // k starts A columns after q
  EncodeOptions options;
  options.positions = positions;
  options.observe = [&](const Stage& s) {
    if (s.kind != StageKind::Qkv || s.layer != layer) return;
    for (int t = 0; t < s.rows; ++t)
      for (int e = 0; e < dh; ++e) {
        q->push_back(s.data[size_t(t) * s.stride + head * dh + e]);
        k->push_back(s.data[size_t(t) * s.stride + A + head * dh + e]);
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
  const int dh = pipeline.config().head_dim(), S = static_cast<int>(tok.ids.size());
  std::vector<double> q, k, qc, kc;
  head_qk(pipeline, tok, layer, head, true, &q, &k);
  head_qk(pipeline, tok, layer, head, false, &qc, &kc);
  const double scale = pipeline.config().scale_attention ? 1.0 / std::sqrt(double(dh)) : 1.0;  // T5: no 1/√dh
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

std::string bucket_name(const HeadsByDistance& r, int b) {
  const int first = r.starts[b];
  return b + 1 < r.buckets() ? std::to_string(first) + "-" + std::to_string(r.starts[b + 1] - 1)
                             : std::to_string(first) + "+";
}

std::string offset_name(int o) {
  return o > 0 ? "+" + std::to_string(o) : std::to_string(o);
}

// One table of the report: a row per head and bucket, a column per offset; `value` is mean or most.
void print_by_distance(const HeadsByDistance& r, double (HeadsByDistance::*value)(int, int, int, int) const,
                       double times, int precision) {
  std::printf("  %5s %4s %9s", "layer", "head", "positions");
  for (int o = -r.max_offset; o <= r.max_offset; ++o) std::printf(" %7s", offset_name(o).c_str());
  std::printf("\n");
  for (int l = 0; l < r.layers; ++l)
    for (int h = 0; h < r.heads; ++h)
      for (int b = 0; b < r.buckets(); ++b) {
        std::printf("  %5d %4d %9s", l, h, bucket_name(r, b).c_str());
        for (int o = -r.max_offset; o <= r.max_offset; ++o) {
          const double v = (r.*value)(l, h, b, o);
          if (std::isnan(v))
            std::printf(" %7s", "-");
          else
            std::printf(" %7.*f", precision, v * times);
        }
        std::printf("\n");
      }
}

// ordo attention --by-distance: every head's mean weight by offset j − i over the lines of a file.
int by_distance(const cxxopts::ParseResult& args) {
  if (args.count("text")) throw UsageError("--by-distance reads the lines of --input FILE, not a text argument");
  if (args.count("parts")) throw UsageError("--parts splits one text's scores; --by-distance averages weights");
  const int max_offset = int_option(args, "max-offset", 0, 1024);
  const int min_pieces = int_option(args, "min-pieces", 0, kMaxCount);
  const int first = int_option(args, "first", 0, kMaxCount);
  const int cut = int_option(args, "cut", 0, kMaxCount, " (0: whole texts)");
  const bool json = args.count("json") > 0;
  std::string png;
  if (args.count("png")) png = args["png"].as<std::string>(), teach::picture_format(png);
  double vmin = 0, vmax = 1;
  scale(args, &vmin, &vmax);
  const std::string dir = model_dir(args);
  Pipeline pipeline = load_pipeline(args);
  const std::vector<HeadIndex> masked = pipeline.masked_heads();
  const bool positions = !args.count("no-pe");
  // The buckets: inside and past the training length (--split N, else the model's training.json).
  int split = args.count("split") ? int_option(args, "split", 0, kMaxCount) : training_length({dir});
  std::vector<int> starts = {0};
  if (split > 0) starts.push_back(split);

  std::vector<std::string> where;
  const std::vector<std::string> lines = read_texts(args, max_text_bytes(pipeline.max_tokens()), &where);
  std::vector<Tokenization> texts;
  int shorter = 0, longer = 0, read = 0;
  for (size_t n = 0; n < lines.size() && (first == 0 || int(texts.size()) < first); ++n) {
    ++read;
    Tokenization t = pipeline.tokenize(lines[n], where[n]);
    const int S = int(t.ids.size());
    if (cut > 0 && S > cut) pipeline.truncate(t, cut);
    if (S == 0 || S < min_pieces)
      ++shorter;
    else if (int(t.ids.size()) > pipeline.max_tokens())
      ++longer;
    else
      texts.push_back(std::move(t));
  }
  if (texts.empty())
    throw UsageError(
        "no text to average over: every line was left out (empty, shorter than --min-pieces or longer than the model "
        "runs)");
  const HeadsByDistance r = heads_by_distance(pipeline, texts, max_offset, starts, positions);
  const std::string input = args.count("input") ? args["input"].as<std::string>() : "stdin";

  if (json) {
    nlohmann::ordered_json j;
    j["model"] = dir;
    j["cut"] = cut;
    j["input"] = input;
    j["texts"] = r.texts;
    j["lines_read"] = read;
    j["left_out_short"] = shorter;
    j["left_out_long"] = longer;
    j["positions"] = positions;
    j["masked_heads"] = nlohmann::ordered_json::array();
    for (const HeadIndex& h : masked) j["masked_heads"].push_back({h.layer, h.head});
    j["training_length"] = split;
    j["offsets"] = nlohmann::ordered_json::array();
    for (int o = -max_offset; o <= max_offset; ++o) j["offsets"].push_back(o);
    j["buckets"] = nlohmann::ordered_json::array();
    for (int b = 0; b < r.buckets(); ++b) {
      nlohmann::ordered_json rows = nlohmann::ordered_json::array();
      for (int o = -max_offset; o <= max_offset; ++o) rows.push_back(r.n(b, o));
      j["buckets"].push_back({{"name", bucket_name(r, b)}, {"first", r.starts[b]}, {"rows", rows}});
    }
    j["heads"] = nlohmann::ordered_json::array();
    for (int l = 0; l < r.layers; ++l)
      for (int h = 0; h < r.heads; ++h) {
        nlohmann::ordered_json mean = nlohmann::ordered_json::array(), most = nlohmann::ordered_json::array();
        for (int b = 0; b < r.buckets(); ++b) {
          nlohmann::ordered_json m1 = nlohmann::ordered_json::array(), m2 = nlohmann::ordered_json::array();
          for (int o = -max_offset; o <= max_offset; ++o) {
            const double a = r.mean(l, h, b, o), c = r.most(l, h, b, o);
            m1.push_back(std::isnan(a) ? nlohmann::ordered_json() : nlohmann::ordered_json(a));
            m2.push_back(std::isnan(c) ? nlohmann::ordered_json() : nlohmann::ordered_json(c));
          }
          mean.push_back(m1), most.push_back(m2);
        }
        j["heads"].push_back({{"layer", l}, {"head", h}, {"mean", mean}, {"most", most}});
      }
    std::printf("%s\n", j.dump(2).c_str());
  }

  std::string picture;
  if (!png.empty()) {
    teach::Heatmap hm;
    hm.rows = r.layers * r.heads * r.buckets(), hm.cols = r.offsets(), hm.vmin = vmin, hm.vmax = vmax;
    hm.value_name = "mean attention weight";
    for (int l = 0; l < r.layers; ++l)
      for (int h = 0; h < r.heads; ++h)
        for (int b = 0; b < r.buckets(); ++b) {
          hm.row_labels.push_back("L" + std::to_string(l) + " H" + std::to_string(h) + " " + bucket_name(r, b));
          for (int o = -max_offset; o <= max_offset; ++o) hm.values.push_back(r.mean(l, h, b, o));
        }
    for (int o = -max_offset; o <= max_offset; ++o) hm.col_labels.push_back(offset_name(o));
    teach::choose_cells(hm.rows, hm.cols, false, &hm.cell_w, &hm.cell_h, 480);
    hm.show_values = hm.cell_w >= 40 && hm.cell_h >= 24;
    const std::string model_name = args.count("model") ? args["model"].as<std::string>() : "the default model";
    const teach::Figure f{"Mean attention weight by offset j - i, " + model_name + ", " + std::to_string(r.texts) +
                              " texts" + (masked.empty() ? "" : ", masked: " + masked_heads_text(masked)),
                          "offset j - i (key minus query; -1 = the piece before)", "L layer, H head, query positions"};
    const auto drawn = teach::draw(png, f, hm);
    picture = "\n" + teach::describe(png, f, hm, drawn, "each head's rows, one per bucket of query positions",
                                     "offsets " + offset_name(-max_offset) + " .. " + offset_name(max_offset));
  }
  if (json) return 0;

  const std::string model_name = args.count("model") ? dir : "the default model";
  std::string left_out;
  if (shorter > 0)
    left_out += "; " + count(shorter, "line", "lines") + " left out: empty" +
                (min_pieces > 0 ? " or shorter than " + std::to_string(min_pieces) + " pieces" : "");
  if (longer > 0) left_out += "; " + count(longer, "line", "lines") + " left out: longer than the model runs";
  std::printf("attention by distance, %s: %s of %s (%s read%s)%s%s%s\n", model_name.c_str(),
              count(r.texts, "text", "texts").c_str(), input.c_str(), count(read, "line", "lines").c_str(),
              left_out.c_str(), cut > 0 ? (", each cut to its first " + std::to_string(cut) + " pieces").c_str() : "",
              positions ? "" : ", without positions",
              masked.empty() ? "" : (", masked: " + masked_heads_text(masked)).c_str());
  if (split > 0)
    std::printf("query positions %s are inside the training length of %d, %s past it\n", bucket_name(r, 0).c_str(),
                split, bucket_name(r, 1).c_str());
  std::printf(
      "\nmean weight on the key at offset j - i (key minus query; -1 = the piece before), over the rows "
      "that have that key\n");
  print_by_distance(r, &HeadsByDistance::mean, 1.0, 3);
  std::printf("\n%% of rows whose largest weight is on that key\n");
  print_by_distance(r, &HeadsByDistance::most, 100.0, 1);
  std::printf("\nrows (query pieces) with a key at each offset\n  %5s %4s %9s", "", "", "positions");
  for (int o = -max_offset; o <= max_offset; ++o) std::printf(" %7s", offset_name(o).c_str());
  std::printf("\n");
  for (int b = 0; b < r.buckets(); ++b) {
    std::printf("  %5s %4s %9s", "", "", bucket_name(r, b).c_str());
    for (int o = -max_offset; o <= max_offset; ++o) std::printf(" %7llu", (unsigned long long)r.n(b, o));
    std::printf("\n");
  }
  std::printf("%s", picture.c_str());
  return 0;
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
      "position.position (what positions add to q and k at this layer), with their mean per distance")(
      "by-distance",
      "over the lines of --input FILE: every head's mean weight by offset j - i, for query positions inside and "
      "past the training length")("input", "with --by-distance: a text file, one text per line (- for stdin)",
                                  cxxopts::value<std::string>())("max-offset", "with --by-distance: offsets -N .. N",
                                                                 cxxopts::value<int>()->default_value("4"))(
      "split",
      "with --by-distance: the first query position of the second bucket (default: the model's training length, "
      "from its training.json; 0: one bucket)",
      cxxopts::value<int>())("min-pieces", "with --by-distance: leave out lines of fewer pieces",
                             cxxopts::value<int>()->default_value("0"))(
      "cut", "with --by-distance: cut each text to its first N pieces (after --min-pieces chose it; 0: whole)",
      cxxopts::value<int>()->default_value("0"))(
      "first", "with --by-distance: average over the first N lines kept (0: all)",
      cxxopts::value<int>()->default_value("0"))("json", "with --by-distance: print the report as JSON");
  add_scale_options(o);
  add_mask_head_option(o);
  cxxopts::ParseResult args;
  if (!parse(o, argc, argv, args)) return 0;
  if (args.count("by-distance")) return by_distance(args);
  for (const char* only : {"input", "split", "json"})
    if (args.count(only)) throw UsageError(std::string("--") + only + " goes with --by-distance");
  const std::string text = the_text(args, "attention");
  if (args.count("png")) teach::picture_format(args["png"].as<std::string>());
  double vmin = 0, vmax = 1;  // every picture on the same scale, so two of them compare at a glance
  scale(args, &vmin, &vmax);
  Pipeline pipeline = load_pipeline(args);
  const std::vector<HeadIndex> masked = pipeline.masked_heads();
  const Config& c = pipeline.config();
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
  std::printf("attention weights, layer %d, head %d%s%s: A = softmax(q k^T / sqrt(dh)), (S, S) = (%d, %d)\n", layer,
              head, options.positions ? "" : " (no positional encoding)",
              masked.empty() ? "" : (", masked: " + masked_heads_text(masked)).c_str(), S, S);
  std::printf("row = query token, column = key token; each row sums to 1\n");
  print_attention(A.data(), S, S, tok.pieces);
  if (args.count("parts")) print_parts(pipeline, tok, layer, head);

  std::printf("%s", picture.c_str());
  return 0;
}

}  // namespace ordo::cli
