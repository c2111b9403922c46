#include "state/state_store.h"

#include <openssl/evp.h>
#include <openssl/rand.h>
#include <openssl/sha.h>
#include <sqlite3.h>

#include <filesystem>

#include "common/hex.h"
#include "common/sqlite_pragmas.h"

namespace sightline {

namespace {

class Stmt {
 public:
  Stmt(sqlite3* db, const char* sql) { rc_ = sqlite3_prepare_v2(db, sql, -1, &stmt_, nullptr); }
  ~Stmt() { sqlite3_finalize(stmt_); }
  bool ok() const { return rc_ == SQLITE_OK; }
  sqlite3_stmt* get() { return stmt_; }
  void Bind(int i, const std::string& s) { sqlite3_bind_text(stmt_, i, s.data(), static_cast<int>(s.size()), SQLITE_TRANSIENT); }
  void Bind(int i, int64_t v) { sqlite3_bind_int64(stmt_, i, v); }
  int Step() { return sqlite3_step(stmt_); }

 private:
  sqlite3_stmt* stmt_ = nullptr;
  int rc_;
};

Status SqliteError(sqlite3* db, const std::string& what) {
  return Status::IoError("state store: " + what + ": " + sqlite3_errmsg(db));
}

}  // namespace

std::string StateStore::HashToken(const std::string& token) {
  unsigned char digest[SHA256_DIGEST_LENGTH];
  SHA256(reinterpret_cast<const unsigned char*>(token.data()), token.size(), digest);
  std::string hex;
  AppendHex(&hex, std::string_view(reinterpret_cast<const char*>(digest), sizeof(digest)));
  return hex;
}

Result<std::unique_ptr<StateStore>> StateStore::Open(const std::string& data_dir) {
  std::error_code ec;
  std::filesystem::create_directories(data_dir, ec);
  if (ec) return Status::IoError("cannot create data directory " + data_dir + ": " + ec.message());
  std::string path = data_dir + "/state.sqlite";
  sqlite3* db = nullptr;
  if (sqlite3_open(path.c_str(), &db) != SQLITE_OK) {
    Status st = SqliteError(db, "open " + path);
    sqlite3_close(db);
    return st;
  }
  std::unique_ptr<StateStore> store(new StateStore(db));
  MutexLock lock(&store->mu_);
  SL_RETURN_IF_ERROR(store->Exec(kSqliteProductionPragmas));
  SL_RETURN_IF_ERROR(store->Exec(
      "PRAGMA busy_timeout=10000; PRAGMA foreign_keys=ON;"
      "CREATE TABLE IF NOT EXISTS projects(id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE,"
      "  created_at INTEGER NOT NULL DEFAULT (unixepoch()));"
      "CREATE TABLE IF NOT EXISTS tokens(hash TEXT PRIMARY KEY, project_id INTEGER NOT NULL REFERENCES projects(id),"
      "  created_at INTEGER NOT NULL DEFAULT (unixepoch()));"
      "CREATE TABLE IF NOT EXISTS users(username TEXT PRIMARY KEY, salt TEXT NOT NULL, password_hash TEXT NOT NULL,"
      "  created_at INTEGER NOT NULL DEFAULT (unixepoch()));"
      "CREATE TABLE IF NOT EXISTS sessions(hash TEXT PRIMARY KEY, username TEXT NOT NULL REFERENCES users(username),"
      "  expires_at INTEGER NOT NULL);"));
  return store;
}

StateStore::~StateStore() {
  MutexLock lock(&mu_);
  sqlite3_close(db_);
}

Status StateStore::Exec(const char* sql) {
  char* err = nullptr;
  if (sqlite3_exec(db_, sql, nullptr, nullptr, &err) != SQLITE_OK) {
    std::string msg = err ? err : "unknown error";
    sqlite3_free(err);
    return Status::IoError("state store: " + msg);
  }
  return Status::Ok();
}

Result<int64_t> StateStore::EnsureProjectLocked(const std::string& name) {
  {
    Stmt ins(db_, "INSERT OR IGNORE INTO projects(name) VALUES (?)");
    ins.Bind(1, name);
    if (ins.Step() != SQLITE_DONE) return SqliteError(db_, "insert project");
  }
  Stmt sel(db_, "SELECT id FROM projects WHERE name = ?");
  sel.Bind(1, name);
  if (sel.Step() != SQLITE_ROW) return SqliteError(db_, "select project");
  return static_cast<int64_t>(sqlite3_column_int64(sel.get(), 0));
}

Result<int64_t> StateStore::EnsureProject(const std::string& name) {
  MutexLock lock(&mu_);
  return EnsureProjectLocked(name);
}

Status StateStore::AddToken(const std::string& project, const std::string& token) {
  if (token.size() < 8) return Status::InvalidArgument("a token must be at least 8 characters");
  MutexLock lock(&mu_);
  auto id = EnsureProjectLocked(project);
  if (!id.ok()) return id.status();
  Stmt ins(db_, "INSERT OR IGNORE INTO tokens(hash, project_id) VALUES (?, ?)");
  ins.Bind(1, HashToken(token));
  ins.Bind(2, *id);
  if (ins.Step() != SQLITE_DONE) return SqliteError(db_, "insert token");
  return Status::Ok();
}

Result<std::string> StateStore::CreateToken(const std::string& project) {
  unsigned char raw[32];
  if (RAND_bytes(raw, sizeof(raw)) != 1) return Status::Internal("no randomness for a token");
  std::string token = "sl_";
  AppendHex(&token, std::string_view(reinterpret_cast<const char*>(raw), sizeof(raw)));
  SL_RETURN_IF_ERROR(AddToken(project, token));
  return token;
}

Result<std::optional<int64_t>> StateStore::LookupToken(const std::string& token) {
  MutexLock lock(&mu_);
  Stmt sel(db_, "SELECT project_id FROM tokens WHERE hash = ?");
  sel.Bind(1, HashToken(token));
  int rc = sel.Step();
  if (rc == SQLITE_ROW) return std::optional<int64_t>(sqlite3_column_int64(sel.get(), 0));
  if (rc == SQLITE_DONE) return std::optional<int64_t>();
  return SqliteError(db_, "lookup token");
}

Result<int64_t> StateStore::CountTokens(const std::string& project) {
  MutexLock lock(&mu_);
  Stmt sel(db_, "SELECT count(*) FROM tokens t JOIN projects p ON p.id = t.project_id WHERE p.name = ?");
  sel.Bind(1, project);
  if (sel.Step() != SQLITE_ROW) return SqliteError(db_, "count tokens");
  return static_cast<int64_t>(sqlite3_column_int64(sel.get(), 0));
}

namespace {

constexpr int kPbkdf2Iterations = 100000;

}  // namespace

std::string StateStore::RandomHex(size_t bytes) {
  std::string raw(bytes, '\0');
  if (RAND_bytes(reinterpret_cast<unsigned char*>(raw.data()), static_cast<int>(bytes)) != 1) return "";
  std::string hex;
  AppendHex(&hex, raw);
  return hex;
}

namespace {

std::string Pbkdf2(const std::string& password, const std::string& salt) {
  unsigned char out[32];
  PKCS5_PBKDF2_HMAC(password.data(), static_cast<int>(password.size()),
                    reinterpret_cast<const unsigned char*>(salt.data()), static_cast<int>(salt.size()),
                    kPbkdf2Iterations, EVP_sha256(), sizeof(out), out);
  std::string hex;
  AppendHex(&hex, std::string_view(reinterpret_cast<const char*>(out), sizeof(out)));
  return hex;
}

}  // namespace

Status StateStore::SetUserPassword(const std::string& username, const std::string& password) {
  if (username.empty()) return Status::InvalidArgument("empty username");
  if (password.size() < 8) return Status::InvalidArgument("a password must be at least 8 characters");
  std::string salt = RandomHex(16);
  if (salt.empty()) return Status::Internal("no randomness for a salt");
  std::string hash = Pbkdf2(password, salt);
  MutexLock lock(&mu_);
  Stmt up(db_,
          "INSERT INTO users(username, salt, password_hash) VALUES (?, ?, ?) "
          "ON CONFLICT(username) DO UPDATE SET salt = excluded.salt, password_hash = excluded.password_hash");
  up.Bind(1, username);
  up.Bind(2, salt);
  up.Bind(3, hash);
  if (up.Step() != SQLITE_DONE) return SqliteError(db_, "set user password");
  return Status::Ok();
}

Result<bool> StateStore::HasUser(const std::string& username) {
  MutexLock lock(&mu_);
  Stmt sel(db_, "SELECT 1 FROM users WHERE username = ?");
  sel.Bind(1, username);
  int rc = sel.Step();
  if (rc == SQLITE_ROW) return true;
  if (rc == SQLITE_DONE) return false;
  return SqliteError(db_, "lookup user");
}

Result<bool> StateStore::CheckPassword(const std::string& username, const std::string& password) {
  std::string salt, stored;
  {
    MutexLock lock(&mu_);
    Stmt sel(db_, "SELECT salt, password_hash FROM users WHERE username = ?");
    sel.Bind(1, username);
    int rc = sel.Step();
    if (rc == SQLITE_DONE) return false;
    if (rc != SQLITE_ROW) return SqliteError(db_, "lookup user");
    salt = reinterpret_cast<const char*>(sqlite3_column_text(sel.get(), 0));
    stored = reinterpret_cast<const char*>(sqlite3_column_text(sel.get(), 1));
  }
  std::string got = Pbkdf2(password, salt);
  // Constant-time compare: both are 64 hex chars.
  unsigned char diff = got.size() != stored.size();
  for (size_t i = 0; i < got.size() && i < stored.size(); ++i) diff |= got[i] ^ stored[i];
  return diff == 0;
}

Result<std::string> StateStore::CreateSession(const std::string& username, int64_t ttl_seconds) {
  std::string id = RandomHex(32);
  if (id.empty()) return Status::Internal("no randomness for a session");
  MutexLock lock(&mu_);
  Stmt ins(db_, "INSERT INTO sessions(hash, username, expires_at) VALUES (?, ?, unixepoch() + ?)");
  ins.Bind(1, HashToken(id));
  ins.Bind(2, username);
  ins.Bind(3, ttl_seconds);
  if (ins.Step() != SQLITE_DONE) return SqliteError(db_, "create session");
  return id;
}

Result<std::optional<std::string>> StateStore::LookupSession(const std::string& session_id) {
  MutexLock lock(&mu_);
  Stmt sel(db_, "SELECT username FROM sessions WHERE hash = ? AND expires_at > unixepoch()");
  sel.Bind(1, HashToken(session_id));
  int rc = sel.Step();
  if (rc == SQLITE_ROW) {
    return std::optional<std::string>(reinterpret_cast<const char*>(sqlite3_column_text(sel.get(), 0)));
  }
  if (rc == SQLITE_DONE) return std::optional<std::string>();
  return SqliteError(db_, "lookup session");
}

Status StateStore::DeleteSession(const std::string& session_id) {
  MutexLock lock(&mu_);
  Stmt del(db_, "DELETE FROM sessions WHERE hash = ? OR expires_at <= unixepoch()");
  del.Bind(1, HashToken(session_id));
  if (del.Step() != SQLITE_DONE) return SqliteError(db_, "delete session");
  return Status::Ok();
}

Result<std::vector<StateStore::Project>> StateStore::ListProjects() {
  MutexLock lock(&mu_);
  Stmt sel(db_, "SELECT id, name FROM projects ORDER BY name");
  std::vector<Project> out;
  int rc;
  while ((rc = sel.Step()) == SQLITE_ROW) {
    out.push_back({sqlite3_column_int64(sel.get(), 0), reinterpret_cast<const char*>(sqlite3_column_text(sel.get(), 1))});
  }
  if (rc != SQLITE_DONE) return SqliteError(db_, "list projects");
  return out;
}

Result<std::optional<int64_t>> StateStore::FindProject(const std::string& name) {
  MutexLock lock(&mu_);
  Stmt sel(db_, "SELECT id FROM projects WHERE name = ?");
  sel.Bind(1, name);
  int rc = sel.Step();
  if (rc == SQLITE_ROW) return std::optional<int64_t>(sqlite3_column_int64(sel.get(), 0));
  if (rc == SQLITE_DONE) return std::optional<int64_t>();
  return SqliteError(db_, "find project");
}

}  // namespace sightline
