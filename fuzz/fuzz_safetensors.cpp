// Fuzzes the safetensors reader: any bytes either parse into tensors that lie inside the buffer,
// or give an InputError.
#include <cstdint>
#include <cstdlib>

#include <ordo/engine/safetensors.h>
#include <ordo/errors.h>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    std::map<std::string, std::string> metadata;
    const auto tensors = ordo::parse_safetensors(data, size, "fuzz", &metadata);
    // Read every byte each tensor claims: a pointer past the input is an AddressSanitizer report.
    unsigned sum = 0;
    for (const auto& t : tensors) {
      if (t.data < data || t.data + (t.end - t.begin) > data + size) std::abort();
      for (uint64_t i = 0; i < t.end - t.begin; ++i) sum += t.data[i];
    }
    volatile unsigned sink = sum;
    (void)sink;
  } catch (const ordo::InputError&) {
  }
  return 0;
}
