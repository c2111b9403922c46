#include "common/exception_group.h"

#include <cstddef>

namespace sightline {
namespace {

bool IsDigit(char c) { return c >= '0' && c <= '9'; }
bool IsHexLetter(char c) { return (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'); }
bool IsHex(char c) { return IsDigit(c) || IsHexLetter(c); }
bool IsAlnum(char c) { return IsDigit(c) || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }

//! True when a UUID starts at `i` and is not followed by a letter or digit.
bool UuidAt(std::string_view s, size_t i) {
  constexpr size_t kGroups[] = {8, 4, 4, 4, 12};
  size_t p = i;
  for (size_t g = 0; g < 5; ++g) {
    if (g > 0) {
      if (p >= s.size() || s[p] != '-') return false;
      ++p;
    }
    for (size_t k = 0; k < kGroups[g]; ++k, ++p) {
      if (p >= s.size() || !IsHex(s[p])) return false;
    }
  }
  return p == s.size() || !IsAlnum(s[p]);
}

bool IsHexRun(std::string_view token) {
  if (token.size() >= 3 && token[0] == '0' && (token[1] == 'x' || token[1] == 'X')) {
    for (size_t k = 2; k < token.size(); ++k) {
      if (!IsHex(token[k])) return false;
    }
    return true;
  }
  if (token.size() < 8) return false;
  bool digit = false, letter = false;
  for (char c : token) {
    if (!IsHex(c)) return false;
    digit |= IsDigit(c);
    letter |= IsHexLetter(c);
  }
  return digit && letter;
}

}  // namespace

std::string NormalizeExceptionMessage(std::string_view m) {
  std::string out;
  out.reserve(m.size());
  size_t i = 0;
  while (i < m.size()) {
    if (!IsAlnum(m[i])) {
      out.push_back(m[i++]);
      continue;
    }
    // A token starts here: the byte before it (if any) is no letter or digit.
    if (UuidAt(m, i)) {
      out += "<uuid>";
      i += 36;
      continue;
    }
    size_t end = i;
    while (end < m.size() && IsAlnum(m[end])) ++end;
    const std::string_view token = m.substr(i, end - i);
    if (IsHexRun(token)) {
      out += "<hex>";
      i = end;
      continue;
    }
    const size_t start = i;
    while (i < end) {
      if (!IsDigit(m[i])) {
        out.push_back(m[i++]);
        continue;
      }
      const bool leading = i == start;
      while (i < end && IsDigit(m[i])) ++i;
      // A decimal part belongs to a number that is a whole token (`3.14`),
      // not to the digits of a word (`v1.2` is `v<n>.<n>`).
      if (leading && i == end && i + 1 < m.size() && m[i] == '.' && IsDigit(m[i + 1])) {
        for (++i; i < m.size() && IsDigit(m[i]);) ++i;
        end = i;
      }
      out += "<n>";
    }
  }
  return out;
}

}  // namespace sightline
