// ordo init: a model with deterministic random weights from a config and a seed.
#include "engine/init.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <ordo/errors.h>
#include <ordo/ordo.h>

#include "common/atomic_file.h"
#include "common/memory.h"
#include "common/regular_file.h"
#include "engine/model.h"
#include "tools/cli/cli.h"

namespace ordo::cli {

int cmd_init(int argc, char** argv) {
  cxxopts::Options o("ordo init",
                     "Write a model with deterministic random weights: the same config and seed give "
                     "the same bytes on any machine.");
  o.add_options()("config", "config.json to read", cxxopts::value<std::string>())(
      "seed", "random seed", cxxopts::value<uint64_t>()->default_value("0"))("out", "model directory to write",
                                                                             cxxopts::value<std::string>())(
      "tokenizer", "sentencepiece model to copy into the directory (default: the default model's tokenizer)",
      cxxopts::value<std::string>())("no-tokenizer", "copy no tokenizer (the directory then needs one added)")(
      "force", "replace a model already in DIR");
  cxxopts::ParseResult args;
  if (!parse(o, argc, argv, args)) return 0;
  refuse_stray_arguments(args, "--config WORD or --out WORD");
  if (!args.count("config") || !args.count("out")) throw UsageError("needs --config FILE and --out DIR");
  const Config c = load_config_file_or_pipe(args["config"].as<std::string>());
  const std::string out = args["out"].as<std::string>();
  {  // the weights are made in memory before they are written
    const uint64_t bytes = expected_parameters(c, args["config"].as<std::string>()) * sizeof(float);
    const uint64_t memory = machine_memory_bytes();
    if (bytes > memory / 4)
      throw InputError(args["config"].as<std::string>(), "asks for " + std::to_string(bytes >> 20) +
                                                             " MiB of weights, more than a quarter of this machine's " +
                                                             std::to_string(memory >> 20) + " MiB");
  }
  // A model already there is kept unless --force says to replace it.
  for (const std::string name : {"config.json", "model.safetensors"}) {
    struct stat st {};
    if (!args.count("force") && ::stat((out + "/" + name).c_str(), &st) == 0)
      throw InputError(out, "already holds a model (" + name + "); add --force to replace it");
  }
  // Without a tokenizer no command can load the directory: the default model's is copied unless
  // --tokenizer names another or --no-tokenizer says none.
  if (args.count("tokenizer") && args.count("no-tokenizer")) throw UsageError("give --tokenizer or --no-tokenizer");
  std::string src;
  if (args.count("tokenizer")) {
    src = args["tokenizer"].as<std::string>();
  } else if (!args.count("no-tokenizer")) {
    const std::string dir = default_model_dir();
    if (dir.empty())
      throw UsageError("no default model to copy a tokenizer from: pass --tokenizer FILE (or --no-tokenizer)");
    src = dir + "/tokenizer.model";
  }
  if (!src.empty()) {
    const Tokenizer tok = Tokenizer::load(src);  // checks it before anything is written
    if (tok.size() > c.vocab_size)
      throw InputError(src, "has " + std::to_string(tok.size()) + " pieces but vocab_size is " +
                                std::to_string(c.vocab_size) + " (pass a smaller --tokenizer, or raise vocab_size)");
  }
  std::string tokenizer_bytes;
  if (!src.empty()) tokenizer_bytes = read_regular_file(src, uint64_t(256) << 20, "a sentencepiece model");

  // All the files or none: they are written into a fresh directory inside `out`, each whole
  // (write_atomically), and only then moved into place; a failure (a full disk, a name in `out`
  // taken by a directory) or SIGINT/SIGTERM removes them and leaves `out` as it was.
  std::vector<std::string> names = {"model.safetensors", "config.json"};
  if (!src.empty()) names.push_back(c.tokenizer);
  for (const std::string& name : names) {  // what would stop the moves, found before any is made
    struct stat st {};
    if (::lstat((out + "/" + name).c_str(), &st) == 0 && S_ISDIR(st.st_mode))
      throw InputError(out + "/" + name, "cannot write: it is a directory");
  }
  const bool created = ::mkdir(out.c_str(), 0755) == 0;
  if (!created && errno != EEXIST)
    throw InputError(out, std::string("cannot create directory: ") + std::strerror(errno));
  std::optional<TemporaryName> live_out;
  if (created) live_out.emplace(out, true);
  std::string stage = out + "/.ordo-init-XXXXXX";
  if (!::mkdtemp(stage.data())) {
    const int err = errno;
    if (created) ::rmdir(out.c_str());
    throw InputError(out, std::string("cannot write: ") + std::strerror(err));
  }
  const TemporaryName live_stage(stage, true);
  std::vector<std::unique_ptr<TemporaryName>> live_files;
  for (const std::string& name : names) {
    live_files.push_back(std::make_unique<TemporaryName>(stage + "/" + name));
    live_files.push_back(std::make_unique<TemporaryName>(stage + "/" + name + ".old"));
  }
  auto remove_stage = [&] {
    for (const std::string& name : names) {
      ::unlink((stage + "/" + name).c_str());
      ::unlink((stage + "/" + name + ".old").c_str());
    }
    ::rmdir(stage.c_str());
  };
  try {
    write_random_model(c, args["seed"].as<uint64_t>(), stage);
    if (!src.empty())
      write_atomically(stage + "/" + c.tokenizer,
                       [&](std::FILE* f) { std::fwrite(tokenizer_bytes.data(), 1, tokenizer_bytes.size(), f); });
  } catch (...) {
    remove_stage();
    if (created) ::rmdir(out.c_str());
    throw;
  }
  // The moves: a file they replace is kept (a hard link in the stage) until all are made, and put
  // back if one fails; a signal waits until they are all made or all undone.
  {
    const SignalsDeferred whole;
    std::vector<std::string> moved;
    try {
      for (const std::string& name : names) {
        const std::string target = out + "/" + name, old = stage + "/" + name + ".old";
        // A file system without hard links (errno other than ENOENT) keeps no copy: that file is
        // then replaced without a way back, as before.
        (void)::link(target.c_str(), old.c_str());
        if (std::rename((stage + "/" + name).c_str(), target.c_str()) != 0)
          throw InputError(target, std::string("cannot write: ") + std::strerror(errno));
        moved.push_back(name);
      }
    } catch (...) {
      for (auto it = moved.rbegin(); it != moved.rend(); ++it) {
        const std::string target = out + "/" + *it, old = stage + "/" + *it + ".old";
        if (std::rename(old.c_str(), target.c_str()) != 0) ::unlink(target.c_str());
      }
      remove_stage();
      if (created) ::rmdir(out.c_str());
      throw;
    }
    remove_stage();
  }
  live_out.reset();
  std::printf("wrote %s: d_model %d, %s, d_ff %d, %s, vocab %d, seed %llu\n", out.c_str(), c.d_model,
              count(c.n_heads, "head", "heads").c_str(), c.d_ff, count(c.n_layers, "layer", "layers").c_str(),
              c.vocab_size, (unsigned long long)args["seed"].as<uint64_t>());
  if (src.empty())
    std::printf("no tokenizer copied: put one at %s/%s before using the model\n", out.c_str(), c.tokenizer.c_str());
  else if (!args.count("tokenizer"))
    std::printf("tokenizer: %s, copied from the default model\n", src.c_str());
  return 0;
}

}  // namespace ordo::cli
