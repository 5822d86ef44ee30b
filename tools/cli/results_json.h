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
// scores q·k/√dh before it. The equations are the stages' own text (engine/trace.h).
class HeadInsides {
 public:
  explicit HeadInsides(std::function<bool(int layer, int head)> wanted) : wanted_(std::move(wanted)) {}
  void observe(const Stage& s);
  // The head's inside as JSON, its numbers rounded to `decimals` (-1: as short as their float);
  // null when the pass did not reach it:
  //   { q, k, scaled_scores, weights, equations: { scaled_scores, weights },
  //     rope:  null | { equation, q_before, k_before },   q and k before the rotation
  //     alibi: null | { equation, bias, scores } }         b_ij, and q·k/√dh before it
  nlohmann::ordered_json json(int layer, int head, int decimals = -1) const;

 private:
  struct Matrix {  // (rows, cols), packed
    int rows = 0, cols = 0;
    std::vector<float> v;
  };
  struct Inside {
    Matrix q, k, q_before, k_before, unbiased, bias, scaled, weights;
    std::string rotation, bias_equation, scaled_equation, weights_equation;
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
