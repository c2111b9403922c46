#include "bench/probe.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <climits>
#include <cstdlib>
#include <filesystem>
#include <set>

#include "bench/load_generator.h"
#include "bench/probe_state.h"

namespace sightline::bench {
namespace {

TEST(ProbeLevels, ParsesPlainAndSuffixedCounts) {
  auto a = ParseLevels("10000,50000");
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(*a, (std::vector<uint64_t>{10000, 50000}));
  auto b = ParseLevels("1M,10M,100M");
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(*b, (std::vector<uint64_t>{1000000, 10000000, 100000000}));
  auto c = ParseLevels("2.5k,1B");
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(*c, (std::vector<uint64_t>{2500, 1000000000}));
}

TEST(ProbeLevels, RejectsGarbageEmptyAndNonIncreasing) {
  EXPECT_FALSE(ParseLevels("").ok());
  EXPECT_FALSE(ParseLevels("10x").ok());
  EXPECT_FALSE(ParseLevels("1M,,2M").ok());
  EXPECT_FALSE(ParseLevels("0").ok());
  EXPECT_FALSE(ParseLevels("10M,1M").ok());
  EXPECT_FALSE(ParseLevels("5k,5000").ok());
}

CallSamples Samples(std::vector<double> ms, std::vector<int> status) {
  CallSamples c;
  c.samples_ms = std::move(ms);
  c.http_status = std::move(status);
  for (int s : c.http_status) c.timeouts += (s == 504 || s == 0) ? 1 : 0;
  return c;
}

TEST(ProbeRule, PassesWhenEveryMedianIsWithinTheLimit) {
  std::string reason = "stale";
  // One slow sample does not fail a call whose median is fast.
  EXPECT_TRUE(LevelPasses({"a", "b"},
                          {Samples({100, 4900, 5800}, {200, 200, 200}), Samples({5000, 1, 2}, {200, 200, 200})}, 5000,
                          &reason));
  EXPECT_EQ(reason, "");
}

TEST(ProbeRule, FailsOnASlowMedianNamingTheCall) {
  std::string reason;
  EXPECT_FALSE(LevelPasses({"fast", "slow"},
                           {Samples({1, 2, 3}, {200, 200, 200}), Samples({5001, 5002, 1}, {200, 200, 200})}, 5000,
                           &reason));
  EXPECT_NE(reason.find("slow"), std::string::npos) << reason;
  EXPECT_NE(reason.find("median"), std::string::npos) << reason;
}

TEST(ProbeRule, FailsOnAnyTimeoutEvenWithAFastMedian) {
  std::string reason;
  EXPECT_FALSE(LevelPasses({"c"}, {Samples({10, 20, 6000}, {200, 200, 504})}, 5000, &reason));
  EXPECT_NE(reason.find("timeout"), std::string::npos) << reason;
  EXPECT_FALSE(LevelPasses({"c"}, {Samples({10, 20, 6000}, {200, 200, 0})}, 5000, &reason));
  EXPECT_NE(reason.find("timeout"), std::string::npos) << reason;
}

TEST(ProbeRule, FailsOnAnErrorStatus) {
  std::string reason;
  EXPECT_FALSE(LevelPasses({"c"}, {Samples({10, 20, 30}, {200, 500, 200})}, 5000, &reason));
  EXPECT_NE(reason.find("HTTP 500"), std::string::npos) << reason;
}

TEST(ProbeRule, ReadCliffIsTheLastPassBeforeTheFirstFailure) {
  const std::vector<uint64_t> levels = {1000, 10000, 100000};
  EXPECT_EQ(ReadCliff(levels, {true, true, true}), 100000u);
  EXPECT_EQ(ReadCliff(levels, {true, false}), 1000u);
  EXPECT_EQ(ReadCliff(levels, {true, false, true}), 1000u);  // a later pass does not count
  EXPECT_EQ(ReadCliff(levels, {false}), std::nullopt);
  EXPECT_EQ(ReadCliff(levels, {}), std::nullopt);
}

// The probe spreads a fill over its window with the generator's steps:
// request k's spans and logs fall in [base + k step, base + (k + 1) step), and
// a metric series' points are one point step apart.
TEST(ProbeTimeLayout, TimeStepSpreadsRequestsAndPoints) {
  GeneratorOptions g;
  g.batch = 400;  // 20 series (one service), 20 points each
  g.base_time_ns = 1700000000ll * 1000000000ll;
  g.time_step_ns = 3600ll * 1000000000ll;
  LoadGenerator gen(g);
  for (uint64_t k : {0u, 5u}) {
    const int64_t lo = g.base_time_ns + static_cast<int64_t>(k) * g.time_step_ns, hi = lo + g.time_step_ns;
    int64_t min_start = INT64_MAX, max_start = 0;
    for (const SpanRow& s : gen.Spans(k).rows) {
      if (!IsZero(s.parent_span_id)) continue;  // roots start inside the window
      min_start = std::min(min_start, s.start_time_ns);
      max_start = std::max(max_start, s.start_time_ns);
    }
    EXPECT_GE(min_start, lo);
    EXPECT_LT(max_start, hi);
    EXPECT_GT(max_start - min_start, g.time_step_ns / 2);  // spread over the window, not bunched
    for (const LogRow& l : gen.Logs(k).rows) {
      EXPECT_GE(l.time_ns, lo);
      EXPECT_LT(l.time_ns, hi + 1000);  // plus up to 999 ns of jitter
    }
  }
  g.point_step_ns = 60ll * 1000000000ll;  // metrics on a step of their own
  LoadGenerator gen2(g);
  const MetricRequest m = gen2.Metrics(1);
  ASSERT_EQ(m.rows.size(), 400u);
  std::set<int64_t> times;
  for (const MetricPoint& p : m.rows) times.insert(p.time_ns);
  EXPECT_EQ(times.size(), 20u);  // request 1 continues each series at steps 20..39
  EXPECT_EQ(*times.begin(), g.base_time_ns + 20 * g.point_step_ns);
  EXPECT_EQ(*times.rbegin(), g.base_time_ns + 39 * g.point_step_ns);
}

ProbeState SampleState() {
  ProbeState s;
  s.engine = "duckdb";
  s.signals = {"spans"};
  s.seed = 7;
  s.levels = {20000, 50000};
  s.server_args = "--rollup-exact-spans=10\n--read-pool=2";
  s.batch = 16384;
  s.base_time_ns = 1764633600000000000;
  s.time_step_ns = 123456789;
  s.point_step_ns = 4567;
  s.from_ms = 1764633540000;
  s.to_ms = 1764719940000;
  s.sent = 2;
  s.in_flight_until = 6;
  s.accepted = {32768, 0, 0};
  s.truth_complete = false;
  s.probed_rows = 20000;
  s.background_payload = (3ull << 38) + 12;
  s.background_accepted = 1200;
  return s;
}

TEST(ProbeState, SurvivesASaveAndALoad) {
  const std::string dir = ::testing::TempDir() + "/sightline-probe-state-test";
  std::filesystem::create_directories(dir);
  const ProbeState s = SampleState();
  ASSERT_TRUE(SaveProbeState(dir, s).ok());
  EXPECT_FALSE(std::filesystem::exists(dir + "/probe_state.json.tmp"));
  auto back = LoadProbeState(dir);
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(ProbeStateJson(*back), ProbeStateJson(s));
  EXPECT_EQ(back->signals, s.signals);
  EXPECT_EQ(back->levels, s.levels);
  EXPECT_EQ(back->server_args, s.server_args);
  EXPECT_EQ(back->base_time_ns, s.base_time_ns);
  EXPECT_EQ(back->accepted, s.accepted);
  EXPECT_EQ(back->in_flight_until, 6u);
  EXPECT_FALSE(back->truth_complete);
  EXPECT_EQ(back->background_payload, s.background_payload);
  std::filesystem::remove_all(dir);
  auto missing = LoadProbeState(dir);
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("--keep-data"), std::string::npos);
}

TEST(ProbeState, RejectsTextThatIsNotAState) {
  EXPECT_FALSE(ParseProbeState("").ok());
  EXPECT_FALSE(ParseProbeState("{\"version\":2}").ok());
  std::string json = ProbeStateJson(SampleState());
  json.replace(json.find("\"sent\""), 6, "\"sant\"");
  EXPECT_FALSE(ParseProbeState(json).ok());
}

TEST(ProbeState, NamesTheFirstSettingThatDiffers) {
  const ProbeState saved = SampleState();
  EXPECT_EQ(ProbeStateMismatch(saved, saved), "");
  ProbeState w = saved;
  w.sent = 99;  // progress is not a setting
  w.from_ms = 1;
  EXPECT_EQ(ProbeStateMismatch(saved, w), "");
  w = saved;
  w.levels = {20000, 60000};
  EXPECT_EQ(ProbeStateMismatch(saved, w),
            "--levels: the kept ladder has '20000,50000', this run asks for '20000,60000'");
  w = saved;
  w.signals = {"logs"};
  EXPECT_NE(ProbeStateMismatch(saved, w).find("--signal"), std::string::npos);
  w = saved;
  w.engine = "sqlite";
  EXPECT_NE(ProbeStateMismatch(saved, w).find("--spawn"), std::string::npos);
  w = saved;
  w.seed = 8;
  EXPECT_NE(ProbeStateMismatch(saved, w).find("--seed"), std::string::npos);
  w = saved;
  w.batch = 1000;
  EXPECT_NE(ProbeStateMismatch(saved, w).find("--batch"), std::string::npos);
  w = saved;
  w.server_args = "";
  EXPECT_NE(ProbeStateMismatch(saved, w).find("--server-arg"), std::string::npos);
}

}  // namespace
}  // namespace sightline::bench
