// ordo: the x86 SIMD intrinsics, for the kernels that use them (engine/ops.cpp, engine/gemm.cpp).
#pragma once

#if defined(__AVX2__) || defined(__AVX512F__)
// GCC 12's AVX-512 headers trip -Wuninitialized on their own _mm512_undefined_ps (GCC bug 105593).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#if !defined(__clang__)  // a GCC-only warning group
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <immintrin.h>
#pragma GCC diagnostic pop
#endif
