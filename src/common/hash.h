#pragma once

#include <cstdint>
#include <string_view>

namespace sightline {

//! A stable 64-bit hash of a sequence of fields (xxHash64 rounds with a
//! splitmix64 finish): the same fields give the same value on every build and
//! machine, so it can be stored (metric series and resource ids). Each field's
//! length is mixed in, so ("ab","c") and ("a","bc") differ.
class StableHasher {
 public:
  void AddField(std::string_view bytes);
  uint64_t Finish() const;

 private:
  uint64_t h_ = 14695981039346656037ull;
};

}  // namespace sightline
