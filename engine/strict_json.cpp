#include "engine/strict_json.h"

#include <set>
#include <vector>

#include <ordo/errors.h>

namespace ordo {

using nlohmann::json;

namespace {

// nlohmann's messages start with "[json.exception.parse_error.101] "; keep what follows.
std::string json_message(const std::exception& e) {
  std::string m = e.what();
  if (!m.empty() && m[0] == '[') {
    const auto close = m.find("] ");
    if (close != std::string::npos) m = m.substr(close + 2);
  }
  return m;
}

std::string cut(std::string s, size_t n) {
  if (s.size() > n) s = s.substr(0, n) + "...";
  return s;
}

}  // namespace

json parse_strict_json(const char* begin, const char* end, const std::string& where, const std::string& what) {
  const std::string subject = what.empty() ? "JSON" : what;
  std::vector<std::set<std::string>> open_objects;  // the keys seen so far in each enclosing object
  auto callback = [&](int depth, json::parse_event_t event, json& parsed) {
    switch (event) {
      case json::parse_event_t::object_start:
      case json::parse_event_t::array_start:
        if (depth >= kMaxJsonDepth)
          throw InputError(where, subject + " nests deeper than " + std::to_string(kMaxJsonDepth) + " levels");
        if (event == json::parse_event_t::object_start) open_objects.emplace_back();
        break;
      case json::parse_event_t::object_end:
        if (!open_objects.empty()) open_objects.pop_back();
        break;
      case json::parse_event_t::key:
        if (!open_objects.empty() && !open_objects.back().insert(parsed.get<std::string>()).second)
          throw InputError(where, subject + " repeats the key " + quote_name(parsed.get<std::string>()));
        break;
      default:
        break;
    }
    return true;
  };
  // nlohmann stops at a NUL as if the text ended there; JSON has no raw NUL, so refuse it first.
  if (const void* nul = std::memchr(begin, '\0', size_t(end - begin)))
    throw InputError(where, (what.empty() ? "" : what + " is ") + "not valid JSON: a NUL byte at byte " +
                                std::to_string(static_cast<const char*>(nul) - begin));
  try {
    return json::parse(begin, end, callback);
  } catch (const json::exception& e) {
    throw InputError(where, (what.empty() ? "" : what + " is ") + "not valid JSON: " + json_message(e));
  }
}

std::string brief(const json& value) {
  if (value.is_array()) return "an array of " + std::to_string(value.size());
  if (value.is_object()) return "an object of " + std::to_string(value.size()) + " keys";
  return cut(value.dump(-1, ' ', true, json::error_handler_t::replace), 40);
}

std::string quote_name(const std::string& name) {
  return cut(json(name).dump(-1, ' ', true, json::error_handler_t::replace), 120);
}

}  // namespace ordo
