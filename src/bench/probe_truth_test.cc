#include "bench/probe_truth.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <tuple>

#include "common/hex.h"

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

//! Appends one span, filling only the columns the truth reads.
void AddSpan(SpanBatch* b, const std::string& service, const std::string& name, const std::string& route, int kind,
             const std::string& parent, int64_t start_ms, int64_t duration_ms, bool error,
             const std::string& exception_type = "") {
  b->service_name.Append(service);
  b->name.Append(name);
  b->http_route.Append(route);
  b->kind.push_back(kind);
  uint64_t unused = 0, parent_id = 0;
  if (!parent.empty()) {
    EXPECT_TRUE(IdFromHex(parent, &unused, &parent_id));
  }
  b->parent_span_id.push_back(parent_id);
  b->start_time_ns.push_back(start_ms * kMs);
  b->end_time_ns.push_back((start_ms + duration_ms) * kMs);
  b->status_code.push_back(error ? 2 : 0);
  b->exception_type.Append(exception_type);
  b->exception_message.Append(exception_type.empty() ? "" : "boom");
}

SpanBatch Spans() {
  SpanBatch b;
  AddSpan(&b, "a", "GET /x", "/x", 2, "", 2000, 10, false);
  AddSpan(&b, "a", "GET /x", "/x", 2, "", 2001, 30, true, "E1");
  AddSpan(&b, "a", "GET /x", "/x", 2, "", 2002, 20, false);
  AddSpan(&b, "b", "work", "", 1, "", 2003, 5, false);              // a root without a route: endpoint = name
  AddSpan(&b, "b", "SELECT", "", 3, "0102030405060708", 2004, 1, false, "E1");  // a child: no endpoint, but its exception counts
  AddSpan(&b, "a", "GET /x", "/x", 2, "", 500, 1, false);          // before the range
  AddSpan(&b, "a", "GET /x", "/x", 2, "", 100000, 1, false);       // at `to`: outside [from, to)
  return b;
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
  EXPECT_EQ(t.CheckEndpointSeries(
                R"({"step_ms":1000,"series":[{"name":"a /x","values":[null,29,null]},{"name":"other","values":[null,5,null]}]})"),
            "ok");
  const std::string wrong_value =
      t.CheckEndpointSeries(R"({"step_ms":1000,"series":[{"name":"a /x","values":[null,30,null]},{"name":"other","values":[null,5,null]}]})");
  EXPECT_NE(wrong_value.find("bucket 1 p95"), std::string::npos) << wrong_value;
  EXPECT_NE(t.CheckEndpointSeries(
                R"({"step_ms":1000,"series":[{"name":"a /x","values":[29,null,null]},{"name":"other","values":[null,5,null]}]})"),
            "ok");  // the right value in the wrong bucket
  EXPECT_NE(t.CheckEndpointSeries(R"({"step_ms":1000,"series":[{"name":"b work","values":[null,5]},{"name":"other","values":[null,29]}]})"),
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

void AddLog(LogBatch* b, int64_t ms, int severity, const std::string& body, const std::string& trace) {
  b->time_ns.push_back(ms * kMs);
  b->severity_number.push_back(severity);
  b->body.Append(body);
  uint64_t high = 0, low = 0;
  if (!trace.empty()) {
    EXPECT_TRUE(IdFromHex(trace, &high, &low));
  }
  b->trace_id_high.push_back(high);
  b->trace_id_low.push_back(low);
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
  LogBatch b;
  AddLog(&b, 2000, 17, "upstream timeout", kTraceA);
  AddLog(&b, 5000, 9, "request TIMEOUT again", "");
  AddLog(&b, 3000, 21, "disk full", "000000000000000000000000000000bb");
  AddLog(&b, 4000, 17, "queue timeout", "");
  AddLog(&b, 999, 17, "old timeout", kTraceA);  // before the range
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

TEST(ProbeTruth, MetricNamesAndGroupValues) {
  ProbeTruth t(Options());
  MetricBatch b;
  auto series = [&](int64_t id, const std::string& name, const std::string& service, const std::string& attrs) {
    b.series_id.push_back(id);
    b.metric_name.Append(name);
    b.service_name.Append(service);
    b.attributes.Append(attrs);
  };
  series(1, "cpu", "a", R"({"cpu.mode":"user"})");
  series(2, "cpu", "b", R"({"cpu.mode":"system"})");
  series(3, "mem", "a", "{}");
  series(4, "late", "a", "{}");
  // (series, ms, value); cpu of service c shares cpu.mode=user with a's.
  series(5, "cpu", "c", R"({"cpu.mode":"user"})");
  for (auto [id, ms, value] : {std::tuple<int64_t, int64_t, double>{1, 2000, 0.5}, {2, 2000, 0.25}, {3, 3000, 7},
                               {4, 200000, 1}, {5, 2500, 0.75}, {1, 3100, 0.125}}) {
    b.point_series_id.push_back(id);
    b.time_ns.push_back(ms * kMs);
    b.value.push_back(value);
  }
  t.AddMetrics(b);
  EXPECT_EQ(t.metric_points(), 5u);
  EXPECT_EQ(t.CheckMetricList(R"({"metrics":[{"name":"cpu"},{"name":"mem"}]})"), "ok");
  EXPECT_NE(t.CheckMetricList(R"({"metrics":[{"name":"cpu"},{"name":"mem"},{"name":"late"}]})"), "ok");
  EXPECT_EQ(t.CheckMetricGroups(R"({"series":[{"labels":{"cpu.mode":"user"}},{"labels":{"cpu.mode":"system"}}]})", "cpu",
                                "cpu.mode"),
            "ok");
  EXPECT_NE(t.CheckMetricGroups(R"({"series":[{"labels":{"cpu.mode":"user"}}]})", "cpu", "cpu.mode"), "ok");
  EXPECT_NE(t.CheckMetricGroups(R"({"series":[{"labels":{"service.name":"a"}},{"labels":{"service.name":"b"}}]})", "cpu",
                                "service.name"),
            "ok");  // c is missing
  EXPECT_EQ(t.CheckMetricGroups(
                R"({"series":[{"labels":{"service.name":"a"}},{"labels":{"service.name":"b"}},{"labels":{"service.name":"c"}}]})",
                "cpu", "service.name"),
            "ok");
  // Means pooled over the group's points, 1 s buckets from 1000 ms: user has
  // 0.5 and 0.75 in bucket 1 (mean 0.625) and 0.125 in bucket 2; system 0.25 in bucket 1.
  const std::string means =
      R"({"step_ms":1000,"series":[{"labels":{"cpu.mode":"user"},"values":[null,0.625,0.125]},)"
      R"({"labels":{"cpu.mode":"system"},"values":[null,0.25,null]}]})";
  EXPECT_EQ(t.CheckMetricGroups(means, "cpu", "cpu.mode", /*avg=*/true), "ok");
  std::string wrong_mean = means;
  wrong_mean.replace(wrong_mean.find("0.125"), 5, "0.3125");
  EXPECT_NE(t.CheckMetricGroups(wrong_mean, "cpu", "cpu.mode", true).find("bucket 2 avg"), std::string::npos);
  std::string missing_bucket = means;
  missing_bucket.replace(missing_bucket.find("null,0.25"), 9, "0.25,null");
  EXPECT_NE(t.CheckMetricGroups(missing_bucket, "cpu", "cpu.mode", true), "ok");
}

}  // namespace
}  // namespace sightline::bench
