#pragma once

// The /api/v1/ operations (docs/API.md), one function each: parse the
// parameters, run typed queries on the reader, render JSON. Split by signal:
// span_operations.cc, log_operations.cc, metric_operations.cc. The table of
// operations is in query_service.cc.

#include <cstdint>
#include <string>
#include <string_view>

#include "common/json_writer.h"
#include "common/status.h"
#include "query/api_params.h"
#include "query/query_service.h"
#include "storage/telemetry_reader.h"

namespace sightline::api {

//! Everything an operation gets: the caller's project, its parameters and a
//! reader on a leased connection.
struct Call {
  int64_t project_id;
  const ApiParams& params;
  TelemetryReader& reader;
  const QueryLimits& limits;
  std::string_view path_arg = {};  // the {id} of traces/{id}
};

//! Cancelled once the reader was interrupted (deadline or disconnect): the
//! loops over an answer check it, so the deadline covers them too.
Status CheckInterrupted(const Call& call);

using Operation = Result<std::string> (*)(const Call& call);

Result<std::string> Services(const Call& call);
Result<std::string> Endpoints(const Call& call);
Result<std::string> EndpointSeries(const Call& call);
Result<std::string> Traces(const Call& call);
Result<std::string> TraceDurations(const Call& call);
Result<std::string> TraceAttributes(const Call& call);
Result<std::string> TraceDetail(const Call& call);
Result<std::string> Exceptions(const Call& call);
Result<std::string> ExceptionSpans(const Call& call);
Result<std::string> ServiceMap(const Call& call);
Result<std::string> Logs(const Call& call);
Result<std::string> LogVolume(const Call& call);
Result<std::string> LogFacetCounts(const Call& call);
Result<std::string> ServiceSeries(const Call& call);
Result<std::string> MetricList(const Call& call);
Result<std::string> MetricLabels(const Call& call);
Result<std::string> MetricSeries(const Call& call);

// --- Rendering shared by the operations. ---

//! A finite number, else null.
void WriteNumberOrNull(JsonWriter* w, double v);
//! "step_ms": .., "buckets": [start ms of each bucket].
void WriteBuckets(JsonWriter* w, const MsRange& r, int64_t step_ms, int64_t n);
//! A log record as the API shows it.
void WriteLogRecord(JsonWriter* w, const LogRecord& r);
//! A trace id's hex, "" when absent.
std::string TraceIdText(const TraceId& id);
//! A span id's hex, "" when absent.
std::string SpanIdText(uint64_t id);

}  // namespace sightline::api
