#include "common/json_value.h"

#include <string>
#include <utility>
#include <vector>

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

// What json::parse(text, callback) builds, built here, the depth bounded: nlohmann's callback builder
// (json_sax_dom_callback_parser) calls the callback at the same events with the same depths, but at the
// end of every nested object it looks through the whole parent for a dropped value, so a file of
// 100,000 added tokens (objects in one array) took seconds and one of a million much longer; and a
// value dropped after its key was kept stayed in its object as a discarded placeholder. Here a value
// the callback drops leaves nothing behind, found without a search: it is the last element of its
// array, or the member of the key just read. Without a callback every value is kept (nlohmann's plain
// builder, json_sax_dom_parser, with the depth bounded).
class Builder {
 public:
  Builder(json& root, const json::parser_callback_t& callback, bool allow_exceptions, const std::string& where)
      : root_(root), callback_(callback), allow_exceptions_(allow_exceptions), where_(where) {}

  bool null() { return value(nullptr); }
  bool boolean(bool v) { return value(v); }
  bool number_integer(json::number_integer_t v) { return value(v); }
  bool number_unsigned(json::number_unsigned_t v) { return value(v); }
  bool number_float(json::number_float_t v, const std::string&) { return value(v); }
  bool string(std::string& v) { return value(std::move(v)); }
  bool binary(json::binary_t& v) { return value(std::move(v)); }
  bool start_object(std::size_t) { return open(json::value_t::object, json::parse_event_t::object_start); }
  bool start_array(std::size_t) { return open(json::value_t::array, json::parse_event_t::array_start); }
  bool end_object() { return close(json::parse_event_t::object_end); }
  bool end_array() { return close(json::parse_event_t::array_end); }

  bool key(std::string& name) {
    Level& level = open_.back();
    level.key_kept = true;
    if (callback_) {
      json k(name);
      level.key_kept = callback_(depth(), json::parse_event_t::key, k);
    }
    if (level.key_kept) level.key = std::move(name);
    return true;
  }

  template <class Exception>
  bool parse_error(std::size_t, const std::string&, const Exception& e) {
    errored_ = true;
    if (allow_exceptions_) throw e;
    return false;
  }
  bool is_errored() const { return errored_; }

 private:
  struct Level {
    json* container;  // nullptr: dropped by the callback, or inside a dropped value
    bool kept;        // what the callback said at its start (its values are not offered once this is false)
    bool key_kept = false;
    std::string key;  // the member being read, when it is an object
  };

  int depth() const { return int(open_.size()); }
  bool keep(json::parse_event_t event, json& parsed) { return !callback_ || callback_(depth(), event, parsed); }

  // where a kept value goes: the root, the end of its array, or its object's member; nullptr to drop it
  json* place(json&& v) {
    if (open_.empty()) return &(root_ = std::move(v));
    Level& parent = open_.back();
    if (!parent.container) return nullptr;
    if (parent.container->is_array()) {
      json::array_t& items = parent.container->get_ref<json::array_t&>();
      items.push_back(std::move(v));
      return &items.back();
    }
    if (!parent.key_kept) return nullptr;
    json::object_t& members = parent.container->get_ref<json::object_t&>();
    return &members.insert_or_assign(parent.key, std::move(v)).first->second;  // a repeated key: the last value
  }

  template <class V>
  bool value(V&& v) {
    if (!open_.empty() && !open_.back().kept) return true;
    json parsed(std::forward<V>(v));
    if (keep(json::parse_event_t::value, parsed)) place(std::move(parsed));
    return true;
  }

  bool open(json::value_t type, json::parse_event_t event) {
    if (depth() >= kMaxJsonDepth) throw InputError(where_, too_deep());
    json unused(json::value_t::discarded);  // what nlohmann's callback is shown at a start
    const bool kept = keep(event, unused);
    open_.push_back(Level{kept ? place(json(type)) : nullptr, kept, false, {}});
    return true;
  }

  bool close(json::parse_event_t event) {
    json* const container = open_.back().container;
    open_.pop_back();  // the callback is told the depth of the closed value's parent, as at its start
    const bool dropped = container && !keep(event, *container);
    if (!dropped) return true;
    if (open_.empty()) {
      root_ = json(json::value_t::discarded);  // parse_json_value makes it null, as json::parse does
    } else if (open_.back().container->is_array()) {
      open_.back().container->get_ref<json::array_t&>().pop_back();
    } else {
      open_.back().container->get_ref<json::object_t&>().erase(open_.back().key);
    }
    return true;
  }

  json& root_;
  const json::parser_callback_t& callback_;
  const bool allow_exceptions_;
  const std::string& where_;
  std::vector<Level> open_;
  bool errored_ = false;
};

}  // namespace

JsonValue parse_json_value(const char* begin, const char* end, const std::string& where,
                           const json::parser_callback_t& callback, bool allow_exceptions) {
  JsonValue value;
  Builder builder(value, callback, allow_exceptions, where);
  try {
    json::sax_parse(begin, end, &builder);
  } catch (const json::exception& e) {
    throw InputError(where, std::string("is not valid JSON (") + e.what() + ")");
  }
  if (builder.is_errored()) {
    JsonValue::release(value);
    static_cast<json&>(value) = json(json::value_t::discarded);
  } else if (value.is_discarded()) {
    static_cast<json&>(value) = nullptr;  // the whole value dropped by the callback: null, as json::parse has it
  }
  return value;
}

}  // namespace ordo
