// engine/strict_json: the JSON reader every config and safetensors header goes through.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <ordo/errors.h>

#include "engine/strict_json.h"

namespace ordo {
namespace {

std::string strict_error(const std::string& text) {
  try {
    parse_strict_json(text.data(), text.data() + text.size(), "f", "x");
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

TEST(StrictJson, NestingLimitIsExact) {
  const auto nested = [](int depth) { return std::string(depth, '[') + std::string(depth, ']'); };
  EXPECT_EQ(strict_error(nested(kMaxJsonDepth)), "");
  EXPECT_EQ(strict_error(nested(kMaxJsonDepth + 1)), "f: x nests deeper than 32 levels");
  EXPECT_EQ(strict_error(std::string(1000000, '[')), "f: x nests deeper than 32 levels") << "stops early";
}

TEST(StrictJson, RepeatedKeysOnlyWithinOneObject) {
  EXPECT_EQ(strict_error(R"({"a": {"k": 1}, "b": {"k": 2}})"), "") << "the same key in two objects is fine";
  EXPECT_EQ(strict_error(R"({"a": {"k": 1, "k": 2}})"), "f: x repeats the key \"k\"");
  EXPECT_EQ(strict_error(R"({"a": 1, "b": [{"a": 1}], "a": 2})"), "f: x repeats the key \"a\"");
}

TEST(StrictJson, NulIsNotTheEnd) {
  EXPECT_EQ(strict_error(std::string("{}\0 garbage", 11)), "f: x is not valid JSON: a NUL byte at byte 2");
}

TEST(StrictJson, BriefAndQuotedStayShortAndOnOneLine) {
  EXPECT_EQ(brief(nlohmann::json::parse("[1,2,3]")), "an array of 3");
  EXPECT_EQ(brief(nlohmann::json("a\nb")), "\"a\\nb\"");
  EXPECT_LE(brief(nlohmann::json(std::string(1000, 'x'))).size(), 43u);
  EXPECT_EQ(quote_name("a\nb"), "\"a\\nb\"");
}

}  // namespace
}  // namespace ordo
