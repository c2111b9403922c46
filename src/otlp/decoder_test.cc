// OTLP decoding: requests are built with the generated protobuf classes and
// written out by hand in the OTLP JSON mapping; every column of the resulting
// batch is compared with values written out here. The JSON form of each request
// must decode to exactly the same batch as its protobuf form.
// Also the hand-encoded OTLP responses (ingest_service.cc), parsed back with
// protobuf against descriptors of the wire shapes they claim.

#include "otlp/decoder.h"

#include <google/protobuf/descriptor.h>
#include <google/protobuf/descriptor.pb.h>
#include <google/protobuf/dynamic_message.h>
#include <google/protobuf/struct.pb.h>
#include <google/protobuf/util/json_util.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <iterator>
#include <limits>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "common/hex.h"
#include "ingest/ingest_service.h"
#include "model/ids.h"
#include "opentelemetry/proto/collector/logs/v1/logs_service.pb.h"
#include "opentelemetry/proto/collector/metrics/v1/metrics_service.pb.h"
#include "opentelemetry/proto/collector/trace/v1/trace_service.pb.h"

namespace sightline {
namespace {

namespace pb = google::protobuf;
namespace otlp_common = opentelemetry::proto::common::v1;
namespace otlp_trace = opentelemetry::proto::trace::v1;
namespace otlp_logs = opentelemetry::proto::logs::v1;
namespace otlp_metrics = opentelemetry::proto::metrics::v1;
using opentelemetry::proto::collector::logs::v1::ExportLogsServiceRequest;
using opentelemetry::proto::collector::logs::v1::ExportLogsServiceResponse;
using opentelemetry::proto::collector::metrics::v1::ExportMetricsServiceRequest;
using opentelemetry::proto::collector::metrics::v1::ExportMetricsServiceResponse;
using opentelemetry::proto::collector::trace::v1::ExportTraceServiceRequest;
using opentelemetry::proto::collector::trace::v1::ExportTraceServiceResponse;
using Attrs = pb::RepeatedPtrField<otlp_common::KeyValue>;
using Strings = std::vector<std::string>;

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// --- helpers -----------------------------------------------------------------

std::string Raw(std::string_view hex) {
  std::string out;
  EXPECT_TRUE(DecodeHex(hex, &out)) << hex;
  return out;
}

otlp_common::AnyValue* Attr(Attrs* attrs, const std::string& key) {
  auto* kv = attrs->Add();
  kv->set_key(key);
  return kv->mutable_value();
}

Strings Column(const StringColumn& c) {
  Strings v;
  for (size_t i = 0; i < c.size(); ++i) v.emplace_back(c.Get(i));
  return v;
}

template <typename T>
std::vector<T> Column(const std::vector<T>& v) {
  return v;
}

//! Doubles as text so NaN compares equal to NaN (and -0 differs from 0).
Strings Column(const std::vector<double>& v) {
  Strings out;
  for (double d : v) {
    if (std::isnan(d)) {
      out.push_back("NaN");
    } else {
      char buf[40];
      std::snprintf(buf, sizeof(buf), "%.17g", d);
      out.push_back(buf);
    }
  }
  return out;
}

Strings Doubles(std::initializer_list<double> v) { return Column(std::vector<double>(v)); }

// Ids in hex, as the API shows them; "" when absent.
template <typename Batch>
Strings TraceIds(const Batch& b) {
  Strings v;
  for (size_t i = 0; i < b.trace_id_high.size(); ++i) v.push_back(TraceIdHex(b.trace_id_high[i], b.trace_id_low[i]));
  return v;
}
Strings SpanIds(const std::vector<uint64_t>& ids) {
  Strings v;
  for (uint64_t id : ids) v.push_back(id == 0 ? "" : HexU64(id));
  return v;
}

// A resource column of each row, looked up through the row's resource_id.
template <typename Batch>
Strings PerRow(const Batch& b, StringColumn ResourceTable::*col) {
  std::map<int64_t, size_t> at;
  for (size_t i = 0; i < b.resources.rows(); ++i) at.emplace(b.resources.resource_id[i], i);
  Strings v;
  for (int64_t id : b.resource_id) {
    auto it = at.find(id);
    v.push_back(it == at.end() ? "<no resource row>" : std::string((b.resources.*col).Get(it->second)));
  }
  return v;
}
#define EXPECT_SAME_RESOURCES(a, b)                                                                                \
  for (auto col : {&ResourceTable::resource_attributes, &ResourceTable::scope_name, &ResourceTable::scope_version, \
                   &ResourceTable::scope_attributes}) {                                                            \
    EXPECT_EQ(PerRow(a, col), PerRow(b, col));                                                                     \
  }

#define EXPECT_SAME_COLUMN(a, b, col) EXPECT_EQ(Column((a).col), Column((b).col)) << "column " #col

void ExpectSameSpans(const SpanBatch& a, const SpanBatch& b) {
  EXPECT_EQ(a.rows(), b.rows());
  EXPECT_SAME_COLUMN(a, b, trace_id_high);
  EXPECT_SAME_COLUMN(a, b, trace_id_low);
  EXPECT_SAME_COLUMN(a, b, span_id);
  EXPECT_SAME_COLUMN(a, b, parent_span_id);
  EXPECT_SAME_COLUMN(a, b, trace_state);
  EXPECT_SAME_COLUMN(a, b, flags);
  EXPECT_SAME_COLUMN(a, b, name);
  EXPECT_SAME_COLUMN(a, b, kind);
  EXPECT_SAME_COLUMN(a, b, start_time_ns);
  EXPECT_SAME_COLUMN(a, b, end_time_ns);
  EXPECT_SAME_COLUMN(a, b, status_code);
  EXPECT_SAME_COLUMN(a, b, status_message);
  EXPECT_SAME_COLUMN(a, b, service_name);
  EXPECT_SAME_COLUMN(a, b, http_route);
  EXPECT_SAME_COLUMN(a, b, http_method);
  EXPECT_SAME_COLUMN(a, b, http_status_code);
  EXPECT_SAME_COLUMN(a, b, db_system);
  EXPECT_SAME_COLUMN(a, b, exception_type);
  EXPECT_SAME_COLUMN(a, b, exception_message);
  EXPECT_SAME_COLUMN(a, b, exception_group);
  EXPECT_SAME_COLUMN(a, b, attributes);
  EXPECT_SAME_COLUMN(a, b, events);
  EXPECT_SAME_COLUMN(a, b, links);
  EXPECT_SAME_COLUMN(a, b, dropped_attributes_count);
  EXPECT_SAME_COLUMN(a, b, dropped_events_count);
  EXPECT_SAME_COLUMN(a, b, dropped_links_count);
  EXPECT_SAME_RESOURCES(a, b);
}

void ExpectSameLogs(const LogBatch& a, const LogBatch& b) {
  EXPECT_EQ(a.rows(), b.rows());
  EXPECT_SAME_COLUMN(a, b, time_ns);
  EXPECT_SAME_COLUMN(a, b, observed_time_ns);
  EXPECT_SAME_COLUMN(a, b, severity_number);
  EXPECT_SAME_COLUMN(a, b, severity_text);
  EXPECT_SAME_COLUMN(a, b, body);
  EXPECT_SAME_COLUMN(a, b, body_type);
  EXPECT_SAME_COLUMN(a, b, trace_id_high);
  EXPECT_SAME_COLUMN(a, b, trace_id_low);
  EXPECT_SAME_COLUMN(a, b, span_id);
  EXPECT_SAME_COLUMN(a, b, flags);
  EXPECT_SAME_COLUMN(a, b, service_name);
  EXPECT_SAME_COLUMN(a, b, attributes);
  EXPECT_SAME_COLUMN(a, b, dropped_attributes_count);
  EXPECT_SAME_COLUMN(a, b, event_name);
  EXPECT_SAME_COLUMN(a, b, exception_type);
  EXPECT_SAME_COLUMN(a, b, exception_message);
  EXPECT_SAME_COLUMN(a, b, exception_group);
  EXPECT_SAME_RESOURCES(a, b);
}

void ExpectSameMetrics(const MetricBatch& a, const MetricBatch& b) {
  EXPECT_EQ(a.series_rows(), b.series_rows());
  EXPECT_EQ(a.rows(), b.rows());
  EXPECT_SAME_COLUMN(a, b, series_id);
  EXPECT_SAME_COLUMN(a, b, metric_name);
  EXPECT_SAME_COLUMN(a, b, metric_type);
  EXPECT_SAME_COLUMN(a, b, unit);
  EXPECT_SAME_COLUMN(a, b, description);
  EXPECT_SAME_COLUMN(a, b, temporality);
  EXPECT_SAME_COLUMN(a, b, is_monotonic);
  EXPECT_SAME_COLUMN(a, b, service_name);
  EXPECT_SAME_COLUMN(a, b, series_resource);
  EXPECT_SAME_COLUMN(a, b, resources.resource_attributes);
  EXPECT_SAME_COLUMN(a, b, resources.scope_name);
  EXPECT_SAME_COLUMN(a, b, resources.scope_version);
  EXPECT_SAME_COLUMN(a, b, attributes);
  EXPECT_SAME_COLUMN(a, b, point_series_id);
  EXPECT_SAME_COLUMN(a, b, time_ns);
  EXPECT_SAME_COLUMN(a, b, start_time_ns);
  EXPECT_SAME_COLUMN(a, b, value);
  EXPECT_SAME_COLUMN(a, b, int_value);
  EXPECT_SAME_COLUMN(a, b, is_int);
  EXPECT_SAME_COLUMN(a, b, count);
  EXPECT_SAME_COLUMN(a, b, sum);
  EXPECT_SAME_COLUMN(a, b, min);
  EXPECT_SAME_COLUMN(a, b, max);
  EXPECT_SAME_COLUMN(a, b, bucket_counts);
  EXPECT_SAME_COLUMN(a, b, explicit_bounds);
  EXPECT_SAME_COLUMN(a, b, exp_histogram);
  EXPECT_SAME_COLUMN(a, b, quantiles);
  EXPECT_SAME_COLUMN(a, b, exemplars);
  EXPECT_SAME_COLUMN(a, b, flags);
}

//! Every column of a span batch has one entry per row (a rejected span leaves no partial row).
void ExpectSpanColumnsAligned(const SpanBatch& b) {
  size_t n = b.rows();
  for (size_t s : {b.trace_id_high.size(),
                   b.trace_id_low.size(),
                   b.span_id.size(),
                   b.parent_span_id.size(),
                   b.trace_state.size(),
                   b.flags.size(),
                   b.name.size(),
                   b.kind.size(),
                   b.end_time_ns.size(),
                   b.status_code.size(),
                   b.status_message.size(),
                   b.service_name.size(),
                   b.http_route.size(),
                   b.http_method.size(),
                   b.http_status_code.size(),
                   b.db_system.size(),
                   b.exception_type.size(),
                   b.exception_message.size(),
                   b.exception_group.size(),
                   b.attributes.size(),
                   b.events.size(),
                   b.links.size(),
                   b.dropped_attributes_count.size(),
                   b.dropped_events_count.size(),
                   b.dropped_links_count.size(),
                   b.resource_id.size()}) {
    EXPECT_EQ(s, n);
  }
}

void ExpectMetricColumnsAligned(const MetricBatch& b) {
  size_t s = b.series_rows();
  for (size_t c :
       {b.metric_name.size(), b.metric_type.size(), b.unit.size(), b.description.size(), b.temporality.size(),
        b.is_monotonic.size(), b.service_name.size(), b.series_resource.size(), b.attributes.size()}) {
    EXPECT_EQ(c, s);
  }
  for (uint32_t r : b.series_resource) EXPECT_LT(r, b.resources.rows());
  size_t n = b.rows();
  for (size_t c :
       {b.point_series_id.size(), b.start_time_ns.size(), b.value.size(), b.int_value.size(), b.is_int.size(),
        b.count.size(), b.sum.size(), b.min.size(), b.max.size(), b.bucket_counts.size(), b.explicit_bounds.size(),
        b.exp_histogram.size(), b.quantiles.size(), b.exemplars.size(), b.flags.size()}) {
    EXPECT_EQ(c, n);
  }
}

template <typename Batch, typename DecodeFn>
Batch DecodeOk(std::string_view body, PayloadFormat format, DecodeFn decode, Rejections* rejected,
               const DecodeLimits& limits = {}) {
  Batch b;
  b.project_id = 7;
  Status st = decode(body, format, &b, rejected, limits);
  EXPECT_TRUE(st.ok()) << st.ToString();
  return b;
}

SpanBatch Spans(std::string_view body, PayloadFormat format, Rejections* rejected) {
  return DecodeOk<SpanBatch>(body, format, DecodeSpans, rejected);
}

constexpr int64_t kReceiveNs = 1700000009000000000;

LogBatch Logs(std::string_view body, PayloadFormat format, Rejections* rejected) {
  return DecodeOk<LogBatch>(
      body, format,
      [](std::string_view b, PayloadFormat f, LogBatch* out, Rejections* r, const DecodeLimits& l) {
        return DecodeLogs(b, f, kReceiveNs, out, r, l);
      },
      rejected);
}

MetricBatch Metrics(std::string_view body, PayloadFormat format, Rejections* rejected) {
  return DecodeOk<MetricBatch>(body, format, DecodeMetrics, rejected);
}

// --- ParseContentType ----------------------------------------------------------

TEST(ParseContentTypeTest, ProtobufAndJsonWithParametersAndCase) {
  struct Case {
    const char* header;
    PayloadFormat want;
  } cases[] = {
      {"application/x-protobuf", PayloadFormat::kProtobuf},
      {"application/protobuf", PayloadFormat::kProtobuf},
      {"Application/X-Protobuf", PayloadFormat::kProtobuf},
      {"application/json", PayloadFormat::kJson},
      {"APPLICATION/JSON", PayloadFormat::kJson},
      {"application/json; charset=utf-8", PayloadFormat::kJson},
      {"application/json;charset=UTF-8", PayloadFormat::kJson},
      {"application/json ; charset=utf-8", PayloadFormat::kJson},
      {"application/x-protobuf; proto=opentelemetry", PayloadFormat::kProtobuf},
  };
  for (const auto& c : cases) {
    auto r = ParseContentType(c.header);
    ASSERT_TRUE(r.ok()) << c.header << ": " << r.status().ToString();
    EXPECT_EQ(*r, c.want) << c.header;
  }
}

TEST(ParseContentTypeTest, OtherTypesAreUnsupportedMedia) {
  for (const char* h : {"", "text/plain", "application/xml", "application/jsonx", "application/grpc", "json",
                        "application/x-protobufs", ";application/json"}) {
    auto r = ParseContentType(h);
    ASSERT_FALSE(r.ok()) << h;
    EXPECT_EQ(r.status().code(), StatusCode::kUnsupportedMedia) << h;
  }
}

// --- spans -----------------------------------------------------------------------

constexpr const char* kTrace1 = "4bf92f3577b34da6a3ce929d0e0e4736";
constexpr const char* kSpan1 = "00f067aa0ba902b7";
constexpr const char* kSpan2 = "b7ad6b7169203331";
constexpr const char* kLinkTrace = "0af7651916cd43dd8448eb211c80319c";
constexpr const char* kLinkSpan = "b9c7c989f97918e1";
constexpr const char* kTrace3 = "5b8efff798038103d269b633813fc60c";
constexpr const char* kSpan3 = "eee19b7ec3c1b174";

//! Two resources: a server span with every kind of attribute value, events and
//! links, its client child using older semantic-convention names, and a bare
//! span under a resource whose service.name is not a string.
ExportTraceServiceRequest TraceRequest() {
  ExportTraceServiceRequest req;
  auto* rs = req.add_resource_spans();
  auto* res = rs->mutable_resource()->mutable_attributes();
  Attr(res, "service.name")->set_string_value("checkout");
  Attr(res, "host.name")->set_string_value("h1");
  Attr(res, "pid")->set_int_value(42);
  auto* ss = rs->add_scope_spans();
  ss->mutable_scope()->set_name("io.sightline.test");
  ss->mutable_scope()->set_version("1.2.3");
  Attr(ss->mutable_scope()->mutable_attributes(), "lib.lang")->set_string_value("cpp");

  auto* s1 = ss->add_spans();
  s1->set_trace_id(Raw(kTrace1));
  s1->set_span_id(Raw(kSpan1));
  s1->set_trace_state("congo=t61rcWkgMzE");
  s1->set_flags(0x301);  // sampled, parent known and remote
  s1->set_name("GET /items/{id}");
  s1->set_kind(otlp_trace::Span::SPAN_KIND_SERVER);
  s1->set_start_time_unix_nano(1700000000123456789ull);
  s1->set_end_time_unix_nano(1700000000223456789ull);
  auto* a = s1->mutable_attributes();
  Attr(a, "http.route")->set_string_value("/items/{id}");
  Attr(a, "http.request.method")->set_string_value("GET");
  Attr(a, "http.response.status_code")->set_int_value(500);
  Attr(a, "http.status_code")->set_int_value(200);
  Attr(a, "str")->set_string_value("s\"q");
  Attr(a, "bool")->set_bool_value(true);
  Attr(a, "int")->set_int_value(-7);
  Attr(a, "double")->set_double_value(2.5);
  auto* arr = Attr(a, "arr")->mutable_array_value();
  arr->add_values()->set_int_value(1);
  arr->add_values()->set_string_value("two");
  arr->add_values()->set_bool_value(false);
  arr->add_values()->set_double_value(1.5);
  arr->add_values()->mutable_array_value()->add_values()->set_int_value(3);
  Attr(arr->add_values()->mutable_kvlist_value()->mutable_values(), "a")->set_int_value(1);
  arr->add_values();  // no value: null
  auto* kv = Attr(a, "kv")->mutable_kvlist_value()->mutable_values();
  Attr(Attr(kv, "inner")->mutable_kvlist_value()->mutable_values(), "deep")->set_string_value("x");
  Attr(kv, "n")->set_int_value(2);
  Attr(a, "b1")->set_bytes_value("a");
  Attr(a, "b2")->set_bytes_value("ab");
  Attr(a, "b3")->set_bytes_value("abc");
  Attr(a, "b4")->set_bytes_value(std::string("\x00\x01\xfe\xff", 4));
  Attr(a, "b0")->set_bytes_value("");
  Attr(a, "empty");
  Attr(a, "nan")->set_double_value(kNaN);
  s1->set_dropped_attributes_count(3);
  auto* e1 = s1->add_events();
  e1->set_time_unix_nano(1700000000150000000ull);
  e1->set_name("exception");
  Attr(e1->mutable_attributes(), "exception.type")->set_string_value("ValueError");
  Attr(e1->mutable_attributes(), "exception.message")->set_string_value("bad \"value\"\n");
  Attr(e1->mutable_attributes(), "exception.stacktrace")->set_string_value("trace");
  e1->set_dropped_attributes_count(1);
  auto* e2 = s1->add_events();
  e2->set_time_unix_nano(1700000000160000000ull);
  e2->set_name("exception");
  Attr(e2->mutable_attributes(), "exception.type")->set_string_value("Other");
  auto* e3 = s1->add_events();
  e3->set_name("retry");
  Attr(e3->mutable_attributes(), "attempt")->set_int_value(2);
  s1->set_dropped_events_count(4);
  auto* l1 = s1->add_links();
  l1->set_trace_id(Raw(kLinkTrace));
  l1->set_span_id(Raw(kLinkSpan));
  l1->set_trace_state("rojo=00f067aa0ba902b7");
  Attr(l1->mutable_attributes(), "link.kind")->set_string_value("follows");
  l1->set_dropped_attributes_count(2);
  l1->set_flags(1);
  s1->add_links();  // a link without ids
  s1->set_dropped_links_count(5);
  s1->mutable_status()->set_code(otlp_trace::Status::STATUS_CODE_ERROR);
  s1->mutable_status()->set_message("boom");

  auto* s2 = ss->add_spans();
  s2->set_trace_id(Raw(kTrace1));
  s2->set_span_id(Raw(kSpan2));
  s2->set_parent_span_id(Raw(kSpan1));
  s2->set_name("SELECT items");
  s2->set_kind(otlp_trace::Span::SPAN_KIND_CLIENT);
  s2->set_start_time_unix_nano(1700000000130000000ull);
  s2->set_end_time_unix_nano(1700000000140000000ull);
  auto* a2 = s2->mutable_attributes();
  Attr(a2, "db.system")->set_string_value("postgresql");
  Attr(a2, "http.method")->set_string_value("POST");
  Attr(a2, "http.status_code")->set_string_value("404");
  Attr(a2, "url.path")->set_string_value("/fallback");
  Attr(a2, "http.target")->set_string_value("/ignored");
  s2->mutable_status()->set_code(otlp_trace::Status::STATUS_CODE_OK);

  auto* rs2 = req.add_resource_spans();
  Attr(rs2->mutable_resource()->mutable_attributes(), "service.name")->set_int_value(5);
  auto* s3 = rs2->add_scope_spans()->add_spans();
  s3->set_trace_id(Raw(kTrace3));
  s3->set_span_id(Raw(kSpan3));
  return req;
}

// The same request in the OTLP JSON mapping, as an SDK would send it: hex ids
// (one in upper case), int64 as strings, enums as numbers.
constexpr const char* kTraceJson = R"({
  "resourceSpans": [
    {
      "resource": {"attributes": [
        {"key": "service.name", "value": {"stringValue": "checkout"}},
        {"key": "host.name", "value": {"stringValue": "h1"}},
        {"key": "pid", "value": {"intValue": "42"}}
      ]},
      "scopeSpans": [{
        "scope": {"name": "io.sightline.test", "version": "1.2.3",
                  "attributes": [{"key": "lib.lang", "value": {"stringValue": "cpp"}}]},
        "spans": [
          {
            "traceId": "4bf92f3577b34da6a3ce929d0e0e4736",
            "spanId": "00f067aa0ba902b7",
            "traceState": "congo=t61rcWkgMzE",
            "flags": 769,
            "name": "GET /items/{id}",
            "kind": 2,
            "startTimeUnixNano": "1700000000123456789",
            "endTimeUnixNano": "1700000000223456789",
            "attributes": [
              {"key": "http.route", "value": {"stringValue": "/items/{id}"}},
              {"key": "http.request.method", "value": {"stringValue": "GET"}},
              {"key": "http.response.status_code", "value": {"intValue": "500"}},
              {"key": "http.status_code", "value": {"intValue": 200}},
              {"key": "str", "value": {"stringValue": "s\"q"}},
              {"key": "bool", "value": {"boolValue": true}},
              {"key": "int", "value": {"intValue": "-7"}},
              {"key": "double", "value": {"doubleValue": 2.5}},
              {"key": "arr", "value": {"arrayValue": {"values": [
                {"intValue": "1"}, {"stringValue": "two"}, {"boolValue": false}, {"doubleValue": 1.5},
                {"arrayValue": {"values": [{"intValue": "3"}]}},
                {"kvlistValue": {"values": [{"key": "a", "value": {"intValue": "1"}}]}},
                {}
              ]}}},
              {"key": "kv", "value": {"kvlistValue": {"values": [
                {"key": "inner", "value": {"kvlistValue": {"values": [
                  {"key": "deep", "value": {"stringValue": "x"}}]}}},
                {"key": "n", "value": {"intValue": "2"}}
              ]}}},
              {"key": "b1", "value": {"bytesValue": "YQ=="}},
              {"key": "b2", "value": {"bytesValue": "YWI="}},
              {"key": "b3", "value": {"bytesValue": "YWJj"}},
              {"key": "b4", "value": {"bytesValue": "AAH+/w=="}},
              {"key": "b0", "value": {"bytesValue": ""}},
              {"key": "empty", "value": {}},
              {"key": "nan", "value": {"doubleValue": "NaN"}}
            ],
            "droppedAttributesCount": 3,
            "events": [
              {"timeUnixNano": "1700000000150000000", "name": "exception", "attributes": [
                {"key": "exception.type", "value": {"stringValue": "ValueError"}},
                {"key": "exception.message", "value": {"stringValue": "bad \"value\"\n"}},
                {"key": "exception.stacktrace", "value": {"stringValue": "trace"}}
              ], "droppedAttributesCount": 1},
              {"timeUnixNano": "1700000000160000000", "name": "exception", "attributes": [
                {"key": "exception.type", "value": {"stringValue": "Other"}}
              ]},
              {"name": "retry", "attributes": [{"key": "attempt", "value": {"intValue": "2"}}]}
            ],
            "droppedEventsCount": 4,
            "links": [
              {"traceId": "0af7651916cd43dd8448eb211c80319c", "spanId": "B9C7C989F97918E1",
               "traceState": "rojo=00f067aa0ba902b7",
               "attributes": [{"key": "link.kind", "value": {"stringValue": "follows"}}],
               "droppedAttributesCount": 2, "flags": 1},
              {}
            ],
            "droppedLinksCount": 5,
            "status": {"code": 2, "message": "boom"}
          },
          {
            "traceId": "4bf92f3577b34da6a3ce929d0e0e4736",
            "spanId": "b7ad6b7169203331",
            "parentSpanId": "00f067aa0ba902b7",
            "name": "SELECT items",
            "kind": 3,
            "startTimeUnixNano": "1700000000130000000",
            "endTimeUnixNano": "1700000000140000000",
            "attributes": [
              {"key": "db.system", "value": {"stringValue": "postgresql"}},
              {"key": "http.method", "value": {"stringValue": "POST"}},
              {"key": "http.status_code", "value": {"stringValue": "404"}},
              {"key": "url.path", "value": {"stringValue": "/fallback"}},
              {"key": "http.target", "value": {"stringValue": "/ignored"}}
            ],
            "status": {"code": 1}
          }
        ]
      }]
    },
    {
      "resource": {"attributes": [{"key": "service.name", "value": {"intValue": "5"}}]},
      "scopeSpans": [{"spans": [{"traceId": "5b8efff798038103d269b633813fc60c", "spanId": "eee19b7ec3c1b174"}]}]
    }
  ]
})";

constexpr const char* kSpan1Attributes =
    R"({"http.route":"/items/{id}","http.request.method":"GET","http.response.status_code":500,)"
    R"("http.status_code":200,"str":"s\"q","bool":true,"int":-7,"double":2.5,)"
    R"("arr":[1,"two",false,1.5,[3],{"a":1},null],"kv":{"inner":{"deep":"x"},"n":2},)"
    R"("b1":"YQ==","b2":"YWI=","b3":"YWJj","b4":"AAH+/w==","b0":"","empty":null,"nan":"NaN"})";
constexpr const char* kSpan1Events =
    R"([{"time_unix_nano":1700000000150000000,"name":"exception","attributes":{"exception.type":"ValueError",)"
    R"("exception.message":"bad \"value\"\n","exception.stacktrace":"trace"},"dropped_attributes_count":1},)"
    R"({"time_unix_nano":1700000000160000000,"name":"exception","attributes":{"exception.type":"Other"},)"
    R"("dropped_attributes_count":0},)"
    R"({"time_unix_nano":0,"name":"retry","attributes":{"attempt":2},"dropped_attributes_count":0}])";
constexpr const char* kSpan1Links =
    R"([{"trace_id":"0af7651916cd43dd8448eb211c80319c","span_id":"b9c7c989f97918e1",)"
    R"("trace_state":"rojo=00f067aa0ba902b7","attributes":{"link.kind":"follows"},"dropped_attributes_count":2,)"
    R"("flags":1},{"trace_id":"","span_id":"","trace_state":"","attributes":{},"dropped_attributes_count":0,)"
    R"("flags":0}])";

void ExpectTraceRequestColumns(const SpanBatch& b) {
  ASSERT_EQ(b.rows(), 3u);
  ExpectSpanColumnsAligned(b);
  EXPECT_EQ(b.project_id, 7);
  EXPECT_EQ(TraceIds(b), (Strings{kTrace1, kTrace1, kTrace3}));
  EXPECT_EQ(SpanIds(b.span_id), (Strings{kSpan1, kSpan2, kSpan3}));
  EXPECT_EQ(SpanIds(b.parent_span_id), (Strings{"", kSpan1, ""}));
  EXPECT_EQ(Column(b.trace_state), (Strings{"congo=t61rcWkgMzE", "", ""}));
  EXPECT_EQ(b.flags, (std::vector<uint32_t>{0x301, 0, 0}));
  EXPECT_EQ(Column(b.name), (Strings{"GET /items/{id}", "SELECT items", ""}));
  EXPECT_EQ(b.kind, (std::vector<int32_t>{2, 3, 0}));
  EXPECT_EQ(b.start_time_ns, (std::vector<int64_t>{1700000000123456789, 1700000000130000000, 0}));
  EXPECT_EQ(b.end_time_ns, (std::vector<int64_t>{1700000000223456789, 1700000000140000000, 0}));
  EXPECT_EQ(b.status_code, (std::vector<int32_t>{2, 1, 0}));
  EXPECT_EQ(Column(b.status_message), (Strings{"boom", "", ""}));
  EXPECT_EQ(Column(b.service_name), (Strings{"checkout", "checkout", ""}));
  EXPECT_EQ(Column(b.http_route), (Strings{"/items/{id}", "/fallback", ""}));
  EXPECT_EQ(Column(b.http_method), (Strings{"GET", "POST", ""}));
  EXPECT_EQ(b.http_status_code, (std::vector<int32_t>{500, 404, 0}));
  EXPECT_EQ(Column(b.db_system), (Strings{"", "postgresql", ""}));
  EXPECT_EQ(Column(b.exception_type), (Strings{"ValueError", "", ""}));
  EXPECT_EQ(Column(b.exception_message), (Strings{"bad \"value\"\n", "", ""}));
  EXPECT_EQ(Column(b.attributes), (Strings{kSpan1Attributes,
                                           R"({"db.system":"postgresql","http.method":"POST","http.status_code":"404",)"
                                           R"("url.path":"/fallback","http.target":"/ignored"})",
                                           "{}"}));
  EXPECT_EQ(Column(b.events), (Strings{kSpan1Events, "", ""}));
  EXPECT_EQ(Column(b.links), (Strings{kSpan1Links, "", ""}));
  EXPECT_EQ(b.dropped_attributes_count, (std::vector<uint32_t>{3, 0, 0}));
  EXPECT_EQ(b.dropped_events_count, (std::vector<uint32_t>{4, 0, 0}));
  EXPECT_EQ(b.dropped_links_count, (std::vector<uint32_t>{5, 0, 0}));
  const char* res1 = R"({"service.name":"checkout","host.name":"h1","pid":42})";
  EXPECT_EQ(PerRow(b, &ResourceTable::resource_attributes), (Strings{res1, res1, R"({"service.name":5})"}));
  EXPECT_EQ(PerRow(b, &ResourceTable::scope_name), (Strings{"io.sightline.test", "io.sightline.test", ""}));
  EXPECT_EQ(PerRow(b, &ResourceTable::scope_version), (Strings{"1.2.3", "1.2.3", ""}));
  EXPECT_EQ(PerRow(b, &ResourceTable::scope_attributes),
            (Strings{R"({"lib.lang":"cpp"})", R"({"lib.lang":"cpp"})", "{}"}));
  // Stored once per (resource, scope): the first two spans share a row.
  EXPECT_EQ(b.resources.rows(), 2u);
  EXPECT_EQ(b.resource_id[0], b.resource_id[1]);
  EXPECT_NE(b.resource_id[0], b.resource_id[2]);
}

TEST(DecodeSpansTest, ProtobufEveryColumn) {
  Rejections rejected;
  SpanBatch b = Spans(TraceRequest().SerializeAsString(), PayloadFormat::kProtobuf, &rejected);
  ExpectTraceRequestColumns(b);
  EXPECT_EQ(rejected.count, 0);
  EXPECT_EQ(rejected.Summary(), "");
}

TEST(DecodeSpansTest, JsonEveryColumn) {
  Rejections rejected;
  SpanBatch b = Spans(kTraceJson, PayloadFormat::kJson, &rejected);
  ExpectTraceRequestColumns(b);
  EXPECT_EQ(rejected.count, 0) << rejected.Summary();
}

TEST(DecodeSpansTest, JsonAndProtobufDecodeToTheSameBatch) {
  Rejections r1, r2;
  SpanBatch from_pb = Spans(TraceRequest().SerializeAsString(), PayloadFormat::kProtobuf, &r1);
  SpanBatch from_json = Spans(kTraceJson, PayloadFormat::kJson, &r2);
  ExpectSameSpans(from_pb, from_json);
}

TEST(DecodeSpansTest, DecodesAppendToTheBatch) {
  std::string body = TraceRequest().SerializeAsString();
  SpanBatch b;
  Rejections rejected;
  ASSERT_TRUE(DecodeSpans(body, PayloadFormat::kProtobuf, &b, &rejected).ok());
  ASSERT_TRUE(DecodeSpans(kTraceJson, PayloadFormat::kJson, &b, &rejected).ok());
  ASSERT_EQ(b.rows(), 6u);
  ExpectSpanColumnsAligned(b);
  EXPECT_EQ(SpanIds(b.span_id)[3], kSpan1);
  EXPECT_EQ(b.events.Get(3), kSpan1Events);
  EXPECT_EQ(b.attributes.Get(5), "{}");
}

TEST(DecodeSpansTest, EmptyRequestsDecodeToNoRows) {
  Rejections rejected;
  EXPECT_EQ(Spans("", PayloadFormat::kProtobuf, &rejected).rows(), 0u);
  EXPECT_EQ(Spans("{}", PayloadFormat::kJson, &rejected).rows(), 0u);
  EXPECT_EQ(Spans(R"({"resourceSpans":[{"scopeSpans":[{"spans":[]}]}]})", PayloadFormat::kJson, &rejected).rows(), 0u);
  EXPECT_EQ(rejected.count, 0);
}

struct PromotionCase {
  std::vector<std::pair<std::string, otlp_common::AnyValue>> attrs;
  std::string route, method;
  int32_t status;
  std::string db;
};

otlp_common::AnyValue Str(const std::string& s) {
  otlp_common::AnyValue v;
  v.set_string_value(s);
  return v;
}
otlp_common::AnyValue Int(int64_t i) {
  otlp_common::AnyValue v;
  v.set_int_value(i);
  return v;
}
otlp_common::AnyValue Dbl(double d) {
  otlp_common::AnyValue v;
  v.set_double_value(d);
  return v;
}

SpanBatch DecodeOneSpanWith(const std::vector<std::pair<std::string, otlp_common::AnyValue>>& attrs) {
  ExportTraceServiceRequest req;
  auto* span = req.add_resource_spans()->add_scope_spans()->add_spans();
  span->set_trace_id(Raw(kTrace1));
  span->set_span_id(Raw(kSpan1));
  for (const auto& [k, v] : attrs) *Attr(span->mutable_attributes(), k) = v;
  Rejections rejected;
  return Spans(req.SerializeAsString(), PayloadFormat::kProtobuf, &rejected);
}

TEST(DecodeSpansTest, PromotedAttributesFollowTheirFallbacks) {
  const PromotionCase cases[] = {
      {{}, "", "", 0, ""},
      {{{"url.path", Str("/p")}, {"http.target", Str("/t")}}, "/p", "", 0, ""},
      {{{"http.target", Str("/t")}}, "/t", "", 0, ""},
      {{{"http.target", Str("/t")}, {"http.route", Str("/r")}}, "/r", "", 0, ""},
      {{{"http.route", Int(1)}, {"url.path", Str("/p")}}, "/p", "", 0, ""},  // not a string: skipped
      {{{"http.method", Str("PUT")}, {"http.request.method", Str("PATCH")}}, "", "PATCH", 0, ""},
      {{{"http.status_code", Int(201)}}, "", "", 201, ""},
      {{{"http.status_code", Str("418")}}, "", "", 418, ""},
      {{{"http.status_code", Int(201)}, {"http.response.status_code", Int(503)}}, "", "", 503, ""},
      {{{"http.response.status_code", Dbl(200.0)}}, "", "", 0, ""},  // a double is not an int
      {{{"http.response.status_code", Str("abc")}, {"http.status_code", Int(302)}}, "", "", 302, ""},
      {{{"db.system.name", Str("mysql")}}, "", "", 0, "mysql"},
      {{{"db.system.name", Str("mysql")}, {"db.system", Str("redis")}}, "", "", 0, "redis"},
  };
  for (size_t i = 0; i < std::size(cases); ++i) {
    const auto& c = cases[i];
    SpanBatch b = DecodeOneSpanWith(c.attrs);
    ASSERT_EQ(b.rows(), 1u) << "case " << i;
    EXPECT_EQ(b.http_route.Get(0), c.route) << "case " << i;
    EXPECT_EQ(b.http_method.Get(0), c.method) << "case " << i;
    EXPECT_EQ(b.http_status_code[0], c.status) << "case " << i;
    EXPECT_EQ(b.db_system.Get(0), c.db) << "case " << i;
  }
}

// BUG (reported): FindIntAttribute parses the numeric prefix of a string into
// *out before noticing the trailing text, so "404 Not Found" promotes 404
// although the function returns false for it. Enable once fixed.
TEST(DecodeSpansTest, NonNumericStatusCodeStringIsNotPromoted) {
  SpanBatch b = DecodeOneSpanWith({{"http.response.status_code", Str("404 Not Found")}});
  ASSERT_EQ(b.rows(), 1u);
  EXPECT_EQ(b.http_status_code[0], 0);
}

TEST(DecodeSpansTest, ExceptionColumnsComeFromTheFirstExceptionEvent) {
  ExportTraceServiceRequest req;
  auto* span = req.add_resource_spans()->add_scope_spans()->add_spans();
  span->set_trace_id(Raw(kTrace1));
  span->set_span_id(Raw(kSpan1));
  auto* e0 = span->add_events();
  e0->set_name("log");
  Attr(e0->mutable_attributes(), "exception.type")->set_string_value("NotAnException");
  auto* e1 = span->add_events();
  e1->set_name("exception");
  Attr(e1->mutable_attributes(), "exception.message")->set_string_value("only a message for user 4711");
  auto* e2 = span->add_events();
  e2->set_name("exception");
  Attr(e2->mutable_attributes(), "exception.type")->set_string_value("Second");
  Rejections rejected;
  SpanBatch b = Spans(req.SerializeAsString(), PayloadFormat::kProtobuf, &rejected);
  ASSERT_EQ(b.rows(), 1u);
  EXPECT_EQ(b.exception_type.Get(0), "");
  EXPECT_EQ(b.exception_message.Get(0), "only a message for user 4711");
  EXPECT_EQ(b.exception_group.Get(0), "only a message for user <n>");
}

TEST(DecodeSpansTest, TimesAboveInt64MaxAreClamped) {
  ExportTraceServiceRequest req;
  auto* span = req.add_resource_spans()->add_scope_spans()->add_spans();
  span->set_trace_id(Raw(kTrace1));
  span->set_span_id(Raw(kSpan1));
  span->set_start_time_unix_nano(uint64_t{1} << 63);
  span->set_end_time_unix_nano(~uint64_t{0});
  span->add_events()->set_time_unix_nano(~uint64_t{0});
  Rejections rejected;
  SpanBatch b = Spans(req.SerializeAsString(), PayloadFormat::kProtobuf, &rejected);
  ASSERT_EQ(b.rows(), 1u);
  EXPECT_EQ(b.start_time_ns[0], std::numeric_limits<int64_t>::max());
  EXPECT_EQ(b.end_time_ns[0], std::numeric_limits<int64_t>::max());
  EXPECT_EQ(b.events.Get(0),
            R"([{"time_unix_nano":9223372036854775807,"name":"","attributes":{},"dropped_attributes_count":0}])");
}

TEST(DecodeSpansTest, InvalidIdsRejectOnlyTheirSpan) {
  ExportTraceServiceRequest req;
  auto* ss = req.add_resource_spans()->add_scope_spans();
  auto add = [&](std::string trace, std::string span, std::string parent, const char* name) {
    auto* s = ss->add_spans();
    s->set_trace_id(std::move(trace));
    s->set_span_id(std::move(span));
    s->set_parent_span_id(std::move(parent));
    s->set_name(name);
    Attr(s->mutable_attributes(), "k")->set_string_value(name);
    s->add_events()->set_name(name);
    return s;
  };
  add(Raw(kTrace1), Raw(kSpan1), "", "good1");
  add(Raw(kTrace1).substr(0, 15), Raw(kSpan1), "", "short trace");
  add(std::string(16, '\0'), Raw(kSpan1), "", "zero trace");
  add("", Raw(kSpan1), "", "no trace");
  add(Raw(kTrace1), std::string(8, '\0'), "", "zero span");
  add(Raw(kTrace1), "", "", "no span");
  add(Raw(kTrace1), Raw(kSpan1) + "x", "", "long span");
  add(Raw(kTrace1), Raw(kSpan2), Raw(kSpan1).substr(0, 7), "short parent");
  auto* bad_link = add(Raw(kTrace1), Raw(kSpan2), "", "bad link");
  bad_link->add_links()->set_trace_id("short");
  add(Raw(kTrace3), Raw(kSpan3), Raw(kSpan1), "good2");

  Rejections rejected;
  SpanBatch b = Spans(req.SerializeAsString(), PayloadFormat::kProtobuf, &rejected);
  EXPECT_EQ(rejected.count, 8);
  EXPECT_NE(rejected.Summary().find("trace_id"), std::string::npos) << rejected.Summary();
  ASSERT_EQ(b.rows(), 2u);
  ExpectSpanColumnsAligned(b);
  EXPECT_EQ(Column(b.name), (Strings{"good1", "good2"}));
  EXPECT_EQ(TraceIds(b), (Strings{kTrace1, kTrace3}));
  EXPECT_EQ(SpanIds(b.parent_span_id), (Strings{"", kSpan1}));
  EXPECT_EQ(Column(b.attributes), (Strings{R"({"k":"good1"})", R"({"k":"good2"})"}));
  EXPECT_EQ(b.events.Get(1), R"([{"time_unix_nano":0,"name":"good2","attributes":{},"dropped_attributes_count":0}])");
}

TEST(DecodeSpansTest, EveryRejectionReasonIsCounted) {
  ExportTraceServiceRequest req;
  auto* ss = req.add_resource_spans()->add_scope_spans();
  for (int i = 0; i < 2; ++i) {
    auto* s1 = ss->add_spans();
    s1->set_trace_id(Raw(kTrace1));
    s1->set_span_id(std::string(8, '\0'));
  }
  auto* s2 = ss->add_spans();
  s2->set_trace_id("bad");
  Rejections rejected;
  SpanBatch b = Spans(req.SerializeAsString(), PayloadFormat::kProtobuf, &rejected);
  EXPECT_EQ(b.rows(), 0u);
  EXPECT_EQ(rejected.count, 3);
  // Each reason once, with its count, in the order met.
  EXPECT_EQ(rejected.Summary(),
            "2 spans rejected: invalid span_id (want 8 bytes, not all zero); "
            "1 span rejected: invalid trace_id (want 16 bytes, not all zero)");
}

std::string OneJsonSpan(const std::string& trace_id, const std::string& span_id, const std::string& extra = "") {
  return R"({"resourceSpans":[{"scopeSpans":[{"spans":[{"traceId":")" + trace_id + R"(","spanId":")" + span_id + "\"" +
         extra + "}]}]}]}";
}

TEST(DecodeSpansTest, JsonIdsThatAreNotHexAreRejectedItems) {
  // Ids made of base64 characters in whole quads get past protobuf's JSON
  // parser (which reads bytes as base64) and must be rejected as items. Other
  // malformed ids fail protobuf's parser and so the whole request; either way
  // no span may be stored under an id that is not the hex text sent.
  struct Case {
    std::string trace, span, extra;
    bool item_level;
  } cases[] = {
      {"zzf92f3577b34da6a3ce929d0e0e4736", kSpan1, "", true},      // base64 letters, not hex
      {"4bf92f3577b34da6a3ce929d0e0e47+/", kSpan1, "", true},      // base64 symbols
      {"S/kvNXezTaajzpKdDg5HNg==", kSpan1, "", true},              // the id in base64, not hex
      {"00000000000000000000000000000000", kSpan1, "", true},      // all zero
      {"4bf92f3577b34da6a3ce929d0e0e4736aaaa", kSpan1, "", true},  // 36 hex chars
      {kTrace1, "00f067aa0ba902bz", "", true},
      {kTrace1, "0000000000000000", "", true},
      {kTrace1, "APBnqgupArc=", "", true},  // span id in base64
      {kTrace1, kTrace1, "", true},         // a trace id as span id
      {kTrace1, kSpan1, R"(,"parentSpanId":"xyz0aa0ba902b7gh")", true},
      {kTrace1, kSpan1, R"(,"links":[{"traceId":"nothexnothexnothexnothexnothexno"}])", true},
      {"zz" + std::string(30, '0') + "1", kSpan1, "", false},   // 33 chars
      {"4bf92f3577b34da6a3ce929d0e0e473", kSpan1, "", false},   // 31 chars
      {"4bf92f3577b34da6a3ce929d0e0e47", kSpan1, "", false},    // 30 chars
      {"4bf92f3577b34da6 3ce929d0e0e4736", kSpan1, "", false},  // a space
      {kTrace1, "00f067aa0ba902", "", false},                   // 14 chars
  };
  for (const auto& c : cases) {
    std::string body = OneJsonSpan(c.trace, c.span, c.extra);
    SpanBatch b;
    Rejections rejected;
    Status st = DecodeSpans(body, PayloadFormat::kJson, &b, &rejected);
    if (c.item_level) {
      ASSERT_TRUE(st.ok()) << body << ": " << st.ToString();
    }
    if (st.ok()) {
      EXPECT_EQ(b.rows(), 0u) << body << " stored as " << (b.rows() ? TraceIds(b)[0] : "");
      EXPECT_EQ(rejected.count, 1) << body;
    } else {
      EXPECT_EQ(st.code(), StatusCode::kInvalidArgument) << body;
      EXPECT_EQ(b.rows(), 0u);
    }
  }
}

TEST(DecodeSpansTest, JsonIdsAreCaseInsensitiveAndStoredLowercase) {
  Rejections rejected;
  SpanBatch b =
      Spans(OneJsonSpan("4BF92F3577B34DA6A3CE929D0E0E4736", "00F067AA0BA902B7"), PayloadFormat::kJson, &rejected);
  ASSERT_EQ(b.rows(), 1u) << rejected.Summary();
  EXPECT_EQ(TraceIds(b)[0], kTrace1);
  EXPECT_EQ(SpanIds(b.span_id)[0], kSpan1);
}

TEST(DecodeSpansTest, JsonUnknownFieldsAreIgnored) {
  std::string body = R"({
    "resourceSpans": [{
      "resource": {"attributes": [], "droppedAttributesCount": 0, "entityRefs": [{"type": "service"}]},
      "schemaUrl": "https://opentelemetry.io/schemas/1.21.0",
      "futureResourceField": {"nested": [1, 2, {"x": null}]},
      "scopeSpans": [{
        "scope": {"name": "s", "version": "v", "attributes": [{"key": "a", "value": {"stringValue": "b"}}],
                  "droppedAttributesCount": 1},
        "spans": [{
          "traceId": "4bf92f3577b34da6a3ce929d0e0e4736", "spanId": "00f067aa0ba902b7",
          "flags": 257, "newField": "ignored", "name": "n",
          "links": [{"traceId": "0af7651916cd43dd8448eb211c80319c", "spanId": "b9c7c989f97918e1", "flags": 1,
                     "linkExtension": {"x": 1}}],
          "events": [{"name": "e", "futureEventField": [true]}]
        }]
      }]
    }],
    "topLevelExtra": true
  })";
  Rejections rejected;
  SpanBatch b = Spans(body, PayloadFormat::kJson, &rejected);
  ASSERT_EQ(b.rows(), 1u);
  EXPECT_EQ(b.name.Get(0), "n");
  EXPECT_EQ(PerRow(b, &ResourceTable::scope_name)[0], "s");
  EXPECT_EQ(PerRow(b, &ResourceTable::scope_version)[0], "v");
  EXPECT_EQ(PerRow(b, &ResourceTable::scope_attributes)[0], R"({"a":"b"})");
  EXPECT_EQ(b.flags[0], 257u);
  EXPECT_EQ(b.links.Get(0),
            R"([{"trace_id":"0af7651916cd43dd8448eb211c80319c","span_id":"b9c7c989f97918e1","trace_state":"",)"
            R"("attributes":{},"dropped_attributes_count":0,"flags":1}])");
}

TEST(DecodeSpansTest, EnumsByNameAreAlsoAccepted) {
  Rejections rejected;
  SpanBatch b =
      Spans(OneJsonSpan(kTrace1, kSpan1, R"(,"kind":"SPAN_KIND_CONSUMER","status":{"code":"STATUS_CODE_ERROR"})"),
            PayloadFormat::kJson, &rejected);
  ASSERT_EQ(b.rows(), 1u);
  EXPECT_EQ(b.kind[0], 5);
  EXPECT_EQ(b.status_code[0], 2);
}

TEST(DecodeSpansTest, MalformedProtobufIsInvalidArgument) {
  std::string body = TraceRequest().SerializeAsString();
  // The body is two top-level resource_spans; cut inside the first.
  size_t first = TraceRequest().resource_spans(0).ByteSizeLong();
  for (size_t keep : {size_t{1}, size_t{2}, size_t{10}, first / 2, first}) {
    SpanBatch b;
    Rejections rejected;
    Status st = DecodeSpans(std::string_view(body).substr(0, keep), PayloadFormat::kProtobuf, &b, &rejected);
    EXPECT_EQ(st.code(), StatusCode::kInvalidArgument) << "truncated to " << keep;
    EXPECT_EQ(b.rows(), 0u);
  }
  for (std::string garbage : {std::string("\xff\xff\xff\xff"), std::string("\x0a\x05\x01"), std::string("\x0f"),
                              std::string("not a protobuf at all")}) {
    SpanBatch b;
    Rejections rejected;
    EXPECT_EQ(DecodeSpans(garbage, PayloadFormat::kProtobuf, &b, &rejected).code(), StatusCode::kInvalidArgument);
  }
}

TEST(DecodeSpansTest, InvalidUtf8InAStringFieldIsInvalidArgument) {
  ExportTraceServiceRequest req;
  auto* span = req.add_resource_spans()->add_scope_spans()->add_spans();
  span->set_trace_id(Raw(kTrace1));
  span->set_span_id(Raw(kSpan1));
  span->set_name("ok");
  std::string body = req.SerializeAsString();
  size_t at = body.find("ok");
  ASSERT_NE(at, std::string::npos);
  body[at] = '\xff';
  SpanBatch b;
  Rejections rejected;
  testing::internal::CaptureStderr();
  Status st = DecodeSpans(body, PayloadFormat::kProtobuf, &b, &rejected);
  std::string logged = testing::internal::GetCapturedStderr();
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  // The client learns which field was bad; the server log is not written per
  // bad request (a client could flood it).
  EXPECT_NE(st.message().find("invalid UTF-8"), std::string::npos) << st.message();
  EXPECT_NE(st.message().find("Span.name"), std::string::npos) << st.message();
  EXPECT_EQ(logged, "");
}

TEST(DecodeSpansTest, MalformedJsonIsInvalidArgument) {
  for (const char* body : {"", "{", "[]", "not json", R"({"resourceSpans": 5})", R"({"resourceSpans": [1]})",
                           R"({"resourceSpans":[{"scopeSpans":[{"spans":[{"startTimeUnixNano":"soon"}]}]}]})",
                           R"({"resourceSpans":[]} trailing)"}) {
    SpanBatch b;
    Rejections rejected;
    Status st = DecodeSpans(body, PayloadFormat::kJson, &b, &rejected);
    EXPECT_EQ(st.code(), StatusCode::kInvalidArgument) << body;
    EXPECT_EQ(b.rows(), 0u) << body;
  }
}

// --- logs ------------------------------------------------------------------------

ExportLogsServiceRequest LogsRequest() {
  ExportLogsServiceRequest req;
  auto* rl = req.add_resource_logs();
  Attr(rl->mutable_resource()->mutable_attributes(), "service.name")->set_string_value("api");
  auto* sl = rl->add_scope_logs();
  sl->mutable_scope()->set_name("app.logger");
  sl->mutable_scope()->set_version("0.1");
  Attr(sl->mutable_scope()->mutable_attributes(), "n")->set_int_value(1);

  auto* r1 = sl->add_log_records();
  r1->set_time_unix_nano(1700000001000000000ull);
  r1->set_observed_time_unix_nano(1700000001000000500ull);
  r1->set_severity_number(otlp_logs::SEVERITY_NUMBER_ERROR);
  r1->set_severity_text("ERROR");
  r1->mutable_body()->set_string_value("failed to connect: \"db\"");
  Attr(r1->mutable_attributes(), "retry")->set_bool_value(true);
  // A log-based exception event.
  Attr(r1->mutable_attributes(), "exception.type")->set_string_value("IOError");
  Attr(r1->mutable_attributes(), "exception.message")->set_string_value("connect to 10.0.0.7 failed after 3 tries");
  r1->set_trace_id(Raw(kTrace1));
  r1->set_span_id(Raw(kSpan1));
  r1->set_flags(1);
  r1->set_dropped_attributes_count(2);

  auto* r2 = sl->add_log_records();
  r2->set_severity_number(otlp_logs::SEVERITY_NUMBER_INFO);
  r2->set_severity_text("INFO");
  r2->set_event_name("app.user.signed_in");
  auto* kv = r2->mutable_body()->mutable_kvlist_value()->mutable_values();
  Attr(kv, "user")->set_string_value("u1");
  Attr(kv, "n")->set_int_value(3);

  sl->add_log_records()->mutable_body()->set_int_value(42);
  sl->add_log_records()->mutable_body()->set_double_value(0.5);
  sl->add_log_records()->mutable_body()->set_bool_value(false);
  auto* arr = sl->add_log_records()->mutable_body()->mutable_array_value();
  arr->add_values()->set_string_value("a");
  arr->add_values()->set_int_value(1);
  sl->add_log_records()->mutable_body()->set_bytes_value("\x01\x02\x03");
  sl->add_log_records()->set_time_unix_nano(5);  // no body
  return req;
}

constexpr const char* kLogsJson = R"({"resourceLogs": [{
  "resource": {"attributes": [{"key": "service.name", "value": {"stringValue": "api"}}]},
  "scopeLogs": [{
    "scope": {"name": "app.logger", "version": "0.1", "attributes": [{"key": "n", "value": {"intValue": "1"}}]},
    "logRecords": [
      {"timeUnixNano": "1700000001000000000", "observedTimeUnixNano": "1700000001000000500",
       "severityNumber": 17, "severityText": "ERROR",
       "body": {"stringValue": "failed to connect: \"db\""},
       "attributes": [{"key": "retry", "value": {"boolValue": true}},
                      {"key": "exception.type", "value": {"stringValue": "IOError"}},
                      {"key": "exception.message",
                       "value": {"stringValue": "connect to 10.0.0.7 failed after 3 tries"}}],
       "traceId": "4bf92f3577b34da6a3ce929d0e0e4736", "spanId": "00f067aa0ba902b7",
       "flags": 1, "droppedAttributesCount": 2},
      {"severityNumber": 9, "severityText": "INFO", "eventName": "app.user.signed_in",
       "body": {"kvlistValue": {"values": [{"key": "user", "value": {"stringValue": "u1"}},
                                           {"key": "n", "value": {"intValue": "3"}}]}}},
      {"body": {"intValue": "42"}},
      {"body": {"doubleValue": 0.5}},
      {"body": {"boolValue": false}},
      {"body": {"arrayValue": {"values": [{"stringValue": "a"}, {"intValue": "1"}]}}},
      {"body": {"bytesValue": "AQID"}},
      {"timeUnixNano": "5"}
    ]
  }]
}]})";

void ExpectLogsRequestColumns(const LogBatch& b) {
  ASSERT_EQ(b.rows(), 8u);
  EXPECT_EQ(b.time_ns, (std::vector<int64_t>{1700000001000000000, 0, 0, 0, 0, 0, 0, 5}));
  EXPECT_EQ(b.observed_time_ns, (std::vector<int64_t>{1700000001000000500, kReceiveNs, kReceiveNs, kReceiveNs,
                                                      kReceiveNs, kReceiveNs, kReceiveNs, kReceiveNs}));
  EXPECT_EQ(b.severity_number, (std::vector<int32_t>{17, 9, 0, 0, 0, 0, 0, 0}));
  EXPECT_EQ(Column(b.severity_text), (Strings{"ERROR", "INFO", "", "", "", "", "", ""}));
  EXPECT_EQ(Column(b.body), (Strings{"failed to connect: \"db\"", R"({"user":"u1","n":3})", "42", "0.5", "false",
                                     R"(["a",1])", R"("AQID")", ""}));
  using T = AnyValueType;
  std::vector<uint8_t> types;
  for (T t : {T::kString, T::kKvList, T::kInt, T::kDouble, T::kBool, T::kArray, T::kBytes, T::kEmpty}) {
    types.push_back(static_cast<uint8_t>(t));
  }
  EXPECT_EQ(b.body_type, types);
  EXPECT_EQ(TraceIds(b), (Strings{kTrace1, "", "", "", "", "", "", ""}));
  EXPECT_EQ(SpanIds(b.span_id), (Strings{kSpan1, "", "", "", "", "", "", ""}));
  EXPECT_EQ(b.flags, (std::vector<uint32_t>{1, 0, 0, 0, 0, 0, 0, 0}));
  EXPECT_EQ(Column(b.service_name), Strings(8, "api"));
  EXPECT_EQ(
      Column(b.attributes),
      (Strings{
          R"({"retry":true,"exception.type":"IOError","exception.message":"connect to 10.0.0.7 failed after 3 tries"})",
          "{}", "{}", "{}", "{}", "{}", "{}", "{}"}));
  EXPECT_EQ(b.dropped_attributes_count, (std::vector<uint32_t>{2, 0, 0, 0, 0, 0, 0, 0}));
  EXPECT_EQ(Column(b.event_name), (Strings{"", "app.user.signed_in", "", "", "", "", "", ""}));
  EXPECT_EQ(Column(b.exception_type), (Strings{"IOError", "", "", "", "", "", "", ""}));
  EXPECT_EQ(Column(b.exception_message),
            (Strings{"connect to 10.0.0.7 failed after 3 tries", "", "", "", "", "", "", ""}));
  EXPECT_EQ(Column(b.exception_group),
            (Strings{"connect to <n>.<n> failed after <n> tries", "", "", "", "", "", "", ""}));
  EXPECT_EQ(PerRow(b, &ResourceTable::resource_attributes), Strings(8, R"({"service.name":"api"})"));
  EXPECT_EQ(PerRow(b, &ResourceTable::scope_name), Strings(8, "app.logger"));
  EXPECT_EQ(PerRow(b, &ResourceTable::scope_version), Strings(8, "0.1"));
  EXPECT_EQ(PerRow(b, &ResourceTable::scope_attributes), Strings(8, R"({"n":1})"));
}

TEST(DecodeLogsTest, ProtobufEveryColumnAndBodyKind) {
  Rejections rejected;
  LogBatch b = Logs(LogsRequest().SerializeAsString(), PayloadFormat::kProtobuf, &rejected);
  ExpectLogsRequestColumns(b);
  EXPECT_EQ(rejected.count, 0);
}

TEST(DecodeLogsTest, JsonEveryColumnAndBodyKind) {
  Rejections rejected;
  LogBatch b = Logs(kLogsJson, PayloadFormat::kJson, &rejected);
  ExpectLogsRequestColumns(b);
  EXPECT_EQ(rejected.count, 0) << rejected.Summary();
}

TEST(DecodeLogsTest, JsonAndProtobufDecodeToTheSameBatch) {
  Rejections r1, r2;
  ExpectSameLogs(Logs(LogsRequest().SerializeAsString(), PayloadFormat::kProtobuf, &r1),
                 Logs(kLogsJson, PayloadFormat::kJson, &r2));
}

TEST(DecodeLogsTest, InvalidIdsRejectTheRecord) {
  ExportLogsServiceRequest req;
  auto* sl = req.add_resource_logs()->add_scope_logs();
  auto add = [&](std::string trace, std::string span, const char* body) {
    auto* r = sl->add_log_records();
    r->set_trace_id(std::move(trace));
    r->set_span_id(std::move(span));
    r->mutable_body()->set_string_value(body);
  };
  add(Raw(kTrace1), Raw(kSpan1), "good1");
  add(Raw(kTrace1).substr(0, 15), Raw(kSpan1), "short trace");
  add(Raw(kTrace1), Raw(kSpan1).substr(1), "short span");
  add(Raw(kTrace1) + "x", "", "long trace");
  add("", "", "good2");
  add(Raw(kTrace1), "", "good3");
  Rejections rejected;
  LogBatch b = Logs(req.SerializeAsString(), PayloadFormat::kProtobuf, &rejected);
  EXPECT_EQ(rejected.count, 3);
  EXPECT_NE(rejected.Summary().find("trace_id"), std::string::npos);
  EXPECT_EQ(Column(b.body), (Strings{"good1", "good2", "good3"}));
  EXPECT_EQ(TraceIds(b), (Strings{kTrace1, "", kTrace1}));
  EXPECT_EQ(SpanIds(b.span_id), (Strings{kSpan1, "", ""}));
  EXPECT_EQ(b.attributes.size(), 3u);
  EXPECT_EQ(b.observed_time_ns.size(), 3u);
}

TEST(DecodeLogsTest, JsonNonHexTraceIdRejectsTheRecord) {
  std::string body = R"({"resourceLogs":[{"scopeLogs":[{"logRecords":[
    {"traceId": "4bf92f3577b34da6a3ce929d0e0e473g", "body": {"stringValue": "bad"}},
    {"traceId": "4bf92f3577b34da6a3ce929d0e0e4736", "body": {"stringValue": "good"}}]}]}]})";
  Rejections rejected;
  LogBatch b = Logs(body, PayloadFormat::kJson, &rejected);
  EXPECT_EQ(rejected.count, 1);
  EXPECT_EQ(Column(b.body), (Strings{"good"}));
}

TEST(DecodeLogsTest, MalformedBodiesAreInvalidArgument) {
  std::string pb = LogsRequest().SerializeAsString();
  for (auto [body, format] :
       {std::pair<std::string, PayloadFormat>{pb.substr(0, pb.size() - 1), PayloadFormat::kProtobuf},
        {std::string("\x12\x03"
                     "abc\xff"),
         PayloadFormat::kProtobuf},
        {R"({"resourceLogs":[{"scopeLogs":[{"logRecords":[{"body":{"intValue":"x"}}]}]}]})", PayloadFormat::kJson},
        {"{\"resourceLogs\":", PayloadFormat::kJson}}) {
    LogBatch b;
    Rejections rejected;
    EXPECT_EQ(DecodeLogs(body, format, kReceiveNs, &b, &rejected).code(), StatusCode::kInvalidArgument) << body;
    EXPECT_EQ(b.rows(), 0u);
  }
}

// --- metrics ---------------------------------------------------------------------

constexpr uint64_t kT0 = 1700000000000000000ull, kT1 = 1700000001000000000ull, kT2 = 1700000002000000000ull;

ExportMetricsServiceRequest MetricsRequest() {
  ExportMetricsServiceRequest req;
  auto* rm = req.add_resource_metrics();
  Attr(rm->mutable_resource()->mutable_attributes(), "service.name")->set_string_value("billing");
  auto* sm = rm->add_scope_metrics();
  sm->mutable_scope()->set_name("meter");
  sm->mutable_scope()->set_version("2.0");

  auto* gauge = sm->add_metrics();
  gauge->set_name("queue.depth");
  gauge->set_unit("{item}");
  gauge->set_description("Items waiting");
  auto* g1 = gauge->mutable_gauge()->add_data_points();
  Attr(g1->mutable_attributes(), "q")->set_string_value("a");
  g1->set_start_time_unix_nano(kT0);
  g1->set_time_unix_nano(kT1);
  g1->set_as_int(5);
  auto* g2 = gauge->mutable_gauge()->add_data_points();
  Attr(g2->mutable_attributes(), "q")->set_string_value("b");
  g2->set_start_time_unix_nano(kT0);
  g2->set_time_unix_nano(kT1);
  g2->set_as_double(2.5);
  g2->set_flags(1);
  auto* g3 = gauge->mutable_gauge()->add_data_points();
  Attr(g3->mutable_attributes(), "q")->set_string_value("a");
  g3->set_time_unix_nano(kT2);
  g3->set_as_int(-7);
  auto* ex = g3->add_exemplars();
  ex->set_time_unix_nano(kT2);
  ex->set_as_int(9);
  ex->set_trace_id(Raw(kTrace1));
  ex->set_span_id(Raw(kSpan1));
  Attr(ex->mutable_filtered_attributes(), "user")->set_string_value("u");

  auto* sum = sm->add_metrics();
  sum->set_name("requests");
  sum->set_unit("1");
  sum->mutable_sum()->set_aggregation_temporality(otlp_metrics::AGGREGATION_TEMPORALITY_CUMULATIVE);
  sum->mutable_sum()->set_is_monotonic(true);
  auto* s1 = sum->mutable_sum()->add_data_points();
  s1->set_start_time_unix_nano(kT0);
  s1->set_time_unix_nano(kT1);
  s1->set_as_int(100);
  s1->add_exemplars()->set_as_double(1.5);

  auto* hist = sm->add_metrics();
  hist->set_name("latency");
  hist->set_unit("ms");
  hist->mutable_histogram()->set_aggregation_temporality(otlp_metrics::AGGREGATION_TEMPORALITY_DELTA);
  auto* h1 = hist->mutable_histogram()->add_data_points();
  h1->set_start_time_unix_nano(kT0);
  h1->set_time_unix_nano(kT1);
  h1->set_count(6);
  h1->set_sum(12.5);
  h1->set_min(0.5);
  h1->set_max(7);
  for (uint64_t c : {1, 2, 3}) h1->add_bucket_counts(c);
  for (double d : {1.0, 5.0}) h1->add_explicit_bounds(d);
  auto* h2 = hist->mutable_histogram()->add_data_points();
  Attr(h2->mutable_attributes(), "route")->set_string_value("/x");
  h2->set_time_unix_nano(kT1);

  auto* exp = sm->add_metrics();
  exp->set_name("latency.exp");
  exp->set_unit("ms");
  exp->mutable_exponential_histogram()->set_aggregation_temporality(otlp_metrics::AGGREGATION_TEMPORALITY_CUMULATIVE);
  auto* e1 = exp->mutable_exponential_histogram()->add_data_points();
  e1->set_start_time_unix_nano(kT0);
  e1->set_time_unix_nano(kT1);
  e1->set_count(10);
  e1->set_sum(20);
  e1->set_scale(-3);
  e1->set_zero_count(1);
  e1->set_zero_threshold(0.25);
  e1->mutable_positive()->set_offset(-2);
  e1->mutable_positive()->add_bucket_counts(1);
  e1->mutable_positive()->add_bucket_counts(2);
  e1->mutable_negative()->set_offset(1);
  e1->mutable_negative()->add_bucket_counts(3);
  e1->set_min(-1);
  e1->set_max(9);

  auto* summary = sm->add_metrics();
  summary->set_name("rpc.duration");
  summary->set_unit("s");
  auto* q = summary->mutable_summary()->add_data_points();
  q->set_time_unix_nano(kT2);
  q->set_count(4);
  q->set_sum(10);
  auto* q1 = q->add_quantile_values();
  q1->set_quantile(0.5);
  q1->set_value(2);
  auto* q2 = q->add_quantile_values();
  q2->set_quantile(0.99);
  q2->set_value(4.5);
  return req;
}

constexpr const char* kMetricsJson = R"({"resourceMetrics": [{
  "resource": {"attributes": [{"key": "service.name", "value": {"stringValue": "billing"}}]},
  "scopeMetrics": [{
    "scope": {"name": "meter", "version": "2.0"},
    "metrics": [
      {"name": "queue.depth", "unit": "{item}", "description": "Items waiting", "gauge": {"dataPoints": [
        {"attributes": [{"key": "q", "value": {"stringValue": "a"}}],
         "startTimeUnixNano": "1700000000000000000", "timeUnixNano": "1700000001000000000", "asInt": "5"},
        {"attributes": [{"key": "q", "value": {"stringValue": "b"}}],
         "startTimeUnixNano": "1700000000000000000", "timeUnixNano": "1700000001000000000", "asDouble": 2.5,
         "flags": 1},
        {"attributes": [{"key": "q", "value": {"stringValue": "a"}}],
         "timeUnixNano": "1700000002000000000", "asInt": "-7",
         "exemplars": [{"timeUnixNano": "1700000002000000000", "asInt": "9",
                        "traceId": "4bf92f3577b34da6a3ce929d0e0e4736", "spanId": "00f067aa0ba902b7",
                        "filteredAttributes": [{"key": "user", "value": {"stringValue": "u"}}]}]}
      ]}},
      {"name": "requests", "unit": "1", "sum": {"aggregationTemporality": 2, "isMonotonic": true, "dataPoints": [
        {"startTimeUnixNano": "1700000000000000000", "timeUnixNano": "1700000001000000000", "asInt": "100",
         "exemplars": [{"asDouble": 1.5}]}
      ]}},
      {"name": "latency", "unit": "ms", "histogram": {"aggregationTemporality": 1, "dataPoints": [
        {"startTimeUnixNano": "1700000000000000000", "timeUnixNano": "1700000001000000000", "count": "6",
         "sum": 12.5, "min": 0.5, "max": 7, "bucketCounts": ["1", "2", "3"], "explicitBounds": [1, 5]},
        {"attributes": [{"key": "route", "value": {"stringValue": "/x"}}], "timeUnixNano": "1700000001000000000"}
      ]}},
      {"name": "latency.exp", "unit": "ms", "exponentialHistogram": {"aggregationTemporality": 2, "dataPoints": [
        {"startTimeUnixNano": "1700000000000000000", "timeUnixNano": "1700000001000000000", "count": "10",
         "sum": 20, "scale": -3, "zeroCount": "1", "zeroThreshold": 0.25,
         "positive": {"offset": -2, "bucketCounts": ["1", "2"]},
         "negative": {"offset": 1, "bucketCounts": ["3"]},
         "min": -1, "max": 9}
      ]}},
      {"name": "rpc.duration", "unit": "s", "summary": {"dataPoints": [
        {"timeUnixNano": "1700000002000000000", "count": "4", "sum": 10,
         "quantileValues": [{"quantile": 0.5, "value": 2}, {"quantile": 0.99, "value": 4.5}]}
      ]}}
    ]
  }]
}]})";

void ExpectMetricsRequestColumns(const MetricBatch& b) {
  ExpectMetricColumnsAligned(b);
  ASSERT_EQ(b.series_rows(), 7u);
  ASSERT_EQ(b.rows(), 8u);
  // Series: two for the gauge (q=a, q=b), one sum, two histogram, one each for the rest.
  EXPECT_EQ(Column(b.metric_name),
            (Strings{"queue.depth", "queue.depth", "requests", "latency", "latency", "latency.exp", "rpc.duration"}));
  EXPECT_EQ(b.metric_type, (std::vector<int32_t>{1, 1, 2, 3, 3, 4, 5}));
  EXPECT_EQ(Column(b.unit), (Strings{"{item}", "{item}", "1", "ms", "ms", "ms", "s"}));
  EXPECT_EQ(Column(b.description), (Strings{"Items waiting", "Items waiting", "", "", "", "", ""}));
  EXPECT_EQ(b.temporality, (std::vector<int32_t>{0, 0, 2, 1, 1, 2, 0}));
  EXPECT_EQ(b.is_monotonic, (std::vector<uint8_t>{0, 0, 1, 0, 0, 0, 0}));
  EXPECT_EQ(Column(b.service_name), Strings(7, "billing"));
  // One (resource, scope) for the whole request, kept once.
  EXPECT_EQ(Column(b.resources.resource_attributes), Strings(1, R"({"service.name":"billing"})"));
  EXPECT_EQ(Column(b.resources.scope_name), Strings(1, "meter"));
  EXPECT_EQ(Column(b.resources.scope_version), Strings(1, "2.0"));
  EXPECT_EQ(b.series_resource, std::vector<uint32_t>(7, 0));
  EXPECT_EQ(Column(b.attributes),
            (Strings{R"({"q":"a"})", R"({"q":"b"})", "{}", "{}", R"({"route":"/x"})", "{}", "{}"}));
  std::set<int64_t> distinct(b.series_id.begin(), b.series_id.end());
  EXPECT_EQ(distinct.size(), 7u);

  const auto& s = b.series_id;
  EXPECT_EQ(b.point_series_id, (std::vector<int64_t>{s[0], s[1], s[0], s[2], s[3], s[4], s[5], s[6]}));
  EXPECT_EQ(b.time_ns, (std::vector<int64_t>{kT1, kT1, kT2, kT1, kT1, kT1, kT1, kT2}));
  EXPECT_EQ(b.start_time_ns, (std::vector<int64_t>{kT0, kT0, 0, kT0, kT0, 0, kT0, 0}));
  EXPECT_EQ(Column(b.value), Doubles({5, 2.5, -7, 100, kNaN, kNaN, kNaN, kNaN}));
  EXPECT_EQ(b.int_value, (std::vector<int64_t>{5, 0, -7, 100, 0, 0, 0, 0}));
  EXPECT_EQ(b.is_int, (std::vector<uint8_t>{1, 0, 1, 1, 0, 0, 0, 0}));
  EXPECT_EQ(b.count, (std::vector<uint64_t>{0, 0, 0, 0, 6, 0, 10, 4}));
  EXPECT_EQ(Column(b.sum), Doubles({kNaN, kNaN, kNaN, kNaN, 12.5, kNaN, 20, 10}));
  EXPECT_EQ(Column(b.min), Doubles({kNaN, kNaN, kNaN, kNaN, 0.5, kNaN, -1, kNaN}));
  EXPECT_EQ(Column(b.max), Doubles({kNaN, kNaN, kNaN, kNaN, 7, kNaN, 9, kNaN}));
  EXPECT_EQ(Column(b.bucket_counts), (Strings{"", "", "", "", "[1,2,3]", "[]", "", ""}));
  EXPECT_EQ(Column(b.explicit_bounds), (Strings{"", "", "", "", "[1,5]", "[]", "", ""}));
  EXPECT_EQ(
      Column(b.exp_histogram),
      (Strings{"", "", "", "", "", "",
               R"({"scale":-3,"zero_count":1,"zero_threshold":0.25,"positive":{"offset":-2,"bucket_counts":[1,2]},)"
               R"("negative":{"offset":1,"bucket_counts":[3]}})",
               ""}));
  EXPECT_EQ(Column(b.quantiles),
            (Strings{"", "", "", "", "", "", "", R"([{"quantile":0.5,"value":2},{"quantile":0.99,"value":4.5}])"}));
  EXPECT_EQ(Column(b.exemplars),
            (Strings{"", "",
                     R"([{"time_unix_nano":1700000002000000000,"value":9,)"
                     R"("trace_id":"4bf92f3577b34da6a3ce929d0e0e4736","span_id":"00f067aa0ba902b7",)"
                     R"("filtered_attributes":{"user":"u"}}])",
                     R"([{"time_unix_nano":0,"value":1.5,"trace_id":"","span_id":"","filtered_attributes":{}}])", "",
                     "", "", ""}));
  EXPECT_EQ(b.flags, (std::vector<uint32_t>{0, 1, 0, 0, 0, 0, 0, 0}));
}

TEST(DecodeMetricsTest, ProtobufEveryMetricType) {
  Rejections rejected;
  MetricBatch b = Metrics(MetricsRequest().SerializeAsString(), PayloadFormat::kProtobuf, &rejected);
  ExpectMetricsRequestColumns(b);
  EXPECT_EQ(rejected.count, 0) << rejected.Summary();
}

TEST(DecodeMetricsTest, JsonEveryMetricType) {
  Rejections rejected;
  MetricBatch b = Metrics(kMetricsJson, PayloadFormat::kJson, &rejected);
  ExpectMetricsRequestColumns(b);
  EXPECT_EQ(rejected.count, 0) << rejected.Summary();
}

TEST(DecodeMetricsTest, JsonAndProtobufDecodeToTheSameBatch) {
  Rejections r1, r2;
  ExpectSameMetrics(Metrics(MetricsRequest().SerializeAsString(), PayloadFormat::kProtobuf, &r1),
                    Metrics(kMetricsJson, PayloadFormat::kJson, &r2));
}

TEST(DecodeMetricsTest, SeriesIdsAreStableAcrossDecodesAndDependOnTheProject) {
  std::string body = MetricsRequest().SerializeAsString();
  Rejections rejected;
  MetricBatch a = Metrics(body, PayloadFormat::kProtobuf, &rejected);
  MetricBatch b = Metrics(body, PayloadFormat::kProtobuf, &rejected);
  EXPECT_EQ(a.series_id, b.series_id);
  MetricBatch other;
  other.project_id = 8;
  ASSERT_TRUE(DecodeMetrics(body, PayloadFormat::kProtobuf, &other, &rejected).ok());
  ASSERT_EQ(other.series_rows(), a.series_rows());
  for (size_t i = 0; i < a.series_rows(); ++i) EXPECT_NE(other.series_id[i], a.series_id[i]) << i;
}

constexpr int64_t kPinnedSeriesId = -8635308052455526294;

TEST(DecodeMetricsTest, SeriesIdIsAStoredFormat) {
  // series_id is persisted: a change in how it is computed splits every
  // existing series in two. This pins one value; change it only with a new
  // schema version and its step in `sightline migrate` (the last change:
  // XXH3 over the canonical encoding, schema version 2).
  ExportMetricsServiceRequest req;
  auto* m = req.add_resource_metrics()->add_scope_metrics()->add_metrics();
  m->set_name("m");
  m->mutable_gauge()->add_data_points()->set_as_int(1);
  MetricBatch b;
  b.project_id = 1;
  Rejections rejected;
  ASSERT_TRUE(DecodeMetrics(req.SerializeAsString(), PayloadFormat::kProtobuf, &b, &rejected).ok());
  ASSERT_EQ(b.series_rows(), 1u);
  EXPECT_EQ(b.series_id[0], kPinnedSeriesId);
}

// `sightline migrate` recomputes ids from the keyed tables' columns: that is
// only right if every input of the id is stored, exactly as hashed.
TEST(DecodeMetricsTest, SeriesAndResourceIdsFollowFromTheStoredColumns) {
  Rejections rejected;
  MetricBatch metrics = Metrics(MetricsRequest().SerializeAsString(), PayloadFormat::kProtobuf, &rejected);
  ASSERT_GT(metrics.series_rows(), 1u);
  for (size_t i = 0; i < metrics.series_rows(); ++i) {
    SeriesMetric m{
        metrics.project_id,      metrics.metric_name.Get(i),   metrics.metric_type[i],         metrics.unit.Get(i),
        metrics.temporality[i],  metrics.is_monotonic[i] != 0, metrics.resource_attributes(i), metrics.scope_name(i),
        metrics.scope_version(i)};
    EXPECT_EQ(SeriesIdHasher(m).Id(metrics.attributes.Get(i)), metrics.series_id[i]) << i;
  }
  SpanBatch spans = Spans(TraceRequest().SerializeAsString(), PayloadFormat::kProtobuf, &rejected);
  LogBatch logs = Logs(LogsRequest().SerializeAsString(), PayloadFormat::kProtobuf, &rejected);
  for (const ResourceTable* t : {&spans.resources, &logs.resources}) {
    ASSERT_GT(t->rows(), 0u);
    for (size_t i = 0; i < t->rows(); ++i) {
      EXPECT_EQ(ResourceId(t->resource_attributes.Get(i), t->scope_name.Get(i), t->scope_version.Get(i),
                           t->scope_attributes.Get(i)),
                t->resource_id[i])
          << i;
    }
  }
}

TEST(DecodeMetricsTest, WhatIdentifiesASeries) {
  // Each variant differs from the base in one identifying property.
  auto base = [] {
    ExportMetricsServiceRequest req;
    auto* rm = req.add_resource_metrics();
    Attr(rm->mutable_resource()->mutable_attributes(), "service.name")->set_string_value("svc");
    auto* sm = rm->add_scope_metrics();
    sm->mutable_scope()->set_name("scope");
    sm->mutable_scope()->set_version("1");
    auto* m = sm->add_metrics();
    m->set_name("m");
    m->set_unit("ms");
    m->set_description("d");
    m->mutable_sum()->set_aggregation_temporality(otlp_metrics::AGGREGATION_TEMPORALITY_DELTA);
    auto* p = m->mutable_sum()->add_data_points();
    Attr(p->mutable_attributes(), "k")->set_string_value("v");
    p->set_as_int(1);
    return req;
  };
  using Request = ExportMetricsServiceRequest;
  auto scope_metrics = [](Request& r) { return r.mutable_resource_metrics(0)->mutable_scope_metrics(0); };
  auto metric = [&](Request& r) { return scope_metrics(r)->mutable_metrics(0); };
  auto point_attr = [&](Request& r) {
    return metric(r)->mutable_sum()->mutable_data_points(0)->mutable_attributes(0)->mutable_value();
  };
  auto id_of = [](const Request& r) {
    MetricBatch b;
    Rejections rejected;
    EXPECT_TRUE(DecodeMetrics(r.SerializeAsString(), PayloadFormat::kProtobuf, &b, &rejected).ok());
    EXPECT_EQ(b.series_rows(), 1u);
    return b.series_id.empty() ? 0 : b.series_id[0];
  };
  Request r0 = base();
  const int64_t id0 = id_of(r0);

  std::vector<std::pair<const char*, std::function<void(Request&)>>> changes = {
      {"name", [&](Request& r) { metric(r)->set_name("m2"); }},
      {"unit", [&](Request& r) { metric(r)->set_unit("s"); }},
      {"temporality",
       [&](Request& r) {
         metric(r)->mutable_sum()->set_aggregation_temporality(otlp_metrics::AGGREGATION_TEMPORALITY_CUMULATIVE);
       }},
      {"monotonic", [&](Request& r) { metric(r)->mutable_sum()->set_is_monotonic(true); }},
      {"point attribute value", [&](Request& r) { point_attr(r)->set_string_value("w"); }},
      {"point attribute type", [&](Request& r) { point_attr(r)->set_int_value(1); }},
      {"resource",
       [&](Request& r) {
         r.mutable_resource_metrics(0)->mutable_resource()->mutable_attributes(0)->mutable_value()->set_string_value(
             "svc2");
       }},
      {"scope name", [&](Request& r) { scope_metrics(r)->mutable_scope()->set_name("s2"); }},
      {"scope version", [&](Request& r) { scope_metrics(r)->mutable_scope()->set_version("2"); }},
      {"type",
       [&](Request& r) {
         auto* m = metric(r);
         auto points = m->sum().data_points();
         *m->mutable_gauge()->mutable_data_points() = points;
       }},
  };
  std::set<int64_t> ids = {id0};
  for (auto& [what, change] : changes) {
    Request r = base();
    change(r);
    int64_t id = id_of(r);
    EXPECT_NE(id, id0) << what;
    ids.insert(id);
  }
  EXPECT_EQ(ids.size(), changes.size() + 1);

  // Not identifying: description, point values and times.
  Request same = base();
  metric(same)->set_description("other text");
  metric(same)->mutable_sum()->mutable_data_points(0)->set_as_int(99);
  metric(same)->mutable_sum()->mutable_data_points(0)->set_time_unix_nano(123);
  EXPECT_EQ(id_of(same), id0);
}

TEST(DecodeMetricsTest, PointsOfOneSeriesShareOneSeriesRowAcrossMetricsInTheBatch) {
  // The same metric split over two ScopeMetrics blocks of the same scope is one series.
  ExportMetricsServiceRequest req;
  auto* rm = req.add_resource_metrics();
  for (int i = 0; i < 2; ++i) {
    auto* m = rm->add_scope_metrics()->add_metrics();
    m->set_name("cpu");
    auto* p = m->mutable_gauge()->add_data_points();
    p->set_as_double(i);
    p->set_time_unix_nano(i + 1);
  }
  Rejections rejected;
  MetricBatch b = Metrics(req.SerializeAsString(), PayloadFormat::kProtobuf, &rejected);
  ASSERT_EQ(b.series_rows(), 1u);
  ASSERT_EQ(b.rows(), 2u);
  EXPECT_EQ(b.point_series_id, (std::vector<int64_t>{b.series_id[0], b.series_id[0]}));
}

TEST(DecodeMetricsTest, InvalidItemsAreRejectedOthersKept) {
  ExportMetricsServiceRequest req;
  auto* sm = req.add_resource_metrics()->add_scope_metrics();
  auto* hist = sm->add_metrics();
  hist->set_name("h");
  auto* bad = hist->mutable_histogram()->add_data_points();
  for (uint64_t c : {1, 2}) bad->add_bucket_counts(c);
  for (double d : {1.0, 2.0}) bad->add_explicit_bounds(d);  // 2 bounds need 3 counts
  auto* bad2 = hist->mutable_histogram()->add_data_points();
  for (uint64_t c : {1, 2, 3, 4}) bad2->add_bucket_counts(c);
  bad2->add_explicit_bounds(1);
  auto* good = hist->mutable_histogram()->add_data_points();
  good->set_count(3);
  for (uint64_t c : {1, 2}) good->add_bucket_counts(c);
  good->add_explicit_bounds(10);
  auto* nodata = sm->add_metrics();
  nodata->set_name("nodata");
  auto* noname = sm->add_metrics();
  noname->mutable_gauge()->add_data_points()->set_as_int(1);
  auto* g = sm->add_metrics();
  g->set_name("g");
  g->mutable_gauge()->add_data_points()->set_as_int(1);

  Rejections rejected;
  MetricBatch b = Metrics(req.SerializeAsString(), PayloadFormat::kProtobuf, &rejected);
  EXPECT_EQ(rejected.count, 4);
  EXPECT_NE(rejected.Summary().find("bucket_counts"), std::string::npos) << rejected.Summary();
  ExpectMetricColumnsAligned(b);
  ASSERT_EQ(b.rows(), 2u);
  EXPECT_EQ(Column(b.metric_name), (Strings{"h", "g"}));
  EXPECT_EQ(b.count, (std::vector<uint64_t>{3, 0}));
  EXPECT_EQ(b.bucket_counts.Get(0), "[1,2]");
  EXPECT_EQ(b.explicit_bounds.Get(0), "[10]");
}

TEST(DecodeMetricsTest, EachHistogramPointKeepsItsOwnBounds) {
  // The decoder reuses the last point's bounds JSON when the bounds repeat.
  ExportMetricsServiceRequest req;
  auto* hist = req.add_resource_metrics()->add_scope_metrics()->add_metrics();
  hist->set_name("h");
  for (std::vector<double> bounds : std::vector<std::vector<double>>{{1, 5}, {1, 5}, {1, 6}, {}, {1, 5}, {1, 5, 9}}) {
    auto* p = hist->mutable_histogram()->add_data_points();
    for (double d : bounds) p->add_explicit_bounds(d);
    for (size_t i = 0; i <= bounds.size(); ++i) p->add_bucket_counts(i);
  }
  Rejections rejected;
  MetricBatch b = Metrics(req.SerializeAsString(), PayloadFormat::kProtobuf, &rejected);
  EXPECT_EQ(rejected.count, 0) << rejected.Summary();
  EXPECT_EQ(Column(b.explicit_bounds), (Strings{"[1,5]", "[1,5]", "[1,6]", "[]", "[1,5]", "[1,5,9]"}));
}

TEST(DecodeMetricsTest, MetricWithoutDataIsRejectedWithItsName) {
  ExportMetricsServiceRequest req;
  req.add_resource_metrics()->add_scope_metrics()->add_metrics()->set_name("lonely");
  Rejections rejected;
  MetricBatch b = Metrics(req.SerializeAsString(), PayloadFormat::kProtobuf, &rejected);
  EXPECT_EQ(b.rows(), 0u);
  EXPECT_EQ(b.series_rows(), 0u);
  EXPECT_EQ(rejected.count, 1);
  EXPECT_NE(rejected.Summary().find("lonely"), std::string::npos) << rejected.Summary();
}

TEST(DecodeMetricsTest, ExemplarWithABadIdRejectsItsPoint) {
  ExportMetricsServiceRequest req;
  auto* m = req.add_resource_metrics()->add_scope_metrics()->add_metrics();
  m->set_name("g");
  auto* p1 = m->mutable_gauge()->add_data_points();
  p1->set_as_int(1);
  p1->add_exemplars()->set_trace_id("short");
  auto* p2 = m->mutable_gauge()->add_data_points();
  p2->set_as_int(2);
  Rejections rejected;
  MetricBatch b = Metrics(req.SerializeAsString(), PayloadFormat::kProtobuf, &rejected);
  EXPECT_EQ(rejected.count, 1);
  ExpectMetricColumnsAligned(b);
  ASSERT_EQ(b.rows(), 1u);
  EXPECT_EQ(b.int_value[0], 2);
  EXPECT_EQ(b.exemplars.Get(0), "");
}

// BUG (reported): the series row is interned before the point's exemplars are
// validated, so a point rejected for a bad exemplar id leaves a series row
// that no point references. Enable once fixed.
TEST(DecodeMetricsTest, RejectedPointLeavesNoOrphanSeries) {
  ExportMetricsServiceRequest req;
  auto* m = req.add_resource_metrics()->add_scope_metrics()->add_metrics();
  m->set_name("g");
  auto* p = m->mutable_gauge()->add_data_points();
  p->set_as_int(1);
  p->add_exemplars()->set_span_id("short");
  Rejections rejected;
  MetricBatch b = Metrics(req.SerializeAsString(), PayloadFormat::kProtobuf, &rejected);
  EXPECT_EQ(rejected.count, 1);
  EXPECT_EQ(b.rows(), 0u);
  EXPECT_EQ(b.series_rows(), 0u);
}

TEST(DecodeMetricsTest, NonFiniteValuesSurviveAsJsonStrings) {
  ExportMetricsServiceRequest req;
  auto* sm = req.add_resource_metrics()->add_scope_metrics();
  auto* h = sm->add_metrics();
  h->set_name("h");
  auto* p = h->mutable_histogram()->add_data_points();
  for (uint64_t c : {0, 1, 0}) p->add_bucket_counts(c);
  p->add_explicit_bounds(-std::numeric_limits<double>::infinity());
  p->add_explicit_bounds(std::numeric_limits<double>::infinity());
  p->set_sum(kNaN);
  auto* s = sm->add_metrics();
  s->set_name("s");
  auto* q = s->mutable_summary()->add_data_points()->add_quantile_values();
  q->set_quantile(1);
  q->set_value(kNaN);
  Rejections rejected;
  MetricBatch b = Metrics(req.SerializeAsString(), PayloadFormat::kProtobuf, &rejected);
  ASSERT_EQ(b.rows(), 2u);
  EXPECT_EQ(b.explicit_bounds.Get(0), R"(["-Infinity","Infinity"])");
  EXPECT_TRUE(std::isnan(b.sum[0]));
  EXPECT_EQ(b.quantiles.Get(1), R"([{"quantile":1,"value":"NaN"}])");
}

TEST(DecodeMetricsTest, MalformedBodiesAreInvalidArgument) {
  std::string pb = MetricsRequest().SerializeAsString();
  for (auto [body, format] :
       {std::pair<std::string, PayloadFormat>{pb.substr(0, pb.size() / 2), PayloadFormat::kProtobuf},
        {R"({"resourceMetrics":[{"scopeMetrics":[{"metrics":[{"gauge":{"dataPoints":)"
         R"([{"asInt":"1.5"}]}}]}]}]})",
         PayloadFormat::kJson},
        {"nope", PayloadFormat::kJson}}) {
    MetricBatch b;
    Rejections rejected;
    EXPECT_EQ(DecodeMetrics(body, format, &b, &rejected).code(), StatusCode::kInvalidArgument) << body;
    EXPECT_EQ(b.rows(), 0u);
    EXPECT_EQ(b.series_rows(), 0u);
  }
}

// --- responses (ingest_service.cc) -------------------------------------------------

//! Descriptors of the wire shapes the hand encoders claim to write, so their
//! output can be parsed back by protobuf itself.
class WireShapes {
 public:
  WireShapes() {
    pb::FileDescriptorProto f;
    f.set_name("sightline_response_shapes_test.proto");
    f.set_package("sltest");
    f.set_syntax("proto3");
    auto* status = f.add_message_type();
    status->set_name("RpcStatus");  // google.rpc.Status without details
    AddField(status, "code", 1, pb::FieldDescriptorProto::TYPE_INT32);
    AddField(status, "message", 2, pb::FieldDescriptorProto::TYPE_STRING);
    file_ = pool_.BuildFile(f);
  }

  //! Parses `bytes` as the named message; nullptr when it does not parse or
  //! carries fields the shape does not have (wrong numbers or wire types).
  std::unique_ptr<pb::Message> Parse(const char* name, const std::string& bytes) {
    const pb::Descriptor* d = file_->FindMessageTypeByName(name);
    std::unique_ptr<pb::Message> m(factory_.GetPrototype(d)->New());
    if (!m->ParseFromString(bytes)) return nullptr;
    if (!m->GetReflection()->GetUnknownFields(*m).empty()) return nullptr;
    return m;
  }

 private:
  static pb::FieldDescriptorProto* AddField(pb::DescriptorProto* m, const char* name, int number,
                                            pb::FieldDescriptorProto::Type type) {
    auto* f = m->add_field();
    f->set_name(name);
    f->set_number(number);
    f->set_type(type);
    f->set_label(pb::FieldDescriptorProto::LABEL_OPTIONAL);
    return f;
  }
  pb::DescriptorPool pool_;
  pb::DynamicMessageFactory factory_;
  const pb::FileDescriptor* file_ = nullptr;
};

pb::Struct ParseJsonObject(const std::string& json) {
  pb::Struct s;
  auto st = pb::util::JsonStringToMessage(json, &s);
  EXPECT_TRUE(st.ok()) << st.message() << " in " << json;
  return s;
}

TEST(EncodeResponseTest, FullSuccessIsAnEmptyMessage) {
  Rejections none;
  for (Signal s : {Signal::kSpans, Signal::kLogs, Signal::kMetrics}) {
    std::string pb_body = IngestService::EncodeResponse(s, PayloadFormat::kProtobuf, none);
    EXPECT_EQ(pb_body, "");
    ExportTraceServiceResponse parsed;
    EXPECT_TRUE(parsed.ParseFromString(pb_body));
    EXPECT_EQ(IngestService::EncodeResponse(s, PayloadFormat::kJson, none), "{}");
  }
}

// The generated response class of each signal reads the hand-encoded
// partial_success as its own typed field, in both formats, with nothing left
// over as unknown fields.
template <typename Response>
void ExpectPartialSuccess(Signal signal, const Rejections& rejected, int64_t (*count)(const Response&)) {
  std::string body = IngestService::EncodeResponse(signal, PayloadFormat::kProtobuf, rejected);
  Response parsed;
  ASSERT_TRUE(parsed.ParseFromString(body));
  EXPECT_TRUE(parsed.GetReflection()->GetUnknownFields(parsed).empty());
  ASSERT_TRUE(parsed.has_partial_success());
  EXPECT_EQ(count(parsed), rejected.count);
  EXPECT_EQ(parsed.partial_success().error_message(), rejected.Summary());

  Response from_json;
  std::string json = IngestService::EncodeResponse(signal, PayloadFormat::kJson, rejected);
  auto st = pb::util::JsonStringToMessage(json, &from_json);  // unknown JSON fields are errors here
  ASSERT_TRUE(st.ok()) << st.message() << " in " << json;
  EXPECT_EQ(count(from_json), rejected.count);
  EXPECT_EQ(from_json.partial_success().error_message(), rejected.Summary());
}

TEST(EncodeResponseTest, PartialSuccessParsesBackAsTheGeneratedResponses) {
  Rejections rejected;
  rejected.Reject("span", std::string(200, 'm') + " \"quoted\" \xc3\xa9");  // a two-byte length
  rejected.count = 300;                                                     // a two-byte varint
  ExpectPartialSuccess<ExportTraceServiceResponse>(Signal::kSpans, rejected, [](const ExportTraceServiceResponse& r) {
    return r.partial_success().rejected_spans();
  });
  ExpectPartialSuccess<ExportLogsServiceResponse>(Signal::kLogs, rejected, [](const ExportLogsServiceResponse& r) {
    return r.partial_success().rejected_log_records();
  });
  ExpectPartialSuccess<ExportMetricsServiceResponse>(
      Signal::kMetrics, rejected,
      [](const ExportMetricsServiceResponse& r) { return r.partial_success().rejected_data_points(); });
}

TEST(EncodeResponseTest, PartialSuccessJsonUsesTheSignalsFieldName) {
  Rejections rejected;
  rejected.Reject("span", "invalid trace_id \"x\"\n");
  rejected.count = 3;
  const std::pair<Signal, const char*> cases[] = {{Signal::kSpans, "rejectedSpans"},
                                                  {Signal::kLogs, "rejectedLogRecords"},
                                                  {Signal::kMetrics, "rejectedDataPoints"}};
  for (auto [signal, field] : cases) {
    std::string body = IngestService::EncodeResponse(signal, PayloadFormat::kJson, rejected);
    pb::Struct s = ParseJsonObject(body);
    ASSERT_EQ(s.fields().size(), 1u) << body;
    const auto& partial = s.fields().at("partialSuccess").struct_value().fields();
    ASSERT_EQ(partial.size(), 2u) << body;
    EXPECT_EQ(partial.at(field).string_value(), "3") << body;  // int64 as a string
    EXPECT_EQ(partial.at("errorMessage").string_value(), rejected.Summary()) << body;
  }
}

TEST(EncodeErrorTest, ProtobufIsAGoogleRpcStatus) {
  WireShapes shapes;
  const std::pair<Status, int> cases[] = {
      {Status::InvalidArgument("bad body"), 3},
      {Status::Unauthenticated("who"), 16},
      {Status::NotFound("nf"), 5},
      {Status::PayloadTooLarge(std::string(300, 'x')), 8},
      {Status::UnsupportedMedia("type"), 3},
      {Status::Unavailable("busy"), 14},
      {Status::DeadlineExceeded("slow"), 4},
      {Status::Cancelled("gone"), 1},
      {Status::Internal("bug"), 13},
      {Status::IoError("disk"), 13},
      {Status::ResourceExhausted("rate"), 8},
      {Status::PermissionDenied("scope"), 7},
  };
  for (const auto& [status, code] : cases) {
    std::string body = IngestService::EncodeError(PayloadFormat::kProtobuf, status);
    auto msg = shapes.Parse("RpcStatus", body);
    ASSERT_NE(msg, nullptr) << status.ToString();
    const pb::Descriptor* d = msg->GetDescriptor();
    EXPECT_EQ(msg->GetReflection()->GetInt32(*msg, d->FindFieldByName("code")), code) << status.ToString();
    EXPECT_EQ(msg->GetReflection()->GetString(*msg, d->FindFieldByName("message")), status.message());
  }
}

TEST(EncodeErrorTest, JsonHasCodeAndMessage) {
  Status st = Status::Unavailable("retry \"later\"\n");
  std::string body = IngestService::EncodeError(PayloadFormat::kJson, st);
  pb::Struct s = ParseJsonObject(body);
  ASSERT_EQ(s.fields().size(), 2u) << body;
  EXPECT_EQ(s.fields().at("code").number_value(), 14);
  EXPECT_EQ(s.fields().at("message").string_value(), st.message());
}

}  // namespace
}  // namespace sightline
