// Decompress: round trips, the output cap (bombs are refused without ever
// holding the bomb's size in memory), corrupt input, lying gzip trailers.
// Bombs are built without materialising them: the gzip one is a hand-written
// fixed-Huffman deflate stream of 258-byte back-references, the zstd one is
// streamed from a small buffer of zeros.

#include "otlp/compression.h"

#include <libdeflate.h>
#include <zstd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <memory>
#include <random>
#include <string>

#include <gtest/gtest.h>

namespace sightline {
namespace {

constexpr size_t kMiB = 1 << 20;

//! Text that compresses but not trivially: words from a small vocabulary.
std::string SampleText(size_t bytes, uint32_t seed = 1) {
  static const char* kWords[] = {"span", "trace", "GET /api/v1/items", "service.name", "200", "error", "db.system"};
  std::mt19937 rng(seed);
  std::string s;
  while (s.size() < bytes) {
    s += kWords[rng() % 7];
    s.push_back(static_cast<char>(' ' + rng() % 3));
  }
  s.resize(bytes);
  return s;
}

std::string RandomBytes(size_t bytes, uint32_t seed = 2) {
  std::mt19937 rng(seed);
  std::string s(bytes, '\0');
  for (char& c : s) c = static_cast<char>(rng());
  return s;
}

void PutLe32(std::string* out, uint32_t v) {
  for (int i = 0; i < 4; ++i) out->push_back(static_cast<char>(v >> (8 * i)));
}

void SetIsize(std::string* gz, uint32_t isize) {
  for (int i = 0; i < 4; ++i) (*gz)[gz->size() - 4 + i] = static_cast<char>(isize >> (8 * i));
}

//! Deflate bit packing: fields LSB first, Huffman codes most significant bit first.
class BitWriter {
 public:
  explicit BitWriter(std::string* out) : out_(out) {}
  void Bits(uint32_t value, int n) {
    for (int i = 0; i < n; ++i) Bit((value >> i) & 1);
  }
  void Code(uint32_t code, int len) {
    for (int i = len - 1; i >= 0; --i) Bit((code >> i) & 1);
  }
  void Flush() {
    if (nbits_ > 0) out_->push_back(static_cast<char>(acc_));
    acc_ = 0;
    nbits_ = 0;
  }

 private:
  void Bit(uint32_t b) {
    acc_ |= b << nbits_;
    if (++nbits_ == 8) Flush();
  }
  std::string* out_;
  uint32_t acc_ = 0;
  int nbits_ = 0;
};

//! A single gzip member holding 1 + 258 * matches zero bytes, about 13 bits of
//! input per 258 bytes of output. Returns the member; *size gets the inflated size.
std::string GzipZeroBomb(uint64_t matches, uint64_t* size) {
  std::string gz = {'\x1f', '\x8b', '\x08', '\0', '\0', '\0', '\0', '\0', '\0', '\xff'};
  BitWriter bw(&gz);
  bw.Bits(1, 1);     // BFINAL
  bw.Bits(1, 2);     // BTYPE = fixed Huffman
  bw.Code(0x30, 8);  // literal 0x00
  for (uint64_t i = 0; i < matches; ++i) {
    bw.Code(0xc5, 8);  // length symbol 285 = 258 bytes, no extra bits
    bw.Code(0, 5);     // distance symbol 0 = 1 byte back
  }
  bw.Code(0, 7);  // end of block (symbol 256)
  bw.Flush();
  *size = 1 + 258 * matches;
  static const std::string zeros(kMiB, '\0');
  uint32_t crc = 0;
  for (uint64_t left = *size; left > 0;) {
    size_t n = static_cast<size_t>(std::min<uint64_t>(left, zeros.size()));
    crc = libdeflate_crc32(crc, zeros.data(), n);
    left -= n;
  }
  PutLe32(&gz, crc);
  PutLe32(&gz, static_cast<uint32_t>(*size));
  return gz;
}

std::string ZstdCompress(std::string_view in, int level = 3) {
  std::string out(ZSTD_compressBound(in.size()), '\0');
  size_t n = ZSTD_compress(out.data(), out.size(), in.data(), in.size(), level);
  EXPECT_FALSE(ZSTD_isError(n)) << ZSTD_getErrorName(n);
  out.resize(n);
  return out;
}

//! One zstd frame of `size` zero bytes, streamed so the frame header carries no
//! content size (the decoder cannot refuse it up front).
std::string ZstdStreamedZeros(uint64_t size, bool checksum = false) {
  std::unique_ptr<ZSTD_CCtx, size_t (*)(ZSTD_CCtx*)> cctx(ZSTD_createCCtx(), ZSTD_freeCCtx);
  ZSTD_CCtx_setParameter(cctx.get(), ZSTD_c_checksumFlag, checksum ? 1 : 0);
  static const std::string zeros(kMiB, '\0');
  std::string out;
  std::string buf(ZSTD_CStreamOutSize(), '\0');
  uint64_t left = size;
  for (;;) {
    // Data always goes in with e_continue and the frame is ended by an empty
    // e_end: a first call with e_end would let zstd write the content size.
    size_t n = static_cast<size_t>(std::min<uint64_t>(left, zeros.size()));
    left -= n;
    ZSTD_EndDirective mode = n == 0 ? ZSTD_e_end : ZSTD_e_continue;
    ZSTD_inBuffer in{zeros.data(), n, 0};
    bool finished = false;
    while (!finished) {
      ZSTD_outBuffer o{buf.data(), buf.size(), 0};
      size_t remaining = ZSTD_compressStream2(cctx.get(), &o, &in, mode);
      EXPECT_FALSE(ZSTD_isError(remaining)) << ZSTD_getErrorName(remaining);
      if (ZSTD_isError(remaining)) return out;
      out.append(buf.data(), o.pos);
      finished = mode == ZSTD_e_end ? remaining == 0 : in.pos == in.size;
    }
    if (mode == ZSTD_e_end) break;
  }
  return out;
}

// --- ParseContentEncoding ------------------------------------------------------

TEST(ParseContentEncodingTest, KnownEncodings) {
  struct Case {
    const char* header;
    ContentEncoding want;
  } cases[] = {
      {"", ContentEncoding::kIdentity},         {"identity", ContentEncoding::kIdentity},
      {"gzip", ContentEncoding::kGzip},         {"GZIP", ContentEncoding::kGzip},
      {" gzip ", ContentEncoding::kGzip},       {"x-gzip", ContentEncoding::kGzip},
      {"zstd", ContentEncoding::kZstd},         {"ZStd\t", ContentEncoding::kZstd},
      {"Identity", ContentEncoding::kIdentity},
  };
  for (const auto& c : cases) {
    auto r = ParseContentEncoding(c.header);
    ASSERT_TRUE(r.ok()) << "'" << c.header << "': " << r.status().ToString();
    EXPECT_EQ(*r, c.want) << c.header;
  }
}

TEST(ParseContentEncodingTest, UnknownEncodingsAreUnsupportedMedia) {
  for (const char* h : {"br", "deflate", "compress", "gzip, zstd", "snappy", "gzip2"}) {
    auto r = ParseContentEncoding(h);
    ASSERT_FALSE(r.ok()) << h;
    EXPECT_EQ(r.status().code(), StatusCode::kUnsupportedMedia) << h;
    EXPECT_NE(r.status().message().find(h), std::string::npos) << r.status().message();
  }
}

// --- identity --------------------------------------------------------------------

TEST(DecompressIdentityTest, CopiesUpToTheCap) {
  std::string out = "stale";
  ASSERT_TRUE(Decompress(ContentEncoding::kIdentity, "abcdef", 6, &out).ok());
  EXPECT_EQ(out, "abcdef");
  Status st = Decompress(ContentEncoding::kIdentity, "abcdefg", 6, &out);
  EXPECT_EQ(st.code(), StatusCode::kPayloadTooLarge) << st.ToString();
  ASSERT_TRUE(Decompress(ContentEncoding::kIdentity, "", 0, &out).ok());
  EXPECT_EQ(out, "");
}

// --- gzip ------------------------------------------------------------------------

TEST(GzipTest, RoundTripAtSeveralLevels) {
  for (int level : {0, 1, 6, 12}) {
    for (size_t size : {size_t{0}, size_t{1}, size_t{1000}, 300 * size_t{1024}}) {
      std::string in = SampleText(size, static_cast<uint32_t>(size + level));
      std::string gz = GzipCompress(in, level);
      ASSERT_GE(gz.size(), 18u);
      EXPECT_EQ(static_cast<uint8_t>(gz[0]), 0x1f);
      EXPECT_EQ(static_cast<uint8_t>(gz[1]), 0x8b);
      std::string out = "stale";
      Status st = Decompress(ContentEncoding::kGzip, gz, 1 * kMiB, &out);
      ASSERT_TRUE(st.ok()) << st.ToString() << " level " << level << " size " << size;
      EXPECT_EQ(out, in) << "level " << level << " size " << size;
    }
  }
}

TEST(GzipTest, RandomDataRoundTrips) {
  std::string in = RandomBytes(200000);
  std::string out;
  ASSERT_TRUE(Decompress(ContentEncoding::kGzip, GzipCompress(in), kMiB, &out).ok());
  EXPECT_EQ(out, in);
}

TEST(GzipTest, ConcatenatedMembersAreAllInflated) {
  std::string a = SampleText(5000, 1), b = SampleText(70000, 2), c = "tail";
  std::string gz = GzipCompress(a) + GzipCompress("") + GzipCompress(b) + GzipCompress(c);
  std::string out;
  Status st = Decompress(ContentEncoding::kGzip, gz, kMiB, &out);
  ASSERT_TRUE(st.ok()) << st.ToString();
  EXPECT_EQ(out, a + b + c);
}

TEST(GzipTest, ConcatenatedMembersShareOneCap) {
  std::string a = SampleText(600, 1), b = SampleText(600, 2);
  std::string gz = GzipCompress(a) + GzipCompress(b);
  std::string out;
  ASSERT_TRUE(Decompress(ContentEncoding::kGzip, gz, 1200, &out).ok());
  EXPECT_EQ(out, a + b);
  Status st = Decompress(ContentEncoding::kGzip, gz, 1199, &out);
  EXPECT_EQ(st.code(), StatusCode::kPayloadTooLarge) << st.ToString();
}

TEST(GzipTest, CapIsInclusive) {
  std::string in = SampleText(4096);
  std::string gz = GzipCompress(in);
  std::string out;
  ASSERT_TRUE(Decompress(ContentEncoding::kGzip, gz, 4096, &out).ok());
  EXPECT_EQ(out, in);
  Status st = Decompress(ContentEncoding::kGzip, gz, 4095, &out);
  EXPECT_EQ(st.code(), StatusCode::kPayloadTooLarge) << st.ToString();
}

TEST(GzipTest, EmptyBodyInflatesToNothing) {
  // Zero members: nothing to inflate (an empty OTLP request, which decodes to no rows).
  std::string out = "stale";
  ASSERT_TRUE(Decompress(ContentEncoding::kGzip, "", kMiB, &out).ok());
  EXPECT_EQ(out, "");
}

TEST(GzipTest, CorruptInputIsInvalidArgument) {
  std::string in = SampleText(20000);
  std::string gz = GzipCompress(in);
  std::string out;

  std::string flipped = gz;
  flipped[gz.size() / 2] ^= 0x55;  // inside the deflate stream
  EXPECT_EQ(Decompress(ContentEncoding::kGzip, flipped, kMiB, &out).code(), StatusCode::kInvalidArgument);

  std::string bad_crc = gz;
  bad_crc[gz.size() - 8] ^= 1;
  EXPECT_EQ(Decompress(ContentEncoding::kGzip, bad_crc, kMiB, &out).code(), StatusCode::kInvalidArgument);

  std::string bad_magic = gz;
  bad_magic[0] = 'x';
  EXPECT_EQ(Decompress(ContentEncoding::kGzip, bad_magic, kMiB, &out).code(), StatusCode::kInvalidArgument);

  for (size_t keep : {size_t{5}, size_t{17}, gz.size() / 2, gz.size() - 1}) {
    Status st = Decompress(ContentEncoding::kGzip, std::string_view(gz).substr(0, keep), kMiB, &out);
    EXPECT_EQ(st.code(), StatusCode::kInvalidArgument) << "truncated to " << keep << ": " << st.ToString();
  }

  EXPECT_EQ(Decompress(ContentEncoding::kGzip, "this is plainly not gzip data", kMiB, &out).code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(Decompress(ContentEncoding::kGzip, gz + "trailing garbage bytes", kMiB, &out).code(),
            StatusCode::kInvalidArgument);
}

TEST(GzipTest, LyingIsizeStillDecodesCorrectly) {
  std::string in = SampleText(100000);
  const std::string gz = GzipCompress(in);
  for (uint32_t isize : {0u, 1u, 99999u, 100001u, 1000000u, 0xffffffffu}) {
    std::string lie = gz;
    SetIsize(&lie, isize);
    std::string out;
    Status st = Decompress(ContentEncoding::kGzip, lie, kMiB, &out);
    // libdeflate checks the real size against ISIZE, so a lie may be refused;
    // what must never happen is a wrong or overrun output.
    if (st.ok()) {
      EXPECT_EQ(out, in) << "isize " << isize;
    } else {
      EXPECT_EQ(st.code(), StatusCode::kInvalidArgument) << "isize " << isize << ": " << st.ToString();
    }
    EXPECT_LE(out.size(), kMiB);
  }
}

TEST(GzipTest, LyingIsizeNeverLetsOutputPassTheCap) {
  // Real size 100000, trailer claims 10: the decoder must still stop at the cap.
  std::string in = SampleText(100000);
  std::string gz = GzipCompress(in);
  SetIsize(&gz, 10);
  std::string out;
  Status st = Decompress(ContentEncoding::kGzip, gz, 50000, &out);
  EXPECT_FALSE(st.ok());
  EXPECT_LE(out.size(), 50000u);
  EXPECT_LE(out.capacity(), 64u * 1024);
}

TEST(GzipTest, HandMadeBombGeneratorIsValidGzip) {
  uint64_t size = 0;
  std::string gz = GzipZeroBomb(1000, &size);
  std::string out;
  Status st = Decompress(ContentEncoding::kGzip, gz, kMiB, &out);
  ASSERT_TRUE(st.ok()) << st.ToString();
  ASSERT_EQ(out.size(), size);
  EXPECT_EQ(out.find_first_not_of('\0'), std::string::npos);
}

TEST(GzipTest, BombIsRefusedQuicklyWithinTheCap) {
  uint64_t size = 0;
  std::string gz = GzipZeroBomb((200 * kMiB) / 258, &size);  // ~200 MiB from ~1.3 MB
  ASSERT_GT(size, 199 * kMiB);
  ASSERT_LT(gz.size(), 2 * kMiB);
  std::string out;
  auto start = std::chrono::steady_clock::now();
  Status st = Decompress(ContentEncoding::kGzip, gz, 20 * kMiB, &out);
  auto elapsed = std::chrono::steady_clock::now() - start;
  EXPECT_EQ(st.code(), StatusCode::kPayloadTooLarge) << st.ToString();
  EXPECT_LE(out.size(), 20 * kMiB);
  // The buffer never grew past the cap (capacity keeps the high-water mark).
  EXPECT_LE(out.capacity(), 20 * kMiB + 64);
  EXPECT_LT(elapsed, std::chrono::seconds(10));
}

TEST(GzipTest, BombWithAnIsizeBelowTheCapIsRefused) {
  // ISIZE is only a hint (it is mod 2^32): a trailer claiming 16 bytes must not
  // let 64 MiB through.
  uint64_t size = 0;
  std::string gz = GzipZeroBomb((64 * kMiB) / 258, &size);
  SetIsize(&gz, 16);
  std::string out;
  auto start = std::chrono::steady_clock::now();
  Status st = Decompress(ContentEncoding::kGzip, gz, 8 * kMiB, &out);
  auto elapsed = std::chrono::steady_clock::now() - start;
  EXPECT_EQ(st.code(), StatusCode::kPayloadTooLarge) << st.ToString();
  EXPECT_LE(out.capacity(), 8 * kMiB + 64);
  EXPECT_LT(elapsed, std::chrono::seconds(10));
}

// --- zstd ------------------------------------------------------------------------

TEST(ZstdTest, RoundTrip) {
  for (size_t size : {size_t{0}, size_t{1}, size_t{1000}, 700 * size_t{1024}}) {
    std::string in = SampleText(size, static_cast<uint32_t>(size));
    std::string out = "stale";
    Status st = Decompress(ContentEncoding::kZstd, ZstdCompress(in), kMiB, &out);
    ASSERT_TRUE(st.ok()) << st.ToString() << " size " << size;
    EXPECT_EQ(out, in) << "size " << size;
  }
}

TEST(ZstdTest, StreamedFrameWithoutContentSizeRoundTrips) {
  for (uint64_t size : {uint64_t{0}, uint64_t{3}, uint64_t{300000}, uint64_t{kMiB}}) {
    std::string z = ZstdStreamedZeros(size, /*checksum=*/true);
    if (size > 0) {
      ASSERT_EQ(ZSTD_getFrameContentSize(z.data(), z.size()), ZSTD_CONTENTSIZE_UNKNOWN);
    }
    std::string out;
    Status st = Decompress(ContentEncoding::kZstd, z, kMiB, &out);
    ASSERT_TRUE(st.ok()) << st.ToString() << " size " << size;
    EXPECT_EQ(out, std::string(size, '\0')) << "size " << size;
  }
}

TEST(ZstdTest, ConcatenatedFramesAreAllDecoded) {
  std::string a = SampleText(3000, 5), b = SampleText(90000, 6);
  std::string out;
  Status st = Decompress(ContentEncoding::kZstd, ZstdCompress(a) + ZstdCompress(b), kMiB, &out);
  ASSERT_TRUE(st.ok()) << st.ToString();
  EXPECT_EQ(out, a + b);
}

TEST(ZstdTest, CapIsInclusive) {
  std::string in = SampleText(5000);
  std::string z = ZstdCompress(in);
  std::string out;
  ASSERT_TRUE(Decompress(ContentEncoding::kZstd, z, 5000, &out).ok());
  EXPECT_EQ(out, in);
  EXPECT_EQ(Decompress(ContentEncoding::kZstd, z, 4999, &out).code(), StatusCode::kPayloadTooLarge);
  std::string streamed = ZstdStreamedZeros(5000);
  ASSERT_TRUE(Decompress(ContentEncoding::kZstd, streamed, 5000, &out).ok());
  EXPECT_EQ(out.size(), 5000u);
  EXPECT_EQ(Decompress(ContentEncoding::kZstd, streamed, 4999, &out).code(), StatusCode::kPayloadTooLarge);
}

TEST(ZstdTest, DeclaredSizeOverTheCapIsRefusedUpFront) {
  std::string z = ZstdCompress(std::string(2 * kMiB, 'a'));
  std::string out;
  Status st = Decompress(ContentEncoding::kZstd, z, kMiB, &out);
  EXPECT_EQ(st.code(), StatusCode::kPayloadTooLarge) << st.ToString();
  EXPECT_EQ(out.capacity() <= kMiB + 64, true) << out.capacity();
}

TEST(ZstdTest, StreamedBombIsRefusedQuicklyWithinTheCap) {
  std::string z = ZstdStreamedZeros(200 * kMiB);
  ASSERT_LT(z.size(), 64u * 1024);
  std::string out;
  auto start = std::chrono::steady_clock::now();
  Status st = Decompress(ContentEncoding::kZstd, z, 20 * kMiB, &out);
  auto elapsed = std::chrono::steady_clock::now() - start;
  EXPECT_EQ(st.code(), StatusCode::kPayloadTooLarge) << st.ToString();
  // Growth by resize may double the buffer once, never more.
  EXPECT_LE(out.capacity(), 2 * (20 * kMiB + 1));
  EXPECT_LT(elapsed, std::chrono::seconds(10));
}

TEST(ZstdTest, CorruptInputIsInvalidArgument) {
  std::string in = SampleText(50000);
  std::string out;

  std::unique_ptr<ZSTD_CCtx, size_t (*)(ZSTD_CCtx*)> cctx(ZSTD_createCCtx(), ZSTD_freeCCtx);
  ZSTD_CCtx_setParameter(cctx.get(), ZSTD_c_checksumFlag, 1);
  std::string z(ZSTD_compressBound(in.size()), '\0');
  size_t n = ZSTD_compress2(cctx.get(), z.data(), z.size(), in.data(), in.size());
  ASSERT_FALSE(ZSTD_isError(n));
  z.resize(n);
  ASSERT_TRUE(Decompress(ContentEncoding::kZstd, z, kMiB, &out).ok());
  ASSERT_EQ(out, in);

  std::string bad_checksum = z;
  bad_checksum.back() ^= 1;
  EXPECT_EQ(Decompress(ContentEncoding::kZstd, bad_checksum, kMiB, &out).code(), StatusCode::kInvalidArgument);

  std::string flipped = z;
  for (size_t i = 20; i < flipped.size() - 8; i += 97) flipped[i] ^= 0xa5;
  EXPECT_EQ(Decompress(ContentEncoding::kZstd, flipped, kMiB, &out).code(), StatusCode::kInvalidArgument);

  for (size_t keep : {size_t{0}, size_t{3}, size_t{8}, z.size() / 2, z.size() - 1}) {
    Status st = Decompress(ContentEncoding::kZstd, std::string_view(z).substr(0, keep), kMiB, &out);
    EXPECT_EQ(st.code(), StatusCode::kInvalidArgument) << "truncated to " << keep << ": " << st.ToString();
  }

  EXPECT_EQ(Decompress(ContentEncoding::kZstd, "definitely not a zstd frame", kMiB, &out).code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(Decompress(ContentEncoding::kZstd, z + "garbage after the frame", kMiB, &out).code(),
            StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace sightline
