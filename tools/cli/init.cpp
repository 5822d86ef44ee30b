// ordo init: a model with deterministic random weights from a config and a seed.
#include "engine/init.h"

#include <cstdio>
#include <fstream>

#include <ordo/errors.h>
#include <ordo/ordo.h>

#include "common/atomic_file.h"
#include "common/memory.h"
#include "tools/cli/cli.h"

namespace ordo::cli {

int cmd_init(int argc, char** argv) {
  cxxopts::Options o("ordo init",
                     "Write a model with deterministic random weights: the same config and seed give "
                     "the same bytes on any machine.");
  o.add_options()("config", "config.json to read", cxxopts::value<std::string>())(
      "seed", "random seed", cxxopts::value<uint64_t>()->default_value("0"))("out", "model directory to write",
                                                                             cxxopts::value<std::string>())(
      "tokenizer", "sentencepiece model to copy into the directory", cxxopts::value<std::string>());
  cxxopts::ParseResult args;
  if (!parse(o, argc, argv, args)) return 0;
  if (!args.count("config") || !args.count("out")) throw UsageError("needs --config FILE and --out DIR");
  const Config c = load_config(args["config"].as<std::string>());
  const std::string out = args["out"].as<std::string>();
  {  // the weights are made in memory before they are written
    const uint64_t bytes = expected_parameters(c, args["config"].as<std::string>()) * sizeof(float);
    const uint64_t memory = machine_memory_bytes();
    if (bytes > memory / 4)
      throw InputError(args["config"].as<std::string>(), "asks for " + std::to_string(bytes >> 20) +
                                                             " MiB of weights, more than a quarter of this machine's " +
                                                             std::to_string(memory >> 20) + " MiB");
  }
  if (args.count("tokenizer")) {
    const std::string src = args["tokenizer"].as<std::string>();
    const Tokenizer tok = Tokenizer::load(src);  // checks it before anything is written
    if (tok.size() > c.vocab_size)
      throw InputError(
          src, "has " + std::to_string(tok.size()) + " pieces but vocab_size is " + std::to_string(c.vocab_size));
  }
  write_random_model(c, args["seed"].as<uint64_t>(), out);
  if (args.count("tokenizer")) {
    const std::string src = args["tokenizer"].as<std::string>(), dst = out + "/" + c.tokenizer;
    std::ifstream in(src, std::ios::binary);
    const std::string bytes((std::istreambuf_iterator<char>(in)), {});
    if (!in.good() && !in.eof()) throw InputError(src, "cannot read");
    write_atomically(dst, [&](std::FILE* f) { std::fwrite(bytes.data(), 1, bytes.size(), f); });
  }
  std::printf("wrote %s: d_model %d, %d heads, d_ff %d, %d layers, vocab %d, seed %llu\n", out.c_str(), c.d_model,
              c.n_heads, c.d_ff, c.n_layers, c.vocab_size, (unsigned long long)args["seed"].as<uint64_t>());
  return 0;
}

}  // namespace ordo::cli
