#include "storage/sqlite/sqlite_reader.h"

#include <sqlite3.h>

namespace sightline {

namespace {

class SqliteRow final : public RowView {
 public:
  explicit SqliteRow(sqlite3_stmt* stmt) : stmt_(stmt) {}
  bool IsNull(int col) const override { return sqlite3_column_type(stmt_, col) == SQLITE_NULL; }
  int64_t GetInt(int col) const override { return sqlite3_column_int64(stmt_, col); }
  double GetDouble(int col) const override { return sqlite3_column_double(stmt_, col); }
  std::string GetString(int col) const override {
    const unsigned char* s = sqlite3_column_text(stmt_, col);
    return s ? std::string(reinterpret_cast<const char*>(s), sqlite3_column_bytes(stmt_, col)) : std::string();
  }

 private:
  sqlite3_stmt* stmt_;
};

class SqliteReader final : public ReadConnection {
 public:
  explicit SqliteReader(sqlite3* db) : db_(db) {}
  ~SqliteReader() override { sqlite3_close(db_); }

  Status Query(const std::string& sql, const std::vector<SqlParam>& params, const RowCallback& on_row) override {
    return QuerySqlite(db_, sql, params, on_row);
  }

  void Interrupt() override { sqlite3_interrupt(db_); }

 private:
  sqlite3* db_;
};

}  // namespace

Status QuerySqlite(sqlite3* db, const std::string& sql, const std::vector<SqlParam>& params,
                   const RowCallback& on_row) {
  sqlite3_stmt* stmt = nullptr;
  if (sqlite3_prepare_v2(db, sql.c_str(), static_cast<int>(sql.size()), &stmt, nullptr) != SQLITE_OK) {
    std::string err = sqlite3_errmsg(db);
    sqlite3_finalize(stmt);
    if (sqlite3_errcode(db) == SQLITE_INTERRUPT) return Status::Cancelled("sqlite: query interrupted");
    return Status::Internal("sqlite: " + err);
  }
  for (size_t i = 0; i < params.size(); ++i) {
    int idx = static_cast<int>(i + 1);
    if (auto* v = std::get_if<int64_t>(&params[i])) sqlite3_bind_int64(stmt, idx, *v);
    else if (auto* d = std::get_if<double>(&params[i])) sqlite3_bind_double(stmt, idx, *d);
    else {
      const std::string& s = std::get<std::string>(params[i]);
      sqlite3_bind_text(stmt, idx, s.data(), static_cast<int>(s.size()), SQLITE_TRANSIENT);
    }
  }
  int rc;
  SqliteRow row(stmt);
  while ((rc = sqlite3_step(stmt)) == SQLITE_ROW) on_row(row);
  sqlite3_finalize(stmt);
  if (rc == SQLITE_DONE) return Status::Ok();
  if (rc == SQLITE_INTERRUPT) return Status::Cancelled("sqlite: query interrupted");
  return Status::Internal(std::string("sqlite: ") + sqlite3_errmsg(db));
}

Status ForEachSqliteRow(sqlite3* db, const std::string& sql, const RowCallback& on_row) {
  Status s = QuerySqlite(db, sql, {}, on_row);
  return s.ok() ? s : Status::IoError(s.message() + " (" + sql + ")");
}

Result<std::unique_ptr<ReadConnection>> OpenSqliteReader(const std::string& path) {
  sqlite3* db = nullptr;
  int rc = sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX, nullptr);
  if (rc != SQLITE_OK) {
    std::string err = db ? sqlite3_errmsg(db) : "out of memory";
    sqlite3_close(db);
    return Status::IoError("sqlite: cannot open reader on " + path + ": " + err);
  }
  sqlite3_exec(db,
               "PRAGMA cache_size=-65536; PRAGMA mmap_size=268435456; PRAGMA busy_timeout=5000; "
               "PRAGMA temp_store=memory;",
               nullptr, nullptr, nullptr);
  return std::unique_ptr<ReadConnection>(new SqliteReader(db));
}

}  // namespace sightline
