#include "otlp/attributes.h"

#include <charconv>

namespace sightline {

using opentelemetry::proto::common::v1::AnyValue;

namespace {

void AppendBase64(std::string* out, std::string_view in) {
  static const char* kTable = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  size_t i = 0;
  for (; i + 2 < in.size(); i += 3) {
    uint32_t n = uint32_t(uint8_t(in[i])) << 16 | uint32_t(uint8_t(in[i + 1])) << 8 | uint8_t(in[i + 2]);
    out->push_back(kTable[n >> 18]);
    out->push_back(kTable[(n >> 12) & 63]);
    out->push_back(kTable[(n >> 6) & 63]);
    out->push_back(kTable[n & 63]);
  }
  if (i + 1 == in.size()) {
    uint32_t n = uint32_t(uint8_t(in[i])) << 16;
    out->push_back(kTable[n >> 18]);
    out->push_back(kTable[(n >> 12) & 63]);
    out->append("==");
  } else if (i + 2 == in.size()) {
    uint32_t n = uint32_t(uint8_t(in[i])) << 16 | uint32_t(uint8_t(in[i + 1])) << 8;
    out->push_back(kTable[n >> 18]);
    out->push_back(kTable[(n >> 12) & 63]);
    out->push_back(kTable[(n >> 6) & 63]);
    out->push_back('=');
  }
}

}  // namespace

void WriteAnyValue(JsonWriter* w, const AnyValue& v) {
  switch (v.value_case()) {
    case AnyValue::kStringValue: w->String(v.string_value()); break;
    case AnyValue::kBoolValue: w->Bool(v.bool_value()); break;
    case AnyValue::kIntValue: w->Int(v.int_value()); break;
    case AnyValue::kDoubleValue: w->Double(v.double_value()); break;
    case AnyValue::kArrayValue:
      w->BeginArray();
      for (const auto& e : v.array_value().values()) WriteAnyValue(w, e);
      w->EndArray();
      break;
    case AnyValue::kKvlistValue: WriteAttributes(w, v.kvlist_value().values()); break;
    case AnyValue::kBytesValue: {
      std::string b64;
      AppendBase64(&b64, v.bytes_value());
      w->String(b64);
      break;
    }
    case AnyValue::VALUE_NOT_SET: w->Null(); break;
  }
}

void WriteAttributes(JsonWriter* w, const KeyValues& kvs) {
  w->BeginObject();
  for (const auto& kv : kvs) {
    w->Key(kv.key());
    WriteAnyValue(w, kv.value());
  }
  w->EndObject();
}

void AppendAttributesJson(std::string* out, const KeyValues& kvs) {
  JsonWriter w(out);
  WriteAttributes(&w, kvs);
}

const std::string* FindStringAttribute(const KeyValues& kvs, std::string_view key) {
  for (const auto& kv : kvs) {
    if (kv.key() == key && kv.value().value_case() == AnyValue::kStringValue) return &kv.value().string_value();
  }
  return nullptr;
}

bool FindIntAttribute(const KeyValues& kvs, std::string_view key, int64_t* out) {
  for (const auto& kv : kvs) {
    if (kv.key() != key) continue;
    if (kv.value().value_case() == AnyValue::kIntValue) {
      *out = kv.value().int_value();
      return true;
    }
    if (kv.value().value_case() == AnyValue::kStringValue) {
      const std::string& s = kv.value().string_value();
      int64_t v = 0;
      auto r = std::from_chars(s.data(), s.data() + s.size(), v);
      if (r.ec != std::errc() || r.ptr != s.data() + s.size()) return false;
      *out = v;
      return true;
    }
  }
  return false;
}

}  // namespace sightline
