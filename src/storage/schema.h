#pragma once

// The telemetry schema shared by every SQL engine: table names, column names
// and types, and where each column's value comes from in a batch. Both
// engines build their DDL, their INSERT / appender column order and their
// NULL rules from these lists, so the same SQL runs on either engine and the
// two cannot drift apart. docs/STORAGE.md describes every column.

#include <algorithm>
#include <array>
#include <cassert>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <unordered_set>
#include <utility>
#include <vector>

#include "common/status.h"
#include "model/batch.h"

namespace sightline::schema {

inline constexpr const char* kSpansTable = "spans";
inline constexpr const char* kLogsTable = "logs";
inline constexpr const char* kMetricSeriesTable = "metric_series";
inline constexpr const char* kMetricPointsTable = "metric_points";
inline constexpr const char* kSpanResourcesTable = "span_resources";
inline constexpr const char* kLogResourcesTable = "log_resources";
inline constexpr const char* kMetricResourcesTable = "metric_resources";
//! A sparse table (SparseColumns): the log records that have an exception.
inline constexpr const char* kLogExceptionsTable = "log_exceptions";
//! A sparse table: the spans that have a trace state, status message,
//! exception, event or link.
inline constexpr const char* kSpanDetailsTable = "span_details";

//! SQL type class; each engine maps it to its own type name.
enum class ColumnType : uint8_t { kInt64, kDouble, kText };

//! How a column's value is read from a batch, and when it is NULL.
enum class SourceKind : uint8_t {
  kConstant,         // `constant` on every row (project_id)
  kInt64,            // int64_t[row]
  kInt32,            // int32_t[row]
  kUint32,           // uint32_t[row]
  kUint8,            // uint8_t[row] (booleans as 0/1)
  kUint64Clamped,    // uint64_t[row], values above INT64_MAX stored as INT64_MAX
  kInt64Diff,        // int64_t a[row] - b[row] (duration_ns = end - start)
  kDoubleNanNull,    // double[row]; NaN is NULL
  kDoubleIfNotFlag,  // double a[row], NULL when uint8_t b[row] != 0 or a[row] is NaN (metric_points.value of an int
                     // point)
  kInt64IfFlag,      // int64_t a[row] when uint8_t b[row] != 0, else NULL
  kId,               // uint64_t a[row] as int64 (same bits); NULL when a[row] and b[row] are 0
  kText,             // StringColumn row as given ('' stays '')
  kTextEmptyNull,    // StringColumn row; '' is NULL
  kInt64Indexed,     // int64_t a[uint32_t b[row]] (metric_series.resource_id: a row of the batch's resources)
  // Derived at write time so dashboards filter and group on plain columns
  // instead of evaluating expressions over every row (DerivedText/DerivedInt).
  kTextOrElse,  // StringColumn a[row], or b[row] when that is '' (spans.endpoint)
  kIsEntry,     // 1 when int32_t kind a[row] is SERVER/CONSUMER or parent b[row] is 0 (spans.is_entry)
  kAnyText,     // 1 when StringColumn a[row] or b[row] is not '' (spans.has_exception)
};

//! One column of one batch: its schema and a view of its values. Holds
//! pointers into the batch, which must outlive it.
struct Column {
  const char* name;
  ColumnType type;
  SourceKind kind;
  const void* a = nullptr;  // the values (vector data or StringColumn*)
  const void* b = nullptr;  // second input for kInt64Diff / kInt64IfFlag
  size_t size = 0;          // rows available (min of a and b)
  int64_t constant = 0;     // kConstant
  //! For derived columns: the same value as SQL over the table's other
  //! columns, used to fill the column in a database written before it existed.
  const char* backfill = nullptr;
};

//! The value of a kInt64Indexed column at row r.
inline int64_t IndexedIntAt(const Column& c, size_t r) {
  return static_cast<const int64_t*>(c.a)[static_cast<const uint32_t*>(c.b)[r]];
}

//! The value of a kTextOrElse column at row r.
inline std::string_view DerivedText(const Column& c, size_t r) {
  std::string_view v = static_cast<const StringColumn*>(c.a)->Get(r);
  return v.empty() ? static_cast<const StringColumn*>(c.b)->Get(r) : v;
}

//! The value of a kIsEntry or kAnyText column at row r.
inline int64_t DerivedInt(const Column& c, size_t r) {
  if (c.kind == SourceKind::kIsEntry) {
    int32_t kind = static_cast<const int32_t*>(c.a)[r];
    return kind == 2 || kind == 5 || static_cast<const uint64_t*>(c.b)[r] == 0 ? 1 : 0;
  }
  return !static_cast<const StringColumn*>(c.a)->Get(r).empty() ||
                 !static_cast<const StringColumn*>(c.b)->Get(r).empty()
             ? 1
             : 0;
}

namespace internal {

inline Column Constant(const char* name, int64_t v) {
  return {name, ColumnType::kInt64, SourceKind::kConstant, nullptr, nullptr, std::numeric_limits<size_t>::max(), v};
}
inline Column Ints(const char* name, const std::vector<int64_t>& v) {
  return {name, ColumnType::kInt64, SourceKind::kInt64, v.data(), nullptr, v.size(), 0};
}
inline Column Ints(const char* name, const std::vector<int32_t>& v) {
  return {name, ColumnType::kInt64, SourceKind::kInt32, v.data(), nullptr, v.size(), 0};
}
inline Column Ints(const char* name, const std::vector<uint32_t>& v) {
  return {name, ColumnType::kInt64, SourceKind::kUint32, v.data(), nullptr, v.size(), 0};
}
inline Column Ints(const char* name, const std::vector<uint8_t>& v) {
  return {name, ColumnType::kInt64, SourceKind::kUint8, v.data(), nullptr, v.size(), 0};
}
inline Column Ints(const char* name, const std::vector<uint64_t>& v) {
  return {name, ColumnType::kInt64, SourceKind::kUint64Clamped, v.data(), nullptr, v.size(), 0};
}
inline Column Difference(const char* name, const std::vector<int64_t>& end, const std::vector<int64_t>& start) {
  return {name,       ColumnType::kInt64, SourceKind::kInt64Diff,
          end.data(), start.data(),       std::min(end.size(), start.size()),
          0};
}
inline Column IntIfFlag(const char* name, const std::vector<int64_t>& v, const std::vector<uint8_t>& flag) {
  return {name, ColumnType::kInt64, SourceKind::kInt64IfFlag, v.data(), flag.data(), std::min(v.size(), flag.size()),
          0};
}
//! An id half: `other` is the trace id's other half (NULL only when both are
//! 0), or `v` itself for a span id.
inline Column Id(const char* name, const std::vector<uint64_t>& v, const std::vector<uint64_t>& other) {
  return {name, ColumnType::kInt64, SourceKind::kId, v.data(), other.data(), std::min(v.size(), other.size()), 0};
}
inline Column DoubleOrNull(const char* name, const std::vector<double>& v) {
  return {name, ColumnType::kDouble, SourceKind::kDoubleNanNull, v.data(), nullptr, v.size(), 0};
}
//! `v` where `flag` is 0; NULL where it is set (the value is held elsewhere).
inline Column DoubleUnlessFlag(const char* name, const std::vector<double>& v, const std::vector<uint8_t>& flag) {
  return {name,     ColumnType::kDouble, SourceKind::kDoubleIfNotFlag,
          v.data(), flag.data(),         std::min(v.size(), flag.size()),
          0};
}
inline Column Text(const char* name, const StringColumn& s) {
  return {name, ColumnType::kText, SourceKind::kText, &s, nullptr, s.size(), 0};
}
//! The values of `v` at the rows `index` names; every index must be below v.size().
inline Column IndexedInts(const char* name, const std::vector<int64_t>& v, const std::vector<uint32_t>& index) {
  return {name, ColumnType::kInt64, SourceKind::kInt64Indexed, v.data(), index.data(), index.size(), 0};
}
//! `backfill`: what a database written before the column existed gets in it
//! ("NULL": nothing; ADD COLUMN leaves it NULL, no UPDATE runs).
inline Column TextOrNull(const char* name, const StringColumn& s, const char* backfill = nullptr) {
  return {name, ColumnType::kText, SourceKind::kTextEmptyNull, &s, nullptr, s.size(), 0, backfill};
}
inline Column TextOrElse(const char* name, const StringColumn& a, const StringColumn& b, const char* backfill) {
  return {name, ColumnType::kText, SourceKind::kTextOrElse, &a, &b, std::min(a.size(), b.size()), 0, backfill};
}
inline Column IsEntry(const char* name, const std::vector<int32_t>& kind, const std::vector<uint64_t>& parent,
                      const char* backfill) {
  return {name,
          ColumnType::kInt64,
          SourceKind::kIsEntry,
          kind.data(),
          parent.data(),
          std::min(kind.size(), parent.size()),
          0,
          backfill};
}
inline Column AnyText(const char* name, const StringColumn& a, const StringColumn& b, const char* backfill) {
  return {name, ColumnType::kInt64, SourceKind::kAnyText, &a, &b, std::min(a.size(), b.size()), 0, backfill};
}

}  // namespace internal

inline constexpr size_t kWideSpanColumnCount = 32;
inline constexpr size_t kSpanDetailValueColumns = 7;
inline constexpr size_t kSpanColumnCount = kWideSpanColumnCount - kSpanDetailValueColumns;
inline constexpr size_t kSpanDetailColumnCount = 15;
inline constexpr size_t kLogColumnCount = 16;
inline constexpr size_t kLogExceptionColumnCount = 11;
inline constexpr size_t kResourceColumnCount = 6;
inline constexpr size_t kMetricSeriesColumnCount = 11;
inline constexpr size_t kMetricPointColumnCount = 16;

//! A span as one row holds it all: ClickHouse's spans (SparseLayout::kInline),
//! and the row engines' spans up to schema 6, which the migrations start
//! from. The row engines keep the span_details values (SpanDetailColumns) out
//! of it since schema 7 (SpanColumns).
inline std::array<Column, kWideSpanColumnCount> WideSpanColumns(const SpanBatch& b) {
  using namespace internal;
  return {{
      Constant("project_id", b.project_id),
      Id("trace_id_high", b.trace_id_high, b.trace_id_low),
      Id("trace_id_low", b.trace_id_low, b.trace_id_high),
      Id("span_id", b.span_id, b.span_id),
      Id("parent_span_id", b.parent_span_id, b.parent_span_id),
      TextOrNull("trace_state", b.trace_state),
      Ints("flags", b.flags),
      Text("name", b.name),
      Ints("kind", b.kind),
      Ints("start_time_ns", b.start_time_ns),
      Ints("end_time_ns", b.end_time_ns),
      Difference("duration_ns", b.end_time_ns, b.start_time_ns),
      Ints("status_code", b.status_code),
      TextOrNull("status_message", b.status_message),
      Text("service_name", b.service_name),
      Text("http_route", b.http_route),
      Text("http_method", b.http_method),
      Ints("http_status_code", b.http_status_code),
      TextOrNull("db_system", b.db_system),
      TextOrNull("exception_type", b.exception_type),
      TextOrNull("exception_message", b.exception_message),
      Text("attributes", b.attributes),
      TextOrNull("events", b.events),
      TextOrNull("links", b.links),
      Ints("dropped_attributes_count", b.dropped_attributes_count),
      Ints("dropped_events_count", b.dropped_events_count),
      Ints("dropped_links_count", b.dropped_links_count),
      Ints("resource_id", b.resource_id),
      // Derived (added in schema 2; see MigrationSql).
      TextOrElse("endpoint", b.http_route, b.name, "CASE WHEN http_route <> '' THEN http_route ELSE name END"),
      IsEntry("is_entry", b.kind, b.parent_span_id,
              "CASE WHEN kind IN (2, 5) OR parent_span_id IS NULL THEN 1 ELSE 0 END"),
      AnyText("has_exception", b.exception_type, b.exception_message,
              "CASE WHEN exception_type <> '' OR exception_message <> '' THEN 1 ELSE 0 END"),
      // Added in schema 4; the 3 -> 4 step fills it from exception_message.
      TextOrNull("exception_group", b.exception_group, "NULL"),
  }};
}

//! span_details: a row per span that has any of these values (SparseRows),
//! indexed by the batch's rows. The last seven columns are the values (in
//! spans until schema 7, in WideSpanColumns order). The first five are the
//! key the trace view finds them by; service, name and duration are what the
//! exception reads show, so those read span_details alone.
inline std::array<Column, kSpanDetailColumnCount> SpanDetailColumns(const SpanBatch& b) {
  using namespace internal;
  return {{
      Constant("project_id", b.project_id),
      Id("trace_id_high", b.trace_id_high, b.trace_id_low),
      Id("trace_id_low", b.trace_id_low, b.trace_id_high),
      Id("span_id", b.span_id, b.span_id),
      Ints("start_time_ns", b.start_time_ns),
      // Added in schema 8: what the exception reads show, so they need no
      // join to spans.
      Text("service_name", b.service_name),
      Text("name", b.name),
      Difference("duration_ns", b.end_time_ns, b.start_time_ns),
      TextOrNull("trace_state", b.trace_state),
      TextOrNull("status_message", b.status_message),
      TextOrNull("exception_type", b.exception_type),
      TextOrNull("exception_message", b.exception_message),
      TextOrNull("events", b.events),
      TextOrNull("links", b.links),
      TextOrNull("exception_group", b.exception_group, "NULL"),
  }};
}

//! A span_details row holds an exception: the exception reads' condition, and
//! that of SQLite's partial index over those rows (span_details_exceptions),
//! which SQLite uses only for a query that holds this term as written.
inline constexpr const char* kSpanDetailHasException = "(exception_type IS NOT NULL OR exception_message IS NOT NULL)";

//! spans: one row per span, without the span_details values; rows() rows.
inline std::array<Column, kSpanColumnCount> SpanColumns(const SpanBatch& b) {
  const auto wide = WideSpanColumns(b);
  const auto details = SpanDetailColumns(b);
  const std::span<const Column> values = std::span<const Column>(details).last(kSpanDetailValueColumns);
  std::array<Column, kSpanColumnCount> out{};
  size_t n = 0;
  for (const Column& c : wide) {
    const bool moved =
        std::any_of(values.begin(), values.end(), [&](const Column& v) { return std::string_view(v.name) == c.name; });
    if (!moved) out[n++] = c;
  }
  return out;
}

//! logs: one row per log record; rows() rows.
inline std::array<Column, kLogColumnCount> LogColumns(const LogBatch& b) {
  using namespace internal;
  return {{
      Constant("project_id", b.project_id),
      Ints("time_ns", b.time_ns),
      Ints("observed_time_ns", b.observed_time_ns),
      Ints("severity_number", b.severity_number),
      Text("severity_text", b.severity_text),
      Text("body", b.body),
      Ints("body_type", b.body_type),
      Id("trace_id_high", b.trace_id_high, b.trace_id_low),
      Id("trace_id_low", b.trace_id_low, b.trace_id_high),
      Id("span_id", b.span_id, b.span_id),
      Ints("flags", b.flags),
      Text("service_name", b.service_name),
      Text("attributes", b.attributes),
      Ints("dropped_attributes_count", b.dropped_attributes_count),
      Ints("resource_id", b.resource_id),
      // Added in schema 4: records written before it have none.
      TextOrNull("event_name", b.event_name, "NULL"),
  }};
}

//! log_exceptions: a row per log record with an exception type or message
//! (SparseRows), indexed by the batch's rows. The last three columns are the
//! exception's (in logs until schema 6); the others copy the record's columns
//! that the reads of exceptions filter on and show, so they need no join.
inline constexpr size_t kLogExceptionValueColumns = 3;
inline std::array<Column, kLogExceptionColumnCount> LogExceptionColumns(const LogBatch& b) {
  using namespace internal;
  return {{
      Constant("project_id", b.project_id),
      Ints("time_ns", b.time_ns),
      Ints("observed_time_ns", b.observed_time_ns),
      Text("service_name", b.service_name),
      Id("trace_id_high", b.trace_id_high, b.trace_id_low),
      Id("trace_id_low", b.trace_id_low, b.trace_id_high),
      Id("span_id", b.span_id, b.span_id),
      TextOrNull("event_name", b.event_name),
      TextOrNull("exception_type", b.exception_type, "NULL"),
      TextOrNull("exception_message", b.exception_message, "NULL"),
      TextOrNull("exception_group", b.exception_group, "NULL"),
  }};
}

//! span_resources / log_resources / metric_resources: one row per distinct
//! (project_id, resource_id); r.rows() rows.
inline std::array<Column, kResourceColumnCount> ResourceColumns(const ResourceTable& r, int64_t project_id) {
  using namespace internal;
  return {{
      Constant("project_id", project_id),
      Ints("resource_id", r.resource_id),
      Text("resource_attributes", r.resource_attributes),
      Text("scope_name", r.scope_name),
      Text("scope_version", r.scope_version),
      Text("scope_attributes", r.scope_attributes),
  }};
}

//! metric_series: one row per distinct (project_id, series_id); series_rows()
//! rows. Its resource and scope are a row of metric_resources, so a large
//! resource is written once, not once per series (docs/SECURITY.md).
inline std::array<Column, kMetricSeriesColumnCount> MetricSeriesColumns(const MetricBatch& b) {
  using namespace internal;
  return {{
      Constant("project_id", b.project_id),
      Ints("series_id", b.series_id),
      Text("metric_name", b.metric_name),
      Ints("metric_type", b.metric_type),
      Text("unit", b.unit),
      Text("description", b.description),
      Ints("temporality", b.temporality),
      Ints("is_monotonic", b.is_monotonic),
      Text("service_name", b.service_name),
      IndexedInts("resource_id", b.resources.resource_id, b.series_resource),
      Text("attributes", b.attributes),
  }};
}

//! A metric point's value in SQL over metric_points: an int point's is in
//! int_value alone (schema 5), and rows written before hold it in both.
inline constexpr const char* kMetricPointValueSql = "COALESCE(value, CAST(int_value AS DOUBLE))";

//! metric_points: one row per data point; rows() rows.
inline std::array<Column, kMetricPointColumnCount> MetricPointColumns(const MetricBatch& b) {
  using namespace internal;
  return {{
      Constant("project_id", b.project_id),
      Ints("series_id", b.point_series_id),
      Ints("time_ns", b.time_ns),
      Ints("start_time_ns", b.start_time_ns),
      // An int point's value is int_value only (schema 5): readers take
      // COALESCE(value, CAST(int_value AS DOUBLE)), which also reads rows
      // written before, when value held the int converted.
      DoubleUnlessFlag("value", b.value, b.is_int),
      IntIfFlag("int_value", b.int_value, b.is_int),
      Ints("count", b.count),
      DoubleOrNull("sum", b.sum),
      DoubleOrNull("min", b.min),
      DoubleOrNull("max", b.max),
      TextOrNull("bucket_counts", b.bucket_counts),
      TextOrNull("explicit_bounds", b.explicit_bounds),
      TextOrNull("exp_histogram", b.exp_histogram),
      TextOrNull("quantiles", b.quantiles),
      TextOrNull("exemplars", b.exemplars),
      Ints("flags", b.flags),
  }};
}

//! The engine's spelling of each ColumnType.
struct TypeNames {
  const char* int64;
  const char* float64;
  const char* text;
};

inline std::string CreateTableSql(const char* table, std::span<const Column> columns, const TypeNames& types) {
  std::string sql = std::string("CREATE TABLE IF NOT EXISTS ") + table + " (";
  for (size_t i = 0; i < columns.size(); ++i) {
    if (i > 0) sql += ", ";
    sql += columns[i].name;
    sql += ' ';
    switch (columns[i].type) {
      case ColumnType::kInt64: sql += types.int64; break;
      case ColumnType::kDouble: sql += types.float64; break;
      case ColumnType::kText: sql += types.text; break;
    }
  }
  sql += ")";
  return sql;
}

//! logs with the log_exceptions values after its own columns: ClickHouse's
//! logs (SparseLayout::kInline), and the row engines' logs of schemas 4 and 5.
inline std::vector<Column> WideLogColumns(const LogBatch& b) {
  const auto main = LogColumns(b);
  const auto exceptions = LogExceptionColumns(b);
  std::vector<Column> out(main.begin(), main.end());
  for (const Column& c : std::span<const Column>(exceptions).last(kLogExceptionValueColumns)) out.push_back(c);
  return out;
}

//! A batch's row as ClickHouse holds it (SparseLayout::kInline): the main
//! table's columns with its sparse table's values among them.
inline std::vector<Column> WideColumns(const SpanBatch& b) {
  const auto c = WideSpanColumns(b);
  return {c.begin(), c.end()};
}
inline std::vector<Column> WideColumns(const LogBatch& b) { return WideLogColumns(b); }
inline std::vector<Column> WideColumns(const MetricBatch& b) {
  const auto c = MetricPointColumns(b);
  return {c.begin(), c.end()};
}

//! Where a sparse table's values live (SparseColumns).
enum class SparseLayout {
  kOwnTable,  // the row engines: a table of the rows that have them
  //! ClickHouse: in the main table's row (WideSpanColumns, WideLogColumns);
  //! also the layout the row engines' migrations up to schema 5 work on.
  kInline,
};

//! Every table's columns, in table order (for creating, checking and
//! migrating). The columns view static empty batches: names, types and
//! backfill expressions only.
inline std::vector<std::pair<const char*, std::vector<Column>>> AllTableColumns(
    SparseLayout sparse = SparseLayout::kOwnTable) {
  static const SpanBatch spans;
  static const LogBatch logs;
  static const MetricBatch metrics;
  auto list = [](auto columns) { return std::vector<Column>(columns.begin(), columns.end()); };
  const bool inline_values = sparse == SparseLayout::kInline;
  std::vector<std::pair<const char*, std::vector<Column>>> out = {
      {kSpansTable, inline_values ? WideColumns(spans) : list(SpanColumns(spans))},
      {kSpanResourcesTable, list(ResourceColumns(spans.resources, 0))},
      {kLogsTable, inline_values ? WideColumns(logs) : list(LogColumns(logs))},
      {kLogResourcesTable, list(ResourceColumns(logs.resources, 0))},
      {kMetricResourcesTable, list(ResourceColumns(metrics.resources, 0))},
      {kMetricSeriesTable, list(MetricSeriesColumns(metrics))},
      {kMetricPointsTable, list(MetricPointColumns(metrics))},
  };
  if (!inline_values) {
    out.emplace_back(kLogExceptionsTable, list(LogExceptionColumns(logs)));
    out.emplace_back(kSpanDetailsTable, list(SpanDetailColumns(spans)));
  }
  return out;
}

//! CREATE TABLE IF NOT EXISTS for every table, in a fixed order.
inline std::vector<std::string> CreateAllTablesSql(const TypeNames& types) {
  std::vector<std::string> out;
  for (const auto& [table, columns] : AllTableColumns()) out.push_back(CreateTableSql(table, columns, types));
  return out;
}

//! OK when an existing table has exactly the expected columns in order; a
//! database written by an incompatible version fails here, at open, rather
//! than on every write.
inline Status CheckColumnNames(const char* table, const std::vector<std::string>& expected,
                               const std::vector<std::string>& actual) {
  if (expected == actual) return Status::Ok();
  auto join = [](const std::vector<std::string>& v) {
    std::string out;
    for (const std::string& s : v) out += (out.empty() ? "" : ", ") + s;
    return out;
  };
  return Status::InvalidArgument(std::string("table ") + table + " has columns (" + join(actual) +
                                 ") but this version expects (" + join(expected) +
                                 "); the data directory was written by an incompatible version: start this one "
                                 "on an empty --data directory (docs/STORAGE.md, Schema changes)");
}

//! Statements that bring a table written by an older version up to date, or
//! an error: possible when `actual` is a prefix of `expected` and every
//! missing column is derived (has a backfill expression). ALTER TABLE ADD
//! COLUMN for each, then one UPDATE that fills them all.
inline Result<std::vector<std::string>> MigrationSql(const char* table, std::span<const Column> expected,
                                                     const std::vector<std::string>& actual, const TypeNames& types) {
  std::vector<std::string> names;
  for (const Column& c : expected) names.emplace_back(c.name);
  Status mismatch = CheckColumnNames(table, names, actual);
  if (mismatch.ok()) return std::vector<std::string>{};
  if (actual.size() >= names.size() || !std::equal(actual.begin(), actual.end(), names.begin())) return mismatch;
  std::vector<std::string> out;
  std::string assignments;
  for (size_t i = actual.size(); i < expected.size(); ++i) {
    const Column& c = expected[i];
    if (c.backfill == nullptr) return mismatch;
    const char* type = c.type == ColumnType::kText     ? types.text
                       : c.type == ColumnType::kDouble ? types.float64
                                                       : types.int64;
    out.push_back(std::string("ALTER TABLE ") + table + " ADD COLUMN " + c.name + " " + type);
    // A NULL backfill needs no UPDATE, which would rewrite every row.
    if (std::string_view(c.backfill) == "NULL") continue;
    assignments += std::string(assignments.empty() ? "" : ", ") + c.name + " = " + c.backfill;
  }
  if (!assignments.empty()) out.push_back(std::string("UPDATE ") + table + " SET " + assignments);
  return out;
}

//! INSERT INTO table (c1, ...) VALUES (?1, ...): positional parameters in column order.
inline std::string InsertSql(const char* table, std::span<const Column> columns) {
  std::string sql = std::string("INSERT INTO ") + table + " (";
  std::string values;
  for (size_t i = 0; i < columns.size(); ++i) {
    if (i > 0) {
      sql += ", ";
      values += ", ";
    }
    sql += columns[i].name;
    values += '?' + std::to_string(i + 1);
  }
  return sql + ") VALUES (" + values + ")";
}

//! Strict UTF-8 (no overlongs, no surrogates, nothing above U+10FFFF).
inline bool IsValidUtf8(const char* data, size_t n) {
  const auto* s = reinterpret_cast<const unsigned char*>(data);
  size_t i = 0;
  while (i < n) {
    if (i + 8 <= n) {
      uint64_t word;
      std::memcpy(&word, s + i, 8);
      if ((word & 0x8080808080808080ull) == 0) {
        i += 8;
        continue;
      }
    }
    unsigned char c = s[i];
    if (c < 0x80) {
      ++i;
      continue;
    }
    size_t len;
    if (c >= 0xC2 && c <= 0xDF) {
      len = 2;
    } else if (c >= 0xE0 && c <= 0xEF) {
      len = 3;
    } else if (c >= 0xF0 && c <= 0xF4) {
      len = 4;
    } else {
      return false;
    }
    if (i + len > n) return false;
    for (size_t k = 1; k < len; ++k) {
      if ((s[i + k] & 0xC0) != 0x80) return false;
    }
    if ((c == 0xE0 && s[i + 1] < 0xA0) ||  // overlong 3-byte
        (c == 0xED && s[i + 1] > 0x9F) ||  // UTF-16 surrogates
        (c == 0xF0 && s[i + 1] < 0x90) ||  // overlong 4-byte
        (c == 0xF4 && s[i + 1] > 0x8F)) {  // above U+10FFFF
      return false;
    }
    i += len;
  }
  return true;
}

//! True when every row of s is valid UTF-8: the packed buffer is valid and no
//! row starts inside a multi-byte character.
inline bool IsValidUtf8(const StringColumn& s) {
  size_t n = s.size();
  if (n == 0) return true;
  std::string_view last = s.Get(n - 1);
  const char* begin = s.Get(0).data();
  if (!IsValidUtf8(begin, static_cast<size_t>(last.data() + last.size() - begin))) return false;
  for (size_t i = 1; i < n; ++i) {
    std::string_view row = s.Get(i);
    if (!row.empty() && (static_cast<unsigned char>(row[0]) & 0xC0) == 0x80) return false;
  }
  return true;
}

//! Checks that every column has `rows` values and every text column is valid
//! UTF-8 (DuckDB requires it; both engines enforce it so they behave alike).
inline Status ValidateColumns(const char* table, std::span<const Column> columns, size_t rows) {
  for (const Column& c : columns) {
    if (c.size != std::numeric_limits<size_t>::max() && c.size != rows) {
      return Status::InvalidArgument(std::string(table) + "." + c.name + " has " + std::to_string(c.size) +
                                     " values for " + std::to_string(rows) + " rows");
    }
    bool derived = c.kind == SourceKind::kTextOrElse;  // made of columns validated on their own
    if (c.type == ColumnType::kText && !derived && !IsValidUtf8(*static_cast<const StringColumn*>(c.a))) {
      return Status::InvalidArgument(std::string(table) + "." + c.name + " is not valid UTF-8");
    }
  }
  return Status::Ok();
}

//! Each signal writes its tables in one transaction: keyed tables, whose
//! rows are written once per (project_id, key) — span, log and metric
//! resources and metric series — and its main table, every row (spans, logs,
//! metric_points). The functions below give them for a batch, so an engine
//! writes every signal with one routine.
struct KeyedTableDef {
  const char* table;
  const char* key_column;
};
//! The most keyed tables a signal has (metrics: resources and series).
inline constexpr size_t kMaxKeyedTables = 2;
//! The position of metric_series among the metrics' keyed tables: its new
//! keys are new series (StoreStats::metric_series).
inline constexpr size_t kMetricSeriesPart = 1;

struct SignalTables {
  //! In write order: a keyed table comes before the tables whose rows
  //! reference its keys (metric_resources before metric_series).
  std::span<const KeyedTableDef> keyed;
  const char* main;
  //! The signal's sparse table (SparseColumns), written after main; nullptr
  //! for none.
  const char* sparse = nullptr;
  //! The last `sparse_values` of its columns are its values: a row of main
  //! has a sparse row when it has any of them (SparseRows).
  size_t sparse_values = 0;
};
inline SignalTables TablesOf(Signal s) {
  static constexpr KeyedTableDef kSpanKeyed[] = {{kSpanResourcesTable, "resource_id"}};
  static constexpr KeyedTableDef kLogKeyed[] = {{kLogResourcesTable, "resource_id"}};
  static constexpr KeyedTableDef kMetricKeyed[] = {{kMetricResourcesTable, "resource_id"},
                                                   {kMetricSeriesTable, "series_id"}};
  switch (s) {
    case Signal::kSpans: return {kSpanKeyed, kSpansTable, kSpanDetailsTable, kSpanDetailValueColumns};
    case Signal::kLogs: return {kLogKeyed, kLogsTable, kLogExceptionsTable, kLogExceptionValueColumns};
    case Signal::kMetrics: return {kMetricKeyed, kMetricPointsTable};
  }
  return {kSpanKeyed, kSpansTable};
}
inline Signal SignalOf(const SpanBatch&) { return Signal::kSpans; }
inline Signal SignalOf(const LogBatch&) { return Signal::kLogs; }
inline Signal SignalOf(const MetricBatch&) { return Signal::kMetrics; }
template <typename Batch>
SignalTables TablesOf(const Batch& b) {
  return TablesOf(SignalOf(b));
}

//! A batch's rows of one keyed table: their columns and each row's key.
struct KeyedPart {
  std::vector<Column> columns;
  const std::vector<int64_t>* keys;
};
//! One KeyedPart per table of TablesOf(b).keyed, in the same order.
inline std::vector<KeyedPart> KeyedParts(const SpanBatch& b) {
  auto r = ResourceColumns(b.resources, b.project_id);
  return {{{r.begin(), r.end()}, &b.resources.resource_id}};
}
inline std::vector<KeyedPart> KeyedParts(const LogBatch& b) {
  auto r = ResourceColumns(b.resources, b.project_id);
  return {{{r.begin(), r.end()}, &b.resources.resource_id}};
}
inline std::vector<KeyedPart> KeyedParts(const MetricBatch& b) {
  auto r = ResourceColumns(b.resources, b.project_id);
  auto s = MetricSeriesColumns(b);
  return {{{r.begin(), r.end()}, &b.resources.resource_id}, {{s.begin(), s.end()}, &b.series_id}};
}
inline auto MainColumns(const SpanBatch& b) { return SpanColumns(b); }
inline auto MainColumns(const LogBatch& b) { return LogColumns(b); }
inline auto MainColumns(const MetricBatch& b) { return MetricPointColumns(b); }

//! A sparse table holds values that nearly every row of a signal lacks, with
//! a row only for the rows that have one (SparseRows). An empty column costs
//! DuckDB about what a short string does, in the WAL, the row-group append
//! and the checkpoint (docs/BENCHMARKS.md, "What an empty column costs"), so
//! the row engines keep such values out of the main table. ClickHouse stores
//! an empty column for almost nothing and keeps them inline
//! (SparseLayout::kInline). Its columns are indexed by the batch's rows.
inline std::vector<Column> SparseColumns(const SpanBatch& b) {
  auto c = SpanDetailColumns(b);
  return {c.begin(), c.end()};
}
inline std::vector<Column> SparseColumns(const LogBatch& b) {
  auto c = LogExceptionColumns(b);
  return {c.begin(), c.end()};
}
inline std::vector<Column> SparseColumns(const MetricBatch&) { return {}; }
//! The rows that have a row in the sparse table: those with any of its
//! values, the last `values` of its columns (SignalTables::sparse_values),
//! each a kTextEmptyNull column of `rows` rows ('' is no value).
inline std::vector<uint32_t> SparseRows(std::span<const Column> columns, size_t values, size_t rows) {
  if (values == 0) return {};
  std::vector<char> has(rows, 0);
  for (const Column& c : columns.last(values)) {
    assert(c.kind == SourceKind::kTextEmptyNull && c.size == rows);
    const auto* s = static_cast<const StringColumn*>(c.a);
    for (size_t r = 0; r < rows; ++r) has[r] |= !s->Get(r).empty();
  }
  std::vector<uint32_t> out;
  for (size_t r = 0; r < rows; ++r) {
    if (has[r]) out.push_back(static_cast<uint32_t>(r));
  }
  return out;
}

//! The identity of a keyed row: written once per key.
struct RowKey {
  int64_t project_id;
  int64_t key;
  bool operator==(const RowKey&) const = default;
};

struct RowKeyHash {
  size_t operator()(const RowKey& k) const {
    uint64_t h = static_cast<uint64_t>(k.key) ^ (static_cast<uint64_t>(k.project_id) * 0x9E3779B97F4A7C15ull);
    h ^= h >> 31;
    return static_cast<size_t>(h);
  }
};

using KeySet = std::unordered_set<RowKey, RowKeyHash>;
//! One KeySet per keyed table of a signal, in TablesOf() order.
using KeySets = std::array<KeySet, kMaxKeyedTables>;

//! Appends to `rows` the indexes of `keys` that are in neither `known` nor
//! `pending`, and adds them to `pending` (so repeats later in the same write
//! are skipped too).
inline void SelectNewKeys(int64_t project_id, const std::vector<int64_t>& keys, const KeySet& known, KeySet* pending,
                          std::vector<uint32_t>* rows) {
  for (size_t i = 0; i < keys.size(); ++i) {
    RowKey key{project_id, keys[i]};
    if (known.count(key) != 0) continue;
    if (!pending->insert(key).second) continue;
    rows->push_back(static_cast<uint32_t>(i));
  }
}

//! Checks that every index of a kInt64Indexed column names a value it has:
//! a bad one would read out of bounds.
inline Status ValidateIndexes(const char* table, std::span<const Column> columns, size_t values) {
  for (const Column& c : columns) {
    if (c.kind != SourceKind::kInt64Indexed) continue;
    const auto* index = static_cast<const uint32_t*>(c.b);
    for (size_t r = 0; r < c.size; ++r) {
      if (index[r] >= values) {
        return Status::InvalidArgument(std::string(table) + "." + c.name + " row " + std::to_string(r) +
                                       " refers to row " + std::to_string(index[r]) + " of " + std::to_string(values));
      }
    }
  }
  return Status::Ok();
}

//! A batch's keyed parts and main columns, validated: every column has a
//! value per row, texts are UTF-8 and indexes in range.
template <typename Batch>
struct CheckedBatch {
  std::vector<KeyedPart> keyed;
  decltype(MainColumns(std::declval<const Batch&>())) main;
  std::vector<Column> sparse;  // SparseColumns
};

template <typename Batch>
Result<CheckedBatch<Batch>> CheckBatch(const Batch& b) {
  const SignalTables tables = TablesOf(b);
  CheckedBatch<Batch> out{KeyedParts(b), MainColumns(b), SparseColumns(b)};
  for (size_t t = 0; t < out.keyed.size(); ++t) {
    const KeyedPart& part = out.keyed[t];
    SL_RETURN_IF_ERROR(ValidateColumns(tables.keyed[t].table, part.columns, part.keys->size()));
  }
  if constexpr (std::is_same_v<Batch, MetricBatch>) {
    SL_RETURN_IF_ERROR(ValidateIndexes(kMetricSeriesTable, out.keyed[kMetricSeriesPart].columns, b.resources.rows()));
  }
  SL_RETURN_IF_ERROR(ValidateColumns(tables.main, out.main, b.rows()));
  if (tables.sparse != nullptr) SL_RETURN_IF_ERROR(ValidateColumns(tables.sparse, out.sparse, b.rows()));
  return out;
}

//! One batch of a write, as both engines write it: its columns validated,
//! and per keyed table the indexes of the rows that neither `known` nor an
//! earlier batch of the same write (`pending`, which this extends) has stored.
template <typename Batch>
struct BatchWrite {
  CheckedBatch<Batch> columns;
  std::array<std::vector<uint32_t>, kMaxKeyedTables> new_keyed_rows;
  std::vector<uint32_t> sparse_rows;  // SparseRows
};

template <typename Batch>
Result<BatchWrite<Batch>> PlanBatchWrite(const Batch& b, const KeySets& known, KeySets* pending) {
  Result<CheckedBatch<Batch>> checked = CheckBatch(b);
  if (!checked.ok()) return checked.status();
  BatchWrite<Batch> w{std::move(checked).value(), {}, {}};
  w.sparse_rows = SparseRows(w.columns.sparse, TablesOf(b).sparse_values, b.rows());
  for (size_t t = 0; t < w.columns.keyed.size(); ++t) {
    SelectNewKeys(b.project_id, *w.columns.keyed[t].keys, known[t], &(*pending)[t], &w.new_keyed_rows[t]);
  }
  return w;
}

}  // namespace sightline::schema
