// libFuzzer: OTLP JSON bodies → DecodeSpans / DecodeLogs / DecodeMetrics.
// Every input is decoded as all three requests. Oracles: no crash, leak or
// UB; every batch satisfies the structural invariants (otlp_fuzz_checks.h);
// and, differentially, when the input parses, the same request re-encoded as
// protobuf (hex ids turned back into raw bytes) decodes to an identical batch.

#include <google/protobuf/util/json_util.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "opentelemetry/proto/collector/logs/v1/logs_service.pb.h"
#include "opentelemetry/proto/collector/metrics/v1/metrics_service.pb.h"
#include "opentelemetry/proto/collector/trace/v1/trace_service.pb.h"
#include "otlp/decoder.h"
#include "otlp_fuzz_checks.h"

namespace {

using namespace sightline;
using opentelemetry::proto::collector::logs::v1::ExportLogsServiceRequest;
using opentelemetry::proto::collector::metrics::v1::ExportMetricsServiceRequest;
using opentelemetry::proto::collector::trace::v1::ExportTraceServiceRequest;

constexpr int64_t kReceiveNs = 1700000000000000000;

Status Decode(std::string_view body, PayloadFormat f, SpanBatch* b, Rejections* r, const DecodeLimits& l = {}) {
  return DecodeSpans(body, f, b, r, l);
}
Status Decode(std::string_view body, PayloadFormat f, LogBatch* b, Rejections* r, const DecodeLimits& l = {}) {
  return DecodeLogs(body, f, kReceiveNs, b, r, l);
}
Status Decode(std::string_view body, PayloadFormat f, MetricBatch* b, Rejections* r, const DecodeLimits& l = {}) {
  return DecodeMetrics(body, f, b, r, l);
}

//! The same request as protobuf bytes, or "" when protobuf's JSON parser
//! (with the decoder's options) refuses it.
template <typename Request>
std::string AsProtobuf(std::string_view body) {
  Request req;
  google::protobuf::util::JsonParseOptions options;
  options.ignore_unknown_fields = true;
  if (!google::protobuf::util::JsonStringToMessage(std::string(body), &req, options).ok()) return "";
  fuzz::JsonFormIdsToRaw(&req);
  return req.SerializeAsString();
}

template <typename Batch, typename Request>
void Run(std::string_view body) {
  fuzz::CheckDecodeBudget<Batch>(body, [](std::string_view b, Batch* out, Rejections* r, const DecodeLimits& l) {
    return Decode(b, PayloadFormat::kJson, out, r, l);
  });
  Batch batch;
  batch.project_id = 1;
  Rejections rejected;
  Status st = Decode(body, PayloadFormat::kJson, &batch, &rejected);
  if (!st.ok()) {
    fuzz::Check(st.code() == StatusCode::kInvalidArgument, "decode error is not InvalidArgument", st.ToString());
    return;
  }
  fuzz::CheckInvariants(batch);
  fuzz::CheckRejections(rejected);

  std::string pb = AsProtobuf<Request>(body);
  Batch from_pb;
  from_pb.project_id = 1;
  Rejections pb_rejected;
  Status pb_st = Decode(pb, PayloadFormat::kProtobuf, &from_pb, &pb_rejected);
  // The binary parser has its own nesting limit; only compare what both accept.
  if (!pb_st.ok()) return;
  fuzz::CheckInvariants(from_pb);
  fuzz::CheckSameRejections(pb_rejected, rejected);
  fuzz::CheckSame(from_pb, batch);
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  google::protobuf::SetLogHandler(nullptr);  // invalid UTF-8 is logged per input otherwise
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view body(reinterpret_cast<const char*>(data), size);
  Run<SpanBatch, ExportTraceServiceRequest>(body);
  Run<LogBatch, ExportLogsServiceRequest>(body);
  Run<MetricBatch, ExportMetricsServiceRequest>(body);
  return 0;
}
