// ordo command line: the JSON of each command's --json output, built in one place so that the
// command line and the server (tools/serve/) answer with the same shapes.
#pragma once

#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include <ordo/ordo.h>

namespace ordo::cli {

// `ordo tokenize --json`: text, pieces, ids, offsets ([begin, end] per piece), unknown.
nlohmann::ordered_json tokenize_json(const std::string& text, const Tokenization& t, const std::vector<Span>& spans,
                                     int unknown);

// `ordo fill --json`: text, pieces, ids, masks [{position, top [{piece, id, prob}], logits?}].
nlohmann::ordered_json fill_json(const std::string& text, const Filled& f, bool logits);

// `ordo score --json`: text, pieces, ids, pll, log_probs.
nlohmann::ordered_json score_json(const std::string& text, const Scored& s);

// `ordo trace --json`: one text through the encoder, every stage with all its rows; `inside_layer`
// and `inside_head` (or -1) name the head whose q, k, v, scores and A v are kept too. The text must
// have at least one token and at most max_tokens().
struct TraceRequest {
  std::string text;
  std::string model_name = "the default model";
  bool positions = true;
  bool reference = false;  // the plain double-precision encoder of engine/reference.cpp
  int inside_layer = -1, inside_head = -1;
  int top = 3;  // masked-LM guesses per piece (models with a head)
};
nlohmann::ordered_json trace_json(Pipeline& pipeline, const TraceRequest& r, const Tokenization& tokens);

// Heads from the inside, as POST /attention answers and the page's section 2b draws them. Hand it every
// stage of one pass (EncodeOptions::observe); it keeps the heads `wanted(layer, head)` names. Every
// number is one the engine handed over, not computed again: each piece's q and k (S, dh), the scaled
// scores (the softmax's input) and their softmax (S, S); with rope, q and k also before their rotation
// (the layer's Qkv stage, before its RotatedQk stage); with alibi, the bias (its AlibiBias stage) and the
// scores q·k/√dh before it; after the softmax, each piece's value v (S, dh) and the head's output A·v
// (S, dh). The equations are the stages' own text (engine/ordo/trace.h).
class HeadInsides {
 public:
  explicit HeadInsides(std::function<bool(int layer, int head)> wanted) : wanted_(std::move(wanted)) {}
  void observe(const Stage& s);
  // The head's inside as JSON, its numbers rounded to `decimals` (-1: as short as their float);
  // null when the pass did not reach it:
  //   { q, k, scaled_scores, weights, v, output, equations: { scaled_scores, weights, v, output },
  //     rope:  null | { equation, q_before, k_before },   q and k before the rotation
  //     alibi: null | { equation, bias, scores } }         b_ij, and q·k/√dh before it
  nlohmann::ordered_json json(int layer, int head, int decimals = -1) const;
  // The head's scaled scores split by where q and k come from, with `content` the same head in the same
  // text's pass without positions (q_c, k_c; what the positions add: q_p = q − q_c, k_p = k − k_c):
  //   q·k/√dh = (q_c·k_c + q_c·k_p + q_p·k_c + q_p·k_p)/√dh, exactly, since the scores are bilinear;
  // as { content_content, content_position, position_content, position_position } (S, S) each, the
  // numbers of `ordo attention --parts`. Only where the split is the positions' own: layer 0 of a
  // post-LN model that adds them to its input, where q_c = (E[id]·√d)·W_qᵀ + b_q and q_p = PE(t)·W_qᵀ;
  // null elsewhere (later layers and pre-LN mix them before q), or when a pass did not reach the head.
  static nlohmann::ordered_json parts_json(const Config& c, int layer, int head, const HeadInsides& with,
                                           const HeadInsides& content, int decimals = -1);

 private:
  struct Matrix {  // (rows, cols), packed
    int rows = 0, cols = 0;
    std::vector<float> v;
  };
  struct Inside {
    Matrix q, k, v, q_before, k_before, unbiased, bias, scaled, weights, output;
    std::string rotation, bias_equation, scaled_equation, weights_equation, v_equation, output_equation;
  };
  std::function<bool(int, int)> wanted_;
  std::map<std::pair<int, int>, Inside> heads_;
  std::map<int, Matrix> qkv_;          // per layer: q | k | v before rope turns them (S, 3d)
  std::map<int, std::string> turned_;  // per layer that rope turned: the rotation's equation
};

// The data of `ordo view`'s page ("ordo-view/1", described at the top of tools/teach/view/view.js)
// for one or two texts already tokenized (with <mask> markers where the model has a head). `inside`:
// whether it carries text A's heads from the inside (section 2b); the live page asks POST /attention
// for the one head it shows instead, so the server leaves them out.
nlohmann::json view_json(Pipeline& pipeline, const std::vector<std::string>& texts,
                         const std::vector<Tokenization>& tokens, const std::string& model_name, bool inside = true);
// The tokens of one text as `ordo view` reads it: <mask> marks a piece to fill when the model has a
// head. Throws InputError(where) for a text with no pieces or more than the page shows.
Tokenization view_tokens(Pipeline& pipeline, const std::string& text, const std::string& where);

}  // namespace ordo::cli
