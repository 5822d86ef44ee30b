// Fuzzes config.json parsing: any text gives a Config or an InputError, and a Config written back
// out by config_to_json parses to the same values.
#include <cstdint>
#include <cstdlib>
#include <string>

#include <ordo/config.h>
#include <ordo/errors.h>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  ordo::Config c;
  try {
    c = ordo::parse_config(std::string(reinterpret_cast<const char*>(data), size), "fuzz");
  } catch (const ordo::InputError&) {
    return 0;
  }
  const std::string again = ordo::config_to_json(c);
  try {
    if (ordo::config_to_json(ordo::parse_config(again, "written")) != again) std::abort();
  } catch (const ordo::InputError&) {
    std::abort();  // a config ordo accepted and wrote must read back
  }
  return 0;
}
