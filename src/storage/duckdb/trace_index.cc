#include "storage/duckdb/trace_index.h"

#include <algorithm>
#include <string>

#include "storage/sql/retention_sql.h"

namespace sightline::duckdb_index {

namespace {

constexpr int8_t kSpansSignal = 0;
constexpr int8_t kLogsSignal = 1;

constexpr const char* kColumns =
    "project_id BIGINT, trace_id_high BIGINT, trace_id_low BIGINT, signal TINYINT, min_ns BIGINT, max_ns BIGINT";

Status AppenderError(duckdb_appender appender) {
  const char* error = duckdb_appender_error(appender);
  return Status::IoError(std::string("duckdb append to trace_ranges_tail: ") +
                         (error != nullptr ? error : "unknown error"));
}

}  // namespace

// Lookups filter on (project_id, trace_id_high, trace_id_low): the runs are
// sorted on the high half, which is random, so a run's row groups split the
// id space and zone maps keep about one of them.
const RunTableDef kTraceRanges{
    "trace_ranges",
    "trace_ranges_tail",
    "project_id, trace_id_high, trace_id_low, signal, min_ns, max_ns",
    "",
    "trace_id_high, trace_id_low, project_id",
};

Status CreateTraceIndex(duckdb_connection conn) {
  Result<bool> exists = TableExists(conn, kTraceRanges.runs);
  if (!exists.ok()) return exists.status();
  SL_RETURN_IF_ERROR(Exec(conn, "BEGIN TRANSACTION"));
  Status s = Exec(conn, std::string("CREATE TABLE IF NOT EXISTS ") + kTraceRanges.tail + " (" + kColumns + ")");
  if (s.ok())
    s = Exec(conn, std::string("CREATE TABLE IF NOT EXISTS ") + kTraceRanges.runs + " (" + kColumns + ", run BIGINT)");
  if (s.ok() && !*exists) {
    // Both signals' traces as run 1, sorted as compaction writes a run. One
    // statement: in DuckDB 1.4.4 rows of a large INSERT that follows an
    // INSERT of no rows into the same table in one transaction stay
    // invisible until the next checkpoint (seen with spans empty and 8M
    // traced log records).
    s = Exec(conn, std::string("INSERT INTO ") + kTraceRanges.runs +
                       " SELECT *, 1 FROM (SELECT project_id, trace_id_high, trace_id_low, 0, min(start_time_ns), "
                       "max(start_time_ns) FROM spans WHERE trace_id_high IS NOT NULL GROUP BY 1, 2, 3 UNION ALL "
                       "SELECT project_id, trace_id_high, trace_id_low, 1, min(time_ns), max(greatest(time_ns, " +
                       sql::AgeTimeSql(Signal::kLogs) +
                       ")) FROM logs WHERE trace_id_high IS NOT NULL GROUP BY 1, 2, 3) ORDER BY 2, 3, 1");
  }
  if (!s.ok()) {
    (void)Exec(conn, "ROLLBACK");
    return s;
  }
  return Exec(conn, "COMMIT");
}

Status ExpireTraceRanges(duckdb_connection conn, Signal signal, const ProjectSet& projects, int64_t before_ns) {
  if (signal != Signal::kSpans && signal != Signal::kLogs) return Status::Ok();
  const std::string where = std::string(" WHERE signal = ") + (signal == Signal::kSpans ? "0" : "1") +
                            " AND max_ns < " + std::to_string(before_ns) + sql::ProjectFilterSql(projects);
  SL_RETURN_IF_ERROR(Exec(conn, std::string("DELETE FROM ") + kTraceRanges.runs + where));
  return Exec(conn, std::string("DELETE FROM ") + kTraceRanges.tail + where);
}

sql::Sql TraceExtentSql(int64_t project_id, const TraceId& id) {
  sql::Sql sql;
  sql << "SELECT signal, min(min_ns), max(max_ns) FROM (";
  for (const char* table : {kTraceRanges.runs, kTraceRanges.tail}) {
    if (table != kTraceRanges.runs) sql << " UNION ALL ";
    sql << "SELECT signal, min_ns, max_ns FROM " << table << " WHERE trace_id_high = ";
    sql.Bind(static_cast<int64_t>(id.high));
    sql << " AND trace_id_low = ";
    sql.Bind(static_cast<int64_t>(id.low));
    sql << " AND project_id = ";
    sql.Bind(project_id);
  }
  sql << ") GROUP BY signal";
  return sql;
}

Result<uint64_t> TraceRangeWriter::Append(duckdb_appender appender, const SpanBatch& b) {
  ranges_.clear();
  // Spans of one trace usually sit together in a batch: the last trace is
  // remembered to skip most hash lookups.
  Key last{0, 0};
  Range* range = nullptr;
  for (size_t i = 0; i < b.rows(); ++i) {
    const Key key{b.trace_id_high[i], b.trace_id_low[i]};
    if (key.high == 0 && key.low == 0) continue;  // stored as NULL: no trace
    const int64_t t = b.start_time_ns[i];
    if (range == nullptr || !(key == last)) {
      auto [it, added] = ranges_.try_emplace(key, Range{t, t});
      range = &it->second;
      last = key;
      if (added) continue;
    }
    range->min = std::min(range->min, t);
    range->max = std::max(range->max, t);
  }
  rows_.assign(ranges_.begin(), ranges_.end());
  return Flush(appender, b.project_id, kSpansSignal);
}

// Log records mostly carry a trace of their own, or sit beside the other
// records of theirs: only neighbours are folded (no hash map per record); a
// trace's records apart in the batch make several rows, which lookups fold.
Result<uint64_t> TraceRangeWriter::Append(duckdb_appender appender, const LogBatch& b) {
  rows_.clear();
  for (size_t i = 0; i < b.rows(); ++i) {
    const Key key{b.trace_id_high[i], b.trace_id_low[i]};
    if (key.high == 0 && key.low == 0) continue;
    const int64_t t = b.time_ns[i];
    const int64_t age = std::max(t, t == 0 ? b.observed_time_ns[i] : t);  // sql::AgeTimeSql(kLogs)
    if (!rows_.empty() && rows_.back().first == key) {
      rows_.back().second.min = std::min(rows_.back().second.min, t);
      rows_.back().second.max = std::max(rows_.back().second.max, age);
    } else {
      rows_.push_back({key, Range{t, age}});
    }
  }
  return Flush(appender, b.project_id, kLogsSignal);
}

TraceRangeWriter::TraceRangeWriter() {
  duckdb_logical_type types[6];
  for (int i = 0; i < 6; ++i) types[i] = duckdb_create_logical_type(i == 3 ? DUCKDB_TYPE_TINYINT : DUCKDB_TYPE_BIGINT);
  chunk_ = duckdb_create_data_chunk(types, 6);
  for (duckdb_logical_type& t : types) duckdb_destroy_logical_type(&t);
}

TraceRangeWriter::~TraceRangeWriter() { duckdb_destroy_data_chunk(&chunk_); }

Result<uint64_t> TraceRangeWriter::Flush(duckdb_appender appender, int64_t project_id, int8_t signal) {
  const size_t capacity = duckdb_vector_size();
  auto column = [&](idx_t c) { return duckdb_vector_get_data(duckdb_data_chunk_get_vector(chunk_, c)); };
  auto it = rows_.begin();
  for (size_t left = rows_.size(); left > 0;) {
    const size_t n = std::min(capacity, left);
    duckdb_data_chunk_reset(chunk_);
    auto* project = static_cast<int64_t*>(column(0));
    auto* high = static_cast<int64_t*>(column(1));
    auto* low = static_cast<int64_t*>(column(2));
    auto* sig = static_cast<int8_t*>(column(3));
    auto* min = static_cast<int64_t*>(column(4));
    auto* max = static_cast<int64_t*>(column(5));
    for (size_t j = 0; j < n; ++j, ++it) {
      project[j] = project_id;
      high[j] = static_cast<int64_t>(it->first.high);
      low[j] = static_cast<int64_t>(it->first.low);
      sig[j] = signal;
      min[j] = it->second.min;
      max[j] = it->second.max;
    }
    duckdb_data_chunk_set_size(chunk_, n);
    if (duckdb_append_data_chunk(appender, chunk_) != DuckDBSuccess) return AppenderError(appender);
    left -= n;
  }
  return static_cast<uint64_t>(rows_.size());
}

}  // namespace sightline::duckdb_index
