#include "state/postgres/postgres_state_store.h"

#include <libpq-fe.h>

#include <charconv>
#include <chrono>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/mutex.h"

namespace sightline {

namespace {

struct PgResultFree {
  void operator()(PGresult* r) const { PQclear(r); }
};
using PgResult = std::unique_ptr<PGresult, PgResultFree>;

struct PgConnFinish {
  void operator()(PGconn* c) const { PQfinish(c); }
};
using PgConn = std::unique_ptr<PGconn, PgConnFinish>;

int64_t UnixNow() {
  return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
}

//! libpq's messages end in a newline, some in two lines; one line for ours.
std::string OneLine(const char* message) {
  std::string s = message ? message : "";
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  for (char& c : s) {
    if (c == '\n') c = ' ';
  }
  return s;
}

//! A statement parameter: text, as libpq sends it in text format.
class Param {
 public:
  Param(std::string s) : text_(std::move(s)) {}   // NOLINT: implicit on purpose
  Param(const char* s) : text_(s) {}              // NOLINT
  Param(int64_t v) : text_(std::to_string(v)) {}  // NOLINT
  const std::string& text() const { return text_; }

 private:
  std::string text_;
};

//! Runs one statement with bound parameters. IoError unless it succeeds.
Result<PgResult> Run(PGconn* conn, const char* sql, std::initializer_list<Param> params, const std::string& what) {
  std::vector<const char*> values;
  values.reserve(params.size());
  for (const Param& p : params) {
    // PostgreSQL text cannot hold NUL; libpq would cut the value there.
    if (p.text().find('\0') != std::string::npos) {
      return Status::InvalidArgument("state store: " + what + ": a value holds a NUL byte");
    }
    values.push_back(p.text().c_str());
  }
  PgResult res(PQexecParams(conn, sql, static_cast<int>(values.size()), nullptr, values.data(), nullptr, nullptr, 0));
  const ExecStatusType st = res ? PQresultStatus(res.get()) : PGRES_FATAL_ERROR;
  if (st != PGRES_COMMAND_OK && st != PGRES_TUPLES_OK) {
    return Status::IoError("state store: " + what + ": " +
                           OneLine(res ? PQresultErrorMessage(res.get()) : PQerrorMessage(conn)));
  }
  return res;
}

//! Runs SQL without parameters, several statements allowed (migrations,
//! BEGIN/COMMIT).
Status RunScript(PGconn* conn, const std::string& sql, const std::string& what) {
  PgResult res(PQexec(conn, sql.c_str()));
  const ExecStatusType st = res ? PQresultStatus(res.get()) : PGRES_FATAL_ERROR;
  if (st != PGRES_COMMAND_OK && st != PGRES_TUPLES_OK) {
    return Status::IoError("state store: " + what + ": " +
                           OneLine(res ? PQresultErrorMessage(res.get()) : PQerrorMessage(conn)));
  }
  return Status::Ok();
}

bool IsNull(const PgResult& r, int row, int col) { return PQgetisnull(r.get(), row, col) != 0; }

std::string Text(const PgResult& r, int row, int col) {
  return std::string(PQgetvalue(r.get(), row, col), static_cast<size_t>(PQgetlength(r.get(), row, col)));
}

int64_t Int(const PgResult& r, int row, int col) {
  const char* v = PQgetvalue(r.get(), row, col);
  int64_t out = 0;
  std::from_chars(v, v + PQgetlength(r.get(), row, col), out);
  return out;
}

int Rows(const PgResult& r) { return PQntuples(r.get()); }

//! Rows a DELETE/UPDATE/INSERT touched.
int64_t Affected(const PgResult& r) {
  const char* n = PQcmdTuples(r.get());
  return n && *n ? std::strtoll(n, nullptr, 10) : 0;
}

//! The tokens query with its columns in the order ReadToken takes them, then `rest`.
std::string TokenQuery(const char* rest) {
  return std::string(
             "SELECT t.hash, t.project_id, p.name, t.created_at, t.scope FROM tokens t JOIN projects p ON p.id = "
             "t.project_id ") +
         rest;
}

Result<TokenRecord> ReadToken(const PgResult& r, int row) {
  TokenRecord t{Text(r, row, 0), Int(r, row, 1), Text(r, row, 2), Int(r, row, 3), TokenScope::kIngest};
  auto scope = ParseTokenScope(Text(r, row, 4));
  // The CHECK constraint makes this unreachable short of a hand-edited table.
  if (!scope) return Status::IoError("state store: token " + t.hash.substr(0, 12) + " has an unknown scope");
  t.scope = *scope;
  return t;
}

//! Runs `body` between BEGIN and COMMIT on `conn`, rolling back when it fails.
template <typename Body>
Status InTransaction(PGconn* conn, const std::string& what, Body&& body) {
  SL_RETURN_IF_ERROR(RunScript(conn, "BEGIN", "begin " + what));
  Status st = body();
  if (st.ok()) st = RunScript(conn, "COMMIT", "commit " + what);
  if (!st.ok()) (void)RunScript(conn, "ROLLBACK", "rollback " + what);
  return st;
}

//! Where the database is, for messages: never the password.
std::string DatabaseName(PGconn* conn) {
  return std::string("PostgreSQL database '") + PQdb(conn) + "' at " + PQhost(conn) + ":" + PQport(conn);
}

Result<PgConn> Connect(const std::string& dsn) {
  // Defaults first: the URL's own parameters, expanded from "dbname", override them.
  const char* keys[] = {"fallback_application_name", "connect_timeout", "dbname", nullptr};
  const char* values[] = {"sightline", "10", dsn.c_str(), nullptr};
  PgConn conn(PQconnectdbParams(keys, values, /*expand_dbname=*/1));
  if (!conn) return Status::IoError("state store: cannot connect to " + RedactDsn(dsn) + ": out of memory");
  if (PQstatus(conn.get()) != CONNECTION_OK) {
    return Status::IoError("state store: cannot connect to " + RedactDsn(dsn) + ": " +
                           OneLine(PQerrorMessage(conn.get())));
  }
  // "relation already exists, skipping" and the like are not for stderr.
  PQsetNoticeProcessor(
      conn.get(), [](void*, const char*) {}, nullptr);
  return conn;
}

//! Brings the database to the last migration's version in one transaction,
//! under the migration advisory lock.
Status Migrate(PGconn* conn, std::span<const StateMigration> migrations) {
  const int latest = migrations.empty() ? 0 : migrations.back().version;
  const std::string where = DatabaseName(conn);
  return InTransaction(conn, "migration of " + where, [&]() -> Status {
    auto locked = Run(conn, "SELECT pg_advisory_xact_lock($1)", {kPostgresStateMigrationLock}, "take migration lock");
    if (!locked.ok()) return locked.status();
    SL_RETURN_IF_ERROR(
        RunScript(conn, "CREATE TABLE IF NOT EXISTS schema_version(version INTEGER NOT NULL)", "schema_version"));
    auto sel = Run(conn, "SELECT max(version) FROM schema_version", {}, "read schema version");
    if (!sel.ok()) return sel.status();
    const int current = IsNull(*sel, 0, 0) ? 0 : static_cast<int>(Int(*sel, 0, 0));
    if (current > latest) {
      return Status::InvalidArgument(where + " is at state schema version " + std::to_string(current) +
                                     ", newer than this sightline, which knows versions up to " +
                                     std::to_string(latest) +
                                     ": it was written by a newer release. Run that release (or newer) on it; "
                                     "downgrades are not supported");
    }
    if (current == latest) return Status::Ok();
    for (const StateMigration& m : migrations) {
      if (m.version <= current) continue;
      SL_RETURN_IF_ERROR(RunScript(conn, SpellMigration(m, kPostgresStateDialect),
                                   "migrating " + where + " from schema version " + std::to_string(current) + " to " +
                                       std::to_string(m.version) + " (" + m.what + ")"));
    }
    auto del = Run(conn, "DELETE FROM schema_version", {}, "record schema version");
    if (!del.ok()) return del.status();
    auto ins = Run(conn, "INSERT INTO schema_version(version) VALUES ($1)", {int64_t{latest}}, "record schema version");
    return ins.status();
  });
}

class PostgresStateStore final : public StateStore {
 public:
  explicit PostgresStateStore(std::string dsn) : dsn_(std::move(dsn)) {}

  //! Puts an open connection in the pool (the one Open migrated with).
  void Adopt(PgConn conn) EXCLUDES(mu_) {
    MutexLock lock(&mu_);
    ++open_;
    idle_.push_back(std::move(conn));
  }

  Result<int64_t> EnsureProject(const std::string& name) override {
    return WithConnection([&](PGconn* c) { return EnsureProjectOn(c, name); });
  }

  Result<std::optional<int64_t>> FindProject(const std::string& name) override {
    return WithConnection([&](PGconn* c) -> Result<std::optional<int64_t>> {
      auto r = Run(c, "SELECT id FROM projects WHERE name = $1", {name}, "find project");
      if (!r.ok()) return r.status();
      if (Rows(*r) == 0) return std::optional<int64_t>();
      return std::optional<int64_t>(Int(*r, 0, 0));
    });
  }

  Result<std::vector<ProjectRecord>> ListProjects() override {
    return WithConnection([&](PGconn* c) -> Result<std::vector<ProjectRecord>> {
      // COLLATE "C": byte order, as SQLite sorts, whatever the database's locale.
      auto r = Run(c, "SELECT id, name FROM projects ORDER BY name COLLATE \"C\"", {}, "list projects");
      if (!r.ok()) return r.status();
      std::vector<ProjectRecord> out;
      for (int i = 0; i < Rows(*r); ++i) out.push_back({Int(*r, i, 0), Text(*r, i, 1)});
      return out;
    });
  }

  Status AddToken(const std::string& project, const std::string& hash, TokenScope scope) override {
    return WithConnection([&](PGconn* c) -> Status {
      auto id = EnsureProjectOn(c, project);
      if (!id.ok()) return id.status();
      return Run(c,
                 "INSERT INTO tokens(hash, project_id, created_at, scope) VALUES ($1, $2, $3, $4) "
                 "ON CONFLICT (hash) DO NOTHING",
                 {hash, *id, UnixNow(), TokenScopeName(scope)}, "insert token")
          .status();
    });
  }

  Result<std::optional<TokenRecord>> FindToken(const std::string& hash) override {
    return WithConnection([&](PGconn* c) -> Result<std::optional<TokenRecord>> {
      auto r = Run(c, TokenQuery("WHERE t.hash = $1").c_str(), {hash}, "lookup token");
      if (!r.ok()) return r.status();
      if (Rows(*r) == 0) return std::optional<TokenRecord>();
      auto token = ReadToken(*r, 0);
      if (!token.ok()) return token.status();
      return std::optional<TokenRecord>(std::move(token.value()));
    });
  }

  Result<std::vector<TokenRecord>> ListTokens(const std::optional<std::string>& project) override {
    return WithConnection([&](PGconn* c) -> Result<std::vector<TokenRecord>> {
      auto r = project ? Run(c, TokenQuery("WHERE p.name = $1 ORDER BY t.created_at, t.hash COLLATE \"C\"").c_str(),
                             {*project}, "list tokens")
                       : Run(c, TokenQuery("ORDER BY t.created_at, t.hash COLLATE \"C\"").c_str(), {}, "list tokens");
      if (!r.ok()) return r.status();
      std::vector<TokenRecord> out;
      for (int i = 0; i < Rows(*r); ++i) {
        auto token = ReadToken(*r, i);
        if (!token.ok()) return token.status();
        out.push_back(std::move(token.value()));
      }
      return out;
    });
  }

  Result<int64_t> CountTokens(const std::string& project) override {
    return WithConnection([&](PGconn* c) -> Result<int64_t> {
      auto r = Run(c, "SELECT count(*) FROM tokens t JOIN projects p ON p.id = t.project_id WHERE p.name = $1",
                   {project}, "count tokens");
      if (!r.ok()) return r.status();
      return Int(*r, 0, 0);
    });
  }

  Result<bool> DeleteToken(const std::string& hash) override {
    return WithConnection([&](PGconn* c) -> Result<bool> {
      auto r = Run(c, "DELETE FROM tokens WHERE hash = $1", {hash}, "delete token");
      if (!r.ok()) return r.status();
      return Affected(*r) > 0;
    });
  }

  Status PutUser(const UserRecord& user) override {
    return WithConnection([&](PGconn* c) -> Status {
      // One transaction: a crash between the two statements must not leave
      // the new password in place with the old sessions still live.
      return InTransaction(c, "put user", [&]() -> Status {
        auto up = Run(c,
                      "INSERT INTO users(username, salt, password_hash, pbkdf2_iterations, created_at) "
                      "VALUES ($1, $2, $3, $4, $5) ON CONFLICT (username) DO UPDATE SET salt = excluded.salt, "
                      "password_hash = excluded.password_hash, pbkdf2_iterations = excluded.pbkdf2_iterations",
                      {user.username, user.password.salt, user.password.hash, user.password.iterations, UnixNow()},
                      "put user");
        if (!up.ok()) return up.status();
        return Run(c, "DELETE FROM sessions WHERE username = $1", {user.username},
                   "end the sessions of " + user.username)
            .status();
      });
    });
  }

  Result<std::optional<UserRecord>> FindUser(const std::string& username) override {
    return WithConnection([&](PGconn* c) -> Result<std::optional<UserRecord>> {
      auto r = Run(c, "SELECT salt, password_hash, pbkdf2_iterations FROM users WHERE username = $1", {username},
                   "find user");
      if (!r.ok()) return r.status();
      if (Rows(*r) == 0) return std::optional<UserRecord>();
      return std::optional<UserRecord>(UserRecord{username, {Text(*r, 0, 0), Text(*r, 0, 1), Int(*r, 0, 2)}});
    });
  }

  Status AddSession(const SessionRecord& session) override {
    return WithConnection([&](PGconn* c) -> Status {
      return Run(c, "INSERT INTO sessions(hash, username, expires_at) VALUES ($1, $2, $3)",
                 {session.hash, session.username, session.expires_at}, "add session")
          .status();
    });
  }

  Result<std::optional<std::string>> FindSession(const std::string& hash, int64_t now) override {
    return WithConnection([&](PGconn* c) -> Result<std::optional<std::string>> {
      auto r = Run(c, "SELECT username FROM sessions WHERE hash = $1 AND expires_at > $2", {hash, now}, "find session");
      if (!r.ok()) return r.status();
      if (Rows(*r) == 0) return std::optional<std::string>();
      return std::optional<std::string>(Text(*r, 0, 0));
    });
  }

  Status DeleteSession(const std::string& hash, int64_t now) override {
    return WithConnection([&](PGconn* c) -> Status {
      return Run(c, "DELETE FROM sessions WHERE hash = $1 OR expires_at <= $2", {hash, now}, "delete session").status();
    });
  }

  Status SetRetention(const std::string& project, const std::string& signal, std::optional<int64_t> seconds) override {
    if (signal != "spans" && signal != "logs" && signal != "metrics") {
      return Status::InvalidArgument("no signal '" + signal + "': use spans, logs or metrics");
    }
    if (seconds && *seconds < 0) return Status::InvalidArgument("a retention cannot be negative");
    return WithConnection([&](PGconn* c) -> Status {
      auto sel = Run(c, "SELECT id FROM projects WHERE name = $1", {project}, "find project");
      if (!sel.ok()) return sel.status();
      if (Rows(*sel) == 0) return Status::NotFound("no project '" + project + "'");
      const int64_t id = Int(*sel, 0, 0);
      if (!seconds) {
        return Run(c, "DELETE FROM project_retention WHERE project_id = $1 AND signal = $2", {id, signal},
                   "clear retention")
            .status();
      }
      return Run(c,
                 "INSERT INTO project_retention(project_id, signal, retention_seconds) VALUES ($1, $2, $3) "
                 "ON CONFLICT (project_id, signal) DO UPDATE SET retention_seconds = excluded.retention_seconds",
                 {id, signal, *seconds}, "set retention")
          .status();
    });
  }

  Result<std::vector<RetentionRecord>> ListRetention() override {
    return WithConnection([&](PGconn* c) -> Result<std::vector<RetentionRecord>> {
      auto r = Run(c,
                   "SELECT r.project_id, p.name, r.signal, r.retention_seconds FROM project_retention r "
                   "JOIN projects p ON p.id = r.project_id ORDER BY p.name COLLATE \"C\", r.signal COLLATE \"C\"",
                   {}, "list retention");
      if (!r.ok()) return r.status();
      std::vector<RetentionRecord> out;
      for (int i = 0; i < Rows(*r); ++i) out.push_back({Int(*r, i, 0), Text(*r, i, 1), Text(*r, i, 2), Int(*r, i, 3)});
      return out;
    });
  }

  Result<int> SchemaVersion() override {
    return WithConnection([&](PGconn* c) -> Result<int> {
      auto r = Run(c, "SELECT max(version) FROM schema_version", {}, "read schema version");
      if (!r.ok()) return r.status();
      return IsNull(*r, 0, 0) ? 0 : static_cast<int>(Int(*r, 0, 0));
    });
  }

 private:
  static Result<int64_t> EnsureProjectOn(PGconn* c, const std::string& name) {
    auto ins = Run(c, "INSERT INTO projects(name, created_at) VALUES ($1, $2) ON CONFLICT (name) DO NOTHING",
                   {name, UnixNow()}, "insert project");
    if (!ins.ok()) return ins.status();
    auto sel = Run(c, "SELECT id FROM projects WHERE name = $1", {name}, "select project");
    if (!sel.ok()) return sel.status();
    if (Rows(*sel) == 0) return Status::IoError("state store: project '" + name + "' vanished as it was created");
    return Int(*sel, 0, 0);
  }

  //! A pooled connection, or a new one when none is idle and fewer than the
  //! maximum are open; waits for one to come back otherwise.
  Result<PgConn> Acquire() EXCLUDES(mu_) {
    {
      MutexLock lock(&mu_);
      while (idle_.empty() && open_ >= kPostgresStateMaxConnections) cv_.Wait(&mu_);
      if (!idle_.empty()) {
        PgConn conn = std::move(idle_.back());
        idle_.pop_back();
        return conn;
      }
      ++open_;
    }
    auto conn = Connect(dsn_);  // outside the lock: connecting takes a round trip or a timeout
    if (!conn.ok()) Forget();
    return conn;
  }

  //! Back to the pool when healthy and outside a transaction; closed otherwise.
  void Release(PgConn conn) EXCLUDES(mu_) {
    if (PQstatus(conn.get()) != CONNECTION_OK || PQtransactionStatus(conn.get()) != PQTRANS_IDLE) {
      conn.reset();
      Forget();
      return;
    }
    MutexLock lock(&mu_);
    idle_.push_back(std::move(conn));
    cv_.Signal();
  }

  //! One connection fewer is open.
  void Forget() EXCLUDES(mu_) {
    MutexLock lock(&mu_);
    --open_;
    cv_.Signal();
  }

  //! Runs `f(conn)` on a pooled connection. When the connection turns out
  //! dropped, `f` runs once more on a new one: every call here is a read, an
  //! idempotent write (ON CONFLICT, DELETE, upsert) or a transaction that
  //! rolled back with the connection.
  template <typename F>
  auto WithConnection(F&& f) -> decltype(f(nullptr)) {
    for (int attempt = 0;; ++attempt) {
      auto conn = Acquire();
      if (!conn.ok()) return conn.status();
      auto result = f(conn->get());
      const bool dropped = PQstatus(conn->get()) != CONNECTION_OK;
      Release(std::move(conn.value()));
      if (!dropped || result.ok() || attempt == 1) return result;
    }
  }

  const std::string dsn_;
  Mutex mu_;
  CondVar cv_{&mu_};
  std::vector<PgConn> idle_ GUARDED_BY(mu_);
  int open_ GUARDED_BY(mu_) = 0;  // idle and in use
};

}  // namespace

std::string RedactDsn(const std::string& dsn) {
  std::string out = dsn;
  // URL form: scheme://user:password@host...
  const size_t scheme = out.find("://");
  if (scheme != std::string::npos) {
    const size_t authority = scheme + 3;
    const size_t end = out.find_first_of("/?", authority);
    const size_t at = out.rfind('@', end == std::string::npos ? out.size() : end);
    if (at != std::string::npos && at > authority) {
      const size_t colon = out.find(':', authority);
      if (colon != std::string::npos && colon < at) out.replace(colon + 1, at - colon - 1, "***");
    }
  }
  // password=... as a URL query parameter or a key=value pair.
  for (size_t pos = out.find("password="); pos != std::string::npos; pos = out.find("password=", pos + 1)) {
    const size_t value = pos + 9;
    const size_t end = out.find_first_of("& ", value);
    out.replace(value, (end == std::string::npos ? out.size() : end) - value, "***");
  }
  return out;
}

Result<std::unique_ptr<StateStore>> OpenPostgresStateStore(const std::string& dsn) {
  return OpenPostgresStateStore(dsn, StateMigrations());
}

Result<std::unique_ptr<StateStore>> OpenPostgresStateStore(const std::string& dsn,
                                                           std::span<const StateMigration> migrations) {
  auto conn = Connect(dsn);
  if (!conn.ok()) return conn.status();
  SL_RETURN_IF_ERROR(Migrate(conn->get(), migrations));
  auto store = std::make_unique<PostgresStateStore>(dsn);
  store->Adopt(std::move(conn.value()));
  return std::unique_ptr<StateStore>(std::move(store));
}

}  // namespace sightline
