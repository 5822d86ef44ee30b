// The math core against hand-computed values and against its plain reference twins.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <utility>
#include <vector>

#include "engine/ops.h"
#include "engine/reference.h"
#include "test_util.h"

namespace ordo {
namespace {

using test::max_abs_diff;
using test::random_floats;

TEST(Positions, FirstRowIsSinZeroCosZero) {
  std::vector<float> pe(8);
  sinusoidal_positions(pe.data(), 1, 8, PeLayout::Interleaved, 10000.0);
  EXPECT_EQ(pe, (std::vector<float>{0, 1, 0, 1, 0, 1, 0, 1}));
  sinusoidal_positions(pe.data(), 1, 8, PeLayout::Split, 10000.0);
  EXPECT_EQ(pe, (std::vector<float>{0, 0, 0, 0, 1, 1, 1, 1}));
}

TEST(Positions, DimFourPositionOne) {
  // d = 4: frequencies 1/10000^(0/4) = 1 and 1/10000^(2/4) = 0.01.
  std::vector<float> pe(2 * 4);
  sinusoidal_positions(pe.data(), 2, 4, PeLayout::Interleaved, 10000.0);
  const float expected[] = {0.8414709848f, 0.5403023059f, 0.0099998333f,
                            0.9999500004f};  // sin 1, cos 1, sin .01, cos .01
  for (int j = 0; j < 4; ++j) EXPECT_NEAR(pe[4 + j], expected[j], 1e-7) << "dim " << j;
  sinusoidal_positions(pe.data(), 2, 4, PeLayout::Split, 10000.0);
  const float split[] = {expected[0], expected[2], expected[1], expected[3]};
  for (int j = 0; j < 4; ++j) EXPECT_NEAR(pe[4 + j], split[j], 1e-7) << "dim " << j;
}

TEST(Positions, MatchTheFormulaInDouble) {
  const int N = 300, d = 512;
  std::vector<float> pe(size_t(N) * d), tail(size_t(10) * d);
  sinusoidal_positions(pe.data(), N, d, PeLayout::Interleaved, 10000.0);
  double worst = 0;
  for (int t = 0; t < N; ++t)
    for (int j = 0; j < d; ++j) {
      const int i = j / 2;
      const double angle = t / std::pow(10000.0, 2.0 * i / d);
      const double want = j % 2 == 0 ? std::sin(angle) : std::cos(angle);
      worst = std::max(worst, std::fabs(want - pe[size_t(t) * d + j]));
    }
  EXPECT_LT(worst, 1e-7);
  // Rows computed from a later starting position are the same rows.
  sinusoidal_positions(tail.data(), 10, d, PeLayout::Interleaved, 10000.0, N - 10);
  EXPECT_EQ(max_abs_diff(tail.data(), pe.data() + size_t(N - 10) * d, tail.size()), 0.0);
}

TEST(Linear, HandComputed) {
  // x = [1 2], W = [[1 0], [0 1], [1 1]], b = [0.5 0 -1]  →  y = [1.5, 2, 2]
  const float x[] = {1, 2}, w[] = {1, 0, 0, 1, 1, 1}, b[] = {0.5f, 0, -1};
  float y[3];
  linear(y, x, w, b, 1, 2, 3);
  EXPECT_FLOAT_EQ(y[0], 1.5f);
  EXPECT_FLOAT_EQ(y[1], 2.0f);
  EXPECT_FLOAT_EQ(y[2], 2.0f);
}

TEST(Softmax, HandComputed) {
  std::vector<float> z = {1, 2, 3};
  softmax_rows(z.data(), 1, 3, 3);
  EXPECT_NEAR(z[0], 0.09003057317, 1e-7);
  EXPECT_NEAR(z[1], 0.24472847105, 1e-7);
  EXPECT_NEAR(z[2], 0.66524095577, 1e-7);
}

TEST(Softmax, LargeValuesDoNotOverflow) {
  std::vector<float> z = {1000, 1001, 1002};  // exp(1000) is inf in float; shifted by the max it is not
  softmax_rows(z.data(), 1, 3, 3);
  EXPECT_NEAR(z[0], 0.09003057317, 1e-7);
  EXPECT_NEAR(z[2], 0.66524095577, 1e-7);
}

TEST(Softmax, MaskedKeysGetZeroAndAnEmptyRowIsZeros) {
  std::vector<float> z = {0, 0, 123};
  softmax_rows(z.data(), 1, 3, 2);
  EXPECT_EQ(z, (std::vector<float>{0.5f, 0.5f, 0.0f}));
  std::vector<float> empty = {1, 2};
  softmax_rows(empty.data(), 1, 2, 0);
  EXPECT_EQ(empty, (std::vector<float>{0, 0}));
}

TEST(LayerNorm, HandComputed) {
  // mean 2.5, biased variance 1.25: (x − 2.5) / √(1.25 + 1e-5)
  const float x[] = {1, 2, 3, 4}, ones[] = {1, 1, 1, 1}, zeros[] = {0, 0, 0, 0};
  float y[4];
  layer_norm(y, x, ones, zeros, 1, 4, 1e-5f);
  const double want[] = {-1.3416354199689269, -0.447211806656309, 0.447211806656309, 1.3416354199689269};
  for (int j = 0; j < 4; ++j) EXPECT_NEAR(y[j], want[j], 1e-6);
  // γ and β: y = γ·x̂ + β
  const float gamma[] = {2, 2, 2, 2}, beta[] = {1, 1, 1, 1};
  layer_norm(y, x, gamma, beta, 1, 4, 1e-5f);
  for (int j = 0; j < 4; ++j) EXPECT_NEAR(y[j], 2 * want[j] + 1, 2e-6);
}

TEST(LayerNorm, ConstantRowIsFinite) {
  const float x[] = {7, 7, 7}, gamma[] = {1, 1, 1}, beta[] = {0.5f, -1, 0};
  float y[3];
  layer_norm(y, x, gamma, beta, 1, 3, 1e-5f);
  for (int j = 0; j < 3; ++j) EXPECT_EQ(y[j], beta[j]);
}

// RMSNorm by hand: x = (1, 2, 3, 4), mean(x²) = 30/4 = 7.5, so y_j = x_j / √(7.5 + eps)·γ_j; no mean is
// taken out and there is no β. And the fast step against its plain twin on random rows.
TEST(LayerNorm, RmsNormHandComputed) {
  const float x[] = {1, 2, 3, 4}, gamma[] = {1, 2, 0.5f, -1};
  float y[4];
  rms_norm(y, x, gamma, 1, 4, 1e-6f);
  for (int j = 0; j < 4; ++j) EXPECT_NEAR(y[j], x[j] / std::sqrt(7.5 + 1e-6) * gamma[j], 1e-6) << j;
  double yd[4];
  const double xd[] = {1, 2, 3, 4};
  reference::rms_norm(yd, xd, gamma, 1, 4, 1e-6);
  for (int j = 0; j < 4; ++j) EXPECT_NEAR(yd[j], x[j] / std::sqrt(7.5 + 1e-6) * gamma[j], 1e-15) << j;
  const float zeros[] = {0, 0, 0, 0};  // a zero row: 0 / √eps, finite
  rms_norm(y, zeros, gamma, 1, 4, 1e-6f);
  for (int j = 0; j < 4; ++j) EXPECT_EQ(y[j], 0.0f);
}

TEST(LayerNorm, RmsNormMatchesReference) {
  const int M = 70, d = 37;  // past one block of rows, an odd width
  const auto x = random_floats(size_t(M) * d, 5, 3.0f), gamma = random_floats(d, 6, 1.5f);
  std::vector<float> fast(x.size());
  rms_norm(fast.data(), x.data(), gamma.data(), M, d, 1e-6f);
  std::vector<double> slow(x.size());
  reference::rms_norm(slow.data(), test::widen(x.data(), x.size()).data(), gamma.data(), M, d, 1e-6);
  double worst = 0;
  for (size_t i = 0; i < x.size(); ++i)
    worst = std::max(worst, std::fabs(fast[i] - slow[i]) / (1 + std::fabs(slow[i])));
  EXPECT_LT(worst, 1e-6);
  rms_norm(fast.data(), fast.data(), gamma.data(), M, d, 1e-6f);  // in place too
  EXPECT_TRUE(std::all_of(fast.begin(), fast.end(), [](float v) { return std::isfinite(v); }));
}

TEST(Activation, HandComputed) {
  std::vector<float> x = {1, -1, 0.5f, -3};
  activation(x.data(), x.size(), Activation::GELU);  // ½x(1 + erf(x/√2))
  const double want[] = {0.8413447460685429, -0.15865525393145707, 0.34573123063700656, -0.00404969409489031};
  for (int i = 0; i < 4; ++i) EXPECT_NEAR(x[i], want[i], 1e-7);
  std::vector<float> t = {1, -1, 0.5f, -3};
  activation(t.data(), t.size(), Activation::GELUTanh);  // ½x(1 + tanh(√(2/π)(x + 0.044715x³)))
  const double want_tanh[] = {0.8411919906082768, -0.15880800939172324, 0.34571400982514394, -0.0036373920817729943};
  for (int i = 0; i < 4; ++i) EXPECT_NEAR(t[i], want_tanh[i], 1e-7);
  std::vector<float> r = {1, -1, 0, -0.0f, 2.5f};
  activation(r.data(), r.size(), Activation::ReLU);
  EXPECT_EQ(r, (std::vector<float>{1, 0, 0, 0, 2.5f}));
}

TEST(AttentionHead, HandComputed) {
  // q = k = I (2×2), v = [[1 2], [3 4]]; scores = I/√2, so each row puts
  // p = e^{1/√2} / (e^{1/√2} + 1) = 0.66976 on its own token.
  const float qkv[] = {1, 0, 1, 0, 1, 2,   // token 0: q | k | v (dh = 2, row stride 6)
                       0, 1, 0, 1, 3, 4};  // token 1
  float out[4];
  std::vector<float> scratch(attention_scratch_floats(2, 2, 2));
  attention_head(out, qkv, qkv + 2, qkv + 4, scratch.data(), 2, 2, 6, 2, /*block=*/2);
  const float* probs = scratch.data();  // block ≥ L: the whole (L, L) table
  const double p = 0.6697615493266569;
  EXPECT_NEAR(probs[0], p, 1e-6);
  EXPECT_NEAR(probs[1], 1 - p, 1e-6);
  EXPECT_NEAR(out[0], 1.6604769013466862, 1e-6);
  EXPECT_NEAR(out[1], 2.6604769013466862, 1e-6);
  EXPECT_NEAR(out[2], 2.3395230986533138, 1e-6);
  EXPECT_NEAR(out[3], 3.3395230986533138, 1e-6);
}

TEST(AttentionHead, MatchesReference) {
  const int L = 37, dh = 12, ld = 3 * 60;
  const auto qkv = random_floats(size_t(L) * ld, 7, 2.0f);
  std::vector<float> fast(size_t(L) * dh), slow(size_t(L) * dh), ps(size_t(L) * L);
  std::vector<float> scratch(attention_scratch_floats(L, dh, L));
  attention_head(fast.data(), qkv.data(), qkv.data() + 60, qkv.data() + 120, scratch.data(), L, dh, ld, dh, L);
  test::attention_head_reference(slow.data(), qkv.data(), qkv.data() + 60, qkv.data() + 120, ps.data(), L, dh, ld, dh);
  EXPECT_LT(max_abs_diff(fast.data(), slow.data(), fast.size()), 1e-5);
  EXPECT_LT(max_abs_diff(scratch.data(), ps.data(), ps.size()), 1e-6);
}

// Blocks of query rows: each block's rows see all L keys, so any block size gives the reference's
// result; the sizes cover one row, a block that does not divide L, the GEMM's 12-row tile and the
// engine's own block, with L past several blocks and past the packed panels' 32 columns.
TEST(Attention, BlocksOfQueryRowsMatchReference) {
  for (int L : {1, 33, 200, 301})
    for (int block : {1, 7, 12, kQueryBlock, L}) {
      const int dh = 16, ld = 3 * 48 + 5;
      const auto qkv = random_floats(size_t(L) * ld, 11 + L, 2.0f);
      std::vector<float> fast(size_t(L) * dh), slow(size_t(L) * dh), ps(size_t(L) * L);
      std::vector<float> scratch(attention_scratch_floats(L, dh, block), -7.0f);
      attention_head(fast.data(), qkv.data(), qkv.data() + 48, qkv.data() + 96, scratch.data(), L, dh, ld, dh, block);
      test::attention_head_reference(slow.data(), qkv.data(), qkv.data() + 48, qkv.data() + 96, ps.data(), L, dh, ld,
                                     dh);
      EXPECT_LT(max_abs_diff(fast.data(), slow.data(), fast.size()), 1e-5) << "L " << L << " block " << block;
      const int last = (L - 1) / std::min(block, L) * std::min(block, L);  // the last block's first row
      EXPECT_LT(max_abs_diff(scratch.data(), ps.data() + size_t(last) * L, size_t(L - last) * L), 1e-6)
          << "L " << L << " block " << block << ": the last block's weights";
    }
}

// ALiBi in the fast head: the bias −m_before·(i − j) behind the query and −m_after·(j − i) ahead of
// it on every block of query rows, as the plain twin adds it; two slopes, one slope both ways, and
// alibi's heads that see one side only (an infinite slope on the other).
TEST(Attention, AlibiBiasMatchesReference) {
  for (const auto& [before, after] : {std::pair<float, float>{0.25f, 0.0625f},
                                      {0.0039f, 0.5f},
                                      {0.25f, 0.25f},
                                      {0.25f, INFINITY},
                                      {INFINITY, 0.015625f}})
    for (int L : {1, 37, 130})
      for (int block : {7, kQueryBlock}) {
        const int dh = 16, ld = 3 * 48;
        const auto qkv = random_floats(size_t(L) * ld, 5 + L, 2.0f);
        std::vector<float> fast(size_t(L) * dh), slow(size_t(L) * dh), ps(size_t(L) * L);
        std::vector<float> scratch(attention_scratch_floats(L, dh, block));
        attention_head(fast.data(), qkv.data(), qkv.data() + 48, qkv.data() + 96, scratch.data(), L, dh, ld, dh, block,
                       before, after);
        test::attention_head_reference(slow.data(), qkv.data(), qkv.data() + 48, qkv.data() + 96, ps.data(), L, dh, ld,
                                       dh, before, after);
        EXPECT_LT(max_abs_diff(fast.data(), slow.data(), fast.size()), 1e-5)
            << "L " << L << " block " << block << " slopes " << before << ", " << after;
      }
}

// T5's buckets in the fast head: a bias by offset, relative[j − i], added to every block of query
// rows as the plain twin adds the same bias given as an (L, L) matrix.
TEST(Attention, RelativeBiasMatchesReference) {
  for (bool scaled : {true, false})  // T5's scores are not divided by √dh (their q and k smaller here)
    for (int L : {1, 37, 130})
      for (int block : {7, kQueryBlock}) {
        const int dh = 16, ld = 3 * 48;
        const auto qkv = random_floats(size_t(L) * ld, 11 + L, scaled ? 2.0f : 0.5f);
        const auto by_offset = random_floats(size_t(2 * L - 1), 3 + L, 3.0f);  // offsets −(L − 1) .. L − 1
        const float* relative = by_offset.data() + (L - 1);
        std::vector<double> bias(size_t(L) * L);
        for (int i = 0; i < L; ++i)
          for (int j = 0; j < L; ++j) bias[size_t(i) * L + j] = relative[j - i];
        std::vector<float> fast(size_t(L) * dh), scratch(attention_scratch_floats(L, dh, block));
        attention_head(fast.data(), qkv.data(), qkv.data() + 48, qkv.data() + 96, scratch.data(), L, dh, ld, dh, block,
                       0.0f, 0.0f, relative, scaled);
        const size_t n = size_t(L - 1) * ld + dh;
        std::vector<double> slow(size_t(L) * dh), probs(size_t(L) * L);
        reference::attention_head(slow.data(), test::widen(qkv.data(), n).data(),
                                  test::widen(qkv.data() + 48, n).data(), test::widen(qkv.data() + 96, n).data(),
                                  probs.data(), L, dh, ld, dh, 0.0, 0.0, bias.data(), scaled);
        double worst = 0, moved = 0;  // and the bias moved the result: without it the outputs differ
        std::vector<float> plain(size_t(L) * dh);
        attention_head(plain.data(), qkv.data(), qkv.data() + 48, qkv.data() + 96, scratch.data(), L, dh, ld, dh, block,
                       0.0f, 0.0f, nullptr, scaled);
        for (size_t k = 0; k < fast.size(); ++k) {
          worst = std::max(worst, std::fabs(fast[k] - slow[k]));
          moved = std::max(moved, double(std::fabs(fast[k] - plain[k])));
        }
        EXPECT_LT(worst, 1e-5) << "L " << L << " block " << block << (scaled ? "" : ", unscaled");
        if (L > 1) {
          EXPECT_GT(moved, 1e-2) << "L " << L;
        }
      }
}

// T5's attention has no 1/√dh: softmax(q·kᵀ + b)·v. By hand, q = k = I (2×2), v = [[1 2], [3 4]]: scores
// = I, so each row puts e / (e + 1) on its own token (RelativeBiasMatchesReference holds the fast head to
// its plain twin unscaled too).
TEST(Attention, UnscaledHandComputed) {
  const float qkv[] = {1, 0, 1, 0, 1, 2,   // token 0: q | k | v (dh = 2, row stride 6)
                       0, 1, 0, 1, 3, 4};  // token 1
  float out[4];
  std::vector<float> scratch(attention_scratch_floats(2, 2, 2));
  attention_head(out, qkv, qkv + 2, qkv + 4, scratch.data(), 2, 2, 6, 2, 2, 0.0f, 0.0f, nullptr, /*scaled=*/false);
  const double p = std::exp(1.0) / (std::exp(1.0) + 1);
  EXPECT_NEAR(scratch[0], p, 1e-6);
  EXPECT_NEAR(out[0], p * 1 + (1 - p) * 3, 1e-6);
  EXPECT_NEAR(out[3], (1 - p) * 2 + p * 4, 1e-6);
  double slow[4], probs[4];
  const std::vector<double> wide = test::widen(qkv, 12);
  reference::attention_head(slow, wide.data(), wide.data() + 2, wide.data() + 4, probs, 2, 2, 6, 2, 0.0, 0.0, nullptr,
                            false);
  EXPECT_NEAR(probs[0], p, 1e-15);
  EXPECT_NEAR(slow[0], p * 1 + (1 - p) * 3, 1e-15);
}

// ALiBi by hand: with q = 0 every score is 0, so row i of the weights is the softmax of the bias alone.
// Two slopes: −0.5·(i − j) for keys behind the query and −0.25·(j − i) for keys ahead of it. A head
// that looks back (slope 0.5 behind, ∞ ahead): the keys ahead get weight 0, exactly, and the first
// query only itself.
TEST(Attention, AlibiWeightsByHand) {
  const int L = 3, dh = 2;
  const double two[L][L] = {{0, -0.25, -0.5}, {-0.5, 0, -0.25}, {-1.0, -0.5, 0}};
  const double back[L][L] = {{0, -INFINITY, -INFINITY}, {-0.5, 0, -INFINITY}, {-1.0, -0.5, 0}};
  for (const auto& [after, bias] : {std::pair<float, const double(*)[L]>{0.25f, two}, {INFINITY, back}}) {
    std::vector<float> qkv(size_t(L) * 3 * dh, 0.0f), out(size_t(L) * dh);
    std::vector<float> scratch(attention_scratch_floats(L, dh, L));
    attention_head(out.data(), qkv.data(), qkv.data() + dh, qkv.data() + 2 * dh, scratch.data(), L, dh, 3 * dh, dh, L,
                   0.5f, after);
    for (int i = 0; i < L; ++i) {
      const double sum = std::exp(bias[i][0]) + std::exp(bias[i][1]) + std::exp(bias[i][2]);
      for (int j = 0; j < L; ++j)
        EXPECT_NEAR(scratch[size_t(i) * L + j], std::exp(bias[i][j]) / sum, 1e-6) << "row " << i << " key " << j;
    }
    if (after == INFINITY) {  // exactly: nothing ahead
      EXPECT_EQ(scratch[0], 1.0f);
      EXPECT_EQ(scratch[1], 0.0f);
      EXPECT_EQ(scratch[size_t(1) * L + 2], 0.0f);
    } else {
      EXPECT_NEAR(scratch[0], 0.4192, 1e-4);  // row 0: 1 / (1 + e^−0.25 + e^−0.5), written out once
    }
  }
}

// RoPE: the fast table and rotation against reference::rope, at positions from 0 and from 1000.
TEST(Rope, RotationMatchesReference) {
  for (int first : {0, 1000})
    for (int dh : {2, 8, 5}) {
      const int S = 40, h = 3, ld = h * dh + 4;
      const auto x = random_floats(size_t(S) * ld, 3 + dh, 2.0f);
      std::vector<float> fast(x), cos(size_t(S) * (dh / 2)), sin(size_t(S) * (dh / 2));
      rope_table(cos.data(), sin.data(), S, dh, 10000.0, first);
      rope(fast.data(), S, ld, h, dh, cos.data(), sin.data());
      std::vector<double> slow(x.begin(), x.end());
      reference::rope(slow.data(), S, ld, h, dh, 10000.0, first);
      for (size_t n = 0; n < x.size(); ++n) ASSERT_NEAR(fast[n], slow[n], 2e-6) << "dh " << dh << " at " << n;
      if (dh % 2) {
        EXPECT_EQ(fast[dh - 1], x[dh - 1]);  // an odd last column is not turned
      }
    }
}

}  // namespace
}  // namespace ordo
