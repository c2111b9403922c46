// auth/: the hashes are the published algorithms (pinned vectors), passwords
// stored by earlier releases still verify, an unknown user costs a hash, a new
// password ends the user's sessions, tokens and sessions reach the store only
// hashed, revocation by id, a token opens only its scope, and the
// Authenticator's cache: a revoked token keeps working for at most the TTL, a
// minted one works at once.

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <ctime>
#include <filesystem>
#include <map>
#include <random>
#include <regex>
#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "auth/authenticator.h"
#include "auth/crypto.h"
#include "auth/passwords.h"
#include "auth/sessions.h"
#include "auth/tokens.h"
#include "common/testing/temp_dir.h"
#include "state/sqlite/sqlite_state_store.h"
#include "state/testing/forwarding_state_store.h"

namespace sightline {
namespace {

using std::chrono::milliseconds;

//! A fresh directory for one test, removed at the end.
class TempDir : public testing::TempDir {
 public:
  TempDir() : testing::TempDir("sightline-auth-test") {}
};

//! Forwards to a real store, counting token lookups and failing them on demand.
class CountingStore final : public testing::ForwardingStateStore {
 public:
  explicit CountingStore(StateStore* inner) : ForwardingStateStore(inner) {}
  int token_lookups() const { return token_lookups_; }
  void set_fail(bool fail) { fail_ = fail; }

  Result<std::optional<TokenRecord>> FindToken(const std::string& h) override {
    ++token_lookups_;
    if (fail_) return Status::IoError("disk on fire");
    return ForwardingStateStore::FindToken(h);
  }

 private:
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

TEST_F(AuthTest, AnUnknownUserCostsTheSameHashAsAWrongPassword) {
  // Were an unknown name answered without a hash, its answer would come back
  // in microseconds instead of tens of milliseconds: a timer would list the
  // users. The CPU time of this thread (not wall time, which other processes
  // stretch), the least of a few runs each.
  ASSERT_TRUE(SetUserPassword(store(), "admin", "the-right-password").ok());
  auto cpu_ms = [] {
    timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
  };
  auto least_ms = [&](const std::string& user) {
    double least = 1e9;
    for (int i = 0; i < 5; ++i) {
      const double start = cpu_ms();
      EXPECT_FALSE(CheckUserPassword(store(), user, "a-wrong-password").value());
      least = std::min(least, cpu_ms() - start);
    }
    return least;
  };
  const double wrong = least_ms("admin");
  const double unknown = least_ms("nobody");
  EXPECT_GT(unknown, 0.5 * wrong) << "unknown user " << unknown << " ms, wrong password " << wrong << " ms";
  EXPECT_LT(unknown, 2.0 * wrong) << "unknown user " << unknown << " ms, wrong password " << wrong << " ms";
}

TEST_F(AuthTest, ANewPasswordEndsTheUsersSessionsAndTheSameOneKeepsThem) {
  ASSERT_TRUE(SetUserPassword(store(), "admin", "password-one").ok());
  ASSERT_TRUE(SetUserPassword(store(), "alice", "alice-password").ok());
  const int64_t now = UnixSeconds();
  auto before = CreateSession(store(), "admin", 3600, now);
  auto alice = CreateSession(store(), "alice", 3600, now);
  ASSERT_TRUE(before.ok() && alice.ok());

  // A restart with the same --admin-password: nothing changes, nobody is logged out.
  auto same = EnsureUserPassword(store(), "admin", "password-one");
  ASSERT_TRUE(same.ok()) << same.status().ToString();
  EXPECT_FALSE(*same);
  EXPECT_EQ(SessionUser(store(), *before, now).value(), std::optional<std::string>("admin"));

  // A new one: the old sessions end, the old password stops working, other users stay logged in.
  auto changed = EnsureUserPassword(store(), "admin", "password-two");
  ASSERT_TRUE(changed.ok()) << changed.status().ToString();
  EXPECT_TRUE(*changed);
  EXPECT_EQ(SessionUser(store(), *before, now).value(), std::nullopt) << "a session of the old password";
  EXPECT_FALSE(CheckUserPassword(store(), "admin", "password-one").value());
  EXPECT_TRUE(CheckUserPassword(store(), "admin", "password-two").value());
  EXPECT_EQ(SessionUser(store(), *alice, now).value(), std::optional<std::string>("alice"));
  auto after = CreateSession(store(), "admin", 3600, now);
  ASSERT_TRUE(after.ok());
  EXPECT_EQ(SessionUser(store(), *after, now).value(), std::optional<std::string>("admin"));

  // SetUserPassword, even to the same password, always ends them (an operator resetting it means it).
  ASSERT_TRUE(SetUserPassword(store(), "admin", "password-two").ok());
  EXPECT_EQ(SessionUser(store(), *after, now).value(), std::nullopt);
  // An unknown user is created.
  EXPECT_TRUE(EnsureUserPassword(store(), "bob", "bob-password").value());
  EXPECT_TRUE(CheckUserPassword(store(), "bob", "bob-password").value());
}

// ------------------------------------------------------------- tokens --

TEST_F(AuthTest, MintedTokensAreSlHexAndFoundByTheirHash) {
  auto token = MintToken(store(), "shop");
  ASSERT_TRUE(token.ok()) << token.status().ToString();
  EXPECT_TRUE(std::regex_match(*token, std::regex("sl_[0-9a-f]{64}"))) << *token;
  auto project = store()->FindProject("shop").value();
  ASSERT_TRUE(project.has_value());
  auto stored = store()->FindToken(HashToken(*token)).value();
  ASSERT_TRUE(stored.has_value());
  EXPECT_EQ(stored->project_id, *project);
  EXPECT_EQ(stored->project, "shop");
  EXPECT_EQ(stored->scope, TokenScope::kIngest) << "ingest is the default scope";
  EXPECT_EQ(FindToken(store(), *token).value(), std::optional<TokenGrant>(TokenGrant{*project, TokenScope::kIngest}));
  EXPECT_EQ(store()->FindToken(*token).value(), std::nullopt) << "the plaintext is not a key";
}

TEST_F(AuthTest, AddTokenRejectsShortTokens) {
  for (const char* t : {"", "a", "1234567"}) {
    EXPECT_EQ(AddToken(store(), "shop", t).code(), StatusCode::kInvalidArgument) << "'" << t << "'";
  }
  EXPECT_EQ(store()->CountTokens("shop").value(), 0);
  ASSERT_TRUE(AddToken(store(), "shop", "12345678").ok());
  EXPECT_EQ(FindToken(store(), "12345678").value()->project_id, store()->FindProject("shop").value().value());
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
  ASSERT_TRUE(store()->AddToken("a", std::string("abcdef01") + std::string(56, '1'), TokenScope::kIngest).ok());
  ASSERT_TRUE(store()->AddToken("b", std::string("abcdef01") + std::string(56, '2'), TokenScope::kRead).ok());
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

TEST_F(AuthTest, TokensKeepTheirScopeAndListShowsIt) {
  auto ingest = MintToken(store(), "shop", TokenScope::kIngest);
  auto read = MintToken(store(), "shop", TokenScope::kRead);
  ASSERT_TRUE(ingest.ok() && read.ok());
  ASSERT_TRUE(AddToken(store(), "shop", "chosen-read-token", TokenScope::kRead).ok());
  const int64_t shop = store()->FindProject("shop").value().value();
  EXPECT_EQ(FindToken(store(), *ingest).value(), std::optional<TokenGrant>(TokenGrant{shop, TokenScope::kIngest}));
  EXPECT_EQ(FindToken(store(), *read).value(), std::optional<TokenGrant>(TokenGrant{shop, TokenScope::kRead}));
  EXPECT_EQ(FindToken(store(), "chosen-read-token").value(),
            std::optional<TokenGrant>(TokenGrant{shop, TokenScope::kRead}));
  // Adding a stored token again with another scope changes nothing.
  ASSERT_TRUE(AddToken(store(), "shop", "chosen-read-token", TokenScope::kIngest).ok());
  EXPECT_EQ(FindToken(store(), "chosen-read-token").value()->scope, TokenScope::kRead);
  std::map<std::string, TokenScope> scopes;
  auto listed = ListTokens(store(), "shop");
  ASSERT_TRUE(listed.ok()) << listed.status().ToString();
  for (const TokenInfo& t : *listed) scopes[t.id] = t.scope;
  EXPECT_EQ(scopes, (std::map<std::string, TokenScope>{{TokenId(HashToken(*ingest)), TokenScope::kIngest},
                                                       {TokenId(HashToken(*read)), TokenScope::kRead},
                                                       {TokenId(HashToken("chosen-read-token")), TokenScope::kRead}}));
  EXPECT_STREQ(TokenScopeName(TokenScope::kIngest), "ingest");
  EXPECT_STREQ(TokenScopeName(TokenScope::kRead), "read");
  EXPECT_EQ(ParseTokenScope("read"), std::optional<TokenScope>(TokenScope::kRead));
  EXPECT_EQ(ParseTokenScope("ingest"), std::optional<TokenScope>(TokenScope::kIngest));
  EXPECT_EQ(ParseTokenScope("write"), std::nullopt);
  EXPECT_EQ(ParseTokenScope("Read"), std::nullopt);
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
    auto p = auth.ProjectForBearer(ok, TokenScope::kIngest);
    ASSERT_TRUE(p.ok()) << "'" << ok << "': " << p.status().ToString();
    EXPECT_EQ(*p, project);
  }
  for (const char* bad : {"", "Bearer", "Bearer ", "Basic it-token-5f1c", "it-token-5f1c", "Bearer it-token-5f1",
                          "Bearer it-token-5f1c-x", "Bearer IT-TOKEN-5F1C", "Bearer short"}) {
    auto p = auth.ProjectForBearer(bad, TokenScope::kIngest);
    EXPECT_EQ(p.status().code(), StatusCode::kUnauthenticated) << "'" << bad << "'";
  }
}

TEST_F(AuthTest, ATokenOpensOnlyWhatItsScopeAllows) {
  CountingStore counting(store());
  FakeClock clock;
  Authenticator auth({.token_cache_ttl_ms = 1000}, &counting, clock.fn());
  auto ingest = MintToken(store(), "shop", TokenScope::kIngest);
  auto read = MintToken(store(), "shop", TokenScope::kRead);
  ASSERT_TRUE(ingest.ok() && read.ok());
  const int64_t shop = store()->FindProject("shop").value().value();
  // Twice each: once from the store, once from the cache; both must refuse the other scope.
  for (int round = 0; round < 2; ++round) {
    EXPECT_EQ(auth.ProjectForToken(*ingest, TokenScope::kIngest).value(), shop);
    EXPECT_EQ(auth.ProjectForToken(*read, TokenScope::kRead).value(), shop);
    auto ingest_reads = auth.ProjectForToken(*ingest, TokenScope::kRead);
    EXPECT_EQ(ingest_reads.status().code(), StatusCode::kPermissionDenied) << "round " << round;
    EXPECT_NE(ingest_reads.status().message().find("read token"), std::string::npos) << ingest_reads.status().message();
    EXPECT_NE(ingest_reads.status().message().find("session"), std::string::npos) << ingest_reads.status().message();
    auto read_sends = auth.ProjectForBearer("Bearer " + *read, TokenScope::kIngest);
    EXPECT_EQ(read_sends.status().code(), StatusCode::kPermissionDenied) << "round " << round;
    EXPECT_NE(read_sends.status().message().find("ingest token"), std::string::npos) << read_sends.status().message();
  }
  EXPECT_EQ(counting.token_lookups(), 2) << "one store lookup per token; the rest from the cache";
  // An unknown token is unauthenticated whatever the scope asked for.
  EXPECT_EQ(auth.ProjectForToken("sl_unknown-token", TokenScope::kRead).status().code(), StatusCode::kUnauthenticated);
}

TEST_F(AuthTest, ARevokedTokenWorksForAtMostTheTtl) {
  CountingStore counting(store());
  FakeClock clock;
  Authenticator auth({.token_cache_ttl_ms = 2000}, &counting, clock.fn());
  auto token = MintToken(store(), "shop");
  ASSERT_TRUE(token.ok());
  const std::string bearer = "Bearer " + *token;
  ASSERT_TRUE(auth.ProjectForBearer(bearer, TokenScope::kIngest).ok());
  ASSERT_TRUE(auth.ProjectForBearer(bearer, TokenScope::kIngest).ok());
  EXPECT_EQ(counting.token_lookups(), 1) << "the second request is served from the cache";

  ASSERT_TRUE(RevokeToken(store(), TokenId(HashToken(*token))).ok());
  clock.Advance(1999);
  EXPECT_TRUE(auth.ProjectForBearer(bearer, TokenScope::kIngest).ok()) << "still inside the TTL";
  clock.Advance(1);
  auto after = auth.ProjectForBearer(bearer, TokenScope::kIngest);
  EXPECT_EQ(after.status().code(), StatusCode::kUnauthenticated) << "past the TTL the revocation is seen";
  EXPECT_EQ(auth.ProjectForBearer(bearer, TokenScope::kIngest).status().code(), StatusCode::kUnauthenticated)
      << "and stays seen";
}

TEST_F(AuthTest, ZeroTtlSeesRevocationAtOnce) {
  CountingStore counting(store());
  Authenticator auth({.token_cache_ttl_ms = 0}, &counting);
  auto token = MintToken(store(), "shop");
  ASSERT_TRUE(token.ok());
  ASSERT_TRUE(auth.ProjectForToken(*token, TokenScope::kIngest).ok());
  ASSERT_TRUE(auth.ProjectForToken(*token, TokenScope::kIngest).ok());
  EXPECT_EQ(counting.token_lookups(), 2);
  ASSERT_TRUE(RevokeToken(store(), TokenId(HashToken(*token))).ok());
  EXPECT_EQ(auth.ProjectForToken(*token, TokenScope::kIngest).status().code(), StatusCode::kUnauthenticated);
}

TEST_F(AuthTest, ATokenMintedAfterAFailedAttemptWorksAtOnce) {
  FakeClock clock;
  Authenticator auth({.token_cache_ttl_ms = 60'000}, store(), clock.fn());
  ASSERT_TRUE(store()->EnsureProject("shop").ok());
  const std::string chosen = "chosen-token-0001";
  EXPECT_EQ(auth.ProjectForToken(chosen, TokenScope::kIngest).status().code(), StatusCode::kUnauthenticated);
  ASSERT_TRUE(AddToken(store(), "shop", chosen).ok());
  auto p = auth.ProjectForToken(chosen, TokenScope::kIngest);
  ASSERT_TRUE(p.ok()) << "unknown tokens are not cached: " << p.status().ToString();
  EXPECT_EQ(*p, store()->FindProject("shop").value().value());
}

TEST_F(AuthTest, AStoreFailureIsUnavailableNotUnauthenticated) {
  CountingStore counting(store());
  Authenticator auth({.token_cache_ttl_ms = 1000}, &counting);
  ASSERT_TRUE(AddToken(store(), "shop", "some-valid-token").ok());
  counting.set_fail(true);
  auto p = auth.ProjectForToken("some-valid-token", TokenScope::kIngest);
  EXPECT_EQ(p.status().code(), StatusCode::kUnavailable) << p.status().ToString();
  EXPECT_TRUE(p.status().retryable());
  counting.set_fail(false);
  EXPECT_TRUE(auth.ProjectForToken("some-valid-token", TokenScope::kIngest).ok());
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
