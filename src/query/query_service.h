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

//! Stateless; thread-safe.
class QueryService {
 public:
  //! True for the operations Run() serves ("services", "endpoints", "traces/<id>", ...).
  static bool Knows(std::string_view op);

  //! Runs an operation for a project. InvalidArgument for bad parameters
  //! (checked before any query runs), NotFound for an unknown trace, Cancelled
  //! when the reader was interrupted.
  Result<std::string> Run(std::string_view op, const ApiParams& params, int64_t project_id,
                          TelemetryReader* reader) const;
};

}  // namespace sightline
