#include "engine/kernels/reduced.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <mutex>
#include <stdexcept>
#include <tuple>
#include <unordered_map>

#include <ordo/errors.h>

#include "engine/kernels/cpu.h"
#include "engine/kernels/parallel.h"
#include "engine/kernels/reduced_avx2.h"
#include "engine/kernels/tiles.h"
#include "engine/ops.h"

#ifdef ORDO_ONEDNN
#include <oneapi/dnnl/dnnl.hpp>

// Debian's oneDNN runs on libgomp, GCC's OpenMP runtime; the engine calls this one function of it.
// Declared here rather than through <omp.h>, which clang finds only with its own runtime (libomp),
// so that a clang build (the sanitizer tree of .ci/run) links the same libgomp as oneDNN.
extern "C" void omp_set_num_threads(int threads);
#endif

namespace ordo {

ComputeType parse_compute_type(const std::string& name) {
  if (name == "f32") return ComputeType::F32;
  if (name == "bf16") return ComputeType::BF16;
  if (name == "int8") return ComputeType::Int8;
  throw std::invalid_argument("compute type must be f32, bf16 or int8, got \"" + name + "\"");
}

const char* compute_type_name(ComputeType type) {
  switch (type) {
    case ComputeType::BF16:
      return "bf16";
    case ComputeType::Int8:
      return "int8";
    default:
      return "f32";
  }
}

// bf16 also needs a kernel that runs it here (reduced_kernel_name says which, or what it needs).
bool compute_type_available(ComputeType type) {
  if (type == ComputeType::F32) return true;
  if (!have_onednn()) return false;
  return type != ComputeType::BF16 || have_own_kernel(type) || onednn_bf16();
}

namespace {
template <class T>
void quantize_any(T* q, float* s, const float* x, int M, int K, int ld, int top) {
  for (int m = 0; m < M; ++m) {
    const float* row = x + size_t(m) * K;
    float max = 0.0f;
    bool finite = true;
    for (int k = 0; k < K; ++k) {
      max = std::max(max, std::fabs(row[k]));
      finite = finite && std::isfinite(row[k]);
    }
    s[m] = finite ? max / float(top) : std::numeric_limits<float>::quiet_NaN();
    const double scale = s[m];
    T* out = q + size_t(m) * ld;
    std::fill(out + K, out + ld, T(0));
    // A row of zeros has no scale: zeros. A row holding an infinity or a NaN has none either: zeros
    // with a NaN scale, so the product's row is NaN and the pass reports where activations stopped
    // being finite (an integer cast of a NaN would be undefined and hide it as finite numbers).
    if (scale == 0.0 || !finite) {
      std::fill(out, out + K, T(0));
      continue;
    }
    // |row[k]| ≤ max ≤ top·s within a float rounding, or, where s is subnormal, within its few bits:
    // clamped to [−top, top], as in the plain twin
    for (int k = 0; k < K; ++k)
      out[k] = static_cast<T>(std::clamp(std::nearbyint(double(row[k]) / scale), -double(top), double(top)));
  }
}
}  // namespace

void quantize_rows(int8_t* q, float* s, const float* x, int M, int K) {
  quantize_any(q, s, x, M, K, K, 127);
}

void quantize_rows16_plain(int16_t* q, float* s, const float* x, int M, int K, int ld, int top) {
  quantize_any(q, s, x, M, K, ld, top);
}

void quantize_rows16(int16_t* q, float* s, const float* x, int M, int K, int ld, int top) {
  if (have_int8_vnni()) return avx512::quantize_rows16(q, s, x, M, K, ld, top);
  if (isa_at_least(Isa::Avx2)) return avx2::quantize_rows16(q, s, x, M, K, ld, top);
  quantize_rows16_plain(q, s, x, M, K, ld, top);
}

uint16_t to_bf16(float v) {
  uint32_t bits;
  std::memcpy(&bits, &v, 4);
  if (std::isnan(v)) return uint16_t((bits >> 16) | 0x40);  // stays a NaN
  // round to nearest even: add 0x7FFF plus the lowest kept bit, then drop the low 16 bits
  bits += 0x7FFF + ((bits >> 16) & 1);
  return uint16_t(bits >> 16);
}

float from_bf16(uint16_t h) {
  const uint32_t bits = uint32_t(h) << 16;
  float v;
  std::memcpy(&v, &bits, 4);
  return v;
}

namespace {

// ordo's own kernels at the kernels' level (engine/kernels/cpu.h): the AVX-512 ones where the build
// has them and the CPU too, else the AVX2 ones.
enum class Own { Avx512, Avx2, Plain, None };

Own own_int8() {
  if (have_int8_vnni()) return Own::Avx512;
  return isa_at_least(Isa::Avx2) ? Own::Avx2 : Own::Plain;
}

Own own_bf16() {
  if (have_bf16_dot()) return Own::Avx512;
  return isa_at_least(Isa::Avx2) ? Own::Avx2 : Own::None;
}

}  // namespace

bool have_own_kernel(ComputeType type) {
  return type == ComputeType::Int8   ? own_int8() != Own::None
         : type == ComputeType::BF16 ? own_bf16() != Own::None
                                     : true;
}

std::string reduced_kernel_name(ComputeType type) {
  if (type == ComputeType::Int8) {
    const Own own = own_int8();
    return own == Own::Avx512 ? "avx512 vnni (vpdpbusd)"
           : own == Own::Avx2 ? "avx2 (vpmaddwd, exact)"
                              : "plain loop (exact)";
  }
  if (type == ComputeType::BF16) {
    const Own own = own_bf16();
    if (own == Own::Avx512) return "avx512 bf16 (vdpbf16ps)";
    if (own == Own::Avx2) return "avx2 (bf16 widened to float, fma)";
    if (onednn_bf16()) return "oneDNN";
    throw InputError("--compute-type bf16", kBf16Needs);
  }
  return "f32";
}

void to_bf16_rows(uint16_t* xh, const float* x, int M, int K, int K2) {
  for (int m = 0; m < M; ++m) {
    for (int k = 0; k < K; ++k) xh[size_t(m) * K2 + k] = to_bf16(x[size_t(m) * K + k]);
    for (int k = K; k < K2; ++k) xh[size_t(m) * K2 + k] = 0;
  }
}

bool have_bf16_dot() {
  static const bool yes = isa_at_least(Isa::Avx512) && cpu_features().avx512bf16;
  return yes;
}

void bf16_dot_linear(float* y, const uint16_t* xh, const PackedBf16& w, const float* b, int M, int threads) {
  if (!have_bf16_dot()) throw std::logic_error("bf16_dot_linear: no AVX-512 BF16 at this level");
  avx512::bf16_dot_linear(y, xh, w, b, M, threads);
}

#ifdef ORDO_ONEDNN

bool have_onednn() {
  return true;
}

namespace {
// oneDNN chooses its kernels at run time too. Under a level forced below the CPU's highest
// (ORDO_ISA, engine/kernels/cpu.h) it is held to the same one, before its first use, so that a
// forced level runs everything as a CPU of that level would (oneDNN's int8 without VNNI, no bf16).
void hold_onednn_to_the_level() {
  static const bool once = [] {
    const Isa level = isa_level();
    if (level != highest_isa()) try {
        dnnl::set_max_cpu_isa(level == Isa::Avx2 ? dnnl::cpu_isa::avx2 : dnnl::cpu_isa::sse41);
      } catch (const dnnl::error&) {
        // already held (ONEDNN_MAX_CPU_ISA) or already used: it stays as it is
      }
    return true;
  }();
  (void)once;
}
}  // namespace

bool onednn_int8_exact() {
  hold_onednn_to_the_level();
  // dnnl_cpu_isa_t is a set of bits: 0x40 is AVX-512 VNNI, 0x400 AVX-VNNI
  static const bool exact = (int(dnnl::get_effective_cpu_isa()) & (0x40 | 0x400)) != 0;
  return exact;
}

bool onednn_bf16() {
  hold_onednn_to_the_level();
  static const bool can = [] {
    try {
      const dnnl::engine engine(dnnl::engine::kind::cpu, 0);
      const dnnl::memory::desc x({1, 2}, dnnl::memory::data_type::bf16, dnnl::memory::format_tag::ab);
      const dnnl::memory::desc w({2, 1}, dnnl::memory::data_type::bf16, dnnl::memory::format_tag::any);
      const dnnl::memory::desc y({1, 1}, dnnl::memory::data_type::f32, dnnl::memory::format_tag::ab);
      dnnl::matmul::primitive_desc(dnnl::matmul::desc(x, w, y), engine);
      return true;
    } catch (const dnnl::error&) {
      return false;  // "could not create a primitive descriptor iterator": no bf16 matmul on this CPU
    }
  }();
  return can;
}

namespace {

using dnnl::memory;
using Tag = memory::format_tag;
using Dt = memory::data_type;

dnnl::engine& cpu() {
  hold_onednn_to_the_level();
  static dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  return engine;
}

// The work of one product is split into tasks for the engine's own threads (parallel_for), each
// task a block of at most kRows rows times a chunk of at most kColumns columns, and each runs
// oneDNN on one thread. Not oneDNN's own OpenMP threads: after each product they would spin on
// the cores while the engine's threads do the attention, and on a 2-core machine the two sets of
// threads took turns (int8 at 8 × 128 ran 1.4× f32 that way, 2× this way: docs/precision.md).
constexpr int kRows = 128;
constexpr int kColumns = 256;

// One matmul primitive per (type, rows, cols, K, N): x (rows, K) plain, a chunk of W as a
// (K, cols) matrix in the layout oneDNN picks (format_tag::any), y (rows, cols) inside the (M, N)
// output (row stride N). int8 writes the exact int32 sums; bf16 writes float, the bias added.
struct Matmul {
  dnnl::matmul primitive;
  memory::desc weights;
  memory::desc scratchpad;
};

using Key = std::tuple<int, int, int, int, int>;

const Matmul& make_matmul(const Key& key) {
  static std::mutex mutex;
  static std::map<Key, Matmul> cache;  // entries never move: threads keep pointers to them
  std::lock_guard<std::mutex> lock(mutex);
  auto it = cache.find(key);
  if (it != cache.end()) return it->second;
  const auto [t, rows, cols, K, N] = key;
  const ComputeType type = ComputeType(t);
  const bool int8 = type == ComputeType::Int8;
  const memory::desc x({rows, K}, int8 ? Dt::s8 : Dt::bf16, Tag::ab);
  const memory::desc w({K, cols}, int8 ? Dt::s8 : Dt::bf16, Tag::any);
  const memory::desc y({rows, cols}, int8 ? Dt::s32 : Dt::f32, memory::dims{N, 1});
  const memory::desc b({1, cols}, Dt::f32, Tag::ab);
  const dnnl::matmul::desc desc = int8 ? dnnl::matmul::desc(x, w, y) : dnnl::matmul::desc(x, w, b, y);
  // The scratchpad is ours, one per thread: oneDNN's own (scratchpad_mode::library) is shared by
  // all primitives, and two threads running products at once would write over each other's.
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  const dnnl::matmul::primitive_desc pd(desc, attr, cpu());
  return cache.emplace(key, Matmul{dnnl::matmul(pd), pd.weights_desc(), pd.scratchpad_desc()}).first->second;
}

// Looked up per tile, dozens of times a layer: each thread keeps its own index of the shared
// primitives, so the common case takes no lock.
const Matmul& matmul_for(ComputeType type, int rows, int cols, int K, int N) {
  thread_local std::map<Key, const Matmul*> mine;
  const Key key{int(type), rows, cols, K, N};
  const Matmul*& m = mine[key];
  if (!m) m = &make_matmul(key);
  return *m;
}

dnnl::stream& stream() {
  thread_local dnnl::stream s(cpu());
  return s;
}

// Runs mm on this thread, with this thread's scratchpad.
void run(const Matmul& mm, std::unordered_map<int, memory> args) {
  thread_local std::vector<char> pad;
  if (pad.size() < mm.scratchpad.get_size()) pad.resize(mm.scratchpad.get_size());
  args.emplace(DNNL_ARG_SCRATCHPAD, memory(mm.scratchpad, cpu(), pad.data()));
  mm.primitive.execute(stream(), args);
  stream().wait();
}

// Per thread, grown as needed: the pass's quantized or rounded rows and integer sums, so that no
// product allocates once the largest shape has run.
struct Scratch {
  std::vector<int8_t> xq;
  std::vector<uint8_t> xu;
  std::vector<float> xs;
  std::vector<int32_t> acc;
  std::vector<uint16_t> xh;
  std::vector<int16_t> xw;
  std::vector<float> xr;
  std::vector<int16_t> x16;  // the finer grid's rows
  std::vector<float> xs16;
};
Scratch& scratch() {
  thread_local Scratch s;
  return s;
}

template <class T>
void grow(std::vector<T>& v, size_t n) {
  if (v.size() < n) v.resize(n);
}

}  // namespace

// Each chunk of kColumns columns of W, in the layouts its primitives asked for (one in practice:
// the layout depends on the chunk's shape, not on the rows).
struct ReducedLinear::Prepared {
  std::vector<std::pair<memory::desc, memory>> chunks;  // chunk i's layout and weights, made by the constructor
  std::mutex mutex;
  std::vector<std::tuple<int, memory::desc, memory>> layouts;  // (first column, layout, weights)
  memory weights(int n0, int cols, const memory::desc& want, const void* plain, Dt dt, int K) {
    if (size_t(n0 / kColumns) < chunks.size() && chunks[n0 / kColumns].first == want)
      return chunks[n0 / kColumns].second;  // read only after construction: no lock
    std::lock_guard<std::mutex> lock(mutex);
    for (auto& [first, desc, mem] : layouts)
      if (first == n0 && desc == want) return mem;
    // Rows n0 .. n0+cols of W (N, K) row-major are the (K, cols) matrix oneDNN wants, tag ba
    const size_t bytes = dt == Dt::s8 ? 1 : 2;
    memory src({{K, cols}, dt, Tag::ba}, cpu(),
               const_cast<char*>(static_cast<const char*>(plain) + size_t(n0) * K * bytes));
    memory dst(want, cpu());
    dnnl::stream stream(cpu());
    dnnl::reorder(src, dst).execute(stream, src, dst);
    stream.wait();
    layouts.emplace_back(n0, want, dst);
    return dst;
  }
};

ReducedLinear::ReducedLinear(ComputeType type, const float* w, const float* b, int N, int K, int wide)
    : type_(type),
      N_(N),
      K_(K),
      w_(w),
      b_(b),
      wide_(type == ComputeType::Int8 && wide >= 0 && wide < N ? wide : N),
      prepared_(std::make_unique<Prepared>()) {
  if (type == ComputeType::F32) return;  // kept in float: nothing to convert
  if (type == ComputeType::Int8) {
    const int Nn = wide_;
    wq_.resize(size_t(Nn) * K), ws_.resize(N);
    quantize_rows(wq_.data(), ws_.data(), w, Nn, K);  // per output channel: a row of W
    if (own_int8() == Own::Avx512) packed_ = pack_int8(wq_.data(), Nn, K);
    if (own_int8() == Own::Avx2) wq_pairs_ = tiles::pack_panels<2>(wq_.data(), Nn, K);
    w16_.resize(size_t(N - Nn) * K);  // the finer grid's channels
    quantize_rows16(w16_.data(), ws_.data() + Nn, w + size_t(Nn) * K, N - Nn, K, K, kWideWTop);
    if (own_int8() != Own::Plain) w16_panels_ = tiles::pack_panels<2>(w16_.data(), N - Nn, K);
  } else if (type == ComputeType::BF16) {
    reduced_kernel_name(type);  // where nothing runs bf16: the error that says what it needs
    wh_.resize(size_t(N) * K);
    for (size_t i = 0; i < wh_.size(); ++i) wh_[i] = to_bf16(w[i]);
    if (own_bf16() == Own::Avx512) packed_bf16_ = tiles::pack<2>(wh_.data(), N, K);
    if (own_bf16() == Own::Avx2) wh_panels_ = tiles::pack_panels<1>(wh_.data(), N, K);
  }
  // every chunk's weights in their layout now, rather than in the first pass; only where oneDNN
  // runs the products (ReducedKernel::OneDnn still works beside ordo's own kernels, its weights
  // then made on first use)
  if (type == ComputeType::Int8 || own_bf16() != Own::None) return;
  for (int n0 = 0; n0 < N; n0 += kColumns) {
    const int cols = std::min(kColumns, N - n0);
    const Matmul& mm = matmul_for(type, kRows, cols, K, N);
    const bool int8 = type == ComputeType::Int8;
    memory w = prepared_->weights(n0, cols, mm.weights, int8 ? (const void*)wq_.data() : wh_.data(),
                                  int8 ? Dt::s8 : Dt::bf16, K);
    prepared_->chunks.emplace_back(mm.weights, w);
  }
}

ReducedLinear::~ReducedLinear() = default;

namespace {
// Runs job(m0, rows, n0, cols) for every (row block, column chunk) of an (M, N) output on the
// engine's threads, oneDNN on one thread inside each.
template <class Job>
void over_tiles(int M, int N, int threads, const Job& job) {
  const int row_blocks = (M + kRows - 1) / kRows, chunks = (N + kColumns - 1) / kColumns;
  auto task = [&](int t, int) {
    omp_set_num_threads(1);  // this thread's OpenMP setting: oneDNN stays on it
    const int m0 = (t / chunks) * kRows, n0 = (t % chunks) * kColumns;
    job(m0, std::min(kRows, M - m0), n0, std::min(kColumns, N - n0));
  };
  if (threads <= 1)
    for (int t = 0; t < row_blocks * chunks; ++t) task(t, 0);
  else
    parallel_for(row_blocks * chunks, task);
}
}  // namespace

namespace {
// job(m0, rows) for runs of rows spread over the threads, as many as split_tasks says for `flops`,
// the job's work: x's rows quantized or rounded, or the plain product.
template <class Job>
void over_row_blocks(int M, int threads, double flops, const Job& job) {
  if (M <= 0) return;
  const int tasks = split_tasks(flops, M, threads), per = (M + tasks - 1) / tasks;
  if (tasks == 1) return job(0, M);
  parallel_for((M + per - 1) / per, [&](int i, int) { job(i * per, std::min(per, M - i * per)); });
}

// The work of quantizing or rounding x (M, K) for over_row_blocks: a dozen vector instructions per
// 8 values (widening to double, the quotient and its halves, narrowing, the clamp), about what 64
// vectorised FLOPs take. So one short text's 16 rows of 384 are split over the threads, a single
// token's row of 1536 is not.
double rows_work(int M, int K) {
  constexpr double kFlopsPerValue = 64;
  return double(M) * K * kFlopsPerValue;
}

// The int8 kernel: ordo's own wherever the build has VNNI. It was the faster at every row count
// measured, the 24 products of the base encoder's forward pass (`bench_kernels --only int8`,
// OPENBLAS_CORETYPE unset, 2 threads, medians of 5 rounds; own / oneDNN, ms):
//   M = 1: 0.69 / 2.00   8: 1.07 / 2.84   32: 2.17 / 4.23   128: 7.12 / 11.3   512: 27.3 / 40.8
//   2048: 114 / 161
//
// Without VNNI, ordo's own always: oneDNN's int8 then saturates (reduced_avx2.h), and is run only
// when asked for (ReducedKernel::OneDnn, where onednn_int8_exact() says it is exact).
Own int8_path(ReducedKernel kernel) {
  return kernel == ReducedKernel::OneDnn ? Own::None : own_int8();
}

// The same for bf16 with AVX-512 BF16, faster than oneDNN's tiles at every row count as well
// (`bench_kernels --only bf16`; own / oneDNN, ms): M = 1: 1.61 / 3.12   8: 2.42 / 4.28
//   32: 5.92 / 8.58   128: 14.6 / 18.7   512: 54.7 / 64.6   2048: 219 / 240
//
// Without AVX-512 BF16, the AVX2 kernel (reduced_avx2.h) where the level allows it, else oneDNN.
Own bf16_path(ReducedKernel kernel) {
  if (kernel == ReducedKernel::OneDnn) return Own::None;
  if (kernel == ReducedKernel::Own && own_bf16() == Own::None)
    throw std::invalid_argument("ReducedKernel::Own: no bf16 kernel of ordo's own at this level");
  return own_bf16();
}

// acc (M, N) = xq · Wqᵀ, the plain loop in int32 (exact), rows over the threads; x's rows ldx
// apart (int8, or the finer grid's int16).
template <class X, class W>
void int_plain(int32_t* acc, const X* xq, int ldx, const W* wq, int M, int N, int K, int threads) {
  over_row_blocks(M, threads, 2.0 * M * N * K, [&](int m0, int rows) {
    for (int m = m0; m < m0 + rows; ++m)
      for (int n = 0; n < N; ++n) {
        int32_t sum = 0;
        for (int k = 0; k < K; ++k) sum += int32_t(xq[size_t(m) * ldx + k]) * wq[size_t(n) * K + k];
        acc[size_t(m) * N + n] = sum;
      }
  });
}

// y (M, ld) = acc (M, N)·(xs[m]·ws[n]) + b[n]
void scale_plain(float* y, int ld, const int32_t* acc, const float* xs, const float* ws, const float* b, int M, int N) {
  for (int m = 0; m < M; ++m)
    for (int n = 0; n < N; ++n)
      y[size_t(m) * ld + n] = float(acc[size_t(m) * N + n]) * (xs[m] * ws[n]) + (b ? b[n] : 0.0f);
}

// x's quantized rows widened to int16, padded to K2 with 0 (reduced_avx2.h's operand).
void widen_rows(int16_t* xw, const int8_t* xq, int M, int K, int K2) {
  for (int m = 0; m < M; ++m) {
    for (int k = 0; k < K; ++k) xw[size_t(m) * K2 + k] = xq[size_t(m) * K + k];
    for (int k = K; k < K2; ++k) xw[size_t(m) * K2 + k] = 0;
  }
}
}  // namespace

void ReducedLinear::products_int8(int32_t* acc, const int8_t* xq, int M, int threads, ReducedKernel kernel) const {
  if (type_ != ComputeType::Int8) throw std::logic_error("ReducedLinear::products_int8: not an int8 product");
  const Own path = int8_path(kernel);
  const int Nn = wide_;
  if (Nn == 0) return;
  if (path == Own::Avx512) {
    Scratch& s = scratch();
    grow(s.xu, size_t(M) * packed_.KG);
    to_u8_rows(s.xu.data(), xq, M, K_, packed_.KG);
    int8_vnni_products(acc, s.xu.data(), packed_, M, threads);
    return;
  }
  if (path == Own::Avx2) {
    const int K2 = (K_ + 1) / 2 * 2;
    Scratch& s = scratch();
    grow(s.xw, size_t(M) * K2);
    widen_rows(s.xw.data(), xq, M, K_, K2);
    avx2::int8_products(acc, nullptr, s.xw.data(), nullptr, wq_pairs_.data(), nullptr, nullptr, M, Nn, K2, Nn, threads);
    return;
  }
  if (path == Own::Plain) return int_plain(acc, xq, K_, wq_.data(), M, Nn, K_, threads);
  over_tiles(M, Nn, threads, [&](int m0, int rows, int n0, int cols) {
    const Matmul& mm = matmul_for(ComputeType::Int8, rows, cols, K_, Nn);
    memory w = prepared_->weights(n0, cols, mm.weights, wq_.data(), Dt::s8, K_);
    memory x({{rows, K_}, Dt::s8, Tag::ab}, cpu(), const_cast<int8_t*>(xq + size_t(m0) * K_));
    memory y({{rows, cols}, Dt::s32, memory::dims{Nn, 1}}, cpu(), acc + size_t(m0) * Nn + n0);
    run(mm, {{DNNL_ARG_SRC, x}, {DNNL_ARG_WEIGHTS, w}, {DNNL_ARG_DST, y}});
  });
}

// The finer grid's channels [wide, N) in the own kernel of the level: acc (M, N − wide) = xq·W16ᵀ when y
// is null, else y's columns [wide, N) (rows ld apart) = acc·(xs[m]·ws[n]) + b[n], with ws and b those
// channels' own.
namespace {
void wide_products(int32_t* acc, float* y, int ld, const int16_t* xq, const float* xs, const int16_t* w16,
                   const int16_t* panels, const float* ws, const float* b, int M, int Nw, int K, int threads) {
  const int K2 = (K + 1) / 2 * 2;
  const Own path = own_int8();
  if (path == Own::Avx512) return int16_vnni(acc, y, xq, xs, panels, ws, b, M, Nw, K2, ld, threads);
  if (path == Own::Avx2) return avx2::int16_products(acc, y, xq, xs, panels, ws, b, M, Nw, K2, ld, threads);
  if (!y) return int_plain(acc, xq, K2, w16, M, Nw, K, threads);
  Scratch& s = scratch();
  grow(s.acc, size_t(M) * Nw);
  int_plain(s.acc.data(), xq, K2, w16, M, Nw, K, threads);
  scale_plain(y, ld, s.acc.data(), xs, ws, b, M, Nw);
}
}  // namespace

void ReducedLinear::products_wide(int32_t* acc, const int16_t* xq, int M, int threads) const {
  if (type_ != ComputeType::Int8) throw std::logic_error("ReducedLinear::products_wide: not an int8 product");
  if (wide_ == N_) return;
  wide_products(acc, nullptr, N_ - wide_, xq, nullptr, w16_.data(), w16_panels_.data(), nullptr, nullptr, M, N_ - wide_,
                K_, threads);
}

void ReducedLinear::forward(float* y, const float* x, int M, int threads, ReducedKernel kernel) const {
  if (type_ == ComputeType::F32) {
    linear(y, x, w_, b_, M, K_, N_);  // on the engine's threads, as in a pass at f32
    return;
  }
  Scratch& s = scratch();
  if (type_ == ComputeType::Int8) {
    if (wide_ < N_) {  // the finer grids' channels
      const int K2 = (K_ + 1) / 2 * 2;
      grow(s.x16, size_t(M) * K2), grow(s.xs16, size_t(M));
      int16_t* xq = s.x16.data();
      float* xs = s.xs16.data();
      over_row_blocks(M, threads, rows_work(M, K_), [&](int m0, int rows) {
        quantize_rows16(xq + size_t(m0) * K2, xs + m0, x + size_t(m0) * K_, rows, K_, K2, wide_x_top(K_));
      });
      wide_products(nullptr, y + wide_, N_, xq, xs, w16_.data(), w16_panels_.data(), ws_.data() + wide_,
                    b_ ? b_ + wide_ : nullptr, M, N_ - wide_, K_, threads);
    }
    const int Nn = wide_;
    if (Nn == 0) return;
    grow(s.xs, size_t(M));
    float* xs = s.xs.data();
    const Own path = int8_path(kernel);
    if (path == Own::Avx2) {
      const int K2 = (K_ + 1) / 2 * 2;
      grow(s.xw, size_t(M) * K2);
      int16_t* xw = s.xw.data();
      over_row_blocks(M, threads, rows_work(M, K_), [&](int m0, int rows) {
        // int8's grid (127 steps) straight into the kernel's int16 rows: quantize_rows's integers, widened
        avx2::quantize_rows16(xw + size_t(m0) * K2, xs + m0, x + size_t(m0) * K_, rows, K_, K2, 127);
      });
      avx2::int8_products(nullptr, y, xw, xs, wq_pairs_.data(), ws_.data(), b_, M, Nn, K2, N_, threads);
      return;
    }
    if (path == Own::Avx512) {
      grow(s.xu, size_t(M) * packed_.KG);
      uint8_t* xu = s.xu.data();
      over_row_blocks(M, threads, rows_work(M, K_), [&](int m0, int rows) {
        quantize_rows_u8(xu + size_t(m0) * packed_.KG, xs + m0, x + size_t(m0) * K_, rows, K_, packed_.KG);
      });
      int8_vnni_linear(y, xu, xs, packed_, ws_.data(), b_, M, N_, threads);
      return;
    }
    grow(s.xq, size_t(M) * K_), grow(s.acc, size_t(M) * Nn);
    int8_t* xq = s.xq.data();
    int32_t* acc = s.acc.data();
    over_row_blocks(M, threads, rows_work(M, K_), [&](int m0, int rows) {
      quantize_rows(xq + size_t(m0) * K_, xs + m0, x + size_t(m0) * K_, rows, K_);
    });
    if (path == Own::Plain) {
      int_plain(acc, xq, K_, wq_.data(), M, Nn, K_, threads);
      scale_plain(y, N_, acc, xs, ws_.data(), b_, M, Nn);
      return;
    }
    over_tiles(M, Nn, threads, [&](int m0, int rows, int n0, int cols) {
      const Matmul& mm = matmul_for(ComputeType::Int8, rows, cols, K_, Nn);
      memory w = prepared_->weights(n0, cols, mm.weights, wq_.data(), Dt::s8, K_);
      memory xm({{rows, K_}, Dt::s8, Tag::ab}, cpu(), xq + size_t(m0) * K_);
      memory am({{rows, cols}, Dt::s32, memory::dims{Nn, 1}}, cpu(), acc + size_t(m0) * Nn + n0);
      run(mm, {{DNNL_ARG_SRC, xm}, {DNNL_ARG_WEIGHTS, w}, {DNNL_ARG_DST, am}});
      // y = acc · s_x · s_w + b, on this tile while its sums are in cache
      for (int m = m0; m < m0 + rows; ++m) {
        const int32_t* a = acc + size_t(m) * Nn;
        float* out = y + size_t(m) * N_;
        for (int n = n0; n < n0 + cols; ++n) out[n] = float(a[n]) * (xs[m] * ws_[n]) + (b_ ? b_[n] : 0.0f);
      }
    });
    return;
  }
  const Own bf16 = bf16_path(kernel);
  if (bf16 == Own::Avx2) {
    grow(s.xr, size_t(M) * K_);
    float* xr = s.xr.data();
    over_row_blocks(M, threads, rows_work(M, K_), [&](int m0, int rows) {
      for (size_t i = size_t(m0) * K_; i < size_t(m0 + rows) * K_; ++i) xr[i] = from_bf16(to_bf16(x[i]));
    });
    avx2::bf16_linear(y, xr, wh_panels_.data(), b_, M, N_, K_, threads);
    return;
  }
  if (bf16 == Own::Avx512) {
    grow(s.xh, size_t(M) * packed_bf16_.KG);
    uint16_t* xh = s.xh.data();
    over_row_blocks(M, threads, rows_work(M, K_), [&](int m0, int rows) {
      to_bf16_rows(xh + size_t(m0) * packed_bf16_.KG, x + size_t(m0) * K_, rows, K_, packed_bf16_.KG);
    });
    bf16_dot_linear(y, xh, packed_bf16_, b_, M, threads);
    return;
  }
  grow(s.xh, size_t(M) * K_);
  uint16_t* xh = s.xh.data();
  over_row_blocks(M, threads, rows_work(M, K_), [&](int m0, int rows) {
    for (size_t i = size_t(m0) * K_; i < size_t(m0 + rows) * K_; ++i) xh[i] = to_bf16(x[i]);
  });
  std::vector<float> zeros;  // a Linear without bias (nn.TransformerEncoderLayer's have one, but allowed)
  if (!b_) zeros.assign(N_, 0.0f);
  const float* bias = b_ ? b_ : zeros.data();
  over_tiles(M, N_, threads, [&](int m0, int rows, int n0, int cols) {
    const Matmul& mm = matmul_for(ComputeType::BF16, rows, cols, K_, N_);
    memory w = prepared_->weights(n0, cols, mm.weights, wh_.data(), Dt::bf16, K_);
    memory xm({{rows, K_}, Dt::bf16, Tag::ab}, cpu(), xh + size_t(m0) * K_);
    memory ym({{rows, cols}, Dt::f32, memory::dims{N_, 1}}, cpu(), y + size_t(m0) * N_ + n0);
    memory bm({{1, cols}, Dt::f32, Tag::ab}, cpu(), const_cast<float*>(bias + n0));
    run(mm, {{DNNL_ARG_SRC, xm}, {DNNL_ARG_WEIGHTS, w}, {DNNL_ARG_BIAS, bm}, {DNNL_ARG_DST, ym}});
  });
}

#else  // no oneDNN: only f32 runs

bool have_onednn() {
  return false;
}
bool onednn_int8_exact() {
  return false;
}
bool onednn_bf16() {
  return false;
}
struct ReducedLinear::Prepared {};
ReducedLinear::ReducedLinear(ComputeType type, const float* w, const float* b, int N, int K, int)
    : type_(type), N_(N), K_(K), w_(w), b_(b), wide_(N) {
  if (type != ComputeType::F32)
    throw std::runtime_error(std::string("compute type ") + compute_type_name(type) +
                             ": this build has no oneDNN (install libdnnl-dev)");
}
ReducedLinear::~ReducedLinear() = default;
void ReducedLinear::forward(float* y, const float* x, int M, int, ReducedKernel) const {
  linear(y, x, w_, b_, M, K_, N_);  // F32, the only type this build converts
}
void ReducedLinear::products_int8(int32_t*, const int8_t*, int, int, ReducedKernel) const {}
void ReducedLinear::products_wide(int32_t*, const int16_t*, int, int) const {}

#endif

std::unique_ptr<ReducedModel> convert_model(const Model& model, ComputeType type) {
  const auto start = std::chrono::steady_clock::now();
  const Config& c = model.config();
  const int d = c.d_model, F = c.d_ff, A = c.attention_width();
  auto r = std::make_unique<ReducedModel>();
  r->type = type;
  for (const LayerWeights& w : model.weights().layers) {
    ReducedModel::Layer l;
    // the first layer's in_proj stays in float (reduced.h says why), unless the embedding sum is normed
    const bool first = r->layers.empty() && !c.embedding_norm;
    // at int8, in_proj's value third, linear1 and linear2 on the finer grids (reduced.h says why)
    l.in_proj = std::make_unique<ReducedLinear>(first ? ComputeType::F32 : type, w.in_proj_weight, w.in_proj_bias,
                                                3 * A, d, 2 * A);
    l.out_proj = std::make_unique<ReducedLinear>(type, w.out_proj_weight, w.out_proj_bias, d, A);
    l.linear1 = std::make_unique<ReducedLinear>(type, w.linear1_weight, w.linear1_bias, F, d, 0);
    if (w.linear1_v_weight) l.linear1_v = std::make_unique<ReducedLinear>(type, w.linear1_v_weight, nullptr, F, d);
    l.linear2 = std::make_unique<ReducedLinear>(type, w.linear2_weight, w.linear2_bias, d, F, 0);
    r->layers.push_back(std::move(l));
  }
  r->convert_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  return r;
}

}  // namespace ordo
