#pragma once

// The trace-id -> time-range index of the DuckDB engine (docs/STORAGE.md,
// "DuckDB's own indexes"): where a trace's spans and log records lie in
// time, so opening a trace reads the row groups of that range instead of
// every span and log record of the project (random ids defeat zone maps).
//
// trace_ranges_tail / trace_ranges (sorted_runs.h), one row per trace, per
// signal, per written batch (for log records: per run of neighbouring
// records of the trace in the batch) (a lookup takes the least min and greatest max
// of a trace's rows; compaction sorts them, it does not fold them: a log
// record usually has a trace of its own, so there is little to fold, and a
// sort alone costs half as much):
//   project_id, trace_id_high, trace_id_low  the trace (ids never NULL here)
//   signal     0 spans, 1 log records
//   min_ns     the least start_time_ns (spans) or time_ns (logs)
//   max_ns     the greatest start_time_ns (spans), or greatest time a log
//              record ages by (sql::AgeTimeSql: observed time when time_ns
//              is 0), which is never below its time_ns
// A row covers a superset of its rows' times; rows of a trace may overlap.
// Retention deletes a row only once max_ns is expired, when every row it
// covers is gone too, so the ranges only ever widen what a lookup reads.

#include <duckdb.h>

#include <cstdint>
#include <unordered_map>
#include <utility>
#include <vector>

#include "common/status.h"
#include "model/batch.h"
#include "storage/duckdb/sorted_runs.h"
#include "storage/sql/sql_builder.h"
#include "storage/telemetry_reader.h"
#include "storage/telemetry_store.h"

namespace sightline::duckdb_index {

extern const RunTableDef kTraceRanges;

//! Creates the tables when missing. When trace_ranges is new and spans or
//! logs already hold rows, fills it from them in the same transaction (one
//! INSERT ... SELECT ... GROUP BY per signal; docs/STORAGE.md says its cost).
Status CreateTraceIndex(duckdb_connection conn);

//! Deletes the rows whose every covered row has expired (retention).
Status ExpireTraceRanges(duckdb_connection conn, Signal signal, const ProjectSet& projects, int64_t before_ns);

//! The extent lookup of one trace: rows (signal, min_ns, max_ns), one per
//! signal with rows.
sql::Sql TraceExtentSql(int64_t project_id, const TraceId& id);

//! Builds one index row per trace of a batch. One per sink (not thread-safe);
//! the scratch map is reused across batches.
class TraceRangeWriter {
 public:
  TraceRangeWriter();
  ~TraceRangeWriter();
  TraceRangeWriter(const TraceRangeWriter&) = delete;
  TraceRangeWriter& operator=(const TraceRangeWriter&) = delete;

  //! Appends the batch's rows; returns how many.
  Result<uint64_t> Append(duckdb_appender appender, const SpanBatch& b);
  Result<uint64_t> Append(duckdb_appender appender, const LogBatch& b);

 private:
  struct Key {
    uint64_t high, low;
    bool operator==(const Key&) const = default;
  };
  struct KeyHash {
    size_t operator()(const Key& k) const { return static_cast<size_t>(k.high * 0x9E3779B97F4A7C15ull ^ k.low); }
  };
  struct Range {
    int64_t min, max;
  };
  Result<uint64_t> Flush(duckdb_appender appender, int64_t project_id, int8_t signal);

  std::unordered_map<Key, Range, KeyHash> ranges_;  // spans: one per trace
  std::vector<std::pair<Key, Range>> rows_;         // what Flush appends
  //! Rows go to the appender a chunk at a time (value by value costs
  //! several times more per row).
  duckdb_data_chunk chunk_ = nullptr;
};

}  // namespace sightline::duckdb_index
