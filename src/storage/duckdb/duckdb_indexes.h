#pragma once

// The DuckDB engine's own indexes, as the store sees them: the trace-id ->
// time-range index (trace_index.h) and the log token index
// (log_token_index.h). Engine internals, not part of storage/schema.h.
//
// Lifecycle: Open() at store open (creates, backfills, loads run sizes);
// every sink writes its batches' index rows with an IndexWriter inside its
// own transaction, then reports them (Written); Compact() and Expire() run on
// the maintenance connection under the store's maintenance lock: Expire()
// while its signal's sink cannot write (the store holds that write lock),
// Compact() beside the sinks (its transaction moves only the tail rows it
// sees; rows committed later stay for the next one).

#include <duckdb.h>

#include <cstdint>
#include <functional>

#include "common/status.h"
#include "model/batch.h"
#include "storage/duckdb/log_token_index.h"
#include "storage/duckdb/sorted_runs.h"
#include "storage/duckdb/trace_index.h"
#include "storage/telemetry_store.h"

namespace sightline::duckdb_index {

//! A tail is compacted into a run once it has this many rows: a lookup scans
//! a tail whole (a few milliseconds at this size), and a run this large
//! spans about eight row groups of which a lookup reads one.
inline constexpr uint64_t kTraceTailRows = 1u << 20;
inline constexpr uint64_t kTokenTailRows = 1u << 19;

class DuckDbIndexes {
 public:
  Status Open(duckdb_connection conn);
  //! Whether a tail has reached its compaction size.
  bool WantsCompaction() const;
  //! Moves every non-empty tail into a sorted run.
  Status Compact(duckdb_connection conn);
  //! Deletes the index rows retention expired (after the rows themselves).
  Status Expire(duckdb_connection conn, Signal signal, const ProjectSet& projects, int64_t before_ns);

  SortedRuns& traces(Signal signal) { return signal == Signal::kSpans ? span_traces_ : log_traces_; }
  SortedRuns& tokens() { return tokens_; }

 private:
  SortedRuns span_traces_{kSpanTraceIndex};
  SortedRuns log_traces_{kLogTraceIndex};
  SortedRuns tokens_{kLogTokens};
};

//! Writes the index rows of one sink's batches. Not thread-safe.
class IndexWriter {
 public:
  using OpenAppender = std::function<Result<duckdb_appender>(const char* table)>;

  //! In the sink's transaction, before its commit.
  Status Add(const SpanBatch& b, const OpenAppender& open);
  Status Add(const LogBatch& b, const OpenAppender& open);
  Status Add(const MetricBatch&, const OpenAppender&) { return Status::Ok(); }
  //! After the commit: reports the rows to the tails' counts and forgets them.
  void Written(DuckDbIndexes* indexes);
  //! After a failed write: forgets the rows.
  void Discard();

 private:
  TraceRangeWriter traces_;
  Signal signal_ = Signal::kSpans;            // of the trace rows written
  duckdb_appender trace_appender_ = nullptr;  // owned by the transaction
  duckdb_appender token_appender_ = nullptr;
  uint64_t trace_rows_ = 0;
  uint64_t token_rows_ = 0;
};

}  // namespace sightline::duckdb_index
