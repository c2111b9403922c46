#include "ingest/ingest_service.h"

#include <chrono>

#include "common/json_writer.h"

namespace sightline {

IngestService::IngestService(IngestOptions options, Authenticator* auth, AdmissionGate* gate,
                             std::array<SignalWriter*, kSignalCount> writers, SelfMetrics* metrics)
    : options_(options), auth_(auth), gate_(gate), writers_(writers), metrics_(metrics) {}

Result<int64_t> IngestService::Authenticate(std::string_view authorization) {
  return auth_->ProjectForBearer(authorization);
}

Result<DecodedExport> IngestService::Decode(Signal signal, int64_t project_id, PayloadFormat format,
                                            ContentEncoding encoding, std::string_view body,
                                            AdmissionGate::Ticket* ticket) {
  std::string inflated;
  std::string_view payload = body;
  if (encoding != ContentEncoding::kIdentity) {
    SL_RETURN_IF_ERROR(Decompress(encoding, body, options_.max_body_bytes, &inflated));
    // Decompressed bytes plus the batch built from them (about the same size).
    SL_RETURN_IF_ERROR(ticket->Grow(inflated.size() * 2));
    payload = inflated;
  } else {
    if (body.size() > options_.max_body_bytes) {
      return Status::PayloadTooLarge("body exceeds the limit of " + std::to_string(options_.max_body_bytes) + " bytes");
    }
    SL_RETURN_IF_ERROR(ticket->Grow(body.size()));
  }
  DecodedExport out;
  int64_t now_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(
                       std::chrono::system_clock::now().time_since_epoch())
                       .count();
  switch (signal) {
    case Signal::kSpans: {
      auto b = std::make_unique<AnyBatch>(std::in_place_type<SpanBatch>);
      auto& spans = std::get<SpanBatch>(*b);
      spans.project_id = project_id;
      SL_RETURN_IF_ERROR(DecodeSpans(payload, format, &spans, &out.rejected));
      out.rows = spans.rows();
      out.batch = std::move(b);
      break;
    }
    case Signal::kLogs: {
      auto b = std::make_unique<AnyBatch>(std::in_place_type<LogBatch>);
      auto& logs = std::get<LogBatch>(*b);
      logs.project_id = project_id;
      SL_RETURN_IF_ERROR(DecodeLogs(payload, format, now_ns, &logs, &out.rejected));
      out.rows = logs.rows();
      out.batch = std::move(b);
      break;
    }
    case Signal::kMetrics: {
      auto b = std::make_unique<AnyBatch>(std::in_place_type<MetricBatch>);
      auto& metrics = std::get<MetricBatch>(*b);
      metrics.project_id = project_id;
      SL_RETURN_IF_ERROR(DecodeMetrics(payload, format, &metrics, &out.rejected));
      out.rows = metrics.rows();
      out.batch = std::move(b);
      break;
    }
  }
  return out;
}

void IngestService::Submit(Signal signal, std::unique_ptr<AnyBatch> batch, SignalWriter::Done done) {
  writers_[static_cast<int>(signal)]->Submit(std::move(batch), std::move(done));
}

namespace {

void PutVarint(std::string* out, uint64_t v) {
  while (v >= 0x80) {
    out->push_back(static_cast<char>(v | 0x80));
    v >>= 7;
  }
  out->push_back(static_cast<char>(v));
}

void PutTag(std::string* out, int field, int wire_type) { PutVarint(out, static_cast<uint64_t>(field << 3 | wire_type)); }

const char* RejectedField(Signal signal) {
  switch (signal) {
    case Signal::kSpans: return "rejectedSpans";
    case Signal::kLogs: return "rejectedLogRecords";
    case Signal::kMetrics: return "rejectedDataPoints";
  }
  return "rejected";
}

}  // namespace

// Hand-encoded: the OTLP 0.19 .proto files predate partial_success, whose wire
// form is `partial_success = 1 { int64 rejected_<items> = 1; string error_message = 2; }`
// in all three responses.
std::string IngestService::EncodeResponse(Signal signal, PayloadFormat format, const Rejections& rejected) {
  std::string out;
  if (format == PayloadFormat::kJson) {
    if (rejected.count == 0) return "{}";
    JsonWriter w(&out);
    w.BeginObject();
    w.Key("partialSuccess");
    w.BeginObject();
    w.Key(RejectedField(signal));
    w.String(std::to_string(rejected.count));  // int64 as a string, per the proto3 JSON mapping
    w.Key("errorMessage");
    w.String(rejected.message);
    w.EndObject();
    w.EndObject();
    return out;
  }
  if (rejected.count == 0) return out;
  std::string inner;
  PutTag(&inner, 1, 0);
  PutVarint(&inner, static_cast<uint64_t>(rejected.count));
  PutTag(&inner, 2, 2);
  PutVarint(&inner, rejected.message.size());
  inner += rejected.message;
  PutTag(&out, 1, 2);
  PutVarint(&out, inner.size());
  out += inner;
  return out;
}

std::string IngestService::EncodeError(PayloadFormat format, const Status& status) {
  // google.rpc.Status codes, by our StatusCode.
  int rpc_code = 2;  // UNKNOWN
  switch (status.code()) {
    case StatusCode::kInvalidArgument: rpc_code = 3; break;
    case StatusCode::kUnauthenticated: rpc_code = 16; break;
    case StatusCode::kNotFound: rpc_code = 5; break;
    case StatusCode::kPayloadTooLarge: rpc_code = 8; break;
    case StatusCode::kUnsupportedMedia: rpc_code = 3; break;
    case StatusCode::kResourceExhausted: rpc_code = 8; break;
    case StatusCode::kUnavailable: rpc_code = 14; break;
    case StatusCode::kDeadlineExceeded: rpc_code = 4; break;
    case StatusCode::kCancelled: rpc_code = 1; break;
    case StatusCode::kInternal:
    case StatusCode::kIoError: rpc_code = 13; break;
    case StatusCode::kOk: rpc_code = 0; break;
  }
  std::string out;
  if (format == PayloadFormat::kJson) {
    JsonWriter w(&out);
    w.BeginObject();
    w.Key("code");
    w.Int(rpc_code);
    w.Key("message");
    w.String(status.message());
    w.EndObject();
    return out;
  }
  PutTag(&out, 1, 0);
  PutVarint(&out, static_cast<uint64_t>(rpc_code));
  PutTag(&out, 2, 2);
  PutVarint(&out, status.message().size());
  out += status.message();
  return out;
}

}  // namespace sightline
