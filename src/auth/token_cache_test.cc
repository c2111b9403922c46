// TokenCache: entries live exactly for the TTL on an injected clock; a zero
// TTL caches nothing; expired entries do not pile up.

#include "auth/token_cache.h"

#include <atomic>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

namespace sightline {
namespace {

using std::chrono::milliseconds;

TokenGrant Grant(int64_t project_id, TokenScope scope = TokenScope::kIngest) { return {project_id, scope}; }

//! A clock the test moves by hand.
class FakeClock {
 public:
  TokenCache::Clock fn() {
    return [this] { return std::chrono::steady_clock::time_point(milliseconds(now_ms_.load())); };
  }
  void Advance(int64_t ms) { now_ms_ += ms; }

 private:
  std::atomic<int64_t> now_ms_{1'000'000};
};

TEST(TokenCacheTest, AnEntryLivesForTheTtlAndNoLonger) {
  FakeClock clock;
  TokenCache cache(milliseconds(500), clock.fn());
  EXPECT_EQ(cache.Get("h1"), std::nullopt);
  cache.Put("h1", Grant(7));
  EXPECT_EQ(cache.Get("h1"), std::optional<TokenGrant>(Grant(7)));
  clock.Advance(499);
  EXPECT_EQ(cache.Get("h1"), std::optional<TokenGrant>(Grant(7)));
  clock.Advance(1);
  EXPECT_EQ(cache.Get("h1"), std::nullopt) << "an entry must not outlive its TTL";
  // Putting it again (the store said it is still valid) starts a new TTL.
  cache.Put("h1", Grant(7));
  clock.Advance(300);
  EXPECT_EQ(cache.Get("h1"), std::optional<TokenGrant>(Grant(7)));
}

TEST(TokenCacheTest, EntriesAreIndependent) {
  FakeClock clock;
  TokenCache cache(milliseconds(100), clock.fn());
  cache.Put("a", Grant(1));
  clock.Advance(60);
  cache.Put("b", Grant(2));
  clock.Advance(60);
  EXPECT_EQ(cache.Get("a"), std::nullopt);
  EXPECT_EQ(cache.Get("b"), std::optional<TokenGrant>(Grant(2)));
  EXPECT_EQ(cache.Get("c"), std::nullopt);
}

TEST(TokenCacheTest, TheScopeIsCachedWithTheProject) {
  FakeClock clock;
  TokenCache cache(milliseconds(100), clock.fn());
  cache.Put("r", Grant(3, TokenScope::kRead));
  cache.Put("i", Grant(3, TokenScope::kIngest));
  EXPECT_EQ(cache.Get("r"), std::optional<TokenGrant>(Grant(3, TokenScope::kRead)));
  EXPECT_EQ(cache.Get("i"), std::optional<TokenGrant>(Grant(3, TokenScope::kIngest)));
}

TEST(TokenCacheTest, ZeroTtlCachesNothing) {
  FakeClock clock;
  TokenCache cache(milliseconds(0), clock.fn());
  cache.Put("h", Grant(1));
  EXPECT_EQ(cache.Get("h"), std::nullopt);
  EXPECT_EQ(cache.size(), 0u);
  TokenCache negative(milliseconds(-5), clock.fn());
  negative.Put("h", Grant(1));
  EXPECT_EQ(negative.Get("h"), std::nullopt);
}

TEST(TokenCacheTest, ExpiredEntriesAreSweptSoTheMapStaysNearTheLiveSet) {
  FakeClock clock;
  TokenCache cache(milliseconds(10), clock.fn());
  // 10,000 tokens each seen once, then never again (revoked): without a sweep
  // every one of them would stay.
  for (int i = 0; i < 10'000; ++i) {
    cache.Put("token-" + std::to_string(i), Grant(i));
    clock.Advance(1);
  }
  EXPECT_LT(cache.size(), 200u);
  // The newest entries are still served.
  EXPECT_EQ(cache.Get("token-9999"), std::optional<TokenGrant>(Grant(9999)));
}

TEST(TokenCacheTest, ConcurrentPutsAndGetsAgree) {
  TokenCache cache(milliseconds(60'000));
  std::vector<std::thread> threads;
  std::atomic<int> wrong{0};
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 2000; ++i) {
        std::string key = "k" + std::to_string((i * 7 + t) % 50);
        int64_t want = (i * 7 + t) % 50;
        cache.Put(key, Grant(want));
        auto got = cache.Get(key);
        if (got && got->project_id != want) ++wrong;
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(wrong.load(), 0);
  EXPECT_EQ(cache.size(), 50u);
}

}  // namespace
}  // namespace sightline
