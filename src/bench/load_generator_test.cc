#include "bench/load_generator.h"

#include <gtest/gtest.h>

#include <set>
#include <string>

#include "bench/http_load.h"
#include "bench/server_process.h"
#include "otlp/compression.h"
#include "otlp/decoder.h"

namespace sightline::bench {
namespace {

GeneratorOptions Options(size_t batch, WireFormat format = WireFormat::kProtobuf) {
  GeneratorOptions o;
  o.batch = batch;
  o.format = format;
  o.seed = 3;
  o.base_time_ns = 1700000000ll * 1000000000ll;
  return o;
}

PayloadFormat Decoded(WireFormat f) { return f == WireFormat::kJson ? PayloadFormat::kJson : PayloadFormat::kProtobuf; }

SpanBatch DecodeSpansOf(const LoadGenerator& gen, uint64_t index) {
  Payload p = gen.Build(Signal::kSpans, index);
  std::string raw;
  EXPECT_TRUE(Decompress(ContentEncoding::kGzip, p.body, 1 << 30, &raw).ok());
  SpanBatch b;
  Rejections r;
  Status st = DecodeSpans(raw, Decoded(gen.options().format), &b, &r);
  EXPECT_TRUE(st.ok()) << st.ToString();
  EXPECT_EQ(r.count, 0) << r.message;
  EXPECT_EQ(b.rows(), p.items);
  return b;
}

TEST(LoadGenerator, SpansDecodeToTheAdvertisedCountWithUniqueIds) {
  for (size_t batch : {1, 100, 16384}) {
    LoadGenerator gen(Options(batch));
    std::set<uint64_t> span_ids;
    size_t rows = 0;
    for (uint64_t i = 0; i < 3; ++i) {
      SpanBatch b = DecodeSpansOf(gen, i);
      ASSERT_EQ(b.rows(), batch);
      rows += b.rows();
      for (size_t r = 0; r < b.rows(); ++r) span_ids.insert(b.span_id[r]);
    }
    EXPECT_EQ(span_ids.size(), rows) << "batch " << batch;
  }
}

TEST(LoadGenerator, SpansHaveTheAdvertisedShape) {
  LoadGenerator gen(Options(16384));
  SpanBatch b = DecodeSpansOf(gen, 0);
  std::set<std::string> services, routes;
  std::set<std::pair<uint64_t, uint64_t>> traces;
  size_t roots = 0, errors = 0, children_with_parent_in_batch = 0;
  std::set<uint64_t> span_ids;
  for (size_t r = 0; r < b.rows(); ++r) span_ids.insert(b.span_id[r]);
  for (size_t r = 0; r < b.rows(); ++r) {
    services.insert(std::string(b.service_name.Get(r)));
    traces.insert({b.trace_id_high[r], b.trace_id_low[r]});
    if (b.parent_span_id[r] == 0) {
      ++roots;
      routes.insert(std::string(b.http_method.Get(r)) + " " + std::string(b.http_route.Get(r)));
      EXPECT_NE(b.http_status_code[r], 0);
      if (b.status_code[r] == 2) {
        ++errors;
        EXPECT_FALSE(b.exception_type.Get(r).empty());
      }
    } else if (span_ids.count(b.parent_span_id[r]) != 0) {
      ++children_with_parent_in_batch;
    }
    EXPECT_GT(b.end_time_ns[r], b.start_time_ns[r]);
  }
  EXPECT_EQ(services.size(), 10u);
  EXPECT_EQ(routes.size(), 50u);
  EXPECT_EQ(traces.size(), roots);
  EXPECT_EQ(children_with_parent_in_batch, b.rows() - roots);
  double error_share = static_cast<double>(errors) / static_cast<double>(roots);
  EXPECT_GT(error_share, 0.03);
  EXPECT_LT(error_share, 0.07);
}

TEST(LoadGenerator, SmallBatchesComeFromOneService) {
  LoadGenerator gen(Options(100));
  SpanBatch b = DecodeSpansOf(gen, 7);
  std::set<std::string> services;
  for (size_t r = 0; r < b.rows(); ++r) services.insert(std::string(b.service_name.Get(r)));
  EXPECT_EQ(services.size(), 1u);
}

TEST(LoadGenerator, IsDeterministic) {
  LoadGenerator a(Options(500)), b(Options(500));
  for (Signal s : {Signal::kSpans, Signal::kLogs, Signal::kMetrics}) {
    EXPECT_EQ(a.Build(s, 5).body, b.Build(s, 5).body);
    EXPECT_NE(a.Build(s, 5).body, a.Build(s, 6).body);
  }
}

TEST(LoadGenerator, JsonCarriesTheSameRowsAsProtobuf) {
  LoadGenerator proto(Options(300)), json(Options(300, WireFormat::kJson));
  SpanBatch p = DecodeSpansOf(proto, 2), j = DecodeSpansOf(json, 2);
  ASSERT_EQ(p.rows(), j.rows());
  for (size_t r = 0; r < p.rows(); ++r) {
    EXPECT_EQ(p.trace_id_high[r], j.trace_id_high[r]);
    EXPECT_EQ(p.trace_id_low[r], j.trace_id_low[r]);
    EXPECT_EQ(p.span_id[r], j.span_id[r]);
    EXPECT_EQ(p.parent_span_id[r], j.parent_span_id[r]);
    EXPECT_EQ(p.start_time_ns[r], j.start_time_ns[r]);
    EXPECT_EQ(p.attributes.Get(r), j.attributes.Get(r));
  }
}

TEST(LoadGenerator, LogsDecode) {
  for (WireFormat f : {WireFormat::kProtobuf, WireFormat::kJson}) {
    LoadGenerator gen(Options(16384, f));
    Payload p = gen.Build(Signal::kLogs, 1);
    std::string raw;
    ASSERT_TRUE(Decompress(ContentEncoding::kGzip, p.body, 1 << 30, &raw).ok());
    LogBatch b;
    Rejections r;
    ASSERT_TRUE(DecodeLogs(raw, Decoded(f), 1, &b, &r).ok());
    EXPECT_EQ(r.count, 0);
    ASSERT_EQ(b.rows(), 16384u);
    std::set<int32_t> severities;
    size_t with_trace = 0;
    for (size_t i = 0; i < b.rows(); ++i) {
      severities.insert(b.severity_number[i]);
      with_trace += b.trace_id_high[i] == 0 && b.trace_id_low[i] == 0 ? 0 : 1;
      EXPECT_FALSE(b.body.Get(i).empty());
    }
    EXPECT_EQ(severities.size(), 4u);
    EXPECT_GT(with_trace, b.rows() * 3 / 4);
    EXPECT_LT(with_trace, b.rows() * 17 / 20);
  }
}

TEST(LoadGenerator, MetricsCover200SeriesOfThreeTypes) {
  for (WireFormat f : {WireFormat::kProtobuf, WireFormat::kJson}) {
    LoadGenerator gen(Options(16384, f));
    Payload p = gen.Build(Signal::kMetrics, 4);
    std::string raw;
    ASSERT_TRUE(Decompress(ContentEncoding::kGzip, p.body, 1 << 30, &raw).ok());
    MetricBatch b;
    Rejections r;
    Status st = DecodeMetrics(raw, Decoded(f), &b, &r);
    ASSERT_TRUE(st.ok()) << st.ToString();
    EXPECT_EQ(r.count, 0) << r.message;
    EXPECT_EQ(b.rows(), 16384u);
    EXPECT_EQ(b.series_rows(), 200u);
    std::set<int32_t> types(b.metric_type.begin(), b.metric_type.end());
    EXPECT_EQ(types.size(), 3u);
  }
}

TEST(LoadGenerator, MetricPointsAdvanceInTimePerSeries) {
  LoadGenerator gen(Options(100));
  // Request i and i + 10 carry the same service (SDK shape, 10 services).
  auto last_time = [&](uint64_t index) {
    Payload p = gen.Build(Signal::kMetrics, index);
    std::string raw;
    EXPECT_TRUE(Decompress(ContentEncoding::kGzip, p.body, 1 << 30, &raw).ok());
    MetricBatch b;
    Rejections r;
    EXPECT_TRUE(DecodeMetrics(raw, PayloadFormat::kProtobuf, &b, &r).ok());
    return *std::max_element(b.time_ns.begin(), b.time_ns.end());
  };
  EXPECT_LT(last_time(3), last_time(13));
}

TEST(HttpLoad, OnlyLoopbackEndpoints) {
  EXPECT_TRUE(ParseLoopbackUrl("http://127.0.0.1:4318").ok());
  EXPECT_TRUE(ParseLoopbackUrl("http://localhost:4318/").ok());
  EXPECT_TRUE(ParseLoopbackUrl("http://[::1]:4318").ok());
  EXPECT_FALSE(ParseLoopbackUrl("http://10.0.0.1:4318").ok());
  EXPECT_FALSE(ParseLoopbackUrl("http://example.com:4318").ok());
  EXPECT_FALSE(ParseLoopbackUrl("https://127.0.0.1:4318").ok());
  EXPECT_FALSE(ParseLoopbackUrl("http://127.0.0.1").ok());
  EXPECT_FALSE(ParseLoopbackUrl("http://127.0.0.1:4318/v1/traces").ok());
}

TEST(HttpLoad, PercentileIsNearestRank) {
  std::vector<float> v = {5, 1, 4, 2, 3};
  EXPECT_EQ(Percentile(&v, 50), 3);
  EXPECT_EQ(Percentile(&v, 99), 5);
  EXPECT_EQ(Percentile(&v, 0), 1);
  std::vector<float> empty;
  EXPECT_EQ(Percentile(&empty, 50), 0);
}

TEST(ServerProcess, FindsNumbersInDeepHealth) {
  std::string json =
      R"({"status":"ok","rows":{"spans":12,"logs":0,"metric_points":7},"writer_queue":{"spans":{"batches":0,"rows":3,)"
      R"("commits":5},"logs":{"batches":0,"rows":0,"commits":9}},"rss_bytes":1048576})";
  uint64_t v = 0;
  ASSERT_TRUE(FindJsonNumber(json, {"rows", "spans"}, &v));
  EXPECT_EQ(v, 12u);
  ASSERT_TRUE(FindJsonNumber(json, {"rows", "metric_points"}, &v));
  EXPECT_EQ(v, 7u);
  ASSERT_TRUE(FindJsonNumber(json, {"writer_queue", "logs", "commits"}, &v));
  EXPECT_EQ(v, 9u);
  ASSERT_TRUE(FindJsonNumber(json, {"rss_bytes"}, &v));
  EXPECT_EQ(v, 1048576u);
  EXPECT_FALSE(FindJsonNumber(json, {"gate", "rejections"}, &v));
}

}  // namespace
}  // namespace sightline::bench
