// ordo: JSON from files, read strictly — the one parser config.json and safetensors headers share.
//
// nlohmann::json accepts an object that repeats a key (keeping the last) and nests without limit;
// a file from a stranger gets neither: a repeated key is ambiguous, and deep nesting is never a
// model, only a way to exhaust the stack of whatever later walks the value.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "common/json_value.h"

namespace ordo {

// A config's or a header's parsed value, freed without allocating (common/json_value.h says why).
using StrictJson = JsonValue;

// Parses [begin, end) as one JSON value. Throws InputError(where, "[<what> is] ...") for invalid JSON
// (with nlohmann's reason, which gives the byte), a repeated key, or nesting past kMaxJsonDepth;
// std::bad_alloc when memory runs out, the part built so far freed as StrictJson frees it.
StrictJson parse_strict_json(const char* begin, const char* end, const std::string& where, const std::string& what);

// A short, one-line description of a value for an error message: scalars as JSON (cut to a few
// dozen characters), arrays and objects by kind and size (never dumped: they could be huge).
std::string brief(const nlohmann::json& value);

// A name from a file, quoted and escaped as a JSON string (so a newline in it cannot split the
// error line), cut to a readable length.
std::string quote_name(const std::string& name);

}  // namespace ordo
