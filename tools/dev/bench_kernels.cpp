// Each of ordo's own kernels against cblas_sgemm on the base encoder's shapes (d = 512, h = 8,
// F = 2048, 6 layers), the evidence behind the choices in engine/ops.cpp (docs/performance.md).
//
//   env -u OPENBLAS_CORETYPE build/bench_kernels [--threads 2] [--rounds 9] [--only linear|attention|split|int8|bf16]
//                                                [--width 512]
//
// --width d: another model width, F = 4·d and heads of 64 (384: all-MiniLM-L6-v2's products).
//
// linear: one pass of the 24 weight products of a forward pass (distinct weights, 75.5 MB, as in
// the model) at M rows, through each kernel that handles M: linear_small_m, linear_stream,
// linear_gemm, linear_prepacked (on weights packed before the timing, as the engine packs them at
// its first pass) and linear_blas (single-threaded cblas_sgemm on column blocks of y, the threads
// splitting them). attention: the 8 heads of one sequence of L tokens, one task per head as the
// encoder runs them, in blocks of query rows: ordo's packed gemm against cblas_sgemm. int8, bf16:
// the same products at that --compute-type, ordo's own kernel against oneDNN's tiles (and f32).
// The variants take turns call by call; each cell is the median of all calls, with its ratio to
// cblas_sgemm.
#include <cblas.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "engine/kernels/blas.h"
#include "engine/kernels/gemm.h"
#include "engine/kernels/parallel.h"
#include "engine/kernels/reduced.h"
#include "engine/kernels/small_m.h"
#include "engine/ops.h"

namespace {

using namespace ordo;
using Clock = std::chrono::steady_clock;

int D = 512, H = 8, F = 2048;  // --width sets them
constexpr int LAYERS = 6;

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

std::vector<float> noise(size_t n, unsigned seed) {
  std::vector<float> v(n);
  uint64_t s = seed * 2654435761u + 1;
  for (float& x : v) {
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    x = float(int((s >> 40) & 0xFFFF) - 32768) / 32768.0f * 0.05f;
  }
  return v;
}

struct Variant {
  std::string name;
  std::function<void()> run;
};

// Runs the variants in turn, call by call (the order rotating), `rounds` × `calls` calls each, so a
// change in the machine's load falls on all of them alike; prints the median ms of each and its
// ratio to the last variant's.
void compare(const std::string& shape, std::vector<Variant>& variants, int rounds, int calls) {
  std::vector<std::vector<double>> ms(variants.size());
  for (Variant& v : variants) v.run();  // warm-up
  for (int r = 0; r < rounds * calls; ++r)
    for (size_t i = 0; i < variants.size(); ++i) {
      const size_t k = (i + r) % variants.size();
      const auto start = Clock::now();
      variants[k].run();
      ms[k].push_back(std::chrono::duration<double, std::milli>(Clock::now() - start).count());
    }
  const double base = median(ms.back());
  std::printf("| %s |", shape.c_str());
  for (size_t i = 0; i < variants.size(); ++i)
    std::printf(" %s %.3f ms (%.2f) |", variants[i].name.c_str(), median(ms[i]), median(ms[i]) / base);
  std::printf("\n");
  std::fflush(stdout);
}

// The base encoder's four weight products per layer, with random weights.
struct Layer {
  std::vector<float> in_w, in_b, out_w, out_b, w1, b1, w2, b2;
};
std::vector<Layer> random_layers() {
  std::vector<Layer> layers(LAYERS);
  unsigned seed = 1;
  for (Layer& l : layers) {
    l.in_w = noise(size_t(3) * D * D, seed++), l.in_b = noise(3 * D, seed++);
    l.out_w = noise(size_t(D) * D, seed++), l.out_b = noise(D, seed++);
    l.w1 = noise(size_t(F) * D, seed++), l.b1 = noise(F, seed++);
    l.w2 = noise(size_t(D) * F, seed++), l.b2 = noise(D, seed++);
  }
  return layers;
}

// A pass's 24 products at M rows through `linear`, on fixed inputs x (M, D) and h (M, F): outputs
// fed back would shrink pass after pass into subnormal numbers.
struct Products {
  int M;
  std::vector<float> x, h, qkv, y, ff;
  explicit Products(int M)
      : M(M),
        x(noise(size_t(M) * D, 99)),
        h(noise(size_t(M) * F, 98)),
        qkv(size_t(M) * 3 * D),
        y(size_t(M) * D),
        ff(size_t(M) * F) {}
  template <class Linear>
  void run(const std::vector<Layer>& layers, Linear linear) {
    for (const Layer& l : layers) {
      linear(qkv.data(), x.data(), l.in_w.data(), l.in_b.data(), M, D, 3 * D);
      linear(y.data(), x.data(), l.out_w.data(), l.out_b.data(), M, D, D);
      linear(ff.data(), x.data(), l.w1.data(), l.b1.data(), M, D, F);
      linear(y.data(), h.data(), l.w2.data(), l.b2.data(), M, F, D);
    }
  }
};

// Each weight packed once for linear_prepacked, found by its address (what the engine does where
// prepack_weights() says so; here at every level that has the kernel).
std::map<const float*, std::vector<float>>& prepacked_weights() {
  static std::map<const float*, std::vector<float>> packed;
  return packed;
}
void prepacked(float* y, const float* x, const float* w, const float* b, int M, int K, int N) {
  linear_prepacked(y, x, prepacked_weights().at(w).data(), b, M, K, N);
}

void bench_linear(const std::vector<int>& ms, int rounds) {
  const std::vector<Layer> layers = random_layers();
  if (prepacked_width() > 0)
    for (const Layer& l : layers)
      for (auto [w, N, K] : {std::tuple{&l.in_w, 3 * D, D}, std::tuple{&l.out_w, D, D}, std::tuple{&l.w1, F, D},
                             std::tuple{&l.w2, D, F}}) {
        std::vector<float>& p = prepacked_weights()[w->data()];
        p.resize(prepacked_floats(N, K));
        prepack(p.data(), w->data(), N, K);
      }
  using Linear = void (*)(float*, const float*, const float*, const float*, int, int, int);
  for (int M : ms) {
    Products p(M);
    auto pass = [&](Linear linear) { return [&, linear] { p.run(layers, linear); }; };
    std::vector<Variant> variants;
    if (M <= 32) variants.push_back({"small_m", pass(linear_small_m)});
    if (M <= 512 && have_stream()) variants.push_back({"stream", pass(linear_stream)});
    if (M >= 64 || (M > 4 && !have_stream())) variants.push_back({"gemm", pass(linear_gemm)});
    if (prepacked_width() > 0) variants.push_back({"prepacked", pass(prepacked)});
    variants.push_back({"cblas", pass(linear_blas)});
    const int calls = std::max(2, std::min(10, 1000 / (M + 20)));
    compare("linear M=" + std::to_string(M), variants, rounds, calls);
  }
}

// int8 and bf16: the same 24 products at M rows through ReducedLinear, ordo's own kernel (VNNI,
// AVX-512 BF16) against oneDNN's tiles, with f32's linear (the engine's choice at M) beside them.
// int8 as convert_model makes it (in_proj's value third, linear1 and linear2 on the finer 16-bit
// grids, engine/kernels/reduced.h), and "own-8bit" with every product at 8 bits, as it was before those.
void bench_reduced(ComputeType type, const std::vector<int>& ms, int rounds) {
  const char* name = compute_type_name(type);
  if (!have_onednn()) {
    std::printf("%s: this build has no oneDNN\n", name);
    return;
  }
  const std::vector<Layer> layers = random_layers();
  // Each weight converted once, found by its address.
  std::map<const float*, std::unique_ptr<ReducedLinear>> converted, all8;
  for (const Layer& l : layers)
    for (auto [w, b, N, K, wide] :
         {std::tuple{&l.in_w, &l.in_b, 3 * D, D, 2 * D}, std::tuple{&l.out_w, &l.out_b, D, D, -1},
          std::tuple{&l.w1, &l.b1, F, D, 0}, std::tuple{&l.w2, &l.b2, D, F, 0}}) {
      converted[w->data()] = std::make_unique<ReducedLinear>(type, w->data(), b->data(), N, K, wide);
      if (type == ComputeType::Int8)
        all8[w->data()] = std::make_unique<ReducedLinear>(type, w->data(), b->data(), N, K);
    }
  const int threads = kernel_threads();
  for (int M : ms) {
    Products p(M);
    auto pass = [&](ReducedKernel kernel, const std::map<const float*, std::unique_ptr<ReducedLinear>>* which) {
      return [&, kernel, which] {
        p.run(layers, [&](float* y, const float* x, const float* w, const float*, int rows, int, int) {
          which->at(w)->forward(y, x, rows, threads, kernel);
        });
      };
    };
    std::vector<Variant> variants;
    variants.push_back({"f32", [&] { p.run(layers, linear); }});
    if (have_own_kernel(type)) variants.push_back({"own", pass(ReducedKernel::Own, &converted)});
    if (type == ComputeType::Int8) variants.push_back({"own-8bit", pass(ReducedKernel::Own, &all8)});
    if (type == ComputeType::Int8 ? onednn_int8_exact() : onednn_bf16())
      variants.push_back({"onednn", pass(ReducedKernel::OneDnn, &converted)});
    const int calls = std::max(2, std::min(10, 1000 / (M + 20)));
    compare(std::string(name) + " M=" + std::to_string(M), variants, rounds, calls);
  }
}

// The encoder's attention for one sequence of L tokens: a task per head, each thread with its scratch.
void bench_attention(const std::vector<int>& Ls, int rounds, const std::vector<int>& blocks) {
  const int dh = D / H, ld = 3 * D;
  for (int L : Ls) {
    const std::vector<float> qkv = noise(size_t(L) * ld, 7);
    std::vector<float> out(size_t(L) * D);
    std::vector<Variant> variants;
    for (int block : blocks) {
      const int b = std::min(block, L);
      const size_t per_thread = attention_scratch_floats(L, dh, b);
      auto scratch = std::make_shared<std::vector<float>>(per_thread * kernel_threads());
      variants.push_back({"own/" + std::to_string(block), [&, b, per_thread, scratch] {
                            parallel_for(H, [&](int i, int thread) {
                              const float* q = qkv.data() + size_t(i) * dh;
                              attention_head(out.data() + size_t(i) * dh, q, q + D, q + 2 * D,
                                             scratch->data() + thread * per_thread, L, dh, ld, D, b);
                            });
                          }});
    }
    const int b = std::min(kQueryBlock, L);
    auto probs = std::make_shared<std::vector<float>>(size_t(b) * L * kernel_threads());
    variants.push_back({"cblas/" + std::to_string(kQueryBlock), [&, b, probs] {
                          blas_setup();
                          const float scale = 1.0f / std::sqrt(float(dh));
                          parallel_for(H, [&](int i, int thread) {
                            const float* q = qkv.data() + size_t(i) * dh;
                            const float *k = q + D, *v = q + 2 * D;
                            float* p = probs->data() + size_t(thread) * b * L;
                            for (int r0 = 0; r0 < L; r0 += b) {
                              const int n = std::min(b, L - r0);
                              cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, n, L, dh, scale, q + size_t(r0) * ld,
                                          ld, k, ld, 0.0f, p, L);
                              softmax_rows(p, n, L, L);
                              cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, dh, L, 1.0f, p, L, v, ld, 0.0f,
                                          out.data() + size_t(r0) * D + size_t(i) * dh, D);
                            }
                          });
                        }});
    const int calls = std::max(1, std::min(10, int(100000 / (double(L) * L / 8 + 1000))));
    compare("attention L=" + std::to_string(L), variants, rounds, calls);
  }
}

// split: the break-even of handing work to a helper. A job of two equal tasks, each `flops` of
// multiply-adds on data in cache, run on the caller alone against split over the threads, inside a
// pass (the helpers awake, as between the products of a forward pass).
void bench_split(int rounds) {
  std::printf("\n## split: one job of 2 tasks, µs per job (median), caller alone vs spread over the threads\n");
  std::printf("| FLOPs per job | alone | split | split/alone |\n|---|---|---|---|\n");
  std::vector<float> a(1 << 16, 1.0f);
  for (double flops = 2e3; flops <= 5e6; flops *= 2.5) {
    const int n = int(flops / 4);  // per task: n multiply-adds over an array in L1/L2, repeated
    volatile float sink = 0;
    auto task = [&](int t, int) {
      float acc = float(t);
      for (int i = 0; i < n; ++i) acc = acc * 0.999f + a[size_t(i) & 0xFFFF];
      sink = acc;
    };
    const PassThreads pass;
    std::vector<double> alone, split;
    for (int r = 0; r < rounds * 50; ++r) {
      auto t0 = Clock::now();
      task(0, 0), task(1, 0);
      auto t1 = Clock::now();
      parallel_for(2, task);
      auto t2 = Clock::now();
      alone.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count());
      split.push_back(std::chrono::duration<double, std::micro>(t2 - t1).count());
    }
    std::printf("| %.0f | %.2f | %.2f | %.2f |\n", flops, median(alone), median(split), median(split) / median(alone));
  }
}

}  // namespace

int main(int argc, char** argv) {
  int threads = 2, rounds = 9;
  std::string only;
  std::vector<int> ms = {1, 4, 8, 12, 16, 24, 32, 64, 128, 256, 512, 1024, 2048};
  std::vector<int> Ls = {8, 32, 128, 512, 2048, 4096};
  std::vector<int> blocks = {kQueryBlock};
  for (int i = 1; i < argc; i += 2) {
    const std::string a = argv[i];
    if (a == "--help" || a == "-h") {
      std::printf(
          "usage: bench_kernels [--threads N] [--rounds N] [--only linear|attention|split|int8|bf16] [--m M,...] [--l "
          "L,...]"
          " [--blocks B,...] [--width D]\n");
      return 0;
    }
    if (i + 1 == argc) {
      std::fprintf(stderr, "error: %s needs a value\n", a.c_str());
      return 2;
    }
    auto list = [&] {
      std::vector<int> v;
      for (char* s = argv[i + 1]; *s;) {
        v.push_back(int(std::strtol(s, &s, 10)));
        if (*s == ',') ++s;
      }
      return v;
    };
    if (a == "--threads")
      threads = std::atoi(argv[i + 1]);
    else if (a == "--rounds")
      rounds = std::atoi(argv[i + 1]);
    else if (a == "--only")
      only = argv[i + 1];
    else if (a == "--m")
      ms = list();
    else if (a == "--l")
      Ls = list();
    else if (a == "--blocks")
      blocks = list();
    else if (a == "--width") {
      D = std::atoi(argv[i + 1]), F = 4 * D, H = D / 64;
      if (D < 64 || D % 64 != 0) {
        std::fprintf(stderr, "error: --width %s: not a positive multiple of 64\n", argv[i + 1]);
        return 2;
      }
    } else {
      std::fprintf(stderr, "error: unknown option %s\n", a.c_str());
      return 2;
    }
  }
  set_kernel_threads(threads);
  blas_setup();
  const char* coretype = std::getenv("OPENBLAS_CORETYPE");
  std::printf("# %d threads, %d rounds, OpenBLAS %s kernels, OPENBLAS_CORETYPE %s\n", threads, rounds,
              openblas_get_corename(), coretype ? coretype : "unset");
  if (only.empty() || only == "linear") bench_linear(ms, rounds);
  if (only.empty() || only == "attention") bench_attention(Ls, rounds, blocks);
  if (only.empty() || only == "split") bench_split(rounds);
  if (only.empty() || only == "int8") bench_reduced(ComputeType::Int8, ms, rounds);
  if (only.empty() || only == "bf16") bench_reduced(ComputeType::BF16, ms, rounds);
  return 0;
}
