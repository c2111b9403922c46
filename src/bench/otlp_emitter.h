#pragma once

// Two encoders with one interface, so the load generator describes an OTLP
// request once and gets either protobuf wire format or OTLP/JSON: the
// generator is a template over the emitter (static dispatch, no virtual call
// per field). Both write canonical output: minimal varints and exact length
// prefixes for protobuf; lowerCamelCase names, hex ids, 64-bit integers as
// strings and enums as numbers for JSON (the OTLP/JSON mapping).
//
// Usage: BeginRoot(); fields ...; EndRoot(). A nested message is
// BeginMessage(field, name) ... EndMessage(); a repeated message field is
// BeginRepeated(field, name), then BeginElement() ... EndMessage() per
// element, then EndRepeated(). Not thread-safe; one emitter per output.

#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/json_writer.h"

namespace sightline::bench {

class ProtoEmitter {
 public:
  explicit ProtoEmitter(std::string* out) : out_(out) {}

  void BeginRoot() {}
  void EndRoot() {}

  void BeginMessage(int field, const char*) {
    Tag(field, kLengthDelimited);
    open_.push_back(out_->size());
  }
  void BeginRepeated(int field, const char*) { repeated_.push_back(field); }
  void BeginElement() { BeginMessage(repeated_.back(), nullptr); }
  void EndRepeated() { repeated_.pop_back(); }
  //! Closes the innermost message: inserts its length in front of its bytes.
  void EndMessage() {
    size_t start = open_.back();
    open_.pop_back();
    uint64_t len = out_->size() - start;
    char prefix[10];
    size_t n = EncodeVarint(len, prefix);
    out_->insert(start, prefix, n);
  }

  void String(int field, const char*, std::string_view v) {
    Tag(field, kLengthDelimited);
    Varint(v.size());
    out_->append(v);
  }
  //! Trace / span ids: raw bytes.
  void Id(int field, const char*, const uint8_t* raw, size_t n) {
    String(field, nullptr, std::string_view(reinterpret_cast<const char*>(raw), n));
  }
  //! uint32 / uint64 / enum / bool (varint); proto3 omits zero.
  void Uint(int field, const char*, uint64_t v) {
    if (v == 0) return;
    Tag(field, kVarint);
    Varint(v);
  }
  //! int64 (varint, two's complement).
  void Int(int field, const char* name, int64_t v) { Uint(field, name, static_cast<uint64_t>(v)); }
  //! An int64 oneof member (AnyValue.int_value): written even when zero.
  void OneofInt(int field, const char*, int64_t v) {
    Tag(field, kVarint);
    Varint(static_cast<uint64_t>(v));
  }
  void Bool(int field, const char* name, bool v) { Uint(field, name, v ? 1 : 0); }
  void Fixed64(int field, const char*, uint64_t v) {
    if (v == 0) return;
    Tag(field, kFixed64);
    Raw8(v);
  }
  void SFixed64(int field, const char*, int64_t v) {
    Tag(field, kFixed64);  // a oneof member: written even when zero
    Raw8(static_cast<uint64_t>(v));
  }
  void Fixed32(int field, const char*, uint32_t v) {
    if (v == 0) return;
    Tag(field, kFixed32);
    char b[4];
    std::memcpy(b, &v, 4);
    out_->append(b, 4);
  }
  //! A double that is always written (oneof members, optional fields).
  void Double(int field, const char*, double v) {
    Tag(field, kFixed64);
    uint64_t bits;
    std::memcpy(&bits, &v, 8);
    Raw8(bits);
  }
  void PackedFixed64(int field, const char*, std::span<const uint64_t> v) {
    if (v.empty()) return;
    Tag(field, kLengthDelimited);
    Varint(v.size() * 8);
    for (uint64_t x : v) Raw8(x);
  }
  void PackedDouble(int field, const char*, std::span<const double> v) {
    if (v.empty()) return;
    Tag(field, kLengthDelimited);
    Varint(v.size() * 8);
    for (double x : v) {
      uint64_t bits;
      std::memcpy(&bits, &x, 8);
      Raw8(bits);
    }
  }

 private:
  static constexpr int kVarint = 0, kFixed64 = 1, kLengthDelimited = 2, kFixed32 = 5;

  static size_t EncodeVarint(uint64_t v, char* p) {
    size_t n = 0;
    while (v >= 0x80) {
      p[n++] = static_cast<char>((v & 0x7f) | 0x80);
      v >>= 7;
    }
    p[n++] = static_cast<char>(v);
    return n;
  }
  void Varint(uint64_t v) {
    char b[10];
    out_->append(b, EncodeVarint(v, b));
  }
  void Tag(int field, int wire_type) { Varint((static_cast<uint64_t>(field) << 3) | static_cast<uint64_t>(wire_type)); }
  void Raw8(uint64_t v) {
    char b[8];
    std::memcpy(b, &v, 8);  // little-endian hosts only (x86-64, arm64)
    out_->append(b, 8);
  }

  std::string* out_;
  std::vector<size_t> open_;   // start offsets of open messages' contents
  std::vector<int> repeated_;  // field numbers of open repeated fields
};

class JsonEmitter {
 public:
  explicit JsonEmitter(std::string* out) : w_(out) {}

  void BeginRoot() { w_.BeginObject(); }
  void EndRoot() { w_.EndObject(); }

  void BeginMessage(int, const char* name) {
    w_.Key(name);
    w_.BeginObject();
  }
  void BeginRepeated(int, const char* name) {
    w_.Key(name);
    w_.BeginArray();
  }
  void BeginElement() { w_.BeginObject(); }
  void EndRepeated() { w_.EndArray(); }
  void EndMessage() { w_.EndObject(); }

  void String(int, const char* name, std::string_view v) {
    w_.Key(name);
    w_.String(v);
  }
  void Id(int, const char* name, const uint8_t* raw, size_t n) {
    static const char* kHex = "0123456789abcdef";
    char hex[64];
    for (size_t i = 0; i < n && i < 32; ++i) {
      hex[2 * i] = kHex[raw[i] >> 4];
      hex[2 * i + 1] = kHex[raw[i] & 15];
    }
    w_.Key(name);
    w_.String(std::string_view(hex, 2 * n));
  }
  void Uint(int, const char* name, uint64_t v) {
    if (v == 0) return;
    w_.Key(name);
    w_.Uint(v);
  }
  void Int(int, const char* name, int64_t v) {
    if (v == 0) return;
    Quoted(name, std::to_string(v));
  }
  void OneofInt(int, const char* name, int64_t v) { Quoted(name, std::to_string(v)); }
  void Bool(int, const char* name, bool v) {
    if (!v) return;
    w_.Key(name);
    w_.Bool(true);
  }
  void Fixed64(int, const char* name, uint64_t v) {
    if (v == 0) return;
    Quoted(name, std::to_string(v));
  }
  void SFixed64(int, const char* name, int64_t v) { Quoted(name, std::to_string(v)); }
  void Fixed32(int, const char* name, uint32_t v) {
    if (v == 0) return;
    w_.Key(name);
    w_.Uint(v);
  }
  void Double(int, const char* name, double v) {
    w_.Key(name);
    w_.Double(v);
  }
  void PackedFixed64(int, const char* name, std::span<const uint64_t> v) {
    if (v.empty()) return;
    w_.Key(name);
    w_.BeginArray();
    for (uint64_t x : v) w_.String(std::to_string(x));
    w_.EndArray();
  }
  void PackedDouble(int, const char* name, std::span<const double> v) {
    if (v.empty()) return;
    w_.Key(name);
    w_.BeginArray();
    for (double x : v) w_.Double(x);
    w_.EndArray();
  }

 private:
  void Quoted(const char* name, const std::string& digits) {
    w_.Key(name);
    w_.String(digits);
  }

  JsonWriter w_;
};

}  // namespace sightline::bench
