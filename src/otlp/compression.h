#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "common/status.h"

namespace sightline {

enum class ContentEncoding { kIdentity, kGzip, kZstd };

//! Parses a Content-Encoding header value; UnsupportedMedia for anything but
//! none/identity, gzip (x-gzip) and zstd.
Result<ContentEncoding> ParseContentEncoding(std::string_view header);

//! Inflates `in` into `out`, refusing to produce more than max_out bytes
//! (PayloadTooLarge) so a small bomb cannot grow into a large allocation.
//! Corrupt input is InvalidArgument. kIdentity copies.
Status Decompress(ContentEncoding encoding, std::string_view in, size_t max_out, std::string* out);

//! gzip-compresses (for tests, the load generator and responses).
std::string GzipCompress(std::string_view in, int level = 6);

}  // namespace sightline
