#pragma once

// Log rollups: per project, per minute and per hour, per (service,
// severity_number), the count of log records whose time_ns falls in the
// bucket — what the log volume chart (CountLogs) adds up, exactly. Three
// tables as every rollup (rollup_table.h), written and folded by the log
// writer.

#include <compare>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "model/batch.h"
#include "storage/rollup/rollup_table.h"
#include "storage/schema.h"
#include "storage/sql/sql_connection.h"

namespace sightline::rollup {

inline constexpr RollupTables kLogRollupTables{"log_rollup_delta", "log_rollup_minute", "log_rollup_hour"};
//! One row, complete_from_ns, as span_rollup_state (over logs).
inline constexpr const char* kLogStateTable = "log_rollup_state";

struct LogRollupKey {
  int64_t project_id = 0;
  int64_t bucket_ns = 0;
  std::string service;
  int64_t severity_number = 0;
  auto operator<=>(const LogRollupKey&) const = default;
};

struct LogRollupValue {
  int64_t count = 0;
  void Merge(const LogRollupValue& other) { count += other.count; }
  bool Empty() const { return count <= 0; }
};

using LogRollupMap = std::map<LogRollupKey, LogRollupValue>;

//! Every record of the batch, by time_ns.
void AddLogs(const LogBatch& b, LogRollupMap* m);

struct LogRollupTraits {
  using Key = LogRollupKey;
  using Value = LogRollupValue;
  static constexpr const char* kSelect = "project_id, bucket_ns, service_name, severity_number, count";
  static Status Read(const RowView& r, Key* k, Value* v);
  static Status Append(RollupSession* s, const char* table, const LogRollupMap& m);
};

//! CREATE TABLE IF NOT EXISTS for the four tables.
std::vector<std::string> CreateLogRollupSql(const schema::TypeNames& types);
//! The state row if there is none: the lowest time for a database without
//! logs, else the hour after the newest.
Status InitLogRollupState(RollupSession* s);
inline Result<int64_t> CompactLogRollups(RollupSession* s) { return Compact<LogRollupTraits>(s, kLogRollupTables); }
//! Retention's share (rollup_table.h Expire), before the records themselves
//! are deleted in the transaction.
Status ExpireLogRollups(RollupSession* s, const std::string& project_filter, int64_t before_ns);

}  // namespace sightline::rollup
