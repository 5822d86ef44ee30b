// ordo — a small transformer encoder you can read. The command line.

#include <cctype>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <string>

#include <ordo/errors.h>

#include "common/atomic_file.h"
#include "engine/kernels/cpu.h"
#include "engine/kernels/parallel.h"
#include "tools/cli/cli.h"
#ifdef ORDO_HAVE_SERVE  // ORDO_BUILD_SERVE
#include "tools/serve/serve.h"
#endif

namespace {

struct Command {
  const char* name;
  ordo::cli::CommandMain* run;
  const char* summary;
};

const Command kCommands[] = {
    {"encode", ordo::cli::cmd_encode, "texts -> vectors (pooled or per token): text, JSON lines, TSV or NumPy .npy"},
    {"tokenize", ordo::cli::cmd_tokenize, "texts -> pieces, ids and the bytes of the text each piece came from"},
    {"compare", ordo::cli::cmd_compare, "the word-order report: two texts with and without positional encoding"},
    {"pe", ordo::cli::cmd_pe, "the sinusoidal positional-encoding table"},
    {"init", ordo::cli::cmd_init, "write a random model from a config and a seed"},
    {"info", ordo::cli::cmd_info, "a model's config, parameter count and tokenizer"},
    {"trace", ordo::cli::cmd_trace, "one text through the encoder, stage by stage, with shapes and equations"},
    {"attention", ordo::cli::cmd_attention, "one head's attention weights as a token x token table (and PNG)"},
    {"fill", ordo::cli::cmd_fill, "the masked-language-model head: likely pieces for each <mask> in a text"},
    {"score", ordo::cli::cmd_score, "texts -> pseudo-log-likelihood: how natural the model finds each (word order)"},
    {"bench", ordo::cli::cmd_bench, "time the forward pass (or sgemm) against the machine's GEMM peak"},
    {"view", ordo::cli::cmd_view, "one text's attention, with and without positions, as a page for a browser"},
#ifdef ORDO_HAVE_SERVE
    {"serve", ordo::serve::cmd_serve,
     "a local HTTP server: embeddings (batched across requests), every command, the live page"},
#endif
    {"eval", ordo::cli::cmd_eval, "held-out masked accuracy, word-order preferences and accuracy by position"},
};

void usage(std::FILE* out) {
  std::fprintf(out,
               "usage: ordo <command> [options]   (ordo <command> --help for each; ordo --version)\n\ncommands:\n");
  for (const Command& c : kCommands) std::fprintf(out, "  %-9s %s\n", c.name, c.summary);
}

// Everything a command printed reached stdout, or the reason why not. A reader that went away
// (`ordo encode ... | head -1`) is not an error: SIGPIPE ends the process quietly before this.
int finish(const std::string& name, int status) {
  std::cout.flush();
  if (std::fflush(stdout) != 0 || std::ferror(stdout) || !std::cout) {
    std::cerr << "error: ordo " << name << ": cannot write to stdout"
              << (errno ? std::string(": ") + std::strerror(errno) : "") << "\n";
    return 1;
  }
  return status;
}

// A text that starts with '-' ("-5 degrees") reads as options; after `--` it is a text. The hint
// names the first such argument that is not an option of the usual shape (--name, -x).
std::string dash_hint(const std::string& name, int argc, char** argv) {
  for (int i = 2; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--") break;
    if (a.size() < 2 || a[0] != '-') continue;
    const bool option_like = (a[1] == '-' && a.size() > 2 && std::isalpha(static_cast<unsigned char>(a[2]))) ||
                             (a.size() == 2 && std::isalpha(static_cast<unsigned char>(a[1])));
    if (!option_like)
      return " (a text that starts with '-' goes after --: ordo " + name + " -- \"" + ordo::cli::one_line(a) + "\")";
  }
  return "";
}

}  // namespace

int main(int argc, char** argv) {
  ordo::start_without_openblas_workers(argv);  // under a memory limit (<ordo/ordo.h> says why)
  if (argc < 2) {
    usage(stderr);
    return 2;
  }
  const std::string name = argv[1];
  if (name == "--version" || name == "version") {
    std::printf("ordo %s\n", ordo::version());
    return finish("--version", 0);
  }
  if (name == "--help" || name == "-h" || name == "help") {
    usage(stdout);
    return finish("help", 0);
  }
  // The default action even when the parent ignored it, so a closed pipe ends output the same
  // quiet way everywhere (status 128 + SIGPIPE, as `yes | head -1` shows).
  std::signal(SIGPIPE, SIG_DFL);
  // Past a file-size limit (ulimit -f) a write fails with EFBIG and the command says so, instead
  // of SIGXFSZ ending the process (and dumping core) with the temporary file left behind.
  std::signal(SIGXFSZ, SIG_IGN);
  // SIGINT, SIGTERM and SIGHUP remove the temporary file being written before the process ends.
  ordo::remove_temporaries_on_signals();
  for (const Command& c : kCommands) {
    if (name != c.name) continue;
    try {
      ordo::isa_level();        // a bad ORDO_ISA is one line, before any work (engine/kernels/cpu.h)
      ordo::prepack_weights();  // and a bad ORDO_PREPACK
      return finish(name, c.run(argc - 1, argv + 1));
    } catch (const ordo::InputError& e) {
      std::cerr << "error: " << ordo::cli::one_line(e.what()) << "\n";
      return 2;
    } catch (const ordo::cli::UsageError& e) {
      std::cerr << "error: ordo " << name << ": " << ordo::cli::one_line(e.what()) << "\n";
      return 2;
    } catch (const cxxopts::exceptions::parsing& e) {
      std::cerr << "error: ordo " << name << ": " << ordo::cli::one_line(e.what()) << dash_hint(name, argc, argv)
                << "\n";
      return 2;
    } catch (const cxxopts::exceptions::exception& e) {
      std::cerr << "error: ordo " << name << ": " << ordo::cli::one_line(e.what()) << "\n";
      return 2;
    } catch (const ordo::ThreadStartError& e) {
      std::cerr << "error: ordo " << name << ": " << ordo::cli::one_line(e.what()) << "\n";
      return 1;
    } catch (const std::bad_alloc&) {
      std::cerr << "error: ordo " << name << ": out of memory\n";
      return 1;
    } catch (const std::exception& e) {
      std::cerr << "error: ordo " << name << ": internal failure: " << ordo::cli::one_line(e.what()) << "\n";
      return 1;
    }
  }
  std::cerr << "error: ordo: unknown command \"" << ordo::cli::one_line(name) << "\" (try ordo --help)\n";
  return 2;
}
