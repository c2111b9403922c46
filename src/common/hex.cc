#include "common/hex.h"

namespace sightline {

void AppendHex(std::string* out, std::string_view bytes) {
  static const char* kHex = "0123456789abcdef";
  size_t n = out->size();
  out->resize(n + bytes.size() * 2);
  char* p = out->data() + n;
  for (unsigned char c : bytes) {
    *p++ = kHex[c >> 4];
    *p++ = kHex[c & 15];
  }
}

static int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

bool DecodeHex(std::string_view hex, std::string* out) {
  if (hex.size() % 2 != 0) return false;
  out->clear();
  out->reserve(hex.size() / 2);
  for (size_t i = 0; i < hex.size(); i += 2) {
    int hi = HexValue(hex[i]), lo = HexValue(hex[i + 1]);
    if (hi < 0 || lo < 0) return false;
    out->push_back(static_cast<char>(hi << 4 | lo));
  }
  return true;
}

}  // namespace sightline
