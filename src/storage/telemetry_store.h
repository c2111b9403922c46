#pragma once

// The telemetry engine interface. The ingest writers and (later) the query
// service speak only to this; engines live in storage/<engine>/ and register
// themselves by name in the StoreRegistry (ClickHouse IStorage + StorageFactory).

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <memory>
#include <string>
#include <vector>

#include "common/status.h"
#include "storage/batch.h"

namespace sightline {

//! Engine settings from the CLI / SIGHTLINE_* environment. Engines ignore what
//! does not apply to them.
struct StoreOptions {
  std::string data_dir;            // the engine keeps its files here
  std::string memory_limit;        // DuckDB memory_limit, e.g. "2GB"; "" = engine default
  std::string checkpoint_threshold;  // DuckDB checkpoint_threshold, e.g. "256MB"
  int threads = 0;                 // DuckDB worker threads; 0 = engine default
};

//! Gauges for /api/health/deep and /metrics.
struct StoreStats {
  uint64_t database_bytes = 0;
  uint64_t wal_bytes = 0;
  uint64_t rows[kSignalCount] = {0, 0, 0};  // spans, logs, metric points
  uint64_t metric_series = 0;
};

//! A query result as text cells, for tools and tests (`sightline sql`).
struct SqlResult {
  std::vector<std::string> columns;
  std::vector<std::vector<std::optional<std::string>>> rows;  // nullopt = NULL
};

//! Appends batches of one signal. Owned by exactly one writer thread; not
//! thread-safe. Write() appends every batch and commits them in one
//! transaction: on OK all rows are durable (survive kill -9), on error none
//! are visible.
class SignalSink {
 public:
  virtual ~SignalSink() = default;
  virtual Status WriteSpans(const std::vector<const SpanBatch*>& batches);
  virtual Status WriteLogs(const std::vector<const LogBatch*>& batches);
  virtual Status WriteMetrics(const std::vector<const MetricBatch*>& batches);
};

//! One open telemetry database. Thread-safe: sinks may be used from their own
//! threads concurrently with Stats() and ExecuteSql().
class TelemetryStore {
 public:
  virtual ~TelemetryStore() = default;
  virtual const char* name() const = 0;
  //! A sink for one signal, to be owned by that signal's writer thread.
  virtual Result<std::unique_ptr<SignalSink>> NewSink(Signal signal) = 0;
  virtual StoreStats Stats() = 0;
  //! Runs one SQL statement on a read connection (diagnostics and tests).
  virtual Result<SqlResult> ExecuteSql(const std::string& sql) = 0;
  //! Flushes and closes. Sinks must be destroyed first.
  virtual Status Close() = 0;
};

using StoreFactory = std::function<Result<std::unique_ptr<TelemetryStore>>(const StoreOptions&)>;

//! Engines by name. Registration happens once at start (RegisterBuiltinStores).
class StoreRegistry {
 public:
  static StoreRegistry& Instance();
  void Register(const std::string& name, StoreFactory factory);
  Result<std::unique_ptr<TelemetryStore>> Open(const std::string& name, const StoreOptions& options) const;
  std::vector<std::string> Names() const;

 private:
  std::map<std::string, StoreFactory> factories_;
};

//! Registers duckdb and sqlite. Idempotent.
void RegisterBuiltinStores();

}  // namespace sightline
