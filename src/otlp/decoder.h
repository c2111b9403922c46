#pragma once

// OTLP request bodies (already decompressed) → columnar batches.
// Protobuf is parsed on a per-thread reused arena; JSON follows the OTLP JSON
// mapping (hex trace/span ids, int64 as strings, enums as numbers, unknown
// fields ignored). Items that are individually invalid (e.g. a span without
// a valid trace id) are skipped and counted for the response's partial_success;
// a body that cannot be parsed at all is InvalidArgument.

#include <cstdint>
#include <string>
#include <string_view>

#include "common/status.h"
#include "model/batch.h"

namespace sightline {

enum class PayloadFormat { kProtobuf, kJson };

//! Maps a Content-Type header to a format; UnsupportedMedia otherwise.
Result<PayloadFormat> ParseContentType(std::string_view header);

//! Items skipped while decoding, for ExportPartialSuccess.
struct Rejections {
  int64_t count = 0;
  std::string message;  // the first reason
  void Add(std::string_view reason);
};

//! Each Decode* appends to `out` (whose project_id the caller sets).
//! receive_time_ns fills a log record's observed time when it has none.
Status DecodeSpans(std::string_view body, PayloadFormat format, SpanBatch* out, Rejections* rejected);
Status DecodeLogs(std::string_view body, PayloadFormat format, int64_t receive_time_ns, LogBatch* out,
                  Rejections* rejected);
Status DecodeMetrics(std::string_view body, PayloadFormat format, MetricBatch* out, Rejections* rejected);

}  // namespace sightline
