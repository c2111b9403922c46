#pragma once

// OTLP/gRPC: the Export methods of TraceService, LogsService and
// MetricsService on gRPC's callback API, the second transport of the ingest
// pipeline (ingest/ingest_service.h). Like the HTTP session it only moves
// bytes: the `authorization` metadata to Admit, the request message (gRPC
// has already undone its own gzip) to Export, the answer back as the
// response message or as a status. The status code comes from GrpcCodeFor;
// a retryable one (overload, shutdown, the free-space floor) carries a
// google.rpc.RetryInfo in its details, as the OTLP specification asks.
//
// The service is generic (raw bytes, no generated stubs): the request is
// decoded by Sightline's own decoder, with its limits and its charge to the
// admission gate, never by gRPC's protobuf runtime.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "common/status.h"
#include "ingest/ingest_service.h"

namespace grpc {
class Server;
}

namespace sightline {

struct GrpcServerOptions {
  //! The largest request message, after gRPC's decompression (the OTLP body limit).
  size_t max_message_bytes = 20u << 20;
  //! A request message must arrive within this after the call starts (else
  //! DEADLINE_EXCEEDED; the call's admission is released).
  int message_timeout_ms = 30000;
  //! Concurrent calls on one connection (HTTP/2 streams).
  int max_concurrent_streams = 100;
  //! Memory gRPC may hold for all connections' buffers (its resource quota).
  size_t max_memory_bytes = 256u << 20;
  //! TLS when both are set (PEM files), as for the HTTP listeners.
  std::string tls_cert_file;
  std::string tls_key_file;
};

//! Lifecycle: Start() once, then Shutdown() before the ingest service stops.
//! Thread-safe; gRPC runs the calls on its own threads.
class OtlpGrpcServer {
 public:
  OtlpGrpcServer(IngestService* ingest, GrpcServerOptions options);
  ~OtlpGrpcServer();

  //! Binds host:port ("0.0.0.0:4317", "127.0.0.1:0") and starts serving;
  //! returns the bound port.
  Result<int> Start(const std::string& host_port);
  //! Stops accepting calls, waits up to `timeout_ms` for those in flight to
  //! answer, then cancels the rest.
  void Shutdown(int64_t timeout_ms);

 private:
  class Service;
  IngestService* ingest_;
  const GrpcServerOptions options_;
  std::unique_ptr<Service> service_;
  std::unique_ptr<grpc::Server> server_;
};

}  // namespace sightline
