#include "common/hash.h"

#include <cstring>
#include <string>

// Header-only mode: XXH3 is compiled into this file, so the short inputs of
// series ids (a point's attributes) take the inlined short-input path, with
// no call into the shared library. hash_test.cc checks the result against the
// shared library's own function.
#define XXH_INLINE_ALL
#include <xxhash.h>

static_assert(XXH_VERSION_NUMBER >= 800, "XXH3's output is frozen from xxHash 0.8.0 on");

namespace sightline {
namespace {

void StoreLittleEndian(uint64_t v, unsigned char* out) {
  for (int i = 0; i < 8; ++i) out[i] = static_cast<unsigned char>(v >> (8 * i));
}

}  // namespace

HashField HashField::Int(int64_t value) {
  HashField f;
  StoreLittleEndian(static_cast<uint64_t>(value), f.int_bytes_);
  f.is_int_ = true;
  return f;
}

uint64_t StableHash(std::initializer_list<HashField> fields, uint64_t seed) {
  size_t size = 0;
  for (const HashField& f : fields) size += 8 + f.size();
  // Ids hash a few hundred bytes at most, usually: encode them on the stack.
  unsigned char stack[512];
  std::string heap;
  unsigned char* buffer = stack;
  if (size > sizeof(stack)) {
    heap.resize(size);
    buffer = reinterpret_cast<unsigned char*>(heap.data());
  }
  unsigned char* p = buffer;
  for (const HashField& f : fields) {
    StoreLittleEndian(f.size(), p);
    p += 8;
    if (f.size() > 0) std::memcpy(p, f.data(), f.size());
    p += f.size();
  }
  return XXH3_64bits_withSeed(buffer, size, seed);
}

}  // namespace sightline
