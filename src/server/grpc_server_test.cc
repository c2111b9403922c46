// OTLP/gRPC over loopback: a real gRPC client (the generic stub, raw bytes)
// against OtlpGrpcServer over the real ingest pipeline, state store and
// writers (the in-memory engine's sinks). The status of each failure is the
// one the OTLP specification names, and a retryable one carries RetryInfo.

#include "server/grpc_server.h"

#include <grpcpp/generic/generic_stub.h>
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include <future>
#include <string>
#include <thread>

#include "ingest/testing/ingest_fixture.h"
#include "opentelemetry/proto/collector/trace/v1/trace_service.pb.h"

namespace sightline {
namespace {

namespace otlp_trace = opentelemetry::proto::collector::trace::v1;
constexpr const char* kTraceExport = "/opentelemetry.proto.collector.trace.v1.TraceService/Export";

// Two good spans and one whose trace id is too short (rejected, counted).
std::string SpansRequest(int spans = 2, bool bad_one = true) {
  otlp_trace::ExportTraceServiceRequest req;
  auto* rs = req.add_resource_spans();
  auto* attr = rs->mutable_resource()->add_attributes();
  attr->set_key("service.name");
  attr->mutable_value()->set_string_value("grpc-svc");
  auto* ss = rs->add_scope_spans();
  for (int i = 0; i < spans; ++i) {
    auto* span = ss->add_spans();
    span->set_trace_id(std::string(15, '\x01') + static_cast<char>(i + 1));
    span->set_span_id(std::string(7, '\x02') + static_cast<char>(i + 1));
    span->set_name("GET /grpc");
    span->set_start_time_unix_nano(1700000000000000000ull);
    span->set_end_time_unix_nano(1700000000005000000ull);
  }
  if (bad_one) {
    auto* span = ss->add_spans();
    span->set_trace_id("short");
    span->set_span_id(std::string(8, '\x03'));
    span->set_name("bad");
  }
  return req.SerializeAsString();
}

// The seconds of the RetryInfo in a google.rpc.Status's details, or -1.
int RetryDelaySeconds(const std::string& details) {
  const std::string type = "type.googleapis.com/google.rpc.RetryInfo";
  size_t at = details.find(type);
  if (at == std::string::npos) return -1;
  // After the type url: 0x12 len (Any.value) 0x0a len (retry_delay) 0x08 seconds.
  size_t p = at + type.size();
  if (details.size() < p + 6 || details[p] != 0x12 || details[p + 2] != 0x0a || details[p + 4] != 0x08) return -1;
  return static_cast<unsigned char>(details[p + 5]);
}

struct CallResult {
  grpc::Status status;
  std::string response;
};

class GrpcServerTest : public testing::IngestFixture {
 protected:
  void SetUp() override {
    IngestFixture::SetUp();
    GrpcServerOptions grpc_options;
    grpc_options.max_message_bytes = ingest_->options().max_body_bytes;
    grpc_options.message_timeout_ms = 300;
    server_ = std::make_unique<OtlpGrpcServer>(ingest_.get(), grpc_options);
    auto port = server_->Start("127.0.0.1:0");
    ASSERT_TRUE(port.ok()) << port.status().ToString();
    channel_ = grpc::CreateChannel("127.0.0.1:" + std::to_string(*port), grpc::InsecureChannelCredentials());
  }
  void TearDown() override {
    server_.reset();
    IngestFixture::TearDown();
  }

  CallResult Call(const std::string& body, const std::string& authorization, const char* method = kTraceExport,
                  bool gzip = false) {
    grpc::GenericStub stub(channel_);
    grpc::ClientContext ctx;
    if (!authorization.empty()) ctx.AddMetadata("authorization", authorization);
    if (gzip) ctx.set_compression_algorithm(GRPC_COMPRESS_GZIP);
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
    grpc::Slice slice(body);
    grpc::ByteBuffer request(&slice, 1);
    grpc::ByteBuffer response;
    std::promise<grpc::Status> done;
    stub.UnaryCall(&ctx, method, grpc::StubOptions(), &request, &response,
                   [&done](grpc::Status s) { done.set_value(std::move(s)); });
    CallResult out{done.get_future().get(), {}};
    std::vector<grpc::Slice> slices;
    if (out.status.ok() && response.Dump(&slices).ok()) {
      for (const auto& s : slices) out.response.append(reinterpret_cast<const char*>(s.begin()), s.size());
    }
    return out;
  }

  std::unique_ptr<OtlpGrpcServer> server_;
  std::shared_ptr<grpc::Channel> channel_;
};

TEST_F(GrpcServerTest, AnExportIsStoredAndItsRejectionsComeBackAsPartialSuccess) {
  CallResult r = Call(SpansRequest(), token_);
  ASSERT_TRUE(r.status.ok()) << r.status.error_message();
  otlp_trace::ExportTraceServiceResponse response;
  ASSERT_TRUE(response.ParseFromString(r.response));
  ASSERT_TRUE(response.has_partial_success());
  EXPECT_EQ(response.partial_success().rejected_spans(), 1);
  EXPECT_NE(response.partial_success().error_message().find("trace"), std::string::npos)
      << response.partial_success().error_message();
  EXPECT_EQ(StoredSpans(), 2);

  // gRPC's own gzip is undone before the pipeline sees the message.
  CallResult zipped = Call(SpansRequest(3, false), token_, kTraceExport, /*gzip=*/true);
  ASSERT_TRUE(zipped.status.ok()) << zipped.status.error_message();
  EXPECT_EQ(StoredSpans(), 5);
}

TEST_F(GrpcServerTest, BadCredentialsAndBadMessagesGetTheirOtlpCodes) {
  CallResult none = Call(SpansRequest(), "");
  EXPECT_EQ(none.status.error_code(), grpc::StatusCode::UNAUTHENTICATED) << none.status.error_message();
  CallResult wrong = Call(SpansRequest(), "Bearer sl_not_a_token");
  EXPECT_EQ(wrong.status.error_code(), grpc::StatusCode::UNAUTHENTICATED);
  CallResult reader = Call(SpansRequest(), read_token_);
  EXPECT_EQ(reader.status.error_code(), grpc::StatusCode::PERMISSION_DENIED) << reader.status.error_message();
  CallResult garbage = Call(std::string("\xff\xff\xff\xff not protobuf", 17), token_);
  EXPECT_EQ(garbage.status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_FALSE(garbage.status.error_message().empty());
  CallResult unknown = Call(SpansRequest(), token_, "/opentelemetry.proto.collector.trace.v1.TraceService/Nope");
  EXPECT_EQ(unknown.status.error_code(), grpc::StatusCode::UNIMPLEMENTED);
  // Past the body limit gRPC itself refuses the message.
  CallResult huge = Call(SpansRequest(2000, false), token_);
  EXPECT_EQ(huge.status.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED) << huge.status.error_message();
  EXPECT_EQ(StoredSpans(), 0);
}

TEST_F(GrpcServerTest, OverloadIsUnavailableWithRetryInfo) {
  // Both of the gate's request slots held by HTTP-side admissions.
  ExportHeaders h;
  h.signal = Signal::kSpans;
  h.authorization = token_;
  h.content_type = "application/x-protobuf";
  h.content_length = 100;
  Admission a = ingest_->Admit(h);
  Admission b = ingest_->Admit(h);
  ASSERT_TRUE(a.admitted && b.admitted);
  CallResult r = Call(SpansRequest(), token_);
  EXPECT_EQ(r.status.error_code(), grpc::StatusCode::UNAVAILABLE) << r.status.error_message();
  // Within the fixture's Retry-After policy: 3-30 s, plus up to half again of jitter.
  const int delay = RetryDelaySeconds(r.status.error_details());
  EXPECT_GE(delay, 3);
  EXPECT_LE(delay, 45);
  a.admitted.reset();
  b.admitted.reset();
  EXPECT_TRUE(Call(SpansRequest(), token_).status.ok());
}

TEST_F(GrpcServerTest, ACallThatNeverSendsItsMessageEndsAtTheTimeoutAndFreesItsPlace) {
  grpc::GenericStub stub(channel_);
  grpc::CompletionQueue cq;
  grpc::ClientContext ctx;
  ctx.AddMetadata("authorization", token_);
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
  auto call = stub.PrepareCall(&ctx, kTraceExport, &cq);
  void* tag = nullptr;
  bool ok = false;
  call->StartCall(reinterpret_cast<void*>(1));
  ASSERT_TRUE(cq.Next(&tag, &ok));
  grpc::Status status;
  call->Finish(&status, reinterpret_cast<void*>(2));
  ASSERT_TRUE(cq.Next(&tag, &ok));
  EXPECT_EQ(status.error_code(), grpc::StatusCode::DEADLINE_EXCEEDED) << status.error_message();
  EXPECT_NE(status.error_message().find("not received within 300 ms"), std::string::npos) << status.error_message();
  cq.Shutdown();
  while (cq.Next(&tag, &ok)) {
  }
  // Its admission goes with it (when gRPC ends the call, a moment after the
  // client has its status).
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (gate_->GetStats().inflight_requests != 0 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  EXPECT_EQ(gate_->GetStats().inflight_requests, 0);
  EXPECT_TRUE(Call(SpansRequest(), token_).status.ok());
}

}  // namespace
}  // namespace sightline
