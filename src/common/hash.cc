#include "common/hash.h"

namespace sightline {

void StableHasher::Add(std::string_view bytes) {
  uint64_t h = h_;
  for (unsigned char c : bytes) {
    h ^= c;
    h *= 1099511628211ull;
  }
  h_ = h;
}

uint64_t StableHasher::Finish() const {
  // splitmix64 finaliser spreads FNV's weak low bits.
  uint64_t z = h_ + 0x9e3779b97f4a7c15ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133a32ebull;
  return z ^ (z >> 31);
}

}  // namespace sightline
