// ordo: the encoder's four weight products per layer (in_proj, out_proj, linear1, linear2) at
// reduced precision, for --compute-type bf16 and int8. Everything else — embedding, LayerNorm,
// softmax, the attention products q·kᵀ and weights·v, the masked-LM head, and the first layer's
// in_proj (ReducedModel below says why) — stays in float.
//
//   bf16: W and x rounded to bfloat16 (the top 16 bits of a float, round to nearest even), the
//         products summed in float (AVX-512 BF16's vdpbf16ps takes two bf16 operands).
//   int8: W quantized once per output channel, x per row (token) as the pass runs, both symmetric:
//           s = max|row| / 127,  q = round(v / s) in [−127, 127]
//         the products summed exactly in int32, then y[m][n] = acc[m][n] · s_x[m] · s_w[n] + b[n].
//         Symmetric for x too (not u8 with a zero point): no zero-point term to carry, and the
//         reference twin is the same few lines; asymmetric would give linear2's one-sided GELU
//         input one more bit. 127, not 128, keeps −q representable.
//         Three products take finer grids, by their role: in_proj's value third (v's error goes
//         into every token's mix, where the softmax forgives q's and k's), linear1 (its input is
//         a LayerNorm output with a dimension 18–20 times the row's root mean square) and linear2
//         (its input is GELU's output, the most outlying of all, and its weights lose the most at
//         8 bits): W at 511 steps each side, x at wide_x_top(K) (2,047), both held in int16 and
//         summed exactly in int32 (vpdpwssd, vpmaddwd): twice the VNNI kernel's work on those
//         three, the same work in the AVX2 kernel, which multiplies 16-bit pairs anyway. On
//         all-MiniLM-L6-v2 they take the lowest cosine to f32 from 0.983 to 0.9993 (0.9947 with
//         value and linear2 alone; docs/precision.md).
//
// The products run in oneDNN's matmul (the library made for this; AVX-512 VNNI's vpdpbusd and
// BF16's vdpbf16ps on CPUs that have them), in tiles of up to 128 rows × 256 columns spread over the
// engine's threads: one primitive per tile shape, and each 256-column chunk of W reordered once,
// when converted, into the layout the primitive asks for. The plain twin, in double, is
// reference::linear_int8 / linear_bf16 (engine/reference_reduced.h). docs/precision.md has the figures.
// Where the kernels run at AVX-512 on a CPU with VNNI (engine/kernels/cpu.h), int8 runs in ordo's own
// kernel instead (engine/kernels/int8_vnni.h), which measured faster than oneDNN's tiles at every row
// count; with AVX-512 BF16, bf16 in ordo's own kernel (engine/kernels/bf16_avx512.h), faster at every
// row count too. Below that, both run in ordo's AVX2 kernels (engine/kernels/reduced_avx2.h: oneDNN's
// int8 saturates there, and has no bf16 matmul), and int8 at the plain level in a plain loop; bf16
// there only where oneDNN has it, else an InputError saying what it needs.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <ordo/compute_type.h>
#include <ordo/engine/model.h>

#include "engine/kernels/bf16_avx512.h"
#include "engine/kernels/int8_vnni.h"
#include "engine/reference_reduced.h"  // the finer grids' steps: kWideWTop, wide_x_top

namespace ordo {

using reference::kWideWTop;   // W's steps each side on the finer grids (511)
using reference::wide_x_top;  // x's (2,047 unless K is so large that int32 would not hold the sums)

// False when the build has no oneDNN (ORDO_ONEDNN off): only ComputeType::F32 runs then.
bool have_onednn();

// Per row of x (M, K): s[m] = max_k |x[m][k]| / 127 (a float), q[m][k] = round(x[m][k] / s[m]),
// the division done in double and rounded to nearest even, so that reference::quantize_rows
// gets the same integers. A row of zeros has s = 0 and q = 0.
void quantize_rows(int8_t* q /* (M, K) */, float* s /* (M) */, const float* x /* (M, K) */, int M, int K);
// The same at the finer grid of `top` steps each side (s = max|row| / top), into int16 rows ld
// apart (ld ≥ K), each padded with zeros: reference::quantize_rows16's integers.
void quantize_rows16(int16_t* q /* (M, ld) */, float* s /* (M) */, const float* x /* (M, K) */, int M, int K, int ld,
                     int top);
// The same one value at a time (quantize_rows16 runs 16 a step at AVX-512 and 8 at AVX2).
//
// The vector ones give the division's integers without dividing (a double division takes 16 cycles
// per 8 values at AVX-512, most of the quantization's time): t = x·(1/s) in double is within 2^-40
// of x/s (|x/s| ≤ 2,047). And x/s, a quotient of two floats, is either a half exactly or at least
// 2^-25 from every half: if x − s·(n + ½) is not zero it is a multiple of the smaller of x's and
// s/2's last bits. So t rounds to the integer x/s rounds to, except at an exact half, where t may
// fall either side. There the half nearest t, floor(t) + ½, is rounded instead (to even); it is the
// one where s·(floor(t) + ½) − x is zero, which an FMA says exactly (the product has 37 bits).
// Most values take a cheaper way still: t = x·(1/s) in float, 1/s and the product each rounded once,
// is within |x/s|·2^-23 ≤ 2^-12 of x/s, so where it is more than 2^-10 from every half it rounds to
// x/s's integer. The vector ones take that way, 16 values a step at AVX-512 and 8 at AVX2, and the
// double one for a step with a value that near a half (about one in 32), or for a row whose s is
// below the smallest normal float (1/s would overflow).
void quantize_rows16_plain(int16_t* q, float* s, const float* x, int M, int K, int ld, int top);

// bfloat16: a float's sign, exponent and top 7 mantissa bits, rounded to nearest even.
uint16_t to_bf16(float v);
float from_bf16(uint16_t h);

// Which kernel runs a product: Auto picks by the measured choice in reduced.cpp; Own is ordo's own
// for the level the kernels run at (engine/kernels/cpu.h) — int8: int8_vnni.h with AVX-512 VNNI,
// reduced_avx2.h with AVX2, a plain loop otherwise; bf16: bf16_avx512.h with AVX-512 BF16,
// reduced_avx2.h with AVX2 — and OneDnn oneDNN's tiles, there for the tests and bench_kernels,
// which hold the two against each other.
enum class ReducedKernel { Auto, Own, OneDnn };

// What oneDNN offers on this CPU (and under its ONEDNN_MAX_CPU_ISA): int8 products that are exact
// (it has VNNI; without, its byte products saturate: reduced_avx2.h), and bf16 products at all.
bool onednn_int8_exact();
bool onednn_bf16();
// Whether ordo's own kernel runs this compute type at the kernels' level (always for int8).
bool have_own_kernel(ComputeType type);
// The kernel Auto runs for a compute type, e.g. "avx2 (vpmaddwd, exact)"; for bf16 where nothing
// can run it, an InputError("--compute-type bf16", kBf16Needs).
std::string reduced_kernel_name(ComputeType type);
constexpr const char* kBf16Needs =
    "needs a CPU with AVX2 and FMA, or with AVX-512 (this one has neither, or ORDO_ISA=scalar)";

// One Linear (W (N, K), b (N)) converted once for one compute type (BF16 or Int8), or kept in
// float (F32: forward is ordo::linear on the model's own weights, for the product convert_model
// leaves in float). At Int8 the output channels from `wide` on (none when wide < 0) take the
// finer grids above (reference::linear_int8 with the same `wide`).
class ReducedLinear {
 public:
  ReducedLinear(ComputeType type, const float* w /* (N, K) */, const float* b /* (N) or null */, int N, int K,
                int wide = -1);
  ~ReducedLinear();
  ReducedLinear(const ReducedLinear&) = delete;
  ReducedLinear& operator=(const ReducedLinear&) = delete;

  // y = x·Wᵀ + b at this precision, the products on `threads` threads.
  void forward(float* y /* (M, N) */, const float* x /* (M, K) */, int M, int threads,
               ReducedKernel kernel = ReducedKernel::Auto) const;
  // Int8 only: acc = xq·Wqᵀ over the channels before `wide`, exact in int32 (|acc| ≤ 127²·K).
  void products_int8(int32_t* acc /* (M, wide) */, const int8_t* xq /* (M, K) */, int M, int threads,
                     ReducedKernel kernel = ReducedKernel::Auto) const;
  // Int8 only: the same over the channels from `wide` on, x at the finer grid (quantize_rows16,
  // rows padded to K2 = K rounded up to 2), in the own kernel of the level always (oneDNN has no
  // 16-bit integer product).
  void products_wide(int32_t* acc /* (M, N − wide) */, const int16_t* xq /* (M, K2) */, int M, int threads) const;

  ComputeType type() const { return type_; }
  const std::vector<int8_t>& weight_int8() const { return wq_; }    // (wide, K)
  const std::vector<int16_t>& weight_wide() const { return w16_; }  // (N − wide, K)
  const std::vector<float>& weight_scales() const { return ws_; }   // (N)
  int N() const { return N_; }
  int K() const { return K_; }
  int wide() const { return wide_; }  // the first channel on the finer grids (N: none)

 private:
  struct Prepared;  // the weights in a primitive's layout, made on first use
  ComputeType type_;
  int N_, K_;
  const float* w_;  // the model's floats: read by F32 only
  [[maybe_unused]] const float* b_;
  int wide_;                         // channels [0, wide_) int8, [wide_, N_) the finer grids
  std::vector<int8_t> wq_;           // (wide_, K) int8
  std::vector<int16_t> w16_;         // (N − wide_, K) at 511 steps
  std::vector<int16_t> w16_panels_;  // w16_ in tiles::pack_panels<2> order (the AVX-512 and AVX2 kernels)
  std::vector<float> ws_;            // (N)
  std::vector<uint16_t> wh_;         // (N, K) bf16
  PackedInt8 packed_;                // wq_ in int8_vnni's layout (a build with AVX-512 VNNI)
  PackedBf16 packed_bf16_;           // wh_ in bf16_avx512's layout (a build with AVX-512 BF16)
  std::vector<int8_t> wq_pairs_;     // wq_ in reduced_avx2's layout (AVX2 without VNNI)
  std::vector<uint16_t> wh_panels_;  // wh_ in reduced_avx2's layout (AVX2 without AVX-512 BF16)
  std::unique_ptr<Prepared> prepared_;
};

// The four products of every layer (five with a gated FFN), converted once (Encoder::set_compute_type), except the
// first layer's in_proj, which stays in float (its type() is F32). In a post-LN encoder it is the one product whose
// input is not a LayerNorm output but E[id]·√d + PE, and in a model whose embedding entries are about 1 (PyTorch's
// nn.Embedding starts at N(0, 1)) that row is √d times a normalized one, so q·kᵀ, quadratic in it, is large, and the
// softmax turns a small relative error of q and k into a different mix of v. Quantized, this one product took the
// held-out lines' lowest mean-pooled cosine to f32 from 0.9999 to 0.988 on the random base model (int8; 0.998 at bf16);
// kept in float, it costs 1/24 of the base encoder's weight products (docs/precision.md). A Hugging Face encoder norms
// the embedding sum (Config::embedding_norm), so its first layer reads a LayerNorm output as every later one does, and
// its first in_proj is converted with the rest (on all-MiniLM-L6-v2 int8's lowest cosine to f32 on 2,000 lines moved
// from 0.99935 to 0.99934, and the float product had been 6% of int8's time).
struct ReducedModel {
  struct Layer {
    std::unique_ptr<ReducedLinear> in_proj, out_proj, linear1, linear2;
    std::unique_ptr<ReducedLinear> linear1_v;  // a gated FFN's V, else null
  };
  ComputeType type = ComputeType::F32;
  std::vector<Layer> layers;
  double convert_ms = 0;  // what the conversion took
};
std::unique_ptr<ReducedModel> convert_model(const Model& model, ComputeType type);

}  // namespace ordo
