#include "ingest/ingest_service.h"

#include <algorithm>
#include <boost/asio/post.hpp>
#include <cctype>
#include <chrono>
#include <thread>

#include "common/json_writer.h"
#include "common/thread_name.h"

namespace sightline {

namespace {

int DecodeThreads(int configured) {
  return configured > 0 ? configured : std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
}

}  // namespace

IngestService::IngestService(IngestOptions options, Authenticator* auth, AdmissionGate* gate,
                             std::array<SignalWriter*, kSignalCount> writers, IngestMetrics* metrics,
                             IngestReadiness* readiness, SeriesBudget* series)
    : options_(options),
      auth_(auth),
      gate_(gate),
      writers_(writers),
      metrics_(metrics),
      readiness_(readiness),
      series_(series),
      decode_pool_(static_cast<size_t>(DecodeThreads(options.decode_threads))) {}

IngestService::~IngestService() { Stop(); }

void IngestService::Stop() { decode_pool_.join(); }

Admission IngestService::Admit(const ExportHeaders& h) {
  auto started = std::chrono::steady_clock::now();
  // Errors before the body is read use JSON unless the client asked for protobuf.
  auto format = ParseContentType(h.content_type);
  PayloadFormat reply_format = format.ok() ? *format : PayloadFormat::kJson;
  const char* media_type = ReplyMediaType(h.content_type);
  auto refuse = [&](const Status& st) {
    return Admission{nullptr, Finish(h.signal, reply_format, media_type, started, st, {})};
  };
  auto project = Authenticate(h.authorization);
  if (!project.ok()) return refuse(project.status());
  if (readiness_ != nullptr) {
    Status ready = readiness_->Ready();
    if (!ready.ok()) {
      Admission refused = refuse(ready);
      refused.refusal.retry_after_seconds = readiness_->retry_after_seconds();
      return refused;
    }
  }
  if (!format.ok()) return refuse(format.status());
  auto encoding = ParseContentEncoding(h.content_encoding);
  if (!encoding.ok()) return refuse(encoding.status());
  const size_t max_body = options_.max_body_bytes;
  if (h.content_length && *h.content_length > max_body) {
    return refuse(Status::PayloadTooLarge("body of " + std::to_string(*h.content_length) +
                                          " bytes exceeds the limit of " + std::to_string(max_body)));
  }
  // A chunked body is charged as it arrives (ChargeBody), so a slow one holds
  // only what it sent, not the body limit.
  const size_t declared = h.content_length ? static_cast<size_t>(*h.content_length) : 0;
  auto ticket = gate_->Admit(declared, *project);
  if (!ticket.ok()) return refuse(ticket.status());
  auto admitted = std::make_unique<AdmittedExport>();
  admitted->signal_ = h.signal;
  admitted->project_id_ = *project;
  admitted->format_ = *format;
  admitted->media_type_ = media_type;
  admitted->encoding_ = *encoding;
  admitted->ticket_ = std::move(ticket.value());
  admitted->body_charged_ = declared;
  admitted->started_ = started;
  return Admission{std::move(admitted), {}};
}

Status IngestService::ChargeBody(AdmittedExport* a, size_t received) {
  if (received <= a->body_charged_) return Status::Ok();
  // Charged ahead in steps, so a body of many small chunks does not take the
  // gate's lock for each.
  constexpr size_t kStep = 64 * 1024;
  const size_t more = (received - a->body_charged_ + kStep - 1) / kStep * kStep;
  SL_RETURN_IF_ERROR(a->ticket_.Grow(more));
  a->body_charged_ += more;
  return Status::Ok();
}

void IngestService::Export(AdmittedExport* a, std::string body, std::function<void(ExportResponse)> done) {
  boost::asio::post(decode_pool_, [this, a, body = std::move(body), done = std::move(done)]() mutable {
    NameThisThread("sl-decode");
    auto decoded = Decode(a, body);
    body.clear();
    body.shrink_to_fit();
    if (!decoded.ok()) {
      done(Finish(a->signal_, a->format_, a->media_type_, a->started_, decoded.status(), {}));
      return;
    }
    Decoded d = std::move(decoded.value());
    if (d.rows == 0) {
      metrics_->AddItems(a->signal_, 0, d.rejected.count);
      done(Finish(a->signal_, a->format_, a->media_type_, a->started_, Status::Ok(), d.rejected));
      return;
    }
    SignalWriter* writer = writers_[static_cast<int>(a->signal_)];
    // The engine's share of the writer's work, done here, in parallel, and
    // charged to the request as its batch is (503 when the gate is full).
    writer->Prepare(d.batch.get());
    if (Status charged = a->ticket_.Grow(PreparedBytes(*d.batch)); !charged.ok()) {
      done(Finish(a->signal_, a->format_, a->media_type_, a->started_, charged, {}));
      return;
    }
    writer->Submit(std::move(d.batch),
                   [this, a, rows = d.rows, rejected = std::move(d.rejected), done](Status committed) {
                     if (committed.ok()) {
                       metrics_->AddItems(a->signal_, rows, rejected.count);
                     } else {
                       metrics_->AddItems(a->signal_, 0, rows + rejected.count);
                     }
                     done(Finish(a->signal_, a->format_, a->media_type_, a->started_, std::move(committed), rejected));
                   });
  });
}

ExportResponse IngestService::Fail(const AdmittedExport& a, const Status& status) {
  return Finish(a.signal_, a.format_, a.media_type_, a.started_, status, {});
}

ExportResponse IngestService::Refuse(const ExportHeaders& h, const Status& status) {
  auto format = ParseContentType(h.content_type);
  return Finish(h.signal, format.ok() ? *format : PayloadFormat::kJson, ReplyMediaType(h.content_type),
                std::chrono::steady_clock::now(), status, {});
}

ExportResponse IngestService::Finish(Signal signal, PayloadFormat format, const char* media_type,
                                     std::chrono::steady_clock::time_point started, Status status,
                                     const Rejections& rejected) {
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  metrics_->RecordRequest(signal, status.code(), secs);
  ExportResponse r;
  r.format = format;
  r.media_type = media_type;
  r.body = status.ok() ? EncodeResponse(signal, format, rejected) : EncodeError(format, status);
  if (status.retryable()) r.retry_after_seconds = RetryAfterSeconds(options_.retry_after, gate_->Pressure());
  r.status = std::move(status);
  return r;
}

const char* IngestService::ReplyMediaType(std::string_view content_type) {
  auto format = ParseContentType(content_type);
  if (!format.ok() || *format == PayloadFormat::kJson) return "application/json";
  std::string_view media = content_type.substr(0, content_type.find(';'));
  while (!media.empty() && media.back() == ' ') media.remove_suffix(1);
  constexpr std::string_view kShort = "application/protobuf";
  const bool short_name = media.size() == kShort.size() &&
                          std::equal(media.begin(), media.end(), kShort.begin(),
                                     [](char a, char b) { return std::tolower(static_cast<unsigned char>(a)) == b; });
  return short_name ? "application/protobuf" : "application/x-protobuf";
}

Result<int64_t> IngestService::Authenticate(std::string_view authorization) {
  return auth_->ProjectForBearer(authorization, TokenScope::kIngest);
}

Result<IngestService::Decoded> IngestService::Decode(AdmittedExport* a, std::string_view body) {
  std::string inflated;
  std::string_view payload = body;
  if (a->encoding_ != ContentEncoding::kIdentity) {
    SL_RETURN_IF_ERROR(Decompress(a->encoding_, body, options_.max_body_bytes, &inflated));
    SL_RETURN_IF_ERROR(a->ticket_.Grow(inflated.size()));
    payload = inflated;
  } else if (body.size() > options_.max_body_bytes) {
    return Status::PayloadTooLarge("body exceeds the limit of " + std::to_string(options_.max_body_bytes) + " bytes");
  }
  // What decoding builds is charged to the ticket as it grows (503 when the
  // gate is full) and bounded by the body's size (413 past it).
  DecodeLimits limits = options_.decode;
  limits.max_decode_bytes = options_.decode_amplification * payload.size() + kDecodeFixedBytes;
  limits.charge = [a](size_t more) { return a->ticket_.Grow(more); };
  Decoded out;
  int64_t now_ns =
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch()).count();
  const PayloadFormat format = a->format_;
  switch (a->signal_) {
    case Signal::kSpans: {
      auto b = std::make_unique<AnyBatch>(std::in_place_type<SpanBatch>);
      auto& spans = std::get<SpanBatch>(*b);
      spans.project_id = a->project_id_;
      SL_RETURN_IF_ERROR(DecodeSpans(payload, format, &spans, &out.rejected, limits));
      out.rows = spans.rows();
      out.batch = std::move(b);
      break;
    }
    case Signal::kLogs: {
      auto b = std::make_unique<AnyBatch>(std::in_place_type<LogBatch>);
      auto& logs = std::get<LogBatch>(*b);
      logs.project_id = a->project_id_;
      SL_RETURN_IF_ERROR(DecodeLogs(payload, format, now_ns, &logs, &out.rejected, limits));
      out.rows = logs.rows();
      out.batch = std::move(b);
      break;
    }
    case Signal::kMetrics: {
      auto b = std::make_unique<AnyBatch>(std::in_place_type<MetricBatch>);
      auto& metrics = std::get<MetricBatch>(*b);
      metrics.project_id = a->project_id_;
      SL_RETURN_IF_ERROR(DecodeMetrics(payload, format, &metrics, &out.rejected, limits));
      if (series_ != nullptr) {
        std::vector<uint8_t> keep;
        if (series_->Admit(metrics.project_id, metrics.series_id, &keep) > 0) {
          out.rejected.RejectMany("data point",
                                  "its series is new and the project holds its cap of " +
                                      std::to_string(series_->max_per_project()) + " series (--max-series-per-project)",
                                  static_cast<int64_t>(metrics.KeepSeries(keep)));
        }
      }
      out.rows = metrics.rows();
      out.batch = std::move(b);
      break;
    }
  }
  return out;
}

namespace {

void PutVarint(std::string* out, uint64_t v) {
  while (v >= 0x80) {
    out->push_back(static_cast<char>(v | 0x80));
    v >>= 7;
  }
  out->push_back(static_cast<char>(v));
}

void PutTag(std::string* out, int field, int wire_type) {
  PutVarint(out, static_cast<uint64_t>(field << 3 | wire_type));
}

const char* RejectedField(Signal signal) {
  switch (signal) {
    case Signal::kSpans: return "rejectedSpans";
    case Signal::kLogs: return "rejectedLogRecords";
    case Signal::kMetrics: return "rejectedDataPoints";
  }
  return "rejected";
}

}  // namespace

// Hand-encoded, as the one shape of all three responses
// (`partial_success = 1 { int64 rejected_<items> = 1; string error_message = 2; }`),
// without building a message; decoder_test.cc parses it back with the
// generated Export*ServiceResponse classes.
std::string IngestService::EncodeResponse(Signal signal, PayloadFormat format, const Rejections& rejected) {
  std::string out;
  if (rejected.count == 0 && rejected.truncated == 0) return format == PayloadFormat::kJson ? "{}" : out;
  // Cut values are no rejection (the items were kept): OTLP reports them as
  // a partial success with a message and rejected_<items> 0.
  const std::string message = rejected.Summary();
  if (format == PayloadFormat::kJson) {
    JsonWriter w(&out);
    w.BeginObject();
    w.Key("partialSuccess");
    w.BeginObject();
    w.Key(RejectedField(signal));
    w.String(std::to_string(rejected.count));  // int64 as a string, per the proto3 JSON mapping
    w.Key("errorMessage");
    w.String(message);
    w.EndObject();
    w.EndObject();
    return out;
  }
  std::string inner;
  PutTag(&inner, 1, 0);
  PutVarint(&inner, static_cast<uint64_t>(rejected.count));
  PutTag(&inner, 2, 2);
  PutVarint(&inner, message.size());
  inner += message;
  PutTag(&out, 1, 2);
  PutVarint(&out, inner.size());
  out += inner;
  return out;
}

std::string IngestService::EncodeError(PayloadFormat format, const Status& status, int retry_after_seconds) {
  const int rpc_code = GrpcCodeFor(status.code());
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
  if (retry_after_seconds > 0) {
    // details: Any{type_url, value: RetryInfo{retry_delay: Duration{seconds}}}
    std::string duration;
    PutTag(&duration, 1, 0);
    PutVarint(&duration, static_cast<uint64_t>(retry_after_seconds));
    std::string retry_info;
    PutTag(&retry_info, 1, 2);
    PutVarint(&retry_info, duration.size());
    retry_info += duration;
    constexpr std::string_view kTypeUrl = "type.googleapis.com/google.rpc.RetryInfo";
    std::string any;
    PutTag(&any, 1, 2);
    PutVarint(&any, kTypeUrl.size());
    any += kTypeUrl;
    PutTag(&any, 2, 2);
    PutVarint(&any, retry_info.size());
    any += retry_info;
    PutTag(&out, 3, 2);
    PutVarint(&out, any.size());
    out += any;
  }
  return out;
}

}  // namespace sightline
