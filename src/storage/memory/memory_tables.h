#pragma once

// The memory engine's tables: one plain struct per stored row, with the same
// columns, NULL rules and derived columns as the SQL engines (docs/STORAGE.md).
// Internal to storage/memory/.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "storage/telemetry_reader.h"

namespace sightline::memory {

//! (project_id, key): how keyed rows (resources, series) are stored once.
using RowKey = std::pair<int64_t, int64_t>;

struct SpanRow {
  int64_t project_id = 0;
  TraceId trace_id;
  uint64_t span_id = 0;
  uint64_t parent_span_id = 0;  // 0: a root
  std::string trace_state;
  uint32_t flags = 0;
  std::string name;
  int32_t kind = 0;
  int64_t start_time_ns = 0;
  int64_t end_time_ns = 0;
  int64_t duration_ns = 0;
  int32_t status_code = 0;
  std::string status_message;
  std::string service_name;
  std::string http_route;
  std::string http_method;
  int32_t http_status_code = 0;
  std::string db_system;
  std::string exception_type;  // "" when absent (NULL in the SQL engines)
  std::string exception_message;
  std::string exception_group;
  std::string attributes;
  std::string events;
  std::string links;
  uint32_t dropped_attributes_count = 0;
  uint32_t dropped_events_count = 0;
  uint32_t dropped_links_count = 0;
  int64_t resource_id = 0;
  // Derived when written, as the SQL engines derive them.
  std::string endpoint;        // http_route, else name
  bool is_entry = false;       // kind SERVER (2) or CONSUMER (5), or no parent
  bool has_exception = false;  // an exception type or message
};

struct LogRow {
  int64_t project_id = 0;
  int64_t time_ns = 0;
  int64_t observed_time_ns = 0;
  int32_t severity_number = 0;
  std::string severity_text;
  std::string body;
  uint8_t body_type = 0;
  TraceId trace_id;
  uint64_t span_id = 0;
  uint32_t flags = 0;
  std::string service_name;
  std::string attributes;
  uint32_t dropped_attributes_count = 0;
  int64_t resource_id = 0;
  std::string event_name;
  std::string exception_type;  // a log-based exception event's
  std::string exception_message;
  std::string exception_group;
  //! Position in commit order (the SQL engines' rowid): log pages break
  //! equal times by it.
  int64_t sequence = 0;
};

struct ResourceRow {
  std::string resource_attributes;
  std::string scope_name;
  std::string scope_version;
  std::string scope_attributes;
};

struct SeriesRow {
  std::string metric_name;
  MetricType metric_type = MetricType::kGauge;
  std::string unit;
  std::string description;
  int32_t temporality = 0;
  bool monotonic = false;
  std::string service_name;
  int64_t resource_id = 0;  // a row of metric_resources
  std::string attributes;
};

struct PointRow {
  int64_t project_id = 0;
  int64_t series_id = 0;
  int64_t time_ns = 0;
  int64_t start_time_ns = 0;
  std::optional<double> value;  // NULL for NaN and distributions
  std::optional<int64_t> int_value;
  int64_t count = 0;
  std::optional<double> sum;
  std::optional<double> min;
  std::optional<double> max;
  std::optional<std::string> bucket_counts;  // JSON array; NULL when ''
  std::optional<std::string> explicit_bounds;
  std::optional<std::string> exp_histogram;
  std::optional<std::string> quantiles;
  std::optional<std::string> exemplars;
  uint32_t flags = 0;
  //! Position in commit order: "the newest point" breaks equal times by it.
  int64_t sequence = 0;
};

//! Everything one memory store holds. Main tables keep commit order; keyed
//! tables keep the first row written for a key, as the SQL engines skip keys
//! they hold.
struct Tables {
  std::vector<SpanRow> spans;
  std::map<RowKey, ResourceRow> span_resources;
  std::vector<LogRow> logs;
  std::map<RowKey, ResourceRow> log_resources;
  std::map<RowKey, ResourceRow> metric_resources;
  std::map<RowKey, SeriesRow> series;
  std::vector<PointRow> points;
  int64_t next_sequence = 0;
};

}  // namespace sightline::memory
