// ordo tests: where the built ordo, the source tree and the default model are. The paths are
// compiled into tests/paths.cpp alone, so that a test file's object does not depend on where the
// tree was cloned (a compiler cache can then reuse it from a clone in another directory).
#pragma once

namespace ordo::test {
const char* ordo_binary();    // the built `ordo` executable
const char* source_dir();     // the source tree's root
const char* default_model();  // the default model's directory in the build tree
}  // namespace ordo::test

#define ORDO_BINARY (::ordo::test::ordo_binary())
#define ORDO_SOURCE_DIR (::ordo::test::source_dir())
#define ORDO_DEFAULT_MODEL (::ordo::test::default_model())
