#include "bench/probe_truth.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <string>
#include <tuple>

#include "bench/load_generator.h"
#include "common/hex.h"
#include "common/json_writer.h"
#include "otlp/decoder.h"

namespace sightline::bench {
namespace {

constexpr int64_t kMs = 1000000;
const std::string kTraceA = "000000000000000000000000000000aa";

ProbeTruthOptions Options() {
  ProbeTruthOptions o;
  o.from_ns = 1000 * kMs;
  o.to_ns = 100000 * kMs;
  o.page = 2;
  o.top = 1;
  o.word = "timeout";
  o.trace_id = kTraceA;
  return o;
}

const Resource kServiceA{1, "a", {}}, kServiceB{2, "b", {}}, kServiceC{3, "c", {}};

//! One span as the generator would have sent it.
SpanRow Span(const Resource* service, std::string_view name, std::string_view route, int kind, bool has_parent,
             int64_t start_ms, int64_t duration_ms, bool error, std::string_view exception_type = "") {
  SpanRow s;
  s.resource = service;
  s.span_id[7] = 2;
  if (has_parent) s.parent_span_id[7] = 1;
  s.name = name;
  s.kind = kind;
  s.start_time_ns = start_ms * kMs;
  s.end_time_ns = (start_ms + duration_ms) * kMs;
  if (!route.empty()) s.attributes.Add("http.route", route);
  if (error) s.status_code = 2;
  if (!exception_type.empty()) {
    SpanEvent& e = s.event.emplace();
    e.name = "exception";
    e.attributes.Add("exception.type", exception_type);
    e.attributes.Add("exception.message", "boom");
  }
  return s;
}

SpanRequest Spans() {
  SpanRequest r;
  r.rows = {
      Span(&kServiceA, "GET /x", "/x", 2, false, 2000, 10, false),
      Span(&kServiceA, "GET /x", "/x", 2, false, 2001, 30, true, "E1"),
      Span(&kServiceA, "GET /x", "/x", 2, false, 2002, 20, false),
      Span(&kServiceB, "work", "", 1, false, 2003, 5, false),         // a root without a route: endpoint = name
      Span(&kServiceB, "SELECT", "", 3, true, 2004, 1, false, "E1"),  // a child: not an entry; its exception counts
      Span(&kServiceA, "GET /x", "/x", 2, false, 500, 1, false),      // before the range
      Span(&kServiceA, "GET /x", "/x", 2, false, 100000, 1, false),   // at `to`: outside [from, to)
  };
  return r;
}

TEST(ProbeTruth, PercentileInterpolatesBetweenClosestRanks) {
  EXPECT_DOUBLE_EQ(InterpolatedPercentile({1, 2, 3, 4}, 0.5), 2.5);
  EXPECT_DOUBLE_EQ(InterpolatedPercentile({10, 20, 30}, 0.95), 29);
  EXPECT_DOUBLE_EQ(InterpolatedPercentile({7}, 0.99), 7);
  EXPECT_TRUE(std::isnan(InterpolatedPercentile({}, 0.5)));
}

TEST(ProbeTruth, EndpointsMatchCountsErrorsAndExactPercentiles) {
  ProbeTruth t(Options());
  t.AddSpans(Spans());
  EXPECT_EQ(t.entry_spans(), 4u);
  const std::string good =
      R"({"total":2,"endpoints":[{"service":"a","endpoint":"/x","count":3,"errors":1,"error_rate":0.333,)"
      R"("p50_ms":20,"p95_ms":29,"p99_ms":29.8},{"service":"b","endpoint":"work","count":1,"errors":0,)"
      R"("error_rate":0,"p50_ms":5,"p95_ms":5,"p99_ms":5}]})";
  EXPECT_EQ(t.CheckEndpoints(good), "ok");

  std::string wrong_count = good;
  wrong_count.replace(wrong_count.find("\"count\":3"), 9, "\"count\":4");
  EXPECT_NE(t.CheckEndpoints(wrong_count).find("count 4 != 3"), std::string::npos) << t.CheckEndpoints(wrong_count);

  std::string wrong_p95 = good;
  wrong_p95.replace(wrong_p95.find("\"p95_ms\":29"), 11, "\"p95_ms\":30");
  EXPECT_NE(t.CheckEndpoints(wrong_p95).find("p95_ms"), std::string::npos);

  const std::string missing_row =
      R"({"total":2,"endpoints":[{"service":"b","endpoint":"work","count":1,"errors":0,"p50_ms":5,"p95_ms":5,"p99_ms":5}]})";
  EXPECT_NE(t.CheckEndpoints(missing_row).find("top"), std::string::npos);
  EXPECT_EQ(t.CheckEndpoints("not json"), "mismatch: answer is not JSON");
}

TEST(ProbeTruth, PastTheRollupThresholdPercentilesMayBeOffByOnePercent) {
  const std::string good =
      R"({"total":2,"endpoints":[{"service":"a","endpoint":"/x","count":3,"errors":1,"error_rate":0.333,)"
      R"("p50_ms":20,"p95_ms":29,"p99_ms":29.8},{"service":"b","endpoint":"work","count":1,"errors":0,)"
      R"("error_rate":0,"p50_ms":5,"p95_ms":5,"p99_ms":5}]})";
  std::string near = good, far = good;
  near.replace(near.find("\"p95_ms\":29"), 11, "\"p95_ms\":29.2");  // 0.7% off
  far.replace(far.find("\"p95_ms\":29"), 11, "\"p95_ms\":29.4");    // 1.4% off
  ProbeTruth exact(Options());                                      // 4 entry spans, under the default 1M: exact
  exact.AddSpans(Spans());
  EXPECT_NE(exact.CheckEndpoints(near).find("p95_ms"), std::string::npos);
  ProbeTruthOptions o = Options();
  o.rollup_exact_spans = 4;  // the server reads rollups from 4 spans on
  ProbeTruth rollups(o);
  rollups.AddSpans(Spans());
  EXPECT_EQ(rollups.CheckEndpoints(near), "ok");
  EXPECT_NE(rollups.CheckEndpoints(far).find("p95_ms"), std::string::npos);
}

TEST(ProbeTruth, PercentilesAreNotComparedPastTheExactLimit) {
  ProbeTruthOptions o = Options();
  o.exact_percentile_rows = 3;
  ProbeTruth t(o);
  t.AddSpans(Spans());  // 4 entry spans > 3
  const std::string approx =
      R"({"total":2,"endpoints":[{"service":"a","endpoint":"/x","count":3,"errors":1,"p50_ms":21,"p95_ms":28,"p99_ms":29},)"
      R"({"service":"b","endpoint":"work","count":1,"errors":0,"p50_ms":5,"p95_ms":5,"p99_ms":5}]})";
  EXPECT_EQ(t.CheckEndpoints(approx), "ok");
}

TEST(ProbeTruth, EndpointSeriesNamesTheTopGroupsThenOtherWithBucketP95s) {
  ProbeTruth t(Options());  // top = 1, from = 1000 ms
  t.AddSpans(Spans());
  // 1 s buckets: every in-range span starts in bucket 1 (2000..2004 ms).
  // "a /x": p95 of 10, 20, 30 ms = 29; "other" ("b work"): 5.
  EXPECT_EQ(
      t.CheckEndpointSeries(
          R"({"step_ms":1000,"series":[{"name":"a /x","values":[null,29,null]},{"name":"other","values":[null,5,null]}]})"),
      "ok");
  const std::string wrong_value = t.CheckEndpointSeries(
      R"({"step_ms":1000,"series":[{"name":"a /x","values":[null,30,null]},{"name":"other","values":[null,5,null]}]})");
  EXPECT_NE(wrong_value.find("bucket 1 p95"), std::string::npos) << wrong_value;
  EXPECT_NE(
      t.CheckEndpointSeries(
          R"({"step_ms":1000,"series":[{"name":"a /x","values":[29,null,null]},{"name":"other","values":[null,5,null]}]})"),
      "ok");  // the right value in the wrong bucket
  EXPECT_NE(
      t.CheckEndpointSeries(
          R"({"step_ms":1000,"series":[{"name":"b work","values":[null,5]},{"name":"other","values":[null,29]}]})"),
      "ok");
  EXPECT_NE(t.CheckEndpointSeries(R"({"step_ms":1000,"series":[{"name":"a /x","values":[null,29]}]})"), "ok");
}

TEST(ProbeTruth, ExceptionsAreGroupedOverAllSpansInOrder) {
  ProbeTruthOptions o = Options();
  o.page = 50;
  ProbeTruth t(o);
  t.AddSpans(Spans());
  const std::string good = R"({"exceptions":[{"type":"E1","message":"boom","service":"a","count":1},)"
                           R"({"type":"E1","message":"boom","service":"b","count":1}]})";
  EXPECT_EQ(t.CheckExceptions(good), "ok");
  const std::string swapped = R"({"exceptions":[{"type":"E1","message":"boom","service":"b","count":1},)"
                              R"({"type":"E1","message":"boom","service":"a","count":1}]})";
  EXPECT_NE(t.CheckExceptions(swapped), "ok");
  EXPECT_NE(t.CheckExceptions(R"({"exceptions":[]})").find("missing"), std::string::npos);
}

LogRow Log(int64_t ms, int severity, std::string body, const std::string& trace) {
  LogRow r;
  r.resource = &kServiceA;
  r.time_ns = ms * kMs;
  r.severity_number = severity;
  r.body = std::move(body);
  if (!trace.empty()) {
    std::string bytes;
    EXPECT_TRUE(DecodeHex(trace, &bytes));
    std::copy(bytes.begin(), bytes.end(), r.trace_id.begin());
    r.has_trace = true;
  }
  return r;
}

std::string LogsAnswer(std::initializer_list<int64_t> ms) {
  std::string out = R"({"logs":[)";
  bool first = true;
  for (int64_t m : ms) {
    out += (first ? "" : ",") + std::string(R"({"time_ns":")") + std::to_string(m * kMs) +
           R"(","severity_number":17,"body":"upstream Timeout","trace_id":")" + kTraceA + R"("})";
    first = false;
  }
  return out + R"(],"next_cursor":null})";
}

TEST(ProbeTruth, LogsAreTheNewestPageOfEachFilter) {
  ProbeTruth t(Options());  // page = 2
  LogRequest b;
  b.rows.push_back(Log(2000, 17, "upstream timeout", kTraceA));
  b.rows.push_back(Log(5000, 9, "request TIMEOUT again", ""));
  b.rows.push_back(Log(3000, 21, "disk full", "000000000000000000000000000000bb"));
  b.rows.push_back(Log(4000, 17, "queue timeout", ""));
  b.rows.push_back(Log(999, 17, "old timeout", kTraceA));  // before the range
  t.AddLogs(b);
  using F = ProbeTruth::LogFilter;
  EXPECT_EQ(t.log_rows(), 4u);
  EXPECT_EQ(t.LogMatches(F::kSeverity), 3u);
  EXPECT_EQ(t.LogMatches(F::kWord), 3u);  // case-insensitive
  EXPECT_EQ(t.LogMatches(F::kTraceId), 1u);
  EXPECT_EQ(t.CheckLogs(LogsAnswer({4000, 3000}), F::kSeverity), "ok");
  EXPECT_NE(t.CheckLogs(LogsAnswer({4000, 2000}), F::kSeverity), "ok");  // skipped a newer row
  EXPECT_NE(t.CheckLogs(LogsAnswer({4000}), F::kSeverity), "ok");        // short page
  EXPECT_EQ(t.CheckLogs(LogsAnswer({5000, 4000}), F::kWord), "ok");
  EXPECT_EQ(t.CheckLogs(LogsAnswer({2000}), F::kTraceId), "ok");
  EXPECT_NE(t.CheckLogs(LogsAnswer({}), F::kTraceId), "ok");
}

TEST(ProbeTruth, TraceIsEverySpanSentWithItsIdAtAnyTime) {
  ProbeTruthOptions o = Options();
  o.span_trace[15] = 0x7;
  ProbeTruth t(o);
  SpanRequest r;
  // Two spans of the trace, one before the queried range, and one of another trace.
  r.rows = {Span(&kServiceA, "late", "", 1, true, 5000, 1, false),
            Span(&kServiceA, "early", "", 2, false, 10, 1, false),
            Span(&kServiceA, "other", "", 2, false, 3000, 1, false)};
  r.rows[0].trace_id = o.span_trace;
  r.rows[0].span_id[7] = 3;
  r.rows[1].trace_id = o.span_trace;
  r.rows[2].trace_id[15] = 0x8;
  t.AddSpans(r);
  const std::string ok = R"({"spans":[{"span_id":"0000000000000002","start_time_ns":"10000000"},)"
                         R"({"span_id":"0000000000000003","start_time_ns":"5000000000"}]})";
  EXPECT_EQ(t.CheckTrace(ok), "ok");
  EXPECT_NE(t.CheckTrace(R"({"spans":[{"span_id":"0000000000000003","start_time_ns":"5000000000"}]})"), "ok");
  EXPECT_NE(t.CheckTrace(R"({"spans":[{"span_id":"0000000000000003","start_time_ns":"5000000000"},)"
                         R"({"span_id":"0000000000000002","start_time_ns":"10000000"}]})"),
            "ok");
}

TEST(ProbeTruth, MetricNamesAndGroupValues) {
  ProbeTruth t(Options());
  const MetricDef cpu{"cpu", "", "1", MetricKind::kGauge, false}, mem{"mem", "", "By", MetricKind::kGauge, true},
      late{"late", "", "1", MetricKind::kGauge, false};
  const Attribute user[] = {{"cpu.mode", "user"}}, system[] = {{"cpu.mode", "system"}};
  const MetricSeries series[] = {
      {1, &kServiceA, &cpu, user}, {2, &kServiceB, &cpu, system}, {3, &kServiceA, &mem, {}},
      {4, &kServiceA, &late, {}},  {5, &kServiceC, &cpu, user},  // cpu of service c shares cpu.mode=user with a's
  };
  MetricRequest b;
  // (series, ms, value)
  for (auto [id, ms, value] : {std::tuple<int, int64_t, double>{1, 2000, 0.5},
                               {2, 2000, 0.25},
                               {3, 3000, 7},
                               {4, 200000, 1},
                               {5, 2500, 0.75},
                               {1, 3100, 0.125}}) {
    MetricPoint& p = b.rows.emplace_back();
    p.series = &series[id - 1];
    p.time_ns = ms * kMs;
    if (p.series->metric->is_int) p.int_value = static_cast<int64_t>(value);
    else p.double_value = value;
  }
  t.AddMetrics(b);
  EXPECT_EQ(t.metric_points(), 5u);
  EXPECT_EQ(t.CheckMetricList(R"({"metrics":[{"name":"cpu"},{"name":"mem"}]})"), "ok");
  EXPECT_NE(t.CheckMetricList(R"({"metrics":[{"name":"cpu"},{"name":"mem"},{"name":"late"}]})"), "ok");
  EXPECT_EQ(t.CheckMetricGroups(R"({"series":[{"labels":{"cpu.mode":"user"}},{"labels":{"cpu.mode":"system"}}]})",
                                "cpu", "cpu.mode"),
            "ok");
  EXPECT_NE(t.CheckMetricGroups(R"({"series":[{"labels":{"cpu.mode":"user"}}]})", "cpu", "cpu.mode"), "ok");
  EXPECT_NE(t.CheckMetricGroups(R"({"series":[{"labels":{"service.name":"a"}},{"labels":{"service.name":"b"}}]})",
                                "cpu", "service.name"),
            "ok");  // c is missing
  EXPECT_EQ(
      t.CheckMetricGroups(
          R"({"series":[{"labels":{"service.name":"a"}},{"labels":{"service.name":"b"}},{"labels":{"service.name":"c"}}]})",
          "cpu", "service.name"),
      "ok");
  // Means pooled over the group's points, 1 s buckets from 1000 ms: user has
  // 0.5 and 0.75 in bucket 1 (mean 0.625) and 0.125 in bucket 2; system 0.25 in bucket 1.
  const std::string means = R"({"step_ms":1000,"series":[{"labels":{"cpu.mode":"user"},"values":[null,0.625,0.125]},)"
                            R"({"labels":{"cpu.mode":"system"},"values":[null,0.25,null]}]})";
  EXPECT_EQ(t.CheckMetricGroups(means, "cpu", "cpu.mode", /*avg=*/true), "ok");
  std::string wrong_mean = means;
  wrong_mean.replace(wrong_mean.find("0.125"), 5, "0.3125");
  EXPECT_NE(t.CheckMetricGroups(wrong_mean, "cpu", "cpu.mode", true).find("bucket 2 avg"), std::string::npos);
  std::string missing_bucket = means;
  missing_bucket.replace(missing_bucket.find("null,0.25"), 9, "0.25,null");
  EXPECT_NE(t.CheckMetricGroups(missing_bucket, "cpu", "cpu.mode", true), "ok");
}

TEST(ProbeTruth, MetricMeansPoolAcrossRequestsUntilTheExactLimit) {
  const MetricDef cpu{"cpu", "", "1", MetricKind::kGauge, false};
  const Attribute user[] = {{"cpu.mode", "user"}};
  const MetricSeries series{1, &kServiceA, &cpu, user};
  auto request = [&](int64_t ms, double value) {
    MetricRequest r;
    MetricPoint& p = r.rows.emplace_back();
    p.series = &series;
    p.time_ns = ms * kMs;
    p.double_value = value;
    return r;
  };
  const std::string right = R"({"step_ms":1000,"series":[{"labels":{"cpu.mode":"user"},"values":[null,0.375]}]})";
  const std::string wrong = R"({"step_ms":1000,"series":[{"labels":{"cpu.mode":"user"},"values":[null,0.5]}]})";
  ProbeTruth t(Options());
  t.AddMetrics(request(2000, 0.5));  // two requests, one series: one group
  t.AddMetrics(request(2100, 0.25));
  EXPECT_EQ(t.CheckMetricGroups(right, "cpu", "cpu.mode", /*avg=*/true), "ok");
  EXPECT_NE(t.CheckMetricGroups(wrong, "cpu", "cpu.mode", true).find("bucket 1 avg"), std::string::npos);

  ProbeTruthOptions o = Options();
  o.exact_percentile_rows = 1;
  ProbeTruth past(o);
  past.AddMetrics(request(2000, 0.5));
  past.AddMetrics(request(2100, 0.25));
  EXPECT_FALSE(past.ExactPoints());
  EXPECT_EQ(past.CheckMetricGroups(wrong, "cpu", "cpu.mode", true), "ok");  // means no longer compared
  EXPECT_NE(past.CheckMetricGroups(R"({"step_ms":1000,"series":[]})", "cpu", "cpu.mode", true), "ok");
}

// ---- the truth against answers from the server's decoding ---------------------------
//
// The point of taking the truth from the generator's rows: a server whose
// decoder loses or changes a value answers differently from what was sent,
// and --check must say so. These tests build the two dashboard answers the
// way the API defines them (docs/API.md) from batches decoded by the server's
// own decoder, first as decoded (the truth agrees: a differential test of
// encoder and decoder), then with one value changed as a buggy decoder would
// (the truth disagrees). Truth computed from the decoded batches themselves
// would have agreed with every one of these wrong answers.

//! GET /api/v1/endpoints over decoded spans: every (service, endpoint) of the
//! entry spans in [from, to), by count.
std::string EndpointsAnswer(const std::vector<SpanBatch>& batches, const ProbeTruthOptions& o) {
  struct Tally {
    uint64_t count = 0, errors = 0;
    std::vector<int64_t> durations;
  };
  std::map<std::pair<std::string, std::string>, Tally> groups;
  for (const SpanBatch& b : batches) {
    for (size_t i = 0; i < b.rows(); ++i) {
      const bool entry = b.kind[i] == 2 || b.kind[i] == 5 || b.parent_span_id[i] == 0;
      if (!entry || b.start_time_ns[i] < o.from_ns || b.start_time_ns[i] >= o.to_ns) continue;
      const std::string_view route = b.http_route.Get(i);
      Tally& t = groups[{std::string(b.service_name.Get(i)), std::string(route.empty() ? b.name.Get(i) : route)}];
      ++t.count;
      t.errors += b.status_code[i] == 2 ? 1 : 0;
      t.durations.push_back(b.end_time_ns[i] - b.start_time_ns[i]);
    }
  }
  std::vector<std::pair<const std::pair<std::string, std::string>*, Tally*>> rows;
  for (auto& [key, t] : groups) rows.push_back({&key, &t});
  std::stable_sort(rows.begin(), rows.end(),
                   [](const auto& a, const auto& b) { return a.second->count > b.second->count; });
  std::string out;
  JsonWriter w(&out);
  w.BeginObject();
  w.Key("total");
  w.Uint(groups.size());
  w.Key("endpoints");
  w.BeginArray();
  for (size_t i = 0; i < rows.size() && i < o.page; ++i) {
    Tally& t = *rows[i].second;
    std::sort(t.durations.begin(), t.durations.end());
    w.BeginObject();
    w.Key("service");
    w.String(rows[i].first->first);
    w.Key("endpoint");
    w.String(rows[i].first->second);
    w.Key("count");
    w.Uint(t.count);
    w.Key("errors");
    w.Uint(t.errors);
    for (auto [name, q] : {std::pair{"p50_ms", 0.5}, std::pair{"p95_ms", 0.95}, std::pair{"p99_ms", 0.99}}) {
      w.Key(name);
      w.Double(InterpolatedPercentile(t.durations, q) / 1e6);
    }
    w.EndObject();
  }
  w.EndArray();
  w.EndObject();
  return out;
}

//! GET /api/v1/logs?severity_min=N over decoded logs: the newest page.
std::string ErrorLogsAnswer(const std::vector<LogBatch>& batches, const ProbeTruthOptions& o) {
  std::vector<std::pair<int64_t, int32_t>> rows;  // (time, severity)
  for (const LogBatch& b : batches) {
    for (size_t i = 0; i < b.rows(); ++i) {
      if (b.severity_number[i] >= o.severity_min && b.time_ns[i] >= o.from_ns && b.time_ns[i] < o.to_ns) {
        rows.push_back({b.time_ns[i], b.severity_number[i]});
      }
    }
  }
  std::sort(rows.rbegin(), rows.rend());
  std::string out;
  JsonWriter w(&out);
  w.BeginObject();
  w.Key("logs");
  w.BeginArray();
  for (size_t i = 0; i < rows.size() && i < o.page; ++i) {
    w.BeginObject();
    w.Key("time_ns");
    w.String(std::to_string(rows[i].first));
    w.Key("severity_number");
    w.Int(rows[i].second);
    w.EndObject();
  }
  w.EndArray();
  w.EndObject();
  return out;
}

class TruthAgainstDecodedAnswers : public ::testing::Test {
 protected:
  void SetUp() override {
    GeneratorOptions g;
    g.batch = 2000;  // a Collector's shape: all 10 services, 50 endpoints
    g.seed = 11;
    g.base_time_ns = 1700000000ll * 1000000000ll;
    gen_ = std::make_unique<LoadGenerator>(g);
    o_.from_ns = g.base_time_ns;
    o_.to_ns = g.base_time_ns + 10 * g.time_step_ns;
    o_.page = 50;
    truth_ = std::make_unique<ProbeTruth>(o_);
    for (uint64_t i = 0; i < 3; ++i) {
      truth_->AddSpans(gen_->Spans(i));
      truth_->AddLogs(gen_->Logs(i));
      uint32_t items = 0;
      Rejections rejected;
      ASSERT_TRUE(DecodeSpans(gen_->BuildRaw(Signal::kSpans, i, &items), PayloadFormat::kProtobuf,
                              &spans_.emplace_back(), &rejected)
                      .ok());
      ASSERT_TRUE(DecodeLogs(gen_->BuildRaw(Signal::kLogs, i, &items), PayloadFormat::kProtobuf, 1,
                             &logs_.emplace_back(), &rejected)
                      .ok());
      ASSERT_EQ(rejected.count, 0);
    }
  }

  //! (batch, row) of the first decoded entry span satisfying pred.
  template <typename Pred>
  std::pair<size_t, size_t> FindEntry(Pred pred) const {
    for (size_t b = 0; b < spans_.size(); ++b) {
      for (size_t i = 0; i < spans_[b].rows(); ++i) {
        if (spans_[b].kind[i] == 2 && pred(spans_[b], i)) return {b, i};
      }
    }
    ADD_FAILURE() << "no such span";
    return {0, 0};
  }

  std::unique_ptr<LoadGenerator> gen_;
  ProbeTruthOptions o_;
  std::unique_ptr<ProbeTruth> truth_;
  std::vector<SpanBatch> spans_;
  std::vector<LogBatch> logs_;
};

TEST_F(TruthAgainstDecodedAnswers, AgreesWithAnswersFromAFaithfulDecoder) {
  EXPECT_EQ(truth_->CheckEndpoints(EndpointsAnswer(spans_, o_)), "ok");
  EXPECT_EQ(truth_->CheckLogs(ErrorLogsAnswer(logs_, o_), ProbeTruth::LogFilter::kSeverity), "ok");
  EXPECT_GT(truth_->LogMatches(ProbeTruth::LogFilter::kSeverity), o_.page);  // the page is a real choice
}

TEST_F(TruthAgainstDecodedAnswers, CatchesADecoderThatDropsAnErrorStatus) {
  auto [b, i] = FindEntry([](const SpanBatch& s, size_t r) { return s.status_code[r] == 2; });
  spans_[b].status_code[i] = 0;
  const std::string verdict = truth_->CheckEndpoints(EndpointsAnswer(spans_, o_));
  EXPECT_EQ(verdict.rfind("mismatch: ", 0), 0u) << verdict;
  EXPECT_NE(verdict.find("errors"), std::string::npos) << verdict;
}

TEST_F(TruthAgainstDecodedAnswers, CatchesADecoderThatLosesASpan) {
  // Losing a span = moving it out of the queried range.
  auto [b, i] = FindEntry([](const SpanBatch&, size_t) { return true; });
  spans_[b].start_time_ns[i] = o_.to_ns;
  const std::string verdict = truth_->CheckEndpoints(EndpointsAnswer(spans_, o_));
  EXPECT_NE(verdict.find("count"), std::string::npos) << verdict;
}

TEST_F(TruthAgainstDecodedAnswers, CatchesADecoderThatStretchesADuration) {
  // The longest span of some endpoint: its p99 interpolates towards it.
  auto [b, i] = FindEntry([](const SpanBatch&, size_t) { return true; });
  spans_[b].end_time_ns[i] += 1000000000;  // +1 s, beyond any generated duration
  const std::string verdict = truth_->CheckEndpoints(EndpointsAnswer(spans_, o_));
  EXPECT_NE(verdict.find("p99_ms"), std::string::npos) << verdict;
}

TEST_F(TruthAgainstDecodedAnswers, CatchesADecoderThatLowersASeverity) {
  // The newest error record read as a warning: the newest page shifts.
  size_t newest_b = 0, newest_i = 0;
  int64_t newest = INT64_MIN;
  for (size_t b = 0; b < logs_.size(); ++b) {
    for (size_t i = 0; i < logs_[b].rows(); ++i) {
      if (logs_[b].severity_number[i] >= o_.severity_min && logs_[b].time_ns[i] > newest) {
        newest = logs_[b].time_ns[i];
        newest_b = b;
        newest_i = i;
      }
    }
  }
  logs_[newest_b].severity_number[newest_i] = 13;
  const std::string verdict = truth_->CheckLogs(ErrorLogsAnswer(logs_, o_), ProbeTruth::LogFilter::kSeverity);
  EXPECT_NE(verdict.find("row 0 time_ns"), std::string::npos) << verdict;
}

}  // namespace
}  // namespace sightline::bench
