#pragma once

// The data model: the signals and their columnar batches, what the OTLP
// decoders produce and the engines append. A leaf module: it depends only on
// common/, so decoding does not link storage.
// One batch per request and signal, struct of arrays, strings packed into one
// buffer per column, so decoding allocates per column, not per row.
// Complex values (attribute maps, events, links, histogram buckets, exemplars)
// are carried as JSON text; docs/STORAGE.md lists every column.

#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "model/ids.h"

namespace sightline {

enum class Signal { kSpans = 0, kLogs = 1, kMetrics = 2 };
inline constexpr int kSignalCount = 3;
const char* SignalName(Signal s);  // "spans", "logs", "metrics"

//! Append-only column of strings: one byte buffer plus end offsets.
class StringColumn {
 public:
  void Append(std::string_view s) {
    data_.append(s.data(), s.size());
    ends_.push_back(static_cast<uint32_t>(data_.size()));
  }
  std::string_view Get(size_t i) const {
    uint32_t begin = i == 0 ? 0 : ends_[i - 1];
    return std::string_view(data_.data() + begin, ends_[i] - begin);
  }
  size_t size() const { return ends_.size(); }
  void Reserve(size_t rows, size_t bytes) {
    ends_.reserve(rows);
    data_.reserve(bytes);
  }
  //! Appends into the buffer directly (e.g. a JSON writer); CommitRow() ends it.
  std::string& buffer() { return data_; }
  void CommitRow() { ends_.push_back(static_cast<uint32_t>(data_.size())); }
  size_t ByteSize() const { return data_.capacity() + ends_.capacity() * sizeof(uint32_t); }

 private:
  std::string data_;
  std::vector<uint32_t> ends_;
};

template <typename T>
size_t VectorBytes(const std::vector<T>& v) {
  return v.capacity() * sizeof(T);
}

//! The distinct (resource, instrumentation scope) pairs of a batch. Each is
//! stored once per project in the signal's resources table (span_resources,
//! log_resources, metric_resources); rows carry only its resource_id, a
//! stable hash of the four texts (ResourceId in model/ids.h).
struct ResourceTable {
  std::vector<int64_t> resource_id;
  StringColumn resource_attributes;  // JSON
  StringColumn scope_name;
  StringColumn scope_version;
  StringColumn scope_attributes;  // JSON

  size_t rows() const { return resource_id.size(); }
  size_t ByteSize() const;
};

//! service_name is promoted from resource attribute service.name and kept on
//! each row (dashboards filter on it); the rest of the resource is in resources.
//! What a storage engine derived from a batch on the thread that submitted
//! it (SignalSink::Prepare), for its writer thread to use instead of deriving
//! it there; each engine's own subclass. Immutable once made.
struct PreparedForEngine {
  virtual ~PreparedForEngine() = default;
  //! The memory it holds, charged to the request as its decoded batch is.
  virtual size_t ByteSize() const = 0;
};

struct SpanBatch {
  int64_t project_id = 0;
  // Ids as big-endian 64-bit halves (common/hex.h IdFromBytes); 0 = absent.
  std::vector<uint64_t> trace_id_high;
  std::vector<uint64_t> trace_id_low;
  std::vector<uint64_t> span_id;
  std::vector<uint64_t> parent_span_id;  // 0 for a root span
  StringColumn trace_state;
  std::vector<uint32_t> flags;
  StringColumn name;
  std::vector<int32_t> kind;  // OTLP SpanKind number
  std::vector<int64_t> start_time_ns;
  std::vector<int64_t> end_time_ns;
  std::vector<int32_t> status_code;  // 0 unset, 1 ok, 2 error
  StringColumn status_message;
  StringColumn service_name;
  // Promoted hot attributes ("" / 0 when absent).
  StringColumn http_route;                // http.route, else url.path/http.target
  StringColumn http_method;               // http.request.method or http.method
  std::vector<int32_t> http_status_code;  // http.response.status_code or http.status_code
  StringColumn db_system;
  StringColumn exception_type;  // from the first "exception" event
  StringColumn exception_message;
  StringColumn exception_group;  // NormalizeExceptionMessage(exception_message) ("" without an exception)
  // Full fidelity, JSON text.
  StringColumn attributes;  // {"key": value, ...}
  // '' when the span has none (stored as NULL, like the other optional texts above).
  StringColumn events;  // [{"time_unix_nano":..,"name":..,"attributes":{..},"dropped_attributes_count":..}]
  StringColumn
      links;  // [{"trace_id":..,"span_id":..,"trace_state":..,"attributes":{..},"dropped_attributes_count":..,"flags":..}]
  std::vector<uint32_t> dropped_attributes_count;
  std::vector<uint32_t> dropped_events_count;
  std::vector<uint32_t> dropped_links_count;
  std::vector<int64_t> resource_id;  // a row of `resources`
  ResourceTable resources;
  //! Set by the engine's Prepare; null until then (the writer derives it).
  std::shared_ptr<const PreparedForEngine> prepared;

  size_t rows() const { return start_time_ns.size(); }
  size_t ByteSize() const;
};

struct LogBatch {
  int64_t project_id = 0;
  std::vector<int64_t> time_ns;           // 0 when the record has none
  std::vector<int64_t> observed_time_ns;  // observed time, else receive time
  std::vector<int32_t> severity_number;
  StringColumn severity_text;
  StringColumn body;                    // string bodies as is; other AnyValue kinds as JSON
  std::vector<uint8_t> body_type;       // AnyValueType below
  std::vector<uint64_t> trace_id_high;  // as in SpanBatch; 0 and 0 when absent
  std::vector<uint64_t> trace_id_low;
  std::vector<uint64_t> span_id;  // 0 when absent
  std::vector<uint32_t> flags;
  StringColumn service_name;
  StringColumn attributes;  // JSON
  std::vector<uint32_t> dropped_attributes_count;
  std::vector<int64_t> resource_id;  // a row of `resources`
  ResourceTable resources;
  StringColumn event_name;  // LogRecord.event_name ("" when none)
  //! A log-based exception event: the record's exception.type and
  //! exception.message attributes ("" when absent), grouped as span-event
  //! exceptions are (exception_group, as in SpanBatch).
  StringColumn exception_type;
  StringColumn exception_message;
  StringColumn exception_group;
  //! Set by the engine's Prepare; null until then (the writer derives it).
  std::shared_ptr<const PreparedForEngine> prepared;

  size_t rows() const { return time_ns.size(); }
  size_t ByteSize() const;
};

//! AnyValue kinds (logs.body_type): how to read the body column.
enum class AnyValueType : uint8_t {
  kEmpty = 0,
  kString = 1,
  kBool = 2,
  kInt = 3,
  kDouble = 4,
  kArray = 5,
  kKvList = 6,
  kBytes = 7,
};

enum class MetricType : int32_t {
  kGauge = 1,
  kSum = 2,
  kHistogram = 3,
  kExponentialHistogram = 4,
  kSummary = 5,
};
const char* MetricTypeName(MetricType t);

//! Metrics: each distinct series (metric identity + resource + scope + point
//! attributes) is stored once; points reference it by series_id.
struct MetricBatch {
  int64_t project_id = 0;
  // Series, deduplicated within the batch. series_id is a stable 64-bit hash
  // of everything that identifies the series (see SeriesId in otlp/).
  std::vector<int64_t> series_id;
  StringColumn metric_name;
  std::vector<int32_t> metric_type;  // MetricType
  StringColumn unit;
  StringColumn description;
  std::vector<int32_t> temporality;  // AggregationTemporality: 0 unspecified, 1 delta, 2 cumulative
  std::vector<uint8_t> is_monotonic;
  StringColumn service_name;
  //! Each series' row in `resources`. The series of a request share a few
  //! (resource, scope) pairs, so their texts are kept once per batch, not
  //! once per series, and stored once per project (metric_resources): a
  //! request's memory and the bytes it writes follow its own size.
  std::vector<uint32_t> series_resource;
  ResourceTable resources;
  StringColumn attributes;  // point attributes, JSON

  //! Adds a resource row (no scope attributes) that the next series appended
  //! refers to (tests and generators; the decoder shares rows between series).
  void AddSeriesResource(std::string_view attributes, std::string_view scope, std::string_view version) {
    series_resource.push_back(static_cast<uint32_t>(resources.rows()));
    resources.resource_id.push_back(ResourceId(attributes, scope, version, "{}"));
    resources.resource_attributes.Append(attributes);
    resources.scope_name.Append(scope);
    resources.scope_version.Append(version);
    resources.scope_attributes.Append("{}");
  }

  std::string_view resource_attributes(size_t series) const {
    return resources.resource_attributes.Get(series_resource[series]);
  }
  std::string_view scope_name(size_t series) const { return resources.scope_name.Get(series_resource[series]); }
  std::string_view scope_version(size_t series) const { return resources.scope_version.Get(series_resource[series]); }

  // Points.
  std::vector<int64_t> point_series_id;
  std::vector<int64_t> time_ns;
  std::vector<int64_t> start_time_ns;
  std::vector<double> value;       // gauge/sum value (ints converted); NaN for distributions
  std::vector<int64_t> int_value;  // exact value when the point was an int
  std::vector<uint8_t> is_int;
  std::vector<uint64_t> count;   // histogram / exp histogram / summary count
  std::vector<double> sum;       // NaN when absent
  std::vector<double> min;       // NaN when absent
  std::vector<double> max;       // NaN when absent
  StringColumn bucket_counts;    // JSON array (histogram)
  StringColumn explicit_bounds;  // JSON array (histogram)
  StringColumn exp_histogram;    // JSON {scale, zero_count, positive{offset,bucket_counts}, negative{..}}
  StringColumn quantiles;        // JSON [{"quantile":q,"value":v}] (summary)
  StringColumn exemplars;        // JSON array
  std::vector<uint32_t> flags;

  size_t series_rows() const { return series_id.size(); }
  size_t rows() const { return time_ns.size(); }
  size_t ByteSize() const;

  //! Keeps the series whose keep[i] is set (one flag per series row) and
  //! the points of those series; returns how many points were dropped.
  //! Resource rows stay (a few per batch).
  size_t KeepSeries(const std::vector<uint8_t>& keep);
};

//! One decoded request's batch, whichever its signal.
using AnyBatch = std::variant<SpanBatch, LogBatch, MetricBatch>;
//! Rows (spans, log records, metric points) of any batch.
size_t BatchRows(const AnyBatch& b);
//! What the engine's Prepare left on the batch holds (0 when nothing).
size_t PreparedBytes(const AnyBatch& b);

}  // namespace sightline
