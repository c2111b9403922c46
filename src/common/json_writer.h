#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace sightline {

//! Appends JSON text to a caller-owned string: no DOM, no allocation beyond
//! the output buffer. The caller keeps the structure valid; Key/Value pairs
//! insert commas themselves.
class JsonWriter {
 public:
  explicit JsonWriter(std::string* out) : out_(out) {}

  void BeginObject() {
    Sep();
    out_->push_back('{');
    first_ = true;
  }
  void EndObject() {
    out_->push_back('}');
    first_ = false;
  }
  void BeginArray() {
    Sep();
    out_->push_back('[');
    first_ = true;
  }
  void EndArray() {
    out_->push_back(']');
    first_ = false;
  }
  //! Writes "key": ; the next value call follows without a comma.
  void Key(std::string_view key);
  void String(std::string_view s);
  void Int(int64_t v);
  void Uint(uint64_t v);
  //! Non-finite doubles become strings ("NaN", "Infinity", "-Infinity"), as proto3 JSON does.
  void Double(double v);
  void Bool(bool v);
  void Null();
  //! Inserts already-valid JSON text.
  void Raw(std::string_view json);

 private:
  void Sep() {
    if (after_key_) {
      after_key_ = false;
      return;
    }
    if (!first_) out_->push_back(',');
    first_ = false;
  }
  std::string* out_;
  bool first_ = true;
  bool after_key_ = false;
};

//! Appends s as a quoted JSON string with escapes.
void AppendJsonString(std::string* out, std::string_view s);

}  // namespace sightline
