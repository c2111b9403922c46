// The maintenance service's choices: retention cutoffs per project and
// signal in whole chunks, the disk budget dropping the oldest chunk across
// signals until the store is under budget, and the free-space floor that
// refuses ingest and logs once when entered and once when left.

#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <limits>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "common/testing/temp_dir.h"
#include "maintenance/disk_guard.h"
#include "maintenance/maintenance_service.h"
#include "maintenance/retention_policy.h"
#include "state/sqlite/sqlite_state_store.h"
#include "storage/memory/memory_store.h"

namespace sightline {
namespace {

constexpr int64_t kSecond = kNanosPerSecond;
constexpr int64_t kHour = 3600 * kSecond;
constexpr int64_t kDay = 24 * kHour;
//! A Monday at 00:00 UTC, so whole hours and days line up with it.
constexpr int64_t kNow = 1'700'438'400 * kSecond;

constexpr int kSpans = static_cast<int>(Signal::kSpans);
constexpr int kLogs = static_cast<int>(Signal::kLogs);
constexpr int kMetrics = static_cast<int>(Signal::kMetrics);

// --- retention_policy.h -------------------------------------------------------

TEST(AlignDown, RoundsTowardMinusInfinity) {
  EXPECT_EQ(AlignDown(25, 10), 20);
  EXPECT_EQ(AlignDown(20, 10), 20);
  EXPECT_EQ(AlignDown(-1, 10), -10);
  EXPECT_EQ(AlignDown(-10, 10), -10);
  EXPECT_EQ(AlignDown(std::numeric_limits<int64_t>::min() + 3, 10), std::numeric_limits<int64_t>::min());
}

TEST(RetentionPolicy, OverridesWinOverDefaults) {
  RetentionPolicy p =
      RetentionPolicy::Make({7 * 86400, 0, 86400},
                            {{5, "shop", "spans", 3 * 86400}, {5, "shop", "logs", 86400}, {6, "blog", "metrics", 0}})
          .value();
  EXPECT_EQ(p.Effective(5, Signal::kSpans), 3 * 86400);
  EXPECT_EQ(p.Effective(5, Signal::kLogs), 86400);
  EXPECT_EQ(p.Effective(5, Signal::kMetrics), 86400);
  EXPECT_TRUE(p.Overridden(5, Signal::kSpans));
  EXPECT_FALSE(p.Overridden(5, Signal::kMetrics));
  EXPECT_EQ(p.Effective(6, Signal::kMetrics), 0) << "forever, over the default of a day";
  EXPECT_EQ(p.Effective(7, Signal::kSpans), 7 * 86400);
  EXPECT_EQ(p.Effective(7, Signal::kLogs), 0);
  EXPECT_FALSE(RetentionPolicy::Make({0, 0, 0}, {{1, "x", "traces", 60}}).ok());
}

TEST(PlanRetention, OneDeletePerSignalDefaultAndPerDistinctOverrideInWholeChunks) {
  RetentionPolicy p = RetentionPolicy::Make({7 * 86400, 0, 86400}, {{5, "shop", "spans", 3 * 86400},
                                                                    {8, "news", "spans", 3 * 86400},
                                                                    {9, "wiki", "spans", 0},
                                                                    {5, "shop", "logs", 86400},
                                                                    {6, "blog", "metrics", 0}})
                          .value();
  const int64_t now = kNow + 90 * 60 * kSecond;  // 01:30: cutoffs round down to 01:00
  std::vector<PlannedDelete> plan = PlanRetention(p, now, kHour);
  ASSERT_EQ(plan.size(), 4u);
  // Spans: every project but the three overridden ones at 7 days; shop and
  // news together at 3 days; wiki (forever) nowhere.
  EXPECT_EQ(plan[0].signal, Signal::kSpans);
  EXPECT_TRUE(plan[0].projects.all_but);
  EXPECT_EQ(plan[0].projects.ids, (std::vector<int64_t>{5, 8, 9}));
  EXPECT_EQ(plan[0].before_ns, kNow + kHour - 7 * kDay);
  EXPECT_EQ(plan[1].signal, Signal::kSpans);
  EXPECT_FALSE(plan[1].projects.all_but);
  EXPECT_EQ(plan[1].projects.ids, (std::vector<int64_t>{5, 8}));
  EXPECT_EQ(plan[1].before_ns, kNow + kHour - 3 * kDay);
  // Logs: no default (forever), only shop's day.
  EXPECT_EQ(plan[2].signal, Signal::kLogs);
  EXPECT_EQ(plan[2].projects.ids, (std::vector<int64_t>{5}));
  EXPECT_FALSE(plan[2].projects.all_but);
  EXPECT_EQ(plan[2].before_ns, kNow + kHour - kDay);
  // Metrics: the default for all but blog, which keeps its forever.
  EXPECT_EQ(plan[3].signal, Signal::kMetrics);
  EXPECT_TRUE(plan[3].projects.all_but);
  EXPECT_EQ(plan[3].projects.ids, (std::vector<int64_t>{6}));
  EXPECT_EQ(plan[3].before_ns, kNow + kHour - kDay);
}

TEST(PlanRetention, NothingWhenEverythingIsKeptForeverAndNoOverflowForHugeRetentions) {
  EXPECT_TRUE(PlanRetention(RetentionPolicy{}, kNow, kHour).empty());
  RetentionPolicy huge = RetentionPolicy::Make({std::numeric_limits<int64_t>::max() / 2, 0, 0}, {}).value();
  std::vector<PlannedDelete> plan = PlanRetention(huge, kNow, kHour);
  ASSERT_EQ(plan.size(), 1u);
  EXPECT_EQ(plan[0].before_ns, std::numeric_limits<int64_t>::min());
}

TEST(BudgetCutoff, IsTheEndOfTheChunkOfTheOldestRowOfAnySignal) {
  EXPECT_EQ(BudgetCutoff({std::nullopt, std::nullopt, std::nullopt}, kHour), std::nullopt);
  EXPECT_EQ(BudgetCutoff({kNow + 5 * kHour, kNow + 2 * kHour + 7, std::nullopt}, kHour), kNow + 3 * kHour);
  EXPECT_EQ(BudgetCutoff({std::nullopt, std::nullopt, kNow - 1}, kHour), kNow);
}

// --- disk_guard.h -------------------------------------------------------------

//! Captures what spdlog prints while alive.
class LogCapture {
 public:
  LogCapture() : previous_(spdlog::default_logger()) {
    auto sink = std::make_shared<spdlog::sinks::ostream_sink_mt>(out_);
    spdlog::set_default_logger(std::make_shared<spdlog::logger>("capture", sink));
  }
  ~LogCapture() { spdlog::set_default_logger(previous_); }
  int Count(const std::string& needle) const {
    const std::string text = out_.str();
    int n = 0;
    for (size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) ++n;
    return n;
  }

 private:
  std::ostringstream out_;
  std::shared_ptr<spdlog::logger> previous_;
};

constexpr uint64_t kMiB = 1u << 20;

TEST(DiskGuard, RefusesBelowTheFloorResumesAboveTheMarginAndLogsEachChangeOnce) {
  LogCapture log;
  std::atomic<uint64_t> free_bytes{500 * kMiB};
  DiskGuard guard("/data", 100 * kMiB, 7, [&] { return Result<DiskSpace>(DiskSpace{free_bytes.load(), 1000 * kMiB}); });
  EXPECT_EQ(guard.resume_bytes(), 110 * kMiB);
  guard.Check();
  EXPECT_TRUE(guard.Ready().ok());
  EXPECT_EQ(guard.retry_after_seconds(), 7);

  free_bytes = 99 * kMiB;
  for (int i = 0; i < 50; ++i) guard.Check();
  Status refused = guard.Ready();
  EXPECT_EQ(refused.code(), StatusCode::kUnavailable);
  EXPECT_NE(refused.message().find("--min-free-disk-bytes"), std::string::npos) << refused.message();
  EXPECT_NE(refused.message().find("/data"), std::string::npos) << refused.message();
  EXPECT_TRUE(guard.low());
  EXPECT_EQ(guard.available_bytes(), 99 * kMiB);

  free_bytes = 105 * kMiB;  // above the floor, under the margin: still refused
  guard.Check();
  EXPECT_FALSE(guard.Ready().ok());
  free_bytes = 110 * kMiB;
  for (int i = 0; i < 50; ++i) guard.Check();
  EXPECT_TRUE(guard.Ready().ok());
  EXPECT_EQ(guard.reason(), "");

  EXPECT_EQ(log.Count("refusing ingest"), 1);
  EXPECT_EQ(log.Count("resuming ingest"), 1);
}

TEST(DiskGuard, AFailedSampleKeepsTheVerdictAndAZeroFloorIsOff) {
  LogCapture log;
  bool fail = false;
  uint64_t free_bytes = kMiB;
  DiskGuard guard("/data", 10 * kMiB, 1, [&]() -> Result<DiskSpace> {
    if (fail) return Status::IoError("statvfs: gone");
    return DiskSpace{free_bytes, 100 * kMiB};
  });
  guard.Check();
  EXPECT_FALSE(guard.Ready().ok());
  fail = true;
  for (int i = 0; i < 5; ++i) guard.Check();
  EXPECT_FALSE(guard.Ready().ok());
  EXPECT_EQ(log.Count("cannot read free space"), 1);

  DiskGuard off("/data", 0, 1, [&] { return Result<DiskSpace>(DiskSpace{0, 100 * kMiB}); });
  off.Check();
  EXPECT_TRUE(off.Ready().ok());
}

// --- maintenance_service.h ------------------------------------------------------

//! `rows` logs of `project` at `first_ns`, `first_ns + step_ns`, ...
LogBatch Logs(int64_t project, int rows, int64_t first_ns, int64_t step_ns) {
  LogBatch b;
  b.project_id = project;
  b.resources.resource_id.push_back(1);
  b.resources.resource_attributes.Append("{}");
  b.resources.scope_name.Append("");
  b.resources.scope_version.Append("");
  b.resources.scope_attributes.Append("{}");
  for (int i = 0; i < rows; ++i) {
    b.time_ns.push_back(first_ns + i * step_ns);
    b.observed_time_ns.push_back(first_ns + i * step_ns);
    b.severity_number.push_back(9);
    b.severity_text.Append("INFO");
    b.body.Append("hello");
    b.body_type.push_back(1);
    b.trace_id_high.push_back(0);
    b.trace_id_low.push_back(0);
    b.span_id.push_back(0);
    b.flags.push_back(0);
    b.service_name.Append("svc");
    b.attributes.Append("{}");
    b.dropped_attributes_count.push_back(0);
    b.resource_id.push_back(1);
    for (StringColumn* c : {&b.event_name, &b.exception_type, &b.exception_message, &b.exception_group}) c->Append("");
  }
  return b;
}

//! `rows` gauge points of one series of `project`.
MetricBatch Points(int64_t project, int rows, int64_t first_ns, int64_t step_ns) {
  MetricBatch b;
  b.project_id = project;
  b.series_id.push_back(42);
  b.metric_name.Append("g");
  b.metric_type.push_back(1);
  b.unit.Append("");
  b.description.Append("");
  b.temporality.push_back(0);
  b.is_monotonic.push_back(0);
  b.service_name.Append("svc");
  b.AddSeriesResource("{}", "", "");
  b.attributes.Append("{}");
  for (int i = 0; i < rows; ++i) {
    b.point_series_id.push_back(42);
    b.time_ns.push_back(first_ns + i * step_ns);
    b.start_time_ns.push_back(0);
    b.value.push_back(1.0);
    b.int_value.push_back(0);
    b.is_int.push_back(0);
    b.count.push_back(0);
    b.sum.push_back(std::nan(""));
    b.min.push_back(std::nan(""));
    b.max.push_back(std::nan(""));
    b.bucket_counts.Append("");
    b.explicit_bounds.Append("");
    b.exp_histogram.Append("");
    b.quantiles.Append("");
    b.exemplars.Append("");
    b.flags.push_back(0);
  }
  return b;
}

//! The memory engine with a disk: every row takes kRowBytes, and reclaiming
//! can be made to fail (no room for a checkpoint).
class SizedStore final : public TelemetryStore {
 public:
  static constexpr uint64_t kRowBytes = 100;
  const char* name() const override { return "sized"; }
  Result<std::unique_ptr<SignalSink>> NewSink(Signal s) override { return memory_.NewSink(s); }
  StoreStats Stats() override { return memory_.Stats(); }
  Result<SqlResult> ExecuteSql(const std::string& sql) override { return memory_.ExecuteSql(sql); }
  Result<std::unique_ptr<TelemetryReader>> AcquireReader(int64_t ms) override { return memory_.AcquireReader(ms); }
  Status Close() override { return memory_.Close(); }
  Result<uint64_t> DeleteBefore(Signal s, const ProjectSet& p, int64_t before) override {
    deletes.push_back({s, p, before});
    return memory_.DeleteBefore(s, p, before);
  }
  Status ExpireRollups(Signal s, const ProjectSet& p, int64_t before) override {
    rollup_expiries.push_back({s, p, before});
    return Status::Ok();
  }
  Result<std::optional<int64_t>> OldestTime(Signal s) override { return memory_.OldestTime(s); }
  Status ReclaimSpace() override {
    ++reclaims;
    return reclaim_fails ? Status::Unavailable("no room to checkpoint") : Status::Ok();
  }
  Result<StoreFootprint> Footprint() override {
    StoreStats s = memory_.Stats();
    StoreFootprint f;
    f.database_bytes = (s.rows[0] + s.rows[1] + s.rows[2]) * kRowBytes;
    return f;
  }

  void Write(const LogBatch& b) { ASSERT_TRUE(memory_.NewSink(Signal::kLogs).value()->WriteLogs({&b}).ok()); }
  void Write(const MetricBatch& b) { ASSERT_TRUE(memory_.NewSink(Signal::kMetrics).value()->WriteMetrics({&b}).ok()); }
  uint64_t Rows(Signal s) { return memory_.Stats().rows[static_cast<int>(s)]; }
  std::optional<int64_t> Oldest(Signal s) { return memory_.OldestTime(s).value(); }

  std::vector<PlannedDelete> deletes;
  std::vector<PlannedDelete> rollup_expiries;
  int reclaims = 0;
  bool reclaim_fails = false;

 private:
  MemoryStore memory_;
};

class MaintenanceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto state = OpenSqliteStateStore(dir_.str());
    ASSERT_TRUE(state.ok()) << state.status().ToString();
    state_ = std::move(state).value();
    shop_ = state_->EnsureProject("shop").value();
    blog_ = state_->EnsureProject("blog").value();
  }

  MaintenanceReport Pass(MaintenanceOptions options) {
    MaintenanceService service(options, &store_, state_.get(), nullptr, [] { return kNow; });
    return service.RunOnce();
  }

  testing::TempDir dir_{"sightline-maintenance-test"};
  std::unique_ptr<StateStore> state_;
  SizedStore store_;
  int64_t shop_ = 0, blog_ = 0;
};

TEST_F(MaintenanceTest, RetentionDeletesExpiredChunksPerProjectAndKeepsTheRest) {
  // 48 hours of logs and points for each project, one row an hour, the last
  // an hour before now.
  for (int64_t p : {shop_, blog_}) {
    store_.Write(Logs(p, 48, kNow - 48 * kHour, kHour));
    store_.Write(Points(p, 48, kNow - 48 * kHour, kHour));
  }
  ASSERT_TRUE(state_->SetRetention("blog", "logs", 0).ok());        // blog keeps its logs
  ASSERT_TRUE(state_->SetRetention("shop", "metrics", 3600).ok());  // and shop an hour of points
  MaintenanceOptions options;
  options.retention_seconds = {0, 24 * 3600, 12 * 3600};
  MaintenanceReport r = Pass(options);
  ASSERT_TRUE(r.status.ok()) << r.status.ToString();
  // Logs: shop's older than a day go (24 of 48); blog's stay.
  EXPECT_EQ(r.retention_deleted[kLogs], 24u);
  // Points: blog on the 12-hour default keeps 12; shop keeps its last hour's.
  EXPECT_EQ(r.retention_deleted[kMetrics], (48u - 12u) + (48u - 1u));
  EXPECT_EQ(r.retention_deleted[kSpans], 0u);
  EXPECT_EQ(store_.Rows(Signal::kLogs), 24u + 48u);
  EXPECT_EQ(store_.Rows(Signal::kMetrics), 12u + 1u);
  EXPECT_EQ(store_.reclaims, 1) << "deleted space is reclaimed once per pass";
  EXPECT_GT(r.longest_delete_seconds, 0) << "what a writer may have waited for is measured";
  // A second pass at the same time finds nothing more.
  MaintenanceReport again = Pass(options);
  EXPECT_EQ(again.retention_deleted[kLogs] + again.retention_deleted[kMetrics], 0u);
  EXPECT_EQ(store_.reclaims, 1);
}

// --rollup-retention: after each retention delete the rollups of the same
// projects expire at the longer of the two retentions, in whole chunks;
// without it the store is never asked (the rollups go with their rows).
TEST_F(MaintenanceTest, RollupsExpireAtTheLongerOfTheirRetentionAndTheirRows) {
  store_.Write(Logs(shop_, 48, kNow - 48 * kHour, kHour));
  store_.Write(Points(shop_, 48, kNow - 48 * kHour, kHour));
  MaintenanceOptions options;
  options.retention_seconds = {0, 24 * 3600, 36 * 3600};
  ASSERT_TRUE(Pass(options).status.ok());
  EXPECT_TRUE(store_.rollup_expiries.empty());

  options.rollup_retention_seconds = 30 * 3600;
  MaintenanceReport r = Pass(options);
  ASSERT_TRUE(r.status.ok()) << r.status.ToString();
  ASSERT_EQ(store_.rollup_expiries.size(), 2u) << "one per planned delete: logs and metrics";
  for (const PlannedDelete& e : store_.rollup_expiries) {
    // Logs keep a day, their rollups 30 hours; points keep 36 hours, and so
    // do their rollups.
    EXPECT_EQ(e.before_ns, kNow - (e.signal == Signal::kLogs ? 30 : 36) * kHour) << SignalName(e.signal);
    EXPECT_TRUE(e.projects.all_but);
  }
}

TEST_F(MaintenanceTest, RowsGoOnlyOnceTheirWholeChunkHasExpired) {
  // A row every 10 minutes from an hour before to 50 minutes after the
  // day-old mark; the clock is half past an hour.
  store_.Write(Logs(shop_, 12, kNow - kDay - kHour, 10 * 60 * kSecond));
  MaintenanceOptions options;
  options.retention_seconds = {0, 24 * 3600, 0};
  MaintenanceService service(options, &store_, state_.get(), nullptr, [] { return kNow + 30 * 60 * kSecond; });
  MaintenanceReport r = service.RunOnce();
  // Rows older than a day are those before 00:30 of the day before; the hour
  // from 00:00 has not wholly expired, so its three such rows stay and only
  // the six of the hour before go.
  EXPECT_EQ(r.retention_deleted[kLogs], 6u);
  EXPECT_EQ(store_.Oldest(Signal::kLogs), kNow - kDay);
}

TEST_F(MaintenanceTest, TheBudgetDropsTheOldestChunkAcrossSignalsUntilUnderIt) {
  // Logs from 10 hours ago, points from 5 hours ago: 10 rows an hour each.
  store_.Write(Logs(shop_, 100, kNow - 10 * kHour, 6 * 60 * kSecond));
  store_.Write(Points(blog_, 50, kNow - 5 * kHour, 6 * 60 * kSecond));
  MaintenanceOptions options;
  options.max_disk_bytes = 85 * SizedStore::kRowBytes;  // 150 rows now
  MaintenanceReport r = Pass(options);
  ASSERT_TRUE(r.status.ok()) << r.status.ToString();
  // The five oldest hours hold logs only (10 rows each: 150 -> 100); the
  // sixth holds 10 logs and 10 points (-> 80), which is under 85: stop.
  EXPECT_EQ(r.budget_steps, 6);
  EXPECT_EQ(r.budget_deleted[kLogs], 60u);
  EXPECT_EQ(r.budget_deleted[kMetrics], 10u);
  EXPECT_EQ(r.live_bytes, 80 * SizedStore::kRowBytes);
  EXPECT_EQ(store_.Oldest(Signal::kLogs), kNow - 4 * kHour);
  EXPECT_EQ(store_.Oldest(Signal::kMetrics), kNow - 4 * kHour);
  EXPECT_EQ(store_.reclaims, 6);
  for (const PlannedDelete& d : store_.deletes) EXPECT_TRUE(d.projects.all_but && d.projects.ids.empty());
}

TEST_F(MaintenanceTest, TheBudgetStopsWhenSpaceCannotBeReclaimedAndAfterItsStepCap) {
  store_.Write(Logs(shop_, 100, kNow - 10 * kHour, 6 * 60 * kSecond));
  MaintenanceOptions options;
  options.max_disk_bytes = 10 * SizedStore::kRowBytes;
  store_.reclaim_fails = true;
  MaintenanceReport r = Pass(options);
  EXPECT_EQ(r.status.code(), StatusCode::kUnavailable);
  EXPECT_EQ(r.budget_steps, 1) << "no second chunk is dropped while the first one's space is not reclaimed";
  store_.reclaim_fails = false;
  options.max_budget_steps = 3;
  r = Pass(options);
  EXPECT_EQ(r.budget_steps, 3);
  EXPECT_EQ(r.status.code(), StatusCode::kUnavailable) << "still over budget: the next pass goes on";
  EXPECT_EQ(store_.Rows(Signal::kLogs), 60u);
}

TEST_F(MaintenanceTest, WithoutTheOverridesRetentionWaitsButTheBudgetStillRuns) {
  store_.Write(Logs(shop_, 10, kNow - 10 * kDay, kHour));
  MaintenanceOptions options;
  options.retention_seconds = {0, 3600, 0};
  options.max_disk_bytes = 5 * SizedStore::kRowBytes;
  state_.reset();
  auto broken = OpenSqliteStateStore(dir_.str() + "/other", StateMigrations().subspan(0, 2));  // no table
  ASSERT_TRUE(broken.ok());
  MaintenanceService service(options, &store_, broken->get(), nullptr, [] { return kNow; });
  MaintenanceReport r = service.RunOnce();
  EXPECT_FALSE(r.status.ok());
  EXPECT_EQ(r.retention_deleted[kLogs], 0u);
  EXPECT_GT(r.budget_deleted[kLogs], 0u);
  EXPECT_EQ(store_.Rows(Signal::kLogs), 5u);
}

TEST_F(MaintenanceTest, TheThreadsRunPassesAndWatchTheDiskUntilStopped) {
  store_.Write(Logs(shop_, 10, kNow - 10 * kDay, kHour));
  std::atomic<int> samples{0};
  DiskGuard guard("/data", kMiB, 1, [&] {
    samples.fetch_add(1);
    return Result<DiskSpace>(DiskSpace{10 * kMiB, 100 * kMiB});
  });
  MaintenanceOptions options;
  options.retention_seconds = {0, 3600, 0};
  options.interval_ms = 20;
  options.disk_check_interval_ms = 5;
  MaintenanceService service(options, &store_, state_.get(), &guard, [] { return kNow; });
  service.Start();
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while ((service.GetStats().passes < 3 || samples.load() < 3) && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  const auto stopping = std::chrono::steady_clock::now();
  service.Stop();
  EXPECT_LT(std::chrono::steady_clock::now() - stopping, std::chrono::seconds(2));
  MaintenanceService::Stats stats = service.GetStats();
  EXPECT_GE(stats.passes, 3u);
  EXPECT_GE(samples.load(), 3);
  EXPECT_EQ(stats.retention_deleted[kLogs], 10u);
  service.Stop();  // idempotent
}

}  // namespace
}  // namespace sightline
