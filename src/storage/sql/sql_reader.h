#pragma once

// The read contract (storage/telemetry_reader.h) in SQL, shared by the SQL
// engines over the tables of storage/schema.h. Written in SQL that DuckDB and
// SQLite both run; where an engine spells something differently it overrides
// one of the small virtual spellings below, and where its SQL or its access
// path differs for a whole operation it overrides that operation (DuckDB
// computes percentiles in SQL; SQLite streams durations and this class
// computes them).
//
// Files: sql_reader.cc (spellings, filters), span_queries.cc, log_queries.cc,
// metric_queries.cc (one per operation family).

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "storage/sql/sql_builder.h"
#include "storage/sql/sql_connection.h"
#include "storage/telemetry_reader.h"

namespace simdjson::dom {
class parser;
}

namespace sightline {

//! Owns one leased read connection. Not thread-safe except Interrupt().
//! Loops over rows it keeps in C++ check interrupted().
class SqlReader : public TelemetryReader {
 public:
  explicit SqlReader(std::unique_ptr<ReadConnection> conn) : conn_(std::move(conn)) {}

  //! From the span rollups when the engine keeps them, the query's filter
  //! and buckets fit them and its range holds at least rollup_exact_spans
  //! spans (span_rollup_queries.cc); otherwise GroupRawSpans.
  Result<SpanGroups> GroupSpans(const SpanGroupQuery& q) override;
  Result<TraceSummaries> SearchTraces(const TraceSearchQuery& q) override;
  Result<TraceDetail> GetTrace(const TraceQuery& q) override;
  //! From the exception rollups where the engine keeps them and the filter
  //! fits (exact either way); otherwise GroupRawExceptions.
  Result<ExceptionGroups> GroupExceptions(const ExceptionQuery& q) override;
  Result<SpanRefs> ExceptionSpans(const ExceptionSpansQuery& q) override;
  //! Joins each child span to its parent in SQL and streams (caller, callee,
  //! status, duration); groups and computes the percentiles here.
  Result<ServiceCalls> GroupServiceCalls(const ServiceCallQuery& q) override;
  //! One GROUP BY over a CASE of the bounds.
  Result<DurationHistogram> HistogramDurations(const DurationHistogramQuery& q) override;
  //! Reads the newest `sample` spans' attributes and their resources' and
  //! counts them here, as FacetLogs does.
  Result<AttributeSuggestions> SuggestAttributes(const AttributeSuggestionQuery& q) override;
  //! Newest first in growing time windows, over only the time ranges that
  //! can hold a match where the engine's indexes (a text) or the log
  //! rollups (a severity) say which; the cursor is "<time_ns>:<rowid>".
  Result<LogPage> Logs(const LogPageQuery& q) override;
  //! From the log rollups where the engine keeps them and the filter fits
  //! (exact either way); otherwise CountRawLogs.
  Result<LogVolume> CountLogs(const LogVolumeQuery& q) override;
  Result<LogFacets> FacetLogs(const LogFacetsQuery& q) override;
  Result<MetricCatalog> ListMetrics(const MetricCatalogQuery& q) override;
  Result<MetricSeriesList> FindSeries(const MetricSeriesLookup& q) override;
  //! From the metric rollups where the engine keeps them and the chart
  //! buckets are whole minutes (exact either way); otherwise
  //! AggregateRawSeries.
  Result<MetricBuckets> AggregateSeries(const MetricSeriesQuery& q) override;

 protected:
  void InterruptEngine() override { conn_->Interrupt(); }

  //! GroupSpans over every span of the range, exactly: streams (keys,
  //! status, duration) and computes the percentiles here; with no percentiles
  //! asked, groups in SQL. Engines override this one.
  virtual Result<SpanGroups> GroupRawSpans(const SpanGroupQuery& q);
  //! Whether the engine writes the rollup tables (storage/rollup/): spans,
  //! exceptions, logs and metrics.
  virtual bool HasRollups() const { return false; }
  //! Ranges with fewer spans than this are answered exactly from raw spans
  //! (StoreOptions::rollup_exact_spans).
  int64_t rollup_exact_spans_ = 0;

  // --- Spellings an engine overrides (the defaults are portable SQL). ---

  //! Integer division of two integer expressions (SQLite and standard SQL: "/").
  virtual std::string IntDiv(const std::string& a, const std::string& b) const;
  //! Appends the value at `key` of the JSON object column as text, per
  //! AttrFilter's rule (true/false as "true"/"false", numbers shortest).
  virtual void AppendJsonText(sql::Sql* sql, const char* column, const std::string& key) const;
  //! Appends the value at `key` as a DOUBLE when it is a JSON number (integer
  //! or decimal), else NULL (AttrFilter's kGt/kLt).
  virtual void AppendJsonNumber(sql::Sql* sql, const char* column, const std::string& key) const;
  //! The value of `column` at the group's newest point. The default relies on
  //! SQLite's documented bare-column rule: the query selects max(time_ns) and
  //! no other min/max, so the bare column comes from the row holding the max.
  virtual std::string LastOf(const char* column) const;
  //! Appends "column contains text, case-insensitively" (LIKE: ASCII folding).
  virtual void AppendContains(sql::Sql* sql, const char* column, const std::string& text) const;
  //! The project column in span range scans. SQLite says "+project_id" to
  //! keep its planner off the (project_id, trace_id) index for time ranges.
  virtual const char* SpanRangeProjectColumn() const { return "project_id"; }
  //! An aggregate: the greatest trace id of the group (unsigned order) as 32
  //! hex characters, '' when no span of the group has one.
  virtual std::string SampleTraceIdHex() const;

  // --- What an engine's own indexes know (the defaults: nothing). ---

  //! Where one trace's rows lie, as [from_ns, to_ns) on spans' start_time_ns
  //! and on log records' time_ns; nullopt for a signal with none of the
  //! trace's rows. Never narrower than the truth (it may be wider).
  struct TraceExtent {
    std::optional<TimeRange> spans;
    std::optional<TimeRange> logs;
  };
  //! The trace's extent in the project; nullopt when the engine cannot tell
  //! (GetTrace and the logs of a trace then scan).
  virtual Result<std::optional<TraceExtent>> TraceExtentOf(int64_t /*project_id*/, const TraceId& /*id*/) {
    return std::optional<TraceExtent>();
  }
  //! Disjoint ranges inside f.range, newest first, outside which no log
  //! record of f.project_id has a body containing *f.text; nullopt when the
  //! engine cannot tell (the search scans f.range).
  virtual Result<std::optional<std::vector<TimeRange>>> LogTextRanges(const LogFilter& /*f*/) {
    return std::optional<std::vector<TimeRange>>();
  }

  // --- Building blocks for overriding operations. ---

  Status Rows(const sql::Sql& sql, const RowCallback& on_row) { return conn_->Query(sql.text, sql.params, on_row); }
  //! " WHERE ..." over spans for a filter.
  sql::Sql SpanWhere(const SpanFilter& f) const;
  //! SpanWhere plus BucketWhere when the query groups by time bucket.
  sql::Sql SpanGroupWhere(const SpanGroupQuery& q) const;
  //! The spans of `f` that recorded an exception, with its type and group,
  //! those matching `group_where` (" AND ..." over exception_type and
  //! exception_group).
  sql::Sql SpanExceptions(const SpanFilter& f, const sql::Sql& group_where) const;
  //! Whether `f` filters on nothing but project, range and service: what the
  //! exception rollups and span_details keep of a span.
  static bool IsServiceOnly(const SpanFilter& f) {
    return !f.entry_only && !f.endpoint && !f.status_code && !f.min_duration_ns && !f.max_duration_ns &&
           f.attributes.empty() && f.resource_attributes.empty();
  }
  //! The SELECT expression of one group dimension.
  std::string SpanKeyExpr(SpanDimension d, const SpanGroupQuery& q) const;
  //! " LEFT JOIN (...) top ON ..." when q groups by kLabel, else empty.
  sql::Sql LabelJoin(const SpanGroupQuery& q) const;
  //! (time_col - origin) integer-divided by step. Engines truncate integer
  //! division toward zero, so rows before the origin must be filtered out
  //! (BucketWhere) or they would land in bucket 0.
  std::string BucketExpr(const char* time_col, const Buckets& b) const;
  //! " AND time_col >= origin" when the origin lies inside the range (rows
  //! before it belong to negative buckets, which are never returned), and
  //! " AND time_col < end of the last bucket" when that ends before the range.
  static std::string BucketWhere(const char* time_col, const Buckets& b, const TimeRange& range);
  //! Drops groups whose kBucket key lies outside [0, count).
  static void DropOutOfRangeBuckets(const SpanGroupQuery& q, SpanGroups* groups);
  //! " LIMIT max_groups + 1" of a span grouping.
  static std::string GroupLimit(const SpanGroupQuery& q);
  //! Cancelled once the reader was interrupted.
  Status CheckInterrupted() const;
  //! " FROM spans c JOIN spans p ... WHERE ..." of a service-call query:
  //! children c joined to their parents p of another service.
  sql::Sql ServiceCallJoin(const ServiceCallQuery& q) const;
  //! InvalidArgument for a negative margin or cap.
  static Status CheckServiceCallQuery(const ServiceCallQuery& q);
  //! Sorts calls in the contract's order and keeps max_calls + 1 of them.
  static void OrderAndCapServiceCalls(const ServiceCallQuery& q, ServiceCalls* calls);

 private:
  //! Nothing when the rollups cannot answer q or hold fewer spans than
  //! rollup_exact_spans_ in its range.
  Result<std::optional<SpanGroups>> GroupSpansFromRollups(const SpanGroupQuery& q);
  //! complete_from_ns of a rollup's state table (INT64_MAX without a row).
  Result<int64_t> RollupsCompleteFrom(const char* state_table);
  //! Span-event and log-based exceptions of every row in range, in SQL.
  Result<ExceptionGroups> GroupRawExceptions(const ExceptionQuery& q);
  Result<std::optional<ExceptionGroups>> GroupExceptionsFromRollups(const ExceptionQuery& q);
  //! Log counts per bucket and level of every record in range, in SQL.
  Result<LogVolume> CountRawLogs(const LogVolumeQuery& q);
  Result<std::optional<LogVolume>> CountLogsFromRollups(const LogVolumeQuery& q);
  //! For a filter the log rollups count exactly (a minimum severity, and a
  //! service): the newest minutes of f.range that hold `want` matches (all
  //! that hold one, when fewer do), as RangesOfMinutes; nullopt when the
  //! engine keeps no log rollups or the filter does not fit them.
  Result<std::optional<std::vector<TimeRange>>> LogCountedRanges(const LogFilter& f, int64_t want);
  //! Every point in range, in SQL (metric_queries.cc).
  Result<MetricBuckets> AggregateRawSeries(const MetricSeriesQuery& q);
  //! Nothing when a delta series' explicit histograms in range cannot be
  //! summed from the rollups (another bucket layout, exponential buckets).
  Result<std::optional<MetricBuckets>> AggregateSeriesFromRollups(const MetricSeriesQuery& q);
  sql::Sql LogWhere(const LogFilter& f) const;
  //! " AND <column at key> <op> value" for each filter.
  void AppendAttrFilters(sql::Sql* w, const char* column, const std::vector<AttrFilter>& filters) const;

  std::unique_ptr<ReadConnection> conn_;
};

namespace sql {

//! ORDER BY terms that sort a signed 64-bit column as unsigned (ids are
//! stored as the signed reading of their bits).
std::string UnsignedOrder(const char* column, const char* direction = "");

//! The text of a column, "" for NULL.
inline std::string Text(const RowView& r, int col) { return r.IsNull(col) ? std::string() : r.GetString(col); }
//! An id column: 0 for NULL (absent).
inline uint64_t Id(const RowView& r, int col) { return r.IsNull(col) ? 0 : static_cast<uint64_t>(r.GetInt(col)); }

//! The log columns every log read selects, in LogRecordOf's order.
inline constexpr const char* kLogColumns =
    "time_ns, severity_number, severity_text, body, service_name, trace_id_high, trace_id_low, span_id, attributes, "
    "event_name";
//! How many columns kLogColumns names: a column selected after them is at this index.
inline constexpr int kLogColumnCount = 10;
//! A log record from a row that starts with kLogColumns.
LogRecord LogRecordOf(const RowView& r);

//! A log read takes at most this many time ranges (one statement each);
//! closer minutes are merged into one range beyond it.
inline constexpr size_t kMaxLogReadRanges = 48;
//! Minutes (floor(time_ns / 60 s), newest first) as disjoint time ranges
//! within `range`, newest first, adjacent minutes joined, at most
//! kMaxLogReadRanges (the smallest gaps closed first).
std::vector<TimeRange> RangesOfMinutes(const std::vector<int64_t>& minutes, const TimeRange& range);

//! Counts the string, boolean and number attributes of JSON objects by key
//! and value, as text as AttrFilter's kEq compares them (log facets,
//! attribute suggestions). Of a repeated key, the first value counts.
class AttributeCounter {
 public:
  AttributeCounter();
  ~AttributeCounter();
  //! One object's attributes (only `only` when set); text that is not a JSON
  //! object counts nothing.
  void Add(const std::string& json, const std::optional<std::string>& only = std::nullopt);
  //! The max_keys + 1 keys on the most objects (ties by key), each with its
  //! max_values + 1 most frequent values (ties by value).
  std::vector<AttributeFacet> Top(int64_t max_keys, int64_t max_values) const;

 private:
  std::unique_ptr<simdjson::dom::parser> parser_;
  std::map<std::string, int64_t> keys_;
  std::map<std::string, std::map<std::string, int64_t>> values_;
};

}  // namespace sql

}  // namespace sightline
