// query/: the API operations over the read contract.
//
// - Parameters are checked before any query runs (a reader that fails on
//   every call proves it).
// - The orchestration and arithmetic that live in query/ (rate, histogram
//   percentiles, sorting and paging, cursors) give answers computed by hand
//   from the read conformance dataset.
// - Every API call gives the same JSON on every engine as on the in-memory
//   reference (numbers to a relative 1e-9).

#include <gtest/gtest.h>
#include <simdjson.h>

#include <cmath>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "common/testing/temp_dir.h"
#include "query/query_service.h"
#include "storage/clickhouse/testing/clickhouse_server.h"
#include "storage/memory/memory_store.h"
#include "storage/telemetry_store.h"
#include "storage/testing/read_dataset.h"

namespace sightline {
namespace {

using namespace read_dataset;

// The dataset's range in API milliseconds.
const std::string kFrom = std::to_string(kRange.from_ns / kNsPerMs);
const std::string kTo = std::to_string(kRange.to_ns / kNsPerMs);

ApiParams Params(const std::string& query) {
  auto p = ApiParams::Parse(query);
  EXPECT_TRUE(p.ok()) << query;
  return p.ok() ? std::move(p.value()) : ApiParams();
}

//! A reader on which every operation is a test failure.
class NoQueries final : public TelemetryReader {
 public:
  template <typename T>
  Result<T> Fail() {
    ADD_FAILURE() << "a query ran before the parameters were checked";
    return Status::Internal("unexpected query");
  }
  Result<SpanGroups> GroupSpans(const SpanGroupQuery&) override { return Fail<SpanGroups>(); }
  Result<TraceSummaries> SearchTraces(const TraceSearchQuery&) override { return Fail<TraceSummaries>(); }
  Result<TraceDetail> GetTrace(const TraceQuery&) override { return Fail<TraceDetail>(); }
  Result<ExceptionGroups> GroupExceptions(const ExceptionQuery&) override { return Fail<ExceptionGroups>(); }
  Result<SpanRefs> ExceptionSpans(const ExceptionSpansQuery&) override { return Fail<SpanRefs>(); }
  Result<ServiceCalls> GroupServiceCalls(const ServiceCallQuery&) override { return Fail<ServiceCalls>(); }
  Result<DurationHistogram> HistogramDurations(const DurationHistogramQuery&) override {
    return Fail<DurationHistogram>();
  }
  Result<AttributeSuggestions> SuggestAttributes(const AttributeSuggestionQuery&) override {
    return Fail<AttributeSuggestions>();
  }
  Result<LogPage> Logs(const LogPageQuery&) override { return Fail<LogPage>(); }
  Result<LogVolume> CountLogs(const LogVolumeQuery&) override { return Fail<LogVolume>(); }
  Result<LogFacets> FacetLogs(const LogFacetsQuery&) override { return Fail<LogFacets>(); }
  Result<MetricCatalog> ListMetrics(const MetricCatalogQuery&) override { return Fail<MetricCatalog>(); }
  Result<MetricSeriesList> FindSeries(const MetricSeriesLookup&) override { return Fail<MetricSeriesList>(); }
  Result<MetricBuckets> AggregateSeries(const MetricSeriesQuery&) override { return Fail<MetricBuckets>(); }

 protected:
  void InterruptEngine() override {}
};

TEST(QueryServiceTest, BadParametersAreRefusedBeforeAnyQuery) {
  NoQueries reader;
  QueryService service;
  struct Case {
    const char* op;
    std::string query;
    const char* message_part;
  };
  const std::vector<Case> cases = {
      {"services", "from=abc", "'from'"},
      {"services", "from=10&to=5", "'from' must be before 'to'"},
      {"endpoints", "sort=latency", "sort must be one of"},
      {"endpoints", "limit=0", "'limit'"},
      {"endpoints/series", "metric=p42", "metric must be one of"},
      {"endpoints/series", "from=0&to=100000&step_ms=1", "more than 2000 buckets"},
      {"traces", "status=broken", "status must be"},
      {"traces", "attr==v", "'attr' must be key=value, key!=value, key>number, key<number or key"},
      {"traces", "attr=code>abc", "'abc' in 'code>abc' is not a number"},
      {"traces", "attr=code<inf", "is not a number"},
      {"traces", "attr=code>=5", "is not a number"},
      {"traces", "resource_attr=>1", "'resource_attr' must be"},
      {"traces", "sort=latency", "sort must be start or duration"},
      {"traces", "sort=start&order=asc", "newest first only"},
      {"traces", "sort=duration&order=up", "order must be desc or asc"},
      {"traces", "offset=-1", "'offset'"},
      {"traces/durations", "status=broken", "status must be"},
      {"traces/durations", "attr=k<x", "is not a number"},
      {"traces/attributes", "key=k&map=scope", "map must be span or resource"},
      {"traces/attributes", "map=span", "map needs a key"},
      {"traces/attributes", "sample=0", "'sample'"},
      {"logs", "attr=k>x", "is not a number"},
      {"traces", "min_duration_ms=-1", "'min_duration_ms'"},
      {"traces/xyz", "", "trace id must be 32 hex characters"},
      {"exceptions/spans", "", "give 'type' and/or 'message'"},
      {"service_map", "from=10&to=5", "'from' must be before 'to'"},
      {"logs", "trace_id=abc", "trace_id must be 32 hex characters"},
      {"logs", "severity_min=25", "'severity_min'"},
      {"logs/volume", "step_ms=x", "'step_ms'"},
      {"metrics/labels", "", "give the metric 'name'"},
      {"metrics/series", "name=x&agg=median", "agg must be one of"},
      {"metrics/series", "name=x&filter==v", "'filter' must be key=value"},
  };
  for (const Case& c : cases) {
    auto r = service.Run(c.op, Params(c.query), kProjectA, &reader);
    ASSERT_FALSE(r.ok()) << c.op << "?" << c.query;
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument) << c.op << "?" << c.query;
    EXPECT_NE(r.status().message().find(c.message_part), std::string::npos)
        << c.op << "?" << c.query << ": " << r.status().message();
  }
  EXPECT_TRUE(QueryService::Knows("traces/0af7651916cd43dd8448eb211c80319c"));
  EXPECT_TRUE(QueryService::Knows("traces/durations"));
  EXPECT_TRUE(QueryService::Knows("traces/attributes"));
  EXPECT_FALSE(QueryService::Knows("traces/a/b"));
  EXPECT_FALSE(QueryService::Knows("spans"));
}

// The operator is the first =, !=, > or <; a bare key asks for the key; the
// old key=value form keeps its meaning, value and all.
TEST(QueryServiceTest, AttributeConditionsParseEveryOperator) {
  ApiParams p = Params(
      "attr=a%3Db&attr=a%21%3Db&attr=n%3E5&attr=n%3C-1.5&attr=db.system&attr=a%3Db%3Dc&attr=a%21b%3Dc&attr=x%3E2e3"
      "&attr=e%3D");
  auto filters = api::AttrConditions(p, "attr");
  ASSERT_TRUE(filters.ok()) << filters.status().ToString();
  struct Want {
    std::string key;
    AttrOp op;
    std::string value;
    double number;
  };
  const std::vector<Want> want = {
      {"a", AttrOp::kEq, "b", 0},
      {"a", AttrOp::kNe, "b", 0},
      {"n", AttrOp::kGt, "", 5},
      {"n", AttrOp::kLt, "", -1.5},
      {"db.system", AttrOp::kExists, "", 0},
      {"a", AttrOp::kEq, "b=c", 0},
      {"a!b", AttrOp::kEq, "c", 0},
      {"x", AttrOp::kGt, "", 2000},
      {"e", AttrOp::kEq, "", 0},
  };
  ASSERT_EQ(filters->size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    const AttrFilter& f = (*filters)[i];
    EXPECT_EQ(f.key, want[i].key) << i;
    EXPECT_EQ(f.op, want[i].op) << i;
    EXPECT_EQ(f.value, want[i].value) << i;
    EXPECT_EQ(f.number, want[i].number) << i;
  }
}

//! The dataset in one engine, and the service over a reader of it.
class QueryOnEngine {
 public:
  explicit QueryOnEngine(const std::string& engine) {
    StoreOptions options;
    options.data_dir = dir_.str();
    options.read_connections = 1;
    Result<std::unique_ptr<TelemetryStore>> store = Status::Internal("unopened");
    if (engine == "memory") {
      store = OpenMemoryStore(options);
    } else {
      if (engine == "clickhouse" || engine == "chdb") {
        // The binary's clickhouse-server, or its in-process ClickHouse
        // ("chdb"), a database of this query's own.
        const StoreOptions ch = clickhouse::testing::StoreOptionsForTest(engine, "query_service");
        options.clickhouse_url = ch.clickhouse_url;
        options.clickhouse_database = ch.clickhouse_database;
      }
      RegisterBuiltinStores();
      store = StoreRegistry::Instance().Open(engine == "chdb" ? "clickhouse" : engine, options);
    }
    EXPECT_TRUE(store.ok()) << store.status().ToString();
    store_ = std::move(store.value());
    Status written = WriteReadDataset(BuildReadDataset(), store_.get());
    EXPECT_TRUE(written.ok()) << written.ToString();
  }
  ~QueryOnEngine() {
    if (store_) (void)store_->Close();
    store_.reset();
  }

  Result<std::string> Run(const std::string& op, const std::string& query, int64_t project = kProjectA) {
    auto reader = store_->AcquireReader(10'000);
    if (!reader.ok()) return reader.status();
    return QueryService(limits_).Run(op, Params(query), project, reader->get());
  }

  void set_limits(const QueryLimits& limits) { limits_ = limits; }
  TelemetryStore* store() { return store_.get(); }

  //! The answer as a JSON document (the test fails on an error).
  simdjson::dom::element Json(const std::string& op, const std::string& query) {
    auto r = Run(op, query);
    EXPECT_TRUE(r.ok()) << op << "?" << query << ": " << r.status().ToString();
    texts_.push_back(r.ok() ? r.value() : "{}");
    simdjson::dom::element doc;
    EXPECT_EQ(parsers_.emplace_back(std::make_unique<simdjson::dom::parser>())->parse(texts_.back()).get(doc),
              simdjson::SUCCESS);
    return doc;
  }

 private:
  testing::TempDir dir_{"sightline-query-test"};
  std::unique_ptr<TelemetryStore> store_;
  QueryLimits limits_;
  std::vector<std::string> texts_;
  std::vector<std::unique_ptr<simdjson::dom::parser>> parsers_;
};

std::vector<double> Values(simdjson::dom::element series) {
  std::vector<double> out;
  for (auto v : series["values"].get_array()) {
    double d;
    out.push_back(v.get_double().get(d) == simdjson::SUCCESS ? d : NAN);
  }
  return out;
}

void ExpectValues(const std::vector<double>& actual, const std::vector<double>& expected, const std::string& what) {
  ASSERT_EQ(actual.size(), expected.size()) << what;
  for (size_t i = 0; i < expected.size(); ++i) {
    if (std::isnan(expected[i])) {
      EXPECT_TRUE(std::isnan(actual[i])) << what << " bucket " << i << ": " << actual[i];
    } else {
      EXPECT_NEAR(actual[i], expected[i], 1e-9 * std::abs(expected[i])) << what << " bucket " << i;
    }
  }
}

TEST(QueryServiceTest, RateOfMonotonicSumsComputedByHand) {
  QueryOnEngine q("memory");
  // Monotonic sums named "requests": series 13 (cumulative: 100, 150, then a
  // reset to 30, then 60 at 1, 11, 21, 31 s) and 14 (delta: 5 + 7 in the
  // first 10 s, 1 in the second). Per 10 s bucket, in units per second:
  // 13: no baseline, (150-100)/10, 30/10 (reset), (60-30)/10;
  // 14: 12/10, 1/10. Summed: 1.2, 5.1, 3, 3, then nothing.
  auto doc = q.Json("metrics/series", "name=requests&agg=rate&step_ms=10000&from=" + kFrom + "&to=" + kTo);
  auto series = doc["series"].get_array();
  ASSERT_EQ(series.size(), 1u);
  ExpectValues(Values(series.at(0)), {1.2, 5.1, 3, 3, NAN, NAN}, "rate");
}

TEST(QueryServiceTest, RateAcrossEmptyBucketsIsSpreadOverTheGap) {
  QueryOnEngine q("memory");
  // 5 s buckets: series 13's points at 1, 11, 21, 31 s fall in buckets 0, 2,
  // 4, 6, so each increase covers two buckets (10 s): 50/10, 30/10 (reset),
  // 30/10. Series 14 (delta) adds 12/5 in bucket 0 and 1/5 in bucket 2. The
  // buckets between hold no point and stay empty.
  auto doc = q.Json("metrics/series", "name=requests&agg=rate&step_ms=5000&from=" + kFrom + "&to=" + kTo);
  auto series = doc["series"].get_array();
  ASSERT_EQ(series.size(), 1u);
  ExpectValues(Values(series.at(0)), {2.4, NAN, 5.2, NAN, 3, NAN, 3, NAN, NAN, NAN, NAN, NAN}, "rate");
}

TEST(QueryServiceTest, HistogramPercentilesComputedByHand) {
  QueryOnEngine q("memory");
  // http.server.duration: series 11 (cumulative, bounds [10,100] then
  // [5,10,100] from 31 s) and -12 (delta, bounds change at 12 s).
  // Bucket 0: 11's newest [2,3,1] (its first bucket: no baseline) + -12's
  //   [1,0,0]+[0,2,1] = [3,5,2]; rank 5 of 10 lies in (10,100]: 10+90*2/5 = 46.
  // Bucket 1: -12 restarts at the new layout: [2,0,0,0]+[1,1,1,1] = [3,1,1,1]
  //   on [5,10,100]; 11's [3,3,1]-[2,3,1] has other bounds and is left out;
  //   rank 3 of 6 in (0,5]: 5*3/3 = 5.
  // Bucket 2: 11's [0,1,0] is a reset (kept as is); rank 0.5 of 1 in
  //   (10,100]: 10+90*0.5 = 55.
  // Bucket 3: 11's [1,1,1,1] (new layout, no diff); rank 2 of 4 in (5,10]: 10.
  auto doc = q.Json("metrics/series", "name=http.server.duration&agg=p50&step_ms=10000&from=" + kFrom + "&to=" + kTo);
  auto series = doc["series"].get_array();
  ASSERT_EQ(series.size(), 1u);
  ExpectValues(Values(series.at(0)), {46, 5, 55, 10, NAN, NAN}, "p50");
}

// rpc.duration: exponential histograms, bucket i of scale s covering
// (b^i, b^(i+1)] with b = 2^(2^-s).
// 22 (cumulative): bucket 0 {scale 1, zero 1, [1,2] from index 0} (no
//   baseline); bucket 1 {scale 0, zero 1, [3,4]} minus bucket 0's newest
//   downscaled to scale 0 (indices 0 and 1 fall in 0: zero 1, [3]) = [0,4];
//   bucket 2 {scale 0, [1]} is below [3,4]: a reset, counted whole.
// -23 (delta), bucket 0: {scale 0, negative [2] at 0, positive [2] at 1} +
//   {scale -1, positive [4] at 1}, merged at scale -1 (base 4): negative
//   [-4,-1) 2, positive (1,4] 2, (4,16] 4.
TEST(QueryServiceTest, ExponentialHistogramPercentilesComputedByHand) {
  QueryOnEngine q("memory");
  const std::string range = "&step_ms=10000&from=" + kFrom + "&to=" + kTo;
  // Both series, bucket 0 at scale -1: negative [-4,-1) 2, zero 1, (1,4] 2+3
  // (22's [1,2] at scale 1 fall in index 0), (4,16] 4: 12 values.
  //   p50: rank 6, 3 values below (1,4]: 1 + 3*(6-3)/5 = 2.8. Bucket 1: 22's [0,4] at scale 0, rank 2 of 4 in (2,4]:
  //   2 + 2*2/4 = 3. Bucket 2: [1] in (1,2], rank 0.5: 1.5.
  auto p50 = q.Json("metrics/series", "name=rpc.duration&agg=p50" + range);
  ASSERT_EQ(p50["series"].get_array().size(), 1u);
  ExpectValues(Values(p50["series"].at(0)), {2.8, 3, 1.5, NAN, NAN, NAN}, "p50");
  // p95 by service. checkout, bucket 0: rank 7.6 of 8, 4 below (4,16]:
  //   4 + 12*3.6/4 = 14.8. frontend, bucket 0 at scale 1 (base sqrt 2): rank
  //   3.8 of 4, 2 below (sqrt2, 2]: sqrt2 + (2-sqrt2)*1.8/2; bucket 1: rank 3.8
  //   of 4 in (2,4]: 3.9; bucket 2: 1.95.
  auto p95 = q.Json("metrics/series", "name=rpc.duration&agg=p95&group_by=service.name" + range);
  std::map<std::string, std::vector<double>> by_service;
  for (auto s : p95["series"].get_array()) {
    by_service[std::string(std::string_view(s["labels"]["service.name"].get_string()))] = Values(s);
  }
  ASSERT_EQ(by_service.size(), 2u);
  ExpectValues(by_service["checkout"], {14.8, NAN, NAN, NAN, NAN, NAN}, "checkout p95");
  const double r2 = std::sqrt(2.0);
  ExpectValues(by_service["frontend"], {r2 + (2 - r2) * 0.9, 3.9, 1.95, NAN, NAN, NAN}, "frontend p95");
}

// gc.pause, a summary: bucket 0's newest point reports 0.5 → 2, 0.9 → 4,
// 0.99 → 20; bucket 2's 0.5 → 3, 0.95 → 7. p95 in bucket 0 lies between 0.9
// and 0.99: 4 + 16*(0.05/0.09); p99 in bucket 2 is past what it reports.
TEST(QueryServiceTest, SummariesAnswerTheirReportedQuantiles) {
  QueryOnEngine q("memory");
  const std::string range = "&step_ms=10000&from=" + kFrom + "&to=" + kTo;
  auto values = [&](const std::string& agg) {
    auto doc = q.Json("metrics/series", "name=gc.pause&agg=" + agg + range);
    EXPECT_EQ(doc["series"].get_array().size(), 1u) << agg;
    return Values(doc["series"].at(0));
  };
  ExpectValues(values("p50"), {2, NAN, 3, NAN, NAN, NAN}, "p50");
  ExpectValues(values("p95"), {4 + 16 * 0.05 / 0.09, NAN, 7, NAN, NAN, NAN}, "p95");
  ExpectValues(values("p99"), {20, NAN, NAN, NAN, NAN, NAN}, "p99");
}

TEST(QueryServiceTest, LastValuePerSeriesAddedUpPerGroup) {
  QueryOnEngine q("memory");
  const std::string range = "&step_ms=10000&from=" + kFrom + "&to=" + kTo;
  // queue.depth (an UpDownCounter): 10 at 1 s, -4 at 11 s.
  auto doc = q.Json("metrics/series", "name=queue.depth&agg=last" + range);
  ASSERT_EQ(doc["series"].get_array().size(), 1u);
  ExpectValues(Values(doc["series"].at(0)), {10, -4, NAN, NAN, NAN, NAN}, "last");
  // requests of checkout (delta 5 and 7 at 1 and 2 s, 1 at 12 s): the newest.
  doc = q.Json("metrics/series", "name=requests&agg=last&filter=service.name=checkout" + range);
  ExpectValues(Values(doc["series"].at(0)), {7, 1, NAN, NAN, NAN, NAN}, "last of a delta sum");
}

TEST(QueryServiceTest, RawAggregatesOfACumulativeCounterAreRefusedWithAPointerToRate) {
  QueryOnEngine q("memory");
  const std::string range = "&step_ms=10000&from=" + kFrom + "&to=" + kTo;
  for (const std::string agg : {"sum", "avg", "min", "max"}) {
    auto r = q.Run("metrics/series", "name=requests&agg=" + agg + range);
    ASSERT_FALSE(r.ok()) << agg;
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument) << agg;
    EXPECT_NE(r.status().message().find("agg=rate"), std::string::npos) << r.status().ToString();
  }
  // Without the cumulative series (checkout's is delta) a sum is fine.
  EXPECT_TRUE(q.Run("metrics/series", "name=requests&agg=sum&filter=service.name=checkout" + range).ok());
  EXPECT_TRUE(q.Run("metrics/series", "name=requests&agg=rate" + range).ok());
}

TEST(QueryServiceTest, EndpointPagesAreSlicesOfTheWholeSortedList) {
  QueryOnEngine q("memory");
  const std::string range = "&from=" + kFrom + "&to=" + kTo;
  auto all = q.Json("endpoints", "sort=endpoint&order=asc&limit=1000" + range);
  int64_t total = all["total"].get_int64();
  ASSERT_GE(total, 3);
  std::vector<std::string> names;
  for (auto e : all["endpoints"].get_array()) names.emplace_back(std::string_view(e["endpoint"].get_string()));
  ASSERT_EQ(static_cast<int64_t>(names.size()), total);
  EXPECT_TRUE(std::is_sorted(names.begin(), names.end()));
  for (int64_t offset = 0; offset < total; offset += 2) {
    auto page = q.Json("endpoints", "sort=endpoint&order=asc&limit=2&offset=" + std::to_string(offset) + range);
    EXPECT_EQ(page["total"].get_int64().value(), total);
    int64_t i = offset;
    for (auto e : page["endpoints"].get_array()) EXPECT_EQ(std::string_view(e["endpoint"].get_string()), names[i++]);
  }
}

//! The trace ids of a traces answer, in order.
std::vector<std::string> TraceIdsOf(simdjson::dom::element doc) {
  std::vector<std::string> out;
  for (auto t : doc["traces"].get_array()) out.emplace_back(std::string_view(t["trace_id"].get_string()));
  return out;
}

std::string HexId(const TraceId& t) {
  char buf[33];
  std::snprintf(buf, sizeof(buf), "%016llx%016llx", static_cast<unsigned long long>(t.high),
                static_cast<unsigned long long>(t.low));
  return buf;
}

// Pages of the trace list by duration (kTrace4 45 ms, kTrace3 30, kTrace2 20,
// kTrace6 15, kTrace1 12, kTrace5 7 over their spans in the range): each page
// asks the engine for one more trace than it shows, and says whether more follow.
TEST(QueryServiceTest, TracePagesBySortOrderSayWhetherMoreFollow) {
  QueryOnEngine q("memory");
  const std::string range = "&from=" + kFrom + "&to=" + kTo;
  auto first = q.Json("traces", "sort=duration&limit=2" + range);
  EXPECT_EQ(TraceIdsOf(first), (std::vector<std::string>{HexId(kTrace4), HexId(kTrace3)}));
  EXPECT_TRUE(first["has_more"].get_bool().value());
  auto last = q.Json("traces", "sort=duration&limit=2&offset=4" + range);
  EXPECT_EQ(TraceIdsOf(last), (std::vector<std::string>{HexId(kTrace1), HexId(kTrace5)}));
  EXPECT_FALSE(last["has_more"].get_bool().value());
  EXPECT_EQ(last["offset"].get_int64().value(), 4);
  auto asc = q.Json("traces", "sort=duration&order=asc&limit=3" + range);
  EXPECT_EQ(TraceIdsOf(asc), (std::vector<std::string>{HexId(kTrace5), HexId(kTrace1), HexId(kTrace6)}));
  auto newest = q.Json("traces", "limit=6" + range);
  EXPECT_EQ(TraceIdsOf(newest).size(), 6u);
  EXPECT_FALSE(newest["has_more"].get_bool().value());
  EXPECT_TRUE(TraceIdsOf(q.Json("traces", "offset=6" + range)).empty());
}

// The API's operators reach the engine: != , >, <, exists and resource attributes.
TEST(QueryServiceTest, TraceFiltersWithOperators) {
  QueryOnEngine q("memory");
  const std::string range = "&from=" + kFrom + "&to=" + kTo;
  auto ids = [&](const std::string& filter) { return TraceIdsOf(q.Json("traces", filter + range)); };
  using V = std::vector<std::string>;
  EXPECT_EQ(ids("attr=http.response.status_code%21%3D200"), V{HexId(kTrace2)});
  EXPECT_EQ(ids("attr=http.response.status_code%3E200"), V{HexId(kTrace2)});
  EXPECT_EQ(ids("attr=amount%3C12.5"), V{HexId(kTrace3)});
  EXPECT_EQ(ids("attr=db.system"), V{HexId(kTrace2)});
  EXPECT_EQ(ids("attr=http.response.status_code%3D200&attr=retry"), V{HexId(kTrace1)});
  EXPECT_EQ(ids("resource_attr=r%C3%A9gion"), V{HexId(kTrace6)});
  EXPECT_EQ(ids("resource_attr=host.name%3Dweb-1&attr=db.system"), V{HexId(kTrace2)});
  auto logs = q.Json("logs", "attr=n%3C0" + range);
  EXPECT_EQ(logs["logs"].get_array().size(), 1u);
}

// Project A's 15 spans in the range last 2 ms (c4) to 40 ms (d1, d2); the
// buckets are the log-scale bounds 1, 1.5, 2, 3, 5, 7 x 10^k from 1 us.
TEST(QueryServiceTest, TraceDurationsCountEverySpanOnLogScaleBuckets) {
  QueryOnEngine q("memory");
  const std::string range = "&from=" + kFrom + "&to=" + kTo;
  auto d = q.Json("traces/durations", range.substr(1));
  EXPECT_EQ(d["total"].get_int64().value(), 15);
  EXPECT_EQ(d["min_ms"].get_double().value(), 2);
  EXPECT_EQ(d["max_ms"].get_double().value(), 40);
  std::map<std::pair<double, double>, int64_t> counts;
  int64_t sum = 0;
  double previous_to = 0;
  for (auto b : d["buckets"].get_array()) {
    const double from = b["from_ms"].get_double().value();
    EXPECT_EQ(from, previous_to);
    double to = INFINITY;
    if (!b["to_ms"].is_null()) to = b["to_ms"].get_double().value();
    previous_to = to;
    const int64_t n = b["count"].get_int64().value();
    sum += n;
    if (n) counts[{from, to}] = n;
  }
  EXPECT_EQ(sum, 15);
  // 2: c4 | 3: b2 | 5: e2, b3 | 6: a2 | 7: e1 | 10: a1, a3 | 15: f1 | 20: b1, c2 | 30: c1, d3 | 40: d1, d2
  const std::map<std::pair<double, double>, int64_t> want = {
      {{2, 3}, 1}, {{3, 5}, 1}, {{5, 7}, 3}, {{7, 10}, 1}, {{10, 15}, 2}, {{15, 20}, 1}, {{20, 30}, 2}, {{30, 50}, 4},
  };
  EXPECT_EQ(counts, want);
  auto narrowed = q.Json("traces/durations", "service=checkout" + range);
  EXPECT_EQ(narrowed["total"].get_int64().value(), 4);
  auto none = q.Json("traces/durations", "service=nobody" + range);
  EXPECT_EQ(none["total"].get_int64().value(), 0);
  EXPECT_TRUE(none["min_ms"].is_null());
}

// Keys of span and resource attributes from the newest spans; with a key,
// the values of that key among the spans that have it.
TEST(QueryServiceTest, TraceAttributeSuggestionsComeFromTheData) {
  QueryOnEngine q("memory");
  const std::string range = "&from=" + kFrom + "&to=" + kTo;
  auto all = q.Json("traces/attributes", range.substr(1));
  EXPECT_EQ(all["sampled"].get_int64().value(), 15);
  std::vector<std::string> span_keys, resource_keys;
  for (auto k : all["span"]["keys"].get_array()) span_keys.emplace_back(std::string_view(k["key"].get_string()));
  for (auto k : all["resource"]["keys"].get_array()) {
    resource_keys.emplace_back(std::string_view(k["key"].get_string()));
  }
  ASSERT_FALSE(span_keys.empty());
  EXPECT_EQ(span_keys[0], "http.response.status_code");  // on 4 spans, the most
  EXPECT_EQ(resource_keys, (std::vector<std::string>{"service.name", "host.name", "région"}));
  auto values = q.Json("traces/attributes", "key=http.response.status_code&sample=3" + range);
  // The newest 3 spans that have the key: d1 (200), b1 (504), c1 (200).
  EXPECT_EQ(values["sampled"].get_int64().value(), 3);
  auto key = values["span"]["keys"].at(0);
  EXPECT_EQ(key["count"].get_int64().value(), 3);
  EXPECT_EQ(std::string_view(key["values"].at(0)["value"].get_string()), "200");
  EXPECT_EQ(key["values"].at(0)["count"].get_int64().value(), 2);
  EXPECT_EQ(std::string_view(key["values"].at(1)["value"].get_string()), "504");
  EXPECT_EQ(values["resource"]["keys"].get_array().size(), 0u);
  auto host = q.Json("traces/attributes", "key=host.name&map=resource" + range);
  EXPECT_EQ(host["span"]["keys"].get_array().size(), 0u);
  EXPECT_EQ(std::string_view(host["resource"]["keys"].at(0)["values"].at(0)["value"].get_string()), "web-1");
}

//! Pages through logs with `limit` and returns every record's time_ns and body.
std::vector<std::string> AllLogs(QueryOnEngine& q, int limit) {
  std::vector<std::string> out;
  std::string cursor;
  for (int pages = 0; pages < 100; ++pages) {
    auto doc = q.Json("logs", "limit=" + std::to_string(limit) + "&from=" + kFrom + "&to=" + kTo +
                                  (cursor.empty() ? "" : "&cursor=" + cursor));
    for (auto r : doc["logs"].get_array()) {
      out.push_back(std::string(std::string_view(r["time_ns"].get_string())) + " " +
                    std::string(std::string_view(r["body"].get_string())));
    }
    std::string_view next;
    if (doc["next_cursor"].get_string().get(next) != simdjson::SUCCESS) return out;
    cursor = std::string(next);
    for (size_t i = 0; i < cursor.size(); ++i) {  // percent-encode for the query string
      if (!std::isalnum(static_cast<unsigned char>(cursor[i]))) {
        char hex[4];
        std::snprintf(hex, sizeof(hex), "%%%02X", static_cast<unsigned char>(cursor[i]));
        cursor.replace(i, 1, hex);
        i += 2;
      }
    }
  }
  ADD_FAILURE() << "more than 100 pages";
  return out;
}

class QueryEnginesTest : public ::testing::TestWithParam<std::string> {};

//! The call fails with InvalidArgument and a message holding `part`.
void ExpectRefused(const Result<std::string>& r, const std::string& part, const std::string& what) {
  ASSERT_FALSE(r.ok()) << what << " answered past its cap";
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument) << what;
  EXPECT_NE(r.status().message().find(part), std::string::npos) << what << ": " << r.status().message();
}

TEST_P(QueryEnginesTest, AnswersPastACapAreRefusedNamingTheCap) {
  QueryOnEngine q(GetParam());
  const std::string range = "&from=" + kFrom + "&to=" + kTo;
  const int64_t endpoints = q.Json("endpoints", "limit=1000" + range)["total"].get_int64();
  ASSERT_GE(endpoints, 3);
  QueryLimits limits;
  limits.max_groups = endpoints;  // exactly at the cap: answered
  q.set_limits(limits);
  EXPECT_EQ(q.Json("endpoints", "limit=1000" + range)["total"].get_int64().value(), endpoints);
  limits.max_groups = endpoints - 1;
  q.set_limits(limits);
  ExpectRefused(q.Run("endpoints", range.substr(1)), "--max-query-groups", "endpoints");
  ExpectRefused(q.Run("endpoints/series", range.substr(1)), "--max-query-groups", "endpoints/series");

  // "requests" has 5 series in project A.
  limits = QueryLimits{};
  limits.max_series = 5;
  q.set_limits(limits);
  EXPECT_TRUE(q.Run("metrics/series", "name=requests&agg=last" + range).ok());
  limits.max_series = 4;
  q.set_limits(limits);
  ExpectRefused(q.Run("metrics/series", "name=requests&agg=last" + range), "--max-query-series", "metrics/series");
  ExpectRefused(q.Run("metrics/labels", "name=requests"), "--max-query-series", "metrics/labels");

  // Grouped by code: 4 series (200, "200" merge, 500, 404, none) of 6 buckets.
  limits = QueryLimits{};
  q.set_limits(limits);
  const std::string grouped = "name=requests&agg=last&group_by=code&step_ms=10000" + range;
  const size_t groups = q.Json("metrics/series", grouped)["series"].get_array().size();
  ASSERT_GE(groups, 2u);
  limits.max_points = static_cast<int64_t>(groups) * 6;
  q.set_limits(limits);
  EXPECT_TRUE(q.Run("metrics/series", grouped).ok());
  limits.max_points -= 1;
  q.set_limits(limits);
  ExpectRefused(q.Run("metrics/series", grouped), "--max-query-points", "metrics/series grouped");
}

TEST_P(QueryEnginesTest, TraceAndMetricListPastTheirCapSayTheyWereTruncated) {
  QueryOnEngine q(GetParam());
  const std::string trace = "traces/0af7651916cd43dd8448eb211c80319c";
  auto whole = q.Json(trace, "");
  const size_t spans = whole["spans"].get_array().size();
  ASSERT_GE(spans, 2u);
  EXPECT_FALSE(whole["spans_truncated"].get_bool().value());
  EXPECT_FALSE(whole["logs_truncated"].get_bool().value());
  const size_t metrics = q.Json("metrics", "")["metrics"].get_array().size();
  ASSERT_GE(metrics, 2u);
  EXPECT_FALSE(q.Json("metrics", "")["truncated"].get_bool().value());

  QueryLimits limits;
  limits.max_trace_spans = 1;
  limits.max_metrics = 1;
  q.set_limits(limits);
  auto capped = q.Json(trace, "");
  ASSERT_EQ(capped["spans"].get_array().size(), 1u);
  EXPECT_TRUE(capped["spans_truncated"].get_bool().value());
  // The earliest span is kept.
  EXPECT_EQ(std::string_view(capped["spans"].at(0)["span_id"].get_string()),
            std::string_view(whole["spans"].at(0)["span_id"].get_string()));
  auto list = q.Json("metrics", "");
  EXPECT_EQ(list["metrics"].get_array().size(), 1u);
  EXPECT_TRUE(list["truncated"].get_bool().value());
}

TEST_P(QueryEnginesTest, ServiceMapPastItsCapKeepsTheBusiestEdgesAndSaysSo) {
  QueryOnEngine q(GetParam());
  const std::string range = "from=" + kFrom + "&to=" + kTo;
  auto whole = q.Json("service_map", range);
  const size_t edges = whole["edges"].get_array().size();
  ASSERT_GE(edges, 1u) << "the dataset has calls between services";
  EXPECT_FALSE(whole["truncated"].get_bool().value());
  QueryLimits limits;
  limits.max_service_calls = 1;
  q.set_limits(limits);
  auto capped = q.Json("service_map", range);
  ASSERT_EQ(capped["edges"].get_array().size(), 1u);
  EXPECT_EQ(capped["truncated"].get_bool().value(), edges > 1);
  EXPECT_EQ(std::string_view(capped["edges"].at(0)["from"].get_string()),
            std::string_view(whole["edges"].at(0)["from"].get_string()));
  EXPECT_EQ(std::string_view(capped["edges"].at(0)["to"].get_string()),
            std::string_view(whole["edges"].at(0)["to"].get_string()));
}

//! Answers from `inner`, then interrupts itself as a deadline would while
//! query/ works on the rows: only query/'s own loops can notice.
class InterruptedAfterTheEngine final : public TelemetryReader {
 public:
  explicit InterruptedAfterTheEngine(TelemetryReader* inner) : inner_(inner) {}
  template <typename R>
  R Then(R r) {
    Interrupt();
    return r;
  }
  Result<SpanGroups> GroupSpans(const SpanGroupQuery& q) override { return Then(inner_->GroupSpans(q)); }
  Result<TraceSummaries> SearchTraces(const TraceSearchQuery& q) override { return Then(inner_->SearchTraces(q)); }
  Result<TraceDetail> GetTrace(const TraceQuery& q) override { return Then(inner_->GetTrace(q)); }
  Result<ExceptionGroups> GroupExceptions(const ExceptionQuery& q) override { return Then(inner_->GroupExceptions(q)); }
  Result<SpanRefs> ExceptionSpans(const ExceptionSpansQuery& q) override { return Then(inner_->ExceptionSpans(q)); }
  Result<ServiceCalls> GroupServiceCalls(const ServiceCallQuery& q) override {
    return Then(inner_->GroupServiceCalls(q));
  }
  Result<DurationHistogram> HistogramDurations(const DurationHistogramQuery& q) override {
    return Then(inner_->HistogramDurations(q));
  }
  Result<AttributeSuggestions> SuggestAttributes(const AttributeSuggestionQuery& q) override {
    return Then(inner_->SuggestAttributes(q));
  }
  Result<LogPage> Logs(const LogPageQuery& q) override { return Then(inner_->Logs(q)); }
  Result<LogVolume> CountLogs(const LogVolumeQuery& q) override { return Then(inner_->CountLogs(q)); }
  Result<LogFacets> FacetLogs(const LogFacetsQuery& q) override { return Then(inner_->FacetLogs(q)); }
  Result<MetricCatalog> ListMetrics(const MetricCatalogQuery& q) override { return Then(inner_->ListMetrics(q)); }
  Result<MetricSeriesList> FindSeries(const MetricSeriesLookup& q) override { return Then(inner_->FindSeries(q)); }
  Result<MetricBuckets> AggregateSeries(const MetricSeriesQuery& q) override {
    return Then(inner_->AggregateSeries(q));
  }

 protected:
  void InterruptEngine() override {}

 private:
  TelemetryReader* inner_;
};

TEST_P(QueryEnginesTest, AnInterruptDuringTheWorkAfterTheSqlCancelsTheCall) {
  QueryOnEngine q(GetParam());
  const std::string range = "&from=" + kFrom + "&to=" + kTo;
  for (const std::string query : {"name=requests&agg=rate", "name=requests&agg=last&group_by=code",
                                  "name=http.server.duration&agg=p95", "name=cpu.temp&agg=max"}) {
    auto inner = q.store()->AcquireReader(10'000);
    ASSERT_TRUE(inner.ok());
    InterruptedAfterTheEngine reader(inner->get());
    auto r = QueryService().Run("metrics/series", Params(query + "&step_ms=10000" + range), kProjectA, &reader);
    ASSERT_FALSE(r.ok()) << query;
    EXPECT_EQ(r.status().code(), StatusCode::kCancelled) << query << ": " << r.status().ToString();
  }
}

TEST_P(QueryEnginesTest, CursorPagesGiveTheSameRecordsAsOnePage) {
  QueryOnEngine q(GetParam());
  std::vector<std::string> one_page = AllLogs(q, 1000);
  ASSERT_GE(one_page.size(), 5u);
  EXPECT_EQ(AllLogs(q, 1), one_page);
  EXPECT_EQ(AllLogs(q, 2), one_page);
  auto bad = q.Run("logs", "cursor=not-a-cursor&from=" + kFrom + "&to=" + kTo);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
}

// Compares two JSON values: same structure, strings and booleans exactly,
// numbers to a relative 1e-9.
bool SameJson(simdjson::dom::element a, simdjson::dom::element b, std::string path, std::string* diff) {
  if (a.type() != b.type()) {
    bool numbers = (a.is_number() && b.is_number());
    if (!numbers) {
      *diff = path + ": " + simdjson::minify(a) + " vs " + simdjson::minify(b);
      return false;
    }
  }
  if (a.is_number()) {
    double x = a.get_double().value(), y = b.get_double().value();
    if (std::abs(x - y) <= 1e-9 * std::max(std::abs(x), std::abs(y))) return true;
    *diff = path + ": " + simdjson::minify(a) + " vs " + simdjson::minify(b);
    return false;
  }
  switch (a.type()) {
    case simdjson::dom::element_type::ARRAY: {
      auto x = a.get_array().value(), y = b.get_array().value();
      if (x.size() != y.size()) {
        *diff = path + ": " + std::to_string(x.size()) + " vs " + std::to_string(y.size()) + " elements";
        return false;
      }
      for (size_t i = 0; i < x.size(); ++i) {
        if (!SameJson(x.at(i).value(), y.at(i).value(), path + "[" + std::to_string(i) + "]", diff)) return false;
      }
      return true;
    }
    case simdjson::dom::element_type::OBJECT: {
      auto x = a.get_object().value(), y = b.get_object().value();
      if (x.size() != y.size()) {
        *diff = path + ": " + simdjson::minify(a) + " vs " + simdjson::minify(b);
        return false;
      }
      for (auto field : x) {
        simdjson::dom::element other;
        if (y[field.key].get(other) != simdjson::SUCCESS) {
          *diff = path + "." + std::string(field.key) + " missing";
          return false;
        }
        if (!SameJson(field.value, other, path + "." + std::string(field.key), diff)) return false;
      }
      return true;
    }
    default:
      if (simdjson::minify(a) == simdjson::minify(b)) return true;
      *diff = path + ": " + simdjson::minify(a) + " vs " + simdjson::minify(b);
      return false;
  }
}

TEST_P(QueryEnginesTest, EveryCallAnswersAsTheReference) {
  QueryOnEngine engine(GetParam());
  QueryOnEngine reference("memory");
  const std::string range = "from=" + kFrom + "&to=" + kTo;
  const std::vector<std::pair<std::string, std::string>> calls = {
      {"services", range},
      {"endpoints", range},
      {"endpoints", range + "&sort=p95&order=asc"},
      {"endpoints", range + "&service=checkout"},
      {"endpoints/series", range + "&step_ms=10000"},
      {"endpoints/series", range + "&step_ms=10000&metric=count&top=1"},
      {"endpoints/series", range + "&step_ms=10000&metric=p99&service=frontend"},
      {"traces", range},
      {"traces", range + "&status=error"},
      {"traces", range + "&min_duration_ms=5&max_duration_ms=30"},
      {"traces", range + "&limit=2"},
      {"traces", range + "&sort=duration&limit=2&offset=1"},
      {"traces", range + "&sort=duration&order=asc"},
      {"traces", range + "&attr=http.response.status_code%3E200"},
      {"traces", range + "&attr=vip%21%3Dtrue&attr=currency"},
      {"traces", range + "&resource_attr=host.name%3Dweb-1"},
      {"traces/durations", range},
      {"traces/durations", range + "&service=checkout&attr=amount%3C100"},
      {"traces/attributes", range},
      {"traces/attributes", range + "&sample=5"},
      {"traces/attributes", range + "&key=http.response.status_code"},
      {"traces/attributes", range + "&key=service.name&map=resource"},
      {"logs", range + "&attr=lang%21%3Dfr"},
      {"traces/0af7651916cd43dd8448eb211c80319c", ""},
      {"traces/00000000000000001111111111111111", ""},
      {"exceptions", range},
      {"exceptions", range + "&limit=1"},
      {"service_map", range},
      {"service_map", range + "&service=checkout"},
      {"logs", range},
      {"logs", range + "&severity_min=13"},
      {"logs", range + "&q=payment"},
      {"logs", range + "&q=50%25_"},
      {"logs", range + "&attr=lang%3Dfr"},
      {"logs/volume", range + "&step_ms=10000"},
      {"metrics", ""},
      {"metrics/labels", "name=requests"},
      {"metrics/series", range + "&name=cpu.temp&agg=avg&step_ms=10000&group_by=core"},
      {"metrics/series", range + "&name=cpu.temp&agg=max&step_ms=10000"},
      {"metrics/series", range + "&name=requests&agg=sum&step_ms=10000&filter=service.name=checkout"},
      {"metrics/series", range + "&name=requests&agg=last&step_ms=10000&group_by=code"},
      {"metrics/series", range + "&name=rpc.duration&agg=p95&step_ms=10000&group_by=service.name"},
      {"metrics/series", range + "&name=rpc.duration&agg=p50&step_ms=10000"},
      {"metrics/series", range + "&name=gc.pause&agg=p95&step_ms=10000"},
      {"metrics/series", range + "&name=requests&agg=rate&step_ms=10000&group_by=service.name"},
      {"metrics/series", range + "&name=http.server.duration&agg=p95&step_ms=10000&group_by=http.route"},
  };
  for (const auto& [op, query] : calls) {
    auto mine = engine.Json(op, query);
    auto truth = reference.Json(op, query);
    std::string diff;
    EXPECT_TRUE(SameJson(mine, truth, op + "?" + query, &diff)) << GetParam() << " differs: " << diff;
  }
}

TEST_P(QueryEnginesTest, SeriesBucketsLieOnMultiplesOfTheStep) {
  // A range that starts 3 s into a 10 s bucket and ends 4 s before the end of
  // one answers with the whole buckets around it: the same bucket starts and
  // values as the range on the grid. A chart then does not shift as "now"
  // moves, and its first bucket is not a part of a step.
  QueryOnEngine q(GetParam());
  const int64_t from = kRange.from_ns / kNsPerMs, to = kRange.to_ns / kNsPerMs;
  const std::string grid = "step_ms=10000&from=" + kFrom + "&to=" + kTo;
  const std::string off_grid = "step_ms=10000&from=" + std::to_string(from + 3000) + "&to=" + std::to_string(to - 4000);
  const std::vector<std::pair<std::string, std::string>> calls = {
      {"endpoints/series", "metric=count"},
      {"endpoints/series", "metric=p95"},
      {"logs/volume", ""},
      {"metrics/series", "name=cpu.temp&agg=avg"},
      {"metrics/series", "name=requests&agg=rate"},
      {"metrics/series", "name=http.server.duration&agg=p50"},
  };
  for (const auto& [op, extra] : calls) {
    auto shifted = q.Json(op, off_grid + "&" + extra);
    auto aligned = q.Json(op, grid + "&" + extra);
    auto buckets = shifted["buckets"].get_array();
    ASSERT_EQ(buckets.size(), 6u) << op << "?" << extra;
    EXPECT_EQ(int64_t(buckets.at(0)), from) << op << "?" << extra;
    std::string diff;
    EXPECT_TRUE(SameJson(shifted, aligned, op + "?" + extra, &diff)) << GetParam() << ": " << diff;
  }
}

INSTANTIATE_TEST_SUITE_P(Engines, QueryEnginesTest,
                         ::testing::Values("memory", "duckdb", "sqlite", "clickhouse", "chdb"),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace sightline
