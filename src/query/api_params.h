#pragma once

// Query-string parameters of the /api/v1/ calls (docs/API.md) and their
// parsing into the read contract's types. Every parse failure is an
// InvalidArgument whose message names the parameter.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/status.h"
#include "storage/telemetry_reader.h"

namespace sightline {

//! Decoded query-string parameters (repeatable keys keep every value). An
//! empty value counts as absent.
class ApiParams {
 public:
  static Result<ApiParams> Parse(std::string_view query);
  std::optional<std::string> Get(const std::string& key) const;
  std::vector<std::string> GetAll(const std::string& key) const;
  void Set(const std::string& key, const std::string& value) { values_.emplace(key, value); }

 private:
  std::multimap<std::string, std::string> values_;
};

namespace api {

inline constexpr int64_t kNsPerMs = 1000000;

//! A range in milliseconds since the epoch, as the API speaks it.
struct MsRange {
  int64_t from_ms = 0;
  int64_t to_ms = 0;
  TimeRange ns() const { return {from_ms * kNsPerMs, to_ms * kNsPerMs}; }
};

//! `name` as an integer in [min, max], or `def` when absent.
Result<int64_t> IntParam(const ApiParams& p, const std::string& name, int64_t def, int64_t min, int64_t max);
//! A non-negative finite number.
Result<double> ParseDouble(const std::string& name, const std::string& v);
//! `from`/`to` in ms (fractions floored); default: the hour before now.
Result<MsRange> ParseRange(const ApiParams& p);
//! Bucket width in ms for a chart over the range: `step_ms`, or about 60
//! buckets rounded to a readable width. At most 2000 buckets.
Result<int64_t> ParseStep(const ApiParams& p, const MsRange& r);
//! The range widened to whole buckets on the grid of multiples of step_ms
//! since the epoch: the start floored, the end ceiled. A chart's buckets then
//! stay put as "now" moves, and its first bucket holds a whole step.
MsRange AlignToStep(const MsRange& r, int64_t step_ms);
//! Buckets of step_ms over the range, starting at its start.
Buckets BucketsOf(const MsRange& r, int64_t step_ms);
//! Every `name=key=value` parameter as an attribute filter (kEq only).
Result<std::vector<AttrFilter>> AttrFilters(const ApiParams& p, const std::string& name);
//! Every `name` parameter as an attribute condition: `key=value`,
//! `key!=value`, `key>number`, `key<number`, or a bare `key` (exists). The
//! operator is the first `=`, `!=`, `>` or `<` in the text; a number is a
//! finite decimal (`-1.5`, `2e3`).
Result<std::vector<AttrFilter>> AttrConditions(const ApiParams& p, const std::string& name);
//! A 32-hex trace id (either case).
Result<TraceId> ParseTraceId(const std::string& name, const std::string& hex);

}  // namespace api

}  // namespace sightline
