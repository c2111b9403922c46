// What only the PostgreSQL state store has: several nodes opening one
// database at once, connections dropped under it, a server that is not
// there, and the URL schemes. What every store does alike is the conformance
// suite (state/state_store_conformance_test.cc). The server is the test
// binary's one real PostgreSQL (state/testing/postgres_server.h); each test
// has a database of its own.

#include "state/postgres/postgres_state_store.h"

#include <atomic>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "auth/passwords.h"
#include "auth/sessions.h"
#include "auth/tokens.h"
#include "state/state_store.h"
#include "state/testing/postgres_server.h"

namespace sightline {
namespace {

using Rows = std::vector<std::vector<std::string>>;

class PostgresStateStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto server = testing::PostgresServer::Shared();
    // Missing PostgreSQL fails: it is a test package (TEST_APT_PACKAGES).
    ASSERT_TRUE(server.ok()) << server.status().ToString();
    server_ = *server;
    auto url = server_->NewDatabase();
    ASSERT_TRUE(url.ok()) << url.status().ToString();
    url_ = *url;
  }

  Rows Query(const std::string& sql) {
    auto rows = testing::PgQuery(url_, sql);
    EXPECT_TRUE(rows.ok()) << rows.status().ToString();
    return rows.ok() ? *rows : Rows{};
  }

  testing::PostgresServer* server_ = nullptr;
  std::string url_;
};

TEST_F(PostgresStateStoreTest, NodesOpeningAnEmptyDatabaseAtOnceMigrateItOnce) {
  // Nodes of one deployment start together; without the advisory lock two
  // would both create the tables (or add the same column) and one would fail.
  constexpr int kNodes = 6;
  for (int round = 0; round < 2; ++round) {
    auto url = server_->NewDatabase();
    ASSERT_TRUE(url.ok()) << url.status().ToString();
    std::atomic<int> ready{0};
    std::vector<Status> results(kNodes);
    std::vector<std::thread> nodes;
    for (int n = 0; n < kNodes; ++n) {
      nodes.emplace_back([&, n] {
        ready.fetch_add(1);
        while (ready.load() < kNodes) std::this_thread::yield();
        auto store = OpenPostgresStateStore(*url);
        results[n] = store.ok() ? (*store)->EnsureProject("default").status() : store.status();
      });
    }
    for (auto& t : nodes) t.join();
    for (int n = 0; n < kNodes; ++n) EXPECT_TRUE(results[n].ok()) << "node " << n << ": " << results[n].ToString();
    auto rows = testing::PgQuery(*url, "SELECT version FROM schema_version");
    ASSERT_TRUE(rows.ok());
    EXPECT_EQ(*rows, (Rows{{std::to_string(kStateSchemaVersion)}}));
    auto projects = testing::PgQuery(*url, "SELECT name FROM projects");
    ASSERT_TRUE(projects.ok());
    EXPECT_EQ(*projects, (Rows{{"default"}}));
  }
}

TEST_F(PostgresStateStoreTest, ADroppedConnectionIsReplacedWithoutFailingTheCall) {
  auto opened = OpenPostgresStateStore(url_);
  ASSERT_TRUE(opened.ok()) << opened.status().ToString();
  StateStore* store = opened->get();
  auto token = MintToken(store, "shop");
  ASSERT_TRUE(token.ok());
  const std::string db = testing::PostgresServer::DatabaseOf(url_);
  for (int i = 0; i < 3; ++i) {
    // What a PostgreSQL restart or an idle-session timeout does to the pool.
    auto killed = testing::PgQuery(server_->Url("postgres"),
                                   "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE datname = '" +
                                       db + "' AND pid <> pg_backend_pid()");
    ASSERT_TRUE(killed.ok()) << killed.status().ToString();
    EXPECT_NE((*killed)[0][0], "0") << "the store holds a connection";
    auto found = FindToken(store, *token);
    ASSERT_TRUE(found.ok()) << found.status().ToString();
    EXPECT_TRUE(found->has_value());
  }
  // Writes too, and a transaction (PutUser).
  (void)testing::PgQuery(server_->Url("postgres"),
                         "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = '" + db + "'");
  EXPECT_TRUE(SetUserPassword(store, "admin", "after-the-drop-pw").ok());
  EXPECT_TRUE(CheckUserPassword(store, "admin", "after-the-drop-pw").value());
}

TEST_F(PostgresStateStoreTest, CallsFromManyThreadsShareASmallPool) {
  auto opened = OpenPostgresStateStore(url_);
  ASSERT_TRUE(opened.ok()) << opened.status().ToString();
  StateStore* store = opened->get();
  ASSERT_TRUE(store->AddToken("shop", "h-1", TokenScope::kIngest).ok());
  std::vector<std::thread> threads;
  std::atomic<int> failures{0};
  for (int t = 0; t < 12; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 30; ++i) {
        auto found = store->FindToken("h-1");
        if (!found.ok() || !found->has_value()) failures.fetch_add(1);
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(failures.load(), 0);
  const std::string db = testing::PostgresServer::DatabaseOf(url_);
  auto open =
      Query("SELECT count(*) FROM pg_stat_activity WHERE datname = '" + db + "' AND application_name = 'sightline'");
  ASSERT_EQ(open.size(), 1u);
  EXPECT_LE(std::stoi(open[0][0]), kPostgresStateMaxConnections);
  EXPECT_GE(std::stoi(open[0][0]), 1);
}

TEST_F(PostgresStateStoreTest, AServerThatIsNotThereIsAnIoErrorWithoutThePassword) {
  // Port 1 (tcpmux): nothing listens there on a test machine.
  auto r = OpenPostgresStateStore("postgresql://sightline:s3cret-pw@127.0.0.1:1/sightline?connect_timeout=3");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kIoError);
  EXPECT_EQ(r.status().message().find("s3cret-pw"), std::string::npos) << r.status().message();
  EXPECT_NE(r.status().message().find("127.0.0.1"), std::string::npos) << r.status().message();
  // A database that does not exist on a live server.
  auto missing = OpenPostgresStateStore(server_->Url("no_such_database"));
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), StatusCode::kIoError);
  EXPECT_NE(missing.status().message().find("no_such_database"), std::string::npos) << missing.status().message();
}

TEST_F(PostgresStateStoreTest, TheRegistryOpensBothSchemesOnTheSameDatabase) {
  ASSERT_EQ(url_.rfind("postgresql://", 0), 0u);
  {
    auto a = OpenStateStore(url_);
    ASSERT_TRUE(a.ok()) << a.status().ToString();
    ASSERT_TRUE(AddToken(a->get(), "shop", "registry-token-pg").ok());
  }
  auto b = OpenStateStore("postgres://" + url_.substr(13));
  ASSERT_TRUE(b.ok()) << b.status().ToString();
  auto found = FindToken(b->get(), "registry-token-pg");
  ASSERT_TRUE(found.ok());
  EXPECT_TRUE(found->has_value()) << "same database either way";
}

TEST_F(PostgresStateStoreTest, TextWithANulByteIsRefusedNotCut) {
  auto opened = OpenPostgresStateStore(url_);
  ASSERT_TRUE(opened.ok()) << opened.status().ToString();
  ASSERT_TRUE((*opened)->PutUser({"admin", {"s", "h", 1}}).ok());
  // libpq would send "admin" for this and find the admin.
  auto r = (*opened)->FindUser(std::string("admin\0x", 7));
  EXPECT_FALSE(r.ok() && r->has_value());
}

TEST(RedactDsnTest, PasswordsAreStarredOut) {
  EXPECT_EQ(RedactDsn("postgres://u:pw@h:5432/db"), "postgres://u:***@h:5432/db");
  EXPECT_EQ(RedactDsn("postgresql://u@h/db"), "postgresql://u@h/db");
  EXPECT_EQ(RedactDsn("postgres://h/db?user=u&password=pw&sslmode=require"),
            "postgres://h/db?user=u&password=***&sslmode=require");
  EXPECT_EQ(RedactDsn("postgres://u:p%40ss@h/db"), "postgres://u:***@h/db");
  EXPECT_EQ(RedactDsn("host=h password=pw dbname=db"), "host=h password=*** dbname=db");
  EXPECT_EQ(RedactDsn("postgres://h/db"), "postgres://h/db");
}

}  // namespace
}  // namespace sightline
