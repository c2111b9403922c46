#pragma once

// The benchmarks' data: OTLP export requests of uniform-random data in
// bounded ranges (the published baseline's method). The generator owns its
// data: it draws each request's rows (generated_rows.h, its own plain
// structs), and its own encoder (otlp_encoder.h) writes them as protobuf or
// OTLP/JSON; what was sent is known without decoding it, which is what the
// read probe's ground truth and the raw-engine comparison rely on.
//
// Shape: 10 services, 5 endpoints each (http.route + http.request.method +
// http.response.status_code); traces of 1..8 spans with parent links (a
// SERVER root, then CLIENT database and INTERNAL children), ~5% of roots in
// error with an "exception" event; log records with severities, a body of
// words from a fixed list, and (80%) trace context; 200 metric series (10
// services x 20: gauges, monotonic cumulative sums, explicit-bucket
// histograms) with realistic label sets.
//
// Requests of up to `sdk_batch_limit` items look like one SDK's export (one
// service, one resource); bigger ones look like a Collector's (every service,
// one resource block each).
//
// Determinism and uniqueness: Spans/Logs/Metrics(index) and Build(signal,
// index) depend only on the options and their arguments (the same seed gives
// the same rows and bytes), so payloads can be built in parallel, in any
// order, and rebuilt later (the probe's truth and the raw engine do). Span
// ids and the high half of trace ids are a bijective mix of (index, ordinal),
// so no two items of a run share an id, however many payloads are built.

#include <cstddef>
#include <cstdint>
#include <string>

#include "bench/generated_rows.h"
#include "bench/otlp_encoder.h"

namespace sightline::bench {

struct GeneratorOptions {
  uint64_t seed = 1;
  size_t batch = 16384;  // items per request (spans, log records, metric points)
  WireFormat format = WireFormat::kProtobuf;
  int gzip_level = 1;        // libdeflate level; 0 sends the body uncompressed
  int64_t base_time_ns = 0;  // data time of payload 0; 0 = now
  //! Data time per step: the window one span / log request covers, and (unless
  //! point_step_ns is set) the interval between a metric series' points. The
  //! read probe shrinks or stretches them so a whole fill lands inside the
  //! range it queries.
  int64_t time_step_ns = 1000000000;
  int64_t point_step_ns = 0;      // 0 = time_step_ns
  size_t sdk_batch_limit = 1000;  // at or below: one service per request
  //! Metrics: every series a gauge of doubles with two decimals in [0, 1000]
  //! (the published comparison's "uniform-random data in bounded ranges"),
  //! instead of the default mix of histograms, int sums and gauges.
  bool bounded_gauges = false;
};

//! The largest batch Build() supports (ids reserve 24 bits for the ordinal).
inline constexpr size_t kMaxGeneratorBatch = (1u << 24) - 1;

//! One ready-to-send request body.
struct Payload {
  Signal signal = Signal::kSpans;
  uint64_t index = 0;
  std::string body;      // gzip-compressed unless gzip_level is 0
  size_t raw_bytes = 0;  // the uncompressed protobuf / JSON size
  uint32_t items = 0;
};

//! Thread-safe (const; per-thread compressor state).
class LoadGenerator {
 public:
  explicit LoadGenerator(GeneratorOptions options);

  const GeneratorOptions& options() const { return options_; }

  //! The rows of the index-th request of each signal: what Build() sends.
  SpanRequest Spans(uint64_t index) const;
  LogRequest Logs(uint64_t index) const;
  MetricRequest Metrics(uint64_t index) const;

  //! The index-th request of a signal: its rows encoded and compressed, ready to send.
  Payload Build(Signal signal, uint64_t index) const;
  //! The uncompressed body of the same request; *items receives the item count.
  std::string BuildRaw(Signal signal, uint64_t index, uint32_t* items) const;

 private:
  GeneratorOptions options_;
};

//! Content-Type and Content-Encoding header values for these payloads.
const char* ContentTypeFor(WireFormat format);
const char* ContentEncodingFor(const GeneratorOptions& options);  // "gzip" or "" (none)
//! OTLP/HTTP path: /v1/traces, /v1/logs, /v1/metrics.
const char* OtlpPath(Signal signal);

}  // namespace sightline::bench
