// DecodeLimits: OpenTelemetry's attribute limits (cut and counted, items
// kept) and the memory budget of one request (what decoding holds is charged
// as it grows and bounded by the body's size).

#include <google/protobuf/struct.pb.h>
#include <google/protobuf/util/json_util.h>
#include <gtest/gtest.h>

#include <string>

#include "ingest/ingest_service.h"
#include "opentelemetry/proto/collector/logs/v1/logs_service.pb.h"
#include "opentelemetry/proto/collector/metrics/v1/metrics_service.pb.h"
#include "opentelemetry/proto/collector/trace/v1/trace_service.pb.h"
#include "otlp/decoder.h"

namespace sightline {
namespace {

namespace otlp_common = opentelemetry::proto::common::v1;
using opentelemetry::proto::collector::logs::v1::ExportLogsServiceRequest;
using opentelemetry::proto::collector::metrics::v1::ExportMetricsServiceRequest;
using opentelemetry::proto::collector::trace::v1::ExportTraceServiceRequest;

void AddString(google::protobuf::RepeatedPtrField<otlp_common::KeyValue>* kvs, const std::string& key,
               const std::string& value) {
  auto* kv = kvs->Add();
  kv->set_key(key);
  kv->mutable_value()->set_string_value(value);
}

//! One span with the given name, `attributes` string attributes of
//! `value_bytes` each, `events` events and `links` links.
ExportTraceServiceRequest OneSpan(const std::string& name, int attributes, size_t value_bytes, int events, int links) {
  ExportTraceServiceRequest req;
  auto* rs = req.add_resource_spans();
  AddString(rs->mutable_resource()->mutable_attributes(), "service.name", "checkout");
  auto* span = rs->add_scope_spans()->add_spans();
  span->set_trace_id(std::string(16, '\x01'));
  span->set_span_id(std::string(8, '\x02'));
  span->set_name(name);
  span->set_dropped_attributes_count(1);
  span->set_dropped_events_count(2);
  for (int i = 0; i < attributes; ++i) {
    AddString(span->mutable_attributes(), "k" + std::to_string(i), std::string(value_bytes, 'v'));
  }
  for (int i = 0; i < events; ++i) span->add_events()->set_name("e" + std::to_string(i));
  for (int i = 0; i < links; ++i) {
    auto* l = span->add_links();
    l->set_trace_id(std::string(16, '\x03'));
    l->set_span_id(std::string(8, '\x04'));
  }
  return req;
}

TEST(DecodeLimitsTest, ValuesAreCutAtAUtf8BoundaryAndCounted) {
  DecodeLimits limits;
  limits.max_attribute_value_bytes = 4;
  ExportTraceServiceRequest req = OneSpan("op", 0, 0, 0, 0);
  auto* span = req.mutable_resource_spans(0)->mutable_scope_spans(0)->mutable_spans(0);
  AddString(span->mutable_attributes(), "short", "abcd");
  AddString(span->mutable_attributes(), "accent", "abc\xc3\xa9z");  // "abcéz": é would be split at 4
  auto* nested = span->add_attributes();
  nested->set_key("nested");
  nested->mutable_value()->mutable_array_value()->add_values()->set_string_value("123456");
  auto* bytes = span->add_attributes();
  bytes->set_key("bytes");
  bytes->mutable_value()->set_bytes_value("abcdefgh");  // base64 cut to 4 characters: 3 bytes
  SpanBatch b;
  Rejections r;
  ASSERT_TRUE(DecodeSpans(req.SerializeAsString(), PayloadFormat::kProtobuf, &b, &r, limits).ok());
  ASSERT_EQ(b.rows(), 1u);
  EXPECT_EQ(b.attributes.Get(0), R"({"short":"abcd","accent":"abc","nested":["1234"],"bytes":"YWJj"})");
  EXPECT_EQ(b.resources.resource_attributes.Get(0), R"({"service.name":"chec"})");
  EXPECT_EQ(r.truncated, 4);  // and the resource's service.name
  EXPECT_EQ(r.count, 0);
}

TEST(DecodeLimitsTest, AttributesEventsAndLinksPastTheirCountAreDroppedAndCounted) {
  DecodeLimits limits;
  limits.max_attributes = 3;
  limits.max_span_events = 2;
  limits.max_span_links = 1;
  SpanBatch b;
  Rejections r;
  ASSERT_TRUE(
      DecodeSpans(OneSpan("op", 5, 1, 4, 3).SerializeAsString(), PayloadFormat::kProtobuf, &b, &r, limits).ok());
  ASSERT_EQ(b.rows(), 1u);
  EXPECT_EQ(b.attributes.Get(0), R"({"k0":"v","k1":"v","k2":"v"})");
  // The SDK's own counts plus ours, as an SDK with these limits would report.
  EXPECT_EQ(b.dropped_attributes_count[0], 1u + 2u);
  EXPECT_EQ(b.dropped_events_count[0], 2u + 2u);
  EXPECT_EQ(b.dropped_links_count[0], 0u + 2u);
  EXPECT_NE(b.events.Get(0).find(R"("name":"e1")"), std::string::npos);
  EXPECT_EQ(b.events.Get(0).find(R"("name":"e2")"), std::string::npos);
  EXPECT_EQ(r.truncated, 2 + 2 + 2);
}

TEST(DecodeLimitsTest, NamesAndTheServiceNameHaveTheirOwnCuts) {
  DecodeLimits limits;
  limits.max_name_bytes = 5;
  limits.max_service_name_bytes = 3;
  limits.max_attribute_value_bytes = 100;
  SpanBatch b;
  Rejections r;
  ASSERT_TRUE(
      DecodeSpans(OneSpan("GET /items", 0, 0, 0, 0).SerializeAsString(), PayloadFormat::kProtobuf, &b, &r, limits)
          .ok());
  EXPECT_EQ(b.name.Get(0), "GET /");
  EXPECT_EQ(b.service_name.Get(0), "che");
  // The resource keeps its whole attribute (within the value limit).
  EXPECT_EQ(b.resources.resource_attributes.Get(0), R"({"service.name":"checkout"})");
  EXPECT_EQ(r.truncated, 2);

  ExportMetricsServiceRequest m;
  auto* metric = m.add_resource_metrics()->add_scope_metrics()->add_metrics();
  metric->set_name("http.server.duration");
  metric->mutable_gauge()->add_data_points()->set_as_int(1);
  MetricBatch mb;
  Rejections mr;
  ASSERT_TRUE(DecodeMetrics(m.SerializeAsString(), PayloadFormat::kProtobuf, &mb, &mr, limits).ok());
  EXPECT_EQ(mb.metric_name.Get(0), "http.");
  EXPECT_EQ(mr.truncated, 1);
}

TEST(DecodeLimitsTest, CutsAreReportedAsAPartialSuccessThatRejectsNothing) {
  DecodeLimits limits;
  limits.max_attribute_value_bytes = 4;
  SpanBatch b;
  Rejections r;
  ASSERT_TRUE(
      DecodeSpans(OneSpan("op", 7, 10, 0, 0).SerializeAsString(), PayloadFormat::kProtobuf, &b, &r, limits).ok());
  std::string body = IngestService::EncodeResponse(Signal::kSpans, PayloadFormat::kJson, r);
  google::protobuf::Struct s;
  ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(body, &s).ok()) << body;
  const auto& partial = s.fields().at("partialSuccess").struct_value().fields();
  EXPECT_EQ(partial.at("rejectedSpans").string_value(), "0");
  // The span's seven values and the resource's service.name.
  EXPECT_EQ(partial.at("errorMessage").string_value(),
            "8 attribute values cut to 4 bytes (--max-attribute-value-bytes)")
      << body;
}

TEST(DecodeLimitsTest, ThePartialSuccessMessageCountsEveryReason) {
  DecodeLimits limits;
  limits.max_attribute_value_bytes = 4;
  limits.max_span_events = 1;
  limits.max_name_bytes = 2;
  ExportTraceServiceRequest req = OneSpan("GET", 2, 10, 3, 0);
  auto* spans = req.mutable_resource_spans(0)->mutable_scope_spans(0);
  for (int i = 0; i < 2; ++i) spans->add_spans()->set_trace_id("bad");
  spans->add_spans()->set_trace_id(std::string(16, '\0'));
  SpanBatch b;
  Rejections r;
  ASSERT_TRUE(DecodeSpans(req.SerializeAsString(), PayloadFormat::kProtobuf, &b, &r, limits).ok());
  ASSERT_EQ(b.rows(), 1u);
  EXPECT_EQ(r.count, 3);
  for (PayloadFormat format : {PayloadFormat::kJson, PayloadFormat::kProtobuf}) {
    std::string body = IngestService::EncodeResponse(Signal::kSpans, format, r);
    if (format == PayloadFormat::kProtobuf) {
      EXPECT_NE(body.find(r.Summary()), std::string::npos);
      continue;
    }
    google::protobuf::Struct s;
    ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(body, &s).ok()) << body;
    const auto& partial = s.fields().at("partialSuccess").struct_value().fields();
    EXPECT_EQ(partial.at("rejectedSpans").string_value(), "3");
    EXPECT_EQ(partial.at("errorMessage").string_value(),
              "3 spans rejected: invalid trace_id (want 16 bytes, not all zero); "
              "3 attribute values cut to 4 bytes (--max-attribute-value-bytes); "
              "2 span events dropped past 1 per span (--max-span-events); "
              "1 name cut to 2 bytes (--max-name-bytes)")
        << body;
  }
}

//! The request of issue #10: one resource whose service.name is 64 KiB and
//! `records` empty log records.
ExportLogsServiceRequest LongServiceName(int records) {
  ExportLogsServiceRequest req;
  auto* rl = req.add_resource_logs();
  AddString(rl->mutable_resource()->mutable_attributes(), "service.name", std::string(64 << 10, 's'));
  auto* sl = rl->add_scope_logs();
  for (int i = 0; i < records; ++i) sl->add_log_records();
  return req;
}

TEST(DecodeLimitsTest, ALongServiceNameIsNotCopiedIntoEveryRow) {
  const std::string body = LongServiceName(2000).SerializeAsString();
  DecodeLimits limits;  // the defaults
  size_t charged = 0;
  limits.charge = [&](size_t more) {
    charged += more;
    return Status::Ok();
  };
  LogBatch b;
  Rejections r;
  ASSERT_TRUE(DecodeLogs(body, PayloadFormat::kProtobuf, 1, &b, &r, limits).ok());
  EXPECT_EQ(b.rows(), 2000u);
  EXPECT_EQ(b.service_name.Get(1999).size(), limits.max_service_name_bytes);
  EXPECT_EQ(b.resources.rows(), 1u);
  // 2000 x 64 KiB = 125 MiB before; now the batch is a few hundred KiB, and
  // all of it was charged.
  EXPECT_LT(b.ByteSize(), 2000 * 512u);
  EXPECT_GE(charged, b.ByteSize());
  EXPECT_LT(charged, body.size() * 16 + kDecodeFixedBytes);
}

TEST(DecodeLimitsTest, ABatchPastTheBudgetStopsDecodingWith413) {
  // 20,000 empty records: about 40 KB on the wire, about 2 MB of batch.
  const std::string body = LongServiceName(20000).SerializeAsString();
  DecodeLimits limits;
  limits.max_decode_bytes = 256 << 10;
  size_t charged = 0;
  limits.charge = [&](size_t more) {
    charged += more;
    return Status::Ok();
  };
  LogBatch b;
  Rejections r;
  Status st = DecodeLogs(body, PayloadFormat::kProtobuf, 1, &b, &r, limits);
  EXPECT_EQ(st.code(), StatusCode::kPayloadTooLarge) << st.ToString();
  EXPECT_NE(st.message().find("smaller requests"), std::string::npos) << st.ToString();
  // Stopped within 64 rows of the budget.
  EXPECT_LE(charged, limits.max_decode_bytes);
  EXPECT_LT(b.rows(), 20000u);
}

TEST(DecodeLimitsTest, AFullAdmissionGateStopsDecodingWithItsStatus) {
  const std::string body = LongServiceName(20000).SerializeAsString();
  DecodeLimits limits;
  limits.charge = [](size_t) { return Status::Unavailable("in-flight bytes budget exhausted"); };
  LogBatch b;
  Rejections r;
  EXPECT_EQ(DecodeLogs(body, PayloadFormat::kProtobuf, 1, &b, &r, limits).code(), StatusCode::kUnavailable);
}

// Protobuf's messages are charged too: an empty log record is 2 bytes on the
// wire and about a hundred in the arena, so a body of them passes the budget
// inside the parser, which stops, frees its arena and returns 413.
TEST(DecodeLimitsTest, TheProtobufArenaIsChargedAndBounded) {
  std::string scope_logs;
  for (int i = 0; i < (1 << 20); ++i) scope_logs += std::string("\x12\x00", 2);  // log_records = 2, empty
  ExportLogsServiceRequest probe;
  // ResourceLogs { scope_logs = 2 } inside the request's resource_logs = 1.
  auto varint = [](size_t v) {
    std::string out;
    while (v >= 0x80) {
      out.push_back(static_cast<char>(v | 0x80));
      v >>= 7;
    }
    out.push_back(static_cast<char>(v));
    return out;
  };
  std::string resource_logs = "\x12" + varint(scope_logs.size()) + scope_logs;
  std::string body = "\x0a" + varint(resource_logs.size()) + resource_logs;
  ASSERT_TRUE(probe.ParseFromString(body));
  ASSERT_EQ(probe.resource_logs(0).scope_logs(0).log_records_size(), 1 << 20);

  DecodeLimits limits;
  limits.max_decode_bytes = 16 * body.size() + kDecodeFixedBytes;  // the server's default for this body
  size_t charged = 0;
  limits.charge = [&](size_t more) {
    charged += more;
    return Status::Ok();
  };
  for (int round = 0; round < 2; ++round) {  // the thread's arena stays usable
    LogBatch b;
    Rejections r;
    Status st = DecodeLogs(body, PayloadFormat::kProtobuf, 1, &b, &r, limits);
    EXPECT_EQ(st.code(), StatusCode::kPayloadTooLarge) << st.ToString();
    EXPECT_EQ(b.rows(), 0u);  // stopped while parsing
    EXPECT_LE(charged, limits.max_decode_bytes);
    charged = 0;
  }
  // A small request still decodes on this thread afterwards.
  LogBatch small;
  Rejections r;
  EXPECT_TRUE(DecodeLogs(LongServiceName(3).SerializeAsString(), PayloadFormat::kProtobuf, 1, &small, &r).ok());
  EXPECT_EQ(small.rows(), 3u);
}

}  // namespace
}  // namespace sightline
