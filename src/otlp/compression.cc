#include "otlp/compression.h"

#include <libdeflate.h>
#include <zstd.h>

#include <algorithm>
#include <cstring>
#include <memory>

namespace sightline {

Result<ContentEncoding> ParseContentEncoding(std::string_view header) {
  std::string v;
  for (char c : header) {
    if (c != ' ' && c != '\t') v.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
  }
  if (v.empty() || v == "identity") return ContentEncoding::kIdentity;
  if (v == "gzip" || v == "x-gzip") return ContentEncoding::kGzip;
  if (v == "zstd") return ContentEncoding::kZstd;
  return Status::UnsupportedMedia("unsupported Content-Encoding '" + std::string(header) +
                                  "' (supported: gzip, zstd, identity)");
}

namespace {

struct DecompressorDeleter {
  void operator()(libdeflate_decompressor* d) const { libdeflate_free_decompressor(d); }
};

libdeflate_decompressor* ThreadDecompressor() {
  thread_local std::unique_ptr<libdeflate_decompressor, DecompressorDeleter> d(libdeflate_alloc_decompressor());
  return d.get();
}

Status TooLarge(size_t max_out) {
  return Status::PayloadTooLarge("decompressed body exceeds the limit of " + std::to_string(max_out) + " bytes");
}

// One gzip member at a time (concatenated members are legal gzip). The
// trailer's ISIZE (size mod 2^32) sizes the buffer; a member whose ISIZE
// claims more than the limit is refused before any inflation.
Status GunzipLibdeflate(std::string_view in, size_t max_out, std::string* out) {
  out->clear();
  libdeflate_decompressor* d = ThreadDecompressor();
  while (!in.empty()) {
    if (in.size() < 18) return Status::InvalidArgument("gzip: body too short to be gzip");
    uint32_t isize;
    std::memcpy(&isize, in.data() + in.size() - 4, 4);  // little-endian hosts only (x86-64, arm64)
    size_t room = max_out - out->size();
    size_t guess = std::min<size_t>(isize, room);
    for (int attempt = 0; attempt < 2; ++attempt) {
      size_t base = out->size();
      out->resize(base + guess);
      size_t in_used = 0, out_used = 0;
      libdeflate_result r =
          libdeflate_gzip_decompress_ex(d, in.data(), in.size(), out->data() + base, guess, &in_used, &out_used);
      if (r == LIBDEFLATE_SUCCESS) {
        out->resize(base + out_used);
        in.remove_prefix(in_used);
        break;
      }
      out->resize(base);
      if (r == LIBDEFLATE_BAD_DATA) return Status::InvalidArgument("gzip: corrupt or truncated data");
      if (r != LIBDEFLATE_INSUFFICIENT_SPACE) return Status::InvalidArgument("gzip: cannot decompress");
      // ISIZE was wrong (concatenated members, or a lie): allow the whole budget once.
      if (attempt == 1 || guess == room) return TooLarge(max_out);
      guess = room;
    }
    if (out->size() > max_out) return TooLarge(max_out);
  }
  return Status::Ok();
}

Status Unzstd(std::string_view in, size_t max_out, std::string* out) {
  out->clear();
  std::unique_ptr<ZSTD_DCtx, size_t (*)(ZSTD_DCtx*)> ctx(ZSTD_createDCtx(), ZSTD_freeDCtx);
  unsigned long long declared = ZSTD_getFrameContentSize(in.data(), in.size());
  if (declared == ZSTD_CONTENTSIZE_ERROR) return Status::InvalidArgument("zstd: not a zstd frame");
  if (declared != ZSTD_CONTENTSIZE_UNKNOWN && declared > max_out) return TooLarge(max_out);
  ZSTD_inBuffer input{in.data(), in.size(), 0};
  size_t chunk = declared != ZSTD_CONTENTSIZE_UNKNOWN ? static_cast<size_t>(declared) + 1 : 256 * 1024;
  size_t last = 1;
  while (input.pos < input.size || last != 0) {
    if (out->size() >= max_out + 1) return TooLarge(max_out);
    size_t base = out->size();
    size_t grow = std::min(chunk, max_out + 1 - base);
    out->resize(base + grow);
    ZSTD_outBuffer output{out->data() + base, grow, 0};
    last = ZSTD_decompressStream(ctx.get(), &output, &input);
    out->resize(base + output.pos);
    if (ZSTD_isError(last)) return Status::InvalidArgument(std::string("zstd: ") + ZSTD_getErrorName(last));
    if (input.pos == input.size && last != 0 && output.pos < grow) {
      return Status::InvalidArgument("zstd: truncated frame");
    }
    chunk = std::min<size_t>(chunk * 2, 8 << 20);
  }
  if (out->size() > max_out) return TooLarge(max_out);
  return Status::Ok();
}

}  // namespace

Status Decompress(ContentEncoding encoding, std::string_view in, size_t max_out, std::string* out) {
  switch (encoding) {
    case ContentEncoding::kIdentity:
      if (in.size() > max_out) return TooLarge(max_out);
      out->assign(in);
      return Status::Ok();
    case ContentEncoding::kGzip: return GunzipLibdeflate(in, max_out, out);
    case ContentEncoding::kZstd: return Unzstd(in, max_out, out);
  }
  return Status::Internal("unknown encoding");
}

std::string GzipCompress(std::string_view in, int level) {
  libdeflate_compressor* c = libdeflate_alloc_compressor(level);
  std::string out(libdeflate_gzip_compress_bound(c, in.size()), '\0');
  size_t n = libdeflate_gzip_compress(c, in.data(), in.size(), out.data(), out.size());
  libdeflate_free_compressor(c);
  out.resize(n);
  return out;
}

}  // namespace sightline
