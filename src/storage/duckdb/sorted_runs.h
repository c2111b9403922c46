#pragma once

// DuckDB's own lookup tables (trace_index.h, log_token_index.h): engine
// internals beside the shared schema (storage/schema.h), as the SQLite store
// keeps its own B-tree indexes. DuckDB has no B-tree that survives a billion
// appended rows cheaply; it has per-row-group min/max zone maps. A table
// sorted on its lookup key makes each row group cover a narrow key range, so
// a lookup by key reads about one row group. Rows arrive unsorted, so each
// index is two tables:
//
// - a tail, appended by the sink in the transaction of the rows it indexes
//   (small: a lookup scans it whole);
// - runs: Compact() moves the tail into the runs table as one sorted run
//   (INSERT ... SELECT ... ORDER BY key, then DELETE the tail, in one
//   transaction), and merges runs of similar size (four of a size tier into
//   one), so a lookup reads about one row group per run and the number of
//   runs grows with the logarithm of the rows, up to the merge cap: a merge
//   that would write more than max_merge_rows rows is not made. DuckDB keeps
//   16 bytes per deleted row outside its memory limit until the next checkpoint
//   (measured: a merge of 80M rows under a 1 GB limit peaked at 2.3 GB RSS),
//   so an uncapped merge at a billion rows would need gigabytes; past the cap
//   the runs only grow in number (a few dozen at a billion rows).
//
// Load() and Compact() are not thread-safe: the store calls them under its
// maintenance lock. AddTailRows() and tail_rows() may be called from any
// thread (the sinks report what they appended).

#include <duckdb.h>

#include <atomic>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "common/status.h"
#include "storage/sql/sql_connection.h"

namespace sightline::duckdb_index {

//! Runs sql on conn (the result discarded); the error carries DuckDB's message.
Status Exec(duckdb_connection conn, const std::string& sql);
//! Runs sql on conn and calls on_row for every row.
Status Query(duckdb_connection conn, const std::string& sql, const RowCallback& on_row);
//! Whether `table` exists in the main schema of conn's database.
Result<bool> TableExists(duckdb_connection conn, const std::string& table);

struct RunTableDef {
  const char* runs;      // the sorted table; its last column is `run BIGINT`
  const char* tail;      // the same columns without `run`
  const char* select;    // what a run holds of its source rows (the tail's columns, maybe aggregated)
  const char* group_by;  // "" or the GROUP BY that goes with `select`
  const char* order;     // the ORDER BY of a run (the lookup key first)
};

//! The largest merge: 96M rows, about 1.5 GB of DuckDB's delete bookkeeping
//! until the next checkpoint. Runs of 4^13 (67M) rows are the largest a merge writes;
//! four of those are never merged.
inline constexpr uint64_t kMaxMergeRows = 96u << 20;

class SortedRuns {
 public:
  explicit SortedRuns(const RunTableDef& def, uint64_t max_merge_rows = kMaxMergeRows)
      : def_(def), max_merge_rows_(max_merge_rows) {}

  //! Reads the runs' sizes and the tail's row count (at open).
  Status Load(duckdb_connection conn);
  //! Moves the tail into a new sorted run and merges the runs of a size tier
  //! that has four, unless they hold more than max_merge_rows. No-op for an
  //! empty tail.
  Status Compact(duckdb_connection conn);
  //! The tail's rows (counted at Load, plus what the sinks reported).
  uint64_t tail_rows() const { return tail_rows_.load(); }
  void AddTailRows(uint64_t n) { tail_rows_.fetch_add(n); }
  size_t runs() const { return run_rows_.size(); }
  const RunTableDef& def() const { return def_; }

 private:
  //! Rewrites the runs in `ids` as one sorted run.
  Status Merge(duckdb_connection conn, const std::vector<int64_t>& ids);

  RunTableDef def_;
  uint64_t max_merge_rows_;
  std::map<int64_t, uint64_t> run_rows_;  // run id -> rows written (retention deletes are not subtracted)
  int64_t next_run_ = 1;
  std::atomic<uint64_t> tail_rows_{0};
};

}  // namespace sightline::duckdb_index
