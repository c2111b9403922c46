#pragma once

// The telemetry engine interface. The ingest writers (through SignalSink) and
// the query service (through TelemetryReader, storage/telemetry_reader.h) speak
// only to this; engines live in storage/<engine>/ and register themselves by
// name in the StoreRegistry (ClickHouse IStorage + StorageFactory).

#include <algorithm>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "common/status.h"
#include "model/batch.h"
#include "storage/telemetry_reader.h"

namespace sightline {

//! Engine settings from the CLI / SIGHTLINE_* environment. Engines ignore what
//! does not apply to them.
struct StoreOptions {
  std::string data_dir;                        // the engine keeps its files here
  std::string memory_limit;                    // DuckDB memory_limit, e.g. "2GB"; "" = engine default
  std::string checkpoint_threshold = "256MB";  // DuckDB checkpoint_threshold ("" = DuckDB's 16MB)
  int threads = 0;                             // DuckDB worker threads; 0 = engine default
  //! DuckDB: a retention delete removes at most this many rows per
  //! transaction, with a checkpoint before the next: DuckDB holds 16 bytes
  //! per deleted row outside its memory limit until the next checkpoint.
  int64_t max_delete_rows = int64_t{4} << 20;
  int read_connections = 4;  // size of the read pool (AcquireReader)
  //! Run every schema migration an older database needs, including those
  //! that are not automatic (`sightline migrate`; storage/schema_version.h).
  bool migrate = false;
  //! Span groups (endpoints, their charts) over a range with fewer spans
  //! than this are computed exactly from the raw spans; over more, from the
  //! span rollups, with percentiles within LatencySketch::kRelativeError
  //! (docs/API.md). 0: always from the rollups where they can answer.
  int64_t rollup_exact_spans = 1000000;
  //! How often a span writer folds the rollup deltas of its commits into the
  //! minute and hour tables (storage/rollup/span_rollup.h); 0: after every
  //! write.
  int64_t rollup_compaction_interval_ms = 5000;
  //! The metric rollups a writer keeps in memory (metric_rollup.h) are
  //! folded by the store once it has not committed for this long.
  int64_t rollup_idle_fold_ms = 1000;
  //! Whether the rollups outlive their rows: DeleteBefore then leaves them,
  //! and ExpireRollups drops them (the maintenance service, at
  //! `--rollup-retention`).
  bool rollups_outlive_rows = false;
  // ClickHouse (storage/clickhouse/): the server's HTTP interface, the
  // database the tables live in, and optional credentials.
  std::string clickhouse_url = "http://127.0.0.1:8123";
  std::string clickhouse_database = "sightline";
  std::string clickhouse_user;
  std::string clickhouse_password;
  //! How long an insert, a schema or retention statement, or a gauge read
  //! may wait for the server's answer before it fails as Unavailable (the
  //! OTLP client gets 503); dashboard reads end at their query deadline.
  int64_t clickhouse_timeout_ms = 60000;
  //! Cluster mode (docs/STORAGE.md, "ClickHouse cluster"): the cluster as
  //! named in the servers' remote_servers. When set, DDL runs ON CLUSTER,
  //! each table is a per-shard `<name>_local` under a Distributed table of
  //! the name the reader uses, and inserts are synchronous on every shard.
  std::string clickhouse_cluster;
  //! With a cluster: Replicated*MergeTree local tables (ZooKeeper paths from
  //! the servers' {shard} and {replica} macros).
  bool clickhouse_replicated = false;
  //! insert_quorum of replicated inserts; 0 = a majority of the smallest
  //! shard's replicas (none when a shard has one).
  int clickhouse_insert_quorum = 0;
};

//! What opening did to the database's schema (storage/schema_version.h).
struct SchemaReport {
  int64_t found_version = 0;         // 0: a new database
  int64_t version = 0;               // the version it is at now
  std::vector<std::string> applied;  // the migration steps run, in order
};

//! A gauge an engine reports about its own database server (ClickHouse:
//! parts, merges, pending inserts, disk, errors), read from the server, not
//! counted in this process.
struct EngineGauge {
  const char* name;  // snake_case; /metrics shows it as sightline_engine_<name>
  const char* help;
  double value = 0;
};

//! Gauges for /api/health/deep and /metrics. The database's own (bytes, rows,
//! series, engine gauges) are the whole database's, whichever node asks; the
//! read pool is this node's.
struct StoreStats {
  uint64_t database_bytes = 0;
  uint64_t wal_bytes = 0;
  uint64_t rows[kSignalCount] = {0, 0, 0};  // spans, logs, metric points
  uint64_t metric_series = 0;
  int read_connections = 0;         // the read pool's size
  int read_connections_in_use = 0;  // leased to running dashboard queries
  //! False when the engine's server did not answer (the counts above are then
  //! zero, not the database's); embedded engines are always reachable.
  bool reachable = true;
  std::string engine_version;  // the server's, where the engine has one
  std::string engine_error;    // why it was not reachable
  std::vector<EngineGauge> engine_gauges;
};

//! Where the database's bytes are, for the disk budget (maintenance/).
struct StoreFootprint {
  uint64_t database_bytes = 0;  // the database file
  uint64_t free_bytes = 0;      // of those, free for reuse (DuckDB free blocks, SQLite freelist pages)
  uint64_t wal_bytes = 0;       // the write-ahead log
  //! What the data takes: the database less its free space, plus the WAL.
  uint64_t live_bytes() const { return database_bytes - std::min(free_bytes, database_bytes) + wal_bytes; }
};

//! Whose rows a retention delete removes: the listed projects, or every
//! project but them.
struct ProjectSet {
  std::vector<int64_t> ids;
  bool all_but = false;
  static ProjectSet Only(std::vector<int64_t> ids) { return {std::move(ids), false}; }
  static ProjectSet AllBut(std::vector<int64_t> ids) { return {std::move(ids), true}; }
  static ProjectSet All() { return {{}, true}; }
  bool Contains(int64_t id) const { return (std::find(ids.begin(), ids.end(), id) != ids.end()) != all_but; }
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
  //! Work an engine can do on a batch before its writer thread takes it,
  //! called through SignalWriter::Prepare on a decoder thread, beside the
  //! writer thread's Write calls: it must not touch the sink's state. Moving
  //! work here shortens the writer thread, the serial stage of ingest. What
  //! it leaves on the batch is charged to the request (PreparedBytes); the
  //! batch is not changed after it.
  virtual void Prepare(AnyBatch* /*batch*/) const {}
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
  //! Leases a reader on one of the engine's pooled read connections, waiting
  //! up to wait_ms for one to free up (Unavailable after that). Destroying
  //! the reader returns the connection to the pool.
  virtual Result<std::unique_ptr<TelemetryReader>> AcquireReader(int64_t wait_ms) = 0;
  //! The schema version found at open and the migrations applied.
  virtual SchemaReport schema_report() const { return {}; }
  //! Calls `fn(project_id, series_id)` for every stored metric series (the
  //! series cap loads them at start). By SQL on a read connection unless
  //! the engine overrides it.
  virtual Status ForEachSeries(const std::function<void(int64_t project_id, int64_t series_id)>& fn);

  // --- Retention (docs/STORAGE.md, "Deletes and space"). Each signal's rows
  // age by one time: spans by start_time_ns, logs by time_ns (observed_time_ns
  // when time_ns is 0), metric points by time_ns. Keyed rows (resources,
  // series) are never deleted. Safe concurrently with sinks and readers.

  //! Deletes the rows of `signal` older than `before_ns` of the projects in
  //! `projects`, and returns how many. Readers see the rows go all at once or
  //! in batches of whole rows, never a half-deleted row; Stats() counts them
  //! out.
  virtual Result<uint64_t> DeleteBefore(Signal signal, const ProjectSet& projects, int64_t before_ns) = 0;
  //! With StoreOptions::rollups_outlive_rows: drops the rollups of `signal`
  //! (and of its exceptions) of whole hours before before_ns, whether or not
  //! their rows are still there; the hour holding before_ns stays whole.
  //! Engines without rollups have nothing to drop.
  virtual Status ExpireRollups(Signal /*signal*/, const ProjectSet& /*projects*/, int64_t /*before_ns*/) {
    return Status::Ok();
  }
  //! The oldest time of `signal`'s rows; nullopt when it has none.
  virtual Result<std::optional<int64_t>> OldestTime(Signal signal) = 0;
  //! Makes the space of deleted rows reusable for new rows (DuckDB: a
  //! checkpoint; SQLite: a WAL checkpoint). Unavailable when the disk has no
  //! room for that (nothing is changed then).
  virtual Status ReclaimSpace() = 0;
  //! The database's bytes on disk and how many are free for reuse.
  virtual Result<StoreFootprint> Footprint() = 0;
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

//! Registers duckdb, sqlite and clickhouse. Idempotent.
void RegisterBuiltinStores();

//! The library version of each built-in engine, as the library reports it.
struct EngineVersions {
  std::string duckdb;
  std::string sqlite;
};
EngineVersions BuiltinEngineVersions();

}  // namespace sightline
