#include "bench/raw_engine.h"

#include <duckdb.h>
#include <libdeflate.h>
#include <sqlite3.h>

#include <algorithm>
#include <cassert>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <map>
#include <thread>

#include "bench/http_load.h"
#include "bench/server_process.h"
#include "common/memory_size.h"
#include "common/mutex.h"
#include "common/sqlite_pragmas.h"

namespace sightline::bench {

// ---- rows ------------------------------------------------------------------------

RawRows::RawRows(const RawTable& table) : table_(&table), columns_(table.columns.size()) {}

RawRows::Column& RawRows::Next(RawType expected) {
  assert(next_ < columns_.size() && table_->columns[next_].type == expected);
  (void)expected;
  Column& c = columns_[next_++];
  c.nulls.push_back(0);
  return c;
}

void RawRows::Int(int64_t v) { Next(RawType::kInt64).ints.push_back(v); }
void RawRows::Double(double v) { Next(RawType::kDouble).doubles.push_back(v); }

void RawRows::Text(std::string_view v) {
  Column& c = Next(RawType::kText);
  c.text.append(v);
  c.text_ends.push_back(static_cast<uint32_t>(c.text.size()));
}

void RawRows::Null() {
  Column& c = columns_[next_];
  switch (table_->columns[next_].type) {
    case RawType::kInt64: Int(0); break;
    case RawType::kDouble: Double(0); break;
    case RawType::kText: Text(""); break;
  }
  c.nulls.back() = 1;
}

void RawRows::EndRow() {
  assert(next_ == columns_.size());
  next_ = 0;
  ++rows_;
}

void RawRows::Clear() {
  for (Column& c : columns_) {
    c.ints.clear();
    c.doubles.clear();
    c.text.clear();
    c.text_ends.clear();
    c.nulls.clear();
  }
  next_ = 0;
  rows_ = 0;
}

std::string_view RawRows::TextAt(size_t column, size_t row) const {
  const Column& c = columns_[column];
  const uint32_t begin = row == 0 ? 0 : c.text_ends[row - 1];
  return std::string_view(c.text.data() + begin, c.text_ends[row] - begin);
}

namespace {

std::string CreateTableSql(const RawTable& table, const char* int64, const char* float64, const char* text) {
  std::string sql = std::string("CREATE TABLE ") + table.name + " (";
  for (size_t i = 0; i < table.columns.size(); ++i) {
    const RawColumn& c = table.columns[i];
    sql += std::string(i > 0 ? ", " : "") + c.name + " " +
           (c.type == RawType::kInt64    ? int64
            : c.type == RawType::kDouble ? float64
                                         : text);
  }
  return sql + ")";
}

// ---- DuckDB ------------------------------------------------------------------------

Status DuckDbExec(duckdb_connection conn, const std::string& sql) {
  duckdb_result result;
  const bool ok = duckdb_query(conn, sql.c_str(), &result) == DuckDBSuccess;
  std::string error = ok ? "" : (duckdb_result_error(&result) ? duckdb_result_error(&result) : "unknown error");
  duckdb_destroy_result(&result);
  return ok ? Status::Ok() : Status::IoError("duckdb: " + sql + ": " + error);
}

//! Runs one statement through DuckDB's pending-result API, sleeping 50 us
//! whenever no task is left for this thread. duckdb_query instead spins while
//! DuckDB's workers run a COMMIT's WAL and checkpoint tasks, a core share a
//! two-core box notices; the bare engine should not pay for that either.
Status DuckDbExecWithoutSpinning(duckdb_connection conn, const char* sql) {
  duckdb_prepared_statement prepared = nullptr;
  if (duckdb_prepare(conn, sql, &prepared) != DuckDBSuccess) {
    std::string error = duckdb_prepare_error(prepared) ? duckdb_prepare_error(prepared) : "unknown error";
    duckdb_destroy_prepare(&prepared);
    return Status::IoError(std::string("duckdb: ") + sql + ": " + error);
  }
  duckdb_pending_result pending = nullptr;
  const duckdb_state started = duckdb_pending_prepared(prepared, &pending);
  duckdb_destroy_prepare(&prepared);
  std::string error;
  if (started != DuckDBSuccess) {
    error = pending != nullptr && duckdb_pending_error(pending) ? duckdb_pending_error(pending) : "unknown error";
  } else {
    for (;;) {
      const duckdb_pending_state state = duckdb_pending_execute_task(pending);
      if (state == DUCKDB_PENDING_RESULT_READY) break;
      if (state == DUCKDB_PENDING_ERROR) {
        error = duckdb_pending_error(pending) ? duckdb_pending_error(pending) : "unknown error";
        break;
      }
      if (state == DUCKDB_PENDING_NO_TASKS_AVAILABLE) std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
    if (error.empty()) {
      duckdb_result result;
      if (duckdb_execute_pending(pending, &result) != DuckDBSuccess) {
        error = duckdb_result_error(&result) ? duckdb_result_error(&result) : "unknown error";
      }
      duckdb_destroy_result(&result);
    }
  }
  duckdb_destroy_pending(&pending);
  return error.empty() ? Status::Ok() : Status::IoError(std::string("duckdb: ") + sql + ": " + error);
}

duckdb_type DuckDbType(RawType t) {
  switch (t) {
    case RawType::kInt64: return DUCKDB_TYPE_BIGINT;
    case RawType::kDouble: return DUCKDB_TYPE_DOUBLE;
    case RawType::kText: return DUCKDB_TYPE_VARCHAR;
  }
  return DUCKDB_TYPE_VARCHAR;
}

//! A data chunk laid out like one table, reused for every 2,048 rows.
class DuckDbChunk {
 public:
  explicit DuckDbChunk(const RawTable& table) {
    std::vector<duckdb_logical_type> types;
    for (const RawColumn& c : table.columns) types.push_back(duckdb_create_logical_type(DuckDbType(c.type)));
    chunk_ = duckdb_create_data_chunk(types.data(), types.size());
    for (duckdb_logical_type& t : types) duckdb_destroy_logical_type(&t);
  }
  ~DuckDbChunk() { duckdb_destroy_data_chunk(&chunk_); }
  DuckDbChunk(const DuckDbChunk&) = delete;
  DuckDbChunk& operator=(const DuckDbChunk&) = delete;

  Status Append(duckdb_appender appender, const RawRows& rows) {
    const size_t capacity = duckdb_vector_size();
    const auto& columns = rows.table().columns;
    for (size_t begin = 0; begin < rows.rows(); begin += capacity) {
      const size_t n = std::min(capacity, rows.rows() - begin);
      duckdb_data_chunk_reset(chunk_);
      for (size_t c = 0; c < columns.size(); ++c) Fill(duckdb_data_chunk_get_vector(chunk_, c), rows, c, begin, n);
      duckdb_data_chunk_set_size(chunk_, n);
      if (duckdb_append_data_chunk(appender, chunk_) != DuckDBSuccess) {
        const char* error = duckdb_appender_error(appender);
        return Status::IoError(std::string("duckdb append: ") + (error != nullptr ? error : "unknown error"));
      }
    }
    return Status::Ok();
  }

 private:
  static void Fill(duckdb_vector vector, const RawRows& rows, size_t c, size_t begin, size_t n) {
    switch (rows.table().columns[c].type) {
      case RawType::kInt64: {
        auto* out = static_cast<int64_t*>(duckdb_vector_get_data(vector));
        for (size_t j = 0; j < n; ++j) out[j] = rows.IntAt(c, begin + j);
        break;
      }
      case RawType::kDouble: {
        auto* out = static_cast<double*>(duckdb_vector_get_data(vector));
        for (size_t j = 0; j < n; ++j) out[j] = rows.DoubleAt(c, begin + j);
        break;
      }
      case RawType::kText:
        for (size_t j = 0; j < n; ++j) {
          std::string_view s = rows.TextAt(c, begin + j);
          duckdb_vector_assign_string_element_len(vector, j, s.data(), s.size());
        }
        break;
    }
    // Every row's validity is written: a reset chunk need not have cleared it.
    uint64_t* validity = nullptr;
    for (size_t j = 0; j < n; ++j) {
      if (!rows.IsNull(c, begin + j)) continue;
      if (validity == nullptr) {
        duckdb_vector_ensure_validity_writable(vector);
        validity = duckdb_vector_get_validity(vector);
        for (size_t k = 0; k < n; ++k) duckdb_validity_set_row_valid(validity, k);
      }
      duckdb_validity_set_row_invalid(validity, j);
    }
    if (validity == nullptr && (validity = duckdb_vector_get_validity(vector)) != nullptr) {
      for (size_t k = 0; k < n; ++k) duckdb_validity_set_row_valid(validity, k);
    }
  }

  duckdb_data_chunk chunk_ = nullptr;
};

class DuckDbWriter final : public RawWriter {
 public:
  explicit DuckDbWriter(duckdb_connection conn) : conn_(conn) {}
  ~DuckDbWriter() override { duckdb_disconnect(&conn_); }

  Status Append(std::span<const RawRows* const> parts) override {
    SL_RETURN_IF_ERROR(DuckDbExec(conn_, "BEGIN TRANSACTION"));
    Status st = AppendParts(parts);
    if (st.ok()) return DuckDbExecWithoutSpinning(conn_, "COMMIT");
    (void)DuckDbExec(conn_, "ROLLBACK");
    return st;
  }

 private:
  Status AppendParts(std::span<const RawRows* const> parts) {
    for (const RawRows* rows : parts) {
      if (rows->rows() == 0) continue;
      const RawTable& table = rows->table();
      auto& chunk = chunks_[table.name];
      if (!chunk) chunk = std::make_unique<DuckDbChunk>(table);
      duckdb_appender appender = nullptr;
      if (duckdb_appender_create(conn_, nullptr, table.name, &appender) != DuckDBSuccess) {
        if (appender != nullptr) duckdb_appender_destroy(&appender);
        return Status::IoError(std::string("duckdb: cannot append to ") + table.name);
      }
      Status st = chunk->Append(appender, *rows);
      // Closing flushes the appender's rows into the open transaction.
      if (st.ok() && duckdb_appender_close(appender) != DuckDBSuccess) {
        const char* error = duckdb_appender_error(appender);
        st = Status::IoError(std::string("duckdb append flush: ") + (error != nullptr ? error : "unknown error"));
      }
      duckdb_appender_destroy(&appender);
      SL_RETURN_IF_ERROR(st);
    }
    return Status::Ok();
  }

  duckdb_connection conn_;
  std::map<std::string, std::unique_ptr<DuckDbChunk>> chunks_;
};

class DuckDbEngine final : public RawEngine {
 public:
  static Result<std::unique_ptr<RawEngine>> Open(const RawEngineOptions& o, std::span<const RawTable> tables) {
    std::unique_ptr<DuckDbEngine> engine(new DuckDbEngine());
    duckdb_config config = nullptr;
    if (duckdb_create_config(&config) != DuckDBSuccess) return Status::Internal("duckdb: cannot create a config");
    std::vector<std::pair<std::string, std::string>> settings;
    const std::string memory_limit = o.duckdb_memory_limit.empty() ? DefaultDuckDbMemoryLimit() : o.duckdb_memory_limit;
    if (!memory_limit.empty()) settings.emplace_back("memory_limit", memory_limit);
    if (!o.duckdb_checkpoint_threshold.empty()) {
      settings.emplace_back("checkpoint_threshold", o.duckdb_checkpoint_threshold);
    }
    if (o.duckdb_threads > 0) settings.emplace_back("threads", std::to_string(o.duckdb_threads));
    for (const auto& [key, value] : settings) {
      if (duckdb_set_config(config, key.c_str(), value.c_str()) != DuckDBSuccess) {
        duckdb_destroy_config(&config);
        return Status::InvalidArgument("duckdb: bad setting " + key + "=" + value);
      }
    }
    const std::string path = o.data_dir + "/raw.duckdb";
    char* error = nullptr;
    const duckdb_state opened = duckdb_open_ext(path.c_str(), &engine->db_, config, &error);
    duckdb_destroy_config(&config);
    if (opened != DuckDBSuccess) {
      std::string message = error != nullptr ? error : "unknown error";
      if (error != nullptr) duckdb_free(error);
      engine->db_ = nullptr;
      return Status::IoError("duckdb: cannot open " + path + ": " + message);
    }
    duckdb_connection conn = nullptr;
    if (duckdb_connect(engine->db_, &conn) != DuckDBSuccess) return Status::IoError("duckdb: cannot connect");
    Status created;
    for (const RawTable& t : tables) {
      if (created.ok()) created = DuckDbExec(conn, CreateTableSql(t, "BIGINT", "DOUBLE", "VARCHAR"));
    }
    duckdb_disconnect(&conn);
    SL_RETURN_IF_ERROR(created);
    return std::unique_ptr<RawEngine>(std::move(engine));
  }

  ~DuckDbEngine() override {
    if (db_ != nullptr) duckdb_close(&db_);
  }

  Result<std::unique_ptr<RawWriter>> NewWriter() override {
    duckdb_connection conn = nullptr;
    if (duckdb_connect(db_, &conn) != DuckDBSuccess) return Status::IoError("duckdb: cannot connect");
    return std::unique_ptr<RawWriter>(new DuckDbWriter(conn));
  }

  Status Close() override {
    duckdb_connection conn = nullptr;
    if (duckdb_connect(db_, &conn) != DuckDBSuccess) return Status::IoError("duckdb: cannot connect");
    Status st = DuckDbExec(conn, "CHECKPOINT");
    duckdb_disconnect(&conn);
    duckdb_close(&db_);
    db_ = nullptr;
    return st;
  }

 private:
  DuckDbEngine() = default;
  duckdb_database db_ = nullptr;
};

// ---- SQLite ------------------------------------------------------------------------

constexpr int kSqliteBusyTimeoutMs = 30000;

Status SqliteExec(sqlite3* db, const std::string& sql) {
  char* error = nullptr;
  if (sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &error) == SQLITE_OK) return Status::Ok();
  std::string message = error != nullptr ? error : sqlite3_errmsg(db);
  sqlite3_free(error);
  return Status::IoError("sqlite: " + sql + ": " + message);
}

struct SqliteCloser {
  void operator()(sqlite3* db) const { sqlite3_close_v2(db); }
};
struct StatementFinalizer {
  void operator()(sqlite3_stmt* s) const { sqlite3_finalize(s); }
};
using SqliteConnection = std::unique_ptr<sqlite3, SqliteCloser>;
using SqliteStatement = std::unique_ptr<sqlite3_stmt, StatementFinalizer>;

Result<SqliteConnection> OpenSqlite(const std::string& path) {
  sqlite3* raw = nullptr;
  const int rc =
      sqlite3_open_v2(path.c_str(), &raw, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, nullptr);
  SqliteConnection db(raw);
  if (rc != SQLITE_OK) return Status::IoError("sqlite: cannot open " + path + ": " + sqlite3_errstr(rc));
  sqlite3_busy_timeout(db.get(), kSqliteBusyTimeoutMs);
  SL_RETURN_IF_ERROR(SqliteExec(db.get(), kSqliteProductionPragmas));
  return db;
}

class SqliteWriter final : public RawWriter {
 public:
  //! write_mu: the engine's, held for a whole transaction (SQLite has one writer at a time).
  SqliteWriter(SqliteConnection db, Mutex* write_mu) : db_(std::move(db)), write_mu_(write_mu) {}

  Status Append(std::span<const RawRows* const> parts) override {
    MutexLock lock(write_mu_);
    SL_RETURN_IF_ERROR(SqliteExec(db_.get(), "BEGIN IMMEDIATE"));
    Status st = InsertParts(parts);
    if (st.ok()) st = SqliteExec(db_.get(), "COMMIT");
    if (!st.ok()) (void)SqliteExec(db_.get(), "ROLLBACK");
    return st;
  }

 private:
  Result<sqlite3_stmt*> InsertFor(const RawTable& table) {
    SqliteStatement& stmt = statements_[table.name];
    if (stmt) return stmt.get();
    std::string sql = std::string("INSERT INTO ") + table.name + " VALUES (";
    for (size_t i = 0; i < table.columns.size(); ++i) sql += i > 0 ? ", ?" : "?";
    sql += ")";
    sqlite3_stmt* raw = nullptr;
    if (sqlite3_prepare_v2(db_.get(), sql.c_str(), -1, &raw, nullptr) != SQLITE_OK) {
      return Status::IoError("sqlite: " + sql + ": " + sqlite3_errmsg(db_.get()));
    }
    stmt.reset(raw);
    return raw;
  }

  Status InsertParts(std::span<const RawRows* const> parts) {
    for (const RawRows* rows : parts) {
      if (rows->rows() == 0) continue;
      auto stmt = InsertFor(rows->table());
      if (!stmt.ok()) return stmt.status();
      sqlite3_stmt* s = *stmt;
      const auto& columns = rows->table().columns;
      for (size_t r = 0; r < rows->rows(); ++r) {
        for (size_t c = 0; c < columns.size(); ++c) {
          const int index = static_cast<int>(c + 1);
          if (rows->IsNull(c, r)) {
            sqlite3_bind_null(s, index);
            continue;
          }
          switch (columns[c].type) {
            case RawType::kInt64: sqlite3_bind_int64(s, index, rows->IntAt(c, r)); break;
            case RawType::kDouble: sqlite3_bind_double(s, index, rows->DoubleAt(c, r)); break;
            case RawType::kText: {
              std::string_view v = rows->TextAt(c, r);
              sqlite3_bind_text(s, index, v.data(), static_cast<int>(v.size()), SQLITE_STATIC);
              break;
            }
          }
        }
        const int rc = sqlite3_step(s);
        sqlite3_reset(s);
        if (rc != SQLITE_DONE) {
          return Status::IoError(std::string("sqlite: insert into ") + rows->table().name + ": " +
                                 sqlite3_errmsg(db_.get()));
        }
      }
    }
    return Status::Ok();
  }

  SqliteConnection db_;  // declared first: closed after the statements are finalized
  Mutex* write_mu_;
  std::map<std::string, SqliteStatement> statements_;
};

class SqliteEngine final : public RawEngine {
 public:
  static Result<std::unique_ptr<RawEngine>> Open(const RawEngineOptions& o, std::span<const RawTable> tables) {
    std::unique_ptr<SqliteEngine> engine(new SqliteEngine());
    engine->path_ = o.data_dir + "/raw.sqlite";
    auto db = OpenSqlite(engine->path_);
    if (!db.ok()) return db.status();
    for (const RawTable& t : tables) {
      SL_RETURN_IF_ERROR(SqliteExec(db->get(), CreateTableSql(t, "INTEGER", "REAL", "TEXT")));
    }
    return std::unique_ptr<RawEngine>(std::move(engine));
  }

  Result<std::unique_ptr<RawWriter>> NewWriter() override {
    auto db = OpenSqlite(path_);
    if (!db.ok()) return db.status();
    return std::unique_ptr<RawWriter>(new SqliteWriter(std::move(*db), &write_mu_));
  }

  Status Close() override {
    auto db = OpenSqlite(path_);
    if (!db.ok()) return db.status();
    return SqliteExec(db->get(), "PRAGMA wal_checkpoint(TRUNCATE)");
  }

 private:
  SqliteEngine() = default;
  std::string path_;
  Mutex write_mu_;  // one write transaction at a time across the writers
};

// ---- ClickHouse ------------------------------------------------------------------

//! One INSERT per table per Append() in RowBinary, gzip level 1: what the
//! server's ClickHouse sink sends, without its schema (plain MergeTree
//! tables in no order, no partitions, no skip indexes) and without its
//! deduplication of resources and series. NULL is the type's default, as
//! the engine's non-Nullable columns store it.
class ClickHouseWriter final : public RawWriter {
 public:
  ClickHouseWriter(HttpEndpoint server, std::string database)
      : server_(std::move(server)), database_(std::move(database)) {}

  Status Append(std::span<const RawRows* const> parts) override {
    for (const RawRows* rows : parts) {
      if (rows->rows() == 0) continue;
      const RawTable& t = rows->table();
      data_.clear();
      for (size_t r = 0; r < rows->rows(); ++r) {
        for (size_t c = 0; c < t.columns.size(); ++c) {
          const bool null = rows->IsNull(c, r);
          switch (t.columns[c].type) {
            case RawType::kInt64: Fixed(null ? int64_t{0} : rows->IntAt(c, r)); break;
            case RawType::kDouble: Fixed(null ? 0.0 : rows->DoubleAt(c, r)); break;
            case RawType::kText: {
              std::string_view v = null ? std::string_view() : rows->TextAt(c, r);
              for (uint64_t n = v.size();; n >>= 7) {  // LEB128 length
                data_.push_back(static_cast<char>((n & 0x7f) | (n >= 0x80 ? 0x80 : 0)));
                if (n < 0x80) break;
              }
              data_.append(v);
              break;
            }
          }
        }
      }
      auto done = ClickHouseQuery(server_, database_, std::string("INSERT INTO ") + t.name + " FORMAT RowBinary",
                                  Gzip(data_), true);
      if (!done.ok()) return done.status();
    }
    return Status::Ok();
  }

 private:
  template <typename T>
  void Fixed(T v) {
    char b[sizeof(T)];
    std::memcpy(b, &v, sizeof(T));  // little-endian, as RowBinary is
    data_.append(b, sizeof(T));
  }
  static std::string Gzip(const std::string& in) {
    libdeflate_compressor* c = libdeflate_alloc_compressor(1);
    std::string out(libdeflate_gzip_compress_bound(c, in.size()), '\0');
    out.resize(libdeflate_gzip_compress(c, in.data(), in.size(), out.data(), out.size()));
    libdeflate_free_compressor(c);
    return out;
  }

  const HttpEndpoint server_;
  const std::string database_;
  std::string data_;
};

class ClickHouseEngine final : public RawEngine {
 public:
  static Result<std::unique_ptr<RawEngine>> Open(const RawEngineOptions& o, std::span<const RawTable> tables) {
    if (o.clickhouse_url.empty()) return Status::InvalidArgument("raw engine: clickhouse needs a server URL");
    SL_ASSIGN_OR_RETURN(HttpEndpoint server, ParseLoopbackUrl(o.clickhouse_url));
    std::unique_ptr<ClickHouseEngine> engine(new ClickHouseEngine());
    engine->server_ = server;
    engine->database_ = o.clickhouse_database;
    SL_RETURN_IF_ERROR(ClickHouseQuery(server, "", "CREATE DATABASE " + o.clickhouse_database).status());
    for (const RawTable& t : tables) {
      SL_RETURN_IF_ERROR(
          ClickHouseQuery(server, o.clickhouse_database,
                          CreateTableSql(t, "Int64", "Float64", "String") + " ENGINE = MergeTree ORDER BY tuple()")
              .status());
    }
    return std::unique_ptr<RawEngine>(std::move(engine));
  }

  Result<std::unique_ptr<RawWriter>> NewWriter() override {
    return std::unique_ptr<RawWriter>(new ClickHouseWriter(server_, database_));
  }

  //! Drops the database: the server outlives the raw run (it is the one
  //! the spawned Sightline used, or a user's).
  Status Close() override { return ClickHouseQuery(server_, "", "DROP DATABASE " + database_).status(); }

 private:
  ClickHouseEngine() = default;
  HttpEndpoint server_;
  std::string database_;
};

}  // namespace

Result<std::unique_ptr<RawEngine>> RawEngine::Open(const std::string& engine, const RawEngineOptions& options,
                                                   std::span<const RawTable> tables) {
  std::error_code ec;
  std::filesystem::create_directories(options.data_dir, ec);
  if (ec) return Status::IoError("cannot create " + options.data_dir + ": " + ec.message());
  if (engine == "duckdb") return DuckDbEngine::Open(options, tables);
  if (engine == "sqlite") return SqliteEngine::Open(options, tables);
  if (engine == "clickhouse") return ClickHouseEngine::Open(options, tables);
  return Status::InvalidArgument("raw engine: unknown engine '" + engine + "' (duckdb, sqlite or clickhouse)");
}

}  // namespace sightline::bench
