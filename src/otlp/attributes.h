#pragma once

// OTLP AnyValue / KeyValue lists as JSON text (the storage form of attribute
// maps, event and link lists, and non-string log bodies).

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "common/json_writer.h"
#include "opentelemetry/proto/common/v1/common.pb.h"

namespace sightline {

using KeyValues = google::protobuf::RepeatedPtrField<opentelemetry::proto::common::v1::KeyValue>;

//! OpenTelemetry's attribute limits, applied as the SDKs apply them: a longer
//! string (or bytes) value is cut, attributes past the count are dropped, and
//! both are counted rather than refused.
struct AttributeLimits {
  size_t max_value_bytes = SIZE_MAX;  // string values cut at a UTF-8 boundary; bytes before base64
  size_t max_count = SIZE_MAX;        // attributes kept per map (the first ones)
};

//! What a writer cut while applying AttributeLimits.
struct AttributeCuts {
  int64_t values = 0;   // string / bytes values cut
  int64_t dropped = 0;  // attributes dropped past max_count
};

//! string → "s", int → number, double → number (non-finite as strings),
//! bool, array → [..], kvlist → {..}, bytes → base64 string, unset → null.
//! Strings and bytes at any depth are cut to limits.max_value_bytes.
void WriteAnyValue(JsonWriter* w, const opentelemetry::proto::common::v1::AnyValue& v,
                   const AttributeLimits& limits = {}, AttributeCuts* cuts = nullptr);
//! {"key": value, ...} in the order received, the first limits.max_count of
//! them. Returns how many were dropped.
uint32_t WriteAttributes(JsonWriter* w, const KeyValues& kvs, const AttributeLimits& limits = {},
                         AttributeCuts* cuts = nullptr);
uint32_t AppendAttributesJson(std::string* out, const KeyValues& kvs, const AttributeLimits& limits = {},
                              AttributeCuts* cuts = nullptr);

//! The longest prefix of s of at most max bytes that does not split a UTF-8
//! sequence.
std::string_view Utf8Prefix(std::string_view s, size_t max);

//! Finds a string attribute; nullptr when absent or not a string.
const std::string* FindStringAttribute(const KeyValues& kvs, std::string_view key);
//! Finds an int attribute (or a numeric string); false when absent.
bool FindIntAttribute(const KeyValues& kvs, std::string_view key, int64_t* out);

}  // namespace sightline
