// ordo command line: the JSON of tokenize, fill, score and trace (view's is in view.cpp, compare's
// in compare.cpp), shared with the server.
#include "tools/cli/results_json.h"

#include <algorithm>
#include <cmath>

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

void HeadInsides::observe(const Stage& s) {
  auto copy = [&](Matrix* m, int col0 = 0, int cols = -1) {
    m->rows = s.rows, m->cols = cols < 0 ? s.cols : cols;
    m->v.resize(size_t(m->rows) * m->cols);
    for (int r = 0; r < m->rows; ++r)
      std::copy_n(s.data + size_t(r) * s.stride + col0, m->cols, m->v.begin() + size_t(r) * m->cols);
  };
  if (s.kind == StageKind::Qkv) copy(&qkv_[s.layer]);
  if (s.kind == StageKind::RotatedQk) turned_[s.layer] = s.equation;
  if (s.head < 0 || !wanted_(s.layer, s.head)) return;
  Inside& in = heads_[{s.layer, s.head}];
  // Where each of a head's stages goes, and its equation where the report prints one
  struct Slot {
    StageKind kind;
    Matrix Inside::*matrix;
    std::string Inside::*equation;
  };
  static const Slot kSlots[] = {
      {StageKind::HeadQuery, &Inside::q, nullptr},
      {StageKind::HeadKey, &Inside::k, nullptr},
      {StageKind::HeadValue, &Inside::v, &Inside::v_equation},
      {StageKind::HeadOutput, &Inside::output, &Inside::output_equation},
      {StageKind::AttentionScores, &Inside::unbiased, nullptr},
      {StageKind::AlibiBias, &Inside::bias, &Inside::bias_equation},
      {StageKind::ScaledScores, &Inside::scaled, &Inside::scaled_equation},
      {StageKind::AttentionWeights, &Inside::weights, &Inside::weights_equation},
  };
  for (const Slot& slot : kSlots)
    if (slot.kind == s.kind) {
      copy(&(in.*slot.matrix));
      if (slot.equation) in.*slot.equation = s.equation;
    }
  // s = q·kᵀ; times 1/√dh as the engine did next (its scaled scores say whether: a T5 encoder's are not
  // scaled, rows 3 and 4 of kStageTable), before any bias
  if (s.kind == StageKind::ScaledScores &&
      std::none_of(std::begin(kStageTable), std::end(kStageTable), [&](const StageText& t) {
        return t.kind == StageKind::ScaledScores && t.equation == s.equation && t.variant >= 3;
      }))
    for (float& v : in.unbiased.v) v *= 1.0f / std::sqrt(static_cast<float>(in.q.cols));
  if (s.kind == StageKind::HeadQuery && turned_.count(s.layer)) {  // the same columns of q | k | v, before rope
    const Matrix& qkv = qkv_[s.layer];
    const int d = qkv.cols / 3, dh = s.cols, first = s.head * dh;
    in.rotation = turned_[s.layer];
    for (auto [m, col] : {std::pair{&in.q_before, first}, std::pair{&in.k_before, d + first}}) {
      m->rows = qkv.rows, m->cols = dh;
      m->v.resize(size_t(qkv.rows) * dh);
      for (int r = 0; r < qkv.rows; ++r)
        std::copy_n(qkv.v.begin() + size_t(r) * qkv.cols + col, dh, m->v.begin() + size_t(r) * dh);
    }
  }
}

namespace {

// A matrix's rows as JSON, rounded to `decimals` (-1: as short as their float).
template <class Matrix>
ojson matrix_rows(const Matrix& m, int decimals) {
  const double unit = decimals >= 0 ? std::pow(10.0, decimals) : 0;
  ojson out = ojson::array();
  for (int r = 0; r < m.rows; ++r) {
    const float* row = m.v.data() + size_t(r) * m.cols;
    if (decimals < 0) {
      out.push_back(json_floats<ojson>(row, size_t(m.cols)));
      continue;
    }
    ojson a = ojson::array();
    for (int c = 0; c < m.cols; ++c) a.push_back(std::round(double(row[c]) * unit) / unit);
    out.push_back(std::move(a));
  }
  return out;
}

}  // namespace

ojson HeadInsides::json(int layer, int head, int decimals) const {
  const auto it = heads_.find({layer, head});
  if (it == heads_.end()) return nullptr;
  const Inside& in = it->second;
  auto rows = [&](const Matrix& m) { return matrix_rows(m, decimals); };
  ojson j = {{"q", rows(in.q)},
             {"k", rows(in.k)},
             {"scaled_scores", rows(in.scaled)},
             {"weights", rows(in.weights)},
             {"v", rows(in.v)},
             {"output", rows(in.output)},
             {"equations",
              {{"scaled_scores", in.scaled_equation},
               {"weights", in.weights_equation},
               {"v", in.v_equation},
               {"output", in.output_equation}}},
             {"rope", nullptr},
             {"alibi", nullptr}};
  if (!in.rotation.empty())
    j["rope"] = {{"equation", in.rotation}, {"q_before", rows(in.q_before)}, {"k_before", rows(in.k_before)}};
  if (!in.bias_equation.empty())
    j["alibi"] = {{"equation", in.bias_equation}, {"bias", rows(in.bias)}, {"scores", rows(in.unbiased)}};
  return j;
}

ojson HeadInsides::parts_json(const Config& c, int layer, int head, const HeadInsides& with, const HeadInsides& content,
                              int decimals) {
  if (layer != 0 || c.norm_first || !added_to_input(c.positional_encoding)) return nullptr;
  const auto a = with.heads_.find({layer, head}), b = content.heads_.find({layer, head});
  if (a == with.heads_.end() || b == content.heads_.end()) return nullptr;
  const Matrix &q = a->second.q, &k = a->second.k, &qc = b->second.q, &kc = b->second.k;
  const int S = q.rows, dh = q.cols;
  const double scale = 1.0 / std::sqrt(double(dh));
  Matrix part[4];
  for (Matrix& p : part) p.rows = p.cols = S, p.v.assign(size_t(S) * S, 0.0f);
  for (int i = 0; i < S; ++i)
    for (int j = 0; j < S; ++j) {
      double sum[4] = {0, 0, 0, 0};
      for (int e = 0; e < dh; ++e) {
        const double x = qc.v[size_t(i) * dh + e], xp = q.v[size_t(i) * dh + e] - x;
        const double y = kc.v[size_t(j) * dh + e], yp = k.v[size_t(j) * dh + e] - y;
        sum[0] += x * y, sum[1] += x * yp, sum[2] += xp * y, sum[3] += xp * yp;
      }
      for (int n = 0; n < 4; ++n) part[n].v[size_t(i) * S + j] = float(sum[n] * scale);
    }
  return {{"content_content", matrix_rows(part[0], decimals)},
          {"content_position", matrix_rows(part[1], decimals)},
          {"position_content", matrix_rows(part[2], decimals)},
          {"position_position", matrix_rows(part[3], decimals)}};
}

ojson trace_json(Pipeline& pipeline, const TraceRequest& r, const Tokenization& tok) {
  const Config& c = pipeline.config();
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
  const std::vector<float> hidden = pipeline.observe(tok.ids, options, r.reference);  // (S, d)
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
    const std::vector<float> logits = pipeline.head_logits(hidden.data(), S);
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
