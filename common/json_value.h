// ordo: a parsed JSON value that is freed without allocating, and the parser the tokenizers use.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace ordo {

// Deeper than any config, safetensors header or tokenizer file needs (those need 3 to 5).
constexpr int kMaxJsonDepth = 32;

// A parsed value that is freed without allocating. nlohmann's destructor (noexcept) moves the nested
// values onto a std::vector it allocates, so freeing a value while memory is exhausted (as when a
// std::bad_alloc unwinds past it) ends the process in std::terminate instead of "out of memory".
// This one first empties the value depth first, by recursion no deeper than kMaxJsonDepth (which its
// parsers enforce), so that every value nlohmann then frees is empty or a scalar. Use it as a const
// nlohmann::json; a copy or a move into a plain nlohmann::json loses the guarantee.
class JsonValue : public nlohmann::json {
 public:
  JsonValue() = default;
  explicit JsonValue(nlohmann::json&& value) : nlohmann::json(std::move(value)) {}
  JsonValue(JsonValue&&) = default;
  JsonValue& operator=(JsonValue&&) = default;
  ~JsonValue() { release(*this); }

  static void release(nlohmann::json& value) noexcept;
};

// json::parse(text, callback, allow_exceptions), built into a JsonValue (so that a std::bad_alloc
// while it is built frees the part built so far without allocating), in time linear in the text. The
// callback is called at the events json::parse calls it at, with the same depths; a value it drops
// leaves nothing in its object or array (json::parse leaves a discarded value where the key was kept). Throws
// InputError(where, "is not valid JSON (<nlohmann's reason>)") for invalid JSON when allow_exceptions is true (else the
// value is discarded, as json::parse has it), and InputError(where, "nests deeper than 32 levels") whatever it is.
JsonValue parse_json_value(const char* begin, const char* end, const std::string& where,
                           const nlohmann::json::parser_callback_t& callback = nullptr, bool allow_exceptions = true);
inline JsonValue parse_json_value(const std::string& text, const std::string& where,
                                  const nlohmann::json::parser_callback_t& callback = nullptr,
                                  bool allow_exceptions = true) {
  return parse_json_value(text.data(), text.data() + text.size(), where, callback, allow_exceptions);
}

}  // namespace ordo
