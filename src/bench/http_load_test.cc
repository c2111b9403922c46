// RunHttpLoad against a real server that refuses every export: its free-disk
// floor is set above any disk, so each request draws 503 with Retry-After: 3
// (over gRPC, UNAVAILABLE with that RetryInfo). A worker then waits out the
// Retry-After before its next request, as an OTLP exporter does; told to
// ignore it, it sends the next one at once.

#include "bench/http_load.h"

#include <memory>

#include <gtest/gtest.h>

#include "bench/load_generator.h"
#include "bench/payload_pool.h"
#include "common/testing/temp_dir.h"
#include "server/server.h"

namespace sightline::bench {
namespace {

constexpr const char* kToken = "http-load-test-token";

class HttpLoadRetryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ServerOptions options;
    options.data_dir = dir_.str();
    options.storage = "sqlite";
    options.otlp_http = "127.0.0.1:0";
    options.otlp_grpc = "127.0.0.1:0";
    options.listen = "127.0.0.1:0";
    options.ingest_token = kToken;
    options.admin_password = "http-load-test-pw";
    options.min_free_disk_bytes = uint64_t{1} << 60;  // no disk has this: every export is refused
    options.low_disk_retry_after_seconds = 3;
    auto started = Server::Start(options);
    ASSERT_TRUE(started.ok()) << started.status().ToString();
    server_ = std::move(started.value());
  }
  void TearDown() override {
    if (server_) (void)server_->Stop();
  }

  //! `seconds` of load on one connection, ten-span requests.
  HttpLoadResult Load(bool grpc, bool honor_retry_after, double seconds) {
    GeneratorOptions g;
    g.batch = 10;
    LoadGenerator generator(g);
    PayloadPool pool(&generator, {Signal::kSpans});
    pool.Prebuild(64, 1, 1 << 20);
    HttpLoadOptions o;
    o.endpoint = {"127.0.0.1", grpc ? server_->grpc_port() : server_->otlp_port()};
    o.token = kToken;
    o.connections = 1;
    o.duration_s = seconds;
    o.content_type = ContentTypeFor(g.format);
    o.content_encoding = grpc ? "" : ContentEncodingFor(g);
    o.grpc = grpc;
    o.grpc_gzip = grpc;
    o.honor_retry_after = honor_retry_after;
    auto r = RunHttpLoad(o, pool);
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    return r.ok() ? *r : HttpLoadResult{};
  }

  sightline::testing::TempDir dir_;
  std::unique_ptr<Server> server_;
};

const SignalLoadResult& Spans(const HttpLoadResult& r) { return r.signals[static_cast<int>(Signal::kSpans)]; }

TEST_F(HttpLoadRetryTest, AWorkerWaitsOutEachRetryAfter) {
  for (bool grpc : {false, true}) {
    SCOPED_TRACE(grpc ? "OTLP/gRPC" : "OTLP/HTTP");
    HttpLoadResult r = Load(grpc, true, 4);
    const SignalLoadResult& s = Spans(r);
    // Sent at 0 and 3 s. Without the answer's delay the client's own backoff
    // would have sent at 0, 0.5, 1.5 and 3.5 s.
    EXPECT_EQ(s.requests, 2u);
    EXPECT_EQ(s.status_counts.at(503), s.requests);
    EXPECT_EQ(s.items_accepted, 0u);
    // The worker spent the run waiting, and not past its end.
    EXPECT_GE(s.retry_wait_s, 3.5);
    EXPECT_LE(s.retry_wait_s, 4.1);
  }
}

TEST_F(HttpLoadRetryTest, IgnoringRetryAfterSendsAtOnce) {
  for (bool grpc : {false, true}) {
    SCOPED_TRACE(grpc ? "OTLP/gRPC" : "OTLP/HTTP");
    HttpLoadResult r = Load(grpc, false, 1.0);
    const SignalLoadResult& s = Spans(r);
    // Waiting out Retry-After: 3 would allow one request in this second.
    EXPECT_GE(s.requests, 10u);
    EXPECT_EQ(s.status_counts.at(503), s.requests);
    EXPECT_EQ(s.retry_wait_s, 0);
  }
}

}  // namespace
}  // namespace sightline::bench
