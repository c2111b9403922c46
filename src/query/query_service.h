#pragma once

// The named dashboard operations behind /api/v1/ (docs/API.md). Each parses
// its parameters into typed queries of the read contract
// (storage/telemetry_reader.h), runs them on a leased TelemetryReader and
// renders JSON. No SQL and no engine knowledge here: engines answer the typed
// queries. The operations live in query/*_operations.cc, one file per signal;
// the table of them is in query_service.cc.

#include <cstdint>
#include <string>
#include <string_view>

#include "common/status.h"
#include "query/api_params.h"
#include "storage/telemetry_reader.h"

namespace sightline {

//! What one answer may hold. Past a cap the call is a 400 that names the cap
//! and says how to narrow the query, or (a trace) an answer that says it was
//! truncated: the server's memory per query is bounded by these, not by the
//! data.
struct QueryLimits {
  int64_t max_groups = 100000;           // endpoints and services per answer (--max-query-groups)
  int64_t max_series = 10000;            // series of one metric read by one call (--max-query-series)
  int64_t max_trace_spans = 10000;       // spans of one trace (--max-trace-spans), and as many log records
  int64_t max_metrics = 10000;           // (name, type, unit, description, service) rows of the metric list
  int64_t max_points = 1000000;          // series x buckets of one chart (--max-query-points)
  int64_t max_log_facet_sample = 10000;  // records the logs/facets attribute counts read (--max-log-facet-sample)
  //! Edges of the service map, the busiest first; past it the answer says
  //! truncated (--max-service-map-edges).
  int64_t max_service_calls = 1000;
};

//! Stateless; thread-safe.
class QueryService {
 public:
  explicit QueryService(QueryLimits limits = {}) : limits_(limits) {}
  const QueryLimits& limits() const { return limits_; }

  //! True for the operations Run() serves ("services", "endpoints", "traces/<id>", ...).
  static bool Knows(std::string_view op);
  //! The operations as metrics name them, by index 0..OperationCount()-1:
  //! each path of the table, and "traces/{id}" for every trace's detail.
  static size_t OperationCount();
  static std::string_view OperationName(size_t index);
  //! The index of the operation Run() serves for `op`, -1 when none.
  static int OperationIndex(std::string_view op);

  //! Runs an operation for a project. InvalidArgument for bad parameters
  //! (checked before any query runs), NotFound for an unknown trace, Cancelled
  //! when the reader was interrupted.
  Result<std::string> Run(std::string_view op, const ApiParams& params, int64_t project_id,
                          TelemetryReader* reader) const;

 private:
  const QueryLimits limits_;
};

}  // namespace sightline
