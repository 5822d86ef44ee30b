// ordo fill: the masked-language-model head's top pieces for each <mask> of a text.
#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>

#include <ordo/errors.h>
#include <ordo/ordo.h>

#include "tools/cli/cli.h"
#include "tools/cli/results_json.h"

namespace ordo::cli {

int cmd_fill(int argc, char** argv) {
  cxxopts::Options o = text_command_options(
      "fill",
      "The masked-language-model head at work: for each <mask> in TEXT, the pieces the model finds "
      "most likely there, with their probabilities. Each <mask> stands for one piece.");
  o.add_options()("top", "pieces to show per <mask>", cxxopts::value<int>()->default_value("5"))(
      "json", "print one JSON object: text, pieces, ids, masks [{position, top [{piece, id, prob}]}]")(
      "logits", "with --json, each mask's raw head output too: \"logits\", one per piece of the vocabulary")(
      "threads", "threads for the matrix work (0: one per core)", cxxopts::value<int>()->default_value("0"))(
      "offset",
      "the text's first piece stands at position K (sinusoidal and learned positions move; rope and alibi see only "
      "the offsets i - j)",
      cxxopts::value<int>()->default_value("0"))(
      "words",
      "only pieces that start a word (\u2581...): whole-word guesses, each with its probability over all "
      "pieces");
  add_mask_head_option(o);
  cxxopts::ParseResult args;
  if (!parse(o, argc, argv, args)) return 0;
  const std::string text = the_text(args, "fill");
  const int top = int_option(args, "top", 1, kMaxCount);
  const bool positions = !args.count("no-pe");
  set_num_threads(threads_option(args));
  Pipeline pipeline = load_pipeline(args);
  pipeline.require_head();
  const int k = std::min(top, pipeline.config().vocab_size);

  const std::string where = "argument 1";
  pipeline.check_runnable(pipeline.tokenize_masked(text, where), where);
  const bool words = args.count("words") > 0;
  const int offset = int_option(args, "offset", 0, 1000000);
  const Filled f = [&] {
    try {
      return pipeline.fill(text, k, positions, where, words, offset);
    } catch (const NonFiniteActivations& e) {  // named as the text, not as a sequence of the batch
      throw InputError(e.file, where + ": " + e.message);
    }
  }();

  if (args.count("json")) {
    std::cout
        << fill_json(text, f, args.count("logits") > 0).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace)
        << "\n";
    return 0;
  }

  std::cout << "pieces:";
  for (const std::string& p : f.tokens.pieces) std::cout << " " << p;
  std::cout << "\n";
  for (size_t i = 0; i < f.masks.size(); ++i) {
    const Filled::Mask& m = f.masks[i];
    std::printf("\n<mask> %zu of %zu (piece %d)%s%s\n", i + 1, f.masks.size(), m.position,
                positions ? "" : ", without positions", words ? ", word-start pieces only" : "");
    for (size_t r = 0; r < m.top.size(); ++r)
      std::printf("  %2zu  %s %6.2f%%\n", r + 1, pad_right(m.top[r].piece, 16).c_str(), 100.0 * m.top[r].prob);
  }
  return 0;
}

}  // namespace ordo::cli
