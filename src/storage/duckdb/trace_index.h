#pragma once

// The trace-id -> time-range index of the DuckDB engine (docs/STORAGE.md,
// "DuckDB's own indexes"): where a trace's spans and log records lie in
// time, so opening a trace reads the row groups of that range instead of
// every span and log record of the project (random ids defeat zone maps).
//
// Two of them, one per signal, so each signal's bytes count its own index
// (deep health): span_trace_index_tail / span_trace_index and
// log_trace_index_tail / log_trace_index (sorted_runs.h), one row per trace
// per written batch (for log records: per run of neighbouring records of the
// trace in the batch); a lookup takes the least and greatest second of a
// key's rows. Compaction sorts the rows, it does not fold them: a
// log record usually has a trace of its own, so there is little to fold, and
// a sort alone costs half as much. A row holds as little as a lookup needs
// (about 7 bytes on disk where the trace_ranges rows it replaced took 23):
//   project_id   the tenant
//   trace_id_low the key: the trace id's last 8 bytes, the part W3C Trace
//                Context (level 2, the "random" flag) says is random, and the
//                random part of 64-bit B3 ids and of X-Ray ids (whose first
//                bytes are a timestamp). Traces that share it share rows: a
//                lookup then covers their union, which only widens what it
//                reads (the reads still compare both halves of the id).
//   min_s        the least start_time_ns (spans) or time_ns (logs), in whole
//                seconds (floor)
//   span_s       the greatest time's second minus min_s: the greatest
//                start_time_ns (spans), or greatest time a log record ages
//                by (sql::AgeTimeSql: observed time when time_ns is 0), never
//                below its time_ns
// A row's seconds cover a superset of its rows' times; rows may overlap.
// Retention deletes a row only once its last second has expired, when every
// row it covers is gone too, so the rows only ever widen what a lookup reads.
// A database with the earlier trace_ranges tables has them converted at open.

#include <duckdb.h>

#include <cstdint>
#include <optional>
#include <unordered_map>
#include <utility>
#include <vector>

#include "common/status.h"
#include "model/batch.h"
#include "storage/duckdb/appender_chunk.h"
#include "storage/duckdb/sorted_runs.h"
#include "storage/sql/sql_builder.h"
#include "storage/telemetry_reader.h"
#include "storage/telemetry_store.h"

namespace sightline::duckdb_index {

extern const RunTableDef kSpanTraceIndex;
extern const RunTableDef kLogTraceIndex;

//! The whole second holding t (floor, also for negative t).
int64_t SecondOf(int64_t t);

//! The times of the seconds [min_s, max_s] as [from, to) nanoseconds;
//! nullopt when max_s's end is past what int64 nanoseconds can say.
std::optional<TimeRange> RangeOfSeconds(int64_t min_s, int64_t max_s);

//! Creates both signals' tables when missing, in one transaction. When they
//! are new: converts an earlier build's trace_ranges tables into them (and
//! drops those), or else, when spans or logs already hold rows, fills them
//! from those (an INSERT ... SELECT ... GROUP BY each; docs/STORAGE.md says
//! its cost).
Status CreateTraceIndex(duckdb_connection conn);

//! Deletes the rows whose every covered row has expired (retention).
Status ExpireTraceIndex(duckdb_connection conn, Signal signal, const ProjectSet& projects, int64_t before_ns);

//! The extent lookup of one trace: rows (signal, min_s, max_s), one per
//! signal with rows: the trace's times lie in [min_s, max_s + 1) seconds.
sql::Sql TraceExtentSql(int64_t project_id, const TraceId& id);

//! Builds one index row per trace of a batch. One per sink (not thread-safe);
//! the scratch map is reused across batches.
class TraceRangeWriter {
 public:
  TraceRangeWriter();
  TraceRangeWriter(const TraceRangeWriter&) = delete;
  TraceRangeWriter& operator=(const TraceRangeWriter&) = delete;

  //! Appends the batch's rows; returns how many. Traces are told apart by
  //! their whole id here, so two traces that share the key make two rows.
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
  Result<uint64_t> Flush(duckdb_appender appender, int64_t project_id);

  std::unordered_map<Key, Range, KeyHash> ranges_;  // spans: one per trace
  std::vector<std::pair<Key, Range>> rows_;         // what Flush appends
  AppenderChunk chunk_;
};

}  // namespace sightline::duckdb_index
