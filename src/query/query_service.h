#pragma once

// The named dashboard queries behind /api/v1/ (docs/API.md). Each operation
// validates its parameters, then runs one or more SQL statements on a leased
// read connection and renders JSON. It speaks only to the storage interface:
// engine differences are confined to the SqlDialect (quantiles in SQL on
// DuckDB, in C++ on SQLite; ILIKE; integer division).
//
// Percentiles are exact with linear interpolation between closest ranks
// (DuckDB quantile_cont, numpy's default), over duration_ns.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "storage/telemetry_store.h"

namespace sightline {

//! Decoded query-string parameters (repeatable keys keep every value).
class ApiParams {
 public:
  static Result<ApiParams> Parse(std::string_view query);
  std::optional<std::string> Get(const std::string& key) const;
  std::vector<std::string> GetAll(const std::string& key) const;
  void Set(const std::string& key, const std::string& value) { values_.emplace(key, value); }

 private:
  std::multimap<std::string, std::string> values_;
};

//! Stateless apart from the dialect; thread-safe.
class QueryService {
 public:
  explicit QueryService(SqlDialect dialect) : dialect_(dialect) {}

  //! True for the operations Run() serves ("services", "endpoints", "traces/<id>", ...).
  static bool Knows(std::string_view op);

  //! Runs an operation for a project. InvalidArgument for bad parameters
  //! (checked before any SQL runs), NotFound for an unknown trace, Cancelled
  //! when the connection was interrupted.
  Result<std::string> Run(std::string_view op, const ApiParams& params, int64_t project_id,
                          ReadConnection* conn) const;

 private:
  SqlDialect dialect_;
};

//! Linear-interpolation percentile of sorted values (q in [0,1]).
double PercentileSorted(const std::vector<int64_t>& sorted, double q);

}  // namespace sightline
