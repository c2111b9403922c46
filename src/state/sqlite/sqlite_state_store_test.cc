// The SQLite state store: records kept across reopen, secrets only as hashes
// (the files are read back byte by byte), and schema versioning: a database
// from before versioning is migrated with its data, a newer one refused, a
// failed migration leaves the database as it was. Files are inspected with
// sqlite3 directly, not through the store.

#include "state/sqlite/sqlite_state_store.h"

#include <sqlite3.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <set>
#include <string>
#include <thread>
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

TEST(SqliteStateStoreTest, UnknownTokensAreNotFound) {
  TempDir dir;
  auto store = OpenOk(dir.str());
  ASSERT_NE(store, nullptr);
  auto token = MintToken(store.get(), "shop");
  ASSERT_TRUE(token.ok());
  std::string near = *token;
  near.back() = near.back() == '0' ? '1' : '0';
  EXPECT_EQ(Lookup(store.get(), near), std::nullopt);
  EXPECT_EQ(Lookup(store.get(), ""), std::nullopt);
  EXPECT_EQ(Lookup(store.get(), token->substr(0, token->size() - 1)), std::nullopt);
  EXPECT_EQ(Lookup(store.get(), *token + " "), std::nullopt);
  std::string upper = *token;
  for (char& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  EXPECT_EQ(Lookup(store.get(), upper), std::nullopt);
  // The stored hash is not itself a token.
  EXPECT_EQ(Lookup(store.get(), HashToken(*token)), std::nullopt);
}

TEST(SqliteStateStoreTest, SecretsAreStoredOnlyAsHashes) {
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

TEST(SqliteStateStoreTest, AddingTheSameHashTwiceKeepsOneRowInItsFirstProject) {
  TempDir dir;
  auto store = OpenOk(dir.str());
  ASSERT_NE(store, nullptr);
  ASSERT_TRUE(store->AddToken("shop", "hash-1", TokenScope::kIngest).ok());
  ASSERT_TRUE(store->AddToken("shop", "hash-1", TokenScope::kIngest).ok());
  ASSERT_TRUE(store->AddToken("other", "hash-1", TokenScope::kIngest).ok());
  EXPECT_EQ(store->CountTokens("shop").value(), 1);
  EXPECT_EQ(store->CountTokens("other").value(), 0);
  auto found = store->FindToken("hash-1").value();
  ASSERT_TRUE(found.has_value());
  EXPECT_EQ(found->project_id, store->FindProject("shop").value().value());
  EXPECT_EQ(found->project, "shop");
}

TEST(SqliteStateStoreTest, ProjectsAreCreatedOnceWithDistinctIds) {
  TempDir dir;
  auto store = OpenOk(dir.str());
  ASSERT_NE(store, nullptr);
  EXPECT_EQ(store->FindProject("a").value(), std::nullopt);
  auto a1 = store->EnsureProject("a");
  auto b = store->EnsureProject("b");
  auto a2 = store->EnsureProject("a");
  ASSERT_TRUE(a1.ok() && b.ok() && a2.ok());
  EXPECT_EQ(*a1, *a2);
  EXPECT_NE(*a1, *b);
  EXPECT_EQ(store->FindProject("a").value(), std::optional<int64_t>(*a1));
  auto projects = store->ListProjects().value();
  ASSERT_EQ(projects.size(), 2u);
  EXPECT_EQ(projects[0].name, "a");
  EXPECT_EQ(projects[0].id, *a1);
  EXPECT_EQ(projects[1].name, "b");
}

TEST(SqliteStateStoreTest, ListCountAndDeleteTokensPerProject) {
  TempDir dir;
  auto store = OpenOk(dir.str());
  ASSERT_NE(store, nullptr);
  for (const char* h : {"h-a1", "h-a2", "h-a3"}) ASSERT_TRUE(store->AddToken("a", h, TokenScope::kIngest).ok());
  ASSERT_TRUE(store->AddToken("b", "h-b1", TokenScope::kIngest).ok());
  ASSERT_TRUE(store->EnsureProject("empty").ok());
  EXPECT_EQ(store->CountTokens("a").value(), 3);
  EXPECT_EQ(store->CountTokens("b").value(), 1);
  EXPECT_EQ(store->CountTokens("empty").value(), 0);
  EXPECT_EQ(store->CountTokens("missing").value(), 0);

  auto a = store->ListTokens("a").value();
  ASSERT_EQ(a.size(), 3u);
  const int64_t a_id = store->FindProject("a").value().value();
  for (const TokenRecord& t : a) {
    EXPECT_EQ(t.project, "a");
    EXPECT_EQ(t.project_id, a_id);
    EXPECT_NEAR(static_cast<double>(t.created_at), static_cast<double>(UnixSeconds()), 60.0);
  }
  EXPECT_EQ(store->ListTokens(std::nullopt).value().size(), 4u);
  EXPECT_TRUE(store->ListTokens("empty").value().empty());

  EXPECT_TRUE(store->DeleteToken("h-a2").value());
  EXPECT_FALSE(store->DeleteToken("h-a2").value()) << "already gone";
  EXPECT_FALSE(store->DeleteToken("no-such-hash").value());
  EXPECT_FALSE(store->FindToken("h-a2").value().has_value());
  EXPECT_EQ(store->CountTokens("a").value(), 2);
  EXPECT_EQ(store->CountTokens("b").value(), 1);
}

TEST(SqliteStateStoreTest, UsersKeepTheirWholePasswordRecord) {
  TempDir dir;
  auto store = OpenOk(dir.str());
  ASSERT_NE(store, nullptr);
  EXPECT_EQ(store->FindUser("admin").value(), std::nullopt);
  ASSERT_TRUE(store->PutUser({"admin", {"salt-1", "hash-1", 100000}}).ok());
  ASSERT_TRUE(store->PutUser({"admin", {"salt-2", "hash-2", 250000}}).ok());
  auto user = store->FindUser("admin").value();
  ASSERT_TRUE(user.has_value());
  EXPECT_EQ(user->password.salt, "salt-2");
  EXPECT_EQ(user->password.hash, "hash-2");
  EXPECT_EQ(user->password.iterations, 250000);
  EXPECT_EQ(Query(dir.db(), "SELECT count(*) FROM users")[0][0], "1");
}

TEST(SqliteStateStoreTest, TokensKeepTheirScope) {
  TempDir dir;
  auto store = OpenOk(dir.str());
  ASSERT_NE(store, nullptr);
  ASSERT_TRUE(store->AddToken("shop", "h-read", TokenScope::kRead).ok());
  ASSERT_TRUE(store->AddToken("shop", "h-ingest", TokenScope::kIngest).ok());
  EXPECT_EQ(store->FindToken("h-read").value()->scope, TokenScope::kRead);
  EXPECT_EQ(store->FindToken("h-ingest").value()->scope, TokenScope::kIngest);
  EXPECT_EQ(Query(dir.db(), "SELECT hash, scope FROM tokens ORDER BY hash"),
            (std::vector<std::vector<std::string>>{{"h-ingest", "ingest"}, {"h-read", "read"}}));
  // The column admits the two scopes only.
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(dir.db().c_str(), &db), SQLITE_OK);
  EXPECT_NE(sqlite3_exec(db, "UPDATE tokens SET scope = 'admin' WHERE hash = 'h-read'", nullptr, nullptr, nullptr),
            SQLITE_OK);
  sqlite3_close(db);
}

TEST(SqliteStateStoreTest, ReplacingAPasswordEndsThatUsersSessionsOnly) {
  TempDir dir;
  auto store = OpenOk(dir.str());
  ASSERT_NE(store, nullptr);
  ASSERT_TRUE(store->PutUser({"admin", {"s1", "h1", 1}}).ok());
  ASSERT_TRUE(store->PutUser({"alice", {"s2", "h2", 1}}).ok());
  ASSERT_TRUE(store->AddSession({"admin-1", "admin", 2000}).ok());
  ASSERT_TRUE(store->AddSession({"admin-2", "admin", 2000}).ok());
  ASSERT_TRUE(store->AddSession({"alice-1", "alice", 2000}).ok());
  ASSERT_TRUE(store->PutUser({"admin", {"s3", "h3", 1}}).ok());
  EXPECT_EQ(store->FindSession("admin-1", 1000).value(), std::nullopt);
  EXPECT_EQ(store->FindSession("admin-2", 1000).value(), std::nullopt);
  EXPECT_EQ(store->FindSession("alice-1", 1000).value(), std::optional<std::string>("alice"));
  EXPECT_EQ(Query(dir.db(), "SELECT hash FROM sessions"), (std::vector<std::vector<std::string>>{{"alice-1"}}));
  EXPECT_EQ(store->FindUser("admin").value()->password.hash, "h3");
}

TEST(SqliteStateStoreTest, SessionsExpireAndAreDeletedWithTheExpired) {
  TempDir dir;
  auto store = OpenOk(dir.str());
  ASSERT_NE(store, nullptr);
  ASSERT_TRUE(store->PutUser({"admin", {"s", "h", 1}}).ok());
  ASSERT_TRUE(store->AddSession({"live", "admin", 2000}).ok());
  ASSERT_TRUE(store->AddSession({"old", "admin", 1000}).ok());
  EXPECT_EQ(store->FindSession("live", 1999).value(), std::optional<std::string>("admin"));
  EXPECT_EQ(store->FindSession("live", 2000).value(), std::nullopt);
  EXPECT_EQ(store->FindSession("old", 999).value(), std::optional<std::string>("admin"));
  EXPECT_EQ(store->FindSession("nope", 0).value(), std::nullopt);
  // Ending "live" at 1500 also drops "old", expired by then.
  ASSERT_TRUE(store->DeleteSession("live", 1500).ok());
  EXPECT_EQ(Query(dir.db(), "SELECT count(*) FROM sessions")[0][0], "0");
  // A session needs its user.
  EXPECT_FALSE(store->AddSession({"orphan", "nobody", 3000}).ok());
}

TEST(SqliteStateStoreTest, RetentionOverridesAreSetReplacedAndCleared) {
  TempDir dir;
  auto store = OpenOk(dir.str());
  ASSERT_NE(store, nullptr);
  ASSERT_TRUE(store->EnsureProject("shop").ok());
  ASSERT_TRUE(store->EnsureProject("blog").ok());
  EXPECT_TRUE(store->ListRetention().value().empty());
  ASSERT_TRUE(store->SetRetention("shop", "spans", 3 * 86400).ok());
  ASSERT_TRUE(store->SetRetention("shop", "logs", 0).ok());  // forever
  ASSERT_TRUE(store->SetRetention("blog", "metrics", 3600).ok());
  ASSERT_TRUE(store->SetRetention("shop", "spans", 86400).ok());  // replaces
  auto list = store->ListRetention().value();
  ASSERT_EQ(list.size(), 3u);
  EXPECT_EQ(list[0].project, "blog");
  EXPECT_EQ(list[0].signal, "metrics");
  EXPECT_EQ(list[0].seconds, 3600);
  EXPECT_EQ(list[1].project, "shop");
  EXPECT_EQ(list[1].signal, "logs");
  EXPECT_EQ(list[1].seconds, 0);
  EXPECT_EQ(list[2].signal, "spans");
  EXPECT_EQ(list[2].seconds, 86400);
  EXPECT_EQ(list[2].project_id, store->FindProject("shop").value().value());
  ASSERT_TRUE(store->SetRetention("shop", "spans", std::nullopt).ok());
  ASSERT_TRUE(store->SetRetention("shop", "spans", std::nullopt).ok());  // clearing twice is fine
  EXPECT_EQ(store->ListRetention().value().size(), 2u);
  // Kept across a reopen.
  store.reset();
  store = OpenOk(dir.str());
  ASSERT_NE(store, nullptr);
  EXPECT_EQ(store->ListRetention().value().size(), 2u);
}

TEST(SqliteStateStoreTest, RetentionOverridesRefuseUnknownProjectsSignalsAndNegativeValues) {
  TempDir dir;
  auto store = OpenOk(dir.str());
  ASSERT_NE(store, nullptr);
  ASSERT_TRUE(store->EnsureProject("shop").ok());
  EXPECT_EQ(store->SetRetention("nope", "spans", 60).code(), StatusCode::kNotFound);
  EXPECT_EQ(store->SetRetention("shop", "traces", 60).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(store->SetRetention("shop", "spans", -1).code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(store->ListRetention().value().empty());
  EXPECT_FALSE(store->FindProject("nope").value().has_value()) << "a refused override creates no project";
}

TEST(SqliteStateStoreTest, ReopenKeepsEverything) {
  TempDir dir;
  std::string minted;
  int64_t project = 0;
  {
    auto store = OpenOk(dir.str());
    ASSERT_NE(store, nullptr);
    auto t = MintToken(store.get(), "shop");
    ASSERT_TRUE(t.ok());
    minted = *t;
    ASSERT_TRUE(AddToken(store.get(), "shop", "chosen-token-42").ok());
    ASSERT_TRUE(SetUserPassword(store.get(), "admin", "admin-password").ok());
    project = store->EnsureProject("shop").value();
  }
  auto store = OpenOk(dir.str());
  ASSERT_NE(store, nullptr);
  EXPECT_EQ(Lookup(store.get(), minted), std::optional<int64_t>(project));
  EXPECT_EQ(Lookup(store.get(), "chosen-token-42"), std::optional<int64_t>(project));
  EXPECT_EQ(store->EnsureProject("shop").value(), project);
  EXPECT_EQ(store->CountTokens("shop").value(), 2);
  EXPECT_TRUE(CheckUserPassword(store.get(), "admin", "admin-password").value());
  EXPECT_EQ(store->SchemaVersion().value(), kStateSchemaVersion);
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

TEST(SqliteStateStoreTest, ConcurrentTokenCreationIsSafe) {
  TempDir dir;
  auto store = OpenOk(dir.str());
  ASSERT_NE(store, nullptr);
  constexpr int kThreads = 4, kEach = 10;
  std::vector<std::vector<std::string>> minted(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kEach; ++i) {
        auto tok = MintToken(store.get(), t % 2 ? "odd" : "even");
        if (tok.ok()) minted[t].push_back(*tok);
        auto found = FindToken(store.get(), tok.ok() ? *tok : "");
        EXPECT_TRUE(found.ok() && found->has_value());
      }
    });
  }
  for (auto& th : threads) th.join();
  std::set<std::string> all;
  for (const auto& v : minted) all.insert(v.begin(), v.end());
  EXPECT_EQ(all.size(), size_t{kThreads * kEach});
  EXPECT_EQ(store->CountTokens("odd").value() + store->CountTokens("even").value(), kThreads * kEach);
}

TEST(SqliteStateStoreTest, TwoProcessesWorthOfConnectionsShareTheFile) {
  // The server holds the store open while `sightline token create|revoke`
  // opens its own: each sees the other's writes at once.
  TempDir dir;
  auto server = OpenOk(dir.str());
  auto cli = OpenOk(dir.str());
  ASSERT_TRUE(server && cli);
  auto token = MintToken(cli.get(), "shop");
  ASSERT_TRUE(token.ok());
  EXPECT_TRUE(Lookup(server.get(), *token).has_value());
  ASSERT_TRUE(RevokeToken(cli.get(), TokenId(HashToken(*token))).ok());
  EXPECT_EQ(Lookup(server.get(), *token), std::nullopt);
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
  auto unknown = OpenStateStore("postgres://localhost/sightline");
  ASSERT_FALSE(unknown.ok());
  EXPECT_EQ(unknown.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(unknown.status().message().find("postgres"), std::string::npos) << unknown.status().message();
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

TEST(SqliteStateVersioningTest, AFreshDatabaseIsAtTheCurrentVersion) {
  TempDir dir;
  auto store = OpenOk(dir.str());
  ASSERT_NE(store, nullptr);
  EXPECT_EQ(store->SchemaVersion().value(), kStateSchemaVersion);
  EXPECT_EQ(Query(dir.db(), "SELECT version FROM schema_version"),
            (std::vector<std::vector<std::string>>{{std::to_string(kStateSchemaVersion)}}));
  EXPECT_EQ(SqliteStateMigrations().size(), static_cast<size_t>(kStateSchemaVersion));
  for (size_t i = 0; i < SqliteStateMigrations().size(); ++i) {
    EXPECT_EQ(SqliteStateMigrations()[i].version, static_cast<int>(i) + 1) << "versions are 1, 2, ... in order";
  }
}

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

TEST(SqliteStateVersioningTest, AVersionOneDatabaseIsMigratedToTheCurrentVersion) {
  TempDir dir;
  const SqliteStateMigration* v1 = &SqliteStateMigrations()[0];
  {
    auto old = OpenSqliteStateStore(dir.str(), std::span<const SqliteStateMigration>(v1, 1));
    ASSERT_TRUE(old.ok()) << old.status().ToString();
    EXPECT_EQ((*old)->SchemaVersion().value(), 1);
  }
  EXPECT_EQ(Query(dir.db(), "SELECT count(*) FROM pragma_table_info('users') WHERE name = 'pbkdf2_iterations'")[0][0],
            "0");
  auto store = OpenOk(dir.str());
  ASSERT_NE(store, nullptr);
  EXPECT_EQ(store->SchemaVersion().value(), kStateSchemaVersion);
  EXPECT_EQ(Query(dir.db(), "SELECT count(*) FROM pragma_table_info('users') WHERE name = 'pbkdf2_iterations'")[0][0],
            "1");
}

TEST(SqliteStateVersioningTest, TokensOfAVersionTwoDatabaseBecomeIngestTokens) {
  // Before scopes every token was handed to exporters (and also read the
  // API); after the migration each is an ingest token.
  TempDir dir;
  std::string token;
  {
    auto old = OpenSqliteStateStore(dir.str(), SqliteStateMigrations().first(2));
    ASSERT_TRUE(old.ok()) << old.status().ToString();
    EXPECT_EQ((*old)->SchemaVersion().value(), 2);
  }
  EXPECT_EQ(Query(dir.db(), "SELECT count(*) FROM pragma_table_info('tokens') WHERE name = 'scope'")[0][0], "0");
  Exec(dir.db(),
       "INSERT INTO projects(id, name, created_at) VALUES (3, 'shop', 1700000000);"
       "INSERT INTO tokens(hash, project_id, created_at) VALUES ('" +
           HashToken("version-two-token") + "', 3, 1700000001);");
  auto store = OpenOk(dir.str());
  ASSERT_NE(store, nullptr);
  EXPECT_EQ(store->SchemaVersion().value(), kStateSchemaVersion);
  auto grant = FindToken(store.get(), "version-two-token").value();
  ASSERT_TRUE(grant.has_value());
  EXPECT_EQ(*grant, (TokenGrant{3, TokenScope::kIngest}));
  EXPECT_EQ(Query(dir.db(), "SELECT scope FROM tokens"), (std::vector<std::vector<std::string>>{{"ingest"}}));
}

TEST(SqliteStateVersioningTest, AVersionTwoDatabaseGainsRetentionOverrides) {
  TempDir dir;
  {
    auto old = OpenSqliteStateStore(dir.str(), SqliteStateMigrations().subspan(0, 2));
    ASSERT_TRUE(old.ok()) << old.status().ToString();
    ASSERT_TRUE((*old)->EnsureProject("shop").ok());
    EXPECT_EQ((*old)->SchemaVersion().value(), 2);
    EXPECT_FALSE((*old)->ListRetention().ok()) << "no table before migration 4";
  }
  auto store = OpenOk(dir.str());
  ASSERT_NE(store, nullptr);
  EXPECT_EQ(store->SchemaVersion().value(), kStateSchemaVersion);
  EXPECT_TRUE(store->ListRetention().value().empty());
  ASSERT_TRUE(store->SetRetention("shop", "logs", 7 * 86400).ok());
  EXPECT_EQ(store->ListRetention().value().at(0).seconds, 7 * 86400);
}

TEST(SqliteStateVersioningTest, ANewerDatabaseIsRefusedAndLeftAlone) {
  TempDir dir;
  {
    auto store = OpenOk(dir.str());
    ASSERT_NE(store, nullptr);
    ASSERT_TRUE(AddToken(store.get(), "shop", "token-from-the-future").ok());
  }
  const int future = kStateSchemaVersion + 1;
  Exec(dir.db(), "UPDATE schema_version SET version = " + std::to_string(future));
  auto r = OpenSqliteStateStore(dir.str());
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  const std::string& msg = r.status().message();
  EXPECT_NE(msg.find("state.sqlite"), std::string::npos) << msg;
  EXPECT_NE(msg.find("version " + std::to_string(future)), std::string::npos) << msg;
  EXPECT_NE(msg.find("up to " + std::to_string(kStateSchemaVersion)), std::string::npos) << msg;
  EXPECT_NE(msg.find("newer"), std::string::npos) << msg;
  EXPECT_EQ(Query(dir.db(), "SELECT version FROM schema_version"),
            (std::vector<std::vector<std::string>>{{std::to_string(future)}}));
  EXPECT_EQ(Query(dir.db(), "SELECT count(*) FROM tokens")[0][0], "1");
}

TEST(SqliteStateVersioningTest, AFailedMigrationRollsBackEveryStepOfTheOpen) {
  TempDir dir;
  Exec(dir.db(), kUnversionedSchema);
  Exec(dir.db(), "INSERT INTO projects(id, name) VALUES (1, 'default')");
  std::vector<SqliteStateMigration> migrations(SqliteStateMigrations().begin(), SqliteStateMigrations().end());
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
