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

std::string_view Utf8Prefix(std::string_view s, size_t max) {
  if (s.size() <= max) return s;
  size_t n = max;
  while (n > 0 && (static_cast<unsigned char>(s[n]) & 0xC0) == 0x80) --n;
  return s.substr(0, n);
}

void WriteAnyValue(JsonWriter* w, const AnyValue& v, const AttributeLimits& limits, AttributeCuts* cuts) {
  switch (v.value_case()) {
    case AnyValue::kStringValue: {
      std::string_view s = Utf8Prefix(v.string_value(), limits.max_value_bytes);
      if (s.size() < v.string_value().size() && cuts != nullptr) ++cuts->values;
      w->String(s);
      break;
    }
    case AnyValue::kBoolValue: w->Bool(v.bool_value()); break;
    case AnyValue::kIntValue: w->Int(v.int_value()); break;
    case AnyValue::kDoubleValue: w->Double(v.double_value()); break;
    case AnyValue::kArrayValue:
      w->BeginArray();
      for (const auto& e : v.array_value().values()) WriteAnyValue(w, e, limits, cuts);
      w->EndArray();
      break;
    case AnyValue::kKvlistValue: {
      const uint32_t dropped = WriteAttributes(w, v.kvlist_value().values(), limits, cuts);
      if (cuts != nullptr) cuts->dropped += dropped;
      break;
    }
    case AnyValue::kBytesValue: {
      // The stored form is base64, 4 characters per 3 bytes: cut the bytes so
      // the text stays within the limit.
      std::string_view raw = v.bytes_value();
      const size_t max_raw = limits.max_value_bytes == SIZE_MAX ? SIZE_MAX : limits.max_value_bytes / 4 * 3;
      if (raw.size() > max_raw) {
        raw = raw.substr(0, max_raw);
        if (cuts != nullptr) ++cuts->values;
      }
      std::string b64;
      AppendBase64(&b64, raw);
      w->String(b64);
      break;
    }
    case AnyValue::VALUE_NOT_SET: w->Null(); break;
  }
}

uint32_t WriteAttributes(JsonWriter* w, const KeyValues& kvs, const AttributeLimits& limits, AttributeCuts* cuts) {
  w->BeginObject();
  size_t written = 0;
  for (const auto& kv : kvs) {
    if (written == limits.max_count) break;
    w->Key(kv.key());
    WriteAnyValue(w, kv.value(), limits, cuts);
    ++written;
  }
  w->EndObject();
  return static_cast<uint32_t>(static_cast<size_t>(kvs.size()) - written);
}

uint32_t AppendAttributesJson(std::string* out, const KeyValues& kvs, const AttributeLimits& limits,
                              AttributeCuts* cuts) {
  JsonWriter w(out);
  return WriteAttributes(&w, kvs, limits, cuts);
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
