#pragma once

// OTLP AnyValue / KeyValue lists as JSON text (the storage form of attribute
// maps, event and link lists, and non-string log bodies).

#include <string>

#include "common/json_writer.h"
#include "opentelemetry/proto/common/v1/common.pb.h"

namespace sightline {

using KeyValues = google::protobuf::RepeatedPtrField<opentelemetry::proto::common::v1::KeyValue>;

//! string → "s", int → number, double → number (non-finite as strings),
//! bool, array → [..], kvlist → {..}, bytes → base64 string, unset → null.
void WriteAnyValue(JsonWriter* w, const opentelemetry::proto::common::v1::AnyValue& v);
//! {"key": value, ...} in the order received.
void WriteAttributes(JsonWriter* w, const KeyValues& kvs);
void AppendAttributesJson(std::string* out, const KeyValues& kvs);

//! Finds a string attribute; nullptr when absent or not a string.
const std::string* FindStringAttribute(const KeyValues& kvs, std::string_view key);
//! Finds an int attribute (or a numeric string); false when absent.
bool FindIntAttribute(const KeyValues& kvs, std::string_view key, int64_t* out);

}  // namespace sightline
