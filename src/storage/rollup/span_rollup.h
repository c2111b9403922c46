#pragma once

// Span rollups: per project, per minute and per hour, per (service,
// endpoint, is_entry), the count, errors, duration sum, min and max, and a
// latency sketch of the spans that started in the bucket. They are written
// at ingest, in the transaction of the spans, so they are exactly as durable
// as the rows; reads (storage/sql, SqlReader::GroupSpans) answer the full
// buckets of a long range from them and only the partial buckets at its
// edges from raw spans.
//
// Three tables, one shape (SpanRollupColumns):
// - span_rollup_delta: what each commit adds, at minute resolution; many
//   rows per key.
// - span_rollup_minute, span_rollup_hour: one row per key and bucket.
// CompactSpanRollups folds the deltas into both levels and empties the
// delta table (one transaction). A read adds the three, each span exactly
// once: a span is in the deltas until a compaction moves it to both levels.
// Late spans (older than the current bucket) are deltas like any other.

#include <array>
#include <cstdint>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "model/batch.h"
#include "storage/rollup/latency_sketch.h"
#include "storage/rollup/rollup_table.h"
#include "storage/schema.h"
#include "storage/sql/sql_connection.h"

namespace sightline::rollup {

inline constexpr const char* kSpanDeltaTable = "span_rollup_delta";
inline constexpr const char* kSpanMinuteTable = "span_rollup_minute";
inline constexpr const char* kSpanHourTable = "span_rollup_hour";
//! One row, complete_from_ns: the rollups hold every span that starts at or
//! after it. A database that had spans before its rollup tables existed
//! starts them at the hour after its newest span; reads take the spans
//! before that from the raw rows.
inline constexpr const char* kSpanStateTable = "span_rollup_state";

struct SpanRollupKey {
  int64_t project_id = 0;
  int64_t bucket_ns = 0;  // the bucket's start
  std::string service;
  std::string endpoint;
  int64_t is_entry = 0;
  auto operator<=>(const SpanRollupKey&) const = default;
};

struct SpanRollupValue {
  int64_t count = 0;
  int64_t errors = 0;  // status_code = 2
  double duration_sum = 0;
  int64_t duration_min = INT64_MAX;
  int64_t duration_max = INT64_MIN;
  LatencySketch sketch;

  void Add(int64_t duration_ns, bool error);
  void Merge(const SpanRollupValue& other);
  bool Empty() const { return count <= 0; }
};

using SpanRollupMap = std::map<SpanRollupKey, SpanRollupValue>;

//! Adds every span of the batch to `m` at minute resolution, keyed exactly
//! as the spans table stores them (service_name, endpoint, is_entry).
void AddSpans(const SpanBatch& b, SpanRollupMap* m);

//! Rows of one rollup table, column by column, for an engine's appender.
struct SpanRollupRows {
  std::vector<int64_t> project_id, bucket_ns, is_entry, count, errors, duration_min, duration_max;
  std::vector<double> duration_sum;
  StringColumn service, endpoint, sketch;
  size_t rows() const { return project_id.size(); }
};
SpanRollupRows ToRows(const SpanRollupMap& m);

inline constexpr size_t kSpanRollupColumnCount = 11;
std::array<schema::Column, kSpanRollupColumnCount> SpanRollupColumns(const SpanRollupRows& r);
//! The SELECT list that reads a rollup row back (ReadValue's order, after
//! the key columns project_id, bucket_ns, service_name, endpoint, is_entry).
inline constexpr const char* kSpanRollupSelect =
    "project_id, bucket_ns, service_name, endpoint, is_entry, count, errors, duration_sum, duration_min, "
    "duration_max, sketch";
//! A key and value from a row selected with kSpanRollupSelect, starting at `col`.
Status ReadRow(const RowView& r, int col, SpanRollupKey* key, SpanRollupValue* value);

//! The rollup_table.h description of the span rollups.
struct SpanRollupTraits {
  using Key = SpanRollupKey;
  using Value = SpanRollupValue;
  static constexpr const char* kSelect = kSpanRollupSelect;
  static Status Read(const RowView& r, Key* k, Value* v) { return ReadRow(r, 0, k, v); }
  static Status Append(RollupSession* s, const char* table, const SpanRollupMap& m);
};
inline constexpr RollupTables kSpanRollupTables{kSpanDeltaTable, kSpanMinuteTable, kSpanHourTable};

//! CREATE TABLE IF NOT EXISTS for the four tables.
std::vector<std::string> CreateSpanRollupSql(const schema::TypeNames& types);
//! Writes the state row if there is none: the lowest time when the spans
//! table is empty, else the hour after its newest span.
Status InitSpanRollupState(RollupSession* s);

//! Folds every delta row into the minute and hour tables and deletes the
//! deltas. Reads and rewrites only the (project, bucket) pairs the deltas
//! touch. Returns the number of delta rows folded.
Result<int64_t> CompactSpanRollups(RollupSession* s);

//! Retention's share (rollup_table.h Expire), in the transaction that then
//! deletes the spans older than before_ns of `project_filter`'s projects
//! (sql::ProjectFilterSql).
Status ExpireSpanRollups(RollupSession* s, const std::string& project_filter, int64_t before_ns);

}  // namespace sightline::rollup
