// ordo pe: the sinusoidal encodings' variants and their properties, checked with numbers.
//
// P_t is the encoding of position t, a row of d values. Its pairs (sin, cos) share one frequency
// w_i; the paper's frequencies are w_i = 1 / base^(2i/d), i = 0 .. d/2−1, so the wavelengths
// 2π / w_i run from 2π to just under base·2π.
#pragma once

#include <string>
#include <vector>

#include <ordo/config.h>

namespace ordo::teach {

enum class PeVariant {
  Paper,          // sin at 2i, cos at 2i+1, w_i = base^(−2i/d)               [Vaswani et al. 2017, §3.5]
  Split,          // the same numbers in the layout [sin | cos]
  Tensor2Tensor,  // w_i = exp(−i · ln(base) / (d/2 − 1)), layout [sin | cos]  (tensor2tensor get_timing_signal_1d)
  DoubledExponent,  // w_i = base^(−2·(2i)/d): "2i" written where the loop index already steps by 2
};
const std::vector<PeVariant>& all_variants();
const char* to_string(PeVariant v);
const char* frequency_rule(PeVariant v);  // w_i, as text: "1 / base^(2i/d)"
bool parse_variant(const std::string& name, PeVariant* out);
PeLayout layout_of(PeVariant v);

// The frequencies w_i, i = 0 .. d/2−1, in double (d even).
std::vector<double> frequencies(PeVariant v, int d, double base);

// The (N, d) table of a variant, computed in double and stored as float, as the engine stores its
// own. Paper and Split are exactly the engine's sinusoidal_positions().
std::vector<float> pe_table(PeVariant v, int N, int d, double base);

// Rope's angles (N, dh/2), in double: position t turns pair i = (2i, 2i+1) of each head's q and k by
// t·θ_i, θ_i = base^(−2i/dh)   [Su et al. 2021, RoFormer, eq. 15]
std::vector<double> rope_angles(int N, int dh, double base);

// Where pair i's sine and cosine live in a row.
inline int sin_dim(PeLayout layout, int i) {
  return layout == PeLayout::Interleaved ? 2 * i : i;
}
inline int cos_dim(PeLayout layout, int i, int d) {
  return layout == PeLayout::Interleaved ? 2 * i + 1 : d / 2 + i;
}

// One property, measured: `error` is the worst deviation found, `tolerance` what float rounding
// allows. `value` and `detail` carry what a reader wants to see beside it.
struct Property {
  std::string name;   // "norm"
  std::string claim;  // "|P_t|^2 = d/2"
  double error = 0;   // worst case over everything checked
  double tolerance = 0;
  bool holds = false;  // error <= tolerance
  std::string detail;  // e.g. "smallest distance 1.23 between t=3 and t=10"
};

struct PropertyReport {
  std::vector<Property> properties;
  std::string offsets_checked;  // which k the pairwise checks covered
  bool all_hold() const;
};

// Checks a table P (N, d), d even, N >= 2, against the properties of a sinusoidal encoding
// whose pairs sit in `layout` and turn at the frequencies `w` (d/2 of them):
//   range       every value in [−1, 1]
//   norm        |P_t|² = d/2                         (sin² + cos² = 1 in each of the d/2 pairs)
//   rotation    P_{t+k} = R_k · P_t, R_k block-diagonal with blocks [[cos w_i k, sin w_i k], [−sin w_i k, cos w_i k]]
//   dot         <P_t, P_{t+k}> = Σ_i cos(w_i k): depends on k, not on t
//   distinct    min_{s<t<N} |P_s − P_t| > 0
//   wavelengths 2π / w_i measured from the table (angle of pair i between t = 0 and 1) match the
//               formula, run from 2π to at most base·2π, and grow by one constant ratio
// Pairs (t, t+k) are checked for every t and every k when N ≤ 1024, else for k = 1 .. 512 and
// every power of two and N−1.
PropertyReport check_pe_properties(const float* P, int N, int d, PeLayout layout, const std::vector<double>& w,
                                   double base);

}  // namespace ordo::teach
