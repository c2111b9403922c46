#pragma once

// OTLP request bodies (already decompressed) → columnar batches.
// Protobuf is parsed on a per-thread reused arena; JSON follows the OTLP JSON
// mapping (hex trace/span ids, int64 as strings, enums as numbers, unknown
// fields ignored). Items that are individually invalid (e.g. a span without
// a valid trace id) are skipped and counted for the response's partial_success;
// a body that cannot be parsed at all is InvalidArgument.

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "model/batch.h"

namespace sightline {

enum class PayloadFormat { kProtobuf, kJson };

//! Maps a Content-Type header to a format; UnsupportedMedia otherwise.
Result<PayloadFormat> ParseContentType(std::string_view header);

//! Items skipped while decoding, and values cut to DecodeLimits, for
//! ExportPartialSuccess: how many, and each reason with its count, so the
//! error_message can summarise them all.
struct Rejections {
  //! One reason: `count` of `noun` (singular; the plural adds "s") with `detail`.
  struct Reason {
    std::string noun;
    std::string detail;
    int64_t count = 0;
    std::string example;  // of the first occurrence, e.g. the metric's name ("" if none)
  };

  int64_t count = 0;  // items rejected
  //! Values, names and attribute / event / link lists cut or shortened to
  //! DecodeLimits; their items were kept.
  int64_t truncated = 0;
  std::vector<Reason> reasons;  // in the order first seen

  //! One `item` ("span", "log record", ...) rejected because `why`.
  void Reject(std::string_view item, std::string_view why, std::string_view example = "");
  //! `n` items rejected for one reason (after decoding, e.g. the series cap).
  void RejectMany(std::string_view item, std::string_view why, int64_t n);
  //! `n` values or list entries (`noun`) cut as `how` says; their items kept.
  void Cut(std::string_view noun, std::string_view how, int64_t n);
  //! Every reason with its count, "; "-separated, e.g. "1 span rejected:
  //! invalid trace_id (...); 2 attribute values cut to 4096 bytes (...)".
  std::string Summary() const;

 private:
  Reason* Find(std::string_view noun, std::string_view detail);
};

//! How long the texts of one request may be and how many of each list are
//! kept (OpenTelemetry's attribute limits, applied as the SDKs apply them:
//! cut and counted in `dropped_*_count` and Rejections::truncated, never
//! refused), and how much memory decoding it may build.
struct DecodeLimits {
  size_t max_attribute_value_bytes = 4096;  // string / bytes values at any depth, status messages, descriptions
  size_t max_attributes = 128;              // per attribute map (span, event, link, record, point, resource, scope)
  size_t max_span_events = 128;
  size_t max_span_links = 128;
  size_t max_name_bytes = 1024;  // span, event, metric and scope names, units, severity texts, trace states
  //! service.name is copied onto every row (dashboards filter on it), so it
  //! gets its own, shorter cut.
  size_t max_service_name_bytes = 256;
  //! The protobuf messages and the batch together may hold at most this
  //! many bytes; past it decoding stops with PayloadTooLarge (413).
  size_t max_decode_bytes = SIZE_MAX;
  //! Told each growth of what decoding holds, as it grows (the admission
  //! ticket); a non-OK status stops decoding with that status. Optional.
  std::function<Status(size_t more_bytes)> charge;
};

//! Each Decode* appends to `out` (whose project_id the caller sets).
//! receive_time_ns fills a log record's observed time when it has none.
//! Not reentrant on one thread (the memory budget is per thread).
Status DecodeSpans(std::string_view body, PayloadFormat format, SpanBatch* out, Rejections* rejected,
                   const DecodeLimits& limits = {});
Status DecodeLogs(std::string_view body, PayloadFormat format, int64_t receive_time_ns, LogBatch* out,
                  Rejections* rejected, const DecodeLimits& limits = {});
Status DecodeMetrics(std::string_view body, PayloadFormat format, MetricBatch* out, Rejections* rejected,
                     const DecodeLimits& limits = {});

}  // namespace sightline
