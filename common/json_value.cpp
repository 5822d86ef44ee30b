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

namespace {

std::string too_deep() {
  return "nests deeper than " + std::to_string(kMaxJsonDepth) + " levels";
}

// nlohmann's DOM builder (what json::parse builds with), the depth bounded. Without a callback the
// plain one, not nlohmann's callback builder: that one looks through the whole parent for a
// discarded member at the end of each nested value, which over 200,000 objects in one object (a
// safetensors header of as many tensors) is quadratic. (The tokenizers' parses with a callback use
// that one: their callbacks take the large parts, vocabulary and merges, out as they are parsed.)
class BoundedBuilder : public nlohmann::detail::json_sax_dom_parser<json> {
 public:
  BoundedBuilder(json& value, const std::string& where, bool allow_exceptions)
      : json_sax_dom_parser(value, allow_exceptions), where_(where) {}
  bool start_object(std::size_t n) { return deeper() && json_sax_dom_parser::start_object(n); }
  bool start_array(std::size_t n) { return deeper() && json_sax_dom_parser::start_array(n); }
  bool end_object() {
    --depth_;
    return json_sax_dom_parser::end_object();
  }
  bool end_array() {
    --depth_;
    return json_sax_dom_parser::end_array();
  }

 private:
  bool deeper() {
    if (++depth_ > kMaxJsonDepth) throw InputError(where_, too_deep());
    return true;
  }
  const std::string& where_;
  int depth_ = 0;
};

// Parses with `builder` into `value` as json::parse does (nlohmann's parser::parse).
template <class Builder>
void build(JsonValue& value, const char* begin, const char* end, const std::string& where, Builder& builder) {
  try {
    json::sax_parse(begin, end, &builder);
  } catch (const json::exception& e) {
    throw InputError(where, std::string("is not valid JSON (") + e.what() + ")");
  }
  if (builder.is_errored()) {
    JsonValue::release(value);
    static_cast<json&>(value) = json(json::value_t::discarded);
  }
}

}  // namespace

JsonValue parse_json_value(const char* begin, const char* end, const std::string& where,
                           const json::parser_callback_t& callback, bool allow_exceptions) {
  JsonValue value;
  if (!callback) {
    BoundedBuilder builder(value, where, allow_exceptions);
    build(value, begin, end, where, builder);
    return value;
  }
  // the callback at every event also bounds the depth
  const json::parser_callback_t checked = [&](int depth, json::parse_event_t event, json& parsed) {
    if (depth > kMaxJsonDepth) throw InputError(where, too_deep());
    return callback(depth, event, parsed);
  };
  nlohmann::detail::json_sax_dom_callback_parser<json> builder(value, checked, allow_exceptions);
  build(value, begin, end, where, builder);
  if (!value.is_discarded() || builder.is_errored()) return value;
  static_cast<json&>(value) = nullptr;  // the whole value dropped by the callback: null, as json::parse has it
  return value;
}

}  // namespace ordo
