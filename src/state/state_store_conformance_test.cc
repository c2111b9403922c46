// One behaviour for every state store: the same tests, run on SQLite (a file
// in a temp dir) and on PostgreSQL (a database of its own on the test
// binary's one server, state/testing/postgres_server.h). Records, scopes,
// sessions, retention, concurrency and schema versioning from the shared
// migrations (state/state_migrations.h). What the tables hold is read with a
// connection of the test's own, not through the store. Checks that only make
// sense for one engine (SQLite's files, PostgreSQL's concurrent nodes and
// reconnects) live beside each store.

#include <sqlite3.h>

#include <functional>
#include <memory>
#include <ostream>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "auth/passwords.h"
#include "auth/sessions.h"
#include "auth/tokens.h"
#include "common/testing/temp_dir.h"
#include "state/postgres/postgres_state_store.h"
#include "state/sqlite/sqlite_state_store.h"
#include "state/state_migrations.h"
#include "state/state_store.h"
#include "state/testing/postgres_server.h"

namespace sightline {
namespace {

using Rows = std::vector<std::vector<std::string>>;

//! One engine's database for one test, and a way to look into it.
class StateBackend {
 public:
  virtual ~StateBackend() = default;
  //! Empty when the database is ready; else why not (the test fails).
  virtual std::string Problem() const = 0;
  virtual Result<std::unique_ptr<StateStore>> Open(std::span<const StateMigration> migrations) = 0;
  //! Rows of a query on a connection of the test's own; cells as text, NULL as "".
  virtual Rows Query(const std::string& sql) = 0;
  //! Runs SQL on a connection of the test's own.
  virtual Status Exec(const std::string& sql) = 0;
  virtual bool HasColumn(const std::string& table, const std::string& column) = 0;
  virtual bool HasTable(const std::string& table) = 0;
  //! What names this database in the store's messages.
  virtual std::string Where() const = 0;
};

class SqliteBackend final : public StateBackend {
 public:
  std::string Problem() const override { return dir_.str().empty() ? "no temp dir" : ""; }
  Result<std::unique_ptr<StateStore>> Open(std::span<const StateMigration> migrations) override {
    return OpenSqliteStateStore(dir_.str(), migrations);
  }
  Rows Query(const std::string& sql) override {
    Rows rows;
    sqlite3* db = nullptr;
    EXPECT_EQ(sqlite3_open(path().c_str(), &db), SQLITE_OK);
    sqlite3_stmt* stmt = nullptr;
    EXPECT_EQ(sqlite3_prepare_v2(db, sql.c_str(), -1, &stmt, nullptr), SQLITE_OK) << sqlite3_errmsg(db) << ": " << sql;
    while (stmt && sqlite3_step(stmt) == SQLITE_ROW) {
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
  Status Exec(const std::string& sql) override {
    sqlite3* db = nullptr;
    if (sqlite3_open(path().c_str(), &db) != SQLITE_OK) return Status::IoError("open");
    char* err = nullptr;
    int rc = sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &err);
    std::string msg = err ? err : "";
    sqlite3_free(err);
    sqlite3_close(db);
    return rc == SQLITE_OK ? Status::Ok() : Status::IoError(msg);
  }
  bool HasColumn(const std::string& table, const std::string& column) override {
    return Query("SELECT count(*) FROM pragma_table_info('" + table + "') WHERE name = '" + column + "'")[0][0] == "1";
  }
  bool HasTable(const std::string& table) override {
    return Query("SELECT count(*) FROM sqlite_master WHERE name = '" + table + "'")[0][0] == "1";
  }
  std::string Where() const override { return "state.sqlite"; }

 private:
  std::string path() const { return dir_.str() + "/state.sqlite"; }
  testing::TempDir dir_{"sightline-state-test"};
};

class PostgresBackend final : public StateBackend {
 public:
  PostgresBackend() {
    auto server = testing::PostgresServer::Shared();
    if (!server.ok()) {
      problem_ = server.status().ToString();
      return;
    }
    auto url = (*server)->NewDatabase();
    if (!url.ok()) {
      problem_ = url.status().ToString();
      return;
    }
    url_ = *url;
  }
  std::string Problem() const override { return problem_; }
  Result<std::unique_ptr<StateStore>> Open(std::span<const StateMigration> migrations) override {
    return OpenPostgresStateStore(url_, migrations);
  }
  Rows Query(const std::string& sql) override {
    auto rows = testing::PgQuery(url_, sql);
    EXPECT_TRUE(rows.ok()) << rows.status().ToString();
    return rows.ok() ? *rows : Rows{};
  }
  Status Exec(const std::string& sql) override { return testing::PgExec(url_, sql); }
  bool HasColumn(const std::string& table, const std::string& column) override {
    return Query("SELECT count(*) FROM information_schema.columns WHERE table_name = '" + table +
                 "' AND column_name = '" + column + "'")[0][0] == "1";
  }
  bool HasTable(const std::string& table) override {
    return Query("SELECT to_regclass('" + table + "') IS NOT NULL")[0][0] == "t";
  }
  std::string Where() const override { return "database '" + testing::PostgresServer::DatabaseOf(url_) + "'"; }

 private:
  std::string problem_;
  std::string url_;
};

struct Engine {
  const char* name;
  std::function<std::unique_ptr<StateBackend>()> make;
};

void PrintTo(const Engine& engine, std::ostream* os) { *os << engine.name; }

class StateStoreConformanceTest : public ::testing::TestWithParam<Engine> {
 protected:
  void SetUp() override {
    backend_ = GetParam().make();
    // PostgreSQL missing fails the test: a suite that skips would pass on a
    // machine that never ran it.
    ASSERT_EQ(backend_->Problem(), "") << GetParam().name << " is not available";
  }

  std::unique_ptr<StateStore> OpenOk(std::span<const StateMigration> migrations = StateMigrations()) {
    auto r = backend_->Open(migrations);
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    if (!r.ok()) return nullptr;
    return std::move(r).value();
  }

  std::unique_ptr<StateBackend> backend_;
};

//! The project id of a token, or nullopt.
std::optional<int64_t> Lookup(StateStore* s, const std::string& token) {
  auto r = FindToken(s, token);
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  if (!r.ok() || !r->has_value()) return std::nullopt;
  return (*r)->project_id;
}

// ------------------------------------------------------ records --------

TEST_P(StateStoreConformanceTest, UnknownTokensAreNotFound) {
  auto store = OpenOk();
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
  EXPECT_TRUE(Lookup(store.get(), *token).has_value());
}

TEST_P(StateStoreConformanceTest, SecretsAreStoredOnlyAsHashes) {
  std::string token, added = "my-own-ingest-token-1234", password = "the-admin-password", session;
  {
    auto store = OpenOk();
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
  for (const auto& row : backend_->Query("SELECT hash FROM tokens")) hashes.insert(row[0]);
  EXPECT_EQ(hashes, (std::set<std::string>{HashToken(token), HashToken(added)}));
  for (const char* table : {"projects", "tokens", "users", "sessions"}) {
    for (const auto& row : backend_->Query(std::string("SELECT * FROM ") + table)) {
      for (const std::string& cell : row) {
        EXPECT_EQ(cell.find(token.substr(3)), std::string::npos) << table;
        EXPECT_EQ(cell.find(added), std::string::npos) << table;
        EXPECT_EQ(cell.find(password), std::string::npos) << table;
        EXPECT_EQ(cell.find(session), std::string::npos) << table;
      }
    }
  }
  EXPECT_EQ(backend_->Query("SELECT hash FROM sessions"), (Rows{{HashToken(session)}}));
}

TEST_P(StateStoreConformanceTest, AddingTheSameHashTwiceKeepsOneRowInItsFirstProject) {
  auto store = OpenOk();
  ASSERT_NE(store, nullptr);
  ASSERT_TRUE(store->AddToken("shop", "hash-1", TokenScope::kIngest).ok());
  ASSERT_TRUE(store->AddToken("shop", "hash-1", TokenScope::kIngest).ok());
  ASSERT_TRUE(store->AddToken("other", "hash-1", TokenScope::kRead).ok());
  EXPECT_EQ(store->CountTokens("shop").value(), 1);
  EXPECT_EQ(store->CountTokens("other").value(), 0);
  auto found = store->FindToken("hash-1").value();
  ASSERT_TRUE(found.has_value());
  EXPECT_EQ(found->project_id, store->FindProject("shop").value().value());
  EXPECT_EQ(found->project, "shop");
  EXPECT_EQ(found->scope, TokenScope::kIngest);
}

TEST_P(StateStoreConformanceTest, ProjectsAreCreatedOnceWithDistinctIds) {
  auto store = OpenOk();
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

TEST_P(StateStoreConformanceTest, ProjectsAreListedInByteOrderWhateverTheLocale) {
  auto store = OpenOk();
  ASSERT_NE(store, nullptr);
  for (const char* name : {"beta", "Zeta", "_tools", "alpha", "Alpha-2"}) ASSERT_TRUE(store->EnsureProject(name).ok());
  std::vector<std::string> names;
  const std::vector<ProjectRecord> projects = store->ListProjects().value();
  for (const ProjectRecord& p : projects) names.push_back(p.name);
  EXPECT_EQ(names, (std::vector<std::string>{"Alpha-2", "Zeta", "_tools", "alpha", "beta"}));
}

TEST_P(StateStoreConformanceTest, ValuesAreStoredAsGivenNeverAsSql) {
  auto store = OpenOk();
  ASSERT_NE(store, nullptr);
  const std::string name = "x'); DELETE FROM projects; --", hash = "h' OR '1'='1";
  ASSERT_TRUE(store->AddToken(name, hash, TokenScope::kIngest).ok());
  ASSERT_TRUE(store->AddToken("other", "h-2", TokenScope::kIngest).ok());
  EXPECT_EQ(store->FindToken(hash).value()->project, name);
  EXPECT_FALSE(store->FindToken("h'").value().has_value());
  EXPECT_EQ(store->ListProjects().value().size(), 2u);
  EXPECT_TRUE(store->DeleteToken(hash).value());
  EXPECT_EQ(store->CountTokens("other").value(), 1);
}

TEST_P(StateStoreConformanceTest, ListCountAndDeleteTokensPerProject) {
  auto store = OpenOk();
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

TEST_P(StateStoreConformanceTest, TokensAreListedOldestFirst) {
  auto store = OpenOk();
  ASSERT_NE(store, nullptr);
  ASSERT_TRUE(backend_
                  ->Exec("INSERT INTO projects(id, name, created_at) VALUES (5, 'p', 1);"
                         "INSERT INTO tokens(hash, project_id, created_at, scope) VALUES "
                         "('h-new', 5, 1700000300, 'ingest'), ('h-old', 5, 1700000100, 'read'),"
                         "('h-mid-b', 5, 1700000200, 'ingest'), ('h-mid-a', 5, 1700000200, 'ingest')")
                  .ok());
  std::vector<std::string> order;
  const std::vector<TokenRecord> tokens = store->ListTokens("p").value();
  for (const TokenRecord& t : tokens) order.push_back(t.hash);
  EXPECT_EQ(order, (std::vector<std::string>{"h-old", "h-mid-a", "h-mid-b", "h-new"}));
  EXPECT_EQ(store->ListTokens("p").value()[0].created_at, 1700000100);
  EXPECT_EQ(store->ListTokens("p").value()[0].scope, TokenScope::kRead);
}

TEST_P(StateStoreConformanceTest, UsersKeepTheirWholePasswordRecord) {
  auto store = OpenOk();
  ASSERT_NE(store, nullptr);
  EXPECT_EQ(store->FindUser("admin").value(), std::nullopt);
  ASSERT_TRUE(store->PutUser({"admin", {"salt-1", "hash-1", 100000}}).ok());
  ASSERT_TRUE(store->PutUser({"admin", {"salt-2", "hash-2", 250000}}).ok());
  auto user = store->FindUser("admin").value();
  ASSERT_TRUE(user.has_value());
  EXPECT_EQ(user->password.salt, "salt-2");
  EXPECT_EQ(user->password.hash, "hash-2");
  EXPECT_EQ(user->password.iterations, 250000);
  EXPECT_EQ(backend_->Query("SELECT count(*) FROM users")[0][0], "1");
}

TEST_P(StateStoreConformanceTest, TokensKeepTheirScope) {
  auto store = OpenOk();
  ASSERT_NE(store, nullptr);
  ASSERT_TRUE(store->AddToken("shop", "h-read", TokenScope::kRead).ok());
  ASSERT_TRUE(store->AddToken("shop", "h-ingest", TokenScope::kIngest).ok());
  EXPECT_EQ(store->FindToken("h-read").value()->scope, TokenScope::kRead);
  EXPECT_EQ(store->FindToken("h-ingest").value()->scope, TokenScope::kIngest);
  EXPECT_EQ(backend_->Query("SELECT hash, scope FROM tokens ORDER BY hash"),
            (Rows{{"h-ingest", "ingest"}, {"h-read", "read"}}));
  // The column admits the two scopes only.
  EXPECT_FALSE(backend_->Exec("UPDATE tokens SET scope = 'admin' WHERE hash = 'h-read'").ok());
}

TEST_P(StateStoreConformanceTest, ReplacingAPasswordEndsThatUsersSessionsOnly) {
  auto store = OpenOk();
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
  EXPECT_EQ(backend_->Query("SELECT hash FROM sessions"), (Rows{{"alice-1"}}));
  EXPECT_EQ(store->FindUser("admin").value()->password.hash, "h3");
}

TEST_P(StateStoreConformanceTest, SessionsExpireAndAreDeletedWithTheExpired) {
  auto store = OpenOk();
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
  EXPECT_EQ(backend_->Query("SELECT count(*) FROM sessions")[0][0], "0");
  // A session needs its user.
  EXPECT_FALSE(store->AddSession({"orphan", "nobody", 3000}).ok());
}

TEST_P(StateStoreConformanceTest, RetentionOverridesAreSetReplacedAndCleared) {
  auto store = OpenOk();
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
  store = OpenOk();
  ASSERT_NE(store, nullptr);
  EXPECT_EQ(store->ListRetention().value().size(), 2u);
}

TEST_P(StateStoreConformanceTest, RetentionOverridesRefuseUnknownProjectsSignalsAndNegativeValues) {
  auto store = OpenOk();
  ASSERT_NE(store, nullptr);
  ASSERT_TRUE(store->EnsureProject("shop").ok());
  EXPECT_EQ(store->SetRetention("nope", "spans", 60).code(), StatusCode::kNotFound);
  EXPECT_EQ(store->SetRetention("shop", "traces", 60).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(store->SetRetention("shop", "spans", -1).code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(store->ListRetention().value().empty());
  EXPECT_FALSE(store->FindProject("nope").value().has_value()) << "a refused override creates no project";
  // The table refuses what the store would not write.
  EXPECT_FALSE(backend_
                   ->Exec("INSERT INTO project_retention(project_id, signal, retention_seconds) "
                          "SELECT id, 'traces', 60 FROM projects")
                   .ok());
  EXPECT_FALSE(backend_
                   ->Exec("INSERT INTO project_retention(project_id, signal, retention_seconds) "
                          "SELECT id, 'spans', -5 FROM projects")
                   .ok());
}

TEST_P(StateStoreConformanceTest, ReopenKeepsEverything) {
  std::string minted;
  int64_t project = 0;
  {
    auto store = OpenOk();
    ASSERT_NE(store, nullptr);
    auto t = MintToken(store.get(), "shop");
    ASSERT_TRUE(t.ok());
    minted = *t;
    ASSERT_TRUE(AddToken(store.get(), "shop", "chosen-token-42").ok());
    ASSERT_TRUE(SetUserPassword(store.get(), "admin", "admin-password").ok());
    project = store->EnsureProject("shop").value();
  }
  auto store = OpenOk();
  ASSERT_NE(store, nullptr);
  EXPECT_EQ(Lookup(store.get(), minted), std::optional<int64_t>(project));
  EXPECT_EQ(Lookup(store.get(), "chosen-token-42"), std::optional<int64_t>(project));
  EXPECT_EQ(store->EnsureProject("shop").value(), project);
  EXPECT_EQ(store->CountTokens("shop").value(), 2);
  EXPECT_TRUE(CheckUserPassword(store.get(), "admin", "admin-password").value());
  EXPECT_EQ(store->SchemaVersion().value(), kStateSchemaVersion);
}

TEST_P(StateStoreConformanceTest, ConcurrentTokenCreationIsSafe) {
  auto store = OpenOk();
  ASSERT_NE(store, nullptr);
  constexpr int kThreads = 6, kEach = 10;
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
  EXPECT_EQ(store->ListProjects().value().size(), 2u);
}

TEST_P(StateStoreConformanceTest, TwoOpenStoresSeeEachOthersWritesAtOnce) {
  // The server holds the store open while `sightline token create|revoke`
  // (or another node) opens its own: each sees the other's writes at once.
  auto server = OpenOk();
  auto cli = OpenOk();
  ASSERT_TRUE(server && cli);
  auto token = MintToken(cli.get(), "shop");
  ASSERT_TRUE(token.ok());
  EXPECT_TRUE(Lookup(server.get(), *token).has_value());
  ASSERT_TRUE(RevokeToken(cli.get(), TokenId(HashToken(*token))).ok());
  EXPECT_EQ(Lookup(server.get(), *token), std::nullopt);
  ASSERT_TRUE(SetUserPassword(server.get(), "admin", "shared-password-1").ok());
  auto session = CreateSession(server.get(), "admin", 3600, UnixSeconds());
  ASSERT_TRUE(session.ok());
  EXPECT_EQ(SessionUser(cli.get(), *session, UnixSeconds()).value(), std::optional<std::string>("admin"));
  ASSERT_TRUE(EndSession(cli.get(), *session, UnixSeconds()).ok());
  EXPECT_EQ(SessionUser(server.get(), *session, UnixSeconds()).value(), std::nullopt);
}

// ------------------------------------------------------ versioning -----

TEST_P(StateStoreConformanceTest, AFreshDatabaseIsAtTheCurrentVersion) {
  auto store = OpenOk();
  ASSERT_NE(store, nullptr);
  EXPECT_EQ(store->SchemaVersion().value(), kStateSchemaVersion);
  EXPECT_EQ(backend_->Query("SELECT version FROM schema_version"), (Rows{{std::to_string(kStateSchemaVersion)}}));
  for (const char* table : {"projects", "tokens", "users", "sessions", "project_retention"}) {
    EXPECT_TRUE(backend_->HasTable(table)) << table;
  }
  EXPECT_TRUE(backend_->HasTable("tokens_by_project"));
  EXPECT_TRUE(backend_->HasTable("sessions_by_expiry"));
  // Reopening migrates nothing.
  store.reset();
  store = OpenOk();
  ASSERT_NE(store, nullptr);
  EXPECT_EQ(backend_->Query("SELECT count(*) FROM schema_version")[0][0], "1");
}

TEST_P(StateStoreConformanceTest, AVersionOneDatabaseIsMigratedToTheCurrentVersion) {
  {
    auto old = OpenOk(StateMigrations().first(1));
    ASSERT_NE(old, nullptr);
    EXPECT_EQ(old->SchemaVersion().value(), 1);
  }
  EXPECT_FALSE(backend_->HasColumn("users", "pbkdf2_iterations"));
  ASSERT_TRUE(backend_
                  ->Exec("INSERT INTO users(username, salt, password_hash) VALUES ('admin', "
                         "'00112233445566778899aabbccddeeff', "
                         "'f7f072bf8d5598719fa5ce975dd8978118bbaeed0b1b08462080fd7a63d8a0f6')")
                  .ok());
  auto store = OpenOk();
  ASSERT_NE(store, nullptr);
  EXPECT_EQ(store->SchemaVersion().value(), kStateSchemaVersion);
  EXPECT_TRUE(backend_->HasColumn("users", "pbkdf2_iterations"));
  // A hash of the version-1 days (100k iterations; computed independently
  // with Python hashlib) still verifies.
  EXPECT_EQ(store->FindUser("admin").value()->password.iterations, 100000);
  EXPECT_TRUE(CheckUserPassword(store.get(), "admin", "old-password-1").value());
  EXPECT_FALSE(CheckUserPassword(store.get(), "admin", "old-password-2").value());
}

TEST_P(StateStoreConformanceTest, TokensOfAVersionTwoDatabaseBecomeIngestTokens) {
  // Before scopes every token was handed to exporters (and also read the
  // API); after the migration each is an ingest token.
  {
    auto old = OpenOk(StateMigrations().first(2));
    ASSERT_NE(old, nullptr);
    EXPECT_EQ(old->SchemaVersion().value(), 2);
  }
  EXPECT_FALSE(backend_->HasColumn("tokens", "scope"));
  ASSERT_TRUE(backend_
                  ->Exec("INSERT INTO projects(id, name, created_at) VALUES (3, 'shop', 1700000000);"
                         "INSERT INTO tokens(hash, project_id, created_at) VALUES ('" +
                         HashToken("version-two-token") + "', 3, 1700000001);")
                  .ok());
  auto store = OpenOk();
  ASSERT_NE(store, nullptr);
  EXPECT_EQ(store->SchemaVersion().value(), kStateSchemaVersion);
  auto grant = FindToken(store.get(), "version-two-token").value();
  ASSERT_TRUE(grant.has_value());
  EXPECT_EQ(*grant, (TokenGrant{3, TokenScope::kIngest}));
  EXPECT_EQ(backend_->Query("SELECT scope FROM tokens"), (Rows{{"ingest"}}));
  EXPECT_EQ(ListTokens(store.get(), "shop").value().at(0).created_at, 1700000001);
}

TEST_P(StateStoreConformanceTest, AVersionTwoDatabaseGainsRetentionOverrides) {
  {
    auto old = OpenOk(StateMigrations().first(2));
    ASSERT_NE(old, nullptr);
    ASSERT_TRUE(old->EnsureProject("shop").ok());
    EXPECT_FALSE(old->ListRetention().ok()) << "no table before migration 4";
  }
  auto store = OpenOk();
  ASSERT_NE(store, nullptr);
  EXPECT_TRUE(store->ListRetention().value().empty());
  ASSERT_TRUE(store->SetRetention("shop", "logs", 7 * 86400).ok());
  EXPECT_EQ(store->ListRetention().value().at(0).seconds, 7 * 86400);
}

TEST_P(StateStoreConformanceTest, ANewerDatabaseIsRefusedAndLeftAlone) {
  {
    auto store = OpenOk();
    ASSERT_NE(store, nullptr);
    ASSERT_TRUE(AddToken(store.get(), "shop", "token-from-the-future").ok());
  }
  const int future = kStateSchemaVersion + 1;
  ASSERT_TRUE(backend_->Exec("UPDATE schema_version SET version = " + std::to_string(future)).ok());
  auto r = backend_->Open(StateMigrations());
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  const std::string& msg = r.status().message();
  EXPECT_NE(msg.find(backend_->Where()), std::string::npos) << msg;
  EXPECT_NE(msg.find("version " + std::to_string(future)), std::string::npos) << msg;
  EXPECT_NE(msg.find("up to " + std::to_string(kStateSchemaVersion)), std::string::npos) << msg;
  EXPECT_NE(msg.find("newer"), std::string::npos) << msg;
  EXPECT_EQ(backend_->Query("SELECT version FROM schema_version"), (Rows{{std::to_string(future)}}));
  EXPECT_EQ(backend_->Query("SELECT count(*) FROM tokens")[0][0], "1");
}

TEST_P(StateStoreConformanceTest, AFailedMigrationRollsBackEveryStepOfTheOpen) {
  {
    auto old = OpenOk(StateMigrations().first(1));
    ASSERT_NE(old, nullptr);
    ASSERT_TRUE(old->EnsureProject("default").ok());
  }
  std::vector<StateMigration> migrations(StateMigrations().begin(), StateMigrations().end());
  migrations.push_back({kStateSchemaVersion + 1, "a step that fails halfway",
                        "CREATE TABLE half_done(x {INT}); INSERT INTO no_such_table VALUES (1);"});
  auto r = backend_->Open(migrations);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kIoError);
  EXPECT_NE(r.status().message().find("a step that fails halfway"), std::string::npos) << r.status().message();
  // Nothing of the open stuck: not migration 2's column, not migration 4's
  // table, not the half step, not a version.
  EXPECT_FALSE(backend_->HasColumn("users", "pbkdf2_iterations"));
  EXPECT_FALSE(backend_->HasTable("project_retention"));
  EXPECT_FALSE(backend_->HasTable("half_done"));
  EXPECT_EQ(backend_->Query("SELECT version FROM schema_version"), (Rows{{"1"}}));
  EXPECT_EQ(backend_->Query("SELECT name FROM projects"), (Rows{{"default"}}));
  // The binary's own migrations still apply afterwards.
  auto store = OpenOk();
  ASSERT_NE(store, nullptr);
  EXPECT_EQ(store->SchemaVersion().value(), kStateSchemaVersion);
}

INSTANTIATE_TEST_SUITE_P(
    Engines, StateStoreConformanceTest,
    ::testing::Values(Engine{"SQLite", [] { return std::unique_ptr<StateBackend>(new SqliteBackend()); }},
                      Engine{"PostgreSQL", [] { return std::unique_ptr<StateBackend>(new PostgresBackend()); }}),
    [](const ::testing::TestParamInfo<Engine>& info) { return std::string(info.param.name); });

// ------------------------------------------------------ the shared list -

TEST(StateMigrationsTest, VersionsAreOneToTheCurrentInOrder) {
  ASSERT_EQ(StateMigrations().size(), static_cast<size_t>(kStateSchemaVersion));
  for (size_t i = 0; i < StateMigrations().size(); ++i) {
    EXPECT_EQ(StateMigrations()[i].version, static_cast<int>(i) + 1) << "versions are 1, 2, ... in order";
  }
}

TEST(StateMigrationsTest, EachDialectSpellsEveryPlaceholder) {
  for (const StateMigration& m : StateMigrations()) {
    for (const StateSqlDialect* d : {&kSqliteStateDialect, &kPostgresStateDialect}) {
      const std::string sql = SpellMigration(m, *d);
      EXPECT_EQ(sql.find('{'), std::string::npos) << sql;
      EXPECT_EQ(sql.find('}'), std::string::npos) << sql;
    }
  }
  // SQLite's spelling of version 1 is the schema of the releases before
  // versioning, which it must adopt unchanged.
  EXPECT_EQ(SpellMigration(StateMigrations()[0], kSqliteStateDialect).substr(0, 139),
            "CREATE TABLE IF NOT EXISTS projects(id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE,"
            "  created_at INTEGER NOT NULL DEFAULT (unixepoch()));");
  EXPECT_EQ(SpellMigration(StateMigrations()[3], kPostgresStateDialect).substr(0, 64),
            "CREATE TABLE project_retention(project_id BIGINT NOT NULL REFERE");
  EXPECT_EQ(SpellMigration({9, "x", "a {ID} b {INT} c {NOW} {OTHER}"}, kPostgresStateDialect),
            "a BIGSERIAL PRIMARY KEY b BIGINT c (extract(epoch FROM now())::bigint) {OTHER}");
}

}  // namespace
}  // namespace sightline
