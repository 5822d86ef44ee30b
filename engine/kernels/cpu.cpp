#include "engine/kernels/cpu.h"

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>

#include <ordo/errors.h>

#include "engine/kernels/gemm.h"
#include "engine/kernels/reduced.h"

namespace ordo {

namespace {

#if defined(__x86_64__) || defined(__i386__)
// XCR0, the register state the OS saves (only where CPUID says the OS has enabled XSAVE).
uint64_t xcr0() {
  uint32_t lo = 0, hi = 0;
  __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
  return (uint64_t(hi) << 32) | lo;
}

CpuFeatures detect() {
  CpuFeatures f;
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (__get_cpuid(0, &a, &b, &c, &d)) {  // the vendor string, 12 bytes in ebx, edx, ecx
    std::memcpy(f.vendor, &b, 4), std::memcpy(f.vendor + 4, &d, 4), std::memcpy(f.vendor + 8, &c, 4);
    f.intel = std::strcmp(f.vendor, "GenuineIntel") == 0;
  }
  if (!__get_cpuid(1, &a, &b, &c, &d)) return f;
  const bool osxsave = c & (1u << 27), avx = c & (1u << 28), fma = c & (1u << 12);
  if (!osxsave || !avx) return f;
  const uint64_t state = xcr0();
  const bool os_avx = (state & 0x6) == 0x6;                 // XMM and YMM
  const bool os_avx512 = os_avx && (state & 0xE0) == 0xE0;  // opmask, ZMM0-15 upper halves, ZMM16-31
  if (!os_avx || __get_cpuid_max(0, nullptr) < 7) return f;
  __cpuid_count(7, 0, a, b, c, d);
  f.avx2 = b & (1u << 5);
  f.fma = fma;
  if (os_avx512) {
    f.avx512f = b & (1u << 16);
    f.avx512dq = b & (1u << 17);
    f.avx512bw = b & (1u << 30);
    f.avx512vl = b & (1u << 31);
    f.avx512vnni = c & (1u << 11);
  }
  const unsigned subleaves = a;
  if (subleaves >= 1) {
    __cpuid_count(7, 1, a, b, c, d);
    f.avx_vnni = f.avx2 && (a & (1u << 4));
    f.avx512bf16 = os_avx512 && (a & (1u << 5));
  }
  return f;
}
#else
CpuFeatures detect() {
  return {};  // not x86: the plain kernels
}
#endif

Isa chosen() {
  const Isa top = highest_isa();
  const char* env = std::getenv("ORDO_ISA");
  if (!env || !*env) return top;
  const std::string name = env;
  Isa want;
  if (name == "scalar")
    want = Isa::Scalar;
  else if (name == "avx2")
    want = Isa::Avx2;
  else if (name == "avx512")
    want = Isa::Avx512;
  else
    throw InputError("ORDO_ISA=" + name, "must be scalar, avx2 or avx512");
  if (int(want) > int(top))
    throw InputError("ORDO_ISA=" + name, want == Isa::Avx512 ? "this CPU has no AVX-512 (F, BW, DQ and VL)"
                                                             : "this CPU has no AVX2 with FMA");
  return want;
}

bool prepack_chosen() {
  const char* env = std::getenv("ORDO_PREPACK");
  if (!env || !*env) return isa_level() == Isa::Avx512 && cpu_features().intel;
  const std::string value = env;
  if (value != "0" && value != "1") throw InputError("ORDO_PREPACK=" + value, "must be 0 or 1");
  return value == "1" && isa_level() != Isa::Scalar;
}

}  // namespace

const CpuFeatures& cpu_features() {
  static const CpuFeatures f = detect();
  return f;
}

Isa highest_isa() {
  const CpuFeatures& f = cpu_features();
  if (f.avx512f && f.avx512bw && f.avx512dq && f.avx512vl && f.avx2 && f.fma) return Isa::Avx512;
  if (f.avx2 && f.fma) return Isa::Avx2;
  return Isa::Scalar;
}

Isa isa_level() {
  static const Isa level = chosen();  // a throw leaves it unset: the next call throws again
  return level;
}

bool prepack_weights() {
  static const bool on = prepack_chosen();  // a throw leaves it unset: the next call throws again
  return on;
}

const char* isa_name(Isa level) {
  return level == Isa::Avx512 ? "avx512" : level == Isa::Avx2 ? "avx2" : "scalar";
}

std::string cpu_feature_names() {
  const CpuFeatures& f = cpu_features();
  std::string s;
  auto add = [&](bool has, const char* name) {
    if (has) s += (s.empty() ? "" : " ") + std::string(name);
  };
  add(f.avx2, "avx2"), add(f.fma, "fma"), add(f.avx_vnni, "avx-vnni");
  add(f.avx512f, "avx512f"), add(f.avx512bw, "avx512bw"), add(f.avx512dq, "avx512dq"), add(f.avx512vl, "avx512vl");
  add(f.avx512vnni, "avx512vnni"), add(f.avx512bf16, "avx512bf16");
  return std::string(*f.vendor ? f.vendor : "unknown vendor") + ": " + (s.empty() ? "none beyond x86-64" : s);
}

}  // namespace ordo

namespace ordo {

std::string kernels_chosen() {
  const Isa level = isa_level();
  std::string s = std::string("level ") + isa_name(level) + " (highest this CPU allows: " + isa_name(highest_isa()) +
                  "; ORDO_ISA=scalar|avx2|avx512 forces a lower one)\n";
  s += "f32 products: ";
  if (prepack_weights())
    s += std::string("ordo's ") + (level == Isa::Avx512 ? "AVX-512" : "AVX2") +
         " prepacked kernel up to 512 rows (the weights packed once, at the first f32 pass; "
         "ORDO_PREPACK=0 turns it off), then packed GEMM\n";
  else if (level == Isa::Avx512)
    s += "ordo's AVX-512 kernels (small-M up to 8 rows, weight streaming up to 256 (AVX2 tiles up to 16), then "
         "packed GEMM)\n";
  else if (level == Isa::Avx2)
    s += "ordo's AVX2 kernels (small-M up to 8 rows, weight streaming up to 256, then packed GEMM)\n";
  else
    s += "OpenBLAS's sgemm\n";
  s += std::string("softmax, LayerNorm, GELU: ") +
       (level == Isa::Avx512 ? "AVX-512"
        : level == Isa::Avx2 ? "AVX2"
                             : "plain loops") +
       "\n";
  if (!have_onednn()) return s + "int8, bf16 products: none (this build has no oneDNN)\n";
  s += "int8 products: " + reduced_kernel_name(ComputeType::Int8) + "\n";
  try {
    s += "bf16 products: " + reduced_kernel_name(ComputeType::BF16) + "\n";
  } catch (const InputError& e) {
    s += std::string("bf16 products: none: ") + e.what() + "\n";
  }
  return s;
}

}  // namespace ordo
