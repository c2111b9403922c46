// libFuzzer: OTLP protobuf bodies → DecodeSpans / DecodeLogs / DecodeMetrics.
// Every input is decoded as all three requests. Oracles: no crash, leak or
// UB; every batch satisfies the structural invariants (otlp_fuzz_checks.h);
// and, differentially, when the input parses, the same request written out in
// the OTLP JSON mapping (hex ids) decodes to an identical batch.

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

//! The same request in OTLP JSON form, or "" when it has no faithful JSON form.
template <typename Request>
std::string AsOtlpJson(std::string_view body) {
  Request req;
  if (!req.ParseFromArray(body.data(), static_cast<int>(body.size()))) return "";
  if (!fuzz::RawIdsToJsonForm(&req)) return "";
  std::string json;
  if (!google::protobuf::util::MessageToJsonString(req, &json).ok()) return "";
  return json;
}

template <typename Batch, typename Request>
void Run(std::string_view body) {
  fuzz::CheckDecodeBudget<Batch>(body, [](std::string_view b, Batch* out, Rejections* r, const DecodeLimits& l) {
    return Decode(b, PayloadFormat::kProtobuf, out, r, l);
  });
  Batch batch;
  batch.project_id = 1;
  Rejections rejected;
  Status st = Decode(body, PayloadFormat::kProtobuf, &batch, &rejected);
  if (!st.ok()) {
    fuzz::Check(st.code() == StatusCode::kInvalidArgument, "decode error is not InvalidArgument", st.ToString());
    return;
  }
  fuzz::CheckInvariants(batch);
  fuzz::CheckRejections(rejected);

  std::string json = AsOtlpJson<Request>(body);
  if (json.empty()) return;
  Batch from_json;
  from_json.project_id = 1;
  Rejections json_rejected;
  // The JSON parser has its own nesting limit; only compare what both accept.
  if (!Decode(json, PayloadFormat::kJson, &from_json, &json_rejected).ok()) return;
  fuzz::CheckInvariants(from_json);
  fuzz::CheckSameRejections(rejected, json_rejected);
  fuzz::CheckSame(batch, from_json);
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
