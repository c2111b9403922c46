#include "bench/load_generator.h"

#include <gtest/gtest.h>
#include <simdjson.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <set>
#include <string>

#include "bench/http_load.h"
#include "bench/server_process.h"
#include "common/hex.h"
#include "otlp/compression.h"
#include "otlp/decoder.h"

// The generator's own tests, and a differential test of its OTLP encoder
// against the server's decoders: two independent implementations of the
// OTLP wire formats must agree on every row, in protobuf and in JSON. This
// file is test code, linked with the server; the bench itself is not.

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

std::string Inflate(const Payload& p) {
  std::string raw;
  Status st = Decompress(ContentEncoding::kGzip, p.body, 1 << 30, &raw);
  EXPECT_TRUE(st.ok()) << st.ToString();
  EXPECT_EQ(raw.size(), p.raw_bytes);
  return raw;
}

SpanBatch DecodeSpansOf(const LoadGenerator& gen, uint64_t index) {
  Payload p = gen.Build(Signal::kSpans, index);
  SpanBatch b;
  Rejections r;
  Status st = DecodeSpans(Inflate(p), Decoded(gen.options().format), &b, &r);
  EXPECT_TRUE(st.ok()) << st.ToString();
  EXPECT_EQ(r.count, 0) << r.Summary();
  EXPECT_EQ(b.rows(), p.items);
  return b;
}

LogBatch DecodeLogsOf(const LoadGenerator& gen, uint64_t index) {
  Payload p = gen.Build(Signal::kLogs, index);
  LogBatch b;
  Rejections r;
  Status st = DecodeLogs(Inflate(p), Decoded(gen.options().format), 1, &b, &r);
  EXPECT_TRUE(st.ok()) << st.ToString();
  EXPECT_EQ(r.count, 0) << r.Summary();
  EXPECT_EQ(b.rows(), p.items);
  return b;
}

MetricBatch DecodeMetricsOf(const LoadGenerator& gen, uint64_t index) {
  Payload p = gen.Build(Signal::kMetrics, index);
  MetricBatch b;
  Rejections r;
  Status st = DecodeMetrics(Inflate(p), Decoded(gen.options().format), &b, &r);
  EXPECT_TRUE(st.ok()) << st.ToString();
  EXPECT_EQ(r.count, 0) << r.Summary();
  EXPECT_EQ(b.rows(), p.items);
  return b;
}

//! An id as the server stores it: big-endian 64-bit halves.
std::pair<uint64_t, uint64_t> Halves(std::span<const uint8_t> id) {
  uint64_t high = 0, low = 0;
  IdFromBytes(std::string_view(reinterpret_cast<const char*>(id.data()), id.size()), &high, &low);
  return {high, low};
}

//! A decoded attributes JSON object as key -> value text (ints as decimal).
std::map<std::string, std::string> ParseAttributes(std::string_view json) {
  std::map<std::string, std::string> out;
  simdjson::dom::parser parser;
  simdjson::padded_string padded(json);
  simdjson::dom::object object;
  EXPECT_EQ(parser.parse(padded).get(object), simdjson::SUCCESS) << json;
  for (auto [key, value] : object) {
    std::string_view s;
    int64_t i = 0;
    if (value.get_string().get(s) == simdjson::SUCCESS) out[std::string(key)] = std::string(s);
    else if (value.get_int64().get(i) == simdjson::SUCCESS) out[std::string(key)] = std::to_string(i);
    else out[std::string(key)] = "(other)";
  }
  return out;
}

std::map<std::string, std::string> Expected(std::span<const Attribute> attributes) {
  std::map<std::string, std::string> out;
  for (const Attribute& a : attributes) {
    out[std::string(a.key)] = a.is_int ? std::to_string(a.int_value) : std::string(a.string_value);
  }
  return out;
}

std::string_view StringOf(std::span<const Attribute> attributes, std::string_view key) {
  for (const Attribute& a : attributes) {
    if (a.key == key && !a.is_int) return a.string_value;
  }
  return "";
}

// ---- the encoder against the server's decoder, row by row ---------------------------

// The decode budget (16x the decompressed size + 4 MiB by default) leaves
// room for real traffic: the generator's requests, shaped like the SDKs',
// build at most a few times their size. Printed for docs/SECURITY.md.
TEST(DecodeBudgetTest, TheGeneratorsRequestsBuildFewTimesTheirSize) {
  for (WireFormat format : {WireFormat::kProtobuf, WireFormat::kJson}) {
    LoadGenerator gen(Options(16384, format));
    for (Signal signal : {Signal::kSpans, Signal::kLogs, Signal::kMetrics}) {
      const std::string raw = Inflate(gen.Build(signal, 1));
      size_t charged = 0;
      DecodeLimits limits;
      limits.charge = [&](size_t more) {
        charged += more;
        return Status::Ok();
      };
      Rejections r;
      Status st;
      if (signal == Signal::kSpans) {
        SpanBatch b;
        st = DecodeSpans(raw, Decoded(format), &b, &r, limits);
      } else if (signal == Signal::kLogs) {
        LogBatch b;
        st = DecodeLogs(raw, Decoded(format), 1, &b, &r, limits);
      } else {
        MetricBatch b;
        st = DecodeMetrics(raw, Decoded(format), &b, &r, limits);
      }
      ASSERT_TRUE(st.ok()) << st.ToString();
      const double ratio = static_cast<double>(charged) / static_cast<double>(raw.size());
      std::printf("decode holds %.2fx of %zu decompressed bytes (%s, %s, 16384 items)\n", ratio, raw.size(),
                  SignalName(signal), format == WireFormat::kJson ? "json" : "protobuf");
      EXPECT_LT(ratio, 8.0) << SignalName(signal);
    }
  }
}

class EncoderMatchesDecoder : public ::testing::TestWithParam<std::tuple<WireFormat, size_t>> {
 protected:
  LoadGenerator gen_{Options(std::get<1>(GetParam()), std::get<0>(GetParam()))};
};

TEST_P(EncoderMatchesDecoder, Spans) {
  for (uint64_t index : {0u, 7u}) {
    const SpanRequest sent = gen_.Spans(index);
    const SpanBatch b = DecodeSpansOf(gen_, index);
    ASSERT_EQ(b.rows(), sent.rows.size());
    size_t errors = 0;
    for (size_t r = 0; r < b.rows(); ++r) {
      const SpanRow& s = sent.rows[r];
      SCOPED_TRACE("span " + std::to_string(r));
      EXPECT_EQ(std::make_pair(b.trace_id_high[r], b.trace_id_low[r]), Halves(s.trace_id));
      EXPECT_EQ(b.span_id[r], Halves(s.span_id).second);
      EXPECT_EQ(b.parent_span_id[r], Halves(s.parent_span_id).second);
      EXPECT_EQ(b.name.Get(r), s.name);
      EXPECT_EQ(b.kind[r], s.kind);
      EXPECT_EQ(b.start_time_ns[r], s.start_time_ns);
      EXPECT_EQ(b.end_time_ns[r], s.end_time_ns);
      EXPECT_EQ(b.status_code[r], s.status_code);
      EXPECT_EQ(b.status_message.Get(r), s.status_message);
      EXPECT_EQ(b.service_name.Get(r), s.resource->service_name);
      EXPECT_EQ(b.http_route.Get(r), StringOf(s.attributes.view(), "http.route"));
      EXPECT_EQ(b.http_method.Get(r), StringOf(s.attributes.view(), "http.request.method"));
      EXPECT_EQ(b.db_system.Get(r), StringOf(s.attributes.view(), "db.system"));
      EXPECT_EQ(ParseAttributes(b.attributes.Get(r)), Expected(s.attributes.view()));
      if (s.event) {
        ++errors;
        EXPECT_EQ(b.exception_type.Get(r), StringOf(s.event->attributes.view(), "exception.type"));
        EXPECT_EQ(b.exception_message.Get(r), StringOf(s.event->attributes.view(), "exception.message"));
      } else {
        EXPECT_EQ(b.exception_type.Get(r), "");
      }
    }
    if (b.rows() >= 1000) {
      EXPECT_GT(errors, 0u);
    }
  }
}

TEST_P(EncoderMatchesDecoder, Logs) {
  const LogRequest sent = gen_.Logs(3);
  const LogBatch b = DecodeLogsOf(gen_, 3);
  ASSERT_EQ(b.rows(), sent.rows.size());
  for (size_t r = 0; r < b.rows(); ++r) {
    const LogRow& l = sent.rows[r];
    SCOPED_TRACE("log " + std::to_string(r));
    EXPECT_EQ(b.time_ns[r], l.time_ns);
    EXPECT_EQ(b.observed_time_ns[r], l.observed_time_ns);
    EXPECT_EQ(b.severity_number[r], l.severity_number);
    EXPECT_EQ(b.severity_text.Get(r), l.severity_text);
    EXPECT_EQ(b.body.Get(r), l.body);
    EXPECT_EQ(TraceIdHex(b.trace_id_high[r], b.trace_id_low[r]), l.has_trace ? IdHex(l.trace_id) : "");
    EXPECT_EQ(b.span_id[r], l.has_trace ? Halves(l.span_id).second : 0u);
    EXPECT_EQ(b.flags[r], l.flags);
    EXPECT_EQ(b.service_name.Get(r), l.resource->service_name);
    EXPECT_EQ(ParseAttributes(b.attributes.Get(r)), Expected(l.attributes.view()));
  }
}

TEST_P(EncoderMatchesDecoder, Metrics) {
  const MetricRequest sent = gen_.Metrics(2);
  const MetricBatch b = DecodeMetricsOf(gen_, 2);
  ASSERT_EQ(b.rows(), sent.rows.size());
  std::map<int64_t, size_t> series_row;
  for (size_t i = 0; i < b.series_rows(); ++i) series_row[b.series_id[i]] = i;
  std::set<uint32_t> sent_series;
  for (size_t r = 0; r < b.rows(); ++r) {
    const MetricPoint& p = sent.rows[r];
    const MetricDef& def = *p.series->metric;
    sent_series.insert(p.series->id);
    SCOPED_TRACE("point " + std::to_string(r) + " of " + std::string(def.name));
    ASSERT_TRUE(series_row.count(b.point_series_id[r]));
    const size_t s = series_row[b.point_series_id[r]];
    EXPECT_EQ(b.metric_name.Get(s), def.name);
    EXPECT_EQ(b.description.Get(s), def.description);
    EXPECT_EQ(b.unit.Get(s), def.unit);
    EXPECT_EQ(b.metric_type[s], def.kind == MetricKind::kGauge ? 1 : def.kind == MetricKind::kSum ? 2 : 3);
    EXPECT_EQ(b.temporality[s], def.kind == MetricKind::kGauge ? 0 : 2);
    EXPECT_EQ(b.is_monotonic[s], def.kind == MetricKind::kSum ? 1 : 0);
    EXPECT_EQ(b.service_name.Get(s), p.series->resource->service_name);
    EXPECT_EQ(ParseAttributes(b.attributes.Get(s)), Expected(p.series->labels));
    EXPECT_EQ(b.time_ns[r], p.time_ns);
    EXPECT_EQ(b.start_time_ns[r], p.start_time_ns);
    if (def.kind == MetricKind::kHistogram) {
      EXPECT_EQ(b.count[r], p.count);
      EXPECT_EQ(b.sum[r], p.sum);
      EXPECT_EQ(b.min[r], p.min);
      EXPECT_EQ(b.max[r], p.max);
      std::string counts = "[";
      for (uint64_t c : p.bucket_counts) counts += (counts.size() > 1 ? "," : "") + std::to_string(c);
      EXPECT_EQ(b.bucket_counts.Get(r), counts + "]");
    } else if (def.is_int) {
      EXPECT_EQ(b.is_int[r], 1);
      EXPECT_EQ(b.int_value[r], p.int_value);
    } else {
      EXPECT_EQ(b.is_int[r], 0);
      EXPECT_EQ(b.value[r], p.double_value);
    }
  }
  EXPECT_EQ(b.series_rows(), sent_series.size());
}

INSTANTIATE_TEST_SUITE_P(FormatsAndShapes, EncoderMatchesDecoder,
                         ::testing::Combine(::testing::Values(WireFormat::kProtobuf, WireFormat::kJson),
                                            ::testing::Values(size_t{1}, size_t{300}, size_t{4096})),
                         [](const auto& info) {
                           return std::string(std::get<0>(info.param) == WireFormat::kJson ? "json" : "proto") +
                                  "_batch" + std::to_string(std::get<1>(info.param));
                         });

// ---- the generator's rows --------------------------------------------------------

TEST(LoadGenerator, SpansHaveTheAdvertisedCountWithUniqueIds) {
  for (size_t batch : {1, 100, 16384}) {
    LoadGenerator gen(Options(batch));
    std::set<uint64_t> span_ids;
    size_t rows = 0;
    for (uint64_t i = 0; i < 3; ++i) {
      const SpanRequest sent = gen.Spans(i);
      ASSERT_EQ(sent.rows.size(), batch);
      rows += sent.rows.size();
      for (const SpanRow& s : sent.rows) span_ids.insert(Halves(s.span_id).second);
    }
    EXPECT_EQ(span_ids.size(), rows) << "batch " << batch;
  }
}

TEST(LoadGenerator, SpansHaveTheAdvertisedShape) {
  LoadGenerator gen(Options(16384));
  const SpanRequest sent = gen.Spans(0);
  std::set<std::string> services, routes;
  std::set<std::string> traces;
  std::set<std::string> span_ids;
  size_t roots = 0, errors = 0, children_with_parent_in_request = 0;
  for (const SpanRow& s : sent.rows) span_ids.insert(IdHex(s.span_id));
  for (const SpanRow& s : sent.rows) {
    services.insert(std::string(s.resource->service_name));
    traces.insert(IdHex(s.trace_id));
    if (IsZero(s.parent_span_id)) {
      ++roots;
      EXPECT_EQ(s.kind, 2);
      routes.insert(std::string(StringOf(s.attributes.view(), "http.request.method")) + " " +
                    std::string(StringOf(s.attributes.view(), "http.route")));
      EXPECT_NE(s.attributes.Find("http.response.status_code"), nullptr);
      if (s.status_code == 2) {
        ++errors;
        ASSERT_TRUE(s.event.has_value());
        EXPECT_EQ(s.event->name, "exception");
      }
    } else if (span_ids.count(IdHex(s.parent_span_id)) != 0) {
      ++children_with_parent_in_request;
    }
    EXPECT_GT(s.end_time_ns, s.start_time_ns);
  }
  EXPECT_EQ(services.size(), 10u);
  EXPECT_EQ(routes.size(), 50u);
  EXPECT_EQ(traces.size(), roots);
  EXPECT_EQ(children_with_parent_in_request, sent.rows.size() - roots);
  double error_share = static_cast<double>(errors) / static_cast<double>(roots);
  EXPECT_GT(error_share, 0.03);
  EXPECT_LT(error_share, 0.07);
}

TEST(LoadGenerator, SmallBatchesComeFromOneService) {
  LoadGenerator gen(Options(100));
  std::set<std::string_view> services;
  for (const SpanRow& s : gen.Spans(7).rows) services.insert(s.resource->service_name);
  EXPECT_EQ(services.size(), 1u);
  // The decoder sees one resource block too.
  SpanBatch b = DecodeSpansOf(gen, 7);
  EXPECT_EQ(b.resources.rows(), 1u);
}

TEST(LoadGenerator, TheSameSeedGivesTheSameRowsAndBytes) {
  LoadGenerator a(Options(500)), b(Options(500));
  for (Signal s : {Signal::kSpans, Signal::kLogs, Signal::kMetrics}) {
    EXPECT_EQ(a.Build(s, 5).body, b.Build(s, 5).body);
    EXPECT_NE(a.Build(s, 5).body, a.Build(s, 6).body);
  }
  const SpanRequest x = a.Spans(5), y = b.Spans(5);
  ASSERT_EQ(x.rows.size(), y.rows.size());
  for (size_t i = 0; i < x.rows.size(); ++i) {
    EXPECT_EQ(x.rows[i].span_id, y.rows[i].span_id);
    EXPECT_EQ(x.rows[i].start_time_ns, y.rows[i].start_time_ns);
    EXPECT_EQ(x.rows[i].name, y.rows[i].name);
  }
  const LogRequest l1 = a.Logs(5), l2 = b.Logs(5);
  ASSERT_EQ(l1.rows.size(), l2.rows.size());
  for (size_t i = 0; i < l1.rows.size(); ++i) EXPECT_EQ(l1.rows[i].body, l2.rows[i].body);
  GeneratorOptions other = Options(500);
  other.seed = 4;
  EXPECT_NE(LoadGenerator(other).Build(Signal::kLogs, 5).body, a.Build(Signal::kLogs, 5).body);
}

TEST(LoadGenerator, LogsHaveTheAdvertisedShape) {
  LoadGenerator gen(Options(16384));
  const LogRequest sent = gen.Logs(1);
  ASSERT_EQ(sent.rows.size(), 16384u);
  std::set<int32_t> severities;
  size_t with_trace = 0;
  for (const LogRow& l : sent.rows) {
    severities.insert(l.severity_number);
    with_trace += l.has_trace ? 1 : 0;
    EXPECT_FALSE(l.body.empty());
  }
  EXPECT_EQ(severities.size(), 4u);
  EXPECT_GT(with_trace, sent.rows.size() * 3 / 4);
  EXPECT_LT(with_trace, sent.rows.size() * 17 / 20);
}

TEST(LoadGenerator, MetricsCover200SeriesOfThreeKinds) {
  LoadGenerator gen(Options(16384));
  const MetricRequest sent = gen.Metrics(4);
  EXPECT_EQ(sent.rows.size(), 16384u);
  std::set<uint32_t> series;
  std::set<MetricKind> kinds;
  for (const MetricPoint& p : sent.rows) {
    series.insert(p.series->id);
    kinds.insert(p.series->metric->kind);
  }
  EXPECT_EQ(series.size(), 200u);
  EXPECT_EQ(kinds.size(), 3u);
}

TEST(LoadGenerator, BoundedGaugesAreDoubleGaugesWithTwoDecimals) {
  GeneratorOptions o = Options(16384);
  o.bounded_gauges = true;
  LoadGenerator gen(o);
  const MetricRequest sent = gen.Metrics(4);
  ASSERT_EQ(sent.rows.size(), 16384u);
  std::set<uint32_t> series;
  std::set<double> values;
  for (const MetricPoint& p : sent.rows) {
    series.insert(p.series->id);
    EXPECT_EQ(p.series->metric->kind, MetricKind::kGauge);
    EXPECT_FALSE(p.series->metric->is_int);
    EXPECT_GE(p.double_value, 0);
    EXPECT_LE(p.double_value, 1000);
    EXPECT_EQ(std::round(p.double_value * 100) / 100, p.double_value);
    values.insert(p.double_value);
  }
  EXPECT_EQ(series.size(), 200u);
  EXPECT_GT(values.size(), 1000u);  // drawn, not constant
  // The default mix is untouched by the other catalogue.
  EXPECT_EQ(LoadGenerator(Options(16384)).Metrics(4).rows[0].series->metric->kind, MetricKind::kHistogram);
}

TEST(LoadGenerator, MetricPointsAdvanceInTimePerSeries) {
  LoadGenerator gen(Options(100));
  // Request i and i + 10 carry the same service (SDK shape, 10 services).
  auto last_time = [&](uint64_t index) {
    int64_t last = 0;
    for (const MetricPoint& p : gen.Metrics(index).rows) last = std::max(last, p.time_ns);
    return last;
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
