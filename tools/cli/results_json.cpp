// ordo command line: the JSON of tokenize, fill, score and trace (view's is in view.cpp, compare's
// in compare.cpp), shared with the server.
#include "tools/cli/results_json.h"

#include <ordo/engine/head.h>
#include <ordo/engine/reference.h>

#include "tools/cli/json_out.h"

namespace ordo::cli {

using ojson = nlohmann::ordered_json;

ojson tokenize_json(const std::string& text, const Tokenization& t, const std::vector<Span>& spans, int unknown) {
  ojson offsets = ojson::array();
  for (const Span& s : spans) offsets.push_back({s.begin, s.end});
  return {{"text", text}, {"pieces", t.pieces}, {"ids", t.ids}, {"offsets", offsets}, {"unknown", unknown}};
}

ojson fill_json(const std::string& text, const Filled& f, bool logits) {
  ojson masks = ojson::array();
  for (const Filled::Mask& m : f.masks) {
    ojson guesses = ojson::array();
    for (const Guess& g : m.top) guesses.push_back({{"piece", g.piece}, {"id", g.id}, {"prob", g.prob}});
    masks.push_back({{"position", m.position}, {"top", guesses}});
    if (logits) masks.back()["logits"] = json_floats(m.logits.data(), m.logits.size());
  }
  return {{"text", text}, {"pieces", f.tokens.pieces}, {"ids", f.tokens.ids}, {"masks", masks}};
}

ojson score_json(const std::string& text, const Scored& s) {
  return {
      {"text", text}, {"pieces", s.tokens.pieces}, {"ids", s.tokens.ids}, {"pll", s.pll}, {"log_probs", s.log_probs}};
}

namespace {

// One head's inside (q, k, v, the scores, A v): kept for the head the request names.
bool inside_stage(StageKind k) {
  return k == StageKind::HeadQuery || k == StageKind::HeadKey || k == StageKind::HeadValue ||
         k == StageKind::AttentionScores || k == StageKind::AlibiBias || k == StageKind::ScaledScores ||
         k == StageKind::HeadOutput;
}

ojson rows_json(const float* data, int rows, int cols, int stride) {
  ojson out = ojson::array();
  for (int t = 0; t < rows; ++t) out.push_back(json_floats<ojson>(data + size_t(t) * stride, size_t(cols)));
  return out;
}

}  // namespace

std::vector<float> observed_hidden(Pipeline& pipeline, const std::vector<int32_t>& ids, const EncodeOptions& options,
                                   bool reference) {
  const Config& c = pipeline.model().config();
  if (reference) {
    std::vector<float> rows;
    const reference::Watch watch(
        [&](StageKind kind, int layer, int head, const double* data, int n, int cols, int stride) {
          rows.resize(size_t(n) * cols);
          for (int t = 0; t < n; ++t)
            for (int j = 0; j < cols; ++j) rows[size_t(t) * cols + j] = float(data[size_t(t) * stride + j]);
          const StageText& st = stage_text(kind, c, pipeline.sees_order(options.positions));
          options.observe({kind, st.name, st.equation, layer, head, rows.data(), n, cols, cols});
        });
    const std::vector<double> h = reference::forward(pipeline.model(), ids, options.positions);
    return std::vector<float>(h.begin(), h.end());
  }
  const Hidden h = pipeline.encoder().forward({ids}, options);
  return std::vector<float>(h.row(0, 0), h.row(0, 0) + ids.size() * size_t(c.d_model));
}

ojson trace_json(Pipeline& pipeline, const TraceRequest& r, const Tokenization& tok) {
  const Config& c = pipeline.model().config();
  const int d = c.d_model, S = int(tok.ids.size());
  // Positions the model has but the request leaves out: their stage keeps its number, marked
  // skipped, so two traces line up stage by stage.
  const bool skipped_positions = !r.positions && added_to_input(c.positional_encoding);
  int step = 1;
  ojson stages = ojson::array();
  stages.push_back({{"stage", step}, {"name", "pieces and ids"}, {"shape", {S}}});  // top-level pieces, ids
  EncodeOptions options;
  options.positions = r.positions;
  options.observe = [&](const Stage& s) {
    if (inside_stage(s.kind) && (s.layer != r.inside_layer || s.head != r.inside_head)) return;
    if (s.kind == StageKind::Input && skipped_positions)
      stages.push_back({{"stage", ++step}, {"name", "positions"}, {"skipped", true}});
    stages.push_back({{"stage", ++step},
                      {"name", s.name},
                      {"equation", s.equation},
                      {"layer", s.layer >= 0 ? ojson(s.layer) : ojson(nullptr)},
                      {"head", s.head >= 0 ? ojson(s.head) : ojson(nullptr)},
                      {"shape", {s.rows, s.cols}},
                      {"values", rows_json(s.data, s.rows, s.cols, s.stride)}});
  };
  const std::vector<float> hidden = observed_hidden(pipeline, tok.ids, options, r.reference);  // (S, d)
  const std::vector<float> pooled = pool(hidden.data(), S, d, Pooling::Mean);
  ojson j = {{"text", r.text},
             {"model", r.model_name},
             {"encoder", r.reference ? "reference" : "fast"},
             {"positions", r.positions && c.positional_encoding != PositionalEncoding::None},
             {"pieces", tok.pieces},
             {"ids", tok.ids},
             {"stages", std::move(stages)},
             {"hidden", rows_json(hidden.data(), S, d, d)},
             {"pooled", json_floats<ojson>(pooled.data(), pooled.size())}};
  // The masked-LM head on the final rows, for a model that has one: each piece's top guesses.
  if (pipeline.has_head() && r.top > 0) {
    const int V = c.vocab_size;
    std::vector<float> logits(size_t(S) * V);
    mlm_logits(logits.data(), hidden.data(), S, pipeline.model());
    ojson rows = ojson::array();
    for (int t = 0; t < S; ++t) {
      ojson row = ojson::array();
      for (const auto& [id, p] : top_k(logits.data() + size_t(t) * V, V, r.top))
        row.push_back({{"piece", pipeline.tokenizer().piece(id)}, {"id", id}, {"prob", p}});
      rows.push_back(std::move(row));
    }
    j["mlm_top"] = std::move(rows);
  }
  return j;
}

}  // namespace ordo::cli
