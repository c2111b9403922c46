#include "bench/otlp_encoder.h"

#include "bench/otlp_emitter.h"

namespace sightline::bench {
namespace {

// Field numbers are the OTLP .proto files' (opentelemetry/proto/*/v1); names
// are their OTLP/JSON spellings.

template <typename E>
void Attributes(E* e, int field, std::span<const Attribute> attributes) {
  if (attributes.empty()) return;
  e->BeginRepeated(field, "attributes");
  for (const Attribute& a : attributes) {
    e->BeginElement();
    e->String(1, "key", a.key);  // KeyValue.key
    e->BeginMessage(2, "value");
    if (a.is_int) e->OneofInt(3, "intValue", a.int_value);  // AnyValue.int_value
    else e->String(1, "stringValue", a.string_value);       // AnyValue.string_value
    e->EndMessage();
    e->EndMessage();
  }
  e->EndRepeated();
}

//! Opens ResourceX { resource, scopeX: [ { scope, <rows_name>: [ ... } ] }.
template <typename E>
void BeginResourceBlock(E* e, const Resource& resource, const Scope& scope, const char* scope_name,
                        const char* rows_name) {
  e->BeginElement();
  e->BeginMessage(1, "resource");
  Attributes(e, 1, resource.attributes);
  e->EndMessage();
  e->BeginRepeated(2, scope_name);
  e->BeginElement();
  e->BeginMessage(1, "scope");
  e->String(1, "name", scope.name);
  e->String(2, "version", scope.version);
  e->EndMessage();
  e->BeginRepeated(2, rows_name);
}

template <typename E>
void EndResourceBlock(E* e) {
  e->EndRepeated();  // rows
  e->EndMessage();   // scope block
  e->EndRepeated();
  e->EndMessage();  // resource block
}

template <typename E>
void Id(E* e, int field, const char* name, std::span<const uint8_t> id) {
  if (!IsZero(id)) e->Id(field, name, id.data(), id.size());
}

template <typename E>
void Span(E* e, const SpanRow& s) {
  e->BeginElement();
  Id(e, 1, "traceId", s.trace_id);
  Id(e, 2, "spanId", s.span_id);
  Id(e, 4, "parentSpanId", s.parent_span_id);
  e->String(5, "name", s.name);
  e->Uint(6, "kind", static_cast<uint64_t>(s.kind));
  e->Fixed64(7, "startTimeUnixNano", static_cast<uint64_t>(s.start_time_ns));
  e->Fixed64(8, "endTimeUnixNano", static_cast<uint64_t>(s.end_time_ns));
  Attributes(e, 9, s.attributes.view());
  if (s.event) {
    e->BeginRepeated(11, "events");
    e->BeginElement();
    e->Fixed64(1, "timeUnixNano", static_cast<uint64_t>(s.event->time_ns));
    e->String(2, "name", s.event->name);
    Attributes(e, 3, s.event->attributes.view());
    e->EndMessage();
    e->EndRepeated();
  }
  if (s.status_code != 0 || !s.status_message.empty()) {
    e->BeginMessage(15, "status");
    if (!s.status_message.empty()) e->String(2, "message", s.status_message);
    e->Uint(3, "code", static_cast<uint64_t>(s.status_code));
    e->EndMessage();
  }
  e->EndMessage();
}

template <typename E>
void Log(E* e, const LogRow& r) {
  e->BeginElement();
  e->Fixed64(1, "timeUnixNano", static_cast<uint64_t>(r.time_ns));
  e->Fixed64(11, "observedTimeUnixNano", static_cast<uint64_t>(r.observed_time_ns));
  e->Uint(2, "severityNumber", static_cast<uint64_t>(r.severity_number));
  e->String(3, "severityText", r.severity_text);
  e->BeginMessage(5, "body");
  e->String(1, "stringValue", r.body);
  e->EndMessage();
  Attributes(e, 6, r.attributes.view());
  if (r.has_trace) {
    e->Fixed32(8, "flags", r.flags);
    Id(e, 9, "traceId", r.trace_id);
    Id(e, 10, "spanId", r.span_id);
  }
  e->EndMessage();
}

template <typename E>
void Point(E* e, const MetricPoint& p) {
  const MetricDef& def = *p.series->metric;
  e->BeginElement();
  // NumberDataPoint.attributes is field 7, HistogramDataPoint.attributes 9.
  Attributes(e, def.kind == MetricKind::kHistogram ? 9 : 7, p.series->labels);
  if (def.kind != MetricKind::kGauge) e->Fixed64(2, "startTimeUnixNano", static_cast<uint64_t>(p.start_time_ns));
  e->Fixed64(3, "timeUnixNano", static_cast<uint64_t>(p.time_ns));
  if (def.kind == MetricKind::kHistogram) {
    e->Fixed64(4, "count", p.count);
    e->Double(5, "sum", p.sum);
    e->PackedFixed64(6, "bucketCounts", std::span<const uint64_t>(p.bucket_counts.data(), p.bucket_counts.size()));
    e->PackedDouble(7, "explicitBounds", p.explicit_bounds);
    e->Double(11, "min", p.min);
    e->Double(12, "max", p.max);
  } else if (def.is_int) {
    e->SFixed64(6, "asInt", p.int_value);
  } else {
    e->Double(4, "asDouble", p.double_value);
  }
  e->EndMessage();
}

template <typename E>
void Encode(E* e, const SpanRequest& request) {
  e->BeginRoot();
  e->BeginRepeated(1, "resourceSpans");
  const Resource* open = nullptr;
  for (const SpanRow& s : request.rows) {
    if (s.resource != open) {
      if (open != nullptr) EndResourceBlock(e);
      open = s.resource;
      BeginResourceBlock(e, *open, request.scope, "scopeSpans", "spans");
    }
    Span(e, s);
  }
  if (open != nullptr) EndResourceBlock(e);
  e->EndRepeated();
  e->EndRoot();
}

template <typename E>
void Encode(E* e, const LogRequest& request) {
  e->BeginRoot();
  e->BeginRepeated(1, "resourceLogs");
  const Resource* open = nullptr;
  for (const LogRow& r : request.rows) {
    if (r.resource != open) {
      if (open != nullptr) EndResourceBlock(e);
      open = r.resource;
      BeginResourceBlock(e, *open, request.scope, "scopeLogs", "logRecords");
    }
    Log(e, r);
  }
  if (open != nullptr) EndResourceBlock(e);
  e->EndRepeated();
  e->EndRoot();
}

template <typename E>
void EndMetric(E* e, const MetricDef& def) {
  e->EndRepeated();  // data points
  if (def.kind != MetricKind::kGauge) {
    e->Uint(2, "aggregationTemporality", 2);  // CUMULATIVE
    if (def.kind == MetricKind::kSum) e->Bool(3, "isMonotonic", true);
  }
  e->EndMessage();  // gauge / sum / histogram
  e->EndMessage();  // metric
}

template <typename E>
void Encode(E* e, const MetricRequest& request) {
  e->BeginRoot();
  e->BeginRepeated(1, "resourceMetrics");
  const Resource* open_resource = nullptr;
  const MetricDef* open_metric = nullptr;
  for (const MetricPoint& p : request.rows) {
    const Resource* resource = p.series->resource;
    const MetricDef* metric = p.series->metric;
    if (open_metric != nullptr && (metric != open_metric || resource != open_resource)) {
      EndMetric(e, *open_metric);
      open_metric = nullptr;
    }
    if (resource != open_resource) {
      if (open_resource != nullptr) EndResourceBlock(e);
      open_resource = resource;
      BeginResourceBlock(e, *resource, request.scope, "scopeMetrics", "metrics");
    }
    if (open_metric == nullptr) {
      open_metric = metric;
      e->BeginElement();
      e->String(1, "name", metric->name);
      e->String(2, "description", metric->description);
      e->String(3, "unit", metric->unit);
      switch (metric->kind) {
        case MetricKind::kGauge: e->BeginMessage(5, "gauge"); break;
        case MetricKind::kSum: e->BeginMessage(7, "sum"); break;
        case MetricKind::kHistogram: e->BeginMessage(9, "histogram"); break;
      }
      e->BeginRepeated(1, "dataPoints");
    }
    Point(e, p);
  }
  if (open_metric != nullptr) EndMetric(e, *open_metric);
  if (open_resource != nullptr) EndResourceBlock(e);
  e->EndRepeated();
  e->EndRoot();
}

template <typename Request>
std::string EncodeAs(const Request& request, WireFormat format, size_t bytes_per_row) {
  std::string out;
  out.reserve(request.rows.size() * bytes_per_row + 4096);
  if (format == WireFormat::kProtobuf) {
    ProtoEmitter e(&out);
    Encode(&e, request);
  } else {
    JsonEmitter e(&out);
    Encode(&e, request);
  }
  return out;
}

}  // namespace

std::string EncodeOtlp(const SpanRequest& request, WireFormat format) { return EncodeAs(request, format, 400); }
std::string EncodeOtlp(const LogRequest& request, WireFormat format) { return EncodeAs(request, format, 400); }
std::string EncodeOtlp(const MetricRequest& request, WireFormat format) { return EncodeAs(request, format, 120); }

}  // namespace sightline::bench
