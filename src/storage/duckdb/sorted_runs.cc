#include "storage/duckdb/sorted_runs.h"

#include <cstring>
#include <vector>

#include "storage/duckdb/duckdb_reader.h"

namespace sightline::duckdb_index {

namespace {

//! A query result that is always destroyed (duckdb_query requires it even on error).
class OwnedResult {
 public:
  OwnedResult() { std::memset(&result_, 0, sizeof(result_)); }
  ~OwnedResult() { duckdb_destroy_result(&result_); }
  OwnedResult(const OwnedResult&) = delete;
  OwnedResult& operator=(const OwnedResult&) = delete;

  Status Run(duckdb_connection conn, const std::string& sql) {
    if (duckdb_query(conn, sql.c_str(), &result_) == DuckDBSuccess) return Status::Ok();
    const char* error = duckdb_result_error(&result_);
    return Status::IoError("duckdb: " + sql + ": " + (error != nullptr ? error : "unknown DuckDB error"));
  }
  duckdb_result* get() { return &result_; }

 private:
  duckdb_result result_;
};

//! Runs sql and returns the rows it changed.
Result<uint64_t> ExecCount(duckdb_connection conn, const std::string& sql) {
  OwnedResult result;
  SL_RETURN_IF_ERROR(result.Run(conn, sql));
  return static_cast<uint64_t>(duckdb_rows_changed(result.get()));
}

//! Runs of one tier differ in size by less than 4x.
int Tier(uint64_t rows) {
  int tier = 0;
  for (; rows >= 4; rows /= 4) ++tier;
  return tier;
}

//! Four runs of a tier are merged: a lookup reads at most three runs per
//! tier, and a row is rewritten once per tier it climbs.
constexpr size_t kRunsPerTier = 4;

//! Rolls back unless committed.
class Txn {
 public:
  explicit Txn(duckdb_connection conn) : conn_(conn) {}
  ~Txn() {
    if (open_) (void)Exec(conn_, "ROLLBACK");
  }
  Status Begin() {
    SL_RETURN_IF_ERROR(Exec(conn_, "BEGIN TRANSACTION"));
    open_ = true;
    return Status::Ok();
  }
  Status Commit() {
    SL_RETURN_IF_ERROR(Exec(conn_, "COMMIT"));
    open_ = false;
    return Status::Ok();
  }

 private:
  duckdb_connection conn_;
  bool open_ = false;
};

}  // namespace

Status Exec(duckdb_connection conn, const std::string& sql) {
  OwnedResult result;
  return result.Run(conn, sql);
}

Status Query(duckdb_connection conn, const std::string& sql, const RowCallback& on_row) {
  OwnedResult result;
  SL_RETURN_IF_ERROR(result.Run(conn, sql));
  return ForEachDuckDbRow(result.get(), on_row);
}

Result<bool> TableExists(duckdb_connection conn, const std::string& table) {
  bool exists = false;
  SL_RETURN_IF_ERROR(Query(conn,
                           "SELECT 1 FROM duckdb_tables() WHERE database_name = current_database() AND schema_name = "
                           "'main' AND table_name = '" +
                               table + "'",
                           [&](const RowView&) { exists = true; }));
  return exists;
}

Status SortedRuns::Load(duckdb_connection conn) {
  run_rows_.clear();
  SL_RETURN_IF_ERROR(Query(conn, std::string("SELECT run, count(*) FROM ") + def_.runs + " GROUP BY run",
                           [&](const RowView& r) { run_rows_[r.GetInt(0)] = static_cast<uint64_t>(r.GetInt(1)); }));
  next_run_ = run_rows_.empty() ? 1 : run_rows_.rbegin()->first + 1;
  uint64_t tail = 0;
  SL_RETURN_IF_ERROR(Query(conn, std::string("SELECT count(*) FROM ") + def_.tail,
                           [&](const RowView& r) { tail = static_cast<uint64_t>(r.GetInt(0)); }));
  tail_rows_.store(tail);
  return Status::Ok();
}

Status SortedRuns::Compact(duckdb_connection conn) {
  const int64_t run = next_run_;
  std::string insert = std::string("INSERT INTO ") + def_.runs + " SELECT " + def_.select + ", " + std::to_string(run) +
                       " FROM " + def_.tail;
  if (*def_.group_by != '\0') insert += std::string(" GROUP BY ") + def_.group_by;
  insert += std::string(" ORDER BY ") + def_.order;
  Txn txn(conn);
  SL_RETURN_IF_ERROR(txn.Begin());
  Result<uint64_t> written = ExecCount(conn, insert);
  if (!written.ok()) return written.status();
  // The rows this transaction sees, which are the ones it just copied.
  Result<uint64_t> moved = ExecCount(conn, std::string("DELETE FROM ") + def_.tail);
  if (!moved.ok()) return moved.status();
  SL_RETURN_IF_ERROR(txn.Commit());
  const uint64_t before = tail_rows_.load();
  tail_rows_.fetch_sub(std::min(before, *moved));
  if (*written == 0) return Status::Ok();
  next_run_ = run + 1;
  run_rows_[run] = *written;
  for (;;) {
    std::map<int, std::vector<int64_t>> tiers;
    for (const auto& [id, rows] : run_rows_) tiers[Tier(rows)].push_back(id);
    std::vector<int64_t> merge;
    for (auto& [tier, ids] : tiers) {
      if (ids.size() < kRunsPerTier) continue;
      ids.resize(kRunsPerTier);  // the oldest four
      uint64_t rows = 0;
      for (int64_t id : ids) rows += run_rows_[id];
      if (rows > max_merge_rows_) continue;
      merge = std::move(ids);
      break;
    }
    if (merge.empty()) return Status::Ok();
    SL_RETURN_IF_ERROR(Merge(conn, merge));
  }
}

Status SortedRuns::Merge(duckdb_connection conn, const std::vector<int64_t>& ids) {
  std::string in = "(";
  for (size_t i = 0; i < ids.size(); ++i) in += (i ? ", " : "") + std::to_string(ids[i]);
  in += ")";
  const int64_t run = next_run_;
  std::string insert = std::string("INSERT INTO ") + def_.runs + " SELECT " + def_.select + ", " + std::to_string(run) +
                       " FROM " + def_.runs + " WHERE run IN " + in;
  if (*def_.group_by != '\0') insert += std::string(" GROUP BY ") + def_.group_by;
  insert += std::string(" ORDER BY ") + def_.order;
  Txn txn(conn);
  SL_RETURN_IF_ERROR(txn.Begin());
  Result<uint64_t> written = ExecCount(conn, insert);
  if (!written.ok()) return written.status();
  SL_RETURN_IF_ERROR(Exec(conn, std::string("DELETE FROM ") + def_.runs + " WHERE run IN " + in));
  SL_RETURN_IF_ERROR(txn.Commit());
  for (int64_t id : ids) run_rows_.erase(id);
  next_run_ = run + 1;
  run_rows_[run] = *written;
  return Status::Ok();
}

}  // namespace sightline::duckdb_index
