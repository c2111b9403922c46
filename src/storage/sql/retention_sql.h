#pragma once

// The SQL of retention deletes, shared by the SQL engines: which table each
// signal's rows live in, the time they age by, and the project filter.

#include <string>

#include "model/batch.h"
#include "storage/schema.h"
#include "storage/telemetry_store.h"

namespace sightline::sql {

//! The table that holds `signal`'s rows (not its keyed table).
inline const char* MainTable(Signal signal) {
  switch (signal) {
    case Signal::kSpans: return schema::kSpansTable;
    case Signal::kLogs: return schema::kLogsTable;
    case Signal::kMetrics: return schema::kMetricPointsTable;
  }
  return schema::kSpansTable;
}

//! The time a row of `signal` ages by (TelemetryStore, "Retention"), as SQL
//! over its table's columns.
inline const char* AgeTimeSql(Signal signal) {
  switch (signal) {
    case Signal::kSpans: return "start_time_ns";
    case Signal::kLogs: return "(CASE WHEN time_ns = 0 THEN observed_time_ns ELSE time_ns END)";
    case Signal::kMetrics: return "time_ns";
  }
  return "start_time_ns";
}

//! " AND project_id [NOT] IN (...)" for `projects`, or "" for every project.
//! The ids are integers this process holds, never client text.
inline std::string ProjectFilterSql(const ProjectSet& projects) {
  if (projects.ids.empty()) return projects.all_but ? "" : " AND 1 = 0";
  std::string out = projects.all_but ? " AND project_id NOT IN (" : " AND project_id IN (";
  for (size_t i = 0; i < projects.ids.size(); ++i) {
    if (i > 0) out += ", ";
    out += std::to_string(projects.ids[i]);
  }
  return out + ")";
}

//! The WHERE condition of a retention delete. A log record's age is an
//! expression, which no engine can match against its per-block time ranges
//! (DuckDB's zone maps, ClickHouse's primary key); `time_ns < before` follows
//! from it when before_ns > 0 (time_ns is 0 or the age) and can be, so a pass
//! with little to expire reads only the oldest blocks instead of every record.
inline std::string ExpiredRowsSql(Signal signal, const ProjectSet& projects, int64_t before_ns) {
  const std::string before = std::to_string(before_ns);
  std::string out = std::string(AgeTimeSql(signal)) + " < " + before;
  if (signal == Signal::kLogs && before_ns > 0) out = "time_ns < " + before + " AND " + out;
  return out + ProjectFilterSql(projects);
}

}  // namespace sightline::sql
