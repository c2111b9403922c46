#include "server/grpc_server.h"

#include <grpcpp/alarm.h>
#include <grpcpp/generic/async_generic_service.h>
#include <grpcpp/grpcpp.h>
#include <grpcpp/resource_quota.h>
#include <grpcpp/security/server_credentials.h>
#include <spdlog/spdlog.h>

#include <chrono>
#include <fstream>
#include <sstream>
#include <string_view>
#include <vector>

#include "common/mutex.h"
#include "server/http_server.h"

namespace sightline {

namespace {

// The OTLP services' Export methods, as gRPC names them on the wire.
bool SignalForMethod(std::string_view method, Signal* signal) {
  if (method == "/opentelemetry.proto.collector.trace.v1.TraceService/Export") *signal = Signal::kSpans;
  else if (method == "/opentelemetry.proto.collector.logs.v1.LogsService/Export") *signal = Signal::kLogs;
  else if (method == "/opentelemetry.proto.collector.metrics.v1.MetricsService/Export") *signal = Signal::kMetrics;
  else return false;
  return true;
}

Result<std::string> ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::InvalidArgument("cannot read " + path);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

//! An ingest answer as a gRPC status: the code from GrpcCodeFor, and for a
//! retryable one a google.rpc.Status with RetryInfo in the details.
grpc::Status ToGrpcStatus(const ExportResponse& r) {
  const auto code = static_cast<grpc::StatusCode>(GrpcCodeFor(r.status.code()));
  if (r.retry_after_seconds <= 0) return grpc::Status(code, r.status.message());
  return grpc::Status(code, r.status.message(),
                      IngestService::EncodeError(PayloadFormat::kProtobuf, r.status, r.retry_after_seconds));
}

// One Export call. gRPC owns it from CreateReactor to OnDone. The call is
// admitted on its metadata (the same Admit as an HTTP request's headers),
// then reads its one message, then exports it; it is finished exactly once:
// by a refusal, the message timer, or the export's answer.
class ExportReactor : public grpc::ServerGenericBidiReactor {
 public:
  ExportReactor(IngestService* ingest, grpc::GenericCallbackServerContext* ctx, Signal signal,
                const GrpcServerOptions& options)
      : ingest_(ingest), state_(std::make_shared<State>()) {
    state_->reactor = this;
    ExportHeaders h;
    h.signal = signal;
    std::string authorization;
    auto it = ctx->client_metadata().find("authorization");
    if (it != ctx->client_metadata().end()) authorization.assign(it->second.data(), it->second.size());
    h.authorization = authorization;
    h.content_type = "application/x-protobuf";  // gRPC carries OTLP as protobuf only
    Admission admission = ingest_->Admit(h);
    if (!admission.admitted) {
      FinishOnce(ToGrpcStatus(admission.refusal), nullptr);
      return;
    }
    admitted_ = std::move(admission.admitted);
    // A client that opens a call and never sends its message holds a place
    // in the gate: the timer ends the call.
    const int timeout_ms = options.message_timeout_ms;
    timer_.Set(std::chrono::system_clock::now() + std::chrono::milliseconds(timeout_ms), [state = state_,
                                                                                          timeout_ms](bool fired) {
      if (!fired) return;
      ExportReactor* reactor = nullptr;
      {
        MutexLock lock(&state->mu);
        if (state->message_read || state->finished || state->reactor == nullptr) return;
        state->finished = true;
        reactor = state->reactor;
      }
      reactor->Finish(grpc::Status(grpc::StatusCode::DEADLINE_EXCEEDED,
                                   "request message not received within " + std::to_string(timeout_ms) + " ms"));
    });
    StartRead(&request_);
  }

  void OnReadDone(bool ok) override {
    {
      MutexLock lock(&state_->mu);
      if (state_->finished) return;  // the timer ended the call
      state_->message_read = true;
    }
    if (!ok) {
      FinishOnce(grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "the call ended before its request message"),
                 nullptr);
      return;
    }
    std::string body;
    std::vector<grpc::Slice> slices;
    if (!request_.Dump(&slices).ok()) {
      FinishOnce(grpc::Status(grpc::StatusCode::INTERNAL, "cannot read the request message"), nullptr);
      return;
    }
    size_t size = 0;
    for (const auto& s : slices) size += s.size();
    body.reserve(size);
    for (const auto& s : slices) body.append(reinterpret_cast<const char*>(s.begin()), s.size());
    request_.Clear();
    slices.clear();
    Status charged = ingest_->ChargeBody(admitted_.get(), body.size());
    if (!charged.ok()) {
      Answer(ingest_->Fail(*admitted_, charged));
      return;
    }
    ingest_->Export(admitted_.get(), std::move(body), [this](ExportResponse r) { Answer(r); });
  }

  void OnDone() override {
    {
      MutexLock lock(&state_->mu);
      state_->reactor = nullptr;
    }
    timer_.Cancel();
    delete this;  // releases the admission
  }

 private:
  // What the timer shares with the call, which may be gone when it fires.
  struct State {
    Mutex mu;
    ExportReactor* reactor GUARDED_BY(mu) = nullptr;  // null once done
    bool message_read GUARDED_BY(mu) = false;
    bool finished GUARDED_BY(mu) = false;
  };

  void Answer(const ExportResponse& r) {
    if (!r.ok()) {
      FinishOnce(ToGrpcStatus(r), nullptr);
      return;
    }
    grpc::Slice slice(r.body);
    response_ = grpc::ByteBuffer(&slice, 1);
    FinishOnce(grpc::Status::OK, &response_);
  }

  void FinishOnce(const grpc::Status& status, const grpc::ByteBuffer* response) {
    {
      MutexLock lock(&state_->mu);
      if (state_->finished) return;
      state_->finished = true;
    }
    if (response != nullptr) {
      StartWriteAndFinish(response, grpc::WriteOptions(), status);
    } else {
      Finish(status);
    }
  }

  IngestService* ingest_;
  std::shared_ptr<State> state_;
  std::unique_ptr<AdmittedExport> admitted_;  // held until OnDone
  grpc::ByteBuffer request_;
  grpc::ByteBuffer response_;
  grpc::Alarm timer_;
};

// Answers a call at once with `status` (an unknown method).
class RefuseReactor : public grpc::ServerGenericBidiReactor {
 public:
  explicit RefuseReactor(grpc::Status status) { Finish(status); }
  void OnDone() override { delete this; }
};

}  // namespace

class OtlpGrpcServer::Service : public grpc::CallbackGenericService {
 public:
  Service(IngestService* ingest, const GrpcServerOptions& options) : ingest_(ingest), options_(options) {}

  grpc::ServerGenericBidiReactor* CreateReactor(grpc::GenericCallbackServerContext* ctx) override {
    Signal signal;
    if (!SignalForMethod(ctx->method(), &signal)) {
      return new RefuseReactor(grpc::Status(grpc::StatusCode::UNIMPLEMENTED, "no such method: " + ctx->method()));
    }
    return new ExportReactor(ingest_, ctx, signal, options_);
  }

 private:
  IngestService* ingest_;
  const GrpcServerOptions& options_;
};

OtlpGrpcServer::OtlpGrpcServer(IngestService* ingest, GrpcServerOptions options)
    : ingest_(ingest), options_(std::move(options)), service_(std::make_unique<Service>(ingest_, options_)) {}

OtlpGrpcServer::~OtlpGrpcServer() { Shutdown(0); }

Result<int> OtlpGrpcServer::Start(const std::string& host_port) {
  std::string host;
  int port = 0;
  SL_RETURN_IF_ERROR(ParseHostPort(host_port, &host, &port));
  std::shared_ptr<grpc::ServerCredentials> credentials = grpc::InsecureServerCredentials();
  if (!options_.tls_cert_file.empty()) {
    SL_ASSIGN_OR_RETURN(std::string cert, ReadFile(options_.tls_cert_file));
    SL_ASSIGN_OR_RETURN(std::string key, ReadFile(options_.tls_key_file));
    grpc::SslServerCredentialsOptions ssl;
    ssl.pem_key_cert_pairs.push_back({key, cert});
    credentials = grpc::SslServerCredentials(ssl);
  }
  const std::string address =
      (host.find(':') != std::string::npos ? "[" + host + "]" : host) + ":" + std::to_string(port);
  grpc::ServerBuilder builder;
  int bound = 0;
  builder.AddListeningPort(address, credentials, &bound);
  builder.RegisterCallbackGenericService(service_.get());
  builder.SetMaxReceiveMessageSize(static_cast<int>(options_.max_message_bytes));
  builder.AddChannelArgument(GRPC_ARG_MAX_CONCURRENT_STREAMS, options_.max_concurrent_streams);
  grpc::ResourceQuota quota("sightline-otlp-grpc");
  quota.Resize(options_.max_memory_bytes);
  builder.SetResourceQuota(quota);
  server_ = builder.BuildAndStart();
  if (!server_ || bound == 0) {
    server_.reset();
    return Status::IoError("cannot listen for OTLP/gRPC on " + host_port);
  }
  return bound;
}

void OtlpGrpcServer::Shutdown(int64_t timeout_ms) {
  if (!server_) return;
  server_->Shutdown(std::chrono::system_clock::now() + std::chrono::milliseconds(timeout_ms));
  server_->Wait();
  server_.reset();
}

}  // namespace sightline
