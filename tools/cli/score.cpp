// ordo score: each text's pseudo-log-likelihood under the masked-language-model head.
#include <ordo/errors.h>
#include <ordo/ordo.h>

#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>

#include "tools/cli/cli.h"

namespace ordo::cli {

int cmd_score(int argc, char** argv) {
  cxxopts::Options o("ordo score",
                     "How natural the model finds each text: its pseudo-log-likelihood (PLL), the sum over its "
                     "pieces of log p(piece | the text with that piece replaced by <mask>). The copies of a text, one "
                     "per masked piece, run as one batch. Higher (closer to 0) is more natural; compare texts of "
                     "the same pieces, e.g. two word orders.");
  add_model_options(o);
  o.add_options()("input", "read texts from FILE, one per line (- for stdin)", cxxopts::value<std::string>())(
      "no-pe",
      "skip the positional encoding: the model then sees no order, and every order of the same pieces "
      "scores the same")("json", "one JSON object per text, in input order: text, pieces, ids, pll, log_probs")(
      "texts", "texts", cxxopts::value<std::vector<std::string>>());
  o.parse_positional({"texts"});
  o.positional_help("[TEXT ...]");
  cxxopts::ParseResult args;
  if (!parse(o, argc, argv, args)) return 0;
  if (args.count("texts") && args.count("input")) throw UsageError("give texts as arguments or with --input, not both");
  const bool positions = !args.count("no-pe");
  set_num_threads(args["threads"].as<int>());
  Pipeline pipeline(model_dir(args));
  pipeline.require_head();

  // Every text is read and checked before any is scored: a bad line stops the run before output.
  std::vector<std::string> where;
  const std::vector<std::string> texts = read_texts(args, &where);
  std::vector<Tokenization> tokens;
  for (size_t i = 0; i < texts.size(); ++i) {
    tokens.push_back(pipeline.tokenize(texts[i], where[i]));
    check_runnable(pipeline, tokens.back(), where[i], positions);
  }

  const bool json = args.count("json");
  for (size_t i = 0; i < texts.size(); ++i) {
    const Scored s = std::move(pipeline.score({std::move(tokens[i])}, positions)[0]);
    if (json) {
      const nlohmann::ordered_json j = {{"text", texts[i]},
                                        {"pieces", s.tokens.pieces},
                                        {"ids", s.tokens.ids},
                                        {"pll", s.pll},
                                        {"log_probs", s.log_probs}};
      std::cout << j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
      continue;
    }
    std::printf("%12.4f  %s\n", s.pll, texts[i].c_str());
    std::string line = "             ";
    for (size_t t = 0; t < s.log_probs.size(); ++t) {
      char buf[32];
      std::snprintf(buf, sizeof buf, " %.2f", s.log_probs[t]);
      line += " " + s.tokens.pieces[t] + buf;
    }
    if (!s.log_probs.empty()) std::printf("%s\n", line.c_str());
  }
  if (!json && !texts.empty())
    std::printf("(PLL: natural log, summed over the pieces; higher is more natural%s)\n",
                positions ? "" : "; without positions, so any order of the same pieces scores the same");
  return 0;
}

}  // namespace ordo::cli
