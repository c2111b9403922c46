#include "ingest/ingest_metrics.h"

#include <fmt/format.h>

#include <algorithm>

#include "common/assert.h"

namespace sightline {

size_t IngestMetrics::StatusIndex(int status) {
  for (size_t i = 0; i < kStatusCodes.size(); ++i) {
    if (kStatusCodes[i] == status) return i;
  }
  SL_DCHECK(false && "HttpStatusFor answered a status missing from kStatusCodes");
  return static_cast<size_t>(std::find(kStatusCodes.begin(), kStatusCodes.end(), 500) - kStatusCodes.begin());
}

void IngestMetrics::RecordRequest(Signal signal, StatusCode outcome, double seconds) {
  int s = static_cast<int>(signal);
  requests_[s][StatusIndex(HttpStatusFor(outcome))]++;
  Histogram& h = latency_[s];
  size_t b = 0;
  while (b < kLatencyBuckets.size() && seconds > kLatencyBuckets[b]) ++b;
  h.buckets[b]++;
  h.count++;
  h.sum_micros += static_cast<uint64_t>(seconds * 1e6);
}

void IngestMetrics::AddItems(Signal signal, uint64_t accepted, uint64_t rejected) {
  accepted_[static_cast<int>(signal)] += accepted;
  rejected_[static_cast<int>(signal)] += rejected;
}

void IngestMetrics::AppendPrometheus(std::string* out) const {
  auto& o = *out;
  o += "# HELP sightline_ingest_items_accepted_total Items (spans, log records, metric points) committed.\n";
  o += "# TYPE sightline_ingest_items_accepted_total counter\n";
  for (int s = 0; s < kSignalCount; ++s) {
    o += fmt::format("sightline_ingest_items_accepted_total{{signal=\"{}\"}} {}\n", SignalName(Signal(s)),
                     accepted_[s].load());
  }
  o += "# HELP sightline_ingest_items_rejected_total Items refused (invalid, or their request failed).\n";
  o += "# TYPE sightline_ingest_items_rejected_total counter\n";
  for (int s = 0; s < kSignalCount; ++s) {
    o += fmt::format("sightline_ingest_items_rejected_total{{signal=\"{}\"}} {}\n", SignalName(Signal(s)),
                     rejected_[s].load());
  }
  o += "# HELP sightline_ingest_requests_total OTLP export requests by response status.\n";
  o += "# TYPE sightline_ingest_requests_total counter\n";
  for (int s = 0; s < kSignalCount; ++s) {
    for (size_t i = 0; i < kStatusCodes.size(); ++i) {
      o += fmt::format("sightline_ingest_requests_total{{signal=\"{}\",code=\"{}\"}} {}\n", SignalName(Signal(s)),
                       kStatusCodes[i], requests_[s][i].load());
    }
  }
  o += "# HELP sightline_ingest_request_duration_seconds OTLP export latency, body read to response.\n";
  o += "# TYPE sightline_ingest_request_duration_seconds histogram\n";
  for (int s = 0; s < kSignalCount; ++s) {
    const Histogram& h = latency_[s];
    uint64_t cumulative = 0;
    for (size_t b = 0; b < kLatencyBuckets.size(); ++b) {
      cumulative += h.buckets[b].load();
      o += fmt::format("sightline_ingest_request_duration_seconds_bucket{{signal=\"{}\",le=\"{}\"}} {}\n",
                       SignalName(Signal(s)), kLatencyBuckets[b], cumulative);
    }
    cumulative += h.buckets[kLatencyBuckets.size()].load();
    o += fmt::format("sightline_ingest_request_duration_seconds_bucket{{signal=\"{}\",le=\"+Inf\"}} {}\n",
                     SignalName(Signal(s)), cumulative);
    o += fmt::format("sightline_ingest_request_duration_seconds_sum{{signal=\"{}\"}} {}\n", SignalName(Signal(s)),
                     h.sum_micros.load() / 1e6);
    o += fmt::format("sightline_ingest_request_duration_seconds_count{{signal=\"{}\"}} {}\n", SignalName(Signal(s)),
                     h.count.load());
  }
}

}  // namespace sightline
