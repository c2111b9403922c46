#pragma once

// The text an attribute value is compared and counted as by AttrFilter's
// kEq/kNe and the facet operations (storage/telemetry_reader.h), for the
// engines that parse stored attribute JSON in C++ (storage/sql/ facets,
// storage/clickhouse/ attribute arrays). The memory reference engine keeps
// its own copy on purpose: it is the independent side of the conformance
// suite.

#include <simdjson.h>

#include <charconv>
#include <optional>
#include <string>

namespace sightline {

//! A scalar JSON value as AttrFilter compares it (strings as they are,
//! true/false, integers in decimal, other numbers in their shortest
//! round-trip form); nullopt for null, arrays and objects.
inline std::optional<std::string> ScalarAttributeText(simdjson::dom::element v) {
  switch (v.type()) {
    case simdjson::dom::element_type::STRING: return std::string(v.get_string().value_unsafe());
    case simdjson::dom::element_type::BOOL: return std::string(v.get_bool().value_unsafe() ? "true" : "false");
    case simdjson::dom::element_type::INT64: return std::to_string(v.get_int64().value_unsafe());
    case simdjson::dom::element_type::UINT64: return std::to_string(v.get_uint64().value_unsafe());
    case simdjson::dom::element_type::DOUBLE: {
      char buf[32];
      auto r = std::to_chars(buf, buf + sizeof(buf), v.get_double().value_unsafe());
      return std::string(buf, r.ptr);
    }
    default: return std::nullopt;
  }
}

}  // namespace sightline
