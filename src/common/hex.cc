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

void IdFromBytes(std::string_view bytes, uint64_t* high, uint64_t* low) {
  auto load = [&bytes](size_t at) {
    uint64_t v = 0;
    for (size_t i = 0; i < 8; ++i) v = v << 8 | static_cast<unsigned char>(bytes[at + i]);
    return v;
  };
  *high = bytes.size() == 16 ? load(0) : 0;
  *low = load(bytes.size() == 16 ? 8 : 0);
}

bool IdFromHex(std::string_view hex, uint64_t* high, uint64_t* low) {
  if (hex.size() != 16 && hex.size() != 32) return false;
  uint64_t halves[2] = {0, 0};
  size_t first = hex.size() == 32 ? 0 : 1;
  for (size_t i = 0; i < hex.size(); ++i) {
    int v = HexValue(hex[i]);
    if (v < 0) return false;
    uint64_t& h = halves[first + i / 16];
    h = h << 4 | static_cast<uint64_t>(v);
  }
  *high = halves[0];
  *low = halves[1];
  return true;
}

std::string HexU64(uint64_t v) {
  static const char* kHex = "0123456789abcdef";
  std::string out(16, '0');
  for (int i = 15; i >= 0; --i, v >>= 4) out[i] = kHex[v & 15];
  return out;
}

std::string TraceIdHex(uint64_t high, uint64_t low) {
  return high == 0 && low == 0 ? std::string() : HexU64(high) + HexU64(low);
}

}  // namespace sightline
