#include "query/query_metrics.h"

#include <fmt/format.h>

#include "query/query_service.h"

namespace sightline {

QueryMetrics::QueryMetrics() : operations_(QueryService::OperationCount()) {}

void QueryMetrics::Record(std::string_view op, int http_status, double seconds) {
  const int index = QueryService::OperationIndex(op);
  if (index < 0) return;
  MutexLock lock(&mu_);
  Operation& o = operations_[static_cast<size_t>(index)];
  size_t b = 0;
  while (b < kLatencyBuckets.size() && seconds > kLatencyBuckets[b]) ++b;
  o.buckets[b]++;
  o.count++;
  o.sum += seconds;
  o.codes[http_status]++;
}

void QueryMetrics::AppendPrometheus(std::string* out) const {
  MutexLock lock(&mu_);
  auto& o = *out;
  o += "# HELP sightline_query_requests_total Query API calls by operation and HTTP status (504: deadline).\n";
  o += "# TYPE sightline_query_requests_total counter\n";
  for (size_t i = 0; i < operations_.size(); ++i) {
    const std::string_view name = QueryService::OperationName(i);
    // Every operation has a 200 series from the start, so a rate over it
    // exists before its first call.
    if (!operations_[i].codes.contains(200)) {
      o += fmt::format("sightline_query_requests_total{{operation=\"{}\",code=\"200\"}} 0\n", name);
    }
    for (const auto& [code, n] : operations_[i].codes) {
      o += fmt::format("sightline_query_requests_total{{operation=\"{}\",code=\"{}\"}} {}\n", name, code, n);
    }
  }
  o += "# HELP sightline_query_request_duration_seconds Query API latency by operation, queueing included.\n";
  o += "# TYPE sightline_query_request_duration_seconds histogram\n";
  for (size_t i = 0; i < operations_.size(); ++i) {
    const std::string_view name = QueryService::OperationName(i);
    const Operation& op = operations_[i];
    uint64_t cumulative = 0;
    for (size_t b = 0; b < kLatencyBuckets.size(); ++b) {
      cumulative += op.buckets[b];
      o += fmt::format("sightline_query_request_duration_seconds_bucket{{operation=\"{}\",le=\"{}\"}} {}\n", name,
                       kLatencyBuckets[b], cumulative);
    }
    cumulative += op.buckets[kLatencyBuckets.size()];
    o += fmt::format("sightline_query_request_duration_seconds_bucket{{operation=\"{}\",le=\"+Inf\"}} {}\n", name,
                     cumulative);
    o += fmt::format("sightline_query_request_duration_seconds_sum{{operation=\"{}\"}} {}\n", name, op.sum);
    o += fmt::format("sightline_query_request_duration_seconds_count{{operation=\"{}\"}} {}\n", name, op.count);
  }
}

}  // namespace sightline
