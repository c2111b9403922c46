#pragma once

// The OTLP ingest pipeline, the same for every transport. A transport (the
// HTTP session today, gRPC next) only moves bytes:
//
//   Admit(headers)   authenticate, check format, encoding and declared size,
//                    take a share of the admission gate (before any body byte)
//   Export(body)     decompress + decode on the decode pool, queue on the
//                    signal's writer, answer once the rows are committed
//   ExportResponse   the answer in the request's format, with a Status that
//                    maps to an HTTP code (HttpStatusFor) or a gRPC code
//                    (GrpcCodeFor), and a retry delay when it is retryable
//
// Every request's outcome is recorded in IngestMetrics here, whichever
// transport carried it.

#include <array>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include <boost/asio/thread_pool.hpp>

#include "auth/authenticator.h"
#include "common/status.h"
#include "ingest/admission_gate.h"
#include "ingest/ingest_metrics.h"
#include "ingest/ingest_readiness.h"
#include "ingest/retry_after.h"
#include "ingest/series_budget.h"
#include "otlp/compression.h"
#include "otlp/decoder.h"
#include "storage/writer.h"

namespace sightline {

struct IngestOptions {
  size_t max_body_bytes = 20u << 20;  // compressed and decompressed
  //! Told to clients refused with a retryable status; grows with the gate's pressure.
  RetryAfterPolicy retry_after;
  int decode_threads = 0;  // 0 = one per core
  //! Texts and lists cut to OpenTelemetry's attribute limits (max_decode_bytes
  //! and charge are set per request).
  DecodeLimits decode;
  //! Decoding a request (its protobuf messages and its batch) may hold at
  //! most this many times its decompressed size, plus kDecodeFixedBytes;
  //! past it, 413 (--max-decode-amplification).
  size_t decode_amplification = 16;
};

//! The fixed part of a request's decode budget: small requests may build
//! small batches whatever their ratio.
inline constexpr size_t kDecodeFixedBytes = 4u << 20;

//! What a transport knows of an export request before its body.
struct ExportHeaders {
  Signal signal = Signal::kSpans;
  std::string_view authorization;          // "Bearer <ingest token>"
  std::string_view content_type;           // selects protobuf or JSON
  std::string_view content_encoding;       // gzip, zstd, identity or ""
  std::optional<uint64_t> content_length;  // nullopt when unknown (chunked)
};

//! The answer to one export request, for any transport.
struct ExportResponse {
  Status status;  // OK, or why the request failed
  PayloadFormat format = PayloadFormat::kJson;
  //! The answer's media type: the request's own (OTLP/HTTP answers in the
  //! request's Content-Type, so application/protobuf is echoed as sent).
  const char* media_type = "application/json";
  //! An Export*ServiceResponse (with partial_success when items were
  //! rejected), or on error a google.rpc.Status (protobuf) / {"code","message"} (JSON).
  std::string body;
  //! > 0: retryable, try again after this long (RetryAfterSeconds of the
  //! gate's pressure, or the readiness's own delay).
  int retry_after_seconds = 0;
  bool ok() const { return status.ok(); }
  const char* content_type() const { return media_type; }
};

//! A request admitted on its headers. Holds its share of the admission gate
//! until destroyed: the transport keeps it until the response is written.
class AdmittedExport {
 public:
  Signal signal() const { return signal_; }
  PayloadFormat format() const { return format_; }

 private:
  friend class IngestService;
  Signal signal_ = Signal::kSpans;
  int64_t project_id_ = 0;
  PayloadFormat format_ = PayloadFormat::kJson;
  const char* media_type_ = "application/json";  // of the request, echoed in its answer
  ContentEncoding encoding_ = ContentEncoding::kIdentity;
  AdmissionGate::Ticket ticket_;
  size_t body_charged_ = 0;  // body bytes the ticket holds
  std::chrono::steady_clock::time_point started_;
};

//! Admit's outcome: an admitted request, or the response that refuses it.
struct Admission {
  std::unique_ptr<AdmittedExport> admitted;  // null when refused
  ExportResponse refusal;
};

//! Thread-safe. Owns the decode pool; does not own the writers, authenticator or gate.
//! Lifecycle: construct, serve, Stop() once every admitted request is done
//! (the gate is idle), before the writers stop.
class IngestService {
 public:
  //! `readiness` (optional, not owned) can refuse every request for a while
  //! (the free-space floor); `series` (optional, not owned) caps each
  //! project's metric series.
  IngestService(IngestOptions options, Authenticator* auth, AdmissionGate* gate,
                std::array<SignalWriter*, kSignalCount> writers, IngestMetrics* metrics,
                IngestReadiness* readiness = nullptr, SeriesBudget* series = nullptr);
  ~IngestService();

  const IngestOptions& options() const { return options_; }

  //! Before the body: authenticate, ask the readiness (503 + its Retry-After
  //! while it refuses), parse the format and encoding, check the declared
  //! length against the body limit, and take admission for it in the
  //! project's share of the gate (nothing yet when the length is unknown).
  Admission Admit(const ExportHeaders& headers);
  //! While the body arrives: `received` body bytes so far. Charges the gate
  //! for what Admit did not reserve (a chunked body, as its chunks arrive);
  //! Unavailable when the gate or the project's share has no room, and the
  //! transport then answers Fail(admitted, status) without reading more.
  Status ChargeBody(AdmittedExport* admitted, size_t received);
  //! Decodes and commits the body on other threads; `done` runs (on a decode
  //! or writer thread) with the response once the rows are committed or the
  //! request failed. `admitted` must stay alive until then.
  void Export(AdmittedExport* admitted, std::string body, std::function<void(ExportResponse)> done);
  //! A request the transport could not complete (its body did not arrive, was
  //! too large or was malformed): the response, in the request's format.
  ExportResponse Fail(const AdmittedExport& admitted, const Status& status);
  //! A request refused by the transport before Admit (e.g. not a POST).
  ExportResponse Refuse(const ExportHeaders& headers, const Status& status);

  //! Waits for the decode pool's work to finish.
  void Stop();

  //! Project id for an `Authorization: Bearer <token>` header value of an
  //! ingest token (a read token is PermissionDenied: 403).
  Result<int64_t> Authenticate(std::string_view authorization);

  //! The media type of the answer to a request of this Content-Type: its
  //! own for protobuf (application/x-protobuf or application/protobuf),
  //! else application/json (also for an unsupported one, whose error is JSON).
  static const char* ReplyMediaType(std::string_view content_type);
  //! Export*ServiceResponse in the request's format (partial_success when items were rejected).
  static std::string EncodeResponse(Signal signal, PayloadFormat format, const Rejections& rejected);
  //! An error body: google.rpc.Status for protobuf, {"code":..,"message":..} for JSON.
  //! `retry_after_seconds` > 0 adds a google.rpc.RetryInfo to the protobuf's
  //! details (what an OTLP/gRPC client reads its retry delay from).
  static std::string EncodeError(PayloadFormat format, const Status& status, int retry_after_seconds = 0);

 private:
  //! A decoded request, ready for its writer.
  struct Decoded {
    std::unique_ptr<AnyBatch> batch;
    size_t rows = 0;
    Rejections rejected;
  };
  //! CPU-bound: decompress + decode. Grows the ticket by the decoded size
  //! first, so an expanding body is refused (503) before it is materialised.
  Result<Decoded> Decode(AdmittedExport* admitted, std::string_view body);
  //! The response for a finished request, recorded in the metrics.
  ExportResponse Finish(Signal signal, PayloadFormat format, const char* media_type,
                        std::chrono::steady_clock::time_point started, Status status, const Rejections& rejected);

  const IngestOptions options_;
  Authenticator* auth_;
  AdmissionGate* gate_;
  std::array<SignalWriter*, kSignalCount> writers_;
  IngestMetrics* metrics_;
  IngestReadiness* readiness_;
  SeriesBudget* series_;  // null: no series cap
  boost::asio::thread_pool decode_pool_;
};

}  // namespace sightline
