// The metric rollups on DuckDB, where the writer keeps a commit's rollups in
// memory until its fold (metric_rollup.h): metric buckets against the
// answer computed from the points the test wrote, before any fold, after
// folds, after a close, and after a crash left minutes dirty.

#include "storage/rollup/metric_rollup.h"

#include <duckdb.h>
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "common/testing/temp_dir.h"
#include "storage/telemetry_store.h"

namespace sightline {
namespace {

using rollup::kHourNs;
using rollup::kMinuteNs;
using Want = MetricSeriesQuery::Want;

constexpr int64_t kProject = 3;
constexpr int64_t kHour0 = 1'699'999'200'000'000'000;  // a whole hour
constexpr int64_t kNever = 3'600'000;                  // a fold interval no test reaches
constexpr int kGauges = 4, kHistograms = 2;
constexpr const char* kBounds = "[10,100,1000]";

int64_t Gauge(int i) { return 100 + i; }
int64_t Histogram(int i) { return 200 + i; }

//! What the test wrote, to compute every answer from.
struct Point {
  int64_t series, time;
  double value;                // gauges
  std::vector<double> counts;  // delta histograms
};

//! `per_series` points of every series at random times in [first, first + span).
MetricBatch MakePoints(uint32_t seed, int per_series, int64_t first, int64_t span, std::vector<Point>* sent) {
  MetricBatch b;
  b.project_id = kProject;
  auto series = [&](int64_t id, MetricType type, int32_t temporality) {
    b.series_id.push_back(id);
    b.metric_name.Append(type == MetricType::kGauge ? "load" : "latency");
    b.metric_type.push_back(static_cast<int32_t>(type));
    b.unit.Append("1");
    b.description.Append("");
    b.temporality.push_back(temporality);
    b.is_monotonic.push_back(0);
    b.service_name.Append("svc");
    b.AddSeriesResource(R"({"service.name":"svc"})", "meter", "");
    b.attributes.Append("{\"n\":" + std::to_string(id) + "}");
  };
  for (int i = 0; i < kGauges; ++i) series(Gauge(i), MetricType::kGauge, 0);
  for (int i = 0; i < kHistograms; ++i) series(Histogram(i), MetricType::kHistogram, 1);
  std::mt19937_64 rng(seed);
  auto point = [&](int64_t id, bool histogram) {
    Point p{id, first + static_cast<int64_t>(rng() % static_cast<uint64_t>(span)), NAN, {}};
    std::string counts;
    if (histogram) {
      for (int k = 0; k < 4; ++k) p.counts.push_back(static_cast<double>(rng() % 50));
      counts = "[" + std::to_string(static_cast<int>(p.counts[0]));
      for (int k = 1; k < 4; ++k) counts += "," + std::to_string(static_cast<int>(p.counts[k]));
      counts += "]";
    } else {
      p.value = static_cast<double>(rng() % 100000) / 100;
    }
    b.point_series_id.push_back(id);
    b.time_ns.push_back(p.time);
    b.start_time_ns.push_back(kHour0 - kHourNs);
    b.value.push_back(p.value);
    b.int_value.push_back(0);
    b.is_int.push_back(0);
    b.count.push_back(histogram ? 1 : 0);
    for (std::vector<double>* c : {&b.sum, &b.min, &b.max}) c->push_back(NAN);
    b.bucket_counts.Append(counts);
    b.explicit_bounds.Append(histogram ? kBounds : "");
    b.exp_histogram.Append("");
    b.quantiles.Append("");
    b.exemplars.Append("");
    b.flags.push_back(0);
    sent->push_back(std::move(p));
  };
  for (int i = 0; i < kGauges; ++i) {
    for (int n = 0; n < per_series; ++n) point(Gauge(i), false);
  }
  for (int i = 0; i < kHistograms; ++i) {
    for (int n = 0; n < per_series; ++n) point(Histogram(i), true);
  }
  return b;
}

struct Store {
  std::string dir;
  std::string engine;
  std::unique_ptr<TelemetryStore> store;

  void Open(const std::string& data_dir, int64_t compaction_ms, const char* engine_name = "duckdb") {
    dir = data_dir;
    engine = engine_name;
    RegisterBuiltinStores();
    StoreOptions o;
    o.data_dir = dir;
    o.read_connections = 1;
    o.rollup_compaction_interval_ms = compaction_ms;
    o.rollup_idle_fold_ms = compaction_ms;  // kNever: no fold but a close's
    Result<std::unique_ptr<TelemetryStore>> s = StoreRegistry::Instance().Open(engine, o);
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    store = std::move(s).value();
  }
  //! A clean close, and an open of the same directory.
  void Reopen(int64_t compaction_ms) {
    ASSERT_TRUE(store->Close().ok());
    store.reset();
    Open(dir, compaction_ms, engine.c_str());
  }
  void Write(const MetricBatch& b) {
    Result<std::unique_ptr<SignalSink>> sink = store->NewSink(Signal::kMetrics);
    ASSERT_TRUE(sink.ok());
    ASSERT_TRUE((*sink)->WriteMetrics({&b}).ok());
  }
  int64_t Count(const std::string& sql) {
    Result<SqlResult> r = store->ExecuteSql(sql);
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    return r.ok() ? std::stoll(r->rows.at(0).at(0).value_or("0")) : -1;
  }
  MetricBuckets Aggregate(const MetricSeriesQuery& q) {
    Result<std::unique_ptr<TelemetryReader>> reader = store->AcquireReader(10'000);
    EXPECT_TRUE(reader.ok());
    Result<MetricBuckets> m = (*reader)->AggregateSeries(q);
    EXPECT_TRUE(m.ok()) << m.status().ToString();
    return m.ok() ? *m : MetricBuckets{};
  }
};

//! Three hours from 20 s past kHour0 to 40 s before its end, in buckets of
//! `step`: partial minutes at both edges, whole minutes and whole hours.
MetricSeriesQuery Query(Want want, int64_t step) {
  MetricSeriesQuery q;
  q.project_id = kProject;
  q.range = {kHour0 + 20'000'000'000, kHour0 + 3 * kHourNs - 40'000'000'000};
  q.buckets = {kHour0, step, 3 * kHourNs / step};
  q.want = want;
  if (want == Want::kHistograms) {
    for (int i = 0; i < kHistograms; ++i) q.series_ids.push_back(Histogram(i));
    q.delta_series_ids = q.series_ids;
  } else {
    for (int i = 0; i < kGauges; ++i) q.series_ids.push_back(Gauge(i));
  }
  return q;
}

//! The answer a scan of `sent` gives.
std::map<std::pair<int64_t, int64_t>, MetricBucket> Expected(const MetricSeriesQuery& q,
                                                             const std::vector<Point>& sent) {
  std::map<std::pair<int64_t, int64_t>, MetricBucket> out;
  for (const Point& p : sent) {
    if (p.time < q.range.from_ns || p.time >= q.range.to_ns) continue;
    const bool histogram = !p.counts.empty();
    if (histogram != (q.want == Want::kHistograms)) continue;
    const int64_t bucket = (p.time - q.buckets.origin_ns) / q.buckets.step_ns;
    MetricBucket& m = out[{p.series, bucket}];
    m.series_id = p.series;
    m.bucket = bucket;
    if (histogram) {
      m.counts.resize(p.counts.size());
      for (size_t k = 0; k < p.counts.size(); ++k) m.counts[k] += p.counts[k];
    } else {
      m.min = m.count == 0 ? p.value : std::min(m.min, p.value);
      m.max = m.count == 0 ? p.value : std::max(m.max, p.value);
      m.sum += p.value;
      ++m.count;
    }
  }
  return out;
}

void ExpectAnswers(Store& s, const std::vector<Point>& sent, const std::string& what) {
  for (int64_t step : {kMinuteNs, kHourNs}) {
    for (Want want : {Want::kStats, Want::kHistograms}) {
      const MetricSeriesQuery q = Query(want, step);
      const auto want_buckets = Expected(q, sent);
      const MetricBuckets got = s.Aggregate(q);
      const std::string where = what + (step == kHourNs ? ", hour buckets" : ", minute buckets") +
                                (want == Want::kStats ? ", gauges" : ", delta histograms");
      ASSERT_FALSE(want_buckets.empty()) << where;
      ASSERT_EQ(got.size(), want_buckets.size()) << where;
      for (const MetricBucket& g : got) {
        auto it = want_buckets.find({g.series_id, g.bucket});
        ASSERT_NE(it, want_buckets.end()) << where << ": series " << g.series_id << " bucket " << g.bucket;
        const MetricBucket& e = it->second;
        if (want == Want::kStats) {
          EXPECT_EQ(g.count, e.count) << where;
          EXPECT_NEAR(g.sum, e.sum, 1e-9 * std::abs(e.sum)) << where;
          EXPECT_EQ(g.min, e.min) << where;
          EXPECT_EQ(g.max, e.max) << where;
        } else {
          EXPECT_EQ(g.counts, e.counts) << where << ": series " << g.series_id << " bucket " << g.bucket;
        }
      }
    }
  }
}

//! Deletes the points of the range's whole minutes from metric_points: an
//! answer that stands came from the rollups.
void DropWholeMinutesOfPoints(Store& s) {
  ASSERT_TRUE(s.store
                  ->ExecuteSql("DELETE FROM metric_points WHERE time_ns >= " + std::to_string(kHour0 + kMinuteNs) +
                               " AND time_ns < " + std::to_string(kHour0 + 3 * kHourNs - kMinuteNs))
                  .ok());
}

//! Every point of `sent` in the minute and hour rows, no minute dirty, and
//! the answers right from the rollups alone.
void ExpectFolded(Store& s, const std::vector<Point>& sent, const std::string& what) {
  EXPECT_EQ(s.Count("SELECT count(*) FROM metric_rollup_dirty"), 0) << what;
  EXPECT_EQ(s.Count("SELECT sum(count) FROM metric_rollup_minute"), kGauges * 800) << what;
  EXPECT_EQ(s.Count("SELECT sum(count) FROM metric_rollup_hour"), kGauges * 800) << what;
  DropWholeMinutesOfPoints(s);
  ExpectAnswers(s, sent, what);
}

//! The tests below that read the DuckDB file itself (DuckDB only).
class MetricRollupTest : public ::testing::Test {
 protected:
  testing::TempDir dir_{"sightline-metric-rollup-test"};
  std::vector<Point> sent_;
  //! Three hours of points, and the second write late into the first's.
  std::vector<MetricBatch> Writes() {
    return {MakePoints(1, 600, kHour0, 3 * kHourNs, &sent_), MakePoints(2, 200, kHour0, kHourNs, &sent_)};
  }
};

//! The same on every engine that keeps metric rollups.
class MetricRollupEngineTest : public MetricRollupTest, public ::testing::WithParamInterface<std::string> {
 protected:
  const char* Engine() const { return GetParam().c_str(); }
};

TEST_P(MetricRollupEngineTest, PointsNoFoldHasAddedAreReadRaw) {
  Store s;
  s.Open(dir_.str(), kNever, Engine());
  for (const MetricBatch& b : Writes()) s.Write(b);
  EXPECT_EQ(s.Count("SELECT count(*) FROM metric_rollup_minute"), 0) << "nothing folded yet";
  EXPECT_EQ(s.Count("SELECT count(*) FROM metric_rollup_dirty"), 180) << "each minute marked once";
  ExpectAnswers(s, sent_, "before any fold");
}

TEST_P(MetricRollupEngineTest, FoldedMinutesAreReadFromTheRollups) {
  Store s;
  s.Open(dir_.str(), 0, Engine());
  for (const MetricBatch& b : Writes()) s.Write(b);
  EXPECT_EQ(s.Count("SELECT count(*) FROM metric_rollup_dirty"), 0);
  EXPECT_EQ(s.Count("SELECT count(*) FROM (SELECT project_id, bucket_ns, series_id FROM metric_rollup_minute "
                    "GROUP BY project_id, bucket_ns, series_id HAVING count(*) > 1)"),
            0)
      << "one row per series and minute";
  ExpectAnswers(s, sent_, "folded after every write");
  DropWholeMinutesOfPoints(s);
  ExpectAnswers(s, sent_, "folded, without the points of whole minutes");
}

//! A count in the closed database file, read by DuckDB itself: what the
//! file holds before a store's open has done anything to it. `sql` may be
//! several statements (separated by ';'): the count is the last one's; -1
//! when a statement fails.
int64_t CountInFile(const std::string& data_dir, const std::string& sql) {
  duckdb_database db = nullptr;
  duckdb_connection conn = nullptr;
  if (duckdb_open((data_dir + "/telemetry.duckdb").c_str(), &db) != DuckDBSuccess) return -1;
  int64_t n = -1;
  if (duckdb_connect(db, &conn) == DuckDBSuccess) {
    duckdb_result r;
    if (duckdb_query(conn, sql.c_str(), &r) == DuckDBSuccess) {
      n = duckdb_value_int64(&r, 0, 0);
    } else {
      ADD_FAILURE() << duckdb_result_error(&r);
    }
    duckdb_destroy_result(&r);
    duckdb_disconnect(&conn);
  }
  duckdb_close(&db);
  return n;
}

TEST_F(MetricRollupTest, AnOpenFoldsTheDeltasAnOlderBuildLeftAndDropsTheirTable) {
  Store s;
  s.Open(dir_.str(), 0);
  for (const MetricBatch& b : Writes()) s.Write(b);
  ASSERT_TRUE(s.store->Close().ok());
  s.store.reset();
  // What a build that appended each commit's rollups left: the last two
  // hours only as unfolded minute deltas in metric_rollup_delta.
  const std::string later = std::to_string(kHour0 + kHourNs);
  ASSERT_GT(CountInFile(dir_.str(),
                        "CREATE TABLE metric_rollup_delta AS SELECT * FROM metric_rollup_minute WHERE "
                        "bucket_ns >= " +
                            later + "; DELETE FROM metric_rollup_minute WHERE bucket_ns >= " + later +
                            "; DELETE FROM metric_rollup_hour WHERE bucket_ns >= " + later +
                            "; SELECT count(*) FROM metric_rollup_delta"),
            0);
  s.Open(dir_.str(), kNever);
  EXPECT_EQ(s.Count("SELECT count(*) FROM information_schema.tables WHERE table_name = 'metric_rollup_delta'"), 0);
  ExpectFolded(s, sent_, "after an open folded the legacy deltas");
}

TEST_P(MetricRollupEngineTest, AWriterThatStopsWritingHasItsRollupsFoldedAnyway) {
  Store s;
  s.Open(dir_.str(), 200, Engine());  // folds after 200 ms without a commit
  for (const MetricBatch& b : Writes()) s.Write(b);
  // No commit follows: the store folds on its own.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (s.Count("SELECT count(*) FROM metric_rollup_dirty") > 0 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  ExpectFolded(s, sent_, "folded while idle");
}

TEST_F(MetricRollupTest, ACloseFoldsWhatIsPending) {
  Store s;
  s.Open(dir_.str(), kNever);
  for (const MetricBatch& b : Writes()) s.Write(b);
  ASSERT_TRUE(s.store->Close().ok());
  s.store.reset();
  EXPECT_EQ(CountInFile(dir_.str(), "SELECT count(*) FROM metric_rollup_dirty"), 0) << "nothing left to rebuild";
  EXPECT_EQ(CountInFile(dir_.str(), "SELECT sum(count) FROM metric_rollup_minute"), kGauges * 800);
  s.Open(dir_.str(), kNever);
  ExpectFolded(s, sent_, "after a close");
}

TEST_P(MetricRollupEngineTest, AnOpenAfterACrashRebuildsTheMinutesItLeftDirty) {
  const std::string live = dir_.str() + "/live", image = dir_.str() + "/image";
  std::vector<MetricBatch> writes = Writes();
  Store s;
  s.Open(live, 0, Engine());
  s.Write(writes[0]);  // folded
  s.Reopen(kNever);
  s.Write(writes[1]);  // late into folded minutes and hours; pending in memory
  ASSERT_GT(s.Count("SELECT count(*) FROM metric_rollup_dirty"), 0);
  // What a crash leaves: the database and WAL as the commits wrote them.
  std::filesystem::copy(live, image);
  s.store.reset();

  Store after;
  after.Open(image, kNever, Engine());
  ExpectFolded(after, sent_, "after a crash, rebuilt");
}

TEST_P(MetricRollupEngineTest, RetentionFoldsThePendingRollupsFirst) {
  Store s;
  s.Open(dir_.str(), kNever, Engine());
  for (const MetricBatch& b : Writes()) s.Write(b);
  // Inside a minute of the first hour: the pending rollups and the points go together.
  const int64_t cutoff = kHour0 + 17 * kMinuteNs + 30'000'000'000;
  Result<uint64_t> deleted = s.store->DeleteBefore(Signal::kMetrics, ProjectSet::All(), cutoff);
  ASSERT_TRUE(deleted.ok()) << deleted.status().ToString();
  EXPECT_GT(*deleted, 0u);
  std::erase_if(sent_, [&](const Point& p) { return p.time < cutoff; });
  EXPECT_EQ(s.Count("SELECT count(*) FROM metric_rollup_dirty"), 0);
  EXPECT_EQ(s.Count("SELECT sum(count) FROM metric_rollup_hour"),
            s.Count("SELECT count(*) FROM metric_points WHERE value IS NOT NULL"));
  DropWholeMinutesOfPoints(s);
  ExpectAnswers(s, sent_, "after retention");
}

INSTANTIATE_TEST_SUITE_P(Engines, MetricRollupEngineTest, ::testing::Values("duckdb", "sqlite"),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace sightline
