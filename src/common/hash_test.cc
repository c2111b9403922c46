// StableHash is persisted (series and resource ids), so its values are
// pinned here as literals: a change to the hash or to the encoding fails these
// tests instead of silently splitting every stored series in two.

#include "common/hash.h"

#include <xxhash.h>

#include <cstdint>
#include <string>

#include <gtest/gtest.h>

namespace sightline {
namespace {

// The canonical encoding, written out independently of hash.cc.
std::string LengthPrefix(uint64_t n) {
  std::string out;
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<char>((n >> (8 * i)) & 0xff));
  return out;
}
std::string Encoded(std::string_view field) { return LengthPrefix(field.size()) + std::string(field); }

uint64_t Xxh3(const std::string& bytes) { return XXH3_64bits(bytes.data(), bytes.size()); }

// The library is XXH3 as published: vectors from LLVM's xxhash tests, which
// were taken from the reference implementation (input: an xorshift stream).
TEST(StableHashTest, TheLibraryIsXxh3) {
  std::string a(2243, '\0');
  uint64_t x = 1;
  for (char& c : a) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    c = static_cast<char>(static_cast<uint8_t>(x));
  }
  EXPECT_EQ(Xxh3(a.substr(0, 0)), 0x2d06800538d394c2u);
  EXPECT_EQ(Xxh3(a.substr(0, 8)), 0xabc1413da6cd0209u);
  EXPECT_EQ(Xxh3(a.substr(0, 129)), 0xbc7138129bf065dau);
  EXPECT_EQ(Xxh3(a.substr(0, 403)), 0xcefeb3ffa532ad8cu);
  EXPECT_EQ(Xxh3(a), 0x0979f786a24edde7u);
}

TEST(StableHashTest, IsXxh3OfTheCanonicalEncoding) {
  EXPECT_EQ(StableHash({}), 0x2d06800538d394c2u);  // no fields: XXH3 of nothing

  const std::string minus_two("\xfe\xff\xff\xff\xff\xff\xff\xff", 8), two_five_eight("\x02\x01\0\0\0\0\0\0", 8);
  EXPECT_EQ(StableHash({"ab", "", HashField::Int(-2), HashField::Int(258)}),
            Xxh3(Encoded("ab") + Encoded("") + Encoded(minus_two) + Encoded(two_five_eight)));

  // Longer than the stack buffer and than XXH3's 240-byte short input, with
  // a NUL byte inside.
  std::string long_field(1000, 'x');
  long_field[500] = '\0';
  const std::string expected = Encoded("service") + Encoded(long_field) + Encoded(long_field.substr(0, 300));
  EXPECT_EQ(StableHash({"service", long_field, std::string_view(long_field).substr(0, 300)}), Xxh3(expected));

  // A seed is XXH3's seed (the long input takes its seeded long-input path).
  const uint64_t seed = 0x9e3779b97f4a7c15u;
  const std::string kv = Encoded("k") + Encoded("v"), encoded_long = Encoded(long_field);
  EXPECT_EQ(StableHash({"k", "v"}, seed), XXH3_64bits_withSeed(kv.data(), kv.size(), seed));
  EXPECT_EQ(StableHash({long_field}, seed), XXH3_64bits_withSeed(encoded_long.data(), encoded_long.size(), seed));
}

// The literals were computed with the library's one-shot XXH3_64bits over
// the encoding built by hand, as in the test above.
TEST(StableHashTest, PinnedValues) {
  EXPECT_EQ(StableHash({""}), 0xc77b3abb6f87acd9u);
  EXPECT_EQ(StableHash({"a"}), 0xc77724758a6ec4d1u);
  EXPECT_EQ(StableHash({"ab", "c"}), 0x642d4debfebf33aeu);
  EXPECT_EQ(StableHash({"a", "bc"}), 0xf42ee0df2a023ef1u);
  EXPECT_EQ(StableHash({R"({"service.name":"checkout","host.name":"web-1"})", "io.opentelemetry.http", "1.2.3", "{}"}),
            0x11b3597e2b5b465au);
  EXPECT_EQ(StableHash({HashField::Int(0), HashField::Int(-1), HashField::Int(INT64_MAX)}), 0x1d6bf1ff6e3f2ebdu);
  EXPECT_EQ(StableHash({"a"}, 42), 0xee1a1a374c2ce9b3u);
}

TEST(StableHashTest, FieldBoundariesMatter) {
  EXPECT_NE(StableHash({"ab", "c"}), StableHash({"a", "bc"}));
  EXPECT_NE(StableHash({"abc"}), StableHash({"ab", "c"}));
  EXPECT_NE(StableHash({"", "x"}), StableHash({"x", ""}));
  EXPECT_NE(StableHash({"x"}), StableHash({"x", ""}));
  // An integer field is not the text of the number.
  EXPECT_NE(StableHash({"7"}), StableHash({HashField::Int(7)}));
  EXPECT_NE(StableHash({"x"}, 1), StableHash({"x"}, 2));
}

}  // namespace
}  // namespace sightline
