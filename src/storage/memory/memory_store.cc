#include "storage/memory/memory_store.h"

#include <cmath>
#include <cstdint>
#include <limits>
#include <utility>

#include "storage/memory/memory_reader.h"
#include "storage/schema.h"

namespace sightline {
namespace {

using memory::LogRow;
using memory::PointRow;
using memory::ResourceRow;
using memory::RowKey;
using memory::SeriesRow;
using memory::SpanRow;
using memory::Tables;

std::string Text(const StringColumn& c, size_t i) { return std::string(c.Get(i)); }

std::optional<double> DoubleOrNull(double v) {
  if (std::isnan(v)) return std::nullopt;
  return v;
}

std::optional<std::string> TextOrNull(const StringColumn& c, size_t i) {
  if (c.Get(i).empty()) return std::nullopt;
  return Text(c, i);
}

ResourceRow Resource(const ResourceTable& t, size_t i) {
  return {Text(t.resource_attributes, i), Text(t.scope_name, i), Text(t.scope_version, i), Text(t.scope_attributes, i)};
}

// A write accepts exactly what the SQL engines accept: every column has a
// value per row and every text is valid UTF-8.
template <typename Batch>
Status Validate(const Batch& b) {
  return schema::CheckBatch(b).status();
}

void Add(const SpanBatch& b, Tables* out) {
  for (size_t i = 0; i < b.resources.rows(); ++i) {
    out->span_resources.emplace(RowKey{b.project_id, b.resources.resource_id[i]}, Resource(b.resources, i));
  }
  for (size_t r = 0; r < b.rows(); ++r) {
    SpanRow s;
    s.project_id = b.project_id;
    s.trace_id = {b.trace_id_high[r], b.trace_id_low[r]};
    s.span_id = b.span_id[r];
    s.parent_span_id = b.parent_span_id[r];
    s.trace_state = Text(b.trace_state, r);
    s.flags = b.flags[r];
    s.name = Text(b.name, r);
    s.kind = b.kind[r];
    s.start_time_ns = b.start_time_ns[r];
    s.end_time_ns = b.end_time_ns[r];
    s.duration_ns = s.end_time_ns - s.start_time_ns;
    s.status_code = b.status_code[r];
    s.status_message = Text(b.status_message, r);
    s.service_name = Text(b.service_name, r);
    s.http_route = Text(b.http_route, r);
    s.http_method = Text(b.http_method, r);
    s.http_status_code = b.http_status_code[r];
    s.db_system = Text(b.db_system, r);
    s.exception_type = Text(b.exception_type, r);
    s.exception_message = Text(b.exception_message, r);
    s.exception_group = Text(b.exception_group, r);
    s.attributes = Text(b.attributes, r);
    s.events = Text(b.events, r);
    s.links = Text(b.links, r);
    s.dropped_attributes_count = b.dropped_attributes_count[r];
    s.dropped_events_count = b.dropped_events_count[r];
    s.dropped_links_count = b.dropped_links_count[r];
    s.resource_id = b.resource_id[r];
    s.endpoint = s.http_route.empty() ? s.name : s.http_route;
    s.is_entry = s.kind == 2 || s.kind == 5 || s.parent_span_id == 0;
    s.has_exception = !s.exception_type.empty() || !s.exception_message.empty();
    out->spans.push_back(std::move(s));
  }
}

void Add(const LogBatch& b, Tables* out) {
  for (size_t i = 0; i < b.resources.rows(); ++i) {
    out->log_resources.emplace(RowKey{b.project_id, b.resources.resource_id[i]}, Resource(b.resources, i));
  }
  for (size_t r = 0; r < b.rows(); ++r) {
    LogRow l;
    l.project_id = b.project_id;
    l.time_ns = b.time_ns[r];
    l.observed_time_ns = b.observed_time_ns[r];
    l.severity_number = b.severity_number[r];
    l.severity_text = Text(b.severity_text, r);
    l.body = Text(b.body, r);
    l.body_type = b.body_type[r];
    l.trace_id = {b.trace_id_high[r], b.trace_id_low[r]};
    l.span_id = b.span_id[r];
    l.flags = b.flags[r];
    l.service_name = Text(b.service_name, r);
    l.attributes = Text(b.attributes, r);
    l.dropped_attributes_count = b.dropped_attributes_count[r];
    l.resource_id = b.resource_id[r];
    l.event_name = Text(b.event_name, r);
    l.exception_type = Text(b.exception_type, r);
    l.exception_message = Text(b.exception_message, r);
    l.exception_group = Text(b.exception_group, r);
    out->logs.push_back(std::move(l));
  }
}

void Add(const MetricBatch& b, Tables* out) {
  for (size_t i = 0; i < b.resources.rows(); ++i) {
    out->metric_resources.emplace(RowKey{b.project_id, b.resources.resource_id[i]}, Resource(b.resources, i));
  }
  for (size_t i = 0; i < b.series_rows(); ++i) {
    SeriesRow s;
    s.metric_name = Text(b.metric_name, i);
    s.metric_type = static_cast<MetricType>(b.metric_type[i]);
    s.unit = Text(b.unit, i);
    s.description = Text(b.description, i);
    s.temporality = b.temporality[i];
    s.monotonic = b.is_monotonic[i] != 0;
    s.service_name = Text(b.service_name, i);
    s.resource_id = b.resources.resource_id[b.series_resource[i]];
    s.attributes = Text(b.attributes, i);
    out->series.emplace(RowKey{b.project_id, b.series_id[i]}, std::move(s));
  }
  constexpr uint64_t kMaxCount = static_cast<uint64_t>(std::numeric_limits<int64_t>::max());
  for (size_t r = 0; r < b.rows(); ++r) {
    PointRow p;
    p.project_id = b.project_id;
    p.series_id = b.point_series_id[r];
    p.time_ns = b.time_ns[r];
    p.start_time_ns = b.start_time_ns[r];
    p.value = DoubleOrNull(b.value[r]);
    if (b.is_int[r] != 0) p.int_value = b.int_value[r];
    p.count = static_cast<int64_t>(std::min(b.count[r], kMaxCount));
    p.sum = DoubleOrNull(b.sum[r]);
    p.min = DoubleOrNull(b.min[r]);
    p.max = DoubleOrNull(b.max[r]);
    p.bucket_counts = TextOrNull(b.bucket_counts, r);
    p.explicit_bounds = TextOrNull(b.explicit_bounds, r);
    p.exp_histogram = TextOrNull(b.exp_histogram, r);
    p.quantiles = TextOrNull(b.quantiles, r);
    p.exemplars = TextOrNull(b.exemplars, r);
    p.flags = b.flags[r];
    out->points.push_back(std::move(p));
  }
}

//! A sink of one signal. Write() validates every batch before it stages a
//! row, then commits all of them at once: all or nothing.
class MemorySink final : public OneSignalSink<MemorySink> {
 public:
  MemorySink(MemoryStore* store, Signal signal) : OneSignalSink(signal), store_(store) { store_->SinkOpened(); }
  ~MemorySink() override { store_->SinkClosed(); }

  template <typename Batch>
  Status Write(const std::vector<const Batch*>& batches) {
    for (const Batch* b : batches) SL_RETURN_IF_ERROR(Validate(*b));
    Tables staged;
    for (const Batch* b : batches) Add(*b, &staged);
    store_->Commit(std::move(staged));
    return Status::Ok();
  }

 private:
  MemoryStore* const store_;
};

}  // namespace

Result<std::unique_ptr<SignalSink>> MemoryStore::NewSink(Signal signal) {
  return std::unique_ptr<SignalSink>(std::make_unique<MemorySink>(this, signal));
}

void MemoryStore::Commit(Tables&& rows) {
  MutexLock lock(&mu_);
  // Keyed rows: the first one written for a key stays (emplace keeps it).
  for (auto& [key, row] : rows.span_resources) tables_.span_resources.emplace(key, std::move(row));
  for (auto& [key, row] : rows.log_resources) tables_.log_resources.emplace(key, std::move(row));
  for (auto& [key, row] : rows.metric_resources) tables_.metric_resources.emplace(key, std::move(row));
  for (auto& [key, row] : rows.series) tables_.series.emplace(key, std::move(row));
  for (auto& s : rows.spans) tables_.spans.push_back(std::move(s));
  for (auto& l : rows.logs) {
    l.sequence = tables_.next_sequence++;
    tables_.logs.push_back(std::move(l));
  }
  for (auto& p : rows.points) {
    p.sequence = tables_.next_sequence++;
    tables_.points.push_back(std::move(p));
  }
}

StoreStats MemoryStore::Stats() {
  MutexLock lock(&mu_);
  StoreStats s;
  s.rows[static_cast<int>(Signal::kSpans)] = tables_.spans.size();
  s.rows[static_cast<int>(Signal::kLogs)] = tables_.logs.size();
  s.rows[static_cast<int>(Signal::kMetrics)] = tables_.points.size();
  s.metric_series = tables_.series.size();
  return s;
}

namespace {

// The time each signal's rows age by (TelemetryStore, "Retention").
int64_t AgeTime(const SpanRow& s) { return s.start_time_ns; }
int64_t AgeTime(const LogRow& l) { return l.time_ns != 0 ? l.time_ns : l.observed_time_ns; }
int64_t AgeTime(const PointRow& p) { return p.time_ns; }

template <typename Row>
uint64_t EraseBefore(std::vector<Row>* rows, const ProjectSet& projects, int64_t before_ns) {
  size_t before = rows->size();
  std::erase_if(*rows, [&](const Row& r) { return AgeTime(r) < before_ns && projects.Contains(r.project_id); });
  return before - rows->size();
}

template <typename Row>
std::optional<int64_t> Oldest(const std::vector<Row>& rows) {
  std::optional<int64_t> oldest;
  for (const Row& r : rows) {
    if (!oldest || AgeTime(r) < *oldest) oldest = AgeTime(r);
  }
  return oldest;
}

}  // namespace

Result<uint64_t> MemoryStore::DeleteBefore(Signal signal, const ProjectSet& projects, int64_t before_ns) {
  MutexLock lock(&mu_);
  switch (signal) {
    case Signal::kSpans: return EraseBefore(&tables_.spans, projects, before_ns);
    case Signal::kLogs: return EraseBefore(&tables_.logs, projects, before_ns);
    case Signal::kMetrics: return EraseBefore(&tables_.points, projects, before_ns);
  }
  return Status::Internal("unknown signal");
}

Result<std::optional<int64_t>> MemoryStore::OldestTime(Signal signal) {
  MutexLock lock(&mu_);
  switch (signal) {
    case Signal::kSpans: return Oldest(tables_.spans);
    case Signal::kLogs: return Oldest(tables_.logs);
    case Signal::kMetrics: return Oldest(tables_.points);
  }
  return Status::Internal("unknown signal");
}

Status MemoryStore::ForEachSeries(const std::function<void(int64_t project_id, int64_t series_id)>& fn) {
  MutexLock lock(&mu_);
  for (const auto& [key, row] : tables_.series) fn(key.first, key.second);
  return Status::Ok();
}

Result<SqlResult> MemoryStore::ExecuteSql(const std::string&) {
  return Status::InvalidArgument("the memory engine runs no SQL");
}

Status MemoryStore::Close() {
  int sinks = open_sinks_.load();
  if (sinks > 0) return Status::Internal("memory: Close with " + std::to_string(sinks) + " sinks still open");
  return Status::Ok();
}

Result<std::unique_ptr<TelemetryReader>> MemoryStore::AcquireReader(int64_t) { return OpenReader({}); }

Result<std::unique_ptr<TelemetryReader>> MemoryStore::OpenReader(MemoryReaderOptions options) {
  return memory::NewMemoryReader(this, options);
}

Result<std::unique_ptr<TelemetryStore>> OpenMemoryStore(const StoreOptions&) {
  return std::unique_ptr<TelemetryStore>(std::make_unique<MemoryStore>());
}

}  // namespace sightline
