// libFuzzer: Decompress (gzip, zstd, identity) with a 1 MiB cap.
// Oracles: no crash, leak or UB; never more than the cap on success; whatever
// the reference decoders (one-shot libdeflate, unchunked zstd streaming, each
// into one cap-sized buffer) decode, Decompress decodes to the same bytes; and
// compressing the input (when under the cap) round-trips.

#include <libdeflate.h>
#include <zstd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <string_view>

#include "otlp/compression.h"

namespace {

using namespace sightline;

constexpr size_t kCap = 1 << 20;

[[noreturn]] void Fail(const char* what, const Status& st) {
  std::fprintf(stderr, "fuzz check failed: %s (%s)\n", what, st.ToString().c_str());
  std::abort();
}

void CheckError(const Status& st) {
  if (st.code() != StatusCode::kInvalidArgument && st.code() != StatusCode::kPayloadTooLarge) {
    Fail("unexpected error code", st);
  }
}

//! Scratch output for the reference decoders (not zeroed per input: cheap).
char* Scratch() {
  static std::unique_ptr<char[]> buf(new char[kCap]);
  return buf.get();
}

//! A single gzip member that fits the cap, decoded by libdeflate alone.
bool ReferenceGunzip(std::string_view in, std::string* out) {
  static libdeflate_decompressor* d = libdeflate_alloc_decompressor();
  size_t in_used = 0, out_used = 0;
  if (libdeflate_gzip_decompress_ex(d, in.data(), in.size(), Scratch(), kCap, &in_used, &out_used) !=
          LIBDEFLATE_SUCCESS ||
      in_used != in.size()) {
    return false;
  }
  out->assign(Scratch(), out_used);
  return true;
}

//! Streaming zstd into one cap-sized buffer (no chunking), the way the
//! format's reference decoder is meant to be driven. (ZSTD_decompress is not
//! used: it accepts frames whose blocks exceed the declared window, which the
//! streaming decoder, and so Decompress, rightly refuse.)
bool ReferenceUnzstd(std::string_view in, std::string* out) {
  static ZSTD_DCtx* d = ZSTD_createDCtx();
  ZSTD_DCtx_reset(d, ZSTD_reset_session_only);
  ZSTD_inBuffer input{in.data(), in.size(), 0};
  ZSTD_outBuffer output{Scratch(), kCap, 0};
  for (;;) {
    size_t in_before = input.pos, out_before = output.pos;
    size_t last = ZSTD_decompressStream(d, &output, &input);
    if (ZSTD_isError(last)) return false;
    if (input.pos == input.size && last == 0) break;
    if (input.pos == in_before && output.pos == out_before) return false;  // truncated, or over the cap
  }
  out->assign(Scratch(), output.pos);
  return true;
}

//! A zstd frame whose header declares more than the cap: Decompress refuses
//! it up front with 413 (the client said it is too large), even where the
//! streaming reference decoder, which does not hold a frame to its declared
//! size, accepts the shorter content that follows.
bool DeclaresOverCap(ContentEncoding encoding, std::string_view in) {
  if (encoding != ContentEncoding::kZstd) return false;
  unsigned long long declared = ZSTD_getFrameContentSize(in.data(), in.size());
  return declared != ZSTD_CONTENTSIZE_UNKNOWN && declared != ZSTD_CONTENTSIZE_ERROR && declared > kCap;
}

void CheckDecodes(ContentEncoding encoding, std::string_view in, bool reference_ok, const std::string& reference) {
  std::string out;
  Status st = Decompress(encoding, in, kCap, &out);
  if (!st.ok()) {
    CheckError(st);
    bool refused_by_header = st.code() == StatusCode::kPayloadTooLarge && DeclaresOverCap(encoding, in);
    if (reference_ok && !refused_by_header) Fail("the reference decoder accepts what Decompress refuses", st);
    return;
  }
  if (out.size() > kCap) Fail("output over the cap", st);
  if (reference_ok && out != reference) Fail("output differs from the reference decoder", st);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view in(reinterpret_cast<const char*>(data), size);
  std::string reference;

  bool gz_ok = ReferenceGunzip(in, &reference);
  CheckDecodes(ContentEncoding::kGzip, in, gz_ok, reference);
  bool zstd_ok = ReferenceUnzstd(in, &reference);
  CheckDecodes(ContentEncoding::kZstd, in, zstd_ok, reference);

  std::string out;
  Status st = Decompress(ContentEncoding::kIdentity, in, kCap, &out);
  if (size <= kCap && (!st.ok() || out != in)) Fail("identity is not a copy", st);
  if (size > kCap && st.code() != StatusCode::kPayloadTooLarge) Fail("identity over the cap", st);

  // Round trips: the input as the payload.
  if (size <= kCap) {
    st = Decompress(ContentEncoding::kGzip, GzipCompress(in, size % 13), kCap, &out);
    if (!st.ok() || out != in) Fail("gzip round trip", st);
    std::string z(ZSTD_compressBound(size), '\0');
    size_t n = ZSTD_compress(z.data(), z.size(), in.data(), in.size(), 1);
    if (!ZSTD_isError(n)) {
      z.resize(n);
      st = Decompress(ContentEncoding::kZstd, z, kCap, &out);
      if (!st.ok() || out != in) Fail("zstd round trip", st);
    }
  }
  return 0;
}
