// ordo score: each text's pseudo-log-likelihood under the masked-language-model head.
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>

#include <ordo/errors.h>
#include <ordo/ordo.h>

#include "tools/cli/cli.h"
#include "tools/cli/results_json.h"

namespace ordo::cli {

int cmd_score(int argc, char** argv) {
  cxxopts::Options o("ordo score",
                     "How natural the model finds each text: its pseudo-log-likelihood (PLL), the sum over its "
                     "pieces of log p(piece | the text with that piece replaced by <mask>). The copies of a text, one "
                     "per masked piece, run as one batch. Higher (closer to 0) is more natural; compare texts of "
                     "the same pieces, e.g. two word orders. A text of S pieces costs S passes of S pieces, so "
                     "the time grows with S^3: texts of more than 512 pieces (about a second; 1,000 take about "
                     "7 s) are refused unless --max-tokens raises the limit.");
  add_model_options(o);
  add_input_format_option(o);
  o.add_options()("input", "read texts from FILE, one per line (- for stdin)", cxxopts::value<std::string>())(
      "no-pe",
      "skip the positional encoding: the model then sees no order, and every order of the same pieces "
      "scores the same")("json", "one JSON object per text, in input order: text, pieces, ids, pll, log_probs")(
      "max-tokens", "longest text scored, in pieces (the cost grows with its cube)",
      cxxopts::value<int>()->default_value(std::to_string(kScoreMaxPieces)));
  add_mask_head_option(o);
  cxxopts::ParseResult args;
  if (!parse_with_texts(o, argc, argv, args)) return 0;
  const bool positions = !args.count("no-pe");
  const int max_pieces = int_option(args, "max-tokens", 1, kMaxCount);
  set_num_threads(threads_option(args));
  Pipeline pipeline = load_pipeline(args);
  pipeline.require_head();

  // Texts are read, scored and printed one at a time (each is one batch of its masked copies), so
  // input of any length runs in bounded memory; a bad line stops the run after the lines before it.
  const size_t max_bytes = max_text_bytes(pipeline.max_tokens());
  TextSource source(args, max_bytes);
  const bool json = args.count("json"), progress = ::isatty(STDERR_FILENO);
  size_t scored = 0;
  // A PLL ranks orders of the same pieces: whether every text has the first one's pieces (in any order).
  std::vector<int32_t> first_pieces;
  bool same_pieces = true;
  LineReader::Line in;
  for (;;) {
    // What has been printed goes out before waiting for the next text (a pipe: a line out per line in).
    if (source.would_wait()) std::cout.flush(), std::fflush(stdout);
    if (!source.next_text(&in)) break;
    Tokenization t = pipeline.tokenize(in.text, in.where);
    pipeline.check_scorable(t, in.where, max_pieces, "--max-tokens ");
    // A long text takes a while (S passes of S pieces): a terminal is told what is being scored.
    const bool show = progress && t.ids.size() >= 200;
    if (show)
      std::cerr << "scoring " << one_line(in.where) << ": " << t.ids.size() << " pieces, " << t.ids.size()
                << " passes of " << t.ids.size() << " pieces (the time grows with the cube of the length) ..."
                << std::flush;
    Scored s;
    try {
      s = std::move(pipeline.score({std::move(t)}, positions)[0]);
    } catch (const NonFiniteActivations& e) {  // named by its line, not as a sequence of the batch
      if (show) std::cerr << "\n";
      throw InputError(e.file, in.where + ": " + e.message);
    }
    if (show) std::cerr << "\r\x1b[K" << std::flush;
    std::vector<int32_t> pieces = s.tokens.ids;
    std::sort(pieces.begin(), pieces.end());
    if (scored == 0)
      first_pieces = std::move(pieces);
    else if (pieces != first_pieces)
      same_pieces = false;
    ++scored;
    if (json) {
      std::cout << score_json(in.text, s).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << std::endl;
      continue;
    }
    std::printf("%12.4f  %s\n", s.pll, in.text.c_str());
    std::string line = "             ";
    for (size_t t = 0; t < s.log_probs.size(); ++t) {
      char buf[32];
      std::snprintf(buf, sizeof buf, " %.2f", s.log_probs[t]);
      line += " " + s.tokens.pieces[t] + buf;
    }
    if (!s.log_probs.empty()) std::printf("%s\n", line.c_str());
  }
  if (!json && scored > 0)
    std::printf("(PLL: natural log, summed over the pieces; higher is more natural%s)\n",
                positions ? "" : "; without positions, so any order of the same pieces scores the same");
  // A PLL is a sum over the text's own pieces: a shorter text (the empty one scores 0) or other
  // words are not "more natural" for scoring higher.
  if (!json && scored > 1 && !same_pieces)
    std::printf(
        "(these texts are not all made of the same pieces, so their PLLs do not say which is more "
        "natural: a PLL compares orders of the same pieces)\n");
  return 0;
}

}  // namespace ordo::cli
