// The entry points of the x86 kernels (*_avx2.cpp, *_avx512.cpp) for a build for another machine
// (WebAssembly: tools/web/CMakeLists.txt), where engine/kernels/cpu.h reports the scalar level and
// the dispatchers never call them. Each says so if it ever is.
#include <stdexcept>
#include <string>

#include "engine/kernels/bf16_avx512.h"
#include "engine/kernels/gemm.h"
#include "engine/kernels/int8_vnni.h"
#include "engine/kernels/reduced_avx2.h"
#include "engine/kernels/rows.h"
#include "engine/kernels/small_m.h"

namespace ordo {
namespace {
[[noreturn]] void none(const char* what) {
  throw std::logic_error(std::string(what) + ": this build has no x86 kernels");
}
}  // namespace

// gemm.h's and rows.h's tables: empty, never chosen
const GemmKernels kGemmAvx512{}, kGemmAvx2{};
const RowKernels kRowsAvx512{}, kRowsAvx2{};

namespace avx512 {
void linear_small_m(float*, const float*, const float*, const float*, int, int, int) {
  none("avx512::linear_small_m");
}
void quantize_rows_u8(uint8_t*, float*, const float*, int, int, int) {
  none("avx512::quantize_rows_u8");
}
void quantize_rows16(int16_t*, float*, const float*, int, int, int, int) {
  none("avx512::quantize_rows16");
}
void int8_vnni_products(int32_t*, const uint8_t*, const PackedInt8&, int, int) {
  none("avx512::int8_vnni_products");
}
void int8_vnni_linear(float*, const uint8_t*, const float*, const PackedInt8&, const float*, const float*, int, int,
                      int) {
  none("avx512::int8_vnni_linear");
}
void int16_vnni(int32_t*, float*, const int16_t*, const float*, const int16_t*, const float*, const float*, int, int,
                int, int, int) {
  none("avx512::int16_vnni");
}
void bf16_dot_linear(float*, const uint16_t*, const PackedBf16&, const float*, int, int) {
  none("avx512::bf16_dot_linear");
}
}  // namespace avx512

namespace avx2 {
void linear_small_m(float*, const float*, const float*, const float*, int, int, int) {
  none("avx2::linear_small_m");
}
void int8_products(int32_t*, float*, const int16_t*, const float*, const int8_t*, const float*, const float*, int, int,
                   int, int, int) {
  none("avx2::int8_products");
}
void quantize_rows16(int16_t*, float*, const float*, int, int, int, int) {
  none("avx2::quantize_rows16");
}
void int16_products(int32_t*, float*, const int16_t*, const float*, const int16_t*, const float*, const float*, int,
                    int, int, int, int) {
  none("avx2::int16_products");
}
void bf16_linear(float*, const float*, const uint16_t*, const float*, int, int, int, int) {
  none("avx2::bf16_linear");
}
}  // namespace avx2

}  // namespace ordo
