#include "storage/duckdb/duckdb_store.h"
#include "common/thread_name.h"
#include "storage/duckdb/appender_chunk.h"
#include "storage/duckdb/duckdb_indexes.h"
#include "storage/duckdb/duckdb_reader.h"
#include "storage/duckdb/duckdb_telemetry_reader.h"
#include "storage/read_pool.h"

#include <duckdb.h>
#include <sys/stat.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <limits>
#include <memory>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <system_error>
#include <thread>
#include <utility>
#include <vector>

#include "common/disk_space.h"
#include "common/memory_size.h"
#include "common/mutex.h"
#include "common/units.h"
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

constexpr schema::TypeNames kDuckDbTypes{"BIGINT", "DOUBLE", "VARCHAR"};
constexpr const char* kDatabaseFile = "telemetry.duckdb";
constexpr const char* kWalFile = "telemetry.duckdb.wal";
//! DuckDB's own WAL threshold, set out of reach: the store checkpoints
//! itself (DuckDbStore::Checkpoint), because in DuckDB 1.4 an automatic
//! checkpoint that fails at commit (a full disk) silently drops every
//! committed row of the database, while a failed CHECKPOINT statement only
//! invalidates the instance and keeps the WAL, which a reopen replays.
constexpr const char* kDuckDbAutoCheckpointOff = "1000000TB";
//! What a checkpoint may need beyond the WAL's size: metadata, and row groups
//! rewritten because of deletes. A heuristic (docs/STORAGE.md).
constexpr uint64_t kCheckpointHeadroomBytes = 16u << 20;
//! A retention delete of more than max_delete_rows_ rows is cut at the
//! edges of this many equal parts of the expired rows' time span.
constexpr int64_t kDeleteSliceBuckets = 1024;

//! DuckDB reports an instance it invalidated (after a failed checkpoint) on
//! every later statement; only closing and reopening it recovers.
bool IsFatal(const Status& s) {
  return s.message().find("FATAL Error") != std::string::npos ||
         s.message().find("database has been invalidated") != std::string::npos;
}

uint64_t FileSize(const std::string& path) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) return 0;
  return static_cast<uint64_t>(st.st_size);
}

//! A query result that is always destroyed (duckdb_query requires it even on error).
class QueryResult {
 public:
  QueryResult() { std::memset(&result_, 0, sizeof(result_)); }
  ~QueryResult() { duckdb_destroy_result(&result_); }
  QueryResult(const QueryResult&) = delete;
  QueryResult& operator=(const QueryResult&) = delete;

  //! Runs sql on conn; the error status carries DuckDB's message.
  Status Run(duckdb_connection conn, const std::string& sql) {
    if (duckdb_query(conn, sql.c_str(), &result_) == DuckDBSuccess) return Status::Ok();
    const char* error = duckdb_result_error(&result_);
    std::string message = error != nullptr ? error : "unknown DuckDB error";
    switch (duckdb_result_error_type(&result_)) {
      case DUCKDB_ERROR_PARSER:
      case DUCKDB_ERROR_SYNTAX:
      case DUCKDB_ERROR_BINDER:
      case DUCKDB_ERROR_CATALOG:
      case DUCKDB_ERROR_CONVERSION:
      case DUCKDB_ERROR_MISMATCH_TYPE:
      case DUCKDB_ERROR_OUT_OF_RANGE:
      case DUCKDB_ERROR_DIVIDE_BY_ZERO:
      case DUCKDB_ERROR_INVALID_INPUT: return Status::InvalidArgument(message);
      default: return Status::IoError(message);
    }
  }
  duckdb_result* get() { return &result_; }

 private:
  duckdb_result result_;
};

Status Exec(duckdb_connection conn, const std::string& sql) {
  QueryResult result;
  Status s = result.Run(conn, sql);
  if (!s.ok()) return Status::IoError("duckdb: " + sql + ": " + s.message());
  return s;
}

//! Runs one statement without busy-waiting. duckdb_query keeps the calling
//! thread spinning (ExecuteTask, a mutex, the task queue) while DuckDB's
//! worker threads run the statement's tasks; for a COMMIT that writes the WAL
//! or checkpoints, that spin was a fifth of the writer thread's time, a core
//! share the decoders could use. Here the thread runs the tasks it can get
//! and otherwise sleeps briefly until the workers are done.
Status ExecWithoutSpinning(duckdb_connection conn, const char* sql) {
  duckdb_prepared_statement prepared = nullptr;
  if (duckdb_prepare(conn, sql, &prepared) != DuckDBSuccess) {
    std::string message = duckdb_prepare_error(prepared) ? duckdb_prepare_error(prepared) : "unknown DuckDB error";
    duckdb_destroy_prepare(&prepared);
    return Status::IoError(std::string("duckdb: ") + sql + ": " + message);
  }
  duckdb_pending_result pending = nullptr;
  duckdb_state started = duckdb_pending_prepared(prepared, &pending);
  duckdb_destroy_prepare(&prepared);
  Status status;
  if (started != DuckDBSuccess) {
    const char* error = pending != nullptr ? duckdb_pending_error(pending) : nullptr;
    status =
        Status::IoError(std::string("duckdb: ") + sql + ": " + (error != nullptr ? error : "unknown DuckDB error"));
  } else {
    for (;;) {
      duckdb_pending_state state = duckdb_pending_execute_task(pending);
      if (state == DUCKDB_PENDING_RESULT_READY) break;
      if (state == DUCKDB_PENDING_ERROR) {
        const char* error = duckdb_pending_error(pending);
        status =
            Status::IoError(std::string("duckdb: ") + sql + ": " + (error != nullptr ? error : "unknown DuckDB error"));
        break;
      }
      if (state == DUCKDB_PENDING_NO_TASKS_AVAILABLE) std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
    if (status.ok()) {
      duckdb_result result;
      if (duckdb_execute_pending(pending, &result) != DuckDBSuccess) {
        const char* error = duckdb_result_error(&result);
        status =
            Status::IoError(std::string("duckdb: ") + sql + ": " + (error != nullptr ? error : "unknown DuckDB error"));
      }
      duckdb_destroy_result(&result);
    }
  }
  duckdb_destroy_pending(&pending);
  return status;
}

//! When sql is exactly one query: the query that returns its rows with every
//! column cast to VARCHAR, so each value reads as DuckDB itself prints it
//! (the text `sightline sql` shows, for every type), and the original column
//! names in `names`. nullopt for anything else (several statements, DDL, DML).
std::optional<std::string> TextQueryOf(duckdb_connection conn, const std::string& sql,
                                       std::vector<std::string>* names) {
  duckdb_extracted_statements extracted = nullptr;
  idx_t count = duckdb_extract_statements(conn, sql.c_str(), &extracted);
  std::optional<std::string> out;
  duckdb_prepared_statement prepared = nullptr;
  if (count == 1 && duckdb_prepare_extracted_statement(conn, extracted, 0, &prepared) == DuckDBSuccess &&
      duckdb_prepared_statement_type(prepared) == DUCKDB_STATEMENT_TYPE_SELECT) {
    names->clear();
    for (idx_t c = 0; c < duckdb_prepared_statement_column_count(prepared); ++c) {
      const char* name = duckdb_prepared_statement_column_name(prepared, c);
      names->emplace_back(name != nullptr ? name : "");
      duckdb_free(const_cast<char*>(name));
    }
    size_t end = sql.find_last_not_of(" \t\r\n;");
    // The newlines keep a trailing -- comment from swallowing the parenthesis.
    out = "SELECT CAST(COLUMNS(*) AS VARCHAR) FROM (\n" + sql.substr(0, end == std::string::npos ? 0 : end + 1) + "\n)";
  }
  duckdb_destroy_prepare(&prepared);
  duckdb_destroy_extracted(&extracted);
  return out;
}

duckdb_type DuckDbType(schema::ColumnType type) {
  switch (type) {
    case schema::ColumnType::kInt64: return DUCKDB_TYPE_BIGINT;
    case schema::ColumnType::kDouble: return DUCKDB_TYPE_DOUBLE;
    case schema::ColumnType::kText: return DUCKDB_TYPE_VARCHAR;
  }
  return DUCKDB_TYPE_VARCHAR;
}

//! Marks rows of one vector NULL, making its validity mask writable on first use.
class NullSetter {
 public:
  explicit NullSetter(duckdb_vector vector) : vector_(vector) {}
  void Set(size_t row) {
    if (validity_ == nullptr) {
      duckdb_vector_ensure_validity_writable(vector_);
      validity_ = duckdb_vector_get_validity(vector_);
    }
    duckdb_validity_set_row_invalid(validity_, row);
  }

 private:
  duckdb_vector vector_;
  uint64_t* validity_ = nullptr;
};

//! Sets row j of a VARCHAR vector whose data is `out`. A string of up to 12
//! bytes is written into its slot, as duckdb.h lays out duckdb_string_t (the
//! rest of the slot zeroed, as DuckDB's string_t compares it); a longer one
//! is copied into the vector's string heap, which the chunk reuses after
//! Reset. Writing the short ones here saves a library call each: most of a
//! log record's text columns are short or empty.
inline void AssignString(duckdb_vector vector, duckdb_string_t* out, size_t j, std::string_view s) {
  constexpr size_t kInlineBytes = sizeof(out->value.inlined.inlined);
  if (s.size() > kInlineBytes) {
    duckdb_vector_assign_string_element_len(vector, j, s.data(), s.size());
    return;
  }
  duckdb_string_t slot{};
  slot.value.inlined.length = static_cast<uint32_t>(s.size());
  if (!s.empty()) std::memcpy(slot.value.inlined.inlined, s.data(), s.size());
  out[j] = slot;
}

//! Copies rows [begin, begin + n) of a column (through sel when given) into
//! the first n slots of a chunk vector of the matching type.
void FillVector(duckdb_vector vector, const schema::Column& c, const uint32_t* sel, size_t begin, size_t n) {
  auto row = [sel, begin](size_t j) -> size_t { return sel != nullptr ? sel[begin + j] : begin + j; };
  NullSetter nulls(vector);
  switch (c.kind) {
    case schema::SourceKind::kConstant: {
      auto* out = static_cast<int64_t*>(duckdb_vector_get_data(vector));
      for (size_t j = 0; j < n; ++j) out[j] = c.constant;
      break;
    }
    case schema::SourceKind::kInt64: {
      auto* out = static_cast<int64_t*>(duckdb_vector_get_data(vector));
      const auto* in = static_cast<const int64_t*>(c.a);
      for (size_t j = 0; j < n; ++j) out[j] = in[row(j)];
      break;
    }
    case schema::SourceKind::kInt32: {
      auto* out = static_cast<int64_t*>(duckdb_vector_get_data(vector));
      const auto* in = static_cast<const int32_t*>(c.a);
      for (size_t j = 0; j < n; ++j) out[j] = in[row(j)];
      break;
    }
    case schema::SourceKind::kUint32: {
      auto* out = static_cast<int64_t*>(duckdb_vector_get_data(vector));
      const auto* in = static_cast<const uint32_t*>(c.a);
      for (size_t j = 0; j < n; ++j) out[j] = in[row(j)];
      break;
    }
    case schema::SourceKind::kUint8: {
      auto* out = static_cast<int64_t*>(duckdb_vector_get_data(vector));
      const auto* in = static_cast<const uint8_t*>(c.a);
      for (size_t j = 0; j < n; ++j) out[j] = in[row(j)];
      break;
    }
    case schema::SourceKind::kUint64Clamped: {
      auto* out = static_cast<int64_t*>(duckdb_vector_get_data(vector));
      const auto* in = static_cast<const uint64_t*>(c.a);
      constexpr uint64_t kMax = static_cast<uint64_t>(std::numeric_limits<int64_t>::max());
      for (size_t j = 0; j < n; ++j) {
        uint64_t v = in[row(j)];
        out[j] = static_cast<int64_t>(v > kMax ? kMax : v);
      }
      break;
    }
    case schema::SourceKind::kInt64Indexed: {
      auto* out = static_cast<int64_t*>(duckdb_vector_get_data(vector));
      for (size_t j = 0; j < n; ++j) out[j] = schema::IndexedIntAt(c, row(j));
      break;
    }
    case schema::SourceKind::kInt64Diff: {
      auto* out = static_cast<int64_t*>(duckdb_vector_get_data(vector));
      const auto* a = static_cast<const int64_t*>(c.a);
      const auto* b = static_cast<const int64_t*>(c.b);
      for (size_t j = 0; j < n; ++j) {
        size_t r = row(j);
        out[j] = static_cast<int64_t>(static_cast<uint64_t>(a[r]) - static_cast<uint64_t>(b[r]));
      }
      break;
    }
    case schema::SourceKind::kDoubleNanNull: {
      auto* out = static_cast<double*>(duckdb_vector_get_data(vector));
      const auto* in = static_cast<const double*>(c.a);
      for (size_t j = 0; j < n; ++j) {
        double v = in[row(j)];
        if (std::isnan(v)) {
          out[j] = 0;
          nulls.Set(j);
        } else {
          out[j] = v;
        }
      }
      break;
    }
    case schema::SourceKind::kDoubleIfNotFlag: {
      auto* out = static_cast<double*>(duckdb_vector_get_data(vector));
      const auto* in = static_cast<const double*>(c.a);
      const auto* flag = static_cast<const uint8_t*>(c.b);
      for (size_t j = 0; j < n; ++j) {
        size_t r = row(j);
        double v = in[r];
        if (flag[r] != 0 || std::isnan(v)) {
          out[j] = 0;
          nulls.Set(j);
        } else {
          out[j] = v;
        }
      }
      break;
    }
    case schema::SourceKind::kInt64IfFlag: {
      auto* out = static_cast<int64_t*>(duckdb_vector_get_data(vector));
      const auto* in = static_cast<const int64_t*>(c.a);
      const auto* flag = static_cast<const uint8_t*>(c.b);
      for (size_t j = 0; j < n; ++j) {
        size_t r = row(j);
        if (flag[r] != 0) {
          out[j] = in[r];
        } else {
          out[j] = 0;
          nulls.Set(j);
        }
      }
      break;
    }
    case schema::SourceKind::kId: {
      auto* out = static_cast<int64_t*>(duckdb_vector_get_data(vector));
      const auto* in = static_cast<const uint64_t*>(c.a);
      const auto* other = static_cast<const uint64_t*>(c.b);
      for (size_t j = 0; j < n; ++j) {
        size_t r = row(j);
        out[j] = static_cast<int64_t>(in[r]);
        if (in[r] == 0 && other[r] == 0) nulls.Set(j);
      }
      break;
    }
    case schema::SourceKind::kText:
    case schema::SourceKind::kTextEmptyNull: {
      auto* out = static_cast<duckdb_string_t*>(duckdb_vector_get_data(vector));
      const auto* in = static_cast<const StringColumn*>(c.a);
      bool empty_is_null = c.kind == schema::SourceKind::kTextEmptyNull;
      for (size_t j = 0; j < n; ++j) {
        std::string_view s = in->Get(row(j));
        AssignString(vector, out, j, s);
        if (empty_is_null && s.empty()) nulls.Set(j);
      }
      break;
    }
    case schema::SourceKind::kTextOrElse: {
      auto* out = static_cast<duckdb_string_t*>(duckdb_vector_get_data(vector));
      for (size_t j = 0; j < n; ++j) AssignString(vector, out, j, schema::DerivedText(c, row(j)));
      break;
    }
    case schema::SourceKind::kIsEntry:
    case schema::SourceKind::kAnyText: {
      auto* out = static_cast<int64_t*>(duckdb_vector_get_data(vector));
      for (size_t j = 0; j < n; ++j) out[j] = schema::DerivedInt(c, row(j));
      break;
    }
  }
}

//! A reusable data chunk laid out like one table. Rows are copied column by
//! column from the batch into the chunk, then the chunk into the appender.
class ChunkBuffer {
 public:
  explicit ChunkBuffer(std::span<const schema::Column> columns) : chunk_(TypesOf(columns)) {}

  //! Appends `rows` rows (row indexes from sel when non-null, else 0..rows-1).
  Status Append(duckdb_appender appender, std::string_view table, std::span<const schema::Column> columns, size_t rows,
                const uint32_t* sel) {
    return chunk_.Append(appender, rows, table, [&](size_t begin, size_t n) {
      for (size_t c = 0; c < columns.size(); ++c) FillVector(chunk_.vector(c), columns[c], sel, begin, n);
    });
  }

 private:
  static std::vector<duckdb_type> TypesOf(std::span<const schema::Column> columns) {
    std::vector<duckdb_type> types;
    types.reserve(columns.size());
    for (const schema::Column& c : columns) types.push_back(DuckDbType(c.type));
    return types;
  }

  AppenderChunk chunk_;
};

//! One explicit transaction with the appenders that write into it. Commit()
//! closes (flushes) every appender and commits; destroying an uncommitted
//! Transaction discards its rows. Appenders are flushed into the transaction
//! before ROLLBACK: flushing after it would autocommit them.
class Transaction {
 public:
  explicit Transaction(duckdb_connection conn) : conn_(conn) {}
  ~Transaction() { Abort(); }
  Transaction(const Transaction&) = delete;
  Transaction& operator=(const Transaction&) = delete;

  Status Begin() {
    SL_RETURN_IF_ERROR(Exec(conn_, "BEGIN TRANSACTION"));
    active_ = true;
    return Status::Ok();
  }

  //! An appender on table inside this transaction, owned by the transaction.
  Result<duckdb_appender> OpenAppender(const char* table) {
    duckdb_appender appender = nullptr;
    if (duckdb_appender_create(conn_, nullptr, table, &appender) != DuckDBSuccess) {
      const char* error = appender != nullptr ? duckdb_appender_error(appender) : nullptr;
      std::string message =
          std::string("duckdb appender on ") + table + ": " + (error != nullptr ? error : "unknown error");
      if (appender != nullptr) duckdb_appender_destroy(&appender);
      return Status::IoError(message);
    }
    appenders_.push_back(appender);
    return appender;
  }

  Status Commit() {
    for (duckdb_appender& appender : appenders_) {
      if (duckdb_appender_close(appender) != DuckDBSuccess) {
        const char* error = duckdb_appender_error(appender);
        return Status::IoError(std::string("duckdb append flush: ") + (error != nullptr ? error : "unknown error"));
      }
      duckdb_appender_destroy(&appender);
    }
    appenders_.clear();
    Status s = ExecWithoutSpinning(conn_, "COMMIT");
    if (!s.ok()) return s;  // Abort() rolls back whatever is left
    active_ = false;
    return Status::Ok();
  }

 private:
  void Abort() {
    for (duckdb_appender& appender : appenders_) {
      if (appender != nullptr) duckdb_appender_destroy(&appender);
    }
    appenders_.clear();
    if (active_) {
      QueryResult ignored;  // a failed COMMIT has already ended the transaction
      (void)ignored.Run(conn_, "ROLLBACK");
      active_ = false;
    }
  }

  duckdb_connection conn_;
  std::vector<duckdb_appender> appenders_;
  bool active_ = false;
};

//! Span rollup statements on a writer's connection, inside a transaction
//! the caller opened; rows go through `txn`'s appenders when there is one.
class DuckDbRollupSession final : public rollup::RollupSession {
 public:
  DuckDbRollupSession(duckdb_connection conn, Transaction* txn) : sql_(BorrowDuckDbConnection(conn)), txn_(txn) {}
  Status Query(const std::string& sql, const std::vector<SqlParam>& params, const RowCallback& on_row) override {
    return sql_->Query(sql, params, on_row);
  }
  Status Exec(const std::string& sql, const std::vector<SqlParam>& params) override {
    return sql_->Query(sql, params, [](const RowView&) {});
  }
  Status Append(const char* table, std::span<const schema::Column> columns, size_t rows) override {
    if (txn_ == nullptr) return Status::Internal("duckdb: no appender for " + std::string(table));
    Result<duckdb_appender> appender = txn_->OpenAppender(table);
    if (!appender.ok()) return appender.status();
    SL_RETURN_IF_ERROR(ChunkBuffer(columns).Append(*appender, table, columns, rows, nullptr));
    // Into the transaction now: a fold reads and deletes after it appends.
    if (duckdb_appender_flush(*appender) != DuckDBSuccess) {
      const char* error = duckdb_appender_error(*appender);
      return Status::IoError(std::string("duckdb append flush: ") + (error != nullptr ? error : "unknown error"));
    }
    return Status::Ok();
  }

 private:
  std::unique_ptr<ReadConnection> sql_;
  Transaction* txn_;
};

//! The version check and migrations' view of one connection.
class DuckDbSchemaSession final : public schema::SchemaSession {
 public:
  explicit DuckDbSchemaSession(duckdb_connection conn) : conn_(conn) {}
  Status Begin() override { return Exec("BEGIN TRANSACTION"); }
  Status Commit() override { return Exec("COMMIT"); }
  void Rollback() override {
    QueryResult ignored;
    (void)ignored.Run(conn_, "ROLLBACK");
  }
  Status Exec(const std::string& sql) override { return sightline::Exec(conn_, sql); }
  Status Query(const std::string& sql, const RowCallback& on_row) override {
    QueryResult result;
    Status s = result.Run(conn_, sql);
    if (!s.ok()) return Status::IoError("duckdb: " + sql + ": " + s.message());
    return ForEachDuckDbRow(result.get(), on_row);
  }
  Result<bool> TableExists(const char* table) override {
    bool exists = false;
    SL_RETURN_IF_ERROR(Query(std::string("SELECT 1 FROM duckdb_tables() WHERE database_name = current_database() "
                                         "AND schema_name = 'main' AND table_name = '") +
                                 table + "'",
                             [&](const RowView&) { exists = true; }));
    return exists;
  }
  Result<std::vector<std::string>> ColumnNames(const char* table) override {
    QueryResult result;
    Status s = result.Run(conn_, std::string("SELECT * FROM ") + table + " LIMIT 0");
    if (!s.ok()) return Status::IoError("duckdb: reading " + std::string(table) + ": " + s.message());
    std::vector<std::string> names;
    for (idx_t c = 0; c < duckdb_column_count(result.get()); ++c)
      names.emplace_back(duckdb_column_name(result.get(), c));
    return names;
  }
  const schema::TypeNames& types() const override { return kDuckDbTypes; }

 private:
  duckdb_connection conn_;
};

class DuckDbSink;

//! Lifecycle: Open() creates the tables and loads counters and known series;
//! sinks and ExecuteSql run concurrently; Close() (or the destructor)
//! checkpoints and closes once every sink is gone.
class DuckDbStore final : public TelemetryStore {
 public:
  static Result<std::unique_ptr<TelemetryStore>> Open(const StoreOptions& options);
  ~DuckDbStore() override;

  const char* name() const override { return "duckdb"; }
  Result<std::unique_ptr<SignalSink>> NewSink(Signal signal) override;
  StoreStats Stats() override;
  Result<SqlResult> ExecuteSql(const std::string& sql) override;
  Result<std::unique_ptr<TelemetryReader>> AcquireReader(int64_t wait_ms) override;
  SchemaReport schema_report() const override { return schema_report_; }
  Status Close() override;
  Result<uint64_t> DeleteBefore(Signal signal, const ProjectSet& projects, int64_t before_ns) override;
  Status ExpireRollups(Signal signal, const ProjectSet& projects, int64_t before_ns) override;
  Result<std::optional<int64_t>> OldestTime(Signal signal) override;
  //! Compacts the engine's own indexes, then checkpoints: deleted row
  //! groups' blocks go on the free list, which new row groups reuse (the
  //! file does not shrink; docs/STORAGE.md).
  Status ReclaimSpace() override {
    (void)CompactIndexes(/*only_when_wanted=*/false);
    return Checkpoint(/*only_over_threshold=*/false);
  }
  Result<StoreFootprint> Footprint() override;

 private:
  friend class DuckDbSink;
  DuckDbStore() = default;
  Status Init(const StoreOptions& options);
  //! CHECKPOINT on the maintenance connection while no sink writes (it holds
  //! every signal's write lock: DuckDB refuses a checkpoint beside an open
  //! write transaction). Skipped (OK) when `only_over_threshold` and the WAL
  //! is under checkpoint_threshold; Unavailable, without trying, when the
  //! disk has less free space than the WAL plus a headroom.
  Status Checkpoint(bool only_over_threshold) EXCLUDES(maintenance_mu_);
  //! Moves the index tails into sorted runs (duckdb_indexes.h) on the
  //! maintenance connection; with `only_when_wanted`, only once a tail has
  //! reached its size. Sinks keep appending to the tails meanwhile: the move
  //! is one transaction, which copies and deletes the tail rows it sees, and
  //! rows committed after it began are not among them.
  Status CompactIndexes(bool only_when_wanted) EXCLUDES(maintenance_mu_);
  //! The compactor thread: compacts when a sink finds a tail at its size,
  //! so no writer waits for a sort or a merge of runs (which holding up a
  //! writer cost a third of log ingest).
  void RunCompactor() EXCLUDES(compactor_mu_);
  void WakeCompactor() EXCLUDES(compactor_mu_);
  void StopCompactor() EXCLUDES(compactor_mu_);
  //! OK when the data directory's filesystem has room for a checkpoint of a
  //! WAL of `wal_bytes`.
  Status RoomToCheckpoint(uint64_t wal_bytes) const;
  //! `s`, or Unavailable when it says DuckDB invalidated the instance (which
  //! is then remembered: every later statement fails until a reopen).
  Status Classify(Status s);
  Status LoadCounters() REQUIRES(read_mu_);
  //! The span rollup tables and their state row, if missing (one transaction).
  Status CreateRollups() REQUIRES(read_mu_);
  Status LoadKnownKeys() REQUIRES(read_mu_);
  //! The keys of one keyed table (the `part`-th of `signal`'s).
  Status LoadKnownKeys(Signal signal, size_t part, const schema::KeyedTableDef& table) REQUIRES(read_mu_);
  //! force: close even with sinks open (the destructor; their use is then a bug).
  Status CloseLocked(bool force) REQUIRES(mu_);
  //! The pending metric rollups folded: at close, so the next open has no
  //! dirty minute to rebuild; otherwise when the metric writer has not
  //! committed for StoreOptions::rollup_idle_fold_ms (a bulk load that
  //! stopped reads at full speed again) or not folded for a fold interval.
  Status FoldPendingRollups(bool at_close);
  //! The cutoffs a DeleteBefore(signal, projects, before_ns) deletes up
  //! to, one transaction each, oldest first; the last is before_ns. Each
  //! slice holds at most max_delete_rows_ expired rows, or one of
  //! kDeleteSliceBuckets equal parts of the expired rows' time span when a
  //! part alone holds more. Counted by one read of the expired rows' times.
  Result<std::vector<int64_t>> DeleteSlices(Signal signal, const ProjectSet& projects, int64_t before_ns)
      EXCLUDES(maintenance_mu_);
  //! The rows of one slice (and their rollups, unless those outlive them),
  //! then the index rows that expired with them.
  Result<uint64_t> DeleteSlice(Signal signal, const ProjectSet& projects, int64_t before_ns) EXCLUDES(maintenance_mu_);

  std::string data_dir_;
  std::string db_path_;
  std::string wal_path_;
  uint64_t checkpoint_threshold_bytes_ = 16u << 20;  // StoreOptions::checkpoint_threshold
  SchemaReport schema_report_;                       // set at open
  int64_t rollup_exact_spans_ = 0;                   // StoreOptions::rollup_exact_spans
  int64_t rollup_compaction_interval_ms_ = 0;        // StoreOptions::rollup_compaction_interval_ms
  int64_t rollup_idle_fold_ms_ = 0;                  // StoreOptions::rollup_idle_fold_ms
  bool rollups_outlive_rows_ = false;                // StoreOptions::rollups_outlive_rows
  int64_t max_delete_rows_ = 0;                      // StoreOptions::max_delete_rows

  Mutex mu_;  // lifecycle: db_ and closed_
  duckdb_database db_ GUARDED_BY(mu_) = nullptr;
  bool closed_ GUARDED_BY(mu_) = false;

  Mutex read_mu_;  // the read connection runs one statement at a time
  duckdb_connection read_conn_ GUARDED_BY(read_mu_) = nullptr;

  //! Retention deletes, checkpoints and size queries. Taken after a signal's
  //! KnownKeys::mu, never before.
  Mutex maintenance_mu_;
  duckdb_connection maintenance_conn_ GUARDED_BY(maintenance_mu_) = nullptr;
  std::atomic<bool> invalidated_{false};
  //! Compacted and expired under maintenance_mu_; the sinks only add to its
  //! tails' (atomic) row counts.
  duckdb_index::DuckDbIndexes indexes_;
  Mutex compactor_mu_;
  CondVar compactor_cv_{&compactor_mu_};
  bool compactor_wanted_ GUARDED_BY(compactor_mu_) = false;
  bool compactor_stop_ GUARDED_BY(compactor_mu_) = false;
  std::thread compactor_;

  //! The keys each signal's keyed tables hold (schema::SignalTables). A
  //! sink holds `mu` for its whole write, so two sinks of one signal never
  //! both write a new key.
  struct KnownKeys {
    Mutex mu;
    schema::KeySets keys GUARDED_BY(mu);
    // Metrics only: the rollups of the points committed since the last fold.
    rollup::PendingMetricRollups pending_rollups GUARDED_BY(mu);
  };
  //! The pending metric rollups folded in a transaction of their own on
  //! `conn`: cleared once it has committed, kept (to retry) if not.
  static Status FoldMetricRollups(KnownKeys& known, duckdb_connection conn) REQUIRES(known.mu);
  KnownKeys known_[kSignalCount];

  std::atomic<uint64_t> rows_[kSignalCount] = {0, 0, 0};
  std::atomic<uint64_t> series_count_{0};
  std::atomic<int> open_sinks_{0};
  //! Dashboard queries; created at open, destroyed before the database closes.
  std::unique_ptr<ReadPool> read_pool_;
};

//! One connection and a reusable chunk for each of its signal's tables.
//! Not thread-safe (one writer thread owns it).
class DuckDbSink final : public OneSignalSink<DuckDbSink> {
 public:
  DuckDbSink(DuckDbStore* store, Signal signal, duckdb_connection conn)
      : OneSignalSink(signal), store_(store), conn_(conn) {
    switch (signal) {
      case Signal::kSpans: MakeChunks(SpanBatch{}); break;
      case Signal::kLogs: MakeChunks(LogBatch{}); break;
      case Signal::kMetrics: MakeChunks(MetricBatch{}); break;
    }
    store_->open_sinks_.fetch_add(1);
  }
  ~DuckDbSink() override {
    duckdb_disconnect(&conn_);
    store_->open_sinks_.fetch_sub(1);
  }

  //! A log batch's token index rows, and a span batch's rollup deltas,
  //! found on the decoder that submits it.
  void Prepare(AnyBatch* batch) const override {
    if (LogBatch* logs = std::get_if<LogBatch>(batch)) {
      logs->prepared = std::make_shared<const duckdb_index::LogTokenSet>(*logs);
    } else if (SpanBatch* spans = std::get_if<SpanBatch>(batch)) {
      rollup::PrepareDeltas(spans);
    }
  }

  //! Appends and commits, then checkpoints when the WAL has reached the
  //! threshold (DuckDB's own automatic checkpoint is off). A checkpoint that
  //! cannot run now (no room on the disk, a write in progress) waits for the
  //! next commit or maintenance pass; the rows are committed either way.
  template <typename Batch>
  Status Write(const std::vector<const Batch*>& batches) {
    Status s = store_->Classify(Append(batches));
    if (s.ok()) MaybeCompactRollups();
    if (s.ok() && store_->indexes_.WantsCompaction()) store_->WakeCompactor();
    if (s.ok()) (void)store_->Checkpoint(/*only_over_threshold=*/true);
    return s;
  }

 private:
  //! Folds this signal's rollup deltas (span groups and span exceptions, or
  //! log counts and log exceptions) into the minute and hour tables once
  //! StoreOptions::rollup_compaction_interval_ms has passed since the last
  //! fold. A failed fold changes nothing (its own transaction) and is retried
  //! the next time; reads are right either way, since they add the deltas.
  void MaybeCompactRollups();

  template <typename Batch>
  Status Append(const std::vector<const Batch*>& batches);
  template <typename Batch>
  void MakeChunks(const Batch& empty) {
    for (const schema::KeyedPart& part : schema::KeyedParts(empty)) {
      keyed_chunks_.push_back(std::make_unique<ChunkBuffer>(part.columns));
    }
    main_chunk_ = std::make_unique<ChunkBuffer>(schema::MainColumns(empty));
    if (schema::TablesOf(empty).sparse != nullptr) {
      sparse_chunk_ = std::make_unique<ChunkBuffer>(schema::SparseColumns(empty));
    }
  }
  DuckDbStore* store_;  // not owned; outlives the sink
  duckdb_connection conn_;
  std::vector<std::unique_ptr<ChunkBuffer>> keyed_chunks_;  // one per keyed table; each holds 2,048 rows
  std::unique_ptr<ChunkBuffer> main_chunk_;
  std::unique_ptr<ChunkBuffer> sparse_chunk_;  // when the signal has a sparse table
  std::chrono::steady_clock::time_point last_compaction_ = std::chrono::steady_clock::now();
  duckdb_index::IndexWriter index_writer_;  // the engine's own index rows, in the same transaction
};

void DuckDbSink::MaybeCompactRollups() {
  const auto now = std::chrono::steady_clock::now();
  const bool due = now - last_compaction_ >= std::chrono::milliseconds(store_->rollup_compaction_interval_ms_);
  DuckDbStore::KnownKeys& known = store_->known_[static_cast<int>(signal())];
  if (signal() == Signal::kMetrics) {
    MutexLock lock(&known.mu);
    // Early when the pending metric rollups have grown: their memory, and the
    // minutes an open after a crash rebuilds, stay bounded.
    if (!known.pending_rollups.Full() && !due) return;
    last_compaction_ = now;
    (void)store_->Classify(DuckDbStore::FoldMetricRollups(known, conn_));
    return;
  }
  if (!due) return;
  last_compaction_ = now;
  MutexLock lock(&known.mu);  // beside retention's deletes of the same rows
  Transaction txn(conn_);
  if (!txn.Begin().ok()) return;
  DuckDbRollupSession session(conn_, &txn);
  if (!rollup::CompactSignalRollups(&session, signal()).ok()) return;
  (void)store_->Classify(txn.Commit());
}

Status DuckDbStore::FoldMetricRollups(KnownKeys& known, duckdb_connection conn) {
  Transaction txn(conn);
  SL_RETURN_IF_ERROR(txn.Begin());
  DuckDbRollupSession session(conn, &txn);
  SL_RETURN_IF_ERROR(known.pending_rollups.Fold(&session));
  SL_RETURN_IF_ERROR(txn.Commit());
  known.pending_rollups.Folded();
  return Status::Ok();
}

// One transaction: the keyed rows not stored yet, then every main row, then
// the sparse table's rows.
template <typename Batch>
Status DuckDbSink::Append(const std::vector<const Batch*>& batches) {
  if (batches.empty()) return Status::Ok();
  const schema::SignalTables tables = schema::TablesOf(*batches[0]);
  DuckDbStore::KnownKeys& known = store_->known_[static_cast<int>(signal())];
  MutexLock lock(&known.mu);
  Transaction txn(conn_);
  SL_RETURN_IF_ERROR(txn.Begin());
  Result<duckdb_appender> main = txn.OpenAppender(tables.main);
  if (!main.ok()) return main.status();
  // Opened at the first new key or sparse row: most writes have none.
  std::array<duckdb_appender, schema::kMaxKeyedTables> keyed{};
  duckdb_appender sparse = nullptr;
  schema::KeySets pending;
  uint64_t rows = 0;
  index_writer_.Discard();
  const duckdb_index::IndexWriter::OpenAppender open_index = [&txn](const char* table) {
    return txn.OpenAppender(table);
  };
  for (const Batch* b : batches) {
    Result<schema::BatchWrite<Batch>> w = schema::PlanBatchWrite(*b, known.keys, &pending);
    if (!w.ok()) return w.status();
    for (size_t t = 0; t < tables.keyed.size(); ++t) {
      const std::vector<uint32_t>& new_rows = w->new_keyed_rows[t];
      if (new_rows.empty()) continue;
      if (keyed[t] == nullptr) {
        Result<duckdb_appender> opened = txn.OpenAppender(tables.keyed[t].table);
        if (!opened.ok()) return opened.status();
        keyed[t] = *opened;
      }
      SL_RETURN_IF_ERROR(keyed_chunks_[t]->Append(keyed[t], tables.keyed[t].table, w->columns.keyed[t].columns,
                                                  new_rows.size(), new_rows.data()));
    }
    SL_RETURN_IF_ERROR(main_chunk_->Append(*main, tables.main, w->columns.main, b->rows(), nullptr));
    if (!w->sparse_rows.empty()) {
      if (sparse == nullptr) {
        Result<duckdb_appender> opened = txn.OpenAppender(tables.sparse);
        if (!opened.ok()) return opened.status();
        sparse = *opened;
      }
      SL_RETURN_IF_ERROR(sparse_chunk_->Append(sparse, tables.sparse, w->columns.sparse, w->sparse_rows.size(),
                                               w->sparse_rows.data()));
    }
    SL_RETURN_IF_ERROR(index_writer_.Add(*b, open_index));
    rows += b->rows();
  }
  // The rollups' share of these rows, committed with them.
  DuckDbRollupSession session(conn_, &txn);
  if constexpr (!std::is_same_v<Batch, MetricBatch>) SL_RETURN_IF_ERROR(rollup::AppendDeltas(&session, batches));
  // Metric points keep theirs in memory until the fold; the commit marks
  // only the minutes no commit since the last fold has.
  rollup::PendingMetricRollups::Commit metric_rollups;
  if constexpr (std::is_same_v<Batch, MetricBatch>) {
    SL_RETURN_IF_ERROR(known.pending_rollups.Mark(&session, batches, &metric_rollups));
  }
  SL_RETURN_IF_ERROR(txn.Commit());
  if constexpr (std::is_same_v<Batch, MetricBatch>) known.pending_rollups.Committed(std::move(metric_rollups));
  index_writer_.Written(&store_->indexes_);
  for (size_t t = 0; t < tables.keyed.size(); ++t) known.keys[t].insert(pending[t].begin(), pending[t].end());
  if (signal() == Signal::kMetrics) store_->series_count_.fetch_add(pending[schema::kMetricSeriesPart].size());
  store_->rows_[static_cast<int>(signal())].fetch_add(rows);
  return Status::Ok();
}

Result<std::unique_ptr<TelemetryStore>> DuckDbStore::Open(const StoreOptions& options) {
  std::unique_ptr<DuckDbStore> store(new DuckDbStore());
  SL_RETURN_IF_ERROR(store->Init(options));
  return std::unique_ptr<TelemetryStore>(std::move(store));
}

Status DuckDbStore::Init(const StoreOptions& options) {
  if (options.data_dir.empty()) return Status::InvalidArgument("duckdb: data_dir is empty");
  std::error_code ec;
  std::filesystem::create_directories(options.data_dir, ec);
  if (ec) return Status::IoError("duckdb: cannot create " + options.data_dir + ": " + ec.message());
  data_dir_ = options.data_dir;
  db_path_ = (std::filesystem::path(options.data_dir) / kDatabaseFile).string();
  wal_path_ = (std::filesystem::path(options.data_dir) / kWalFile).string();
  if (!options.checkpoint_threshold.empty()) {
    Result<uint64_t> threshold = ParseByteSize(options.checkpoint_threshold);
    if (!threshold.ok()) {
      return Status::InvalidArgument("duckdb: bad setting checkpoint_threshold=" + options.checkpoint_threshold + ": " +
                                     threshold.status().message());
    }
    checkpoint_threshold_bytes_ = *threshold;
  }
  if (options.max_delete_rows < 1) {
    return Status::InvalidArgument("duckdb: max_delete_rows must be at least 1, not " +
                                   std::to_string(options.max_delete_rows));
  }
  max_delete_rows_ = options.max_delete_rows;

  duckdb_config config = nullptr;
  if (duckdb_create_config(&config) != DuckDBSuccess) return Status::Internal("duckdb: cannot create config");
  std::vector<std::pair<std::string, std::string>> settings;
  const std::string memory_limit = options.memory_limit.empty() ? DefaultDuckDbMemoryLimit() : options.memory_limit;
  if (!memory_limit.empty()) settings.emplace_back("memory_limit", memory_limit);
  if (options.threads > 0) settings.emplace_back("threads", std::to_string(options.threads));
  settings.emplace_back("checkpoint_threshold", kDuckDbAutoCheckpointOff);
  for (const auto& [key, value] : settings) {
    if (duckdb_set_config(config, key.c_str(), value.c_str()) != DuckDBSuccess) {
      duckdb_destroy_config(&config);
      return Status::InvalidArgument("duckdb: bad setting " + key + "=" + value);
    }
  }
  char* error = nullptr;
  MutexLock lock(&mu_);
  duckdb_state opened = duckdb_open_ext(db_path_.c_str(), &db_, config, &error);
  duckdb_destroy_config(&config);
  if (opened != DuckDBSuccess) {
    std::string message = error != nullptr ? error : "unknown error";
    if (error != nullptr) duckdb_free(error);
    db_ = nullptr;
    closed_ = true;
    // Setting values are only checked here (e.g. memory_limit=lots).
    return Status::IoError("duckdb: cannot open " + db_path_ + ": " + message);
  }

  MutexLock read_lock(&read_mu_);
  if (duckdb_connect(db_, &read_conn_) != DuckDBSuccess) return Status::IoError("duckdb: cannot connect");
  DuckDbSchemaSession session(read_conn_);
  Result<SchemaReport> schema = schema::OpenSchema(&session, "duckdb", options);
  if (!schema.ok()) return schema.status();
  schema_report_ = std::move(schema).value();
  SL_RETURN_IF_ERROR(CreateRollups());
  rollup_exact_spans_ = options.rollup_exact_spans;
  rollup_compaction_interval_ms_ = options.rollup_compaction_interval_ms;
  rollup_idle_fold_ms_ = options.rollup_idle_fold_ms;
  rollups_outlive_rows_ = options.rollups_outlive_rows;
  SL_RETURN_IF_ERROR(LoadCounters());
  SL_RETURN_IF_ERROR(LoadKnownKeys());
  {
    MutexLock maintenance_lock(&maintenance_mu_);
    if (duckdb_connect(db_, &maintenance_conn_) != DuckDBSuccess) return Status::IoError("duckdb: cannot connect");
    SL_RETURN_IF_ERROR(indexes_.Open(maintenance_conn_));
  }
  std::vector<std::unique_ptr<ReadConnection>> readers;
  for (int i = 0; i < std::max(1, options.read_connections); ++i) {
    duckdb_connection conn = nullptr;
    if (duckdb_connect(db_, &conn) != DuckDBSuccess) return Status::IoError("duckdb: cannot connect a reader");
    readers.push_back(NewDuckDbReader(conn));
  }
  read_pool_ = std::make_unique<ReadPool>(std::move(readers));
  compactor_ = std::thread([this] {
    NameThisThread("sl-compact");
    RunCompactor();
  });
  return Status::Ok();
}

void DuckDbStore::RunCompactor() {
  // Also the idle fold: metric rollups a writer left pending when its
  // commits stopped are folded about a second later, not at its next commit.
  const auto idle = std::chrono::milliseconds(std::clamp<int64_t>(rollup_idle_fold_ms_, 100, 1000));
  for (;;) {
    bool wanted = false;
    {
      MutexLock lock(&compactor_mu_);
      const auto deadline = std::chrono::steady_clock::now() + idle;
      while (!compactor_wanted_ && !compactor_stop_) {
        if (!compactor_cv_.WaitUntil(&compactor_mu_, deadline)) break;
      }
      if (compactor_stop_) return;
      wanted = compactor_wanted_;
      compactor_wanted_ = false;
    }
    if (wanted)
      (void)CompactIndexes(/*only_when_wanted=*/true);  // a failure waits for the next wake or maintenance pass
    (void)Classify(FoldPendingRollups(/*at_close=*/false));
  }
}

void DuckDbStore::WakeCompactor() {
  MutexLock lock(&compactor_mu_);
  compactor_wanted_ = true;
  compactor_cv_.Signal();
}

void DuckDbStore::StopCompactor() {
  {
    MutexLock lock(&compactor_mu_);
    compactor_stop_ = true;
    compactor_cv_.Signal();
  }
  if (compactor_.joinable()) compactor_.join();
}

Result<std::unique_ptr<TelemetryReader>> DuckDbStore::AcquireReader(int64_t wait_ms) {
  if (read_pool_ == nullptr) return Status::Unavailable("duckdb: store is closed");
  auto conn = read_pool_->Acquire(wait_ms);
  if (!conn.ok()) return conn.status();
  return NewDuckDbTelemetryReader(std::move(conn.value()), rollup_exact_spans_);
}

Status DuckDbStore::CreateRollups() {
  Transaction txn(read_conn_);
  SL_RETURN_IF_ERROR(txn.Begin());
  DuckDbRollupSession session(read_conn_, &txn);
  SL_RETURN_IF_ERROR(rollup::CreateRollups(&session, kDuckDbTypes));
  SL_RETURN_IF_ERROR(rollup::FoldLegacyMetricDeltas(&session));
  // The minutes a process that stopped before its fold left dirty.
  int64_t rebuilt = 0;
  Status s = rollup::RebuildDirtyMetricMinutes(&session, &rebuilt);
  if (!s.ok()) return Status::IoError("duckdb: rebuilding the metric rollups of an unclean stop: " + s.message());
  return txn.Commit();
}

Status DuckDbStore::LoadCounters() {
  QueryResult result;
  Status s = result.Run(read_conn_,
                        "SELECT (SELECT COUNT(*) FROM spans), (SELECT COUNT(*) FROM logs), "
                        "(SELECT COUNT(*) FROM metric_points), (SELECT COUNT(*) FROM metric_series)");
  if (!s.ok()) return Status::IoError("duckdb: counting rows: " + s.message());
  return ForEachDuckDbRow(result.get(), [this](const RowView& r) {
    for (int i = 0; i < kSignalCount; ++i) rows_[i].store(static_cast<uint64_t>(r.GetInt(i)));
    series_count_.store(static_cast<uint64_t>(r.GetInt(3)));
  });
}

Status DuckDbStore::LoadKnownKeys() {
  for (Signal signal : {Signal::kSpans, Signal::kLogs, Signal::kMetrics}) {
    const schema::SignalTables tables = schema::TablesOf(signal);
    for (size_t t = 0; t < tables.keyed.size(); ++t) {
      SL_RETURN_IF_ERROR(LoadKnownKeys(signal, t, tables.keyed[t]));
    }
  }
  return Status::Ok();
}

Status DuckDbStore::LoadKnownKeys(Signal signal, size_t part, const schema::KeyedTableDef& table) {
  QueryResult result;
  std::string sql = std::string("SELECT project_id, ") + table.key_column + " FROM " + table.table;
  Status s = result.Run(read_conn_, sql);
  if (!s.ok()) return Status::IoError("duckdb: " + sql + ": " + s.message());
  KnownKeys& known = known_[static_cast<int>(signal)];
  MutexLock lock(&known.mu);
  while (true) {
    duckdb_data_chunk chunk = duckdb_fetch_chunk(*result.get());
    if (chunk == nullptr) break;
    size_t n = duckdb_data_chunk_get_size(chunk);
    duckdb_vector projects = duckdb_data_chunk_get_vector(chunk, 0);
    duckdb_vector keys = duckdb_data_chunk_get_vector(chunk, 1);
    const auto* project_ids = static_cast<const int64_t*>(duckdb_vector_get_data(projects));
    const auto* key_values = static_cast<const int64_t*>(duckdb_vector_get_data(keys));
    uint64_t* project_valid = duckdb_vector_get_validity(projects);
    uint64_t* key_valid = duckdb_vector_get_validity(keys);
    for (size_t i = 0; i < n; ++i) {
      if ((project_valid != nullptr && !duckdb_validity_row_is_valid(project_valid, i)) ||
          (key_valid != nullptr && !duckdb_validity_row_is_valid(key_valid, i))) {
        continue;
      }
      known.keys[part].insert({project_ids[i], key_values[i]});
    }
    duckdb_destroy_data_chunk(&chunk);
  }
  return Status::Ok();
}

DuckDbStore::~DuckDbStore() {
  MutexLock lock(&mu_);
  (void)CloseLocked(/*force=*/true);
}

Result<std::unique_ptr<SignalSink>> DuckDbStore::NewSink(Signal signal) {
  MutexLock lock(&mu_);
  if (closed_) return Status::Internal("duckdb: store is closed");
  duckdb_connection conn = nullptr;
  if (duckdb_connect(db_, &conn) != DuckDBSuccess) return Status::IoError("duckdb: cannot connect");
  return std::unique_ptr<SignalSink>(new DuckDbSink(this, signal, conn));
}

StoreStats DuckDbStore::Stats() {
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

Result<SqlResult> DuckDbStore::ExecuteSql(const std::string& sql) {
  MutexLock lock(&read_mu_);
  if (read_conn_ == nullptr) return Status::Internal("duckdb: store is closed");
  SqlResult out;
  QueryResult wrapped, direct;
  duckdb_result* result = nullptr;
  std::optional<std::string> as_text = TextQueryOf(read_conn_, sql, &out.columns);
  if (as_text && wrapped.Run(read_conn_, *as_text).ok()) {
    result = wrapped.get();
  } else {
    // Not one query, or the wrapper does not bind: the statement as given,
    // its values converted by the row reader.
    SL_RETURN_IF_ERROR(direct.Run(read_conn_, sql));
    result = direct.get();
    out.columns.clear();
    for (idx_t c = 0; c < duckdb_column_count(result); ++c) {
      const char* name = duckdb_column_name(result, c);
      out.columns.emplace_back(name != nullptr ? name : "");
    }
  }
  const size_t columns = out.columns.size();
  SL_RETURN_IF_ERROR(ForEachDuckDbRow(result, [&](const RowView& r) {
    std::vector<std::optional<std::string>> row;
    row.reserve(columns);
    for (size_t c = 0; c < columns; ++c) {
      int col = static_cast<int>(c);
      row.push_back(r.IsNull(col) ? std::nullopt : std::optional<std::string>(r.GetString(col)));
    }
    out.rows.push_back(std::move(row));
  }));
  return out;
}

Status DuckDbStore::Classify(Status s) {
  if (s.ok() || !IsFatal(s)) return s;
  invalidated_.store(true);
  return Status::Unavailable("duckdb: the database stopped after a fatal error and must be reopened: " + s.message());
}

Status DuckDbStore::RoomToCheckpoint(uint64_t wal_bytes) const {
  Result<DiskSpace> space = GetDiskSpace(data_dir_);
  if (!space.ok()) return Status::Unavailable("duckdb: checkpoint deferred: " + space.status().message());
  const uint64_t needed = wal_bytes + kCheckpointHeadroomBytes;
  if (space->available_bytes < needed) {
    return Status::Unavailable("duckdb: checkpoint deferred: " + std::to_string(space->available_bytes) +
                               " bytes free in " + data_dir_ + ", a checkpoint of a " + std::to_string(wal_bytes) +
                               "-byte WAL needs " + std::to_string(needed));
  }
  return Status::Ok();
}

Status DuckDbStore::Checkpoint(bool only_over_threshold) {
  if (only_over_threshold && FileSize(wal_path_) < checkpoint_threshold_bytes_) return Status::Ok();
  if (invalidated_.load()) return Status::Unavailable("duckdb: the database must be reopened");
  // Every signal's write lock, in signal order. (In a loop: clang's
  // thread-safety analysis cannot tell the array's mutexes apart.)
  std::array<std::optional<MutexLock>, kSignalCount> writes;
  for (int s = 0; s < kSignalCount; ++s) writes[s].emplace(&known_[s].mu);
  const uint64_t wal_bytes = FileSize(wal_path_);
  if (only_over_threshold && wal_bytes < checkpoint_threshold_bytes_) return Status::Ok();  // another sink did it
  SL_RETURN_IF_ERROR(RoomToCheckpoint(wal_bytes));
  MutexLock lock(&maintenance_mu_);
  if (maintenance_conn_ == nullptr) return Status::Unavailable("duckdb: store is closed");
  return Classify(ExecWithoutSpinning(maintenance_conn_, "CHECKPOINT"));
}

Status DuckDbStore::CompactIndexes(bool only_when_wanted) {
  if (only_when_wanted && !indexes_.WantsCompaction()) return Status::Ok();
  if (invalidated_.load()) return Status::Unavailable("duckdb: the database must be reopened");
  MutexLock lock(&maintenance_mu_);
  if (maintenance_conn_ == nullptr) return Status::Unavailable("duckdb: store is closed");
  return Classify(indexes_.Compact(maintenance_conn_));
}

Status DuckDbStore::ExpireRollups(Signal signal, const ProjectSet& projects, int64_t before_ns) {
  if (!rollups_outlive_rows_ || (!projects.all_but && projects.ids.empty())) return Status::Ok();
  KnownKeys& known = known_[static_cast<int>(signal)];
  MutexLock write(&known.mu);  // beside the writer's folds of the same tables
  MutexLock lock(&maintenance_mu_);
  if (maintenance_conn_ == nullptr) return Status::Unavailable("duckdb: store is closed");
  Transaction txn(maintenance_conn_);
  SL_RETURN_IF_ERROR(Classify(txn.Begin()));
  DuckDbRollupSession session(maintenance_conn_, &txn);
  Status expired = known.pending_rollups.Fold(&session);
  if (expired.ok()) {
    expired = rollup::ExpireSignalRollups(&session, signal, sql::ProjectFilterSql(projects), before_ns, true);
  }
  if (!expired.ok()) return Classify(Status::IoError("duckdb: expiring rollups: " + expired.message()));
  SL_RETURN_IF_ERROR(Classify(txn.Commit()));
  known.pending_rollups.Folded();
  return Status::Ok();
}

Result<uint64_t> DuckDbStore::DeleteBefore(Signal signal, const ProjectSet& projects, int64_t before_ns) {
  if (!projects.all_but && projects.ids.empty()) return uint64_t{0};
  Result<std::vector<int64_t>> slices = DeleteSlices(signal, projects, before_ns);
  if (!slices.ok()) return slices.status();
  uint64_t deleted = 0, last = 0;
  for (int64_t slice_before : *slices) {
    // The previous slice's delete bookkeeping goes with this checkpoint
    // (docs/STORAGE.md "Retention"); the last one's with the pass's
    // ReclaimSpace. The sinks write between slices.
    if (last > 0) SL_RETURN_IF_ERROR(Checkpoint(/*only_over_threshold=*/false));
    Result<uint64_t> slice = DeleteSlice(signal, projects, slice_before);
    if (!slice.ok()) return slice.status();
    last = *slice;
    deleted += last;
  }
  return deleted;
}

Result<std::vector<int64_t>> DuckDbStore::DeleteSlices(Signal signal, const ProjectSet& projects, int64_t before_ns) {
  const std::string age = sql::AgeTimeSql(signal);
  const std::string from =
      std::string(" FROM ") + sql::MainTable(signal) + " WHERE " + sql::ExpiredRowsSql(signal, projects, before_ns);
  MutexLock lock(&maintenance_mu_);
  if (maintenance_conn_ == nullptr) return Status::Unavailable("duckdb: store is closed");
  duckdb_connection conn = maintenance_conn_;  // the lambda runs under the lock, unseen by the analysis
  auto query = [&](const std::string& sql, const std::function<void(const RowView&)>& row) -> Status {
    QueryResult result;
    Status s = result.Run(conn, sql);
    if (!s.ok()) return Classify(Status::IoError("duckdb: " + sql + ": " + s.message()));
    return ForEachDuckDbRow(result.get(), row);
  };
  int64_t expired = 0, oldest = before_ns;
  SL_RETURN_IF_ERROR(query("SELECT count(*), min(" + age + ")" + from, [&](const RowView& r) {
    expired = r.GetInt(0);
    if (!r.IsNull(1)) oldest = r.GetInt(1);
  }));
  std::vector<int64_t> slices;
  if (expired > max_delete_rows_ && oldest < before_ns) {
    const int64_t width = std::max<int64_t>(1, (before_ns - oldest) / kDeleteSliceBuckets + 1);
    const std::string part = "(" + age + " - " + std::to_string(oldest) + ") // " + std::to_string(width);
    int64_t rows = 0;
    SL_RETURN_IF_ERROR(
        query("SELECT " + part + " AS part, count(*)" + from + " GROUP BY part ORDER BY part", [&](const RowView& r) {
          const int64_t n = r.GetInt(1);
          if (rows > 0 && rows + n > max_delete_rows_) {
            slices.push_back(oldest + r.GetInt(0) * width);
            rows = 0;
          }
          rows += n;
        }));
  }
  slices.push_back(before_ns);
  return slices;
}

Result<uint64_t> DuckDbStore::DeleteSlice(Signal signal, const ProjectSet& projects, int64_t before_ns) {
  // The signal's write lock: a checkpoint must not find this delete's
  // transaction open, and the row counter moves with the commit.
  KnownKeys& known = known_[static_cast<int>(signal)];
  MutexLock write(&known.mu);
  MutexLock lock(&maintenance_mu_);
  if (maintenance_conn_ == nullptr) return Status::Unavailable("duckdb: store is closed");
  const std::string sql = std::string("DELETE FROM ") + sql::MainTable(signal) + " WHERE " +
                          sql::ExpiredRowsSql(signal, projects, before_ns);
  // The rollups give up the same rows in the same transaction, unless they
  // outlive them (ExpireRollups drops them later).
  Transaction txn(maintenance_conn_);
  SL_RETURN_IF_ERROR(Classify(txn.Begin()));
  if (!rollups_outlive_rows_) {
    DuckDbRollupSession session(maintenance_conn_, &txn);
    Status expired = known.pending_rollups.Fold(&session);
    if (expired.ok()) {
      expired = rollup::ExpireSignalRollups(&session, signal, sql::ProjectFilterSql(projects), before_ns, false);
    }
    if (!expired.ok()) return Classify(Status::IoError("duckdb: expiring rollups: " + expired.message()));
  }
  QueryResult result;
  Status s = result.Run(maintenance_conn_, sql);
  if (!s.ok()) return Classify(Status::IoError("duckdb: " + sql + ": " + s.message()));
  const uint64_t deleted = duckdb_rows_changed(result.get());
  // The sparse table's rows go with their records.
  if (const char* sparse = schema::TablesOf(signal).sparse; sparse != nullptr) {
    const std::string sparse_sql =
        std::string("DELETE FROM ") + sparse + " WHERE " + sql::ExpiredRowsSql(signal, projects, before_ns);
    QueryResult sparse_result;
    s = sparse_result.Run(maintenance_conn_, sparse_sql);
    if (!s.ok()) return Classify(Status::IoError("duckdb: " + sparse_sql + ": " + s.message()));
  }
  SL_RETURN_IF_ERROR(Classify(txn.Commit()));
  if (!rollups_outlive_rows_) known.pending_rollups.Folded();
  rows_[static_cast<int>(signal)].fetch_sub(deleted);
  // After the rows: an index row outliving its rows only widens a lookup.
  // Only when rows went: an index row expires with the last of its rows, and
  // its lookup tables are sorted by key, not time, so this reads all of them
  // (most passes expire nothing: their cutoff moves once an hour).
  if (deleted > 0) SL_RETURN_IF_ERROR(Classify(indexes_.Expire(maintenance_conn_, signal, projects, before_ns)));
  return deleted;
}

Result<std::optional<int64_t>> DuckDbStore::OldestTime(Signal signal) {
  MutexLock lock(&maintenance_mu_);
  if (maintenance_conn_ == nullptr) return Status::Unavailable("duckdb: store is closed");
  const std::string sql = std::string("SELECT min(") + sql::AgeTimeSql(signal) + ") FROM " + sql::MainTable(signal);
  QueryResult result;
  Status s = result.Run(maintenance_conn_, sql);
  if (!s.ok()) return Classify(Status::IoError("duckdb: " + sql + ": " + s.message()));
  std::optional<int64_t> oldest;
  SL_RETURN_IF_ERROR(ForEachDuckDbRow(result.get(), [&](const RowView& r) {
    if (!r.IsNull(0)) oldest = r.GetInt(0);
  }));
  return oldest;
}

Result<StoreFootprint> DuckDbStore::Footprint() {
  MutexLock lock(&maintenance_mu_);
  if (maintenance_conn_ == nullptr) return Status::Unavailable("duckdb: store is closed");
  const char* sql =
      "SELECT block_size, free_blocks FROM pragma_database_size() WHERE database_name = current_database()";
  QueryResult result;
  Status s = result.Run(maintenance_conn_, sql);
  if (!s.ok()) return Classify(Status::IoError(std::string("duckdb: ") + sql + ": " + s.message()));
  StoreFootprint f;
  SL_RETURN_IF_ERROR(ForEachDuckDbRow(result.get(), [&](const RowView& r) {
    f.free_bytes = static_cast<uint64_t>(r.GetInt(0)) * static_cast<uint64_t>(r.GetInt(1));
  }));
  f.database_bytes = FileSize(db_path_);
  f.wal_bytes = FileSize(wal_path_);
  return f;
}

Status DuckDbStore::Close() {
  MutexLock lock(&mu_);
  return CloseLocked(/*force=*/false);
}

Status DuckDbStore::FoldPendingRollups(bool at_close) {
  KnownKeys& known = known_[static_cast<int>(Signal::kMetrics)];
  MutexLock write(&known.mu);
  if (known.pending_rollups.empty()) return Status::Ok();
  const auto now = std::chrono::steady_clock::now();
  if (!at_close && now - known.pending_rollups.committed_at() < std::chrono::milliseconds(rollup_idle_fold_ms_) &&
      now - known.pending_rollups.folded_at() < std::chrono::milliseconds(rollup_compaction_interval_ms_)) {
    return Status::Ok();
  }
  MutexLock lock(&maintenance_mu_);
  if (maintenance_conn_ == nullptr) return Status::Ok();
  return FoldMetricRollups(known, maintenance_conn_);
}

Status DuckDbStore::CloseLocked(bool force) {
  if (closed_) return Status::Ok();
  int sinks = open_sinks_.load();
  if (sinks != 0 && !force) {
    return Status::Internal("duckdb: Close with " + std::to_string(sinks) + " sinks still open");
  }
  StopCompactor();
  read_pool_.reset();  // callers have returned every lease (the server stops queries first)
  // A fold that fails leaves the minutes dirty: the next open rebuilds them.
  if (db_ != nullptr && !invalidated_.load()) (void)Classify(FoldPendingRollups(/*at_close=*/true));
  // Folds the WAL into the database file so the next open replays nothing,
  // when the disk has room; otherwise the WAL stays, whole, for the next
  // open, and DuckDB's own checkpoint at shutdown is turned off so it cannot
  // attempt what was judged unsafe.
  Status status;
  if (db_ != nullptr) {
    status = Checkpoint(/*only_over_threshold=*/false);
    if (status.code() == StatusCode::kUnavailable && !invalidated_.load()) status = Status::Ok();
  }
  closed_ = true;
  {
    MutexLock maintenance_lock(&maintenance_mu_);
    if (maintenance_conn_ != nullptr) {
      if (FileSize(wal_path_) > 0) (void)Exec(maintenance_conn_, "PRAGMA disable_checkpoint_on_shutdown");
      duckdb_disconnect(&maintenance_conn_);
      maintenance_conn_ = nullptr;
    }
  }
  {
    MutexLock read_lock(&read_mu_);
    if (read_conn_ != nullptr) {
      duckdb_disconnect(&read_conn_);
      read_conn_ = nullptr;
    }
  }
  if (db_ != nullptr) duckdb_close(&db_);
  db_ = nullptr;
  return status;
}

}  // namespace

Result<std::unique_ptr<TelemetryStore>> OpenDuckDbStore(const StoreOptions& options) {
  return DuckDbStore::Open(options);
}

}  // namespace sightline
