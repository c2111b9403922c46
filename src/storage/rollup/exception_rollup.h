#pragma once

// Exception rollups: per project, per minute and per hour, per (service,
// exception type, exception group, span or log), the count, the first and
// last time and the greatest trace id of the exceptions recorded in the
// bucket — everything ExceptionGroup reports, and all of it merges exactly
// (sums, min, max), so the exceptions list over a long range is exact from
// the rollups plus the raw rows of its partial edge minutes. Three tables as
// every rollup (rollup_table.h); span exceptions (is_log 0) are written and
// folded by the span writer, log-based ones (is_log 1) by the log writer, so
// the two never fold the same rows.

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

inline constexpr const char* kExceptionDeltaTable = "exception_rollup_delta";
inline constexpr const char* kExceptionMinuteTable = "exception_rollup_minute";
inline constexpr const char* kExceptionHourTable = "exception_rollup_hour";
inline constexpr RollupTables kExceptionRollupTables{kExceptionDeltaTable, kExceptionMinuteTable, kExceptionHourTable};
//! One row, complete_from_ns, as span_rollup_state (over spans and logs).
inline constexpr const char* kExceptionStateTable = "exception_rollup_state";

struct ExceptionRollupKey {
  int64_t project_id = 0;
  int64_t bucket_ns = 0;
  std::string service;
  std::string type;   // "" when absent, as GroupExceptions groups it
  std::string group;  // the normalised message; "" when absent
  int64_t is_log = 0;
  auto operator<=>(const ExceptionRollupKey&) const = default;
};

struct ExceptionRollupValue {
  int64_t count = 0;
  int64_t first_ns = INT64_MAX;
  int64_t last_ns = INT64_MIN;
  //! The greatest trace id in unsigned order; 0, 0 when none had one.
  uint64_t trace_high = 0, trace_low = 0;

  void Add(int64_t t, uint64_t high, uint64_t low);
  void Merge(const ExceptionRollupValue& other);
  bool Empty() const { return count <= 0; }
};

using ExceptionRollupMap = std::map<ExceptionRollupKey, ExceptionRollupValue>;

//! The span-event exceptions of a batch (has_exception), by start time.
void AddSpanExceptions(const SpanBatch& b, ExceptionRollupMap* m);
//! The log-based exception events of a batch, by time_ns.
void AddLogExceptions(const LogBatch& b, ExceptionRollupMap* m);

struct ExceptionRollupTraits {
  using Key = ExceptionRollupKey;
  using Value = ExceptionRollupValue;
  static constexpr const char* kSelect =
      "project_id, bucket_ns, service_name, exception_type, exception_group, is_log, count, first_ns, last_ns, "
      "trace_id_high, trace_id_low";
  static Status Read(const RowView& r, Key* k, Value* v);
  static Status Append(RollupSession* s, const char* table, const ExceptionRollupMap& m);
};

//! CREATE TABLE IF NOT EXISTS for the four tables.
std::vector<std::string> CreateExceptionRollupSql(const schema::TypeNames& types);
//! The state row if there is none: the lowest time for a database without
//! spans and logs, else the hour after the newest of them.
Status InitExceptionRollupState(RollupSession* s);

//! " AND is_log = 0" or " AND is_log = 1": one writer's rows.
inline std::string ExceptionSource(bool logs) { return logs ? " AND is_log = 1" : " AND is_log = 0"; }
inline Result<int64_t> CompactExceptionRollups(RollupSession* s, bool logs) {
  return Compact<ExceptionRollupTraits>(s, kExceptionRollupTables, ExceptionSource(logs));
}
//! Retention's share (rollup_table.h Expire) for span (logs false) or log
//! exceptions, before the rows themselves are deleted in the transaction.
Status ExpireExceptionRollups(RollupSession* s, bool logs, const std::string& project_filter, int64_t before_ns);

}  // namespace sightline::rollup
