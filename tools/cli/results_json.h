// ordo command line: the JSON of each command's --json output, built in one place so that the
// command line and the server (tools/serve/) answer with the same shapes.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
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

// One text's final hidden states (S, d), every stage handed to options.observe on the way: by the fast
// encoder, or by the plain double-precision one (reference), whose stages reach the observer as floats.
std::vector<float> observed_hidden(Pipeline& pipeline, const std::vector<int32_t>& ids, const EncodeOptions& options,
                                   bool reference);

// The data of `ordo view`'s page ("ordo-view/1", described at the top of tools/teach/view/view.js)
// for one or two texts already tokenized (with <mask> markers where the model has a head).
nlohmann::json view_json(Pipeline& pipeline, const std::vector<std::string>& texts,
                         const std::vector<Tokenization>& tokens, const std::string& model_name);
// The tokens of one text as `ordo view` reads it: <mask> marks a piece to fill when the model has a
// head. Throws InputError(where) for a text with no pieces or more than the page shows.
Tokenization view_tokens(Pipeline& pipeline, const std::string& text, const std::string& where);

}  // namespace ordo::cli
