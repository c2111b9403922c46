#pragma once

// The read contract: every dashboard operation as a typed query and a typed
// result. query/ parses API parameters into these, calls one or more
// operations on a leased TelemetryReader and renders JSON; it never sees SQL.
// Engines implement the operations: the SQL engines share one implementation
// (storage/sql/), and an engine overrides a whole operation where its SQL or
// its access path differs (ClickHouse; rollups). The in-memory reference
// engine (storage/memory/) implements them in plain C++, and the read
// conformance suite holds every engine to its answers.
//
// Conventions for every operation:
// - Times are UTC nanoseconds; a range is [from_ns, to_ns).
// - Trace and span ids are the stored 64-bit halves (model/batch.h); a zero
//   id (both halves 0 for a trace) means "absent".
// - Percentiles are exact, with linear interpolation between closest ranks
//   (numpy's default, DuckDB quantile_cont) over duration_ns.
// - "Entry spans" are spans of kind SERVER or CONSUMER, or without a parent
//   (the stored is_entry column). A span's endpoint is its http.route when
//   set, else its name (the stored endpoint column).
// - Results come in the order each operation states, with ties broken as
//   stated, so two engines give identical answers.

#include <array>
#include <atomic>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "common/status.h"
#include "model/batch.h"

namespace sightline {

struct TimeRange {
  int64_t from_ns = 0;
  int64_t to_ns = 0;  // exclusive
};

//! Fixed-width time buckets: bucket i holds [origin_ns + i*step_ns, origin_ns + (i+1)*step_ns).
//! Rows before the origin fall in negative buckets and, like rows at or past
//! bucket `count`, are never returned.
struct Buckets {
  int64_t origin_ns = 0;
  int64_t step_ns = 1;
  int64_t count = 0;  // rows outside [0, count) are never returned
};

//! A 128-bit trace id as its stored halves.
struct TraceId {
  uint64_t high = 0;
  uint64_t low = 0;
  bool empty() const { return high == 0 && low == 0; }
  auto operator<=>(const TraceId&) const = default;
};

//! A condition on one key of an attribute map (a JSON object column). Every
//! engine answers each operator alike:
//! - kEq: the key holds a string, boolean or number whose text equals
//!   `value`: strings as they are, true/false as "true"/"false", numbers as
//!   the stored JSON writes them (integers and plain decimals; exponent forms
//!   such as 1e+21 are rendered differently by each engine and are not part
//!   of the contract).
//! - kNe: the key holds a string, boolean or number whose text (as for kEq)
//!   differs from `value`. An absent key or a null value does not match: "!="
//!   says "has the key, with another value" (as TraceQL's != does).
//! - kGt, kLt: the key holds a JSON number (integer or decimal, not a string
//!   of digits, not a boolean) greater (less) than `number`, both compared as
//!   IEEE doubles (integers past 2^53 are rounded first, alike everywhere).
//!   `value` is not read; `number` is finite (the caller parsed it).
//! - kExists: the key is present with a non-null value of any type.
//! For every operator: an absent key, a null value, or a column that is not
//! a JSON object matches nothing; an array or object value matches kExists
//! and never kGt/kLt (how kEq/kNe compare it as text is not part of the
//! contract); of a key repeated in one object, the first is read.
enum class AttrOp { kEq, kNe, kGt, kLt, kExists };

struct AttrFilter {
  std::string key;
  std::string value;  // kEq, kNe
  AttrOp op = AttrOp::kEq;
  double number = 0;  // kGt, kLt
};

// ------------------------------------------------------------------- spans

struct FacetCount {
  std::string value;
  int64_t count = 0;
};

//! One attribute key of a sample (log facets, attribute suggestions). Only string, boolean and number values
//! count (null, arrays and objects do not), as text as AttrFilter compares it.
struct AttributeFacet {
  std::string key;
  int64_t count = 0;               // sampled records where the key has such a value
  std::vector<FacetCount> values;  // by count descending, then value ascending (bytes)
};

//! The spans an operation reads.
struct SpanFilter {
  int64_t project_id = 0;
  TimeRange range;                         // on start_time_ns
  bool entry_only = false;                 // only entry spans
  std::optional<std::string> service;      // service_name =
  std::optional<std::string> endpoint;     // endpoint =
  std::optional<int32_t> status_code;      // 0 unset, 1 ok, 2 error
  std::optional<int64_t> min_duration_ns;  // duration_ns >=
  std::optional<int64_t> max_duration_ns;  // duration_ns <=
  std::vector<AttrFilter> attributes;      // span attributes, all must match
  //! The attributes of the span's resource (its span_resources row, the one
  //! first written for its resource id), all must match; a span whose
  //! resource row is missing matches none.
  std::vector<AttrFilter> resource_attributes;
};

//! What a span group is keyed by, in key order.
enum class SpanDimension {
  kService,   // service_name
  kEndpoint,  // endpoint
  kBucket,    // time bucket of start_time_ns (SpanGroupQuery::buckets)
  kLabel,     // index into SpanGroupQuery::labels of (service, endpoint), or -1 ("other")
};

//! Count, errors and latency percentiles of the spans matching `filter`,
//! grouped by `dimensions`.
struct SpanGroupQuery {
  SpanFilter filter;
  std::vector<SpanDimension> dimensions;
  //! Which of p50, p95, p99 to compute (the others stay NaN in the result).
  std::array<bool, 3> percentiles = {true, true, true};
  Buckets buckets;  // for kBucket
  //! Distinct (service, endpoint) pairs for kLabel.
  std::vector<std::pair<std::string, std::string>> labels;
  //! At most max_groups + 1 groups come back: more than max_groups tells the
  //! caller the answer passed its cap (which groups is then unspecified).
  int64_t max_groups = INT64_MAX - 1;
};

struct SpanGroup {
  //! One value per dimension: the text of kService/kEndpoint; the decimal
  //! bucket index or label index for kBucket/kLabel.
  std::vector<std::string> keys;
  int64_t count = 0;
  int64_t errors = 0;                    // status_code = 2
  std::array<double, 3> percentiles_ns;  // p50, p95, p99; NaN when not asked
};
//! Groups in no particular order (the caller sorts); only groups with spans
//! (no dimensions and no matching span: no group).
using SpanGroups = std::vector<SpanGroup>;

//! How SearchTraces orders traces. A trace's start is the earliest start of
//! its spans in the filter's range; its duration is the latest end minus that
//! start over the same spans (for a trace wholly inside the range: its
//! TraceSummary's end_ns - start_ns). Both are taken over all of the trace's
//! spans in the range, whichever of them matched.
enum class TraceOrder {
  kStartDesc,     // start descending (newest first), then trace id ascending
  kDurationDesc,  // duration descending, then trace id ascending
  kDurationAsc,   // duration ascending, then trace id ascending
};

//! Traces with at least one span matching `filter`, in `order`: the `limit`
//! traces after the first `offset` of them (a page). To say whether more
//! follow, the caller asks for one more than it shows.
struct TraceSearchQuery {
  SpanFilter filter;
  int64_t limit = 50;  // at least 1
  TraceOrder order = TraceOrder::kStartDesc;
  int64_t offset = 0;  // at least 0
};

struct TraceSummary {
  TraceId trace_id;
  //! Over all the trace's spans of the project, at any time: its earliest
  //! span's service and name (ties: a root span first, then the smallest span
  //! id, so a trace is named by its root), the earliest start,
  //! the latest end, the span count, and whether any span has status error.
  std::string service;
  std::string name;
  int64_t start_ns = 0;
  int64_t end_ns = 0;
  int64_t span_count = 0;
  bool error = false;
};
//! In the query's TraceOrder (trace ids ascending as unsigned).
using TraceSummaries = std::vector<TraceSummary>;

//! How the durations of the spans matching `filter` spread (the Traces page's
//! distribution chart): a count per duration bucket. Bucket 0 holds durations
//! below bounds_ns[0], bucket i holds [bounds_ns[i-1], bounds_ns[i]), the
//! last one (index bounds_ns.size()) those at or above bounds_ns.back().
struct DurationHistogramQuery {
  SpanFilter filter;
  std::vector<int64_t> bounds_ns;  // strictly ascending, not empty; else InvalidArgument
};

struct DurationHistogram {
  std::vector<int64_t> counts;  // bounds_ns.size() + 1 counts, every bucket
  int64_t total = 0;            // matching spans (the sum of counts)
  int64_t min_ns = 0;           // shortest and longest duration; 0 when total is 0
  int64_t max_ns = 0;
};

//! The attribute keys and values of the spans matching `filter`, for
//! suggestions: over the newest `sample` of them (by start_time_ns
//! descending, then trace id and span id ascending as unsigned; of two stored
//! copies of one span, which is read is unspecified), the keys of their own
//! attributes and of their resource's attributes (as resource_attributes
//! filters read them), each with its most frequent values. Values and keys
//! count as in LogFacets (AttributeFacet): only string, boolean and number
//! values, as text as AttrFilter's kEq compares it.
struct AttributeSuggestionQuery {
  SpanFilter filter;
  int64_t sample = 1000;
  //! Only this key (in both maps): for the values of one key, the caller adds
  //! a kExists filter on it so the sample holds spans that have it.
  std::optional<std::string> key;
  //! At most max_keys + 1 keys per map, each with at most max_values + 1
  //! values (more says there are others); InvalidArgument below 1.
  int64_t max_keys = 20;
  int64_t max_values = 10;
};

struct AttributeSuggestions {
  int64_t sampled = 0;                   // min(matching spans, sample)
  std::vector<AttributeFacet> span;      // by count descending, then key ascending (bytes)
  std::vector<AttributeFacet> resource;  // the same, of the resources' attributes
};

//! Every span and log record of one trace, at any time.
struct TraceQuery {
  int64_t project_id = 0;
  TraceId trace_id;
  int64_t max_spans = INT64_MAX;  // the first max_spans spans in their order
  int64_t max_logs = INT64_MAX;   // the first max_logs log records in their order
};

struct SpanRecord {
  uint64_t span_id = 0;
  uint64_t parent_span_id = 0;  // 0 for a root
  std::string service;
  std::string name;
  int32_t kind = 0;
  int64_t start_ns = 0;
  int64_t end_ns = 0;
  int64_t duration_ns = 0;
  int32_t status_code = 0;
  std::string status_message;
  std::string trace_state;
  std::string attributes;           // JSON object text; "" when none was stored
  std::string resource_attributes;  // JSON object text
  std::string events;               // JSON array text; "" when none
  std::string links;                // JSON array text; "" when none
  std::string scope_name;
};

struct LogRecord {
  int64_t time_ns = 0;
  int32_t severity_number = 0;
  std::string severity_text;
  std::string body;
  std::string service;
  TraceId trace_id;
  uint64_t span_id = 0;
  std::string attributes;  // JSON object text; "" when none
  std::string event_name;  // "" when none
};

struct TraceDetail {
  std::vector<SpanRecord> spans;  // by start_ns, then span id (unsigned)
  std::vector<LogRecord> logs;    // by time_ns, then insertion order
  bool spans_truncated = false;   // more than max_spans spans
  bool logs_truncated = false;    // more than max_logs records
};

//! Exceptions: spans that recorded one (has_exception) and log records that
//! are log-based exception events (an exception.type or exception.message
//! attribute), grouped by (type, exception group, service): the group is the
//! message normalised at ingest (common/exception_group.h), so messages that
//! differ only in ids share one. An absent type or message is "".
struct ExceptionQuery {
  //! range (spans' start_time_ns, records' time_ns) and service; the other
  //! fields filter spans only.
  SpanFilter filter;
  int64_t limit = 50;
};

struct ExceptionGroup {
  std::string type;
  std::string message;  // the exception group: the normalised message
  std::string service;
  int64_t count = 0;        // spans and log records
  int64_t first_ns = 0;     // earliest start_time_ns / time_ns
  int64_t last_ns = 0;      // latest
  TraceId sample_trace_id;  // the greatest trace id of the group (unsigned order); zero when none has one
  int64_t log_count = 0;    // of `count`, the log records
};
//! By count descending, then type, message, service ascending.
using ExceptionGroups = std::vector<ExceptionGroup>;

//! The occurrences of one exception group, newest first: its spans and its
//! log records (each with the trace and span it was recorded in, if any).
struct ExceptionSpansQuery {
  SpanFilter filter;                   // as in ExceptionQuery
  std::optional<std::string> type;     // "" matches an absent type
  std::optional<std::string> message;  // the exception group; "" matches an absent message
  int64_t limit = 50;
};

struct SpanRef {
  TraceId trace_id;  // zero for a log record without trace context
  uint64_t span_id = 0;
  std::string service;
  std::string name;  // a log record's event_name
  int64_t start_ns = 0;
  int64_t duration_ns = 0;  // 0 for a log record
  bool log = false;         // a log record, not a span
};
//! By start_ns descending, spans before log records, then trace id and span
//! id ascending.
using SpanRefs = std::vector<SpanRef>;

// ------------------------------------------------------------- service map

//! Calls between services, from parent/child spans: every span of the
//! project starting in `range` (the child) whose parent span — same trace id,
//! span_id = the child's parent_span_id — is stored with another service name
//! and starts in [range.from_ns - parent_margin_ns, range.to_ns +
//! parent_margin_ns) (bounded so the parent lookup scans a bounded window; a
//! parent outside it makes no call). A child whose parent is missing, or of
//! the same service, makes none. Spans without a trace id make none. A child
//! is counted once per stored parent row (a parent written twice counts
//! twice, as a join does).
struct ServiceCallQuery {
  int64_t project_id = 0;
  TimeRange range;  // on the child's start_time_ns
  int64_t parent_margin_ns = 0;
  //! Only calls from or to this service.
  std::optional<std::string> service;
  //! At most max_calls + 1 calls come back, the first in the result's order:
  //! more than max_calls tells the caller the answer passed its cap.
  int64_t max_calls = INT64_MAX - 1;
};

struct ServiceCall {
  std::string caller;  // the parent span's service
  std::string callee;  // the child span's service
  int64_t count = 0;
  int64_t errors = 0;                    // children with status_code = 2
  std::array<double, 3> percentiles_ns;  // p50, p95, p99 of the children's duration_ns
};
//! By count descending, then caller, callee ascending (bytewise).
using ServiceCalls = std::vector<ServiceCall>;

// -------------------------------------------------------------------- logs

struct LogFilter {
  int64_t project_id = 0;
  TimeRange range;           // on time_ns
  int32_t severity_min = 0;  // severity_number >=, when > 0
  std::optional<std::string> service;
  //! Body contains this text, case-insensitively (SQLite folds ASCII only).
  std::optional<std::string> text;
  std::optional<TraceId> trace_id;
  std::vector<AttrFilter> attributes;  // every operator, as on spans
};

//! One page of log records, newest first.
struct LogPageQuery {
  LogFilter filter;
  int64_t limit = 100;
  //! Where the previous page ended, as the engine returned it; "" for the
  //! first page. Opaque: only the engine that made it can read it, and it
  //! answers InvalidArgument for one it cannot.
  std::string cursor;
};

struct LogPage {
  //! By time_ns descending, then insertion order descending (newest first).
  std::vector<LogRecord> records;
  std::optional<std::string> next_cursor;  // set when more records follow
};

//! Log counts per time bucket and severity level.
struct LogVolumeQuery {
  LogFilter filter;
  Buckets buckets;
};

struct LogVolumeRow {
  int64_t bucket = 0;
  //! 0 UNSPECIFIED (severity 0), 1 TRACE (1-4), 2 DEBUG (5-8), 3 INFO (9-12),
  //! 4 WARN (13-16), 5 ERROR (17-20), 6 FATAL (21-24).
  int32_t level = 0;
  int64_t count = 0;
};
//! In no particular order; one row per (bucket, level) with records.
using LogVolume = std::vector<LogVolumeRow>;

// --- Log facets (the Logs page's side panel) ---

//! What the records matching `filter` hold: their exact total, counts by
//! severity level and by service, and the most frequent attribute keys and
//! values among the newest `sample` of them.
struct LogFacetsQuery {
  LogFilter filter;
  //! At most max_services + 1 services come back: more says there are others.
  int64_t max_services = 10;
  //! The attribute facets are computed over the newest `sample` records (by
  //! time_ns descending, then insertion order descending), not all of them.
  int64_t sample = 1000;
  //! At most max_keys + 1 keys, each with at most max_values + 1 values.
  int64_t max_keys = 8;
  int64_t max_values = 5;
};

struct LogFacets {
  int64_t total = 0;                       // every matching record (exact)
  std::array<int64_t, 7> levels{};         // by SeverityLevel (exact)
  std::vector<FacetCount> services;        // exact counts, by count descending, then service ascending (bytes)
  int64_t sampled = 0;                     // min(total, sample): the records `attributes` was computed over
  std::vector<AttributeFacet> attributes;  // by count descending, then key ascending (bytes)
};

// ----------------------------------------------------------------- metrics

//! The project's metric catalog.
struct MetricCatalogQuery {
  int64_t project_id = 0;
  //! At most max_rows + 1 rows (the first in order): more says the cap was passed.
  int64_t max_rows = INT64_MAX - 1;
};

//! One distinct (name, type, unit, description, service) of the project's series.
struct MetricCatalogRow {
  std::string name;
  MetricType type = MetricType::kGauge;
  std::string unit;
  std::string description;
  std::string service;
  bool monotonic = false;   // any series of the row is monotonic
  int32_t temporality = 0;  // the greatest of the row's series
};
//! By name, then type, unit, description, service.
using MetricCatalog = std::vector<MetricCatalogRow>;

//! Every series of one metric.
struct MetricSeriesLookup {
  int64_t project_id = 0;
  std::string name;
  //! At most max_series + 1 series (the first in order): more says the cap was passed.
  int64_t max_series = INT64_MAX - 1;
};

struct MetricSeriesInfo {
  int64_t series_id = 0;
  MetricType type = MetricType::kGauge;
  int32_t temporality = 0;  // 0 unspecified, 1 delta, 2 cumulative
  bool monotonic = false;
  std::string service;
  std::string attributes;  // point attributes, JSON object text
};
//! By series_id.
using MetricSeriesList = std::vector<MetricSeriesInfo>;

//! Per series and time bucket, the aggregates of the points of `series_ids`.
struct MetricSeriesQuery {
  enum class Want {
    kStats,       // count, sum, min, max of value
    kLast,        // last (value of the newest point) and sum of value
    kHistograms,  // bucket counts and bounds (see MetricBucket::counts)
  };
  int64_t project_id = 0;
  TimeRange range;  // on time_ns
  Buckets buckets;
  std::vector<int64_t> series_ids;
  //! For kHistograms: the series of series_ids with delta temporality (their
  //! points are summed; the others are cumulative: the newest point counts).
  std::vector<int64_t> delta_series_ids;
  Want want = Want::kStats;
};

struct MetricBucket {
  int64_t series_id = 0;
  int64_t bucket = 0;
  // kStats and kLast (NULL values skipped; a bucket of only NULLs has count 0
  // and is not returned).
  int64_t count = 0;
  double sum = 0;
  double min = 0;
  double max = 0;
  double last = 0;  // kLast: value of the newest point (ties: any of them)
  // kHistograms: for a cumulative series, the bucket counts and bounds of the
  // newest point; for a delta series, the element-wise sum of the points'
  // counts (restarted when a point's count list changes length) and the bounds
  // of the last point. Points without bucket counts are skipped.
  std::vector<double> counts;
  std::vector<double> bounds;
  // kHistograms, exponential histogram points: the `exp_histogram` JSON text
  // (docs/STORAGE.md) of the newest point for a cumulative series, of every
  // point oldest first for a delta series. The caller merges them.
  std::vector<std::string> exp_histograms;
  // kHistograms, summary points: the `quantiles` JSON text of the newest point
  // (summaries are read as cumulative: their quantiles cannot be added).
  std::string quantiles;
};
//! By series_id, then bucket.
using MetricBuckets = std::vector<MetricBucket>;

// ------------------------------------------------------------------ reader

//! One leased read connection, running the operations above; a lease serves
//! one API call. Not thread-safe, except Interrupt(): it may be called from
//! any thread and makes the running operation, and every later one on this
//! lease, return Cancelled promptly; the pooled connection stays usable for
//! the next lease. Work done on the results after an operation returns
//! checks interrupted() in its loops, so a deadline covers it too.
//! Destroying the lease returns the connection to its pool.
//! Every operation fails with InvalidArgument for a query it cannot answer
//! (a malformed cursor), Cancelled when interrupted, Internal/IoError when the
//! engine fails.
class TelemetryReader {
 public:
  virtual ~TelemetryReader() = default;

  //! Any thread, any time, more than once.
  void Interrupt() {
    interrupted_.store(true, std::memory_order_relaxed);
    InterruptEngine();
  }
  bool interrupted() const { return interrupted_.load(std::memory_order_relaxed); }

  virtual Result<SpanGroups> GroupSpans(const SpanGroupQuery& q) = 0;
  virtual Result<TraceSummaries> SearchTraces(const TraceSearchQuery& q) = 0;
  //! NotFound when the trace has no span in the project.
  virtual Result<TraceDetail> GetTrace(const TraceQuery& q) = 0;
  virtual Result<ExceptionGroups> GroupExceptions(const ExceptionQuery& q) = 0;
  virtual Result<SpanRefs> ExceptionSpans(const ExceptionSpansQuery& q) = 0;
  //! The service map's edges.
  virtual Result<ServiceCalls> GroupServiceCalls(const ServiceCallQuery& q) = 0;
  virtual Result<DurationHistogram> HistogramDurations(const DurationHistogramQuery& q) = 0;
  virtual Result<AttributeSuggestions> SuggestAttributes(const AttributeSuggestionQuery& q) = 0;

  virtual Result<LogPage> Logs(const LogPageQuery& q) = 0;
  virtual Result<LogVolume> CountLogs(const LogVolumeQuery& q) = 0;
  //! InvalidArgument when a cap or the sample is below 1.
  virtual Result<LogFacets> FacetLogs(const LogFacetsQuery& q) = 0;

  virtual Result<MetricCatalog> ListMetrics(const MetricCatalogQuery& q) = 0;
  virtual Result<MetricSeriesList> FindSeries(const MetricSeriesLookup& q) = 0;
  virtual Result<MetricBuckets> AggregateSeries(const MetricSeriesQuery& q) = 0;

 protected:
  //! Stops the engine's running statement (Interrupt() has set the flag).
  virtual void InterruptEngine() = 0;

 private:
  std::atomic<bool> interrupted_{false};
};

//! The severity level (LogVolumeRow::level) of a severity number.
inline int32_t SeverityLevel(int32_t severity_number) {
  if (severity_number >= 21) return 6;
  if (severity_number >= 17) return 5;
  if (severity_number >= 13) return 4;
  if (severity_number >= 9) return 3;
  if (severity_number >= 5) return 2;
  if (severity_number >= 1) return 1;
  return 0;
}

}  // namespace sightline
