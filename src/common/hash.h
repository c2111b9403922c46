#pragma once

#include <cstdint>
#include <string_view>

namespace sightline {

//! A stable 64-bit hash (FNV-1a with a final mix): the same bytes give the same
//! value on every build and machine, so it can be stored (metric series ids).
class StableHasher {
 public:
  void Add(std::string_view bytes);
  //! Adds a field and a separator so ("ab","c") and ("a","bc") differ.
  void AddField(std::string_view bytes) {
    Add(bytes);
    Add(std::string_view("\x1f", 1));
  }
  uint64_t Finish() const;

 private:
  uint64_t h_ = 14695981039346656037ull;
};

}  // namespace sightline
