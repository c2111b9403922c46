#include "query/query_service.h"

#include <cmath>
#include <iterator>

#include "common/hex.h"
#include "query/operations.h"

namespace sightline {

namespace {

//! Every operation of docs/API.md by its path under /api/v1/.
struct OperationEntry {
  std::string_view name;
  api::Operation run;
};
constexpr OperationEntry kOperations[] = {
    {"services", api::Services},
    {"endpoints", api::Endpoints},
    {"endpoints/series", api::EndpointSeries},
    {"traces", api::Traces},
    {"traces/durations", api::TraceDurations},
    {"traces/attributes", api::TraceAttributes},
    {"exceptions", api::Exceptions},
    {"exceptions/spans", api::ExceptionSpans},
    {"service_map", api::ServiceMap},
    {"logs", api::Logs},
    {"logs/volume", api::LogVolume},
    {"logs/facets", api::LogFacetCounts},
    {"services/series", api::ServiceSeries},
    {"metrics", api::MetricList},
    {"metrics/labels", api::MetricLabels},
    {"metrics/series", api::MetricSeries},
};
//! traces/{id}
constexpr std::string_view kTracePrefix = "traces/";

bool IsTracePath(std::string_view op) {
  return op.starts_with(kTracePrefix) && op.size() > kTracePrefix.size() &&
         op.find('/', kTracePrefix.size()) == std::string_view::npos;
}

}  // namespace

bool QueryService::Knows(std::string_view op) { return OperationIndex(op) >= 0; }

size_t QueryService::OperationCount() { return std::size(kOperations) + 1; }

std::string_view QueryService::OperationName(size_t index) {
  return index < std::size(kOperations) ? kOperations[index].name : "traces/{id}";
}

int QueryService::OperationIndex(std::string_view op) {
  for (size_t i = 0; i < std::size(kOperations); ++i) {
    if (kOperations[i].name == op) return static_cast<int>(i);
  }
  return IsTracePath(op) ? static_cast<int>(std::size(kOperations)) : -1;
}

Result<std::string> QueryService::Run(std::string_view op, const ApiParams& params, int64_t project_id,
                                      TelemetryReader* reader) const {
  // The named operations first: traces/durations is not a trace id.
  for (const auto& e : kOperations) {
    if (e.name == op) return e.run(api::Call{project_id, params, *reader, limits_});
  }
  if (IsTracePath(op)) {
    return api::TraceDetail(api::Call{project_id, params, *reader, limits_, op.substr(kTracePrefix.size())});
  }
  return Status::NotFound("no such query: " + std::string(op));
}

namespace api {

Status CheckInterrupted(const Call& call) {
  if (call.reader.interrupted()) return Status::Cancelled("the query was interrupted");
  return Status::Ok();
}

void WriteNumberOrNull(JsonWriter* w, double v) {
  if (std::isfinite(v)) w->Double(v);
  else w->Null();
}

void WriteBuckets(JsonWriter* w, const MsRange& r, int64_t step_ms, int64_t n) {
  w->Key("step_ms");
  w->Int(step_ms);
  w->Key("buckets");
  w->BeginArray();
  for (int64_t i = 0; i < n; ++i) w->Int(r.from_ms + i * step_ms);
  w->EndArray();
}

std::string TraceIdText(const TraceId& id) { return TraceIdHex(id.high, id.low); }

std::string SpanIdText(uint64_t id) { return id == 0 ? std::string() : HexU64(id); }

void WriteLogRecord(JsonWriter* w, const LogRecord& r) {
  w->BeginObject();
  w->Key("time_ns");
  w->String(std::to_string(r.time_ns));
  w->Key("time_ms");
  w->Double(static_cast<double>(r.time_ns) / 1e6);
  w->Key("severity_number");
  w->Int(r.severity_number);
  w->Key("severity_text");
  w->String(r.severity_text);
  w->Key("body");
  w->String(r.body);
  w->Key("service");
  w->String(r.service);
  w->Key("trace_id");
  w->String(TraceIdText(r.trace_id));
  w->Key("span_id");
  w->String(SpanIdText(r.span_id));
  w->Key("attributes");
  w->Raw(r.attributes.empty() ? "{}" : r.attributes);
  w->Key("event_name");
  w->String(r.event_name);
  w->EndObject();
}

}  // namespace api

}  // namespace sightline
