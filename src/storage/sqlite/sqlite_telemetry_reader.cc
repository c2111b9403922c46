#include "storage/sqlite/sqlite_telemetry_reader.h"

#include "storage/sql/sql_reader.h"

namespace sightline {

namespace {

class SqliteTelemetryReader final : public SqlReader {
 public:
  SqliteTelemetryReader(std::unique_ptr<ReadConnection> conn, int64_t rollup_exact_spans) : SqlReader(std::move(conn)) {
    rollup_exact_spans_ = rollup_exact_spans;
  }

 protected:
  bool HasRollups() const override { return true; }
  //! "+project_id" keeps the planner off the (project_id, trace_id) index for
  //! time ranges: walking that index in trace-id order was 2-3x slower than a
  //! table scan.
  const char* SpanRangeProjectColumn() const override { return "+project_id"; }
};

}  // namespace

std::unique_ptr<TelemetryReader> NewSqliteTelemetryReader(std::unique_ptr<ReadConnection> conn,
                                                          int64_t rollup_exact_spans) {
  return std::make_unique<SqliteTelemetryReader>(std::move(conn), rollup_exact_spans);
}

}  // namespace sightline
