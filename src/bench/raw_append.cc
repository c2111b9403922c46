#include "bench/raw_append.h"

#include <chrono>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "otlp/compression.h"
#include "otlp/decoder.h"
#include "storage/telemetry_store.h"

namespace sightline::bench {

namespace {

using Clock = std::chrono::steady_clock;

constexpr size_t kMaxBody = 256u << 20;

template <typename Batch>
Status DecodeInto(Signal signal, PayloadFormat format, std::string_view body, Batch* out) {
  Rejections rejected;
  if constexpr (std::is_same_v<Batch, SpanBatch>) {
    return DecodeSpans(body, format, out, &rejected);
  } else if constexpr (std::is_same_v<Batch, LogBatch>) {
    return DecodeLogs(body, format, 0, out, &rejected);
  } else {
    return DecodeMetrics(body, format, out, &rejected);
  }
}

template <typename Batch>
Status Write(SignalSink* sink, const std::vector<const Batch*>& group) {
  if constexpr (std::is_same_v<Batch, SpanBatch>) {
    return sink->WriteSpans(group);
  } else if constexpr (std::is_same_v<Batch, LogBatch>) {
    return sink->WriteLogs(group);
  } else {
    return sink->WriteMetrics(group);
  }
}

template <typename Batch>
Status AppendSignal(TelemetryStore* store, const RawAppendOptions& options, const PayloadPool& pool, Signal signal,
                    uint64_t requests, RawSignalResult* out) {
  auto sink = store->NewSink(static_cast<sightline::Signal>(static_cast<int>(signal)));
  if (!sink.ok()) return sink.status();
  const PayloadFormat format =
      pool.generator().options().format == WireFormat::kJson ? PayloadFormat::kJson : PayloadFormat::kProtobuf;
  const bool gzip = pool.generator().options().gzip_level > 0;
  uint64_t total = 0;
  for (uint64_t i = 0; i < requests; ++i) total += pool.SignalOf(i) == signal ? 1 : 0;
  uint64_t commits = options.commits[static_cast<int>(signal)];
  if (commits == 0 || commits > total) commits = total;
  std::vector<std::unique_ptr<Batch>> batches;
  std::vector<const Batch*> group;
  Payload scratch;
  double ignored_cpu = 0;
  std::string inflated;

  auto flush = [&]() -> Status {
    if (group.empty()) return Status::Ok();
    auto t0 = Clock::now();
    Status st = Write<Batch>(sink->get(), group);
    out->write_seconds += std::chrono::duration<double>(Clock::now() - t0).count();
    if (!st.ok()) return st;
    out->groups++;
    group.clear();
    batches.clear();
    return Status::Ok();
  };

  uint64_t n = 0;  // batches of this signal so far
  for (uint64_t i = 0; i < requests; ++i) {
    if (pool.SignalOf(i) != signal) continue;
    // Batch n belongs to group n * commits / total: consecutive, equal-sized groups.
    if (!group.empty() && n * commits / total != (n - 1) * commits / total) SL_RETURN_IF_ERROR(flush());
    const Payload& p = pool.Get(i, &scratch, &ignored_cpu);
    auto t0 = Clock::now();
    std::string_view body = p.body;
    if (gzip) {
      SL_RETURN_IF_ERROR(Decompress(ContentEncoding::kGzip, p.body, kMaxBody, &inflated));
      body = inflated;
    }
    auto batch = std::make_unique<Batch>();
    batch->project_id = options.project_id;
    SL_RETURN_IF_ERROR(DecodeInto(signal, format, body, batch.get()));
    out->decode_seconds += std::chrono::duration<double>(Clock::now() - t0).count();
    out->rows += batch->rows();
    out->batches++;
    group.push_back(batch.get());
    batches.push_back(std::move(batch));
    ++n;
  }
  SL_RETURN_IF_ERROR(flush());
  return Status::Ok();
}

}  // namespace

Result<RawAppendResult> RunRawAppend(const RawAppendOptions& options, const PayloadPool& pool, uint64_t requests) {
  RegisterBuiltinStores();
  auto store = StoreRegistry::Instance().Open(options.engine, options.store);
  if (!store.ok()) return store.status();

  RawAppendResult result;
  std::vector<Signal> signals;
  for (Signal s : pool.signals()) {
    bool seen = false;
    for (Signal t : signals) seen = seen || t == s;
    if (!seen) signals.push_back(s);
  }
  std::mutex mu;
  Status first_error;
  std::vector<std::thread> threads;
  for (Signal s : signals) {
    threads.emplace_back([&, s] {
      RawSignalResult r;
      Status st;
      switch (s) {
        case Signal::kSpans: st = AppendSignal<SpanBatch>(store->get(), options, pool, s, requests, &r); break;
        case Signal::kLogs: st = AppendSignal<LogBatch>(store->get(), options, pool, s, requests, &r); break;
        case Signal::kMetrics: st = AppendSignal<MetricBatch>(store->get(), options, pool, s, requests, &r); break;
      }
      std::lock_guard<std::mutex> lock(mu);
      result.signals[static_cast<int>(s)] = r;
      if (!st.ok() && first_error.ok()) first_error = st;
    });
  }
  for (auto& t : threads) t.join();
  auto t0 = Clock::now();
  Status closed = store.value()->Close();
  result.close_seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  if (!first_error.ok()) return first_error;
  if (!closed.ok()) return closed;
  return result;
}

}  // namespace sightline::bench
