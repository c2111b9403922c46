#include "storage/sqlite/sqlite_store.h"
#include "storage/read_pool.h"
#include "storage/sqlite/sqlite_reader.h"
#include "storage/sqlite/sqlite_telemetry_reader.h"

#include <sqlite3.h>
#include <sys/stat.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <climits>
#include <cmath>
#include <filesystem>
#include <limits>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <system_error>
#include <thread>
#include <utility>
#include <vector>

#include "common/mutex.h"
#include "common/thread_name.h"
#include "storage/rollup/exception_rollup.h"
#include "storage/rollup/log_rollup.h"
#include "storage/rollup/metric_rollup.h"
#include "storage/rollup/signal_rollups.h"
#include "storage/rollup/span_rollup.h"
#include "storage/schema.h"
#include "storage/schema_version.h"
#include "storage/sql/retention_sql.h"

namespace sightline {
namespace {

constexpr schema::TypeNames kSqliteTypes{"INTEGER", "REAL", "TEXT"};
constexpr const char* kDatabaseFile = "telemetry.sqlite";
constexpr int kBusyTimeoutMs = 30000;
//! Rows per retention delete transaction: the write lock is released between
//! batches, so ingest waits for one batch at most, not for the whole delete.
constexpr int kDeleteBatchRows = 20000;

// Applied to every connection (these settings are per connection).
constexpr const char* kConnectionPragmas =
    "PRAGMA synchronous=NORMAL;"
    "PRAGMA cache_size=-262144;"   // KiB: up to 256 MiB of page cache
    "PRAGMA mmap_size=268435456;"  // read through a 256 MiB memory map
    "PRAGMA temp_store=MEMORY;"
    "PRAGMA journal_size_limit=67108864;";  // truncate the WAL back to 64 MiB after checkpoints

// Indexes: the trace-id lookup, newest-first log scans per project, the
// points-to-series join, and a partial index for the span dashboards: entry
// spans covering everything the endpoint statistics read (an index-only range
// scan instead of reading whole ~700 B span rows). It leads with the time
// column because span queries name `+project_id`, which keeps SQLite off the
// project_id indexes.
std::vector<std::string> IndexSql() {
  return {
      "CREATE INDEX IF NOT EXISTS spans_trace ON spans (project_id, trace_id_high, trace_id_low)",
      ("CREATE INDEX IF NOT EXISTS spans_entry_stats ON spans "
       "(start_time_ns, service_name, endpoint, status_code, duration_ns, project_id) WHERE is_entry = 1"),
      "CREATE INDEX IF NOT EXISTS logs_project_time ON logs (project_id, time_ns)",
      // The log-based exception events, for the exceptions queries.
      "CREATE INDEX IF NOT EXISTS log_exceptions_time ON log_exceptions (time_ns)",
      // The spans' details: the trace view's lookup, retention by time, and
      // the rows with an exception, which the exception reads take in time
      // order without the rows that hold only events or a status message.
      "CREATE INDEX IF NOT EXISTS span_details_trace ON span_details (project_id, trace_id_high, trace_id_low)",
      "CREATE INDEX IF NOT EXISTS span_details_time ON span_details (start_time_ns)",
      std::string("CREATE INDEX IF NOT EXISTS span_details_exceptions ON span_details (start_time_ns) WHERE ") +
          schema::kSpanDetailHasException,
      "CREATE INDEX IF NOT EXISTS metric_series_project_series ON metric_series (project_id, series_id)",
      "CREATE INDEX IF NOT EXISTS span_resources_key ON span_resources (project_id, resource_id)",
      "CREATE INDEX IF NOT EXISTS log_resources_key ON log_resources (project_id, resource_id)",
      "CREATE INDEX IF NOT EXISTS metric_resources_key ON metric_resources (project_id, resource_id)",
  };
}

//! The rollups' minute and hour tables, read and folded by project and
//! bucket; their deltas are few (folded every few seconds) and read whole.
std::vector<std::string> RollupIndexSql() {
  std::vector<std::string> out;
  for (const rollup::RollupTables& t : {rollup::kSpanRollupTables, rollup::kExceptionRollupTables,
                                        rollup::kLogRollupTables, rollup::kMetricRollupTables}) {
    for (const char* table : {t.minute, t.hour}) {
      out.push_back(std::string("CREATE INDEX IF NOT EXISTS ") + table + "_bucket ON " + table +
                    " (project_id, bucket_ns)");
    }
  }
  return out;
}

uint64_t FileSize(const std::string& path) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) return 0;
  return static_cast<uint64_t>(st.st_size);
}

Status SqliteError(sqlite3* db, const std::string& what) {
  return Status::IoError("sqlite: " + what + ": " + (db != nullptr ? sqlite3_errmsg(db) : "out of memory"));
}

Status Exec(sqlite3* db, const char* sql) {
  char* error = nullptr;
  if (sqlite3_exec(db, sql, nullptr, nullptr, &error) == SQLITE_OK) return Status::Ok();
  std::string message = error != nullptr ? error : sqlite3_errmsg(db);
  sqlite3_free(error);
  return Status::IoError(std::string("sqlite: ") + sql + ": " + message);
}

//! A prepared statement, finalized on destruction.
class Statement {
 public:
  Statement() = default;
  ~Statement() { sqlite3_finalize(stmt_); }
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;

  Status Prepare(sqlite3* db, const std::string& sql) {
    if (sqlite3_prepare_v3(db, sql.c_str(), static_cast<int>(sql.size()), SQLITE_PREPARE_PERSISTENT, &stmt_, nullptr) !=
        SQLITE_OK) {
      return SqliteError(db, "prepare " + sql);
    }
    return Status::Ok();
  }
  sqlite3_stmt* get() const { return stmt_; }

 private:
  sqlite3_stmt* stmt_ = nullptr;
};

int BindText(sqlite3_stmt* stmt, int index, std::string_view s) {
  if (s.size() > static_cast<size_t>(INT_MAX)) return SQLITE_TOOBIG;
  // SQLITE_STATIC: the batch outlives the statement step; bindings are cleared
  // before the write returns.
  return sqlite3_bind_text(stmt, index, s.data(), static_cast<int>(s.size()), SQLITE_STATIC);
}

int BindCell(sqlite3_stmt* stmt, int index, const schema::Column& c, size_t r) {
  switch (c.kind) {
    case schema::SourceKind::kConstant: return sqlite3_bind_int64(stmt, index, c.constant);
    case schema::SourceKind::kInt64: return sqlite3_bind_int64(stmt, index, static_cast<const int64_t*>(c.a)[r]);
    case schema::SourceKind::kInt32: return sqlite3_bind_int64(stmt, index, static_cast<const int32_t*>(c.a)[r]);
    case schema::SourceKind::kUint32: return sqlite3_bind_int64(stmt, index, static_cast<const uint32_t*>(c.a)[r]);
    case schema::SourceKind::kUint8: return sqlite3_bind_int64(stmt, index, static_cast<const uint8_t*>(c.a)[r]);
    case schema::SourceKind::kUint64Clamped: {
      constexpr uint64_t kMax = static_cast<uint64_t>(std::numeric_limits<int64_t>::max());
      uint64_t v = static_cast<const uint64_t*>(c.a)[r];
      return sqlite3_bind_int64(stmt, index, static_cast<int64_t>(v > kMax ? kMax : v));
    }
    case schema::SourceKind::kInt64Diff: {
      uint64_t end = static_cast<uint64_t>(static_cast<const int64_t*>(c.a)[r]);
      uint64_t start = static_cast<uint64_t>(static_cast<const int64_t*>(c.b)[r]);
      return sqlite3_bind_int64(stmt, index, static_cast<int64_t>(end - start));
    }
    case schema::SourceKind::kDoubleNanNull: {
      double v = static_cast<const double*>(c.a)[r];
      return std::isnan(v) ? sqlite3_bind_null(stmt, index) : sqlite3_bind_double(stmt, index, v);
    }
    case schema::SourceKind::kDoubleIfNotFlag: {
      double v = static_cast<const double*>(c.a)[r];
      return std::isnan(v) || static_cast<const uint8_t*>(c.b)[r] != 0 ? sqlite3_bind_null(stmt, index)
                                                                       : sqlite3_bind_double(stmt, index, v);
    }
    case schema::SourceKind::kInt64IfFlag:
      return static_cast<const uint8_t*>(c.b)[r] != 0
                 ? sqlite3_bind_int64(stmt, index, static_cast<const int64_t*>(c.a)[r])
                 : sqlite3_bind_null(stmt, index);
    case schema::SourceKind::kId: {
      uint64_t v = static_cast<const uint64_t*>(c.a)[r];
      return v == 0 && static_cast<const uint64_t*>(c.b)[r] == 0
                 ? sqlite3_bind_null(stmt, index)
                 : sqlite3_bind_int64(stmt, index, static_cast<int64_t>(v));
    }
    case schema::SourceKind::kText: return BindText(stmt, index, static_cast<const StringColumn*>(c.a)->Get(r));
    case schema::SourceKind::kTextEmptyNull: {
      std::string_view s = static_cast<const StringColumn*>(c.a)->Get(r);
      return s.empty() ? sqlite3_bind_null(stmt, index) : BindText(stmt, index, s);
    }
    case schema::SourceKind::kInt64Indexed: return sqlite3_bind_int64(stmt, index, schema::IndexedIntAt(c, r));
    case schema::SourceKind::kTextOrElse: return BindText(stmt, index, schema::DerivedText(c, r));
    case schema::SourceKind::kIsEntry:
    case schema::SourceKind::kAnyText: return sqlite3_bind_int64(stmt, index, schema::DerivedInt(c, r));
  }
  return SQLITE_MISUSE;
}

//! Inserts `rows` rows (row indexes from sel when non-null) with stmt, whose
//! parameters are the columns in order.
Status InsertRows(sqlite3* db, sqlite3_stmt* stmt, const char* table, std::span<const schema::Column> columns,
                  size_t rows, const uint32_t* sel) {
  for (size_t i = 0; i < rows; ++i) {
    size_t r = sel != nullptr ? sel[i] : i;
    for (size_t c = 0; c < columns.size(); ++c) {
      if (BindCell(stmt, static_cast<int>(c + 1), columns[c], r) != SQLITE_OK) {
        return SqliteError(db, std::string("bind ") + table + "." + columns[c].name);
      }
    }
    int rc = sqlite3_step(stmt);
    sqlite3_reset(stmt);
    if (rc != SQLITE_DONE) return SqliteError(db, std::string("insert into ") + table);
  }
  return Status::Ok();
}

//! BEGIN IMMEDIATE ... COMMIT; rolls back unless committed. Clears the
//! statements' bindings at the end so no pointer into a batch outlives the write.
class Transaction {
 public:
  Transaction(sqlite3* db, std::span<sqlite3_stmt* const> statements) : db_(db), statements_(statements) {}
  ~Transaction() {
    for (sqlite3_stmt* stmt : statements_) {
      sqlite3_reset(stmt);
      sqlite3_clear_bindings(stmt);
    }
    if (active_) (void)Exec(db_, "ROLLBACK");
  }
  Transaction(const Transaction&) = delete;
  Transaction& operator=(const Transaction&) = delete;

  Status Begin() {
    SL_RETURN_IF_ERROR(Exec(db_, "BEGIN IMMEDIATE"));
    active_ = true;
    return Status::Ok();
  }
  Status Commit() {
    // A failed COMMIT (e.g. SQLITE_BUSY) leaves the transaction open: the
    // destructor rolls it back.
    SL_RETURN_IF_ERROR(Exec(db_, "COMMIT"));
    active_ = false;
    return Status::Ok();
  }

 private:
  sqlite3* db_;
  std::span<sqlite3_stmt* const> statements_;
  bool active_ = false;
};

//! Opens one connection with the per-connection settings applied.
Result<sqlite3*> OpenConnection(const std::string& path) {
  sqlite3* db = nullptr;
  int rc =
      sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, nullptr);
  if (rc != SQLITE_OK) {
    Status s = SqliteError(db, "open " + path);
    sqlite3_close_v2(db);
    return s;
  }
  sqlite3_extended_result_codes(db, 1);
  sqlite3_busy_timeout(db, kBusyTimeoutMs);
  Status s = Exec(db, kConnectionPragmas);
  if (!s.ok()) {
    sqlite3_close_v2(db);
    return s;
  }
  return db;
}

//! Rollup statements on one connection, inside a transaction the caller
//! opened.
class SqliteRollupSession final : public rollup::RollupSession {
 public:
  explicit SqliteRollupSession(sqlite3* db) : db_(db) {}
  Status Query(const std::string& sql, const std::vector<SqlParam>& params, const RowCallback& on_row) override {
    return QuerySqlite(db_, sql, params, on_row);
  }
  Status Exec(const std::string& sql, const std::vector<SqlParam>& params) override {
    return QuerySqlite(db_, sql, params, [](const RowView&) {});
  }
  Status Append(const char* table, std::span<const schema::Column> columns, size_t rows) override {
    Statement insert;
    SL_RETURN_IF_ERROR(insert.Prepare(db_, schema::InsertSql(table, columns)));
    return InsertRows(db_, insert.get(), table, columns, rows, nullptr);
  }

 private:
  sqlite3* db_;
};

struct ConnectionCloser {
  void operator()(sqlite3* db) const { sqlite3_close_v2(db); }
};
using Connection = std::unique_ptr<sqlite3, ConnectionCloser>;

class SqliteSink;

//! Lifecycle: Open() creates the tables and indexes and loads counters and
//! known series; sinks and ExecuteSql run concurrently, but writes from all
//! sinks are serialized by write_mu_ (SQLite has one writer at a time);
//! Close() (or the destructor) checkpoints and closes once every sink is gone.
//! Runs the statements in one transaction: all of them take effect or none.
Status ExecInTransaction(sqlite3* db, const std::vector<std::string>& statements) {
  Transaction txn(db, {});
  SL_RETURN_IF_ERROR(txn.Begin());
  for (const std::string& sql : statements) SL_RETURN_IF_ERROR(Exec(db, sql.c_str()));
  return txn.Commit();
}

//! The version check and migrations' view of one connection.
class SqliteSchemaSession final : public schema::SchemaSession {
 public:
  explicit SqliteSchemaSession(sqlite3* db) : db_(db) {}
  Status Begin() override { return Exec("BEGIN IMMEDIATE"); }
  Status Commit() override { return Exec("COMMIT"); }
  void Rollback() override { (void)Exec("ROLLBACK"); }
  Status Exec(const std::string& sql) override { return sightline::Exec(db_, sql.c_str()); }
  Status Query(const std::string& sql, const RowCallback& on_row) override {
    return ForEachSqliteRow(db_, sql, on_row);
  }
  Result<bool> TableExists(const char* table) override {
    bool exists = false;
    SL_RETURN_IF_ERROR(Query(std::string("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = '") + table + "'",
                             [&](const RowView&) { exists = true; }));
    return exists;
  }
  Result<std::vector<std::string>> ColumnNames(const char* table) override {
    Statement select;
    SL_RETURN_IF_ERROR(select.Prepare(db_, std::string("SELECT * FROM ") + table + " LIMIT 0"));
    std::vector<std::string> names;
    for (int c = 0; c < sqlite3_column_count(select.get()); ++c)
      names.emplace_back(sqlite3_column_name(select.get(), c));
    return names;
  }
  const schema::TypeNames& types() const override { return kSqliteTypes; }

 private:
  sqlite3* db_;
};

class SqliteStore final : public TelemetryStore {
 public:
  static Result<std::unique_ptr<TelemetryStore>> Open(const StoreOptions& options);
  ~SqliteStore() override;

  const char* name() const override { return "sqlite"; }
  Result<std::unique_ptr<SignalSink>> NewSink(Signal signal) override;
  StoreStats Stats() override;
  Result<SqlResult> ExecuteSql(const std::string& sql) override;
  Result<std::unique_ptr<TelemetryReader>> AcquireReader(int64_t wait_ms) override;
  SchemaReport schema_report() const override { return schema_report_; }
  Status Close() override;
  Result<uint64_t> DeleteBefore(Signal signal, const ProjectSet& projects, int64_t before_ns) override;
  Status ExpireRollups(Signal signal, const ProjectSet& projects, int64_t before_ns) override;
  Result<std::optional<int64_t>> OldestTime(Signal signal) override;
  Status ReclaimSpace() override;
  Result<StoreFootprint> Footprint() override;

 private:
  friend class SqliteSink;
  SqliteStore() = default;
  Status Init(const StoreOptions& options);
  Status LoadCounters() REQUIRES(read_mu_);
  Status LoadKnownKeys() REQUIRES(read_mu_);
  //! force: close even with sinks open (the destructor; their use is then a bug).
  Status CloseLocked(bool force) REQUIRES(mu_);
  //! The pending metric rollups folded in a transaction of their own on
  //! `db`; kept (to retry) if it fails.
  Status FoldPendingMetricRollups(sqlite3* db) REQUIRES(write_mu_);
  //! The idle fold: metric rollups a writer left pending when its commits
  //! stopped are folded StoreOptions::rollup_idle_fold_ms later, so charts
  //! stop reading their minutes raw; as DuckDB's compactor does.
  void RunIdleFold();
  void StopIdleFold();

  std::string db_path_;
  std::string wal_path_;
  SchemaReport schema_report_;                 // set at open
  int64_t rollup_exact_spans_ = 0;             // StoreOptions::rollup_exact_spans
  int64_t rollup_compaction_interval_ms_ = 0;  // StoreOptions::rollup_compaction_interval_ms
  int64_t rollup_idle_fold_ms_ = 0;            // StoreOptions::rollup_idle_fold_ms
  bool rollups_outlive_rows_ = false;          // StoreOptions::rollups_outlive_rows

  Mutex mu_;  // lifecycle
  bool closed_ GUARDED_BY(mu_) = false;

  Mutex read_mu_;
  sqlite3* read_db_ GUARDED_BY(read_mu_) = nullptr;

  //! Retention's connection: deletes (under write_mu_, batch by batch),
  //! checkpoints and size queries, off the read connection so `sightline sql`
  //! and tests never wait for a delete.
  Mutex maintenance_mu_;
  sqlite3* maintenance_db_ GUARDED_BY(maintenance_mu_) = nullptr;

  Mutex write_mu_;  // one write transaction at a time across all sinks
  //! The keys each signal's keyed tables hold (schema::SignalTables).
  schema::KeySets known_[kSignalCount] GUARDED_BY(write_mu_);
  //! The metric rollups of the points committed since the last fold
  //! (metric_rollup.h): a fold per commit cost the metric writer 11% of its
  //! time, and SQLite has one writer at a time (docs/STORAGE.md).
  rollup::PendingMetricRollups pending_metric_rollups_ GUARDED_BY(write_mu_);

  Mutex idle_fold_mu_;
  CondVar idle_fold_cv_{&idle_fold_mu_};
  bool idle_fold_stop_ GUARDED_BY(idle_fold_mu_) = false;
  std::thread idle_fold_;

  std::atomic<uint64_t> rows_[kSignalCount] = {0, 0, 0};
  std::atomic<uint64_t> series_count_{0};
  std::atomic<int> open_sinks_{0};
  //! Dashboard queries: read-only WAL connections, destroyed before close.
  std::unique_ptr<ReadPool> read_pool_;
};

//! One connection with the INSERT statements of its signal's tables,
//! prepared once. Not thread-safe (one writer thread owns it).
class SqliteSink final : public OneSignalSink<SqliteSink> {
 public:
  static Result<std::unique_ptr<SignalSink>> Create(SqliteStore* store, Signal signal, sqlite3* db) {
    std::unique_ptr<SqliteSink> sink(new SqliteSink(store, signal, db));
    switch (signal) {
      case Signal::kSpans: SL_RETURN_IF_ERROR(sink->PrepareStatements(SpanBatch{})); break;
      case Signal::kLogs: SL_RETURN_IF_ERROR(sink->PrepareStatements(LogBatch{})); break;
      case Signal::kMetrics: SL_RETURN_IF_ERROR(sink->PrepareStatements(MetricBatch{})); break;
    }
    return std::unique_ptr<SignalSink>(std::move(sink));
  }

  ~SqliteSink() override { store_->open_sinks_.fetch_sub(1); }

  //! A span batch's rollup deltas, found on the decoder that submits it.
  void Prepare(AnyBatch* batch) const override {
    if (SpanBatch* spans = std::get_if<SpanBatch>(batch)) rollup::PrepareDeltas(spans);
  }

  template <typename Batch>
  Status Write(const std::vector<const Batch*>& batches);

 private:
  //! Folds this signal's rollup deltas into the minute and hour tables once
  //! StoreOptions::rollup_compaction_interval_ms has passed since the last
  //! fold, in a transaction of its own. A failed fold changes nothing and is
  //! retried the next time; reads are right either way (they add the deltas).
  void MaybeCompactRollups() REQUIRES(store_->write_mu_);

  SqliteSink(SqliteStore* store, Signal signal, sqlite3* db) : OneSignalSink(signal), store_(store), conn_(db) {
    store_->open_sinks_.fetch_add(1);
  }
  template <typename Batch>
  Status PrepareStatements(const Batch& empty) {
    const schema::SignalTables tables = schema::TablesOf(empty);
    std::vector<schema::KeyedPart> keyed = schema::KeyedParts(empty);
    for (size_t t = 0; t < keyed.size(); ++t) {
      SL_RETURN_IF_ERROR(insert_keyed_[t].Prepare(db_, schema::InsertSql(tables.keyed[t].table, keyed[t].columns)));
    }
    if (tables.sparse != nullptr) {
      SL_RETURN_IF_ERROR(insert_sparse_.Prepare(db_, schema::InsertSql(tables.sparse, schema::SparseColumns(empty))));
    }
    return insert_main_.Prepare(db_, schema::InsertSql(tables.main, schema::MainColumns(empty)));
  }
  SqliteStore* store_;  // not owned; outlives the sink
  Connection conn_;     // declared before the statements: closed after they are finalized
  sqlite3* const db_ = conn_.get();
  std::array<Statement, schema::kMaxKeyedTables> insert_keyed_;  // one per keyed table of the signal
  Statement insert_main_;
  Statement insert_sparse_;  // when the signal has a sparse table
  std::chrono::steady_clock::time_point last_compaction_ = std::chrono::steady_clock::now();
};

void SqliteSink::MaybeCompactRollups() {
  const auto now = std::chrono::steady_clock::now();
  const bool due = now - last_compaction_ >= std::chrono::milliseconds(store_->rollup_compaction_interval_ms_);
  if (signal() == Signal::kMetrics) {
    // Early when the pending rollups have grown: their memory, and the
    // minutes an open after a crash rebuilds, stay bounded.
    if (!store_->pending_metric_rollups_.Full() && !due) return;
    last_compaction_ = now;
    (void)store_->FoldPendingMetricRollups(db_);
    return;
  }
  if (!due) return;
  last_compaction_ = now;
  Transaction txn(db_, {});
  if (!txn.Begin().ok()) return;
  SqliteRollupSession session(db_);
  if (!rollup::CompactSignalRollups(&session, signal()).ok()) return;
  (void)txn.Commit();
}

// One transaction: the keyed rows not stored yet, then every main row, then
// the sparse table's rows.
template <typename Batch>
Status SqliteSink::Write(const std::vector<const Batch*>& batches) {
  if (batches.empty()) return Status::Ok();
  const schema::SignalTables tables = schema::TablesOf(*batches[0]);
  MutexLock lock(&store_->write_mu_);
  schema::KeySets& known = store_->known_[static_cast<int>(signal())];
  std::array<sqlite3_stmt*, schema::kMaxKeyedTables + 2> statements{};
  size_t n_statements = 0;
  for (size_t t = 0; t < tables.keyed.size(); ++t) statements[n_statements++] = insert_keyed_[t].get();
  sqlite3_stmt* const insert_main = statements[n_statements++] = insert_main_.get();
  sqlite3_stmt* const insert_sparse =
      tables.sparse != nullptr ? statements[n_statements++] = insert_sparse_.get() : nullptr;
  Transaction txn(db_, std::span<sqlite3_stmt* const>(statements.data(), n_statements));
  SL_RETURN_IF_ERROR(txn.Begin());
  schema::KeySets pending;
  uint64_t rows = 0;
  for (const Batch* b : batches) {
    Result<schema::BatchWrite<Batch>> w = schema::PlanBatchWrite(*b, known, &pending);
    if (!w.ok()) return w.status();
    for (size_t t = 0; t < tables.keyed.size(); ++t) {
      const std::vector<uint32_t>& new_rows = w->new_keyed_rows[t];
      SL_RETURN_IF_ERROR(InsertRows(db_, statements[t], tables.keyed[t].table, w->columns.keyed[t].columns,
                                    new_rows.size(), new_rows.data()));
    }
    SL_RETURN_IF_ERROR(InsertRows(db_, insert_main, tables.main, w->columns.main, b->rows(), nullptr));
    if (!w->sparse_rows.empty()) {
      SL_RETURN_IF_ERROR(InsertRows(db_, insert_sparse, tables.sparse, w->columns.sparse, w->sparse_rows.size(),
                                    w->sparse_rows.data()));
    }
    rows += b->rows();
  }
  // The rollups' share of these rows, committed with them: span and log
  // deltas; metric points keep theirs in memory until the fold, and the
  // commit marks only the minutes no commit since the last fold has.
  SqliteRollupSession session(db_);
  rollup::PendingMetricRollups::Commit metric_rollups;
  if constexpr (std::is_same_v<Batch, MetricBatch>) {
    SL_RETURN_IF_ERROR(store_->pending_metric_rollups_.Mark(&session, batches, &metric_rollups));
  } else {
    SL_RETURN_IF_ERROR(rollup::AppendDeltas(&session, batches));
  }
  SL_RETURN_IF_ERROR(txn.Commit());
  if constexpr (std::is_same_v<Batch, MetricBatch>) {
    store_->pending_metric_rollups_.Committed(std::move(metric_rollups));
  }
  for (size_t t = 0; t < tables.keyed.size(); ++t) known[t].insert(pending[t].begin(), pending[t].end());
  if (signal() == Signal::kMetrics) store_->series_count_.fetch_add(pending[schema::kMetricSeriesPart].size());
  store_->rows_[static_cast<int>(signal())].fetch_add(rows);
  MaybeCompactRollups();
  return Status::Ok();
}

Result<std::unique_ptr<TelemetryStore>> SqliteStore::Open(const StoreOptions& options) {
  std::unique_ptr<SqliteStore> store(new SqliteStore());
  SL_RETURN_IF_ERROR(store->Init(options));
  return std::unique_ptr<TelemetryStore>(std::move(store));
}

Status SqliteStore::Init(const StoreOptions& options) {
  if (options.data_dir.empty()) return Status::InvalidArgument("sqlite: data_dir is empty");
  std::error_code ec;
  std::filesystem::create_directories(options.data_dir, ec);
  if (ec) return Status::IoError("sqlite: cannot create " + options.data_dir + ": " + ec.message());
  db_path_ = (std::filesystem::path(options.data_dir) / kDatabaseFile).string();
  wal_path_ = db_path_ + "-wal";
  rollup_exact_spans_ = options.rollup_exact_spans;
  rollup_compaction_interval_ms_ = options.rollup_compaction_interval_ms;
  rollup_idle_fold_ms_ = options.rollup_idle_fold_ms;
  rollups_outlive_rows_ = options.rollups_outlive_rows;

  MutexLock read_lock(&read_mu_);
  Result<sqlite3*> db = OpenConnection(db_path_);
  if (!db.ok()) return db.status();
  read_db_ = *db;
  // page_size only takes effect before the first table exists, and must
  // precede the switch to WAL.
  SL_RETURN_IF_ERROR(Exec(read_db_, "PRAGMA page_size=8192"));
  {
    Statement wal;
    SL_RETURN_IF_ERROR(wal.Prepare(read_db_, "PRAGMA journal_mode=WAL"));
    if (sqlite3_step(wal.get()) != SQLITE_ROW) return SqliteError(read_db_, "PRAGMA journal_mode=WAL");
    const char* mode = reinterpret_cast<const char*>(sqlite3_column_text(wal.get(), 0));
    if (mode == nullptr || std::string(mode) != "wal") {
      return Status::IoError("sqlite: " + db_path_ + " cannot use WAL (journal_mode=" + (mode ? mode : "?") + ")");
    }
  }
  // Migrate first: the indexes name columns an older table lacks.
  SqliteSchemaSession session(read_db_);
  Result<SchemaReport> opened = schema::OpenSchema(&session, "sqlite", options);
  if (!opened.ok()) return opened.status();
  schema_report_ = std::move(opened).value();
  SL_RETURN_IF_ERROR(ExecInTransaction(read_db_, IndexSql()));
  {
    Transaction txn(read_db_, {});
    SL_RETURN_IF_ERROR(txn.Begin());
    SqliteRollupSession rollups(read_db_);
    SL_RETURN_IF_ERROR(rollup::CreateRollups(&rollups, kSqliteTypes));
    for (const std::string& sql : RollupIndexSql()) SL_RETURN_IF_ERROR(Exec(read_db_, sql.c_str()));
    // The minutes a process that stopped before its fold left dirty.
    int64_t rebuilt = 0;
    Status s = rollup::RebuildDirtyMetricMinutes(&rollups, &rebuilt);
    if (!s.ok()) return Status::IoError("sqlite: rebuilding the metric rollups of an unclean stop: " + s.message());
    SL_RETURN_IF_ERROR(txn.Commit());
  }
  SL_RETURN_IF_ERROR(LoadCounters());
  SL_RETURN_IF_ERROR(LoadKnownKeys());
  {
    Result<sqlite3*> maintenance = OpenConnection(db_path_);
    if (!maintenance.ok()) return maintenance.status();
    MutexLock lock(&maintenance_mu_);
    maintenance_db_ = *maintenance;
  }
  std::vector<std::unique_ptr<ReadConnection>> readers;
  for (int i = 0; i < std::max(1, options.read_connections); ++i) {
    auto reader = OpenSqliteReader(db_path_);
    if (!reader.ok()) return reader.status();
    readers.push_back(std::move(reader.value()));
  }
  read_pool_ = std::make_unique<ReadPool>(std::move(readers));
  idle_fold_ = std::thread([this] {
    NameThisThread("sl-fold");
    RunIdleFold();
  });
  return Status::Ok();
}

Status SqliteStore::FoldPendingMetricRollups(sqlite3* db) {
  if (pending_metric_rollups_.empty()) return Status::Ok();
  Transaction txn(db, {});
  SL_RETURN_IF_ERROR(txn.Begin());
  SqliteRollupSession session(db);
  SL_RETURN_IF_ERROR(pending_metric_rollups_.Fold(&session));
  SL_RETURN_IF_ERROR(txn.Commit());
  pending_metric_rollups_.Folded();
  return Status::Ok();
}

void SqliteStore::RunIdleFold() {
  const auto idle = std::chrono::milliseconds(std::clamp<int64_t>(rollup_idle_fold_ms_, 100, 1000));
  for (;;) {
    {
      MutexLock lock(&idle_fold_mu_);
      const auto deadline = std::chrono::steady_clock::now() + idle;
      while (!idle_fold_stop_) {
        if (!idle_fold_cv_.WaitUntil(&idle_fold_mu_, deadline)) break;
      }
      if (idle_fold_stop_) return;
    }
    MutexLock lock(&maintenance_mu_);
    if (maintenance_db_ == nullptr) return;
    MutexLock write(&write_mu_);
    const auto now = std::chrono::steady_clock::now();
    if (now - pending_metric_rollups_.committed_at() >= std::chrono::milliseconds(rollup_idle_fold_ms_) ||
        now - pending_metric_rollups_.folded_at() >= std::chrono::milliseconds(rollup_compaction_interval_ms_)) {
      (void)FoldPendingMetricRollups(maintenance_db_);  // a failure waits for the next pass
    }
  }
}

void SqliteStore::StopIdleFold() {
  {
    MutexLock lock(&idle_fold_mu_);
    idle_fold_stop_ = true;
    idle_fold_cv_.Signal();
  }
  if (idle_fold_.joinable()) idle_fold_.join();
}

Result<std::unique_ptr<TelemetryReader>> SqliteStore::AcquireReader(int64_t wait_ms) {
  if (read_pool_ == nullptr) return Status::Unavailable("sqlite: store is closed");
  auto conn = read_pool_->Acquire(wait_ms);
  if (!conn.ok()) return conn.status();
  return NewSqliteTelemetryReader(std::move(conn.value()), rollup_exact_spans_);
}

Status SqliteStore::LoadCounters() {
  Statement count;
  SL_RETURN_IF_ERROR(count.Prepare(read_db_,
                                   "SELECT (SELECT COUNT(*) FROM spans), (SELECT COUNT(*) FROM logs), "
                                   "(SELECT COUNT(*) FROM metric_points), (SELECT COUNT(*) FROM metric_series)"));
  if (sqlite3_step(count.get()) != SQLITE_ROW) return SqliteError(read_db_, "counting rows");
  for (int i = 0; i < kSignalCount; ++i) {
    rows_[i].store(static_cast<uint64_t>(sqlite3_column_int64(count.get(), i)));
  }
  series_count_.store(static_cast<uint64_t>(sqlite3_column_int64(count.get(), 3)));
  return Status::Ok();
}

Status SqliteStore::LoadKnownKeys() {
  MutexLock lock(&write_mu_);
  for (Signal signal : {Signal::kSpans, Signal::kLogs, Signal::kMetrics}) {
    const schema::SignalTables tables = schema::TablesOf(signal);
    for (size_t t = 0; t < tables.keyed.size(); ++t) {
      std::string sql =
          std::string("SELECT project_id, ") + tables.keyed[t].key_column + " FROM " + tables.keyed[t].table;
      Statement select;
      SL_RETURN_IF_ERROR(select.Prepare(read_db_, sql));
      schema::KeySet& known = known_[static_cast<int>(signal)][t];
      int rc;
      while ((rc = sqlite3_step(select.get())) == SQLITE_ROW) {
        known.insert({sqlite3_column_int64(select.get(), 0), sqlite3_column_int64(select.get(), 1)});
      }
      if (rc != SQLITE_DONE) return SqliteError(read_db_, sql);
    }
  }
  return Status::Ok();
}

SqliteStore::~SqliteStore() {
  MutexLock lock(&mu_);
  (void)CloseLocked(/*force=*/true);
}

Result<std::unique_ptr<SignalSink>> SqliteStore::NewSink(Signal signal) {
  MutexLock lock(&mu_);
  if (closed_) return Status::Internal("sqlite: store is closed");
  Result<sqlite3*> db = OpenConnection(db_path_);
  if (!db.ok()) return db.status();
  return SqliteSink::Create(this, signal, *db);
}

StoreStats SqliteStore::Stats() {
  StoreStats stats;
  stats.database_bytes = FileSize(db_path_);
  stats.wal_bytes = FileSize(wal_path_);
  for (int i = 0; i < kSignalCount; ++i) stats.rows[i] = rows_[i].load();
  stats.metric_series = series_count_.load();
  if (read_pool_ != nullptr) {
    stats.read_connections = read_pool_->size();
    stats.read_connections_in_use = read_pool_->in_use();
  }
  return stats;
}

Result<SqlResult> SqliteStore::ExecuteSql(const std::string& sql) {
  MutexLock lock(&read_mu_);
  if (read_db_ == nullptr) return Status::Internal("sqlite: store is closed");
  SqlResult out;
  const char* next = sql.c_str();
  const char* end = next + sql.size();
  // Runs every statement in order and returns the last one's rows, as DuckDB does.
  while (next < end) {
    sqlite3_stmt* raw = nullptr;
    const char* tail = nullptr;
    if (sqlite3_prepare_v2(read_db_, next, static_cast<int>(end - next), &raw, &tail) != SQLITE_OK) {
      return Status::InvalidArgument(std::string("sqlite: ") + sqlite3_errmsg(read_db_));
    }
    next = tail;
    if (raw == nullptr) continue;  // whitespace or a comment
    std::unique_ptr<sqlite3_stmt, int (*)(sqlite3_stmt*)> stmt(raw, sqlite3_finalize);
    out = SqlResult();
    int columns = sqlite3_column_count(raw);
    for (int c = 0; c < columns; ++c) {
      const char* name = sqlite3_column_name(raw, c);
      out.columns.emplace_back(name != nullptr ? name : "");
    }
    int rc;
    while ((rc = sqlite3_step(raw)) == SQLITE_ROW) {
      std::vector<std::optional<std::string>> row;
      row.reserve(columns);
      for (int c = 0; c < columns; ++c) {
        if (sqlite3_column_type(raw, c) == SQLITE_NULL) {
          row.emplace_back(std::nullopt);
          continue;
        }
        const auto* text = reinterpret_cast<const char*>(sqlite3_column_text(raw, c));
        int bytes = sqlite3_column_bytes(raw, c);
        row.emplace_back(text != nullptr ? std::string(text, static_cast<size_t>(bytes)) : std::string());
      }
      out.rows.push_back(std::move(row));
    }
    if (rc != SQLITE_DONE) {
      int code = rc & 0xff;
      std::string message = std::string("sqlite: ") + sqlite3_errmsg(read_db_);
      if (code == SQLITE_ERROR || code == SQLITE_CONSTRAINT || code == SQLITE_MISMATCH || code == SQLITE_RANGE) {
        return Status::InvalidArgument(message);
      }
      return Status::IoError(message);
    }
  }
  return out;
}

Result<uint64_t> SqliteStore::DeleteBefore(Signal signal, const ProjectSet& projects, int64_t before_ns) {
  MutexLock lock(&maintenance_mu_);
  if (maintenance_db_ == nullptr) return Status::Unavailable("sqlite: store is closed");
  if (!projects.all_but && projects.ids.empty()) return uint64_t{0};
  const char* table = sql::MainTable(signal);
  // Rows were appended in about time order, so the oldest are at the start
  // of the table: each batch finds its rows near where the last one ended.
  const std::string sql = std::string("DELETE FROM ") + table + " WHERE rowid IN (SELECT rowid FROM " + table +
                          " WHERE " + sql::ExpiredRowsSql(signal, projects, before_ns) + " LIMIT " +
                          std::to_string(kDeleteBatchRows) + ")";
  uint64_t deleted = 0;
  for (bool first = true;; first = false) {
    int changes = 0;
    {
      MutexLock write(&write_mu_);
      Transaction txn(maintenance_db_, {});
      SL_RETURN_IF_ERROR(txn.Begin());
      // The rollups give up the rows with the first batch, unless they
      // outlive them (ExpireRollups drops them later): they then hold only
      // rows at or after before_ns, which the batches leave.
      const bool expire_rollups = first && !rollups_outlive_rows_;
      if (expire_rollups) {
        SqliteRollupSession session(maintenance_db_);
        Status expired = signal == Signal::kMetrics ? pending_metric_rollups_.Fold(&session) : Status::Ok();
        if (expired.ok()) {
          expired = rollup::ExpireSignalRollups(&session, signal, sql::ProjectFilterSql(projects), before_ns, false);
        }
        if (!expired.ok()) return Status::IoError("sqlite: expiring rollups: " + expired.message());
      }
      SL_RETURN_IF_ERROR(Exec(maintenance_db_, sql.c_str()));
      changes = sqlite3_changes(maintenance_db_);
      // The sparse table's rows go with their records, all at the first
      // batch: they are few.
      if (const char* sparse = schema::TablesOf(signal).sparse; first && sparse != nullptr) {
        SL_RETURN_IF_ERROR(Exec(maintenance_db_, (std::string("DELETE FROM ") + sparse + " WHERE " +
                                                  sql::ExpiredRowsSql(signal, projects, before_ns))
                                                     .c_str()));
      }
      SL_RETURN_IF_ERROR(txn.Commit());
      if (expire_rollups && signal == Signal::kMetrics) pending_metric_rollups_.Folded();
      rows_[static_cast<int>(signal)].fetch_sub(static_cast<uint64_t>(changes));
    }
    deleted += static_cast<uint64_t>(changes);
    if (changes < kDeleteBatchRows) return deleted;
  }
}

Status SqliteStore::ExpireRollups(Signal signal, const ProjectSet& projects, int64_t before_ns) {
  if (!rollups_outlive_rows_ || (!projects.all_but && projects.ids.empty())) return Status::Ok();
  MutexLock lock(&maintenance_mu_);
  if (maintenance_db_ == nullptr) return Status::Unavailable("sqlite: store is closed");
  MutexLock write(&write_mu_);
  Transaction txn(maintenance_db_, {});
  SL_RETURN_IF_ERROR(txn.Begin());
  SqliteRollupSession session(maintenance_db_);
  Status expired = signal == Signal::kMetrics ? pending_metric_rollups_.Fold(&session) : Status::Ok();
  if (expired.ok()) {
    expired = rollup::ExpireSignalRollups(&session, signal, sql::ProjectFilterSql(projects), before_ns, true);
  }
  if (!expired.ok()) return Status::IoError("sqlite: expiring rollups: " + expired.message());
  SL_RETURN_IF_ERROR(txn.Commit());
  if (signal == Signal::kMetrics) pending_metric_rollups_.Folded();
  return Status::Ok();
}

Result<std::optional<int64_t>> SqliteStore::OldestTime(Signal signal) {
  MutexLock lock(&maintenance_mu_);
  if (maintenance_db_ == nullptr) return Status::Unavailable("sqlite: store is closed");
  std::optional<int64_t> oldest;
  SL_RETURN_IF_ERROR(ForEachSqliteRow(
      maintenance_db_, std::string("SELECT min(") + sql::AgeTimeSql(signal) + ") FROM " + sql::MainTable(signal),
      [&](const RowView& r) {
        if (!r.IsNull(0)) oldest = r.GetInt(0);
      }));
  return oldest;
}

Status SqliteStore::ReclaimSpace() {
  // Freed pages go to the freelist at commit and new rows reuse them; what is
  // left is to fold the WAL (which holds the deletes) back into the database
  // and cut it to zero bytes. TRUNCATE waits (busy_timeout) for readers on an
  // older snapshot; a busy result leaves the WAL for the next pass.
  MutexLock lock(&maintenance_mu_);
  if (maintenance_db_ == nullptr) return Status::Unavailable("sqlite: store is closed");
  int log_frames = 0, checkpointed = 0;
  int rc = sqlite3_wal_checkpoint_v2(maintenance_db_, nullptr, SQLITE_CHECKPOINT_TRUNCATE, &log_frames, &checkpointed);
  if (rc == SQLITE_BUSY) return Status::Unavailable("sqlite: WAL checkpoint busy; retried on the next pass");
  if (rc != SQLITE_OK) return SqliteError(maintenance_db_, "wal_checkpoint(TRUNCATE)");
  return Status::Ok();
}

Result<StoreFootprint> SqliteStore::Footprint() {
  MutexLock lock(&maintenance_mu_);
  if (maintenance_db_ == nullptr) return Status::Unavailable("sqlite: store is closed");
  int64_t page_size = 0, freelist = 0;
  SL_RETURN_IF_ERROR(ForEachSqliteRow(maintenance_db_,
                                      "SELECT page_size, freelist_count FROM pragma_page_size, pragma_freelist_count",
                                      [&](const RowView& r) {
                                        page_size = r.GetInt(0);
                                        freelist = r.GetInt(1);
                                      }));
  StoreFootprint f;
  f.database_bytes = FileSize(db_path_);
  f.free_bytes = static_cast<uint64_t>(page_size * freelist);
  f.wal_bytes = FileSize(wal_path_);
  return f;
}

Status SqliteStore::Close() {
  MutexLock lock(&mu_);
  return CloseLocked(/*force=*/false);
}

Status SqliteStore::CloseLocked(bool force) {
  if (closed_) return Status::Ok();
  int sinks = open_sinks_.load();
  if (sinks != 0 && !force) {
    return Status::Internal("sqlite: Close with " + std::to_string(sinks) + " sinks still open");
  }
  closed_ = true;
  StopIdleFold();
  read_pool_.reset();  // callers have returned every lease (the server stops queries first)
  {
    MutexLock lock(&maintenance_mu_);
    {
      // A fold that fails leaves the minutes dirty: the next open rebuilds them.
      MutexLock write(&write_mu_);
      if (maintenance_db_ != nullptr) (void)FoldPendingMetricRollups(maintenance_db_);
    }
    sqlite3_close_v2(maintenance_db_);
    maintenance_db_ = nullptr;
  }
  MutexLock read_lock(&read_mu_);
  if (read_db_ == nullptr) return Status::Ok();
  // Copies the WAL into the database file and truncates it to zero bytes.
  Status status = Exec(read_db_, "PRAGMA wal_checkpoint(TRUNCATE)");
  sqlite3_close_v2(read_db_);
  read_db_ = nullptr;
  return status;
}

}  // namespace

Result<std::unique_ptr<TelemetryStore>> OpenSqliteStore(const StoreOptions& options) {
  return SqliteStore::Open(options);
}

}  // namespace sightline
