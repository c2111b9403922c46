#pragma once

// The query API's own metrics, exposed at /metrics in Prometheus text
// format: calls per operation by their exact HTTP status (errors are the
// non-200 ones, timeouts the 504s) and a latency histogram per operation.
// Operations are QueryService's (a trace's detail is "traces/{id}"), so the
// label set is fixed and small. Thread-safe; one lock per recorded call,
// which is nothing beside a query.

#include <array>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/mutex.h"

namespace sightline {

class QueryMetrics {
 public:
  static constexpr std::array<double, 12> kLatencyBuckets = {0.005, 0.01, 0.025, 0.05, 0.1, 0.25,
                                                             0.5,   1,    2.5,   5,    10,  30};

  QueryMetrics();

  //! One call of `op` (a path Run() serves; others are not recorded) that
  //! was answered with `http_status` after `seconds`, queueing included.
  void Record(std::string_view op, int http_status, double seconds) EXCLUDES(mu_);

  //! Appends sightline_query_requests_total{operation,code} and
  //! sightline_query_request_duration_seconds{operation}.
  void AppendPrometheus(std::string* out) const EXCLUDES(mu_);

 private:
  struct Operation {
    std::array<uint64_t, kLatencyBuckets.size() + 1> buckets{};
    uint64_t count = 0;
    double sum = 0;
    std::map<int, uint64_t> codes;  // exact HTTP status -> calls
  };
  mutable Mutex mu_;
  std::vector<Operation> operations_ GUARDED_BY(mu_);  // by QueryService::OperationIndex
};

}  // namespace sightline
