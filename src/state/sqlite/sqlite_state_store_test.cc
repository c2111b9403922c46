// What only the SQLite state store has: its files (secrets only as hashes,
// read back byte by byte), the data directory, and databases from before
// versioning, migrated with their data. What every store does alike is the
// conformance suite (state/state_store_conformance_test.cc), run on SQLite
// too. Files are inspected with sqlite3 directly, not through the store.

#include "state/sqlite/sqlite_state_store.h"

#include <sqlite3.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "auth/passwords.h"
#include "auth/sessions.h"
#include "auth/tokens.h"
#include "common/testing/temp_dir.h"
#include "state/state_store.h"

namespace sightline {
namespace {

//! A fresh directory for one test, removed at the end.
class TempDir : public testing::TempDir {
 public:
  TempDir() : testing::TempDir("sightline-state-test") {}
  std::string db() const { return str() + "/state.sqlite"; }
};

std::unique_ptr<StateStore> OpenOk(const std::string& dir) {
  auto r = OpenSqliteStateStore(dir);
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  if (!r.ok()) return nullptr;
  return std::move(r).value();
}

//! The project id of a token, or nullopt.
std::optional<int64_t> Lookup(StateStore* s, const std::string& token) {
  auto r = FindToken(s, token);
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  if (!r.ok() || !r->has_value()) return std::nullopt;
  return (*r)->project_id;
}

//! Runs SQL on the file with its own connection; the rows as text cells.
std::vector<std::vector<std::string>> Query(const std::string& db_path, const std::string& sql) {
  std::vector<std::vector<std::string>> rows;
  sqlite3* db = nullptr;
  EXPECT_EQ(sqlite3_open(db_path.c_str(), &db), SQLITE_OK);
  sqlite3_stmt* stmt = nullptr;
  EXPECT_EQ(sqlite3_prepare_v2(db, sql.c_str(), -1, &stmt, nullptr), SQLITE_OK) << sqlite3_errmsg(db) << ": " << sql;
  int rc;
  while (stmt && (rc = sqlite3_step(stmt)) == SQLITE_ROW) {
    std::vector<std::string> row;
    for (int i = 0; i < sqlite3_column_count(stmt); ++i) {
      const unsigned char* t = sqlite3_column_text(stmt, i);
      row.emplace_back(t ? reinterpret_cast<const char*>(t) : "");
    }
    rows.push_back(std::move(row));
  }
  sqlite3_finalize(stmt);
  sqlite3_close(db);
  return rows;
}

void Exec(const std::string& db_path, const std::string& sql) {
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(db_path.c_str(), &db), SQLITE_OK);
  char* err = nullptr;
  int rc = sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &err);
  std::string msg = err ? err : "";
  sqlite3_free(err);
  sqlite3_close(db);
  ASSERT_EQ(rc, SQLITE_OK) << msg;
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// ------------------------------------------------------ records --------

TEST(SqliteStateStoreTest, SecretsAreNowhereInTheFiles) {
  TempDir dir;
  std::string token, added = "my-own-ingest-token-1234", password = "the-admin-password", session;
  {
    auto store = OpenOk(dir.str());
    ASSERT_NE(store, nullptr);
    auto t = MintToken(store.get(), "shop");
    ASSERT_TRUE(t.ok());
    token = *t;
    ASSERT_TRUE(AddToken(store.get(), "shop", added).ok());
    ASSERT_TRUE(SetUserPassword(store.get(), "admin", password).ok());
    auto s = CreateSession(store.get(), "admin", 3600, UnixSeconds());
    ASSERT_TRUE(s.ok());
    session = *s;
  }
  std::set<std::string> hashes;
  for (const auto& row : Query(dir.db(), "SELECT hash FROM tokens")) hashes.insert(row[0]);
  EXPECT_EQ(hashes, (std::set<std::string>{HashToken(token), HashToken(added)}));
  // Not anywhere in the files (database, WAL).
  for (const auto& entry : std::filesystem::directory_iterator(dir.str())) {
    std::string bytes = ReadFile(entry.path().string());
    EXPECT_EQ(bytes.find(token.substr(3)), std::string::npos) << entry.path();
    EXPECT_EQ(bytes.find(added), std::string::npos) << entry.path();
    EXPECT_EQ(bytes.find(password), std::string::npos) << entry.path();
    EXPECT_EQ(bytes.find(session), std::string::npos) << entry.path();
  }
}

TEST(SqliteStateStoreTest, OpenCreatesTheDataDirectory) {
  TempDir dir;
  std::string nested = dir.str() + "/a/b/c";
  auto store = OpenOk(nested);
  ASSERT_NE(store, nullptr);
  EXPECT_TRUE(std::filesystem::exists(nested + "/state.sqlite"));
}

TEST(SqliteStateStoreTest, OpenFailsWhenTheDirectoryIsAFile) {
  TempDir dir;
  std::string file = dir.str() + "/not-a-dir";
  std::ofstream(file) << "x";
  auto r = OpenSqliteStateStore(file);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kIoError) << r.status().ToString();
}

// ------------------------------------------------------ registry -------

TEST(StateStoreRegistryTest, OpensSqliteByPathOrSchemeAndRefusesUnknownSchemes) {
  TempDir dir;
  {
    auto plain = OpenStateStore(dir.str());
    ASSERT_TRUE(plain.ok()) << plain.status().ToString();
    ASSERT_TRUE(AddToken(plain->get(), "shop", "registry-token").ok());
  }
  auto url = OpenStateStore("sqlite://" + dir.str());
  ASSERT_TRUE(url.ok()) << url.status().ToString();
  EXPECT_TRUE(Lookup(url->get(), "registry-token").has_value()) << "same file either way";
  auto unknown = OpenStateStore("mysql://localhost/sightline");
  ASSERT_FALSE(unknown.ok());
  EXPECT_EQ(unknown.status().code(), StatusCode::kInvalidArgument);
  const std::string& msg = unknown.status().message();
  EXPECT_NE(msg.find("mysql"), std::string::npos) << msg;
  EXPECT_NE(msg.find("known: postgres, postgresql, sqlite"), std::string::npos) << msg;
}

// ------------------------------------------------------ versioning -----

// The schema every release wrote before versioning, kept here verbatim as the
// fixture for migration: never edit it to follow the current schema.
constexpr const char* kUnversionedSchema =
    "PRAGMA journal_mode=WAL;"
    "CREATE TABLE projects(id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE,"
    "  created_at INTEGER NOT NULL DEFAULT (unixepoch()));"
    "CREATE TABLE tokens(hash TEXT PRIMARY KEY, project_id INTEGER NOT NULL REFERENCES projects(id),"
    "  created_at INTEGER NOT NULL DEFAULT (unixepoch()));"
    "CREATE TABLE users(username TEXT PRIMARY KEY, salt TEXT NOT NULL, password_hash TEXT NOT NULL,"
    "  created_at INTEGER NOT NULL DEFAULT (unixepoch()));"
    "CREATE TABLE sessions(hash TEXT PRIMARY KEY, username TEXT NOT NULL REFERENCES users(username),"
    "  expires_at INTEGER NOT NULL);";

TEST(SqliteStateVersioningTest, AnUnversionedDatabaseIsMigratedWithItsData) {
  TempDir dir;
  // What a release before versioning left behind: a token, the admin with a
  // PBKDF2 hash (100k iterations; computed independently with Python
  // hashlib), and a live session.
  Exec(dir.db(), kUnversionedSchema);
  const std::string token_hash = HashToken("legacy-token-0001");
  const std::string session_hash = HashToken("legacy-session-id");
  Exec(dir.db(),
       "INSERT INTO projects(id, name, created_at) VALUES (7, 'default', 1700000000);"
       "INSERT INTO tokens(hash, project_id, created_at) VALUES ('" +
           token_hash +
           "', 7, 1700000001);"
           "INSERT INTO users(username, salt, password_hash) VALUES ('admin', '00112233445566778899aabbccddeeff',"
           "  'f7f072bf8d5598719fa5ce975dd8978118bbaeed0b1b08462080fd7a63d8a0f6');"
           "INSERT INTO sessions(hash, username, expires_at) VALUES ('" +
           session_hash + "', 'admin', 4000000000);");

  auto store = OpenOk(dir.str());
  ASSERT_NE(store, nullptr);
  EXPECT_EQ(store->SchemaVersion().value(), kStateSchemaVersion);
  EXPECT_EQ(Lookup(store.get(), "legacy-token-0001"), std::optional<int64_t>(7));
  auto tokens = ListTokens(store.get(), "default").value();
  ASSERT_EQ(tokens.size(), 1u);
  EXPECT_EQ(tokens[0].created_at, 1700000001);
  auto admin = store->FindUser("admin").value();
  ASSERT_TRUE(admin.has_value());
  EXPECT_EQ(admin->password.iterations, 100000) << "existing hashes were made with 100k iterations";
  EXPECT_TRUE(CheckUserPassword(store.get(), "admin", "old-password-1").value());
  EXPECT_FALSE(CheckUserPassword(store.get(), "admin", "old-password-2").value());
  EXPECT_EQ(SessionUser(store.get(), "legacy-session-id", UnixSeconds()).value(), std::optional<std::string>("admin"));
  // Migration 2's indexes are there.
  auto indexes = Query(dir.db(),
                       "SELECT name FROM sqlite_master WHERE type = 'index' AND name NOT LIKE 'sqlite_%' "
                       "ORDER BY name");
  EXPECT_EQ(indexes, (std::vector<std::vector<std::string>>{{"sessions_by_expiry"}, {"tokens_by_project"}}));
  // New writes work on the migrated tables, and reopening changes nothing.
  ASSERT_TRUE(SetUserPassword(store.get(), "admin", "new-password-1").ok());
  store.reset();
  store = OpenOk(dir.str());
  ASSERT_NE(store, nullptr);
  EXPECT_TRUE(CheckUserPassword(store.get(), "admin", "new-password-1").value());
  EXPECT_EQ(Query(dir.db(), "SELECT count(*) FROM schema_version")[0][0], "1");
}

TEST(SqliteStateVersioningTest, AFailedMigrationLeavesAnUnversionedDatabaseUnversioned) {
  TempDir dir;
  Exec(dir.db(), kUnversionedSchema);
  Exec(dir.db(), "INSERT INTO projects(id, name) VALUES (1, 'default')");
  std::vector<StateMigration> migrations(StateMigrations().begin(), StateMigrations().end());
  migrations.push_back({kStateSchemaVersion + 1, "a step that fails halfway",
                        "CREATE TABLE half_done(x INTEGER); INSERT INTO no_such_table VALUES (1);"});
  auto r = OpenSqliteStateStore(dir.str(), migrations);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kIoError);
  EXPECT_NE(r.status().message().find("a step that fails halfway"), std::string::npos) << r.status().message();
  // Nothing of the open stuck: not migration 2's column, not the half step,
  // not a version.
  EXPECT_EQ(Query(dir.db(), "SELECT count(*) FROM pragma_table_info('users') WHERE name = 'pbkdf2_iterations'")[0][0],
            "0");
  EXPECT_EQ(Query(dir.db(), "SELECT count(*) FROM sqlite_master WHERE name IN ('half_done', 'schema_version')")[0][0],
            "0");
  EXPECT_EQ(Query(dir.db(), "SELECT name FROM projects")[0][0], "default");
  // The binary's own migrations still apply afterwards.
  auto store = OpenOk(dir.str());
  ASSERT_NE(store, nullptr);
  EXPECT_EQ(store->SchemaVersion().value(), kStateSchemaVersion);
}

}  // namespace
}  // namespace sightline
