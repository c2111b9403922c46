#pragma once

// The transport-independent half of OTLP ingest: authenticate, decompress and
// decode into a columnar batch, hand the batch to its signal's writer, and
// encode OTLP responses. The HTTP server (and later gRPC) drives these steps
// and owns the waiting; see server/http_server.cc for the order.

#include <array>
#include <memory>
#include <string>
#include <string_view>

#include "auth/authenticator.h"
#include "common/status.h"
#include "ingest/admission_gate.h"
#include "otlp/compression.h"
#include "otlp/decoder.h"
#include "server/self_metrics.h"
#include "storage/writer.h"

namespace sightline {

struct IngestOptions {
  size_t max_body_bytes = 20u << 20;  // compressed and decompressed
};

//! A decoded request, ready for its writer.
struct DecodedExport {
  std::unique_ptr<AnyBatch> batch;
  size_t rows = 0;
  Rejections rejected;
};

//! Thread-safe. Does not own the writers, authenticator or gate.
class IngestService {
 public:
  IngestService(IngestOptions options, Authenticator* auth, AdmissionGate* gate,
                std::array<SignalWriter*, kSignalCount> writers, SelfMetrics* metrics);

  const IngestOptions& options() const { return options_; }
  AdmissionGate* gate() { return gate_; }
  SelfMetrics* metrics() { return metrics_; }

  //! Project id for an `Authorization: Bearer <token>` header value.
  Result<int64_t> Authenticate(std::string_view authorization);

  //! CPU-bound: decompress + decode. Grows the ticket by the decoded size
  //! first, so an expanding body is refused (503) before it is materialised.
  Result<DecodedExport> Decode(Signal signal, int64_t project_id, PayloadFormat format, ContentEncoding encoding,
                               std::string_view body, AdmissionGate::Ticket* ticket);

  //! Queues the batch; `done` runs (on a writer thread) once it is committed or failed.
  void Submit(Signal signal, std::unique_ptr<AnyBatch> batch, SignalWriter::Done done);

  //! Export*ServiceResponse in the request's format (partial_success when items were rejected).
  static std::string EncodeResponse(Signal signal, PayloadFormat format, const Rejections& rejected);
  //! An error body: google.rpc.Status for protobuf, {"code":..,"message":..} for JSON.
  static std::string EncodeError(PayloadFormat format, const Status& status);

 private:
  const IngestOptions options_;
  Authenticator* auth_;
  AdmissionGate* gate_;
  std::array<SignalWriter*, kSignalCount> writers_;
  SelfMetrics* metrics_;
};

}  // namespace sightline
