#include "model/batch.h"

#include <unordered_set>

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

size_t PreparedBytes(const AnyBatch& b) {
  if (const LogBatch* logs = std::get_if<LogBatch>(&b)) return logs->prepared ? logs->prepared->ByteSize() : 0;
  if (const SpanBatch* spans = std::get_if<SpanBatch>(&b)) return spans->prepared ? spans->prepared->ByteSize() : 0;
  return 0;
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

namespace {

template <typename T>
void KeepRows(std::vector<T>* v, const std::vector<uint8_t>& keep) {
  size_t out = 0;
  for (size_t i = 0; i < v->size(); ++i) {
    if (keep[i]) (*v)[out++] = (*v)[i];
  }
  v->resize(out);
}

void KeepRows(StringColumn* c, const std::vector<uint8_t>& keep) {
  StringColumn kept;
  for (size_t i = 0; i < c->size(); ++i) {
    if (keep[i]) kept.Append(c->Get(i));
  }
  *c = std::move(kept);
}

}  // namespace

size_t MetricBatch::KeepSeries(const std::vector<uint8_t>& keep) {
  std::unordered_set<int64_t> dropped;
  for (size_t i = 0; i < series_id.size(); ++i) {
    if (!keep[i]) dropped.insert(series_id[i]);
  }
  if (dropped.empty()) return 0;
  KeepRows(&series_id, keep);
  KeepRows(&metric_name, keep);
  KeepRows(&metric_type, keep);
  KeepRows(&unit, keep);
  KeepRows(&description, keep);
  KeepRows(&temporality, keep);
  KeepRows(&is_monotonic, keep);
  KeepRows(&service_name, keep);
  KeepRows(&series_resource, keep);
  KeepRows(&attributes, keep);
  std::vector<uint8_t> keep_point(point_series_id.size());
  for (size_t r = 0; r < point_series_id.size(); ++r) keep_point[r] = !dropped.contains(point_series_id[r]);
  const size_t before = point_series_id.size();
  KeepRows(&point_series_id, keep_point);
  KeepRows(&time_ns, keep_point);
  KeepRows(&start_time_ns, keep_point);
  KeepRows(&value, keep_point);
  KeepRows(&int_value, keep_point);
  KeepRows(&is_int, keep_point);
  KeepRows(&count, keep_point);
  KeepRows(&sum, keep_point);
  KeepRows(&min, keep_point);
  KeepRows(&max, keep_point);
  KeepRows(&bucket_counts, keep_point);
  KeepRows(&explicit_bounds, keep_point);
  KeepRows(&exp_histogram, keep_point);
  KeepRows(&quantiles, keep_point);
  KeepRows(&exemplars, keep_point);
  KeepRows(&flags, keep_point);
  return before - point_series_id.size();
}

}  // namespace sightline
