#include "storage/duckdb/trace_index.h"

#include <algorithm>
#include <limits>
#include <string>

#include "storage/sql/retention_sql.h"

namespace sightline::duckdb_index {

namespace {

constexpr int64_t kSecondNs = 1'000'000'000;

constexpr const char* kColumns = "project_id BIGINT, trace_id_low BIGINT, min_s BIGINT, span_s BIGINT";
//! kColumns' types, for the writer's chunk.
constexpr duckdb_type kRowTypes[] = {DUCKDB_TYPE_BIGINT, DUCKDB_TYPE_BIGINT, DUCKDB_TYPE_BIGINT, DUCKDB_TYPE_BIGINT};

//! The tables of the index these replaced (both signals in one, both id
//! halves, nanosecond bounds).
constexpr const char* kLegacyRuns = "trace_ranges";
constexpr const char* kLegacyTail = "trace_ranges_tail";

//! SecondOf in SQL: DuckDB's // and % truncate toward zero, as C++'s do.
std::string SecondSql(const std::string& ns) {
  return "(" + ns + " // " + std::to_string(kSecondNs) + " - CASE WHEN " + ns + " % " + std::to_string(kSecondNs) +
         " < 0 THEN 1 ELSE 0 END)";
}

//! The select list of index rows covering the seconds of [min_ns, max_ns].
std::string RowSql(const std::string& min_ns, const std::string& max_ns) {
  return "project_id, trace_id_low, " + SecondSql(min_ns) + ", " + SecondSql(max_ns) + " - " + SecondSql(min_ns);
}

//! Creates one signal's two tables and, when they are new, fills the runs
//! with `source`'s rows (RowSql's columns) as run 1.
Status CreateOne(duckdb_connection conn, const RunTableDef& def, bool fill, const std::string& source) {
  SL_RETURN_IF_ERROR(Exec(conn, std::string("CREATE TABLE IF NOT EXISTS ") + def.tail + " (" + kColumns + ")"));
  SL_RETURN_IF_ERROR(
      Exec(conn, std::string("CREATE TABLE IF NOT EXISTS ") + def.runs + " (" + kColumns + ", run BIGINT)"));
  if (!fill) return Status::Ok();
  return Exec(conn,
              std::string("INSERT INTO ") + def.runs + " SELECT *, 1 FROM (" + source + ") ORDER BY " + def.order);
}

}  // namespace

// Lookups filter on (project_id, trace_id_low): the runs are sorted on the
// key, which is random, so a run's row groups split the key space and zone
// maps keep about one of them.
const RunTableDef kSpanTraceIndex{
    "span_trace_index",         "span_trace_index_tail", "project_id, trace_id_low, min_s, span_s", "",
    "trace_id_low, project_id",
};
const RunTableDef kLogTraceIndex{
    "log_trace_index",          "log_trace_index_tail", "project_id, trace_id_low, min_s, span_s", "",
    "trace_id_low, project_id",
};

int64_t SecondOf(int64_t t) { return t / kSecondNs - (t % kSecondNs < 0 ? 1 : 0); }

std::optional<TimeRange> RangeOfSeconds(int64_t min_s, int64_t max_s) {
  constexpr int64_t kMin = std::numeric_limits<int64_t>::min(), kMax = std::numeric_limits<int64_t>::max();
  if (max_s >= kMax / kSecondNs) return std::nullopt;  // no exclusive end to say it with
  return TimeRange{min_s < kMin / kSecondNs ? kMin : min_s * kSecondNs, (max_s + 1) * kSecondNs};
}

Status CreateTraceIndex(duckdb_connection conn) {
  Result<bool> span_exists = TableExists(conn, kSpanTraceIndex.runs);
  if (!span_exists.ok()) return span_exists.status();
  Result<bool> log_exists = TableExists(conn, kLogTraceIndex.runs);
  if (!log_exists.ok()) return log_exists.status();
  Result<bool> legacy = TableExists(conn, kLegacyRuns);
  if (!legacy.ok()) return legacy.status();
  Result<bool> legacy_tail = TableExists(conn, kLegacyTail);
  if (!legacy_tail.ok()) return legacy_tail.status();
  // The rows of each signal: from the earlier index's rows, or else from the
  // spans and log records themselves.
  std::string spans, logs;
  if (*legacy) {
    const std::string columns = " SELECT project_id, trace_id_low, signal, min_ns, max_ns FROM ";
    const std::string all = std::string("(") + columns + kLegacyRuns +
                            (*legacy_tail ? std::string(" UNION ALL") + columns + kLegacyTail : std::string()) + ")";
    spans = "SELECT " + RowSql("min_ns", "max_ns") + " FROM " + all + " WHERE signal = 0";
    logs = "SELECT " + RowSql("min_ns", "max_ns") + " FROM " + all + " WHERE signal = 1";
  } else {
    spans = "SELECT " + RowSql("min(start_time_ns)", "max(start_time_ns)") +
            " FROM spans WHERE trace_id_high IS NOT NULL GROUP BY project_id, trace_id_low";
    logs = "SELECT " +
           RowSql("min(time_ns)", std::string("max(greatest(time_ns, ") + sql::AgeTimeSql(Signal::kLogs) + "))") +
           " FROM logs WHERE trace_id_high IS NOT NULL GROUP BY project_id, trace_id_low";
  }
  SL_RETURN_IF_ERROR(Exec(conn, "BEGIN TRANSACTION"));
  Status s = CreateOne(conn, kSpanTraceIndex, !*span_exists, spans);
  if (s.ok()) s = CreateOne(conn, kLogTraceIndex, !*log_exists, logs);
  if (s.ok() && *legacy) s = Exec(conn, std::string("DROP TABLE ") + kLegacyRuns);
  if (s.ok() && *legacy_tail) s = Exec(conn, std::string("DROP TABLE ") + kLegacyTail);
  if (!s.ok()) {
    (void)Exec(conn, "ROLLBACK");
    return s;
  }
  return Exec(conn, "COMMIT");
}

Status ExpireTraceIndex(duckdb_connection conn, Signal signal, const ProjectSet& projects, int64_t before_ns) {
  if (signal != Signal::kSpans && signal != Signal::kLogs) return Status::Ok();
  const RunTableDef& def = signal == Signal::kSpans ? kSpanTraceIndex : kLogTraceIndex;
  // A row's times lie before the end of its last second, which is by
  // before_ns when that second is before before_ns's.
  const std::string where =
      " WHERE min_s + span_s < " + std::to_string(SecondOf(before_ns)) + sql::ProjectFilterSql(projects);
  SL_RETURN_IF_ERROR(Exec(conn, std::string("DELETE FROM ") + def.runs + where));
  return Exec(conn, std::string("DELETE FROM ") + def.tail + where);
}

sql::Sql TraceExtentSql(int64_t project_id, const TraceId& id) {
  sql::Sql sql;
  sql << "SELECT signal, min(min_s), max(min_s + span_s) FROM (";
  bool first = true;
  for (const RunTableDef* def : {&kSpanTraceIndex, &kLogTraceIndex}) {
    for (const char* table : {def->runs, def->tail}) {
      if (!first) sql << " UNION ALL ";
      first = false;
      sql << "SELECT " << (def == &kSpanTraceIndex ? "0" : "1") << " AS signal, min_s, span_s FROM " << table
          << " WHERE trace_id_low = ";
      sql.Bind(static_cast<int64_t>(id.low));
      sql << " AND project_id = ";
      sql.Bind(project_id);
    }
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
  return Flush(appender, b.project_id);
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
  return Flush(appender, b.project_id);
}

TraceRangeWriter::TraceRangeWriter() : chunk_(kRowTypes) {}

Result<uint64_t> TraceRangeWriter::Flush(duckdb_appender appender, int64_t project_id) {
  auto it = rows_.begin();
  SL_RETURN_IF_ERROR(chunk_.Append(appender, rows_.size(), "a trace index tail", [&](size_t, size_t n) {
    auto* project = chunk_.data<int64_t>(0);
    auto* low = chunk_.data<int64_t>(1);
    auto* min_s = chunk_.data<int64_t>(2);
    auto* span_s = chunk_.data<int64_t>(3);
    for (size_t j = 0; j < n; ++j, ++it) {
      project[j] = project_id;
      low[j] = static_cast<int64_t>(it->first.low);
      min_s[j] = SecondOf(it->second.min);
      span_s[j] = SecondOf(it->second.max) - min_s[j];
    }
  }));
  return static_cast<uint64_t>(rows_.size());
}

}  // namespace sightline::duckdb_index
