// StateStore: minting and looking up ingest tokens, hashed at rest, kept
// across reopen. The database file is inspected with sqlite3 directly.

#include "state/state_store.h"

#include <sqlite3.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <regex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

namespace sightline {
namespace {

//! A fresh directory under the system temp dir, removed at the end.
class TempDir {
 public:
  TempDir() {
    std::random_device rd;
    std::mt19937_64 rng((static_cast<uint64_t>(rd()) << 32) ^ rd());
    path_ = std::filesystem::temp_directory_path() /
            ("sightline-state-test-" + std::to_string(::getpid()) + "-" + std::to_string(rng()));
    std::filesystem::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  std::string str() const { return path_.string(); }

 private:
  std::filesystem::path path_;
};

std::unique_ptr<StateStore> OpenOk(const std::string& dir) {
  auto r = StateStore::Open(dir);
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  if (!r.ok()) return nullptr;
  return std::move(r).value();
}

std::optional<int64_t> Lookup(StateStore* s, const std::string& token) {
  auto r = s->LookupToken(token);
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  return r.ok() ? *r : std::nullopt;
}

//! Every cell of a table as text, read with a separate sqlite3 connection.
std::vector<std::string> AllCells(const std::string& db_path, const std::string& table) {
  std::vector<std::string> cells;
  sqlite3* db = nullptr;
  EXPECT_EQ(sqlite3_open_v2(db_path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr), SQLITE_OK);
  sqlite3_stmt* stmt = nullptr;
  std::string sql = "SELECT * FROM " + table;
  EXPECT_EQ(sqlite3_prepare_v2(db, sql.c_str(), -1, &stmt, nullptr), SQLITE_OK) << sqlite3_errmsg(db);
  while (stmt && sqlite3_step(stmt) == SQLITE_ROW) {
    for (int i = 0; i < sqlite3_column_count(stmt); ++i) {
      const unsigned char* t = sqlite3_column_text(stmt, i);
      cells.emplace_back(t ? reinterpret_cast<const char*>(t) : "");
    }
  }
  sqlite3_finalize(stmt);
  sqlite3_close(db);
  return cells;
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

TEST(StateStoreTest, CreateTokenMintsSlPrefixedHexAndLooksItUp) {
  TempDir dir;
  auto store = OpenOk(dir.str());
  ASSERT_NE(store, nullptr);
  auto token = store->CreateToken("shop");
  ASSERT_TRUE(token.ok()) << token.status().ToString();
  EXPECT_TRUE(std::regex_match(*token, std::regex("sl_[0-9a-f]{64}"))) << *token;

  auto project = store->EnsureProject("shop");
  ASSERT_TRUE(project.ok());
  EXPECT_EQ(Lookup(store.get(), *token), std::optional<int64_t>(*project));

  auto other = store->CreateToken("shop");
  ASSERT_TRUE(other.ok());
  EXPECT_NE(*other, *token);
  EXPECT_EQ(Lookup(store.get(), *other), std::optional<int64_t>(*project));
}

TEST(StateStoreTest, UnknownTokensAreNotFound) {
  TempDir dir;
  auto store = OpenOk(dir.str());
  ASSERT_NE(store, nullptr);
  auto token = store->CreateToken("shop");
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
  EXPECT_EQ(Lookup(store.get(), StateStore::HashToken(*token)), std::nullopt);
}

TEST(StateStoreTest, TokensAreStoredOnlyAsHashes) {
  TempDir dir;
  std::string token, added = "my-own-ingest-token-1234";
  {
    auto store = OpenOk(dir.str());
    ASSERT_NE(store, nullptr);
    auto t = store->CreateToken("shop");
    ASSERT_TRUE(t.ok());
    token = *t;
    ASSERT_TRUE(store->AddToken("shop", added).ok());
  }
  std::string db = dir.str() + "/state.sqlite";
  std::vector<std::string> cells = AllCells(db, "tokens");
  ASSERT_FALSE(cells.empty());
  std::set<std::string> hashes;
  for (const std::string& c : cells) {
    EXPECT_EQ(c.find(token), std::string::npos) << "plaintext token in the tokens table";
    EXPECT_EQ(c.find(token.substr(3)), std::string::npos) << "token hex in the tokens table";
    EXPECT_EQ(c.find(added), std::string::npos) << "plaintext token in the tokens table";
    hashes.insert(c);
  }
  EXPECT_TRUE(hashes.count(StateStore::HashToken(token)));
  EXPECT_TRUE(hashes.count(StateStore::HashToken(added)));
  // Nor anywhere in the files (database, WAL).
  for (const auto& entry : std::filesystem::directory_iterator(dir.str())) {
    std::string bytes = ReadFile(entry.path().string());
    EXPECT_EQ(bytes.find(token.substr(3)), std::string::npos) << entry.path();
    EXPECT_EQ(bytes.find(added), std::string::npos) << entry.path();
  }
}

TEST(StateStoreTest, HashTokenIsSha256Hex) {
  // SHA-256("abc"), FIPS 180-2 test vector.
  EXPECT_EQ(StateStore::HashToken("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(StateStore::HashToken(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
}

TEST(StateStoreTest, AddTokenRejectsShortTokens) {
  TempDir dir;
  auto store = OpenOk(dir.str());
  ASSERT_NE(store, nullptr);
  for (const char* t : {"", "a", "1234567"}) {
    Status st = store->AddToken("shop", t);
    EXPECT_EQ(st.code(), StatusCode::kInvalidArgument) << "'" << t << "'";
    EXPECT_EQ(Lookup(store.get(), t), std::nullopt);
  }
  ASSERT_TRUE(store->AddToken("shop", "12345678").ok());
  auto project = store->EnsureProject("shop");
  ASSERT_TRUE(project.ok());
  EXPECT_EQ(Lookup(store.get(), "12345678"), std::optional<int64_t>(*project));
  auto count = store->CountTokens("shop");
  ASSERT_TRUE(count.ok());
  EXPECT_EQ(*count, 1);
}

TEST(StateStoreTest, AddingTheSameTokenTwiceKeepsOneRow) {
  TempDir dir;
  auto store = OpenOk(dir.str());
  ASSERT_NE(store, nullptr);
  ASSERT_TRUE(store->AddToken("shop", "env-token-xyz").ok());
  ASSERT_TRUE(store->AddToken("shop", "env-token-xyz").ok());
  auto count = store->CountTokens("shop");
  ASSERT_TRUE(count.ok());
  EXPECT_EQ(*count, 1);
}

TEST(StateStoreTest, ProjectsAreCreatedOnceWithDistinctIds) {
  TempDir dir;
  auto store = OpenOk(dir.str());
  ASSERT_NE(store, nullptr);
  auto a1 = store->EnsureProject("a");
  auto b = store->EnsureProject("b");
  auto a2 = store->EnsureProject("a");
  ASSERT_TRUE(a1.ok() && b.ok() && a2.ok());
  EXPECT_EQ(*a1, *a2);
  EXPECT_NE(*a1, *b);

  auto ta = store->CreateToken("a");
  auto tb = store->CreateToken("b");
  ASSERT_TRUE(ta.ok() && tb.ok());
  EXPECT_EQ(Lookup(store.get(), *ta), std::optional<int64_t>(*a1));
  EXPECT_EQ(Lookup(store.get(), *tb), std::optional<int64_t>(*b));
}

TEST(StateStoreTest, CountTokensPerProject) {
  TempDir dir;
  auto store = OpenOk(dir.str());
  ASSERT_NE(store, nullptr);
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(store->CreateToken("a").ok());
  ASSERT_TRUE(store->CreateToken("b").ok());
  ASSERT_TRUE(store->EnsureProject("empty").ok());
  auto a = store->CountTokens("a"), b = store->CountTokens("b"), e = store->CountTokens("empty"),
       missing = store->CountTokens("missing");
  ASSERT_TRUE(a.ok() && b.ok() && e.ok() && missing.ok());
  EXPECT_EQ(*a, 3);
  EXPECT_EQ(*b, 1);
  EXPECT_EQ(*e, 0);
  EXPECT_EQ(*missing, 0);
}

TEST(StateStoreTest, ReopenKeepsProjectsAndTokens) {
  TempDir dir;
  std::string minted;
  int64_t project = 0;
  {
    auto store = OpenOk(dir.str());
    ASSERT_NE(store, nullptr);
    auto t = store->CreateToken("shop");
    ASSERT_TRUE(t.ok());
    minted = *t;
    ASSERT_TRUE(store->AddToken("shop", "chosen-token-42").ok());
    project = store->EnsureProject("shop").value();
  }
  auto store = OpenOk(dir.str());
  ASSERT_NE(store, nullptr);
  EXPECT_EQ(Lookup(store.get(), minted), std::optional<int64_t>(project));
  EXPECT_EQ(Lookup(store.get(), "chosen-token-42"), std::optional<int64_t>(project));
  EXPECT_EQ(store->EnsureProject("shop").value(), project);
  EXPECT_EQ(store->CountTokens("shop").value(), 2);
}

TEST(StateStoreTest, OpenCreatesTheDataDirectory) {
  TempDir dir;
  std::string nested = dir.str() + "/a/b/c";
  auto store = OpenOk(nested);
  ASSERT_NE(store, nullptr);
  EXPECT_TRUE(std::filesystem::exists(nested + "/state.sqlite"));
}

TEST(StateStoreTest, OpenFailsWhenTheDirectoryIsAFile) {
  TempDir dir;
  std::string file = dir.str() + "/not-a-dir";
  std::ofstream(file) << "x";
  auto r = StateStore::Open(file);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kIoError) << r.status().ToString();
}

TEST(StateStoreTest, ConcurrentTokenCreationIsSafe) {
  TempDir dir;
  auto store = OpenOk(dir.str());
  ASSERT_NE(store, nullptr);
  constexpr int kThreads = 4, kEach = 10;
  std::vector<std::vector<std::string>> minted(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kEach; ++i) {
        auto tok = store->CreateToken(t % 2 ? "odd" : "even");
        if (tok.ok()) minted[t].push_back(*tok);
        auto found = store->LookupToken(tok.ok() ? *tok : "");
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

}  // namespace
}  // namespace sightline
