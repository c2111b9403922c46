// The span rollups on each engine that keeps them (DuckDB, SQLite): span
// groups from the rollups against the exact answer over the same spans (a
// second store that always reads raw spans), with the deltas folded after
// every write or never, across writes, late spans, chart buckets of minutes
// and hours, retention and a reopen.

#include "storage/rollup/span_rollup.h"

#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "common/testing/temp_dir.h"
#include "storage/rollup/latency_sketch.h"
#include "storage/rollup/signal_rollups.h"
#include "storage/telemetry_store.h"

namespace sightline {
namespace {

using rollup::kHourNs;
using rollup::kMinuteNs;

constexpr int64_t kProject = 4;
// 13 min 20 s into an hour, 20 s into a minute: no range below is aligned by accident.
constexpr int64_t kT0 = 1'700'000'000'000'000'000;
constexpr int64_t kHour0 = kT0 - 800'000'000'000;  // the hour kT0 is in

const char* const kServices[] = {"frontend", "checkout", "worker"};
const char* const kRoutes[] = {"/a", "/b", "", "/c"};  // "" -> the span name is the endpoint

//! `n` spans starting in [first_ns, first_ns + span_ns), random services,
//! endpoints, kinds, errors and long-tailed durations.
SpanBatch MakeSpans(uint32_t seed, int n, int64_t first_ns, int64_t span_ns) {
  SpanBatch b;
  b.project_id = kProject;
  b.resources.resource_id.push_back(9);
  b.resources.resource_attributes.Append("{}");
  b.resources.scope_name.Append("s");
  b.resources.scope_version.Append("1");
  b.resources.scope_attributes.Append("{}");
  std::mt19937_64 rng(seed);
  std::lognormal_distribution<double> latency(std::log(5e6), 1.2);
  for (int i = 0; i < n; ++i) {
    const int64_t start = first_ns + static_cast<int64_t>(rng() % static_cast<uint64_t>(span_ns));
    b.trace_id_high.push_back(rng() | 1);
    b.trace_id_low.push_back(rng());
    b.span_id.push_back(rng() | 1);
    b.parent_span_id.push_back(rng() % 3 == 0 ? 0 : rng() | 1);
    b.trace_state.Append("");
    b.flags.push_back(1);
    b.name.Append(rng() % 2 ? "work" : "GET");
    b.kind.push_back(static_cast<int32_t>(rng() % 4));
    b.start_time_ns.push_back(start);
    b.end_time_ns.push_back(start + static_cast<int64_t>(latency(rng)));
    b.status_code.push_back(rng() % 10 == 0 ? 2 : 0);
    b.status_message.Append("");
    b.service_name.Append(kServices[rng() % 3]);
    b.http_route.Append(kRoutes[rng() % 4]);
    b.http_method.Append("");
    b.http_status_code.push_back(0);
    // Every tenth span has an exception, of one of two types.
    const bool exception = rng() % 10 == 0;
    b.exception_type.Append(exception ? (rng() % 2 ? "Timeout" : "IOError") : "");
    b.exception_message.Append(exception ? "failed" : "");
    b.exception_group.Append(exception ? "failed" : "");
    for (StringColumn* c : {&b.db_system, &b.events, &b.links}) c->Append("");
    b.attributes.Append("{}");
    b.dropped_attributes_count.push_back(0);
    b.dropped_events_count.push_back(0);
    b.dropped_links_count.push_back(0);
    b.resource_id.push_back(9);
  }
  return b;
}

//! The writes every store gets: three hours of spans in five writes, the
//! last of them late (an hour and more behind the others).
std::vector<SpanBatch> Writes() {
  std::vector<SpanBatch> out;
  for (uint32_t i = 0; i < 4; ++i) out.push_back(MakeSpans(i + 1, 3000, kT0 + i * 45 * kMinuteNs, 45 * kMinuteNs));
  out.push_back(MakeSpans(99, 2000, kT0 - kHourNs, 2 * kHourNs));
  return out;
}

struct Store {
  std::string engine;
  testing::TempDir dir{"sightline-rollup-test"};
  std::unique_ptr<TelemetryStore> store;

  Store(std::string engine_name, int64_t exact_spans, int64_t compaction_ms, bool outlive_rows = false)
      : engine(std::move(engine_name)) {
    Open(exact_spans, compaction_ms, outlive_rows);
  }
  void Open(int64_t exact_spans, int64_t compaction_ms, bool outlive_rows = false) {
    RegisterBuiltinStores();
    StoreOptions o;
    o.data_dir = dir.str();
    o.read_connections = 1;
    o.rollup_exact_spans = exact_spans;
    o.rollup_compaction_interval_ms = compaction_ms;
    o.rollups_outlive_rows = outlive_rows;
    Result<std::unique_ptr<TelemetryStore>> s = StoreRegistry::Instance().Open(engine, o);
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    store = std::move(s).value();
  }
  void Write(const std::vector<SpanBatch>& batches) {
    Result<std::unique_ptr<SignalSink>> sink = store->NewSink(Signal::kSpans);
    ASSERT_TRUE(sink.ok());
    for (const SpanBatch& b : batches) ASSERT_TRUE((*sink)->WriteSpans({&b}).ok());
  }
  int64_t Count(const std::string& sql) {
    Result<SqlResult> r = store->ExecuteSql(sql);
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    return r.ok() ? std::stoll(r->rows.at(0).at(0).value_or("0")) : -1;
  }
  SpanGroups Group(const SpanGroupQuery& q) {
    Result<std::unique_ptr<TelemetryReader>> reader = store->AcquireReader(10'000);
    EXPECT_TRUE(reader.ok());
    Result<SpanGroups> g = (*reader)->GroupSpans(q);
    EXPECT_TRUE(g.ok()) << g.status().ToString();
    return g.ok() ? *g : SpanGroups{};
  }
};

std::map<std::vector<std::string>, SpanGroup> ByKeys(const SpanGroups& groups) {
  std::map<std::vector<std::string>, SpanGroup> out;
  for (const SpanGroup& g : groups) out[g.keys] = g;
  return out;
}

//! Counts and errors equal; each percentile within the sketch's error.
void ExpectSameGroups(const SpanGroups& want, const SpanGroups& got, const std::string& what) {
  auto w = ByKeys(want), g = ByKeys(got);
  ASSERT_EQ(w.size(), g.size()) << what;
  ASSERT_FALSE(w.empty()) << what << ": a query that finds nothing proves nothing";
  for (const auto& [keys, a] : w) {
    ASSERT_TRUE(g.contains(keys)) << what;
    const SpanGroup& b = g.at(keys);
    EXPECT_EQ(a.count, b.count) << what;
    EXPECT_EQ(a.errors, b.errors) << what;
    for (int i = 0; i < 3; ++i) {
      if (std::isnan(a.percentiles_ns[i])) {
        EXPECT_TRUE(std::isnan(b.percentiles_ns[i])) << what;
        continue;
      }
      EXPECT_LE(std::fabs(a.percentiles_ns[i] - b.percentiles_ns[i]),
                LatencySketch::kRelativeError * std::fabs(a.percentiles_ns[i]) + 1e-6)
          << what << " p" << i << " exact " << a.percentiles_ns[i] << " rollup " << b.percentiles_ns[i];
    }
  }
}

SpanGroupQuery Query(TimeRange range, std::vector<SpanDimension> dims, bool entry_only = true) {
  SpanGroupQuery q;
  q.filter.project_id = kProject;
  q.filter.range = range;
  q.filter.entry_only = entry_only;
  q.dimensions = std::move(dims);
  return q;
}

std::vector<std::pair<std::string, SpanGroupQuery>> Queries() {
  using D = SpanDimension;
  std::vector<std::pair<std::string, SpanGroupQuery>> out = {
      {"endpoints over whole hours", Query({kHour0 - kHourNs, kHour0 + 4 * kHourNs}, {D::kService, D::kEndpoint})},
      {"endpoints, unaligned edges",
       Query({kT0 + 7 * kMinuteNs + 13'000'000'123, kT0 + 2 * kHourNs + 5'000'000'001}, {D::kService, D::kEndpoint})},
      {"every span by service", Query({kT0 - 30 * kMinuteNs, kT0 + 150 * kMinuteNs}, {D::kService}, false)},
      {"no dimensions", Query({kT0 - 2 * kHourNs, kT0 + 3 * kHourNs}, {})},
      {"under two minutes, one whole", Query({kT0 + 30'000'000'000, kT0 + 140'000'000'000}, {D::kEndpoint})},
  };
  SpanGroupQuery one_service = Query({kHour0, kHour0 + 3 * kHourNs}, {D::kEndpoint});
  one_service.filter.service = "checkout";
  out.push_back({"one service", one_service});
  one_service.filter.endpoint = "/b";
  out.push_back({"one endpoint", one_service});
  // The endpoints chart: minute buckets, the top labels and "other".
  SpanGroupQuery minutes = Query({kT0, kT0 + 50 * kMinuteNs}, {D::kBucket, D::kLabel});
  minutes.buckets = {kT0 - 20'000'000'000, 5 * kMinuteNs, 11};
  minutes.labels = {{"frontend", "/a"}, {"worker", "work"}};
  minutes.percentiles = {false, true, false};
  out.push_back({"chart of 5-minute buckets", minutes});
  SpanGroupQuery hours = Query({kHour0 - kHourNs, kHour0 + 4 * kHourNs}, {D::kBucket, D::kService});
  hours.buckets = {kHour0 - kHourNs, kHourNs, 4};  // the last hour is outside the buckets
  out.push_back({"chart of hour buckets", hours});
  SpanGroupQuery seconds = Query({kT0, kT0 + 10 * kMinuteNs}, {D::kBucket});
  seconds.buckets = {kT0, 10'000'000'000, 60};
  out.push_back({"chart of 10-second buckets (raw)", seconds});
  SpanGroupQuery errors = Query({kHour0, kHour0 + 3 * kHourNs}, {D::kService});
  errors.filter.status_code = 2;
  out.push_back({"errors only (raw)", errors});
  return out;
}

// AddSpans groups a batch by views into it before it touches the map: two
// batches with minutes in common, added to one map, give what adding each
// span to its key (as the spans table stores the key) gives.
TEST(AddSpansTest, BatchesMatchEachSpanAddedToItsKey) {
  const SpanBatch first = MakeSpans(7, 3000, kT0, 10 * kMinuteNs);
  const SpanBatch second = MakeSpans(8, 3000, kT0 + 5 * kMinuteNs, 10 * kMinuteNs);
  rollup::SpanRollupMap grouped;
  rollup::AddSpans(first, &grouped);
  rollup::AddSpans(second, &grouped);
  rollup::SpanRollupMap expected;
  for (const SpanBatch* b : {&first, &second}) {
    for (size_t r = 0; r < b->rows(); ++r) {
      const std::string_view route = b->http_route.Get(r);
      const rollup::SpanRollupKey key{kProject, rollup::FloorTo(b->start_time_ns[r], kMinuteNs),
                                      std::string(b->service_name.Get(r)),
                                      std::string(route.empty() ? b->name.Get(r) : route),
                                      b->kind[r] == 2 || b->kind[r] == 5 || b->parent_span_id[r] == 0 ? 1 : 0};
      expected[key].Add(b->end_time_ns[r] - b->start_time_ns[r], b->status_code[r] == 2);
    }
  }
  ASSERT_EQ(grouped.size(), expected.size());
  int64_t spans = 0;
  for (const auto& [key, want] : expected) {
    const auto it = grouped.find(key);
    ASSERT_NE(it, grouped.end()) << key.service << " " << key.endpoint << " " << key.bucket_ns;
    const rollup::SpanRollupValue& got = it->second;
    EXPECT_EQ(got.count, want.count);
    EXPECT_EQ(got.errors, want.errors);
    EXPECT_EQ(got.duration_sum, want.duration_sum);
    EXPECT_EQ(got.duration_min, want.duration_min);
    EXPECT_EQ(got.duration_max, want.duration_max);
    EXPECT_EQ(got.sketch.Encode(), want.sketch.Encode());
    spans += got.count;
  }
  EXPECT_EQ(spans, 6000);
}

//! An engine, and its fold interval (0: after every write).
class SpanRollupTest : public ::testing::TestWithParam<std::tuple<std::string, int64_t>> {
 protected:
  const std::string& Engine() const { return std::get<0>(GetParam()); }
  int64_t CompactionMs() const { return std::get<1>(GetParam()); }
};

TEST_P(SpanRollupTest, GroupsFromRollupsMatchTheExactAnswer) {
  Store exact(Engine(), INT64_MAX, 0), rollups(Engine(), 0, CompactionMs());
  const std::vector<SpanBatch> writes = Writes();
  exact.Write(writes);
  rollups.Write(writes);
  // Folded after every write, or never: the deltas alone, or the levels alone.
  const bool folded = CompactionMs() == 0;
  EXPECT_EQ(rollups.Count("SELECT count(*) FROM span_rollup_delta") == 0, folded);
  EXPECT_EQ(rollups.Count("SELECT count(*) FROM span_rollup_minute") > 0, folded);
  if (folded) {
    EXPECT_EQ(rollups.Count("SELECT count(*) FROM (SELECT project_id, bucket_ns, service_name, endpoint, is_entry "
                            "FROM span_rollup_minute GROUP BY project_id, bucket_ns, service_name, endpoint, is_entry "
                            "HAVING count(*) > 1)"),
              0)
        << "one row per key and minute";
    EXPECT_EQ(rollups.Count("SELECT sum(count) FROM span_rollup_hour"), 14000);
  }
  for (const auto& [name, q] : Queries()) ExpectSameGroups(exact.Group(q), rollups.Group(q), name);
}

TEST_P(SpanRollupTest, WholeMinutesAreReadFromTheRollupsNotTheSpans) {
  Store rollups(Engine(), 0, CompactionMs());
  rollups.Write(Writes());
  const SpanGroupQuery q = Query({kT0 + 5'000'000'000, kT0 + 2 * kHourNs + 5'000'000'000}, {});
  const SpanGroups before = rollups.Group(q);
  // Drop the raw spans of the range's whole minutes: the answer stands.
  ASSERT_TRUE(rollups.store
                  ->ExecuteSql("DELETE FROM spans WHERE start_time_ns >= " + std::to_string(kT0 + 40'000'000'000) +
                               " AND start_time_ns < " + std::to_string(kT0 + 2 * kHourNs - 20'000'000'000))
                  .ok());
  ExpectSameGroups(before, rollups.Group(q), "after deleting the raw spans of whole minutes");
  // And the edges are raw: dropping the spans there changes the count.
  ASSERT_TRUE(rollups.store
                  ->ExecuteSql("DELETE FROM spans WHERE start_time_ns >= " + std::to_string(kT0 + 5'000'000'000) +
                               " AND start_time_ns < " + std::to_string(kT0 + 40'000'000'000))
                  .ok());
  EXPECT_LT(rollups.Group(q).at(0).count, before.at(0).count);
}

TEST_P(SpanRollupTest, RetentionTakesTheSameSpansOutOfTheRollups) {
  Store exact(Engine(), INT64_MAX, 0), rollups(Engine(), 0, CompactionMs());
  exact.Write(Writes());
  rollups.Write(Writes());
  // Inside a minute inside an hour: whole buckets go, partial ones shrink.
  const int64_t cutoff = kT0 + 37 * kMinuteNs + 13'500'000'000;
  for (Store* s : {&exact, &rollups}) {
    ASSERT_TRUE(s->store->DeleteBefore(Signal::kSpans, ProjectSet::Only({kProject + 1}), cutoff).ok());
    Result<uint64_t> deleted = s->store->DeleteBefore(Signal::kSpans, ProjectSet::All(), cutoff);
    ASSERT_TRUE(deleted.ok()) << deleted.status().ToString();
    EXPECT_GT(*deleted, 0u);
  }
  EXPECT_EQ(rollups.Count("SELECT count(*) FROM span_rollup_delta"), 0);
  EXPECT_EQ(rollups.Count("SELECT sum(count) FROM span_rollup_hour"), rollups.Count("SELECT count(*) FROM spans"));
  EXPECT_EQ(rollups.Count("SELECT sum(count) FROM span_rollup_minute"), rollups.Count("SELECT count(*) FROM spans"));
  // The details of the deleted spans (their exceptions) went with them.
  EXPECT_EQ(rollups.Count("SELECT count(*) FROM span_details WHERE start_time_ns < " + std::to_string(cutoff)), 0);
  EXPECT_EQ(rollups.Count("SELECT count(*) FROM span_details"),
            rollups.Count("SELECT count(*) FROM spans WHERE has_exception = 1"));
  EXPECT_GT(rollups.Count("SELECT count(*) FROM span_details"), 0);
  // Every query again, one of them across the boundary from before it.
  int answered = 0;
  for (const auto& [name, q] : Queries()) {
    const SpanGroups want = exact.Group(q);
    if (want.empty()) {  // wholly before the cutoff
      EXPECT_TRUE(rollups.Group(q).empty()) << name;
      continue;
    }
    ExpectSameGroups(want, rollups.Group(q), "after retention: " + name);
    ++answered;
  }
  EXPECT_GE(answered, 8);
  // Late spans into the partial buckets still add up.
  const std::vector<SpanBatch> late = {MakeSpans(123, 500, cutoff - kMinuteNs, 2 * kMinuteNs)};
  exact.Write(late);
  rollups.Write(late);
  const SpanGroupQuery across = Query({kHour0, kHour0 + 3 * kHourNs}, {SpanDimension::kService}, false);
  ExpectSameGroups(exact.Group(across), rollups.Group(across), "late spans around the cutoff");
}

class SpanRollupStoreTest : public ::testing::TestWithParam<std::string> {};

TEST_P(SpanRollupStoreTest, RollupsLastAcrossAReopen) {
  Store store(GetParam(), 0, 0);
  store.Write(Writes());
  const SpanGroupQuery q = Query({kHour0 - kHourNs, kHour0 + 4 * kHourNs}, {SpanDimension::kService});
  const SpanGroups before = store.Group(q);
  ASSERT_TRUE(store.store->Close().ok());
  store.store.reset();
  store.Open(0, 0);
  ExpectSameGroups(before, store.Group(q), "after a reopen");
}

TEST_P(SpanRollupStoreTest, ADatabaseWithSpansBeforeItsRollupsReadsThemRaw) {
  // As a database written before the rollups existed opens: spans, no rollups.
  Store store(GetParam(), 0, 0);
  store.Write(Writes());
  for (const char* t : {"span_rollup_delta", "span_rollup_minute", "span_rollup_hour", "span_rollup_state"}) {
    ASSERT_TRUE(store.store->ExecuteSql(std::string("DROP TABLE ") + t).ok());
  }
  ASSERT_TRUE(store.store->Close().ok());
  store.store.reset();
  store.Open(0, 0);
  // Complete from the hour after the newest span, which is after every write.
  EXPECT_EQ(store.Count("SELECT complete_from_ns FROM span_rollup_state"),
            rollup::FloorTo(store.Count("SELECT max(start_time_ns) FROM spans"), kHourNs) + kHourNs);
  Store exact(GetParam(), INT64_MAX, 0);
  exact.Write(Writes());
  for (const auto& [name, q] : Queries()) ExpectSameGroups(exact.Group(q), store.Group(q), "old spans: " + name);
  // New spans after it come from the rollups.
  const int64_t later = rollup::FloorTo(kT0, kHourNs) + 5 * kHourNs;
  const std::vector<SpanBatch> fresh = {MakeSpans(5, 1000, later, kHourNs)};
  store.Write(fresh);
  exact.Write(fresh);
  EXPECT_EQ(store.Count("SELECT sum(count) FROM span_rollup_hour"), 1000);
  const SpanGroupQuery both = Query({kHour0 - kHourNs, later + 2 * kHourNs}, {SpanDimension::kService}, false);
  ExpectSameGroups(exact.Group(both), store.Group(both), "old and new spans");
}

// --rollup-retention longer than the spans': retention deletes the spans and
// leaves their rollups, which answer as before; ExpireRollups then drops the
// rollups' whole hours, after which they answer as the spans that remain.
TEST_P(SpanRollupStoreTest, RollupsOutliveTheirSpansUntilTheirOwnRetention) {
  Store store(GetParam(), 0, 0, /*outlive_rows=*/true);
  Store exact(GetParam(), INT64_MAX, 0);
  store.Write(Writes());
  exact.Write(Writes());
  const SpanGroupQuery q = Query({kHour0 - kHourNs, kHour0 + 4 * kHourNs}, {SpanDimension::kService}, false);
  const SpanGroups before = store.Group(q);
  const int64_t cutoff = kHour0 + 2 * kHourNs;
  Result<uint64_t> deleted = store.store->DeleteBefore(Signal::kSpans, ProjectSet::All(), cutoff);
  ASSERT_TRUE(deleted.ok()) << deleted.status().ToString();
  ASSERT_GT(*deleted, 0u);
  EXPECT_EQ(store.Count("SELECT count(*) FROM spans WHERE start_time_ns < " + std::to_string(cutoff)), 0);
  ExpectSameGroups(before, store.Group(q), "spans gone, rollups kept");

  ASSERT_TRUE(exact.store->DeleteBefore(Signal::kSpans, ProjectSet::All(), cutoff).ok());
  ASSERT_TRUE(store.store->ExpireRollups(Signal::kSpans, ProjectSet::Only({kProject + 1}), cutoff).ok());
  ExpectSameGroups(before, store.Group(q), "another project's rollups expired");
  ASSERT_TRUE(store.store->ExpireRollups(Signal::kSpans, ProjectSet::All(), cutoff).ok());
  ExpectSameGroups(exact.Group(q), store.Group(q), "rollups expired at the same cutoff");
  EXPECT_EQ(store.Count("SELECT count(*) FROM span_rollup_minute WHERE bucket_ns < " + std::to_string(cutoff)), 0);
}

INSTANTIATE_TEST_SUITE_P(EnginesAndFolding, SpanRollupTest,
                         ::testing::Combine(::testing::Values("duckdb", "sqlite"), ::testing::Values(0, 3'600'000)),
                         [](const auto& info) {
                           return std::get<0>(info.param) +
                                  (std::get<1>(info.param) == 0 ? "_AfterEveryWrite" : "_Never");
                         });

TEST_P(SpanRollupStoreTest, FewSpansInRangeAreAnsweredExactly) {
  Store store(GetParam(), 1'000'000, 0);
  store.Write(Writes());
  const SpanGroupQuery q = Query({kHour0 - kHourNs, kHour0 + 4 * kHourNs}, {SpanDimension::kService});
  Store exact(GetParam(), INT64_MAX, 0);
  exact.Write(Writes());
  const auto want = ByKeys(exact.Group(q)), got = ByKeys(store.Group(q));
  ASSERT_EQ(want.size(), got.size());
  for (const auto& [keys, g] : want) {
    for (int i = 0; i < 3; ++i) EXPECT_EQ(g.percentiles_ns[i], got.at(keys).percentiles_ns[i]);
  }
}

// The server prepares a span batch's rollup deltas on its decoder
// (SignalSink::Prepare): one prepared batch per commit, and two in one
// group, write the rollups the writer would have derived itself.
TEST_P(SpanRollupStoreTest, PreparedBatchesWriteTheSameRollups) {
  Store unprepared(GetParam(), 0, 0), prepared(GetParam(), 0, 0);
  const std::vector<SpanBatch> writes = Writes();
  unprepared.Write(writes);
  Result<std::unique_ptr<SignalSink>> sink = prepared.store->NewSink(Signal::kSpans);
  ASSERT_TRUE(sink.ok());
  std::vector<AnyBatch> batches;
  for (const SpanBatch& b : writes) {
    batches.emplace_back(b);
    (*sink)->Prepare(&batches.back());
    ASSERT_GT(PreparedBytes(batches.back()), 0u) << "charged to the request";
  }
  ASSERT_EQ(batches.size(), 5u);
  for (size_t i : {0, 1, 2}) ASSERT_TRUE((*sink)->WriteSpans({&std::get<SpanBatch>(batches[i])}).ok());
  ASSERT_TRUE((*sink)->WriteSpans({&std::get<SpanBatch>(batches[3]), &std::get<SpanBatch>(batches[4])}).ok());
  for (const char* sql :
       {"SELECT count(*) FROM span_rollup_minute", "SELECT sum(count) FROM span_rollup_hour",
        "SELECT sum(errors) FROM span_rollup_minute", "SELECT sum(count) FROM exception_rollup_minute",
        "SELECT count(*) FROM exception_rollup_hour", "SELECT max(last_ns) FROM exception_rollup_hour"}) {
    EXPECT_EQ(prepared.Count(sql), unprepared.Count(sql)) << sql;
  }
  EXPECT_GT(prepared.Count("SELECT sum(count) FROM exception_rollup_minute"), 1000) << "the batches have exceptions";
  for (const auto& [name, q] : Queries()) ExpectSameGroups(unprepared.Group(q), prepared.Group(q), "prepared: " + name);
}

INSTANTIATE_TEST_SUITE_P(Engines, SpanRollupStoreTest, ::testing::Values("duckdb", "sqlite"),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace sightline
