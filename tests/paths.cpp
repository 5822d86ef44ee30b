// ordo tests: the three paths of tests/paths.h, given by tests/CMakeLists.txt to this file only.
#include "paths.h"

namespace ordo::test {
const char* ordo_binary() {
  return ORDO_BINARY_PATH;
}
const char* source_dir() {
  return ORDO_SOURCE_DIR_PATH;
}
const char* default_model() {
  return ORDO_DEFAULT_MODEL_PATH;
}
}  // namespace ordo::test
