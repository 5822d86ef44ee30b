// The small-M kernel at AVX2 and FMA (engine/kernels/small_m_body.h); compiled with that instruction
// set's flags (engine/CMakeLists.txt) and called only where engine/kernels/cpu.h allows it.
#define ORDO_KERNEL_NS avx2
#include "engine/kernels/small_m_body.h"
