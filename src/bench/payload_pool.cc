#include "bench/payload_pool.h"

#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <thread>

#include "common/mutex.h"

namespace sightline::bench {

namespace {
double Seconds(const timeval& tv) { return static_cast<double>(tv.tv_sec) + static_cast<double>(tv.tv_usec) * 1e-6; }
}  // namespace

double ThreadCpuSeconds() {
  rusage ru{};
  getrusage(RUSAGE_THREAD, &ru);
  return Seconds(ru.ru_utime) + Seconds(ru.ru_stime);
}

double ProcessCpuSeconds() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  return Seconds(ru.ru_utime) + Seconds(ru.ru_stime);
}

PayloadPool::PayloadPool(const LoadGenerator* generator, std::vector<Signal> signals, uint64_t first_payload)
    : generator_(generator), signals_(std::move(signals)), first_payload_(first_payload) {
  if (signals_.empty()) signals_.push_back(Signal::kSpans);
}

PrebuildStats PayloadPool::Prebuild(uint64_t count, int threads, uint64_t max_bytes) {
  PrebuildStats stats;
  const uint64_t begin = payloads_.size();
  if (count <= begin) return stats;
  auto started = std::chrono::steady_clock::now();
  // Size the pool from the first payload of each signal so it stops at the
  // byte budget without holes.
  uint64_t largest = 1;
  for (uint64_t s = 0; s < signals_.size() && begin + s < count; ++s) {
    double cpu0 = ThreadCpuSeconds();
    Payload p = generator_->Build(SignalOf(begin + s), PayloadIndexOf(begin + s));
    stats.cpu_seconds += ThreadCpuSeconds() - cpu0;
    largest = std::max<uint64_t>(largest, p.body.size());
  }
  // +10%: payload sizes vary a little with the random content.
  uint64_t room = max_bytes > bytes_ ? max_bytes - bytes_ : 0;
  uint64_t fit = room / (largest + largest / 10);
  count = std::min(count, begin + fit);
  if (count <= begin) return stats;
  payloads_.resize(count);

  std::atomic<uint64_t> next{begin};
  Mutex mu;
  threads = std::max(1, std::min<int>(threads, static_cast<int>(count - begin)));
  std::vector<std::thread> workers;
  for (int t = 0; t < threads; ++t) {
    workers.emplace_back([&] {
      double cpu0 = ThreadCpuSeconds();
      for (uint64_t i = next.fetch_add(1); i < count; i = next.fetch_add(1)) {
        payloads_[i] = generator_->Build(SignalOf(i), PayloadIndexOf(i));
      }
      double cpu = ThreadCpuSeconds() - cpu0;
      MutexLock lock(&mu);
      stats.cpu_seconds += cpu;
    });
  }
  for (auto& w : workers) w.join();
  for (uint64_t i = begin; i < count; ++i) {
    const Payload& p = payloads_[i];
    stats.items += p.items;
    stats.raw_bytes += p.raw_bytes;
    stats.wire_bytes += p.body.size();
  }
  bytes_ += stats.wire_bytes;
  stats.payloads = count - begin;
  stats.wall_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  return stats;
}

const Payload& PayloadPool::Get(uint64_t request, Payload* scratch, double* build_cpu_seconds) const {
  if (request < payloads_.size()) return payloads_[request];
  double cpu0 = ThreadCpuSeconds();
  *scratch = generator_->Build(SignalOf(request), PayloadIndexOf(request));
  *build_cpu_seconds += ThreadCpuSeconds() - cpu0;
  return *scratch;
}

}  // namespace sightline::bench
