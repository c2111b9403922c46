#pragma once

// The telemetry engine interface. The ingest writers and (later) the query
// service speak only to this; engines live in storage/<engine>/ and register
// themselves by name in the StoreRegistry (ClickHouse IStorage + StorageFactory).

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <variant>
#include <memory>
#include <string>
#include <vector>

#include "common/status.h"
#include "model/batch.h"

namespace sightline {

//! Engine settings from the CLI / SIGHTLINE_* environment. Engines ignore what
//! does not apply to them.
struct StoreOptions {
  std::string data_dir;            // the engine keeps its files here
  std::string memory_limit;        // DuckDB memory_limit, e.g. "2GB"; "" = engine default
  std::string checkpoint_threshold = "256MB";  // DuckDB checkpoint_threshold ("" = DuckDB's 16MB)
  int threads = 0;                 // DuckDB worker threads; 0 = engine default
  int read_connections = 4;        // size of the read pool (AcquireReader)
  //! Run every schema migration an older database needs, including those
  //! that are not automatic (`sightline migrate`; storage/schema_version.h).
  bool migrate = false;
};

//! What opening did to the database's schema (storage/schema_version.h).
struct SchemaReport {
  int64_t found_version = 0;         // 0: a new database
  int64_t version = 0;               // the version it is at now
  std::vector<std::string> applied;  // the migration steps run, in order
};

//! Gauges for /api/health/deep and /metrics.
struct StoreStats {
  uint64_t database_bytes = 0;
  uint64_t wal_bytes = 0;
  uint64_t rows[kSignalCount] = {0, 0, 0};  // spans, logs, metric points
  uint64_t metric_series = 0;
  int read_connections = 0;         // the read pool's size
  int read_connections_in_use = 0;  // leased to running dashboard queries
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

//! A sink of one signal whose engine writes every signal with one template,
//! `Status Derived::Write(const std::vector<const Batch*>&)`; batches of
//! another signal are refused as SignalSink refuses them.
template <typename Derived>
class OneSignalSink : public SignalSink {
 public:
  explicit OneSignalSink(Signal signal) : signal_(signal) {}
  Status WriteSpans(const std::vector<const SpanBatch*>& batches) override {
    return signal_ == Signal::kSpans ? self().Write(batches) : SignalSink::WriteSpans(batches);
  }
  Status WriteLogs(const std::vector<const LogBatch*>& batches) override {
    return signal_ == Signal::kLogs ? self().Write(batches) : SignalSink::WriteLogs(batches);
  }
  Status WriteMetrics(const std::vector<const MetricBatch*>& batches) override {
    return signal_ == Signal::kMetrics ? self().Write(batches) : SignalSink::WriteMetrics(batches);
  }
  Signal signal() const { return signal_; }

 private:
  Derived& self() { return static_cast<Derived&>(*this); }
  const Signal signal_;
};

//! A value bound to a `?` placeholder.
using SqlParam = std::variant<int64_t, double, std::string>;

//! The current row of a query result, valid only inside the row callback.
class RowView {
 public:
  virtual ~RowView() = default;
  virtual bool IsNull(int col) const = 0;
  virtual int64_t GetInt(int col) const = 0;
  virtual double GetDouble(int col) const = 0;
  virtual std::string GetString(int col) const = 0;
};
using RowCallback = std::function<void(const RowView&)>;

//! What differs between engines' SQL, for the query service.
struct SqlDialect {
  //! quantile_cont(x, q) with linear interpolation; else percentiles are computed in C++.
  bool has_quantile_cont = false;
  //! An attribute of a JSON object column as text, with $COL for the column
  //! and $PATH for each bound '$."key"' path; true/false render as
  //! "true"/"false" and numbers in their shortest form on every engine.
  const char* json_text =
      "CAST(CASE json_type($COL, $PATH) WHEN 'true' THEN 'true' WHEN 'false' THEN 'false' "
      "ELSE json_extract($COL, $PATH) END AS TEXT)";
  //! $COL of the newest point in a group. The query also selects
  //! max(time_ns) and no other min/max, so on SQLite the bare column comes
  //! from the row holding that max (a documented SQLite guarantee).
  const char* last_of = "$COL";
  //! Case-insensitive substring test of a column against one bound needle:
  //! $COL is the column; the needle is bound raw when contains_raw, else as a
  //! LIKE pattern ('%needle%' with \ escapes).
  const char* contains_ci = "$COL LIKE ? ESCAPE '\\'";
  bool contains_raw = false;
  //! How span range scans name project_id. SQLite: "+project_id", which
  //! keeps the planner off the (project_id, trace_id) index for time ranges;
  //! walking that index in trace-id order was 2-3x slower than a table scan.
  const char* project_column = "+project_id";
  //! Integer division operator ("//" in DuckDB, where "/" is floating point).
  const char* int_div = "/";
  //! An aggregate giving the hex trace id of one span of the group (ids are
  //! stored as integer halves). The portable form formats every row before
  //! max(); DuckDB picks the halves first and formats once per group.
  const char* sample_trace_id =
      "max(CASE WHEN trace_id_high IS NULL THEN '' ELSE printf('%016x%016x', trace_id_high, trace_id_low) END)";
};

//! A read connection leased from the store's pool; returned on destruction.
//! Query() runs on the caller's thread; Interrupt() may be called from any
//! thread while it runs and makes it return Cancelled promptly, leaving the
//! connection usable.
class ReadConnection {
 public:
  virtual ~ReadConnection() = default;
  virtual Status Query(const std::string& sql, const std::vector<SqlParam>& params, const RowCallback& on_row) = 0;
  virtual void Interrupt() = 0;
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
  //! Leases a pooled read connection, waiting up to wait_ms for one to free
  //! up (Unavailable after that). The lease returns it to the pool.
  virtual Result<std::unique_ptr<ReadConnection>> AcquireReader(int64_t wait_ms) {
    return Status::Internal(std::string(name()) + " has no read pool yet");
  }
  virtual SqlDialect dialect() const { return SqlDialect{}; }
  //! The schema version found at open and the migrations applied.
  virtual SchemaReport schema_report() const { return {}; }
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
