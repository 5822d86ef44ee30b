// parse_json_value against nlohmann's json::parse: the same callback events, the same values kept.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include <ordo/errors.h>

#include "common/json_value.h"

namespace ordo {
namespace {

using nlohmann::json;
using Event = json::parse_event_t;

// every call of a callback: its depth, its event and what it was shown (keys and values; "-" at a start)
struct Recorder {
  std::vector<std::string> calls;
  json::parser_callback_t callback(const json::parser_callback_t& decide = nullptr) {
    return [this, decide](int depth, Event event, json& parsed) {
      const bool start = event == Event::object_start || event == Event::array_start;
      calls.push_back(std::to_string(depth) + " " + std::to_string(int(event)) + " " + (start ? "-" : parsed.dump()));
      return !decide || decide(depth, event, parsed);
    };
  }
};

const char* const kTexts[] = {
    R"(5)",
    R"("a")",
    R"([])",
    R"({})",
    R"({"a": 1, "b": [true, null, 2.5, "x"], "c": {"d": {"e": [[], {}]}}, "f": -7})",
    R"([{"id": 1, "content": "<s>"}, {"id": 2, "content": "</s>"}, [1, [2, [3]]]])",
    R"({"model": {"vocab": {"a": 0, "b": 1}, "merges": ["a b", ["a", "b"]]}, "k": "v", "k": "w"})",
};

TEST(JsonValue, CallsTheCallbackAsJsonParseDoesAndKeepsTheSameValue) {
  for (const char* text : kTexts) {
    Recorder ours, theirs;
    const JsonValue value = parse_json_value(text, "f", ours.callback());
    const json expected = json::parse(text, theirs.callback());
    EXPECT_EQ(ours.calls, theirs.calls) << text;
    EXPECT_EQ(static_cast<const json&>(value), expected) << text;
    EXPECT_EQ(static_cast<const json&>(parse_json_value(text, "f")), json::parse(text)) << text;
  }
}

TEST(JsonValue, ADroppedValueLeavesNothingBehind) {
  const auto parse = [](const std::string& text, const json::parser_callback_t& decide) {
    return static_cast<const json&>(parse_json_value(text, "f", decide)).dump();
  };
  // objects dropped at their end, in an array (as a tokenizer's added tokens could be)
  const auto drop_marked = [](int, Event event, json& parsed) {
    return !(event == Event::object_end && parsed.contains("drop"));
  };
  EXPECT_EQ(parse(R"([{"a": 1}, {"drop": 1}, {"b": 2}, {"drop": 2}])", drop_marked), R"([{"a":1},{"b":2}])");
  EXPECT_EQ(parse(R"({"x": {"drop": 1}, "y": {"z": 3}})", drop_marked), R"({"y":{"z":3}})");
  EXPECT_EQ(parse(R"({"drop": 1})", drop_marked), "null") << "the whole value dropped: null, as json::parse has it";
  // a value dropped after its key was kept: json::parse leaves a discarded value under the key
  const auto drop_twos = [](int, Event event, json& parsed) { return !(event == Event::value && parsed == 2); };
  EXPECT_EQ(parse(R"({"a": 1, "b": 2, "c": [2, 3]})", drop_twos), R"({"a":1,"c":[3]})");
  EXPECT_TRUE(json::parse(R"({"a": 1, "b": 2})", drop_twos)["b"].is_discarded()) << "nlohmann's, for comparison";
  // a dropped key: its value, nested or not, is not built
  const auto drop_key_b = [](int, Event event, json& parsed) { return !(event == Event::key && parsed == "b"); };
  EXPECT_EQ(parse(R"({"a": 1, "b": {"c": [1, 2]}, "d": 4})", drop_key_b), R"({"a":1,"d":4})");
  // a dropped array at its start: nothing in it is offered as a value
  int offered = 0;
  const auto drop_arrays = [&offered](int, Event event, json&) {
    offered += event == Event::value;
    return event != Event::array_start;
  };
  EXPECT_EQ(parse(R"({"a": [1, 2, 3], "b": 4})", drop_arrays), R"({"b":4})");
  EXPECT_EQ(offered, 1);
}

TEST(JsonValue, ManyObjectsInOneArrayAreKeptInOrder) {
  // nlohmann's callback builder looks through the whole array at the end of each object in it; this
  // many took it tens of seconds. One pass here.
  constexpr int kObjects = 200000;
  std::string text = "[";
  for (int i = 0; i < kObjects; ++i) text += (i ? ",{\"id\":" : "{\"id\":") + std::to_string(i) + "}";
  text += "]";
  int ends = 0;
  const JsonValue value = parse_json_value(text, "f", [&ends](int, Event event, json&) {
    ends += event == Event::object_end;
    return true;
  });
  ASSERT_TRUE(value.is_array());
  ASSERT_EQ(value.size(), size_t(kObjects));
  EXPECT_EQ(ends, kObjects);
  EXPECT_EQ(value[kObjects - 1]["id"], kObjects - 1);
}

TEST(JsonValue, NestingIsBoundedWithAndWithoutACallback) {
  const auto nested = [](int levels) { return std::string(levels, '[') + std::string(levels, ']'); };
  const json::parser_callback_t keep_all = [](int, Event, json&) { return true; };
  for (const json::parser_callback_t& callback : {json::parser_callback_t(), keep_all}) {
    EXPECT_NO_THROW(parse_json_value(nested(kMaxJsonDepth), "f", callback));
    try {
      parse_json_value(nested(kMaxJsonDepth + 1), "f", callback);
      ADD_FAILURE() << "33 levels were read";
    } catch (const InputError& e) {
      EXPECT_STREQ(e.what(), "f: nests deeper than 32 levels");
    }
  }
}

TEST(JsonValue, InvalidTextIsAnInputErrorOrDiscarded) {
  try {
    parse_json_value(R"({"a": [1, 2})", "f");
    ADD_FAILURE() << "invalid JSON was read";
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()).rfind("f: is not valid JSON (", 0), 0u) << e.what();
  }
  EXPECT_TRUE(parse_json_value(R"({"a": [1, 2})", "f", nullptr, false).is_discarded());
}

}  // namespace
}  // namespace ordo
