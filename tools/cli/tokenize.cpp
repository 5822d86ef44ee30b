// ordo tokenize: each text's pieces, their ids and the bytes of the text each one came from.
#include <climits>
#include <iostream>
#include <nlohmann/json.hpp>

#include <ordo/errors.h>
#include <ordo/ordo.h>

#include "tools/cli/cli.h"
#include "tools/cli/results_json.h"

namespace ordo::cli {

int cmd_tokenize(int argc, char** argv) {
  cxxopts::Options o(
      "ordo tokenize",
      "Each text as the model's tokenizer splits it: its pieces, their ids, and for each piece the bytes "
      "[begin, end) of the text it came from (a piece owns the spaces before it; the \xE2\x96\x81 sentencepiece "
      "puts before the first word, BOS and EOS own no byte, and a character spelt by byte fallback belongs to its "
      "last byte piece). Pieces the vocabulary cannot spell are the unknown piece <unk>, counted when there are "
      "any. Texts come from the arguments, else one per line from --input FILE or stdin, in input order; a bad "
      "line stops the command after everything before it is printed (exit 2).");
  o.add_options()("model", "model directory (default: the built-in model)", cxxopts::value<std::string>())(
      "input", "read texts from FILE, one per line (- for stdin)", cxxopts::value<std::string>())(
      "json", "one JSON object per text, in input order: text, pieces, ids, offsets ([begin, end] per piece), unknown");
  add_input_format_option(o);
  cxxopts::ParseResult args;
  if (!parse_with_texts(o, argc, argv, args)) return 0;
  const Pipeline pipeline(model_dir(args));
  const bool json = args.count("json");

  const size_t max_bytes = max_text_bytes(INT_MAX);  // tokenizing alone: bounded by memory only
  TextSource source(args, max_bytes);
  LineReader::Line in;
  std::vector<Span> spans;
  for (;;) {
    // What has been printed goes out before waiting for the next text (a pipe: a line out per line in).
    if (source.would_wait()) std::cout.flush(), std::fflush(stdout);
    if (!source.next_text(&in)) break;
    const Tokenization t = pipeline.tokenize(in.text, in.where, &spans);
    const int unknown = pipeline.unknown_pieces(t);
    if (json) {
      std::cout
          << tokenize_json(in.text, t, spans, unknown).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace)
          << "\n";
      continue;
    }
    std::string out = "\"" + in.text + "\"\n  " + count(long(t.ids.size()), "piece", "pieces");
    if (unknown > 0) out += " (" + count(unknown, "unknown piece", "unknown pieces") + ")";
    out += t.ids.empty() ? "\n" : ":\n";
    for (size_t i = 0; i < t.ids.size(); ++i) {
      const std::string bytes = std::to_string(spans[i].begin) + ".." + std::to_string(spans[i].end);
      out += "  " + pad_right(std::to_string(i), 4) + pad_right(t.pieces[i], 16) + " " +
             pad_right(std::to_string(t.ids[i]), 7) + pad_right(bytes, 12) + "\"" +
             one_line(in.text.substr(spans[i].begin, spans[i].end - spans[i].begin)) + "\"\n";
    }
    std::cout << out;
  }
  return 0;
}

}  // namespace ordo::cli
