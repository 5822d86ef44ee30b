// tokenizer/charsmap: the checks a sentencepiece model passes before sentencepiece reads it.
#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <string>

#include "tokenizer/charsmap.h"

namespace ordo {
namespace {

TEST(Charsmap, DefaultModelPassesAndBrokenTriesFail) {
  std::ifstream in(std::string(ORDO_SOURCE_DIR) + "/models/default/tokenizer.model", std::ios::binary);
  const std::string model((std::istreambuf_iterator<char>(in)), {});
  EXPECT_EQ(check_sentencepiece_model(model), "");
  EXPECT_NE(check_sentencepiece_model(model.substr(0, model.size() / 2)), "") << "cut mid-field";
  // Root whose children would lie past a 256-unit trie; then a leaf value past the strings.
  std::string blob(4, '\0'), trie(256 * 4, '\0');
  blob[1] = 4;  // 1024 bytes of trie
  uint32_t root = 256u << 10;
  std::memcpy(trie.data(), &root, 4);
  EXPECT_NE(check_charsmap(blob + trie + std::string("A\0", 2)).find("children past"), std::string::npos);
  root = 0;
  const uint32_t a = (uint32_t(0x61 ^ 1) << 10) | (1u << 8) | 0x61, value = 7;
  std::memcpy(trie.data(), &root, 4);
  std::memcpy(trie.data() + 4 * 0x61, &a, 4);
  std::memcpy(trie.data() + 4 * 1, &value, 4);
  EXPECT_NE(check_charsmap(blob + trie + std::string("A\0", 2)).find("past the replacement strings"),
            std::string::npos);
  EXPECT_EQ(check_charsmap(blob + trie + std::string("ABCDEFG\0", 8)), "");
}

}  // namespace
}  // namespace ordo
