// ordo bench: how fast the forward pass runs, against what the machine's sgemm can do.
//
// FLOPs of one forward pass of n_layers encoder layers on B × S tokens (a multiply-add is 2 FLOPs):
//   in_proj 2·BS·d·3d + out_proj 2·BS·d² + scores and weighted values 2·2·B·S²·d + FFN 2·2·BS·d·F
#include <cblas.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <vector>

#include <ordo/engine/encoder.h>
#include <ordo/engine/model.h>
#include <ordo/errors.h>

#include "common/memory.h"
#include "engine/kernels/blas.h"
#include "engine/kernels/cpu.h"
#include "engine/kernels/gemm.h"
#include "tools/cli/cli.h"

namespace ordo::cli {

namespace {

using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

struct Timing {
  double median = 0, min = 0;
  std::vector<double> each;  // in the order they ran
};

Timing summarize(const std::vector<double>& each) {
  std::vector<double> ms = each;
  std::sort(ms.begin(), ms.end());
  const size_t n = ms.size();
  return {n % 2 ? ms[n / 2] : 0.5 * (ms[n / 2 - 1] + ms[n / 2]), ms.front(), each};
}

double forward_flops(const Config& c, double B, double S) {
  const double d = c.d_model, F = c.d_ff, T = B * S;
  return c.n_layers * (2 * T * d * 3 * d + 2 * T * d * d + 4 * B * S * S * d + 4 * T * d * F);
}

// Token ids from a fixed-seed linear congruential generator: the same batch on every run.
std::vector<std::vector<int32_t>> random_ids(int B, int S, int V) {
  uint64_t state = 20170612;
  std::vector<std::vector<int32_t>> ids(B, std::vector<int32_t>(S));
  for (auto& seq : ids)
    for (int32_t& id : seq) {
      state = state * 6364136223846793005ull + 1442695040888963407ull;
      id = int32_t((state >> 33) % uint64_t(V));
    }
  return ids;
}

// C (n, n) = A (n, n) · Bᵀ (n, n), the shape of y = x·Wᵀ; the best of `repeat` calls is the peak.
Timing time_sgemm(int n, int repeat) {
  std::vector<float> a(size_t(n) * n, 0.5f), b(size_t(n) * n, 0.25f), c(size_t(n) * n);
  auto once = [&] {
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, n, n, n, 1.0f, a.data(), n, b.data(), n, 0.0f, c.data(), n);
  };
  once();  // warm-up: thread start, page faults
  std::vector<double> ms;
  for (int r = 0; r < repeat; ++r) {
    const auto start = Clock::now();
    once();
    ms.push_back(ms_since(start));
  }
  return summarize(ms);
}

Timing time_forward(Encoder& encoder, const Config& c, int B, int S, int repeat) {
  // The ids and the forward pass's working memory, checked before either is allocated.
  const uint64_t need = uint64_t(B) * S * sizeof(int32_t) + encoder.activation_bytes(B, S);
  if (need > machine_memory_bytes() / 2)
    throw UsageError("--batch " + std::to_string(B) + " x --seq " + std::to_string(S) + " needs " +
                     std::to_string(need >> 20) + " MiB, more than half of this machine's " +
                     std::to_string(machine_memory_bytes() >> 20) + " MiB");
  const auto ids = random_ids(B, S, c.vocab_size);
  encoder.forward(ids);  // warm-up: buffers sized, weights paged in
  std::vector<double> ms;
  for (int r = 0; r < repeat; ++r) {
    const auto start = Clock::now();
    encoder.forward(ids);
    ms.push_back(ms_since(start));
  }
  return summarize(ms);
}

nlohmann::json forward_json(const Config& c, int B, int S, int threads, const Timing& t, const Encoder& e) {
  return {{"batch", B},
          {"compute_type", compute_type_name(e.compute_type())},
          {"conversion_ms", e.conversion_ms()},
          {"seq", S},
          {"threads", threads},
          {"ms_median", t.median},
          {"ms_min", t.min},
          {"tokens_per_s", double(B) * S / (t.median / 1e3)},
          {"gflops", forward_flops(c, B, S) / (t.median / 1e3) / 1e9},
          {"ms", t.each}};
}

// What in the environment changes OpenBLAS, said plainly: the kernels it picked, and the variables
// that force its kernels or its threads. A user's shell rarely sets them; a benchmark machine's may.
void print_blas_environment() {
  std::printf("OpenBLAS picked its %s kernels", openblas_get_corename());
  const char* core = std::getenv("OPENBLAS_CORETYPE");
  if (core && *core)
    std::printf(" because OPENBLAS_CORETYPE=%s is set; unset it to let OpenBLAS choose for this CPU\n", core);
  else
    std::printf(" for this CPU (OPENBLAS_CORETYPE is not set)\n");
  for (const char* var : {"OPENBLAS_NUM_THREADS", "GOTO_NUM_THREADS", "OMP_NUM_THREADS"})
    if (const char* v = std::getenv(var); v && *v)
      std::printf(
          "%s=%s is set: ordo's own threads (--threads) do the work, so it changes only bench --gemm's "
          "reference figure if anything\n",
          var, v);
  std::printf("cpu: %s\nkernels: %s", cpu_feature_names().c_str(), kernels_chosen().c_str());
}

// --processes N: the same bench in N fresh processes, one after another, each as a user runs it; the
// median of their medians and the slowest against the fastest, so that a slow mode a process can
// fall into for its life (or its first passes) shows instead of averaging away in one long process.
int run_processes(int argc, char** argv, int n, bool json) {
  std::vector<std::string> args = {"/proc/self/exe", "bench"};
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--processes") {
      ++i;
      continue;
    }
    if (a.rfind("--processes=", 0) == 0 || a == "--json") continue;
    args.push_back(a);
  }
  args.push_back("--json");
  std::vector<char*> cargs;
  for (std::string& a : args) cargs.push_back(a.data());
  cargs.push_back(nullptr);
  std::vector<double> medians;
  nlohmann::json last;
  for (int p = 0; p < n; ++p) {
    int out[2];
    if (::pipe(out) != 0) throw std::runtime_error("bench --processes: pipe failed");
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, out[1], 1);
    posix_spawn_file_actions_addclose(&actions, out[0]);
    pid_t pid = 0;
    const int err = ::posix_spawn(&pid, "/proc/self/exe", &actions, nullptr, cargs.data(), environ);
    posix_spawn_file_actions_destroy(&actions);
    ::close(out[1]);
    if (err != 0) {
      ::close(out[0]);
      throw std::runtime_error(std::string("bench --processes: cannot start a process: ") + std::strerror(err));
    }
    std::string text;
    char buf[4096];
    for (ssize_t got; (got = ::read(out[0], buf, sizeof buf)) > 0;) text.append(buf, size_t(got));
    ::close(out[0]);
    int status = 0;
    ::waitpid(pid, &status, 0);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
    last = nlohmann::json::parse(text);
    medians.push_back(last["ms_median"]);
  }
  const Timing t = summarize(medians);
  const double slowest = *std::max_element(medians.begin(), medians.end());
  if (json) {
    last.erase("ms");
    last["processes"] = n;
    last["process_medians"] = medians;
    last["ms_median"] = t.median;  // of the processes' medians
    last["ms_min"] = t.min;        // the fastest process's median
    last["ms_max"] = slowest;
    last["slowest_over_fastest"] = slowest / t.min;
    std::cout << last << "\n";
  } else {
    std::printf(
        "%d fresh processes, %d x %d, %d threads: median of medians %.3f ms; fastest %.3f, slowest %.3f "
        "(%.2fx)\n  each:",
        n, int(last["batch"]), int(last["seq"]), int(last["threads"]), t.median, t.min, slowest, slowest / t.min);
    for (double m : medians) std::printf(" %.3f", m);
    std::printf("\n");
  }
  return 0;
}

void check_shape(int B, int S) {
  if (B < 1 || B > 65536) throw UsageError("--batch must be in 1 .. 65536");
  if (S < 1 || S > 65536) throw UsageError("--seq must be in 1 .. 65536");
}

}  // namespace

int cmd_bench(int argc, char** argv) {
  cxxopts::Options o("ordo bench",
                     "Times the forward pass on random token ids (tokenization excluded) after a warm-up, and "
                     "compares it with the machine's measured sgemm peak.");
  o.add_options()("model", "model directory (default: the built-in model)", cxxopts::value<std::string>())(
      "batch", "sequences per batch B", cxxopts::value<int>()->default_value("1"))(
      "seq", "tokens per sequence S", cxxopts::value<int>()->default_value("128"))(
      "threads", "threads for the matrix work (0: the library default)", cxxopts::value<int>()->default_value("0"))(
      "repeat", "timed runs (the median and the minimum are reported)", cxxopts::value<int>()->default_value("20"))(
      "gemm", "measure sgemm GFLOP/s on 2048 x 2048 x 2048 instead")(
      "peak", "sgemm peak in GFLOP/s to compare with (default: measure it)", cxxopts::value<double>())(
      "stdin",
      "read lines \"B S REPEAT\" from stdin and answer each with one JSON line (for tools/dev/bench_peers.py)")(
      "processes", "run the bench in N fresh processes and report the median of their medians and their spread",
      cxxopts::value<int>())("json", "one JSON object instead of the report");
  add_compute_type_option(o);
  cxxopts::ParseResult args;
  if (!parse(o, argc, argv, args)) return 0;
  refuse_stray_arguments(args, "--model WORD");
  const int repeat = int_option(args, "repeat", 1, 100000);
  const double peak_given = args.count("peak") ? number_option(args, "peak", 0.001, 1e9, " GFLOP/s") : 0;
  set_num_threads(threads_option(args));
  const int threads = num_threads();
  const ComputeType compute_type = compute_type_option(args);
  const bool json = args.count("json") > 0;
  if (args.count("processes")) {
    if (args.count("stdin") || args.count("gemm")) throw UsageError("--processes times the forward pass only");
    return run_processes(argc, argv, int_option(args, "processes", 1, 1000), json);
  }

  if (args.count("gemm")) {
    blas_setup();  // the kernels the engine uses, with OpenBLAS's own threads for this one product
    openblas_set_num_threads(threads);
    const int n = 2048;
    const Timing t = time_sgemm(n, std::max(repeat / 4, 3));
    const double gflops = 2.0 * n * n * n / (t.min / 1e3) / 1e9;
    if (!json) print_blas_environment();
    if (json)
      std::cout << nlohmann::json{{"m", n},
                                  {"n", n},
                                  {"k", n},
                                  {"threads", threads},
                                  {"ms_median", t.median},
                                  {"ms_min", t.min},
                                  {"gflops", gflops}}
                << "\n";
    else
      std::printf(
          "sgemm %d x %d x %d, %d threads, OpenBLAS %s kernels: %.2f ms median, %.2f ms min, peak %.1f GFLOP/s\n", n, n,
          n, threads, openblas_get_corename(), t.median, t.min, gflops);
    return 0;
  }

  const Model model = Model::load(model_dir(args));
  const Config& c = model.config();
  Encoder encoder(model);
  encoder.set_compute_type(compute_type);  // the conversion is not timed: it happens once, at load

  if (args.count("stdin")) {
    std::string line;
    while (std::getline(std::cin, line)) {
      std::istringstream in(line);
      int B = 0, S = 0, r = 0;
      if (!(in >> B >> S >> r) || r < 1) throw UsageError("stdin: want lines \"B S REPEAT\", got \"" + line + "\"");
      check_shape(B, S);
      std::cout << forward_json(c, B, S, threads, time_forward(encoder, c, B, S, r), encoder) << std::endl;
    }
    return 0;
  }

  const int B = int_option(args, "batch", 1, 65536), S = int_option(args, "seq", 1, 65536);
  check_shape(B, S);
  const Timing t = time_forward(encoder, c, B, S, repeat);
  const nlohmann::json j = forward_json(c, B, S, threads, t, encoder);
  if (json) {
    std::cout << j << "\n";
    return 0;
  }
  const double peak = args.count("peak") ? peak_given : [&] {
    openblas_set_num_threads(threads);
    const Timing g = time_sgemm(2048, 5);
    openblas_set_num_threads(1);
    return 2.0 * 2048 * 2048 * 2048 / (g.min / 1e3) / 1e9;
  }();
  const double gflops = j["gflops"];
  print_blas_environment();
  std::printf("%d x %d tokens, %d layers, d=%d h=%d F=%d, %d threads, %d runs, compute type %s\n", B, S, c.n_layers,
              c.d_model, c.n_heads, c.d_ff, threads, repeat, compute_type_name(compute_type));
  std::printf("  %.3f ms median, %.3f ms min, %.0f tokens/s\n", t.median, t.min, double(j["tokens_per_s"]));
  std::printf("  %.1f GFLOP/s = %.0f%% of sgemm peak %.1f GFLOP/s\n", gflops, 100 * gflops / peak, peak);
  return 0;
}

}  // namespace ordo::cli
