// The transport-neutral ingest pipeline: Admit -> Export -> ExportResponse,
// over a real state store, real writers and the in-memory engine's sinks.

#include "ingest/ingest_service.h"

#include <gtest/gtest.h>

#include <atomic>
#include <future>
#include <map>
#include <set>

#include "ingest/testing/ingest_fixture.h"

namespace sightline {
namespace {

constexpr const char* kSpansJson =
    R"({"resourceSpans":[{"resource":{"attributes":[{"key":"service.name","value":{"stringValue":"svc"}}]},)"
    R"("scopeSpans":[{"spans":[)"
    R"({"traceId":"0af7651916cd43dd8448eb211c80319c","spanId":"b7ad6b7169203331","name":"GET /a",)"
    R"("kind":2,"startTimeUnixNano":"1700000000000000000","endTimeUnixNano":"1700000000005000000"},)"
    R"({"traceId":"0af7651916cd43dd8448eb211c80319c","spanId":"b7ad6b7169203332","name":"GET /b",)"
    R"("kind":2,"startTimeUnixNano":"1700000000000000000","endTimeUnixNano":"1700000000007000000"},)"
    R"({"traceId":"abcd","spanId":"b7ad6b7169203333","name":"short trace id"})"
    R"(]}]}]})";

using IngestServiceTest = testing::IngestFixture;

TEST_F(IngestServiceTest, CommitsAndAnswersWithPartialSuccess) {
  Admission a = ingest_->Admit(Headers());
  ASSERT_NE(a.admitted, nullptr) << a.refusal.body;
  ExportResponse r = ExportBody(a.admitted.get(), kSpansJson);
  EXPECT_TRUE(r.ok()) << r.status.ToString();
  EXPECT_EQ(HttpStatusFor(r.status.code()), 200);
  EXPECT_EQ(std::string(r.content_type()), "application/json");
  // The two good spans are committed before the answer; the bad id is reported.
  EXPECT_EQ(StoredSpans(), 2);
  EXPECT_NE(r.body.find(R"("rejectedSpans":"1")"), std::string::npos) << r.body;
  EXPECT_EQ(r.retry_after_seconds, 0);
}

// A log sink whose Prepare leaves `claim` bytes on each batch, as an engine's
// prepared work (DuckDB's token set) would hold.
class ClaimingSink : public SignalSink {
 public:
  struct Claim : PreparedForEngine {
    size_t bytes = 0;
    size_t ByteSize() const override { return bytes; }
  };
  ClaimingSink(std::unique_ptr<SignalSink> inner, size_t claim) : inner_(std::move(inner)), claim_(claim) {}
  void Prepare(AnyBatch* batch) const override {
    auto claim = std::make_shared<Claim>();
    claim->bytes = claim_;
    std::get<LogBatch>(*batch).prepared = claim;
  }
  Status WriteLogs(const std::vector<const LogBatch*>& batches) override { return inner_->WriteLogs(batches); }

 private:
  std::unique_ptr<SignalSink> inner_;
  const size_t claim_;
};

// What the engine prepares on the decoder waits in the writer's queue with
// the batch: it is charged to the request as the batch is, so past the gate
// (1 MiB here, another request in flight) the request is refused with 503
// and nothing is written.
TEST_F(IngestServiceTest, WhatTheEnginePreparesIsChargedToTheRequest) {
  constexpr const char* kLogsJson =
      R"({"resourceLogs":[{"scopeLogs":[{"logRecords":[)"
      R"({"timeUnixNano":"1700000000000000000","body":{"stringValue":"disk full"}}]}]}]})";
  for (const size_t claim : {size_t{1} << 10, size_t{2} << 20}) {
    auto inner = store_->NewSink(Signal::kLogs);
    ASSERT_TRUE(inner.ok());
    SignalWriter logs(Signal::kLogs, std::make_unique<ClaimingSink>(std::move(inner.value()), claim), {});
    logs.Start();
    IngestOptions options;
    options.max_body_bytes = 64 * 1024;
    options.decode_threads = 1;
    IngestService ingest(options, auth_.get(), gate_.get(), {writers_[0].get(), &logs, writers_[2].get()}, &metrics_);
    const uint64_t stored = store_->Stats().rows[static_cast<int>(Signal::kLogs)];
    ExportHeaders h = Headers();
    h.signal = Signal::kLogs;
    // A lone request may pass the budget (it could never run otherwise); a
    // second one in flight holds the budget to it.
    Admission bystander = ingest.Admit(h);
    ASSERT_NE(bystander.admitted, nullptr) << bystander.refusal.body;
    Admission a = ingest.Admit(h);
    ASSERT_NE(a.admitted, nullptr) << a.refusal.body;
    std::promise<ExportResponse> done;
    ingest.Export(a.admitted.get(), kLogsJson, [&done](ExportResponse r) { done.set_value(std::move(r)); });
    const ExportResponse r = done.get_future().get();
    const uint64_t now = store_->Stats().rows[static_cast<int>(Signal::kLogs)];
    if (claim < gate_->limits().max_inflight_bytes) {
      EXPECT_TRUE(r.ok()) << r.status.ToString();
      EXPECT_EQ(now, stored + 1);
    } else {
      EXPECT_EQ(HttpStatusFor(r.status.code()), 503) << r.status.ToString();
      EXPECT_EQ(now, stored);
    }
  }
}

TEST_F(IngestServiceTest, AnswersInTheRequestsOwnMediaType) {
  // OTLP/HTTP: the response's Content-Type is the request's.
  struct Case {
    const char* request;
    const char* answer;
  } cases[] = {
      {"application/x-protobuf", "application/x-protobuf"},
      {"application/protobuf", "application/protobuf"},
      {"Application/Protobuf; charset=binary", "application/protobuf"},
      {"application/json", "application/json"},
      {"application/json; charset=utf-8", "application/json"},
  };
  for (const Case& c : cases) {
    Admission a = ingest_->Admit(Headers(c.request));
    ASSERT_NE(a.admitted, nullptr) << c.request;
    const bool json = std::string_view(c.answer) == "application/json";
    ExportResponse r = ExportBody(a.admitted.get(), json ? kSpansJson : "");
    EXPECT_TRUE(r.ok()) << c.request << ": " << r.status.ToString();
    EXPECT_STREQ(r.content_type(), c.answer) << c.request;
    // A refusal before the body answers in it too.
    ExportHeaders stranger = Headers(c.request);
    stranger.authorization = "Bearer wrong";
    EXPECT_STREQ(ingest_->Admit(stranger).refusal.content_type(), c.answer) << c.request;
  }
}

TEST_F(IngestServiceTest, RefusesOnHeadersBeforeAnyBody) {
  ExportHeaders h = Headers("application/x-protobuf");
  h.authorization = "Bearer wrong";
  Admission a = ingest_->Admit(h);
  ASSERT_EQ(a.admitted, nullptr);
  EXPECT_EQ(a.refusal.status.code(), StatusCode::kUnauthenticated);
  EXPECT_EQ(HttpStatusFor(a.refusal.status.code()), 401);
  EXPECT_EQ(GrpcCodeFor(a.refusal.status.code()), 16);
  EXPECT_EQ(std::string(a.refusal.content_type()), "application/x-protobuf");  // in the format the client asked for

  a = ingest_->Admit(Headers("text/plain"));
  ASSERT_EQ(a.admitted, nullptr);
  EXPECT_EQ(HttpStatusFor(a.refusal.status.code()), 415);
  EXPECT_EQ(std::string(a.refusal.content_type()), "application/json");  // unknown format: JSON

  h = Headers();
  h.content_encoding = "br";
  EXPECT_EQ(HttpStatusFor(ingest_->Admit(h).refusal.status.code()), 415);

  h = Headers();
  h.content_length = 64 * 1024 + 1;
  a = ingest_->Admit(h);
  ASSERT_EQ(a.admitted, nullptr);
  EXPECT_EQ(HttpStatusFor(a.refusal.status.code()), 413);
  EXPECT_NE(a.refusal.status.message().find("65537"), std::string::npos) << a.refusal.status.message();
  EXPECT_EQ(StoredSpans(), 0);
}

TEST_F(IngestServiceTest, AReadTokenCannotSend) {
  auto read = MintToken(state_.get(), "default", TokenScope::kRead);
  ASSERT_TRUE(read.ok()) << read.status().ToString();
  const std::string bearer = "Bearer " + read.value();
  ExportHeaders h = Headers("application/x-protobuf");
  h.authorization = bearer;
  Admission a = ingest_->Admit(h);
  ASSERT_EQ(a.admitted, nullptr) << "refused on its headers, before any body is read";
  EXPECT_EQ(a.refusal.status.code(), StatusCode::kPermissionDenied) << a.refusal.status.ToString();
  EXPECT_EQ(HttpStatusFor(a.refusal.status.code()), 403);
  EXPECT_EQ(GrpcCodeFor(a.refusal.status.code()), 7);
  EXPECT_NE(a.refusal.status.message().find("ingest token"), std::string::npos) << a.refusal.status.message();
  EXPECT_EQ(StoredSpans(), 0);
}
TEST_F(IngestServiceTest, OverloadIsRetryableWithItsDelay) {
  // The gate takes two requests at a time; the third is refused before its body.
  Admission first = ingest_->Admit(Headers());
  Admission second = ingest_->Admit(Headers());
  ASSERT_NE(first.admitted, nullptr);
  ASSERT_NE(second.admitted, nullptr);
  Admission third = ingest_->Admit(Headers());
  ASSERT_EQ(third.admitted, nullptr);
  EXPECT_EQ(HttpStatusFor(third.refusal.status.code()), 503);
  EXPECT_EQ(GrpcCodeFor(third.refusal.status.code()), 14);  // UNAVAILABLE: OTLP clients retry
  // One refusal among three (pressure 1/4): 3 + round(27 / 4) s, plus jitter.
  EXPECT_GE(third.refusal.retry_after_seconds, 10);
  EXPECT_LE(third.refusal.retry_after_seconds, 15);
  // Finishing one frees its share.
  EXPECT_TRUE(ExportBody(first.admitted.get(), kSpansJson).ok());
  first.admitted.reset();
  EXPECT_NE(ingest_->Admit(Headers()).admitted, nullptr);
}

TEST_F(IngestServiceTest, RetryAfterGrowsAsTheGateRefusesMore) {
  Admission first = ingest_->Admit(Headers());
  Admission second = ingest_->Admit(Headers());
  ASSERT_NE(first.admitted, nullptr);
  ASSERT_NE(second.admitted, nullptr);
  Admission refused = ingest_->Admit(Headers());
  ASSERT_EQ(refused.admitted, nullptr);
  const int light = refused.refusal.retry_after_seconds;
  EXPECT_LE(light, 3 + 7 + 5) << "pressure 1/4: delay 3 + round(27 / 4), jitter up to half";
  std::set<int> seen;
  int last = 0;
  for (int i = 0; i < 60; ++i) {
    last = ingest_->Admit(Headers()).refusal.retry_after_seconds;
    seen.insert(last);
  }
  EXPECT_GT(gate_->Pressure(), 0.9);
  EXPECT_GE(last, 28) << "nearly every request refused: near the policy's 30 s";
  EXPECT_LE(last, 30 + 15);
  EXPECT_GT(last, light);
  EXPECT_GE(seen.size(), 3u) << "jittered, so throttled clients spread their retries";
}

TEST_F(IngestServiceTest, AChunkedBodyIsChargedAsItArrives) {
  // No Content-Length: admission reserves nothing, so two slow chunked
  // requests hold only what they sent (the gate's budget is 1 MiB).
  Admission first = ingest_->Admit(Headers());
  Admission second = ingest_->Admit(Headers());
  ASSERT_NE(first.admitted, nullptr);
  ASSERT_NE(second.admitted, nullptr);
  EXPECT_EQ(gate_->GetStats().inflight_bytes, 0u);
  ASSERT_TRUE(ingest_->ChargeBody(first.admitted.get(), 1000).ok());
  const size_t after_first_chunk = gate_->GetStats().inflight_bytes;
  EXPECT_GE(after_first_chunk, 1000u);
  EXPECT_LE(after_first_chunk, 64u * 1024);
  ASSERT_TRUE(ingest_->ChargeBody(first.admitted.get(), 1500).ok());  // within what was charged ahead
  EXPECT_EQ(gate_->GetStats().inflight_bytes, after_first_chunk);
  ASSERT_TRUE(ingest_->ChargeBody(first.admitted.get(), 700 * 1024).ok());
  EXPECT_GE(gate_->GetStats().inflight_bytes, 700u * 1024);
  // The second body would take the gate past its budget: refused, retryable.
  Status st = ingest_->ChargeBody(second.admitted.get(), 400 * 1024);
  EXPECT_EQ(HttpStatusFor(st.code()), 503) << st.ToString();
  ExportResponse r = ingest_->Fail(*second.admitted, st);
  EXPECT_GE(r.retry_after_seconds, 3);
  // A declared length is reserved at admission and not charged twice.
  first.admitted.reset();
  second.admitted.reset();
  ExportHeaders h = Headers();
  h.content_length = 5000;
  Admission sized = ingest_->Admit(h);
  ASSERT_NE(sized.admitted, nullptr);
  EXPECT_EQ(gate_->GetStats().inflight_bytes, 5000u);
  ASSERT_TRUE(ingest_->ChargeBody(sized.admitted.get(), 5000).ok());
  EXPECT_EQ(gate_->GetStats().inflight_bytes, 5000u);
}

TEST_F(IngestServiceTest, MalformedBodiesAndTransportFailures) {
  Admission a = ingest_->Admit(Headers());
  ASSERT_NE(a.admitted, nullptr);
  ExportResponse r = ExportBody(a.admitted.get(), "{\"resourceSpans\": [");
  EXPECT_EQ(HttpStatusFor(r.status.code()), 400);
  EXPECT_EQ(GrpcCodeFor(r.status.code()), 3);
  EXPECT_EQ(r.retry_after_seconds, 0);
  EXPECT_NE(r.body.find("\"code\":3"), std::string::npos) << r.body;
  a.admitted.reset();

  a = ingest_->Admit(Headers());
  ASSERT_NE(a.admitted, nullptr);
  r = ingest_->Fail(*a.admitted, Status::PayloadTooLarge("body exceeds the limit"));
  EXPECT_EQ(HttpStatusFor(r.status.code()), 413);
  EXPECT_NE(r.body.find("exceeds the limit"), std::string::npos);
  EXPECT_EQ(StoredSpans(), 0);

  std::string prometheus;
  metrics_.AppendPrometheus(&prometheus);
  EXPECT_NE(prometheus.find(R"(sightline_ingest_requests_total{signal="spans",code="400"} 1)"), std::string::npos)
      << prometheus;
  EXPECT_NE(prometheus.find(R"(sightline_ingest_requests_total{signal="spans",code="413"} 1)"), std::string::npos);
}

//! Refuses while `refuse` is set, as the free-space floor does.
class FakeReadiness final : public IngestReadiness {
 public:
  Status Ready() override {
    return refuse ? Status::Unavailable("not accepting data: free disk space is below the floor") : Status::Ok();
  }
  int retry_after_seconds() const override { return 30; }
  std::atomic<bool> refuse{false};
};

TEST_F(IngestServiceTest, ANotReadyServerRefusesBeforeTheBodyWithItsRetryAfter) {
  FakeReadiness readiness;
  IngestOptions options;
  options.decode_threads = 1;
  options.retry_after = {3, 30};
  IngestService ingest(options, auth_.get(), gate_.get(),
                       std::array<SignalWriter*, kSignalCount>{writers_[0].get(), writers_[1].get(), writers_[2].get()},
                       &metrics_, &readiness);
  readiness.refuse = true;
  Admission a = ingest.Admit(Headers());
  ASSERT_EQ(a.admitted, nullptr);
  EXPECT_EQ(HttpStatusFor(a.refusal.status.code()), 503);
  EXPECT_EQ(GrpcCodeFor(a.refusal.status.code()), 14);
  EXPECT_EQ(a.refusal.retry_after_seconds, 30);
  EXPECT_NE(a.refusal.body.find("below the floor"), std::string::npos) << a.refusal.body;
  EXPECT_EQ(gate_->GetStats().inflight_requests, 0) << "nothing of the gate is taken";
  ExportHeaders stranger = Headers();
  stranger.authorization = "Bearer wrong";
  EXPECT_EQ(HttpStatusFor(ingest.Admit(stranger).refusal.status.code()), 401) << "who is asking comes first";

  readiness.refuse = false;
  a = ingest.Admit(Headers());
  ASSERT_NE(a.admitted, nullptr);
  std::promise<ExportResponse> done;
  ingest.Export(a.admitted.get(), kSpansJson, [&done](ExportResponse r) { done.set_value(std::move(r)); });
  EXPECT_TRUE(done.get_future().get().ok());
  EXPECT_EQ(StoredSpans(), 2);
}

}  // namespace
}  // namespace sightline

namespace sightline {
namespace {

TEST(IngestMetricsTest, EveryOutcomeIsCountedUnderItsExactHttpCode) {
  IngestMetrics metrics;
  for (int c = 0; c <= static_cast<int>(StatusCode::kIoError); ++c) {
    metrics.RecordRequest(Signal::kLogs, StatusCode(c), 0.01);
  }
  std::string out;
  metrics.AppendPrometheus(&out);
  std::map<int, int> want;
  for (int c = 0; c <= static_cast<int>(StatusCode::kIoError); ++c) want[HttpStatusFor(StatusCode(c))]++;
  for (auto [code, n] : want) {
    const std::string line = "sightline_ingest_requests_total{signal=\"logs\",code=\"" + std::to_string(code) + "\"} " +
                             std::to_string(n) + "\n";
    EXPECT_NE(out.find(line), std::string::npos) << line << out;
  }
  EXPECT_EQ(out.find("xx\""), std::string::npos) << "no status classes: " << out;
}

// Gauges "g1".."gN" of one service, one point each, as OTLP/JSON.
std::string GaugesJson(int from, int to) {
  std::string out = R"({"resourceMetrics":[{"resource":{"attributes":[{"key":"service.name","value":)"
                    R"({"stringValue":"svc"}}]},"scopeMetrics":[{"metrics":[)";
  for (int i = from; i <= to; ++i) {
    if (i > from) out += ",";
    out += R"({"name":"g)" + std::to_string(i) +
           R"(","gauge":{"dataPoints":[{"timeUnixNano":"1700000000000000000","asDouble":1.5}]}})";
  }
  return out + "]}]}]}";
}

TEST_F(IngestServiceTest, NewSeriesPastTheProjectsCapAreRefusedAndKnownOnesGoOn) {
  SeriesBudget budget(3);
  IngestOptions options;
  options.decode_threads = 1;
  IngestService ingest(options, auth_.get(), gate_.get(),
                       std::array<SignalWriter*, kSignalCount>{writers_[0].get(), writers_[1].get(), writers_[2].get()},
                       &metrics_, nullptr, &budget);
  auto send = [&](const std::string& body) {
    ExportHeaders h = Headers();
    h.signal = Signal::kMetrics;
    Admission a = ingest.Admit(h);
    EXPECT_NE(a.admitted, nullptr);
    std::promise<ExportResponse> done;
    ingest.Export(a.admitted.get(), body, [&done](ExportResponse r) { done.set_value(std::move(r)); });
    return done.get_future().get();
  };
  auto stored_points = [&] { return static_cast<int64_t>(store_->Stats().rows[2]); };

  ExportResponse first = send(GaugesJson(1, 2));
  ASSERT_TRUE(first.ok()) << first.body;
  EXPECT_EQ(first.body.find("rejected"), std::string::npos) << first.body;
  EXPECT_EQ(stored_points(), 2);

  // g3 fits the cap of 3; g4 and g5 do not: their points are refused and counted.
  ExportResponse second = send(GaugesJson(1, 5));
  ASSERT_TRUE(second.ok()) << second.body;
  EXPECT_NE(second.body.find(R"("rejectedDataPoints":"2")"), std::string::npos) << second.body;
  EXPECT_NE(second.body.find("2 data points rejected: its series is new and the project holds its cap of 3 series "
                             "(--max-series-per-project)"),
            std::string::npos)
      << second.body;
  EXPECT_EQ(stored_points(), 5);  // 2 + g1, g2, g3
  EXPECT_EQ(budget.Count(1), 3u);

  // Known series keep being written; a request of only new ones stores nothing.
  ExportResponse known = send(GaugesJson(1, 3));
  EXPECT_EQ(known.body.find("rejected"), std::string::npos) << known.body;
  ExportResponse only_new = send(GaugesJson(6, 7));
  EXPECT_NE(only_new.body.find(R"("rejectedDataPoints":"2")"), std::string::npos) << only_new.body;
  EXPECT_EQ(stored_points(), 8);
  EXPECT_EQ(store_->Stats().metric_series, 3u);
}

TEST(SeriesBudgetTest, KnownSeriesLoadedAtStartCountAndProjectsHaveTheirOwnCap) {
  SeriesBudget budget(2);
  budget.AddKnown(1, 10);
  budget.AddKnown(1, 11);
  std::vector<uint8_t> keep;
  EXPECT_EQ(budget.Admit(1, {10, 12, 11}, &keep), 1u);
  EXPECT_EQ(keep, (std::vector<uint8_t>{1, 0, 1}));
  EXPECT_EQ(budget.Admit(2, {12, 13, 14}, &keep), 1u);
  EXPECT_EQ(keep, (std::vector<uint8_t>{1, 1, 0}));
  SeriesBudget off(0);
  EXPECT_EQ(off.Admit(1, {1, 2, 3}, &keep), 0u);
  EXPECT_EQ(keep, (std::vector<uint8_t>{1, 1, 1}));
}

}  // namespace
}  // namespace sightline
