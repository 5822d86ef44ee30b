#include "common/json_value.h"

#include <ordo/errors.h>

namespace ordo {

using nlohmann::json;

void JsonValue::release(json& value) noexcept {
  if (value.is_array()) {
    json::array_t& items = value.get_ref<json::array_t&>();
    for (json& item : items) release(item);
    items.clear();  // each item empty or a scalar: freed without allocating
  } else if (value.is_object()) {
    json::object_t& members = value.get_ref<json::object_t&>();
    for (auto& member : members) release(member.second);
    members.clear();
  }
}

JsonValue parse_json_value(const char* begin, const char* end, const std::string& where,
                           const json::parser_callback_t& callback, bool allow_exceptions) {
  // What json::parse does with a callback (nlohmann's parser::parse), into a value of our own; the
  // callback at every event also bounds the depth, which keeps release()'s recursion short.
  const json::parser_callback_t checked = [&](int depth, json::parse_event_t event, json& parsed) {
    if (depth > kMaxJsonDepth)
      throw InputError(where, "nests deeper than " + std::to_string(kMaxJsonDepth) + " levels");
    return !callback || callback(depth, event, parsed);
  };
  JsonValue value;
  nlohmann::detail::json_sax_dom_callback_parser<json> build(value, checked, allow_exceptions);
  try {
    json::sax_parse(begin, end, &build);
  } catch (const json::exception& e) {
    throw InputError(where, std::string("is not valid JSON (") + e.what() + ")");
  }
  if (build.is_errored()) {
    JsonValue::release(value);
    static_cast<json&>(value) = json(json::value_t::discarded);
  } else if (value.is_discarded()) {  // the whole value dropped by the callback: null, as json::parse has it
    static_cast<json&>(value) = nullptr;
  }
  return value;
}

}  // namespace ordo
