#include "state/sqlite/sqlite_state_store.h"

#include <sqlite3.h>

#include <chrono>
#include <filesystem>
#include <string>

#include "common/mutex.h"
#include "common/sqlite_pragmas.h"

namespace sightline {

namespace {

// The statements below keep to SQL that PostgreSQL runs as written (ON
// CONFLICT, excluded.*, bound times instead of unixepoch()), so the two stores
// differ in their driver and their placeholders, not in their queries; the
// schema itself is state/state_migrations.h, shared by both.

//! The tokens query with its columns in the order ReadToken takes them, then `rest`.
std::string TokenQuery(const char* rest) {
  return std::string(
             "SELECT t.hash, t.project_id, p.name, t.created_at, t.scope FROM tokens t JOIN projects p ON p.id = "
             "t.project_id ") +
         rest;
}

int64_t UnixNow() {
  return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
}

//! A prepared statement. A failed prepare makes Step() return its error code,
//! so callers check one place.
class Stmt {
 public:
  Stmt(sqlite3* db, const char* sql) { rc_ = sqlite3_prepare_v2(db, sql, -1, &stmt_, nullptr); }
  ~Stmt() { sqlite3_finalize(stmt_); }
  Stmt(const Stmt&) = delete;
  Stmt& operator=(const Stmt&) = delete;

  void Bind(int i, const std::string& s) {
    if (stmt_) sqlite3_bind_text(stmt_, i, s.data(), static_cast<int>(s.size()), SQLITE_TRANSIENT);
  }
  void Bind(int i, int64_t v) {
    if (stmt_) sqlite3_bind_int64(stmt_, i, v);
  }
  int Step() { return stmt_ ? sqlite3_step(stmt_) : rc_; }
  int64_t Int(int col) { return sqlite3_column_int64(stmt_, col); }
  std::string Text(int col) {
    const unsigned char* t = sqlite3_column_text(stmt_, col);
    return t ? std::string(reinterpret_cast<const char*>(t), sqlite3_column_bytes(stmt_, col)) : std::string();
  }

 private:
  sqlite3_stmt* stmt_ = nullptr;
  int rc_;
};

//! The token on the statement's current row.
Result<TokenRecord> ReadToken(Stmt& sel) {
  TokenRecord t{sel.Text(0), sel.Int(1), sel.Text(2), sel.Int(3), TokenScope::kIngest};
  auto scope = ParseTokenScope(sel.Text(4));
  // The CHECK constraint makes this unreachable short of a hand-edited file.
  if (!scope) return Status::IoError("state store: token " + t.hash.substr(0, 12) + " has an unknown scope");
  t.scope = *scope;
  return t;
}

Status SqliteError(sqlite3* db, const std::string& what) {
  return Status::IoError("state store: " + what + ": " + sqlite3_errmsg(db));
}

Status Exec(sqlite3* db, const char* sql, const std::string& what) {
  char* err = nullptr;
  if (sqlite3_exec(db, sql, nullptr, nullptr, &err) != SQLITE_OK) {
    std::string msg = err ? err : sqlite3_errmsg(db);
    sqlite3_free(err);
    return Status::IoError("state store: " + what + ": " + msg);
  }
  return Status::Ok();
}

//! Brings the database to the last migration's version in one transaction.
Status Migrate(sqlite3* db, const std::string& path, std::span<const StateMigration> migrations) {
  const int latest = migrations.empty() ? 0 : migrations.back().version;
  SL_RETURN_IF_ERROR(Exec(db, "BEGIN IMMEDIATE", "begin migration of " + path));
  auto fail = [&](Status st) {
    (void)Exec(db, "ROLLBACK", "rollback");
    return st;
  };
  Status st = Exec(db, "CREATE TABLE IF NOT EXISTS schema_version(version INTEGER NOT NULL)", "schema_version");
  if (!st.ok()) return fail(st);
  int current = 0;
  {
    Stmt sel(db, "SELECT max(version) FROM schema_version");
    if (sel.Step() != SQLITE_ROW) return fail(SqliteError(db, "read schema version"));
    current = static_cast<int>(sel.Int(0));
  }
  if (current > latest) {
    return fail(Status::InvalidArgument(
        path + " is at state schema version " + std::to_string(current) + ", newer than this sightline, which knows " +
        "versions up to " + std::to_string(latest) +
        ": it was written by a newer release. Run that release (or newer) on it; downgrades are not supported"));
  }
  if (current == latest) return Exec(db, "COMMIT", "commit");
  for (const StateMigration& m : migrations) {
    if (m.version <= current) continue;
    st = Exec(db, SpellMigration(m, kSqliteStateDialect).c_str(),
              "migrating " + path + " from schema version " + std::to_string(current) + " to " +
                  std::to_string(m.version) + " (" + m.what + ")");
    if (!st.ok()) return fail(st);
  }
  Stmt del(db, "DELETE FROM schema_version");
  if (del.Step() != SQLITE_DONE) return fail(SqliteError(db, "record schema version"));
  Stmt ins(db, "INSERT INTO schema_version(version) VALUES (?)");
  ins.Bind(1, static_cast<int64_t>(latest));
  if (ins.Step() != SQLITE_DONE) return fail(SqliteError(db, "record schema version"));
  st = Exec(db, "COMMIT", "commit migration of " + path);
  if (!st.ok()) return fail(st);
  return Status::Ok();
}

//! One connection behind a mutex: state traffic is a lookup per token cache
//! miss, a login, a CLI command; never a hot path.
class SqliteStateStore final : public StateStore {
 public:
  explicit SqliteStateStore(sqlite3* db) : db_(db) {}
  ~SqliteStateStore() override {
    MutexLock lock(&mu_);
    sqlite3_close(db_);
  }

  Result<int64_t> EnsureProject(const std::string& name) override EXCLUDES(mu_) {
    MutexLock lock(&mu_);
    return EnsureProjectLocked(name);
  }

  Result<std::optional<int64_t>> FindProject(const std::string& name) override EXCLUDES(mu_) {
    MutexLock lock(&mu_);
    Stmt sel(db_, "SELECT id FROM projects WHERE name = ?");
    sel.Bind(1, name);
    int rc = sel.Step();
    if (rc == SQLITE_ROW) return std::optional<int64_t>(sel.Int(0));
    if (rc == SQLITE_DONE) return std::optional<int64_t>();
    return SqliteError(db_, "find project");
  }

  Result<std::vector<ProjectRecord>> ListProjects() override EXCLUDES(mu_) {
    MutexLock lock(&mu_);
    Stmt sel(db_, "SELECT id, name FROM projects ORDER BY name");
    std::vector<ProjectRecord> out;
    int rc;
    while ((rc = sel.Step()) == SQLITE_ROW) out.push_back({sel.Int(0), sel.Text(1)});
    if (rc != SQLITE_DONE) return SqliteError(db_, "list projects");
    return out;
  }

  Status AddToken(const std::string& project, const std::string& hash, TokenScope scope) override EXCLUDES(mu_) {
    MutexLock lock(&mu_);
    auto id = EnsureProjectLocked(project);
    if (!id.ok()) return id.status();
    Stmt ins(
        db_,
        "INSERT INTO tokens(hash, project_id, created_at, scope) VALUES (?, ?, ?, ?) ON CONFLICT (hash) DO NOTHING");
    ins.Bind(1, hash);
    ins.Bind(2, *id);
    ins.Bind(3, UnixNow());
    ins.Bind(4, std::string(TokenScopeName(scope)));
    if (ins.Step() != SQLITE_DONE) return SqliteError(db_, "insert token");
    return Status::Ok();
  }

  Result<std::optional<TokenRecord>> FindToken(const std::string& hash) override EXCLUDES(mu_) {
    MutexLock lock(&mu_);
    Stmt sel(db_, TokenQuery("WHERE t.hash = ?").c_str());
    sel.Bind(1, hash);
    int rc = sel.Step();
    if (rc == SQLITE_DONE) return std::optional<TokenRecord>();
    if (rc != SQLITE_ROW) return SqliteError(db_, "lookup token");
    auto token = ReadToken(sel);
    if (!token.ok()) return token.status();
    return std::optional<TokenRecord>(std::move(token.value()));
  }

  Result<std::vector<TokenRecord>> ListTokens(const std::optional<std::string>& project) override EXCLUDES(mu_) {
    MutexLock lock(&mu_);
    Stmt sel(db_,
             TokenQuery(project ? "WHERE p.name = ? ORDER BY t.created_at, t.hash" : "ORDER BY t.created_at, t.hash")
                 .c_str());
    if (project) sel.Bind(1, *project);
    std::vector<TokenRecord> out;
    int rc;
    while ((rc = sel.Step()) == SQLITE_ROW) {
      auto token = ReadToken(sel);
      if (!token.ok()) return token.status();
      out.push_back(std::move(token.value()));
    }
    if (rc != SQLITE_DONE) return SqliteError(db_, "list tokens");
    return out;
  }

  Result<int64_t> CountTokens(const std::string& project) override EXCLUDES(mu_) {
    MutexLock lock(&mu_);
    Stmt sel(db_, "SELECT count(*) FROM tokens t JOIN projects p ON p.id = t.project_id WHERE p.name = ?");
    sel.Bind(1, project);
    if (sel.Step() != SQLITE_ROW) return SqliteError(db_, "count tokens");
    return sel.Int(0);
  }

  Result<bool> DeleteToken(const std::string& hash) override EXCLUDES(mu_) {
    MutexLock lock(&mu_);
    Stmt del(db_, "DELETE FROM tokens WHERE hash = ?");
    del.Bind(1, hash);
    if (del.Step() != SQLITE_DONE) return SqliteError(db_, "delete token");
    return sqlite3_changes(db_) > 0;
  }

  Status PutUser(const UserRecord& user) override EXCLUDES(mu_) {
    MutexLock lock(&mu_);
    // One transaction: a crash between the two statements must not leave the
    // new password in place with the old sessions still live.
    SL_RETURN_IF_ERROR(Exec(db_, "BEGIN IMMEDIATE", "begin put user"));
    auto rollback = [db = db_](Status st) {
      (void)Exec(db, "ROLLBACK", "rollback put user");
      return st;
    };
    {
      Stmt up(db_,
              "INSERT INTO users(username, salt, password_hash, pbkdf2_iterations, created_at) VALUES (?, ?, ?, ?, ?) "
              "ON CONFLICT (username) DO UPDATE SET salt = excluded.salt, password_hash = excluded.password_hash, "
              "pbkdf2_iterations = excluded.pbkdf2_iterations");
      up.Bind(1, user.username);
      up.Bind(2, user.password.salt);
      up.Bind(3, user.password.hash);
      up.Bind(4, user.password.iterations);
      up.Bind(5, UnixNow());
      if (up.Step() != SQLITE_DONE) return rollback(SqliteError(db_, "put user"));
    }
    {
      Stmt del(db_, "DELETE FROM sessions WHERE username = ?");
      del.Bind(1, user.username);
      if (del.Step() != SQLITE_DONE) return rollback(SqliteError(db_, "end the sessions of " + user.username));
    }
    Status st = Exec(db_, "COMMIT", "commit put user");
    if (!st.ok()) return rollback(st);
    return Status::Ok();
  }

  Result<std::optional<UserRecord>> FindUser(const std::string& username) override EXCLUDES(mu_) {
    MutexLock lock(&mu_);
    Stmt sel(db_, "SELECT salt, password_hash, pbkdf2_iterations FROM users WHERE username = ?");
    sel.Bind(1, username);
    int rc = sel.Step();
    if (rc == SQLITE_DONE) return std::optional<UserRecord>();
    if (rc != SQLITE_ROW) return SqliteError(db_, "find user");
    return std::optional<UserRecord>(UserRecord{username, {sel.Text(0), sel.Text(1), sel.Int(2)}});
  }

  Status AddSession(const SessionRecord& session) override EXCLUDES(mu_) {
    MutexLock lock(&mu_);
    Stmt ins(db_, "INSERT INTO sessions(hash, username, expires_at) VALUES (?, ?, ?)");
    ins.Bind(1, session.hash);
    ins.Bind(2, session.username);
    ins.Bind(3, session.expires_at);
    if (ins.Step() != SQLITE_DONE) return SqliteError(db_, "add session");
    return Status::Ok();
  }

  Result<std::optional<std::string>> FindSession(const std::string& hash, int64_t now) override EXCLUDES(mu_) {
    MutexLock lock(&mu_);
    Stmt sel(db_, "SELECT username FROM sessions WHERE hash = ? AND expires_at > ?");
    sel.Bind(1, hash);
    sel.Bind(2, now);
    int rc = sel.Step();
    if (rc == SQLITE_ROW) return std::optional<std::string>(sel.Text(0));
    if (rc == SQLITE_DONE) return std::optional<std::string>();
    return SqliteError(db_, "find session");
  }

  Status DeleteSession(const std::string& hash, int64_t now) override EXCLUDES(mu_) {
    MutexLock lock(&mu_);
    Stmt del(db_, "DELETE FROM sessions WHERE hash = ? OR expires_at <= ?");
    del.Bind(1, hash);
    del.Bind(2, now);
    if (del.Step() != SQLITE_DONE) return SqliteError(db_, "delete session");
    return Status::Ok();
  }

  Status SetRetention(const std::string& project, const std::string& signal, std::optional<int64_t> seconds) override
      EXCLUDES(mu_) {
    if (signal != "spans" && signal != "logs" && signal != "metrics") {
      return Status::InvalidArgument("no signal '" + signal + "': use spans, logs or metrics");
    }
    if (seconds && *seconds < 0) return Status::InvalidArgument("a retention cannot be negative");
    MutexLock lock(&mu_);
    Stmt sel(db_, "SELECT id FROM projects WHERE name = ?");
    sel.Bind(1, project);
    int rc = sel.Step();
    if (rc == SQLITE_DONE) return Status::NotFound("no project '" + project + "'");
    if (rc != SQLITE_ROW) return SqliteError(db_, "find project");
    const int64_t id = sel.Int(0);
    if (!seconds) {
      Stmt del(db_, "DELETE FROM project_retention WHERE project_id = ? AND signal = ?");
      del.Bind(1, id);
      del.Bind(2, signal);
      if (del.Step() != SQLITE_DONE) return SqliteError(db_, "clear retention");
      return Status::Ok();
    }
    Stmt up(db_,
            "INSERT INTO project_retention(project_id, signal, retention_seconds) VALUES (?, ?, ?) "
            "ON CONFLICT (project_id, signal) DO UPDATE SET retention_seconds = excluded.retention_seconds");
    up.Bind(1, id);
    up.Bind(2, signal);
    up.Bind(3, *seconds);
    if (up.Step() != SQLITE_DONE) return SqliteError(db_, "set retention");
    return Status::Ok();
  }

  Result<std::vector<RetentionRecord>> ListRetention() override EXCLUDES(mu_) {
    MutexLock lock(&mu_);
    Stmt sel(db_,
             "SELECT r.project_id, p.name, r.signal, r.retention_seconds FROM project_retention r "
             "JOIN projects p ON p.id = r.project_id ORDER BY p.name, r.signal");
    std::vector<RetentionRecord> out;
    int rc;
    while ((rc = sel.Step()) == SQLITE_ROW) out.push_back({sel.Int(0), sel.Text(1), sel.Text(2), sel.Int(3)});
    if (rc != SQLITE_DONE) return SqliteError(db_, "list retention");
    return out;
  }

  Result<int> SchemaVersion() override EXCLUDES(mu_) {
    MutexLock lock(&mu_);
    Stmt sel(db_, "SELECT max(version) FROM schema_version");
    if (sel.Step() != SQLITE_ROW) return SqliteError(db_, "read schema version");
    return static_cast<int>(sel.Int(0));
  }

 private:
  Result<int64_t> EnsureProjectLocked(const std::string& name) REQUIRES(mu_) {
    {
      Stmt ins(db_, "INSERT INTO projects(name, created_at) VALUES (?, ?) ON CONFLICT (name) DO NOTHING");
      ins.Bind(1, name);
      ins.Bind(2, UnixNow());
      if (ins.Step() != SQLITE_DONE) return SqliteError(db_, "insert project");
    }
    Stmt sel(db_, "SELECT id FROM projects WHERE name = ?");
    sel.Bind(1, name);
    if (sel.Step() != SQLITE_ROW) return SqliteError(db_, "select project");
    return sel.Int(0);
  }

  Mutex mu_;
  sqlite3* db_ GUARDED_BY(mu_);
};

}  // namespace

Result<std::unique_ptr<StateStore>> OpenSqliteStateStore(const std::string& data_dir) {
  return OpenSqliteStateStore(data_dir, StateMigrations());
}

Result<std::unique_ptr<StateStore>> OpenSqliteStateStore(const std::string& data_dir,
                                                         std::span<const StateMigration> migrations) {
  std::error_code ec;
  std::filesystem::create_directories(data_dir, ec);
  if (ec) return Status::IoError("cannot create data directory " + data_dir + ": " + ec.message());
  const std::string path = data_dir + "/state.sqlite";
  sqlite3* db = nullptr;
  if (sqlite3_open(path.c_str(), &db) != SQLITE_OK) {
    Status st = SqliteError(db, "open " + path);
    sqlite3_close(db);
    return st;
  }
  auto store = std::make_unique<SqliteStateStore>(db);
  // busy_timeout first: the server and a CLI command may open the file together.
  Status st = Exec(db, "PRAGMA busy_timeout=10000; PRAGMA foreign_keys=ON;", "open " + path);
  if (st.ok()) st = Exec(db, kSqliteProductionPragmas, "open " + path);
  if (st.ok()) st = Migrate(db, path, migrations);
  if (!st.ok()) return st;
  return std::unique_ptr<StateStore>(std::move(store));
}

}  // namespace sightline
