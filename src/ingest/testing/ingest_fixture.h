#pragma once

// The ingest pipeline over real parts, for the tests of the pipeline and its
// transports: a real state store (an ingest and a read token of project
// "default"), the in-memory engine's sinks behind real writers, an admission
// gate of 1 MiB and 2 requests, and an IngestService (64 KiB bodies, one
// decode thread, Retry-After 3-30 s).

#include <gtest/gtest.h>

#include <array>
#include <future>
#include <memory>
#include <string>
#include <string_view>

#include "auth/tokens.h"
#include "common/testing/temp_dir.h"
#include "ingest/ingest_service.h"
#include "storage/memory/memory_store.h"

namespace sightline::testing {

class IngestFixture : public ::testing::Test {
 protected:
  void SetUp() override {
    auto state = OpenStateStore(dir_.str());
    ASSERT_TRUE(state.ok()) << state.status().ToString();
    state_ = std::move(state.value());
    auto token = MintToken(state_.get(), "default");
    ASSERT_TRUE(token.ok()) << token.status().ToString();
    token_ = "Bearer " + token.value();
    auto read = MintToken(state_.get(), "default", TokenScope::kRead);
    ASSERT_TRUE(read.ok()) << read.status().ToString();
    read_token_ = "Bearer " + read.value();
    auth_ = std::make_unique<Authenticator>(AuthOptions{}, state_.get());
    auto store = OpenMemoryStore(StoreOptions{});
    ASSERT_TRUE(store.ok());
    store_ = std::move(store.value());
    for (int s = 0; s < kSignalCount; ++s) {
      auto sink = store_->NewSink(Signal(s));
      ASSERT_TRUE(sink.ok());
      writers_[s] = std::make_unique<SignalWriter>(Signal(s), std::move(sink.value()), SignalWriter::Options{});
      writers_[s]->Start();
    }
    gate_ = std::make_unique<AdmissionGate>(AdmissionGate::Limits{1u << 20, 2});
    IngestOptions options;
    options.max_body_bytes = 64 * 1024;
    options.decode_threads = 1;
    options.retry_after = {3, 30};
    ingest_ = std::make_unique<IngestService>(
        options, auth_.get(), gate_.get(),
        std::array<SignalWriter*, kSignalCount>{writers_[0].get(), writers_[1].get(), writers_[2].get()}, &metrics_);
  }
  void TearDown() override {
    ingest_.reset();
    for (auto& w : writers_) w.reset();
    store_.reset();
    auth_.reset();
    state_.reset();
  }

  ExportHeaders Headers(std::string_view type = "application/json") {
    ExportHeaders h;
    h.signal = Signal::kSpans;
    h.authorization = token_;
    h.content_type = type;
    return h;
  }

  ExportResponse ExportBody(AdmittedExport* admitted, std::string body) {
    std::promise<ExportResponse> done;
    ingest_->Export(admitted, std::move(body), [&done](ExportResponse r) { done.set_value(std::move(r)); });
    return done.get_future().get();
  }

  int64_t StoredSpans() { return static_cast<int64_t>(store_->Stats().rows[0]); }

  ::sightline::testing::TempDir dir_{"sightline-ingest-test"};
  std::unique_ptr<StateStore> state_;
  std::string token_;       // "Bearer <ingest token>" of project "default"
  std::string read_token_;  // "Bearer <read token>" of project "default"
  std::unique_ptr<Authenticator> auth_;
  std::unique_ptr<TelemetryStore> store_;
  std::array<std::unique_ptr<SignalWriter>, kSignalCount> writers_;
  std::unique_ptr<AdmissionGate> gate_;
  IngestMetrics metrics_;
  std::unique_ptr<IngestService> ingest_;
};

}  // namespace sightline::testing
