// auth/: the hashes are the published algorithms (pinned vectors), passwords
// stored by earlier releases still verify, tokens and sessions reach the store
// only hashed, revocation by id, and the Authenticator's cache: a revoked
// token keeps working for at most the TTL, a minted one works at once.

#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <random>
#include <regex>
#include <set>
#include <string>

#include <gtest/gtest.h>

#include "auth/authenticator.h"
#include "auth/crypto.h"
#include "auth/passwords.h"
#include "auth/sessions.h"
#include "auth/tokens.h"
#include "common/testing/temp_dir.h"
#include "state/sqlite/sqlite_state_store.h"

namespace sightline {
namespace {

using std::chrono::milliseconds;

//! A fresh directory for one test, removed at the end.
class TempDir : public testing::TempDir {
 public:
  TempDir() : testing::TempDir("sightline-auth-test") {}
};

//! Forwards to a real store, counting token lookups and failing them on demand.
class CountingStore final : public StateStore {
 public:
  explicit CountingStore(StateStore* inner) : inner_(inner) {}
  int token_lookups() const { return token_lookups_; }
  void set_fail(bool fail) { fail_ = fail; }

  Result<int64_t> EnsureProject(const std::string& n) override { return inner_->EnsureProject(n); }
  Result<std::optional<int64_t>> FindProject(const std::string& n) override { return inner_->FindProject(n); }
  Result<std::vector<ProjectRecord>> ListProjects() override { return inner_->ListProjects(); }
  Status AddToken(const std::string& p, const std::string& h) override { return inner_->AddToken(p, h); }
  Result<std::optional<int64_t>> FindToken(const std::string& h) override {
    ++token_lookups_;
    if (fail_) return Status::IoError("disk on fire");
    return inner_->FindToken(h);
  }
  Result<std::vector<TokenRecord>> ListTokens(const std::optional<std::string>& p) override {
    return inner_->ListTokens(p);
  }
  Result<int64_t> CountTokens(const std::string& p) override { return inner_->CountTokens(p); }
  Result<bool> DeleteToken(const std::string& h) override { return inner_->DeleteToken(h); }
  Status PutUser(const UserRecord& u) override { return inner_->PutUser(u); }
  Result<std::optional<UserRecord>> FindUser(const std::string& u) override { return inner_->FindUser(u); }
  Status AddSession(const SessionRecord& s) override { return inner_->AddSession(s); }
  Result<std::optional<std::string>> FindSession(const std::string& h, int64_t now) override {
    return inner_->FindSession(h, now);
  }
  Status DeleteSession(const std::string& h, int64_t now) override { return inner_->DeleteSession(h, now); }
  Result<int> SchemaVersion() override { return inner_->SchemaVersion(); }
  Status SetRetention(const std::string& p, const std::string& s, std::optional<int64_t> v) override {
    return inner_->SetRetention(p, s, v);
  }
  Result<std::vector<RetentionRecord>> ListRetention() override { return inner_->ListRetention(); }

 private:
  StateStore* inner_;
  std::atomic<int> token_lookups_{0};
  std::atomic<bool> fail_{false};
};

class FakeClock {
 public:
  TokenCache::Clock fn() {
    return [this] { return std::chrono::steady_clock::time_point(milliseconds(now_ms_.load())); };
  }
  void Advance(int64_t ms) { now_ms_ += ms; }

 private:
  std::atomic<int64_t> now_ms_{5'000'000};
};

class AuthTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto s = OpenSqliteStateStore(dir_.str());
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    store_ = std::move(s.value());
  }
  StateStore* store() { return store_.get(); }

  TempDir dir_;
  std::unique_ptr<StateStore> store_;
};

// ------------------------------------------------------------- crypto --

TEST(AuthCryptoTest, Sha256MatchesTheFipsVectors) {
  EXPECT_EQ(HashToken("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(HashToken(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
}

TEST(AuthCryptoTest, Pbkdf2MatchesRfc7914) {
  // RFC 7914 section 11, PBKDF2-HMAC-SHA256 P="passwd" S="salt" c=1: the first 32 bytes.
  EXPECT_EQ(Pbkdf2Sha256Hex("passwd", "salt", 1), "55ac046e56e3089fec1691c22544b605f94185216dde0465e68b9d57c20dacbc");
  EXPECT_EQ(Pbkdf2Sha256Hex("passwd", "salt", 0), "");
  EXPECT_EQ(Pbkdf2Sha256Hex("passwd", "salt", -1), "");
}

TEST(AuthCryptoTest, RandomHexHasTheLengthAndDiffers) {
  auto a = RandomHex(16), b = RandomHex(16);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_TRUE(std::regex_match(*a, std::regex("[0-9a-f]{32}"))) << *a;
  EXPECT_NE(*a, *b);
}

TEST(AuthCryptoTest, ConstantTimeEqualsIsEquality) {
  EXPECT_TRUE(ConstantTimeEquals("abc", "abc"));
  EXPECT_TRUE(ConstantTimeEquals("", ""));
  EXPECT_FALSE(ConstantTimeEquals("abc", "abd"));
  EXPECT_FALSE(ConstantTimeEquals("abc", "ab"));
  EXPECT_FALSE(ConstantTimeEquals("ab", "abc"));
}

// ---------------------------------------------------------- passwords --

TEST(AuthPasswordTest, ARecordStoredByEarlierReleasesStillVerifies) {
  // What the state store wrote before auth/ existed: salt = 16 random bytes
  // as hex text, fed to PBKDF2 as that text, 100k iterations. The hash was
  // computed independently (Python hashlib.pbkdf2_hmac).
  PasswordRecord old{"00112233445566778899aabbccddeeff",
                     "f7f072bf8d5598719fa5ce975dd8978118bbaeed0b1b08462080fd7a63d8a0f6", 100000};
  EXPECT_TRUE(VerifyPassword("old-password-1", old));
  EXPECT_FALSE(VerifyPassword("old-password-2", old));
  EXPECT_FALSE(VerifyPassword("", old));
  PasswordRecord fewer = old;
  fewer.iterations = 99999;
  EXPECT_FALSE(VerifyPassword("old-password-1", fewer));
  PasswordRecord corrupt = old;
  corrupt.iterations = 0;
  EXPECT_FALSE(VerifyPassword("old-password-1", corrupt));
}

TEST(AuthPasswordTest, HashPasswordSaltsEachRecord) {
  auto a = HashPassword("correct horse"), b = HashPassword("correct horse");
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(a->iterations, kPbkdf2Iterations);
  EXPECT_TRUE(std::regex_match(a->salt, std::regex("[0-9a-f]{32}"))) << a->salt;
  EXPECT_NE(a->salt, b->salt);
  EXPECT_NE(a->hash, b->hash);
  EXPECT_EQ(a->hash, Pbkdf2Sha256Hex("correct horse", a->salt, kPbkdf2Iterations));
  EXPECT_TRUE(VerifyPassword("correct horse", *a));
  EXPECT_FALSE(VerifyPassword("correct horsf", *a));
  EXPECT_EQ(HashPassword("1234567").status().code(), StatusCode::kInvalidArgument);
}

TEST_F(AuthTest, UserPasswordsAreCheckedAndReset) {
  EXPECT_FALSE(CheckUserPassword(store(), "admin", "whatever-123").value()) << "unknown user";
  ASSERT_TRUE(SetUserPassword(store(), "admin", "first-password").ok());
  EXPECT_TRUE(CheckUserPassword(store(), "admin", "first-password").value());
  EXPECT_FALSE(CheckUserPassword(store(), "admin", "First-password").value());
  ASSERT_TRUE(SetUserPassword(store(), "admin", "second-password").ok());
  EXPECT_FALSE(CheckUserPassword(store(), "admin", "first-password").value());
  EXPECT_TRUE(CheckUserPassword(store(), "admin", "second-password").value());
  EXPECT_EQ(SetUserPassword(store(), "", "long-enough").code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(SetUserPassword(store(), "bob", "short").code(), StatusCode::kInvalidArgument);
  EXPECT_FALSE(store()->FindUser("bob").value().has_value());
  // The store holds the record, not the password.
  auto user = store()->FindUser("admin").value();
  ASSERT_TRUE(user.has_value());
  EXPECT_EQ(user->password.hash.find("second-password"), std::string::npos);
  EXPECT_EQ(user->password.hash.size(), 64u);
}

// ------------------------------------------------------------- tokens --

TEST_F(AuthTest, MintedTokensAreSlHexAndFoundByTheirHash) {
  auto token = MintToken(store(), "shop");
  ASSERT_TRUE(token.ok()) << token.status().ToString();
  EXPECT_TRUE(std::regex_match(*token, std::regex("sl_[0-9a-f]{64}"))) << *token;
  auto project = store()->FindProject("shop").value();
  ASSERT_TRUE(project.has_value());
  EXPECT_EQ(store()->FindToken(HashToken(*token)).value(), project);
  EXPECT_EQ(FindToken(store(), *token).value(), project);
  EXPECT_EQ(store()->FindToken(*token).value(), std::nullopt) << "the plaintext is not a key";
}

TEST_F(AuthTest, AddTokenRejectsShortTokens) {
  for (const char* t : {"", "a", "1234567"}) {
    EXPECT_EQ(AddToken(store(), "shop", t).code(), StatusCode::kInvalidArgument) << "'" << t << "'";
  }
  EXPECT_EQ(store()->CountTokens("shop").value(), 0);
  ASSERT_TRUE(AddToken(store(), "shop", "12345678").ok());
  EXPECT_EQ(FindToken(store(), "12345678").value(), store()->FindProject("shop").value());
}

TEST_F(AuthTest, ListTokensShowsIdsNeverTokensOrWholeHashes) {
  auto t1 = MintToken(store(), "shop"), t2 = MintToken(store(), "shop"), other = MintToken(store(), "other");
  ASSERT_TRUE(t1.ok() && t2.ok() && other.ok());
  auto list = ListTokens(store(), "shop");
  ASSERT_TRUE(list.ok());
  ASSERT_EQ(list->size(), 2u);
  std::set<std::string> ids;
  for (const TokenInfo& t : *list) {
    EXPECT_EQ(t.id.size(), kTokenIdLength);
    EXPECT_EQ(t.project, "shop");
    EXPECT_GT(t.created_at, 1'600'000'000);
    ids.insert(t.id);
  }
  EXPECT_EQ(ids, (std::set<std::string>{TokenId(HashToken(*t1)), TokenId(HashToken(*t2))}));
  EXPECT_EQ(TokenId(HashToken(*t1)), HashToken(*t1).substr(0, kTokenIdLength));
  EXPECT_TRUE(ListTokens(store(), "missing").value().empty());
}

TEST_F(AuthTest, RevokeTokenByIdDeletesExactlyThatToken) {
  auto keep = MintToken(store(), "shop"), gone = MintToken(store(), "shop");
  ASSERT_TRUE(keep.ok() && gone.ok());
  std::string id = TokenId(HashToken(*gone));
  // Ids are printed lowercase; an upper-case copy still names the token.
  std::string upper = id;
  for (char& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  auto revoked = RevokeToken(store(), upper);
  ASSERT_TRUE(revoked.ok()) << revoked.status().ToString();
  EXPECT_EQ(revoked->id, id);
  EXPECT_EQ(revoked->project, "shop");
  EXPECT_EQ(FindToken(store(), *gone).value(), std::nullopt);
  EXPECT_TRUE(FindToken(store(), *keep).value().has_value());
  EXPECT_EQ(RevokeToken(store(), id).status().code(), StatusCode::kNotFound) << "revoking twice";
}

TEST_F(AuthTest, RevokeTokenRefusesMalformedAndAmbiguousIds) {
  ASSERT_TRUE(store()->AddToken("a", std::string("abcdef01") + std::string(56, '1')).ok());
  ASSERT_TRUE(store()->AddToken("b", std::string("abcdef01") + std::string(56, '2')).ok());
  for (const char* bad : {"", "abcdef0", "not-hex!", "abcdef01zz"}) {
    EXPECT_EQ(RevokeToken(store(), bad).status().code(), StatusCode::kInvalidArgument) << bad;
  }
  auto ambiguous = RevokeToken(store(), "abcdef01");
  EXPECT_EQ(ambiguous.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(store()->ListTokens(std::nullopt).value().size(), 2u) << "an ambiguous id revokes nothing";
  EXPECT_EQ(RevokeToken(store(), "0000000000").status().code(), StatusCode::kNotFound);
  auto one = RevokeToken(store(), "abcdef012");
  ASSERT_TRUE(one.ok()) << one.status().ToString();
  EXPECT_EQ(one->project, "b");
  EXPECT_EQ(store()->CountTokens("a").value(), 1);
  EXPECT_EQ(store()->CountTokens("b").value(), 0);
}

// ----------------------------------------------------------- sessions --

TEST_F(AuthTest, SessionsLiveUntilTheirExpiryOrLogout) {
  ASSERT_TRUE(SetUserPassword(store(), "admin", "password-1").ok());
  const int64_t now = 1'700'000'000;
  auto id = CreateSession(store(), "admin", 3600, now);
  ASSERT_TRUE(id.ok()) << id.status().ToString();
  EXPECT_TRUE(std::regex_match(*id, std::regex("[0-9a-f]{64}"))) << *id;
  EXPECT_EQ(SessionUser(store(), *id, now).value(), std::optional<std::string>("admin"));
  EXPECT_EQ(SessionUser(store(), *id, now + 3599).value(), std::optional<std::string>("admin"));
  EXPECT_EQ(SessionUser(store(), *id, now + 3600).value(), std::nullopt) << "expired";
  EXPECT_EQ(SessionUser(store(), "", now).value(), std::nullopt);
  EXPECT_EQ(SessionUser(store(), HashToken(*id), now).value(), std::nullopt) << "the stored hash is no session id";

  auto other = CreateSession(store(), "admin", 3600, now);
  ASSERT_TRUE(other.ok());
  EXPECT_NE(*other, *id);
  ASSERT_TRUE(EndSession(store(), *id, now).ok());
  EXPECT_EQ(SessionUser(store(), *id, now).value(), std::nullopt) << "after logout";
  EXPECT_EQ(SessionUser(store(), *other, now).value(), std::optional<std::string>("admin")) << "other sessions live on";
}

// ------------------------------------------------------- authenticator --

TEST_F(AuthTest, BearerHeadersAreParsedLeniently) {
  ASSERT_TRUE(AddToken(store(), "default", "it-token-5f1c").ok());
  const int64_t project = store()->FindProject("default").value().value();
  Authenticator auth({.token_cache_ttl_ms = 1000}, store());
  for (const char* ok : {"Bearer it-token-5f1c", "bearer it-token-5f1c", "BEARER it-token-5f1c",
                         "Bearer it-token-5f1c  ", "Bearer  it-token-5f1c"}) {
    auto p = auth.ProjectForBearer(ok);
    ASSERT_TRUE(p.ok()) << "'" << ok << "': " << p.status().ToString();
    EXPECT_EQ(*p, project);
  }
  for (const char* bad : {"", "Bearer", "Bearer ", "Basic it-token-5f1c", "it-token-5f1c", "Bearer it-token-5f1",
                          "Bearer it-token-5f1c-x", "Bearer IT-TOKEN-5F1C", "Bearer short"}) {
    auto p = auth.ProjectForBearer(bad);
    EXPECT_EQ(p.status().code(), StatusCode::kUnauthenticated) << "'" << bad << "'";
  }
}

TEST_F(AuthTest, ARevokedTokenWorksForAtMostTheTtl) {
  CountingStore counting(store());
  FakeClock clock;
  Authenticator auth({.token_cache_ttl_ms = 2000}, &counting, clock.fn());
  auto token = MintToken(store(), "shop");
  ASSERT_TRUE(token.ok());
  const std::string bearer = "Bearer " + *token;
  ASSERT_TRUE(auth.ProjectForBearer(bearer).ok());
  ASSERT_TRUE(auth.ProjectForBearer(bearer).ok());
  EXPECT_EQ(counting.token_lookups(), 1) << "the second request is served from the cache";

  ASSERT_TRUE(RevokeToken(store(), TokenId(HashToken(*token))).ok());
  clock.Advance(1999);
  EXPECT_TRUE(auth.ProjectForBearer(bearer).ok()) << "still inside the TTL";
  clock.Advance(1);
  auto after = auth.ProjectForBearer(bearer);
  EXPECT_EQ(after.status().code(), StatusCode::kUnauthenticated) << "past the TTL the revocation is seen";
  EXPECT_EQ(auth.ProjectForBearer(bearer).status().code(), StatusCode::kUnauthenticated) << "and stays seen";
}

TEST_F(AuthTest, ZeroTtlSeesRevocationAtOnce) {
  CountingStore counting(store());
  Authenticator auth({.token_cache_ttl_ms = 0}, &counting);
  auto token = MintToken(store(), "shop");
  ASSERT_TRUE(token.ok());
  ASSERT_TRUE(auth.ProjectForToken(*token).ok());
  ASSERT_TRUE(auth.ProjectForToken(*token).ok());
  EXPECT_EQ(counting.token_lookups(), 2);
  ASSERT_TRUE(RevokeToken(store(), TokenId(HashToken(*token))).ok());
  EXPECT_EQ(auth.ProjectForToken(*token).status().code(), StatusCode::kUnauthenticated);
}

TEST_F(AuthTest, ATokenMintedAfterAFailedAttemptWorksAtOnce) {
  FakeClock clock;
  Authenticator auth({.token_cache_ttl_ms = 60'000}, store(), clock.fn());
  ASSERT_TRUE(store()->EnsureProject("shop").ok());
  const std::string chosen = "chosen-token-0001";
  EXPECT_EQ(auth.ProjectForToken(chosen).status().code(), StatusCode::kUnauthenticated);
  ASSERT_TRUE(AddToken(store(), "shop", chosen).ok());
  auto p = auth.ProjectForToken(chosen);
  ASSERT_TRUE(p.ok()) << "unknown tokens are not cached: " << p.status().ToString();
  EXPECT_EQ(*p, store()->FindProject("shop").value().value());
}

TEST_F(AuthTest, AStoreFailureIsUnavailableNotUnauthenticated) {
  CountingStore counting(store());
  Authenticator auth({.token_cache_ttl_ms = 1000}, &counting);
  ASSERT_TRUE(AddToken(store(), "shop", "some-valid-token").ok());
  counting.set_fail(true);
  auto p = auth.ProjectForToken("some-valid-token");
  EXPECT_EQ(p.status().code(), StatusCode::kUnavailable) << p.status().ToString();
  EXPECT_TRUE(p.status().retryable());
  counting.set_fail(false);
  EXPECT_TRUE(auth.ProjectForToken("some-valid-token").ok());
}

TEST_F(AuthTest, LoginCreatesASessionAndLogoutEndsIt) {
  ASSERT_TRUE(SetUserPassword(store(), "admin", "admin-password").ok());
  Authenticator auth({}, store());
  EXPECT_EQ(auth.Login("admin", "wrong-password", 60).status().code(), StatusCode::kUnauthenticated);
  EXPECT_EQ(auth.Login("nobody", "admin-password", 60).status().code(), StatusCode::kUnauthenticated);
  auto session = auth.Login("admin", "admin-password", 60);
  ASSERT_TRUE(session.ok()) << session.status().ToString();
  EXPECT_EQ(auth.SessionUser(*session).value(), std::optional<std::string>("admin"));
  ASSERT_TRUE(auth.Logout(*session).ok());
  EXPECT_EQ(auth.SessionUser(*session).value(), std::nullopt);
}

}  // namespace
}  // namespace sightline
