// ordo: what this CPU can run, asked once, and the level of kernels the engine runs on it.
//
// An instruction set is usable when the CPU reports it (cpuid) and the operating system saves
// its registers across a switch of threads (xgetbv: XCR0 holds the state the OS enables; AVX needs
// the SSE and AVX state, AVX-512 the opmask and upper-ZMM state as well). The level is the
// highest the CPU allows, or a lower one asked for with the environment variable
//   ORDO_ISA=scalar|avx2|avx512
// so that every kernel can be run and measured on one machine. A level the CPU does not allow is
// an InputError naming the instructions it lacks.
#pragma once

#include <string>

namespace ordo {

enum class Isa {
  Scalar,  // baseline x86-64: plain loops, OpenBLAS for the matrix products
  Avx2,    // AVX2 and FMA (x86-64-v3's vector part)
  Avx512,  // AVX-512 F, BW, DQ and VL (x86-64-v4)
};

struct CpuFeatures {
  bool avx2 = false, fma = false;                                              // with the OS's AVX state
  bool avx512f = false, avx512bw = false, avx512dq = false, avx512vl = false;  // with the OS's AVX-512 state
  bool avx512vnni = false, avx512bf16 = false;  // int8 (vpdpbusd) and bf16 (vdpbf16ps) dot products
  bool avx_vnni = false;                        // vpdpbusd at 256 bits, without AVX-512
  char vendor[13] = {};                         // cpuid's vendor string: "GenuineIntel", "AuthenticAMD", ...
  bool intel = false;                           // it is "GenuineIntel"
};

// The CPU's features, asked once.
const CpuFeatures& cpu_features();
// The highest level the CPU allows.
Isa highest_isa();
// The level the kernels run at: ORDO_ISA's, or the highest. Read once; an unknown name or a level
// above the highest is an InputError ("ORDO_ISA=avx512: this CPU has no AVX-512 (F, BW, DQ, VL)").
Isa isa_level();
// Whether the kernels run at `level` or above.
inline bool isa_at_least(Isa level) {
  return int(isa_level()) >= int(level);
}
const char* isa_name(Isa level);  // "scalar", "avx2", "avx512"
// Whether the engine packs the f32 weights of its products once, at the first f32 pass, and runs
// them through linear_prepacked (engine/kernels/gemm.h) up to 512 rows of x: by default at AVX-512
// on Intel, where it was measured (docs/performance.md: 0.69 of the time of the other kernels at 8
// rows, 0.75–0.85 from 16 to 512); the packed copy takes as much memory again as those weights.
// The environment variable ORDO_PREPACK=1 or 0 turns it on (at AVX2 or above) or off, so that both
// can be measured on one machine; another value is an InputError. Read once.
bool prepack_weights();
// The vendor and the features as one line, e.g.
// "GenuineIntel: avx2 fma avx512f avx512bw avx512dq avx512vl avx512vnni avx512bf16".
std::string cpu_feature_names();
// The kernels chosen at this level, one line per kind of work, for `ordo info` and `ordo bench`.
std::string kernels_chosen();

}  // namespace ordo
