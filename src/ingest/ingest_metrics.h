#pragma once

// Ingest's own counters, exposed at /metrics in Prometheus text format.
// Recorded by the ingest pipeline, whatever the transport; a request's code
// label is the exact HTTP status its outcome maps to (HttpStatusFor). Lock-free
// atomics (fixed label sets), so recording is cheap on every request.

#include <array>
#include <atomic>
#include <cstdint>
#include <string>

#include "common/status.h"
#include "model/batch.h"

namespace sightline {

class IngestMetrics {
 public:
  static constexpr std::array<double, 12> kLatencyBuckets = {0.001, 0.0025, 0.005, 0.01, 0.025, 0.05,
                                                             0.1,   0.25,   0.5,   1,    2.5,   5};

  void RecordRequest(Signal signal, StatusCode outcome, double seconds);
  void AddItems(Signal signal, uint64_t accepted, uint64_t rejected);

  //! Appends the Prometheus exposition of these counters.
  void AppendPrometheus(std::string* out) const;

 private:
  struct Histogram {
    std::array<std::atomic<uint64_t>, kLatencyBuckets.size() + 1> buckets{};
    std::atomic<uint64_t> count{0};
    std::atomic<uint64_t> sum_micros{0};
  };
  // Every HTTP status HttpStatusFor can answer, recorded exactly.
  static constexpr std::array<int, 12> kStatusCodes = {200, 400, 401, 403, 404, 408, 413, 415, 429, 499, 500, 503};
  static size_t StatusIndex(int status);

  std::array<std::atomic<uint64_t>, kSignalCount> accepted_{};
  std::array<std::atomic<uint64_t>, kSignalCount> rejected_{};
  std::array<std::array<std::atomic<uint64_t>, kStatusCodes.size()>, kSignalCount> requests_{};
  std::array<Histogram, kSignalCount> latency_;
};

}  // namespace sightline
