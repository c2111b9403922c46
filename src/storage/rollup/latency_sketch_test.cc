#include "storage/rollup/latency_sketch.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

namespace sightline {
namespace {

//! The exact interpolated percentile, as the SQL engines compute it.
double Exact(std::vector<int64_t> v, double q) {
  std::sort(v.begin(), v.end());
  const double pos = q * static_cast<double>(v.size() - 1);
  const size_t lo = static_cast<size_t>(std::floor(pos));
  const size_t hi = std::min(lo + 1, v.size() - 1);
  return static_cast<double>(v[lo]) + (static_cast<double>(v[hi]) - static_cast<double>(v[lo])) * (pos - lo);
}

LatencySketch SketchOf(const std::vector<int64_t>& v) {
  LatencySketch s;
  for (int64_t d : v) s.Add(d);
  return s;
}

void ExpectWithinError(const std::vector<int64_t>& v, const LatencySketch& s) {
  const int64_t lo = *std::min_element(v.begin(), v.end()), hi = *std::max_element(v.begin(), v.end());
  for (double q : {0.0, 0.01, 0.25, 0.5, 0.9, 0.95, 0.99, 0.999, 1.0}) {
    const double exact = Exact(v, q), got = s.Percentile(q, lo, hi);
    EXPECT_LE(std::fabs(got - exact), LatencySketch::kRelativeError * std::fabs(exact) + 1e-9)
        << "q=" << q << " exact=" << exact << " sketch=" << got;
  }
}

TEST(LatencySketchTest, EveryPercentileIsWithinTheStatedErrorOfTheExactOne) {
  std::mt19937_64 rng(7);
  std::lognormal_distribution<double> latency(std::log(20e6), 1.5);  // ~20 ms, a long tail
  for (size_t n : {1, 2, 3, 10, 1000, 100000}) {
    std::vector<int64_t> v;
    for (size_t i = 0; i < n; ++i) v.push_back(static_cast<int64_t>(latency(rng)) + 1);
    ExpectWithinError(v, SketchOf(v));
  }
}

TEST(LatencySketchTest, AnInterpolationAcrossAGapStaysWithinTheError) {
  // p50 of two values lies halfway between them, far from either bucket.
  ExpectWithinError({10, 1'000'000'000}, SketchOf({10, 1'000'000'000}));
  ExpectWithinError({1, 1, 1, 7, 5'000'000'000'000}, SketchOf({1, 1, 1, 7, 5'000'000'000'000}));
}

TEST(LatencySketchTest, ZeroIsExact) {
  const LatencySketch s = SketchOf({0, 0, 0, 0});
  EXPECT_EQ(s.Percentile(0.5, 0, 0), 0);
  ExpectWithinError({0, 0, 5, 100}, SketchOf({0, 0, 5, 100}));
}

TEST(LatencySketchTest, NegativeDurationsAreKeptInOrder) {
  // A clock that went backwards: no relative promise, but the order holds.
  const LatencySketch s = SketchOf({-1000, -10, 0, 10, 1000});
  EXPECT_LT(s.Percentile(0.0, -1000, 1000), s.Percentile(0.25, -1000, 1000));
  EXPECT_LT(s.Percentile(0.25, -1000, 1000), s.Percentile(0.5, -1000, 1000));
  EXPECT_EQ(s.Percentile(0.5, -1000, 1000), 0);
  EXPECT_NEAR(s.Percentile(0.25, -1000, 1000), -10, 10 * LatencySketch::kRelativeError);
}

TEST(LatencySketchTest, MergingEqualsSketchingTheUnion) {
  std::mt19937_64 rng(11);
  std::uniform_int_distribution<int64_t> d(0, 10'000'000'000);
  std::vector<int64_t> a, b, all;
  for (int i = 0; i < 5000; ++i) a.push_back(d(rng));
  for (int i = 0; i < 3000; ++i) b.push_back(d(rng) / 1000);
  all = a;
  all.insert(all.end(), b.begin(), b.end());
  LatencySketch merged = SketchOf(a);
  merged.Merge(SketchOf(b));
  EXPECT_EQ(merged.Encode(), SketchOf(all).Encode());
  EXPECT_EQ(merged.count(), 8000);
  LatencySketch from_text;
  ASSERT_TRUE(from_text.MergeEncoded(SketchOf(a).Encode()).ok());
  ASSERT_TRUE(from_text.MergeEncoded(SketchOf(b).Encode()).ok());
  EXPECT_EQ(from_text.Encode(), merged.Encode());
}

TEST(LatencySketchTest, EncodingRoundTripsAndRefusesGarbage) {
  const LatencySketch s = SketchOf({-5, 0, 1, 2, 3, 1'000'000});
  LatencySketch back;
  ASSERT_TRUE(back.MergeEncoded(s.Encode()).ok());
  EXPECT_EQ(back.Encode(), s.Encode());
  EXPECT_EQ(back.count(), 6);
  EXPECT_EQ(LatencySketch().Encode(), "");
  for (const char* bad : {"x", "1", "1:", ":3", "1:-2", "1:2,3:4", "3:1 1:1"}) {
    LatencySketch t;
    EXPECT_FALSE(t.MergeEncoded(bad).ok()) << bad;
  }
}

TEST(LatencySketchTest, ASketchHoldsNoMoreBucketsThanValues) {
  // A nanosecond and 20 minutes: two entries, not the buckets between them.
  const LatencySketch s = SketchOf({1, 1'200'000'000'000});
  EXPECT_EQ(s.Encode(), "1:1 " + std::to_string(LatencySketch::KeyOf(1'200'000'000'000)) + ":1");
  EXPECT_GT(LatencySketch::KeyOf(1'200'000'000'000), 1000);
}

TEST(LatencySketchTest, AnEmptySketchHasNoPercentile) {
  EXPECT_TRUE(std::isnan(LatencySketch().Percentile(0.5, 0, 0)));
}

}  // namespace
}  // namespace sightline
