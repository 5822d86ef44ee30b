// A test's scratch directory, shared by the tests of every layer (test_util.h includes it; the tokenizer's
// tests, which link no engine, include it alone).
#pragma once

#include <gtest/gtest.h>
#include <stdlib.h>

#include <cstdlib>
#include <fstream>
#include <string>

namespace ordo::test {

// A fresh directory under the test temp dir, removed by the caller's TempDir destructor.
struct TempDir {
  std::string path;
  TempDir() {
    std::string tmpl = ::testing::TempDir() + "ordo-test-XXXXXX";
    path = ::mkdtemp(tmpl.data());
  }
  ~TempDir() { std::system(("rm -rf '" + path + "'").c_str()); }
  // path/name with `text` in it, replacing what was there.
  void write(const std::string& name, const std::string& text) const {
    std::ofstream(path + "/" + name, std::ios::binary) << text;
  }
};

}  // namespace ordo::test
