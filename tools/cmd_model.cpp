// ordo init, ordo info.
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>

#include "engine/errors.h"
#include "engine/init.h"
#include "engine/ops.h"
#include "tools/cli.h"
#include "tools/ordo.h"

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
    const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGE_SIZE);
    const uint64_t memory = pages > 0 && page > 0 ? uint64_t(pages) * uint64_t(page) : uint64_t(8) << 30;
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
    std::ofstream copy(dst + ".partial", std::ios::binary | std::ios::trunc);
    copy << in.rdbuf();
    if (!copy.flush() || std::rename((dst + ".partial").c_str(), dst.c_str()) != 0)
      throw InputError(dst, "cannot write");
  }
  std::printf("wrote %s: d_model %d, %d heads, d_ff %d, %d layers, vocab %d, seed %llu\n", out.c_str(), c.d_model,
              c.n_heads, c.d_ff, c.n_layers, c.vocab_size, (unsigned long long)args["seed"].as<uint64_t>());
  return 0;
}

int cmd_info(int argc, char** argv) {
  cxxopts::Options o("ordo info", "Describe a model: its config, parameter count, bytes and tokenizer.");
  o.add_options()("model", "model directory (default: the built-in model)", cxxopts::value<std::string>())(
      "check", "also scan every weight for NaN and infinity");
  cxxopts::ParseResult args;
  if (!parse(o, argc, argv, args)) return 0;
  Pipeline pipeline(model_dir(args));
  const Model& m = pipeline.model();
  const Config& c = m.config();
  struct stat st {};
  ::stat(m.file().path().c_str(), &st);
  std::printf("model       %s\n", m.dir.c_str());
  std::printf("sizes       d_model %d, n_heads %d (head size %d), d_ff %d, n_layers %d, vocab_size %d\n", c.d_model,
              c.n_heads, c.head_dim(), c.d_ff, c.n_layers, c.vocab_size);
  std::printf("layers      %s, %s%s, layer_norm_eps %g\n", c.norm_first ? "pre-LN" : "post-LN", to_string(c.activation),
              c.final_norm ? ", final LayerNorm" : "", c.layer_norm_eps);
  std::printf("positions   %s", to_string(c.positional_encoding));
  if (c.positional_encoding == PositionalEncoding::Sinusoidal)
    std::printf(", %s layout, base %g", to_string(c.pe_layout), c.pe_base);
  if (c.positional_encoding == PositionalEncoding::Learned) std::printf(", max_positions %d", c.max_positions);
  std::printf("; embeddings %s sqrt(d)\n", c.scale_embedding ? "scaled by" : "not scaled by");
  std::printf("parameters  %llu (%.2f MB as float32); file %lld bytes\n", (unsigned long long)m.parameter_count(),
              m.parameter_count() * 4.0 / 1e6, (long long)st.st_size);
  std::printf("tokenizer   %s: %d pieces%s%s\n", pipeline.tokenizer().path().c_str(), pipeline.tokenizer().size(),
              c.add_bos ? ", adds BOS" : "", c.add_eos ? ", adds EOS" : "");
  if (args.count("check")) {
    const auto bad = m.non_finite_tensors();
    if (!bad.empty())
      throw InputError(m.file().path(),
                       "tensor " + bad.front() + " holds NaN or infinity" +
                           (bad.size() > 1 ? " (and " + std::to_string(bad.size() - 1) + " more tensors)" : ""));
    std::printf("check       every weight is finite\n");
  }
  return 0;
}

}  // namespace ordo::cli
