#include "model/batch.h"

namespace sightline {

const char* SignalName(Signal s) {
  switch (s) {
    case Signal::kSpans: return "spans";
    case Signal::kLogs: return "logs";
    case Signal::kMetrics: return "metrics";
  }
  return "unknown";
}

size_t BatchRows(const AnyBatch& b) {
  return std::visit([](const auto& x) { return x.rows(); }, b);
}

const char* MetricTypeName(MetricType t) {
  switch (t) {
    case MetricType::kGauge: return "gauge";
    case MetricType::kSum: return "sum";
    case MetricType::kHistogram: return "histogram";
    case MetricType::kExponentialHistogram: return "exponential_histogram";
    case MetricType::kSummary: return "summary";
  }
  return "unknown";
}

size_t SpanBatch::ByteSize() const {
  return VectorBytes(trace_id_high) + VectorBytes(trace_id_low) + VectorBytes(span_id) + VectorBytes(parent_span_id) +
         trace_state.ByteSize() + VectorBytes(flags) + name.ByteSize() + VectorBytes(kind) +
         VectorBytes(start_time_ns) + VectorBytes(end_time_ns) + VectorBytes(status_code) + status_message.ByteSize() +
         service_name.ByteSize() + http_route.ByteSize() + http_method.ByteSize() + VectorBytes(http_status_code) +
         db_system.ByteSize() + exception_type.ByteSize() + exception_message.ByteSize() + exception_group.ByteSize() +
         attributes.ByteSize() + events.ByteSize() + links.ByteSize() + VectorBytes(dropped_attributes_count) +
         VectorBytes(dropped_events_count) + VectorBytes(dropped_links_count) + VectorBytes(resource_id) +
         resources.ByteSize();
}

size_t LogBatch::ByteSize() const {
  return VectorBytes(time_ns) + VectorBytes(observed_time_ns) + VectorBytes(severity_number) +
         severity_text.ByteSize() + body.ByteSize() + VectorBytes(body_type) + VectorBytes(trace_id_high) +
         VectorBytes(trace_id_low) + VectorBytes(span_id) + VectorBytes(flags) + service_name.ByteSize() +
         attributes.ByteSize() + VectorBytes(dropped_attributes_count) + VectorBytes(resource_id) +
         resources.ByteSize() + event_name.ByteSize() + exception_type.ByteSize() + exception_message.ByteSize() +
         exception_group.ByteSize();
}

size_t ResourceTable::ByteSize() const {
  return VectorBytes(resource_id) + resource_attributes.ByteSize() + scope_name.ByteSize() + scope_version.ByteSize() +
         scope_attributes.ByteSize();
}

size_t MetricBatch::ByteSize() const {
  return VectorBytes(series_id) + metric_name.ByteSize() + VectorBytes(metric_type) + unit.ByteSize() +
         description.ByteSize() + VectorBytes(temporality) + VectorBytes(is_monotonic) + service_name.ByteSize() +
         VectorBytes(series_resource) + resources.ByteSize() + attributes.ByteSize() + VectorBytes(point_series_id) +
         VectorBytes(time_ns) + VectorBytes(start_time_ns) + VectorBytes(value) + VectorBytes(int_value) +
         VectorBytes(is_int) + VectorBytes(count) + VectorBytes(sum) + VectorBytes(min) + VectorBytes(max) +
         bucket_counts.ByteSize() + explicit_bounds.ByteSize() + exp_histogram.ByteSize() + quantiles.ByteSize() +
         exemplars.ByteSize() + VectorBytes(flags);
}

}  // namespace sightline
