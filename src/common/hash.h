#pragma once

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>

namespace sightline {

//! One field of StableHash's input: bytes, or a 64-bit integer.
class HashField {
 public:
  HashField(std::string_view bytes) : bytes_(bytes) {}    // NOLINT: implicit by design
  HashField(const char* bytes) : bytes_(bytes) {}         // NOLINT
  HashField(const std::string& bytes) : bytes_(bytes) {}  // NOLINT
  static HashField Int(int64_t value);

  //! The field's bytes: an integer's are its two's complement, little-endian.
  const unsigned char* data() const {
    return is_int_ ? int_bytes_ : reinterpret_cast<const unsigned char*>(bytes_.data());
  }
  size_t size() const { return is_int_ ? sizeof(int_bytes_) : bytes_.size(); }

 private:
  HashField() = default;
  std::string_view bytes_;
  unsigned char int_bytes_[8] = {};
  bool is_int_ = false;
};

//! The hash persisted ids are made of (metric series ids, resource ids;
//! model/ids.h): XXH3-64 (xxHash 0.8, a published specification whose output
//! is frozen) with `seed`, over a canonical encoding of `fields`: each field
//! is its length in bytes as an unsigned 64-bit little-endian integer, then
//! its bytes. An integer field is the 8 bytes of its two's complement value,
//! little-endian. The same fields give the same value on every build and
//! machine, whatever its byte order, and field boundaries matter: ("ab", "c")
//! and ("a", "bc") differ. docs/STORAGE.md states the encoding and
//! common/hash_test.cc pins values, so a change shows up as a failing test
//! rather than as split series. Thread-safe (a pure function).
uint64_t StableHash(std::initializer_list<HashField> fields, uint64_t seed = 0);

}  // namespace sightline
