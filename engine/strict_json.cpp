#include "engine/strict_json.h"

#include <cstring>
#include <unordered_set>
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

namespace {

// The strict rules, checked in one SAX pass before the value is built: no repeated key, no
// nesting past kMaxJsonDepth, and nlohmann's own syntax errors. (A parse callback could check the
// same, but nlohmann's callback parser rescans the enclosing object each time a value inside it
// ends, which makes a header of n tensors cost n² steps.)
class StrictChecker : public nlohmann::json_sax<json> {
 public:
  StrictChecker(const std::string& where, const std::string& what) : where_(where), what_(what) {}

  bool null() override { return true; }
  bool boolean(bool) override { return true; }
  bool number_integer(number_integer_t) override { return true; }
  bool number_unsigned(number_unsigned_t) override { return true; }
  bool number_float(number_float_t, const string_t&) override { return true; }
  bool string(string_t&) override { return true; }
  bool binary(binary_t&) override { return true; }
  bool start_object(std::size_t) override {
    open(true);
    return true;
  }
  bool key(string_t& k) override {
    if (!keys_.back().insert(k).second) throw InputError(where_, subject() + " repeats the key " + quote_name(k));
    return true;
  }
  bool end_object() override {
    keys_.pop_back();
    --depth_;
    return true;
  }
  bool start_array(std::size_t) override {
    open(false);
    return true;
  }
  bool end_array() override {
    --depth_;
    return true;
  }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception& e) override {
    throw InputError(where_, (what_.empty() ? "" : what_ + " is ") + "not valid JSON: " + json_message(e));
  }

 private:
  std::string subject() const { return what_.empty() ? "JSON" : what_; }
  void open(bool object) {
    if (depth_ >= kMaxJsonDepth)
      throw InputError(where_, subject() + " nests deeper than " + std::to_string(kMaxJsonDepth) + " levels");
    ++depth_;
    if (object) keys_.emplace_back();
  }
  const std::string& where_;
  const std::string& what_;
  int depth_ = 0;
  std::vector<std::unordered_set<std::string>> keys_;  // the keys seen so far in each open object
};

}  // namespace

StrictJson parse_strict_json(const char* begin, const char* end, const std::string& where, const std::string& what) {
  // nlohmann stops at a NUL as if the text ended there; JSON has no raw NUL, so refuse it first.
  if (const void* nul = std::memchr(begin, '\0', size_t(end - begin)))
    throw InputError(where, (what.empty() ? "" : what + " is ") + "not valid JSON: a NUL byte at byte " +
                                std::to_string(static_cast<const char*>(nul) - begin));
  StrictChecker checker(where, what);
  json::sax_parse(begin, end, &checker);
  // The text is known to be valid and within the rules: build the value (into a StrictJson, which a
  // std::bad_alloc here frees without allocating; json::parse would build a plain one).
  return parse_json_value(begin, end, where);
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
