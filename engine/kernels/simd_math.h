// ordo: the polynomials of the row kernels' e^x and erfc (rows_avx2.cpp, rows_avx512.cpp), written
// once against simd.h's Vec and compiled in each of those files at its width, so that the two
// instruction sets compute the same bits lane for lane.
#pragma once

#include "engine/kernels/simd.h"

namespace ordo {
namespace ORDO_SIMD_NS {

// e^x = 2^n · e^r with n = round(x / ln 2) and r = x − n·ln 2, |r| ≤ ln 2 / 2. This is e^r: ln 2
// taken off in two parts (the high part's few bits make n·0.693359375 exact), then Cephes' expf
// polynomial, e^r ≈ 1 + r + r²·P(r) with P of degree 5 (relative error ≈ 1e-7). Applying 2^n is the
// caller's (each instruction set has its own way).
inline Vec exp_remainder(Vec x, Vec n) {
  Vec r = vfnma(n, vset(0.693359375f), x);  // ln 2 in two parts: exact high bits,
  r = vfnma(n, vset(-2.12194440e-4f), r);   // then the rest
  Vec p = vset(1.9875691500e-4f);
  for (float c : {1.3981999507e-3f, 8.3334519073e-3f, 4.1665795894e-2f, 1.6666665459e-1f, 5.0000001201e-1f})
    p = vfma(p, r, vset(c));
  return vfma(vmul(p, r), r, vadd(r, vset(1.0f)));  // p·r² + r + 1
}

// erfc(z) = t·e^E for z ≥ 0, with t = 1/(1 + z/2) and E = −z² − 1.26551223 + t·P(t), P of degree 8:
// the Chebyshev fit in Press et al., Numerical Recipes, §6.2 (erfcc), fractional error below
// 1.2·10⁻⁷ for every z ≥ 0. This is E.
inline Vec erfc_exponent(Vec z, Vec t) {
  Vec p = vset(0.17087277f);
  for (float c : {-0.82215223f, 1.48851587f, -1.13520398f, 0.27886807f, -0.18628806f, 0.09678418f, 0.37409196f,
                  1.00002368f, -1.26551223f})
    p = vfma(p, t, vset(c));
  return vfnma(z, z, p);
}

}  // namespace ORDO_SIMD_NS
}  // namespace ordo
