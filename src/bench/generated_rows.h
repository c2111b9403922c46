#pragma once

// What the load generator chose to send: plain rows, one struct per signal,
// grouped per request. The bench's own data model, independent of the
// server's (model/batch.h): the OTLP encoder (otlp_encoder.h) writes a
// request's rows onto the wire, and the read probe's ground truth
// (probe_truth.h) and the raw-engine comparison (raw_append.h) read the very
// same rows, so neither learns what was sent by decoding it.
//
// Strings are views into the generator's catalogue (built once, never
// freed) or, for a log body, owned by the row. Resources and metric series
// are catalogue entries that rows point to. Rows are plain values: tests
// build them by hand.

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/hex.h"

namespace sightline::bench {

enum class Signal { kSpans = 0, kLogs = 1, kMetrics = 2 };
inline constexpr int kSignalCount = 3;

//! "spans", "logs", "metrics".
inline const char* SignalName(Signal s) {
  switch (s) {
    case Signal::kSpans: return "spans";
    case Signal::kLogs: return "logs";
    case Signal::kMetrics: return "metrics";
  }
  return "spans";
}

//! An OTLP attribute whose value is a string or an int64.
struct Attribute {
  std::string_view key;
  std::string_view string_value;
  int64_t int_value = 0;
  bool is_int = false;
};

//! At most N attributes, stored inline (no allocation per row).
template <size_t N>
class AttributeList {
 public:
  void Add(std::string_view key, std::string_view value) { Push({key, value, 0, false}); }
  void Add(std::string_view key, int64_t value) { Push({key, {}, value, true}); }
  std::span<const Attribute> view() const { return {items_.data(), size_}; }
  //! The attribute with this key, or nullptr.
  const Attribute* Find(std::string_view key) const {
    for (size_t i = 0; i < size_; ++i) {
      if (items_[i].key == key) return &items_[i];
    }
    return nullptr;
  }

 private:
  void Push(const Attribute& a) {
    if (size_ < N) items_[size_++] = a;  // the generator never sends more than N
  }
  std::array<Attribute, N> items_{};
  size_t size_ = 0;
};

//! Who sends: one service's resource. A catalogue entry rows point to.
struct Resource {
  uint32_t id = 0;  // stable per service (1-based): the raw tables' resource_id
  std::string_view service_name;
  std::span<const Attribute> attributes;  // service.name first
};

//! The instrumentation scope every row of a request shares.
struct Scope {
  std::string_view name;
  std::string_view version;
};

using TraceId = std::array<uint8_t, 16>;
using SpanId = std::array<uint8_t, 8>;

inline bool IsZero(std::span<const uint8_t> id) {
  for (uint8_t b : id) {
    if (b != 0) return false;
  }
  return true;
}

struct SpanEvent {
  int64_t time_ns = 0;
  std::string_view name;
  AttributeList<2> attributes;
};

struct SpanRow {
  const Resource* resource = nullptr;
  TraceId trace_id{};
  SpanId span_id{};
  SpanId parent_span_id{};  // all zero: a root span
  std::string_view name;
  int32_t kind = 0;  // OTLP SpanKind: 1 internal, 2 server, 3 client, ...
  int64_t start_time_ns = 0;
  int64_t end_time_ns = 0;
  AttributeList<6> attributes;
  std::optional<SpanEvent> event;  // the generator sends at most one (an "exception")
  int32_t status_code = 0;         // 0 unset, 1 ok, 2 error
  std::string_view status_message;
};

struct LogRow {
  const Resource* resource = nullptr;
  int64_t time_ns = 0;
  int64_t observed_time_ns = 0;
  int32_t severity_number = 0;
  std::string_view severity_text;
  std::string body;  // a string AnyValue
  AttributeList<3> attributes;
  bool has_trace = false;  // trace_id, span_id and flags are sent only then
  TraceId trace_id{};
  SpanId span_id{};
  uint32_t flags = 0;
};

enum class MetricKind { kGauge, kSum, kHistogram };

//! A metric's identity. Sums are monotonic and, like histograms, cumulative.
struct MetricDef {
  std::string_view name;
  std::string_view description;
  std::string_view unit;
  MetricKind kind = MetricKind::kGauge;
  bool is_int = false;  // gauges and sums: asInt, else asDouble
};

//! One time series: a metric of one service with its point attributes.
struct MetricSeries {
  uint32_t id = 0;  // unique over the catalogue (1-based): the raw tables' series_id
  const Resource* resource = nullptr;
  const MetricDef* metric = nullptr;
  std::span<const Attribute> labels;
};

inline constexpr size_t kHistogramBuckets = 12;  // 11 explicit bounds

struct MetricPoint {
  const MetricSeries* series = nullptr;
  int64_t time_ns = 0;
  int64_t start_time_ns = 0;  // 0 for gauges (not sent)
  // Gauges and sums: the value (series->metric->is_int picks which).
  int64_t int_value = 0;
  double double_value = 0;
  // Histograms.
  uint64_t count = 0;
  double sum = 0, min = 0, max = 0;
  std::array<uint64_t, kHistogramBuckets> bucket_counts{};
  std::span<const double> explicit_bounds;  // kHistogramBuckets - 1 values
};

//! One request's rows, in the order they go on the wire: consecutive rows of
//! one resource form one resource block (and, for metrics, consecutive points
//! of one metric one Metric message).
template <typename Row>
struct GeneratedRequest {
  Scope scope;
  std::vector<Row> rows;
};
using SpanRequest = GeneratedRequest<SpanRow>;
using LogRequest = GeneratedRequest<LogRow>;
using MetricRequest = GeneratedRequest<MetricPoint>;

//! Lower-case hex of an id ("" when it is all zero, as the API shows an absent id).
inline std::string IdHex(std::span<const uint8_t> id) {
  std::string out;
  if (!IsZero(id)) AppendHex(&out, std::string_view(reinterpret_cast<const char*>(id.data()), id.size()));
  return out;
}

}  // namespace sightline::bench
