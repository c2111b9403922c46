#include "ingest/retry_after.h"

#include <gtest/gtest.h>

#include <map>
#include <set>

namespace sightline {
namespace {

struct Seen {
  int min = 1 << 30;
  int max = 0;
  std::set<int> values;
};

Seen Draw(const RetryAfterPolicy& policy, double pressure, std::mt19937_64* rng, int n = 2000) {
  Seen s;
  for (int i = 0; i < n; ++i) {
    int v = RetryAfterSeconds(policy, pressure, rng);
    s.min = std::min(s.min, v);
    s.max = std::max(s.max, v);
    s.values.insert(v);
  }
  return s;
}

TEST(RetryAfterTest, GrowsWithPressureWithinTheStatedBounds) {
  std::mt19937_64 rng(42);
  const RetryAfterPolicy policy;  // 1 s .. 10 s
  // The bounds of docs/API.md: delay = 1 + round(9 p), plus 0..ceil(delay / 2).
  const struct {
    double pressure;
    int lo, hi;
  } cases[] = {{0.0, 1, 2}, {0.25, 3, 5}, {0.5, 6, 9}, {1.0, 10, 15}};
  int previous_max = 0;
  for (const auto& c : cases) {
    Seen s = Draw(policy, c.pressure, &rng);
    EXPECT_EQ(s.min, c.lo) << "pressure " << c.pressure;
    EXPECT_EQ(s.max, c.hi) << "pressure " << c.pressure;
    EXPECT_GT(s.max, previous_max) << "rises with pressure";
    previous_max = s.max;
  }
}

TEST(RetryAfterTest, CallsDifferSoClientsDoNotRetryInLockStep) {
  std::mt19937_64 rng(7);
  const RetryAfterPolicy policy;
  for (double pressure : {0.0, 0.5, 1.0}) {
    Seen s = Draw(policy, pressure, &rng, 200);
    EXPECT_GE(s.values.size(), 2u) << "pressure " << pressure;
  }
  // Saturated: every value of 10..15 comes up, none dominates.
  std::map<int, int> counts;
  for (int i = 0; i < 6000; ++i) counts[RetryAfterSeconds(policy, 1.0, &rng)]++;
  ASSERT_EQ(counts.size(), 6u);
  for (auto [value, n] : counts) EXPECT_NEAR(n, 1000, 200) << value << " s";
  // The per-thread generator varies too.
  std::set<int> unseeded;
  for (int i = 0; i < 200; ++i) unseeded.insert(RetryAfterSeconds(policy, 1.0));
  EXPECT_GE(unseeded.size(), 2u);
}

TEST(RetryAfterTest, OutOfRangePressureAndPolicyAreClamped) {
  std::mt19937_64 rng(1);
  EXPECT_LE(Draw({1, 10}, 7.0, &rng).max, 15);
  EXPECT_GE(Draw({1, 10}, -1.0, &rng).min, 1);
  EXPECT_GE(Draw({0, 0}, 0.0, &rng).min, 1) << "never 0: that would mean retry at once";
  EXPECT_EQ(Draw({5, 2}, 1.0, &rng).min, 5) << "max below min: min";
}

}  // namespace
}  // namespace sightline
