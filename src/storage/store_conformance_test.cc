// One conformance suite run against every telemetry engine: batches built by
// hand go in through a sink, every column comes back out through ExecuteSql
// and is compared with what was put in. The expected values are written out
// here column by column, independently of storage/schema.h.

#include <duckdb.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <limits>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "common/hex.h"
#include "common/testing/temp_dir.h"
#include "model/batch.h"
#include "model/ids.h"
#include "storage/clickhouse/testing/clickhouse_server.h"
#include "storage/schema.h"
#include "storage/schema_version.h"
#include "storage/telemetry_reader.h"
#include "storage/telemetry_store.h"

namespace sightline {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

//! A fresh directory for one test, removed at the end.
class TempDir : public testing::TempDir {
 public:
  TempDir() : testing::TempDir("sightline-store-test") {}
};

using Cell = std::optional<std::string>;

// --- Batches -----------------------------------------------------------------

constexpr int64_t kProject = 7;

//! Three spans: a root span with empty optional strings, and two children with
//! every column filled, including non-ASCII text and uint32 values above INT32_MAX.
// Ids written as hex in the fixtures; "" is absent (0).
void AppendTraceId(std::string_view hex, std::vector<uint64_t>* high, std::vector<uint64_t>* low) {
  uint64_t h = 0, l = 0;
  if (!hex.empty()) {
    EXPECT_TRUE(IdFromHex(hex, &h, &l)) << hex;
  }
  high->push_back(h);
  low->push_back(l);
}
uint64_t SpanId(std::string_view hex) {
  uint64_t unused = 0, id = 0;
  if (!hex.empty()) {
    EXPECT_TRUE(IdFromHex(hex, &unused, &id)) << hex;
  }
  return id;
}

//! Gives the row the id of its (resource, scope): a new row of the batch's
//! resource table for a new one (ids 9001, 9002, ... in order of first use).
void AddResource(ResourceTable* t, std::vector<int64_t>* row_ids, const char* resource, const char* scope_name,
                 const char* scope_version, const char* scope_attributes) {
  for (size_t i = 0; i < t->rows(); ++i) {
    if (t->resource_attributes.Get(i) == resource && t->scope_name.Get(i) == scope_name &&
        t->scope_version.Get(i) == scope_version && t->scope_attributes.Get(i) == scope_attributes) {
      row_ids->push_back(t->resource_id[i]);
      return;
    }
  }
  t->resource_id.push_back(9001 + static_cast<int64_t>(t->rows()));
  t->resource_attributes.Append(resource);
  t->scope_name.Append(scope_name);
  t->scope_version.Append(scope_version);
  t->scope_attributes.Append(scope_attributes);
  row_ids->push_back(t->resource_id.back());
}

SpanBatch MakeSpans(int64_t project_id = kProject) {
  SpanBatch b;
  b.project_id = project_id;
  struct Row {
    const char* trace_id;
    const char* span_id;
    const char* parent;
    const char* trace_state;
    uint32_t flags;
    const char* name;
    int32_t kind;
    int64_t start;
    int64_t end;
    int32_t status_code;
    const char* status_message;
    const char* service;
    const char* route;
    const char* method;
    int32_t http_status;
    const char* db_system;
    const char* exception_type;
    const char* exception_message;
    const char* attributes;
    const char* events;
    const char* links;
    uint32_t dropped_attributes;
    uint32_t dropped_events;
    uint32_t dropped_links;
    const char* resource;
    const char* scope_name;
    const char* scope_version;
    const char* scope_attributes;
  };
  const Row rows[] = {
      {"0af7651916cd43dd8448eb211c80319c",
       "b7ad6b7169203331",
       "",
       "",
       1,
       "GET /users/:id",
       2,
       1700000000000000000,
       1700000000250000000,
       0,
       "",
       "frontend",
       "/users/:id",
       "GET",
       200,
       "",
       "",
       "",
       R"({"http.route":"/users/:id","http.request.method":"GET"})",
       "[]",
       "[]",
       0,
       0,
       0,
       R"({"service.name":"frontend","host.name":"web-1"})",
       "io.opentelemetry.http",
       "1.2.3",
       "{}"},
      {"0af7651916cd43dd8448eb211c80319c",
       "00f067aa0ba902b7",
       "b7ad6b7169203331",
       "vendor=opaque",
       4294967295u,
       "SELECT café ✓",
       3,
       1700000000010000000,
       1700000000090000123,
       2,
       "deadlock détecté",
       "users-db",
       "/internal/q",
       "POST",
       503,
       "postgresql",
       "java.sql.SQLException",
       "could not serialize ⚠",
       R"({"db.system":"postgresql","retry":true,"n":3})",
       R"([{"time_unix_nano":1700000000050000000,"name":"exception","attributes":{"exception.type":"java.sql.SQLException"},"dropped_attributes_count":0}])",
       R"([{"trace_id":"4bf92f3577b34da6a3ce929d0e0e4736","span_id":"00f067aa0ba902b8","trace_state":"","attributes":{},"dropped_attributes_count":0,"flags":1}])",
       2147483648u,
       5,
       6,
       R"({"service.name":"users-db"})",
       "jdbc",
       "",
       R"({"scope.attr":1})"},
      {"4bf92f3577b34da6a3ce929d0e0e4736",
       "53995c3f42cd8ad8",
       "00f067aa0ba902b7",
       "a=b",
       0,
       "cache.get",
       1,
       1700000000020000000,
       1700000000020000001,
       1,
       "ok",
       "cache",
       "",
       "",
       0,
       "redis",
       "",
       "",
       "{}",
       "[]",
       "[]",
       1,
       0,
       0,
       "{}",
       "",
       "",
       ""},
  };
  for (const Row& r : rows) {
    AppendTraceId(r.trace_id, &b.trace_id_high, &b.trace_id_low);
    b.span_id.push_back(SpanId(r.span_id));
    b.parent_span_id.push_back(SpanId(r.parent));
    b.trace_state.Append(r.trace_state);
    b.flags.push_back(r.flags);
    b.name.Append(r.name);
    b.kind.push_back(r.kind);
    b.start_time_ns.push_back(r.start);
    b.end_time_ns.push_back(r.end);
    b.status_code.push_back(r.status_code);
    b.status_message.Append(r.status_message);
    b.service_name.Append(r.service);
    b.http_route.Append(r.route);
    b.http_method.Append(r.method);
    b.http_status_code.push_back(r.http_status);
    b.db_system.Append(r.db_system);
    b.exception_type.Append(r.exception_type);
    b.exception_message.Append(r.exception_message);
    b.exception_group.Append(std::string(r.exception_message).empty() ? ""
                                                                      : std::string(r.exception_message) + " (group)");
    b.attributes.Append(r.attributes);
    b.events.Append(r.events);
    b.links.Append(r.links);
    b.dropped_attributes_count.push_back(r.dropped_attributes);
    b.dropped_events_count.push_back(r.dropped_events);
    b.dropped_links_count.push_back(r.dropped_links);
    AddResource(&b.resources, &b.resource_id, r.resource, r.scope_name, r.scope_version, r.scope_attributes);
  }
  return b;
}

LogBatch MakeLogs(int64_t project_id = kProject) {
  LogBatch b;
  b.project_id = project_id;
  // Row 0: a string body with trace context. Row 1: a kvlist body as JSON, no
  // timestamp (time_ns 0), no trace context.
  b.time_ns = {1700000001000000000, 0};
  b.observed_time_ns = {1700000001000000500, 1700000002000000000};
  b.severity_number = {17, 9};
  b.severity_text.Append("ERROR");
  b.severity_text.Append("");
  b.body.Append("payment failed: carte refusée");
  b.body.Append(R"({"event":"login","user":{"id":42}})");
  b.body_type = {static_cast<uint8_t>(AnyValueType::kString), static_cast<uint8_t>(AnyValueType::kKvList)};
  AppendTraceId("0af7651916cd43dd8448eb211c80319c", &b.trace_id_high, &b.trace_id_low);
  AppendTraceId("", &b.trace_id_high, &b.trace_id_low);
  b.span_id = {SpanId("b7ad6b7169203331"), 0};
  b.flags = {1, 0};
  b.service_name.Append("payments");
  b.service_name.Append("auth");
  b.attributes.Append(R"({"order.id":"A-17","amount":12.5})");
  b.attributes.Append("{}");
  b.dropped_attributes_count = {3, 0};
  AddResource(&b.resources, &b.resource_id, R"({"service.name":"payments"})", "logback", "1.4", "{}");
  AddResource(&b.resources, &b.resource_id, R"({"service.name":"auth"})", "", "", "");
  // Row 0 is a log-based exception event; row 1 an event without one.
  b.event_name.Append("");
  b.event_name.Append("auth.login");
  b.exception_type.Append("CardDeclined");
  b.exception_type.Append("");
  b.exception_message.Append("card 4242 declined");
  b.exception_message.Append("");
  b.exception_group.Append("card <n> declined");
  b.exception_group.Append("");
  return b;
}

struct SeriesSpec {
  int64_t id;
  const char* name;
  MetricType type;
  const char* unit;
  const char* description;
  int32_t temporality;
  uint8_t is_monotonic;
  const char* service;
  const char* resource;
  const char* scope_name;
  const char* scope_version;
  const char* attributes;
};

struct PointSpec {
  int64_t series_id;
  int64_t time_ns;
  int64_t start_time_ns;
  double value;
  int64_t int_value;
  uint8_t is_int;
  uint64_t count;
  double sum;
  double min;
  double max;
  const char* bucket_counts;
  const char* explicit_bounds;
  const char* exp_histogram;
  const char* quantiles;
  const char* exemplars;
  uint32_t flags;
};

// Series ids use the full int64 range, negative included.
constexpr int64_t kGaugeSeries = -8070450532247928832;
constexpr int64_t kHistogramSeries = 0x1234567890abcdef;
constexpr int64_t kSummarySeries = 42;
constexpr int64_t kExpHistogramSeries = -1;
constexpr int64_t kCounterSeries = 9000000000000000000;

const SeriesSpec kGauge = {kGaugeSeries,
                           "system.memory.usage",
                           MetricType::kGauge,
                           "By",
                           "Memory in use",
                           0,
                           0,
                           "node-agent",
                           R"({"service.name":"node-agent","host.name":"h1"})",
                           "hostmetrics",
                           "0.9",
                           R"({"state":"used"})"};
const SeriesSpec kHistogram = {kHistogramSeries,
                               "http.server.duration",
                               MetricType::kHistogram,
                               "ms",
                               "Inbound request latency",
                               2,
                               0,
                               "frontend",
                               R"({"service.name":"frontend"})",
                               "io.opentelemetry.http",
                               "1.2.3",
                               R"({"http.route":"/users/:id"})"};
const SeriesSpec kSummary = {
    kSummarySeries, "rpc.latency", MetricType::kSummary, "s", "", 0, 0, "legacy", "{}", "", "", "{}"};
const SeriesSpec kExpHistogram = {kExpHistogramSeries,
                                  "queue.wait",
                                  MetricType::kExponentialHistogram,
                                  "ms",
                                  "Queue wait time",
                                  1,
                                  0,
                                  "worker",
                                  R"({"service.name":"worker"})",
                                  "queue",
                                  "2",
                                  "{}"};
const SeriesSpec kCounter = {kCounterSeries,
                             "requests",
                             MetricType::kSum,
                             "1",
                             "Requests served ✓",
                             2,
                             1,
                             "frontend",
                             R"({"service.name":"frontend"})",
                             "",
                             "",
                             R"({"code":"200"})"};

const PointSpec kGaugeDouble = {
    kGaugeSeries, 1700000000000000000, 0, 1.5, 0, 0, 0, kNaN, kNaN, kNaN, "", "", "", "", "", 0};
const PointSpec kGaugeInt = {kGaugeSeries,
                             1700000010000000000,
                             0,
                             42.0,
                             42,
                             1,
                             0,
                             kNaN,
                             kNaN,
                             kNaN,
                             "",
                             "",
                             "",
                             "",
                             R"([{"time_unix_nano":1700000010000000000,"as_int":42}])",
                             1};
const PointSpec kHistogramPoint = {kHistogramSeries,
                                   1700000020000000000,
                                   1699999990000000000,
                                   kNaN,
                                   0,
                                   0,
                                   10,
                                   12.75,
                                   0.25,
                                   5.5,
                                   "[1,4,5]",
                                   "[1.0,5.0]",
                                   "",
                                   "",
                                   "",
                                   0};
const PointSpec kSummaryPoint = {kSummarySeries,
                                 1700000030000000000,
                                 1699999990000000000,
                                 kNaN,
                                 0,
                                 0,
                                 4,
                                 10.0,
                                 kNaN,
                                 kNaN,
                                 "",
                                 "",
                                 "",
                                 R"([{"quantile":0.5,"value":2.5},{"quantile":0.99,"value":4.0}])",
                                 "",
                                 0};
const PointSpec kExpHistogramPoint = {
    kExpHistogramSeries,
    1700000040000000000,
    1700000035000000000,
    kNaN,
    0,
    0,
    3,
    6.0,
    1.0,
    3.0,
    "",
    "",
    R"({"scale":2,"zero_count":0,"positive":{"offset":1,"bucket_counts":[1,2]},"negative":{"offset":0,"bucket_counts":[]}})",
    "",
    "",
    0};
const PointSpec kGaugeLater = {
    kGaugeSeries, 1700000050000000000, 0, 2.25, 0, 0, 0, kNaN, kNaN, kNaN, "", "", "", "", "", 0};
const PointSpec kCounterPoint = {
    kCounterSeries, 1700000060000000000, 1699999000000000000, -7.0, -7, 1, 0, kNaN, kNaN, kNaN, "", "", "", "", "", 0};

MetricBatch MakeMetrics(int64_t project_id, const std::vector<SeriesSpec>& series,
                        const std::vector<PointSpec>& points) {
  MetricBatch b;
  b.project_id = project_id;
  for (const SeriesSpec& s : series) {
    b.series_id.push_back(s.id);
    b.metric_name.Append(s.name);
    b.metric_type.push_back(static_cast<int32_t>(s.type));
    b.unit.Append(s.unit);
    b.description.Append(s.description);
    b.temporality.push_back(s.temporality);
    b.is_monotonic.push_back(s.is_monotonic);
    b.service_name.Append(s.service);
    b.AddSeriesResource(s.resource, s.scope_name, s.scope_version);
    b.attributes.Append(s.attributes);
  }
  for (const PointSpec& p : points) {
    b.point_series_id.push_back(p.series_id);
    b.time_ns.push_back(p.time_ns);
    b.start_time_ns.push_back(p.start_time_ns);
    b.value.push_back(p.value);
    b.int_value.push_back(p.int_value);
    b.is_int.push_back(p.is_int);
    b.count.push_back(p.count);
    b.sum.push_back(p.sum);
    b.min.push_back(p.min);
    b.max.push_back(p.max);
    b.bucket_counts.Append(p.bucket_counts);
    b.explicit_bounds.Append(p.explicit_bounds);
    b.exp_histogram.Append(p.exp_histogram);
    b.quantiles.Append(p.quantiles);
    b.exemplars.Append(p.exemplars);
    b.flags.push_back(p.flags);
  }
  return b;
}

// --- Expectations --------------------------------------------------------------

//! One expected column: its name and, per input row, the expected cell.
//! Doubles are compared as numbers (engines print them differently).
struct ExpectedColumn {
  std::string name;
  std::function<Cell(size_t)> cell;
  bool is_double = false;
};

Cell Int(int64_t v) { return std::to_string(v); }
Cell Str(std::string_view s) { return std::string(s); }
Cell OrNull(std::string_view s) { return s.empty() ? Cell() : Cell(std::string(s)); }
//! An id half as stored: the same 64 bits as a signed integer, NULL when the id is absent.
Cell IdHalf(uint64_t v, uint64_t other) { return v == 0 && other == 0 ? Cell() : Int(static_cast<int64_t>(v)); }
Cell DoubleOrNull(double v) {
  if (std::isnan(v)) return std::nullopt;
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%.17g", v);
  return std::string(buf);
}

std::vector<ExpectedColumn> SpanExpectations(const SpanBatch& b) {
  return {
      {"project_id", [&](size_t) { return Int(b.project_id); }},
      {"trace_id_high", [&](size_t i) { return IdHalf(b.trace_id_high[i], b.trace_id_low[i]); }},
      {"trace_id_low", [&](size_t i) { return IdHalf(b.trace_id_low[i], b.trace_id_high[i]); }},
      {"span_id", [&](size_t i) { return IdHalf(b.span_id[i], b.span_id[i]); }},
      {"parent_span_id", [&](size_t i) { return IdHalf(b.parent_span_id[i], b.parent_span_id[i]); }},
      {"flags", [&](size_t i) { return Int(b.flags[i]); }},
      {"name", [&](size_t i) { return Str(b.name.Get(i)); }},
      {"kind", [&](size_t i) { return Int(b.kind[i]); }},
      {"start_time_ns", [&](size_t i) { return Int(b.start_time_ns[i]); }},
      {"end_time_ns", [&](size_t i) { return Int(b.end_time_ns[i]); }},
      {"duration_ns", [&](size_t i) { return Int(b.end_time_ns[i] - b.start_time_ns[i]); }},
      {"status_code", [&](size_t i) { return Int(b.status_code[i]); }},
      {"service_name", [&](size_t i) { return Str(b.service_name.Get(i)); }},
      {"http_route", [&](size_t i) { return Str(b.http_route.Get(i)); }},
      {"http_method", [&](size_t i) { return Str(b.http_method.Get(i)); }},
      {"http_status_code", [&](size_t i) { return Int(b.http_status_code[i]); }},
      {"db_system", [&](size_t i) { return OrNull(b.db_system.Get(i)); }},
      {"attributes", [&](size_t i) { return Str(b.attributes.Get(i)); }},
      {"dropped_attributes_count", [&](size_t i) { return Int(b.dropped_attributes_count[i]); }},
      {"dropped_events_count", [&](size_t i) { return Int(b.dropped_events_count[i]); }},
      {"dropped_links_count", [&](size_t i) { return Int(b.dropped_links_count[i]); }},
      {"resource_id", [&](size_t i) { return Int(b.resource_id[i]); }},
      // Derived: what the dashboards group and filter on.
      {"endpoint", [&](size_t i) { return Str(b.http_route.Get(i).empty() ? b.name.Get(i) : b.http_route.Get(i)); }},
      {"is_entry", [&](size_t i) { return Int(b.kind[i] == 2 || b.kind[i] == 5 || b.parent_span_id[i] == 0 ? 1 : 0); }},
      {"has_exception",
       [&](size_t i) { return Int(b.exception_type.Get(i).empty() && b.exception_message.Get(i).empty() ? 0 : 1); }},
  };
}

//! span_details: the rows of the spans that have any of its values.
std::vector<ExpectedColumn> SpanDetailExpectations(const SpanBatch& b) {
  return {
      {"project_id", [&](size_t) { return Int(b.project_id); }},
      {"trace_id_high", [&](size_t i) { return IdHalf(b.trace_id_high[i], b.trace_id_low[i]); }},
      {"trace_id_low", [&](size_t i) { return IdHalf(b.trace_id_low[i], b.trace_id_high[i]); }},
      {"span_id", [&](size_t i) { return IdHalf(b.span_id[i], b.span_id[i]); }},
      {"start_time_ns", [&](size_t i) { return Int(b.start_time_ns[i]); }},
      {"service_name", [&](size_t i) { return Str(b.service_name.Get(i)); }},
      {"name", [&](size_t i) { return Str(b.name.Get(i)); }},
      {"duration_ns", [&](size_t i) { return Int(b.end_time_ns[i] - b.start_time_ns[i]); }},
      {"trace_state", [&](size_t i) { return OrNull(b.trace_state.Get(i)); }},
      {"status_message", [&](size_t i) { return OrNull(b.status_message.Get(i)); }},
      {"exception_type", [&](size_t i) { return OrNull(b.exception_type.Get(i)); }},
      {"exception_message", [&](size_t i) { return OrNull(b.exception_message.Get(i)); }},
      {"events", [&](size_t i) { return OrNull(b.events.Get(i)); }},
      {"links", [&](size_t i) { return OrNull(b.links.Get(i)); }},
      {"exception_group", [&](size_t i) { return OrNull(b.exception_group.Get(i)); }},
  };
}

std::vector<ExpectedColumn> LogExpectations(const LogBatch& b) {
  return {
      {"project_id", [&](size_t) { return Int(b.project_id); }},
      {"time_ns", [&](size_t i) { return Int(b.time_ns[i]); }},
      {"observed_time_ns", [&](size_t i) { return Int(b.observed_time_ns[i]); }},
      {"severity_number", [&](size_t i) { return Int(b.severity_number[i]); }},
      {"severity_text", [&](size_t i) { return Str(b.severity_text.Get(i)); }},
      {"body", [&](size_t i) { return Str(b.body.Get(i)); }},
      {"body_type", [&](size_t i) { return Int(b.body_type[i]); }},
      {"trace_id_high", [&](size_t i) { return IdHalf(b.trace_id_high[i], b.trace_id_low[i]); }},
      {"trace_id_low", [&](size_t i) { return IdHalf(b.trace_id_low[i], b.trace_id_high[i]); }},
      {"span_id", [&](size_t i) { return IdHalf(b.span_id[i], b.span_id[i]); }},
      {"flags", [&](size_t i) { return Int(b.flags[i]); }},
      {"service_name", [&](size_t i) { return Str(b.service_name.Get(i)); }},
      {"attributes", [&](size_t i) { return Str(b.attributes.Get(i)); }},
      {"dropped_attributes_count", [&](size_t i) { return Int(b.dropped_attributes_count[i]); }},
      {"resource_id", [&](size_t i) { return Int(b.resource_id[i]); }},
      {"event_name", [&](size_t i) { return OrNull(b.event_name.Get(i)); }},
  };
}

//! log_exceptions: the rows of the records that have an exception.
std::vector<ExpectedColumn> LogExceptionExpectations(const LogBatch& b) {
  return {
      {"project_id", [&](size_t) { return Int(b.project_id); }},
      {"time_ns", [&](size_t i) { return Int(b.time_ns[i]); }},
      {"observed_time_ns", [&](size_t i) { return Int(b.observed_time_ns[i]); }},
      {"service_name", [&](size_t i) { return Str(b.service_name.Get(i)); }},
      {"trace_id_high", [&](size_t i) { return IdHalf(b.trace_id_high[i], b.trace_id_low[i]); }},
      {"trace_id_low", [&](size_t i) { return IdHalf(b.trace_id_low[i], b.trace_id_high[i]); }},
      {"span_id", [&](size_t i) { return IdHalf(b.span_id[i], b.span_id[i]); }},
      {"event_name", [&](size_t i) { return OrNull(b.event_name.Get(i)); }},
      {"exception_type", [&](size_t i) { return OrNull(b.exception_type.Get(i)); }},
      {"exception_message", [&](size_t i) { return OrNull(b.exception_message.Get(i)); }},
      {"exception_group", [&](size_t i) { return OrNull(b.exception_group.Get(i)); }},
  };
}

std::vector<ExpectedColumn> ResourceExpectations(int64_t project_id, const ResourceTable& t) {
  return {
      {"project_id", [=](size_t) { return Int(project_id); }},
      {"resource_id", [&](size_t i) { return Int(t.resource_id[i]); }},
      {"resource_attributes", [&](size_t i) { return Str(t.resource_attributes.Get(i)); }},
      {"scope_name", [&](size_t i) { return Str(t.scope_name.Get(i)); }},
      {"scope_version", [&](size_t i) { return Str(t.scope_version.Get(i)); }},
      {"scope_attributes", [&](size_t i) { return Str(t.scope_attributes.Get(i)); }},
  };
}

std::vector<ExpectedColumn> SeriesExpectations(int64_t project_id, const std::vector<SeriesSpec>& s) {
  return {
      {"project_id", [=](size_t) { return Int(project_id); }},
      {"series_id", [&](size_t i) { return Int(s[i].id); }},
      {"metric_name", [&](size_t i) { return Str(s[i].name); }},
      {"metric_type", [&](size_t i) { return Int(static_cast<int32_t>(s[i].type)); }},
      {"unit", [&](size_t i) { return Str(s[i].unit); }},
      {"description", [&](size_t i) { return Str(s[i].description); }},
      {"temporality", [&](size_t i) { return Int(s[i].temporality); }},
      {"is_monotonic", [&](size_t i) { return Int(s[i].is_monotonic); }},
      {"service_name", [&](size_t i) { return Str(s[i].service); }},
      // Its resource and scope: a row of metric_resources (docs/STORAGE.md, "Ids").
      {"resource_id",
       [&](size_t i) { return Int(ResourceId(s[i].resource, s[i].scope_name, s[i].scope_version, "{}")); }},
      {"attributes", [&](size_t i) { return Str(s[i].attributes); }},
  };
}

std::vector<ExpectedColumn> PointExpectations(int64_t project_id, const std::vector<PointSpec>& p) {
  return {
      {"project_id", [=](size_t) { return Int(project_id); }},
      {"series_id", [&](size_t i) { return Int(p[i].series_id); }},
      {"time_ns", [&](size_t i) { return Int(p[i].time_ns); }},
      {"start_time_ns", [&](size_t i) { return Int(p[i].start_time_ns); }},
      // An int point's value is int_value alone (schema 5).
      {"value", [&](size_t i) { return p[i].is_int ? Cell() : DoubleOrNull(p[i].value); }, true},
      {"int_value", [&](size_t i) { return p[i].is_int ? Int(p[i].int_value) : Cell(); }},
      {"count", [&](size_t i) { return Int(static_cast<int64_t>(p[i].count)); }},
      {"sum", [&](size_t i) { return DoubleOrNull(p[i].sum); }, true},
      {"min", [&](size_t i) { return DoubleOrNull(p[i].min); }, true},
      {"max", [&](size_t i) { return DoubleOrNull(p[i].max); }, true},
      {"bucket_counts", [&](size_t i) { return OrNull(p[i].bucket_counts); }},
      {"explicit_bounds", [&](size_t i) { return OrNull(p[i].explicit_bounds); }},
      {"exp_histogram", [&](size_t i) { return OrNull(p[i].exp_histogram); }},
      {"quantiles", [&](size_t i) { return OrNull(p[i].quantiles); }},
      {"exemplars", [&](size_t i) { return OrNull(p[i].exemplars); }},
      {"flags", [&](size_t i) { return Int(p[i].flags); }},
  };
}

std::string Show(const Cell& c) { return c ? "'" + *c + "'" : "NULL"; }

//! Checks that `result` has exactly the expected columns, in order, and that
//! result row r equals input row rows[r] cell by cell.
void ExpectRows(const SqlResult& result, const std::vector<ExpectedColumn>& expected, const std::vector<size_t>& rows) {
  std::vector<std::string> names;
  for (const ExpectedColumn& c : expected) names.push_back(c.name);
  ASSERT_EQ(result.columns, names);
  ASSERT_EQ(result.rows.size(), rows.size());
  for (size_t r = 0; r < rows.size(); ++r) {
    ASSERT_EQ(result.rows[r].size(), expected.size());
    for (size_t c = 0; c < expected.size(); ++c) {
      Cell want = expected[c].cell(rows[r]);
      const Cell& got = result.rows[r][c];
      SCOPED_TRACE("row " + std::to_string(r) + " column " + expected[c].name + ": got " + Show(got) + ", want " +
                   Show(want));
      ASSERT_EQ(got.has_value(), want.has_value());
      if (!want) continue;
      if (expected[c].is_double) {
        EXPECT_EQ(std::stod(*got), std::stod(*want));
      } else {
        EXPECT_EQ(*got, *want);
      }
    }
  }
}

// --- Fixture --------------------------------------------------------------------

class StoreConformanceTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override { RegisterBuiltinStores(); }
  void TearDown() override {
    sinks_.clear();
    if (store_ != nullptr) {
      EXPECT_TRUE(store_->Close().ok());
    }
    store_.reset();
  }

  StoreOptions Options() const {
    StoreOptions options;
    options.data_dir = dir_.str();
    options.memory_limit = "512MB";
    options.threads = 2;
    if (IsClickHouse()) {
      // The binary's one clickhouse-server or its in-process ClickHouse
      // ("chdb"), a database per test (kept across Reopen).
      StoreOptions ch = clickhouse::testing::StoreOptionsForTest(GetParam(), "");
      options.clickhouse_url = ch.clickhouse_url;
      options.clickhouse_database = clickhouse_database_;
    }
    return options;
  }

  //! The engine of the registry: "chdb" is the ClickHouse engine on its
  //! in-process transport (a chdb:// URL).
  std::string Engine() const { return GetParam() == "chdb" ? "clickhouse" : GetParam(); }
  bool IsClickHouse() const { return Engine() == "clickhouse"; }

  void Open() {
    Result<std::unique_ptr<TelemetryStore>> store = StoreRegistry::Instance().Open(Engine(), Options());
    ASSERT_TRUE(store.ok()) << store.status().ToString();
    store_ = std::move(store).value();
    ASSERT_STREQ(store_->name(), Engine().c_str());
  }

  //! Closes the store (sinks first) and opens it again on the same directory.
  void Reopen() {
    sinks_.clear();
    Status closed = store_->Close();
    ASSERT_TRUE(closed.ok()) << closed.ToString();
    store_.reset();
    Open();
  }

  SignalSink* Sink(Signal signal) {
    Result<std::unique_ptr<SignalSink>> sink = store_->NewSink(signal);
    EXPECT_TRUE(sink.ok()) << sink.status().ToString();
    if (!sink.ok()) return nullptr;
    sinks_.push_back(std::move(sink).value());
    return sinks_.back().get();
  }

  SqlResult Query(const std::string& sql) {
    Result<SqlResult> result = store_->ExecuteSql(sql);
    EXPECT_TRUE(result.ok()) << sql << ": " << result.status().ToString();
    return result.ok() ? std::move(result).value() : SqlResult();
  }

  //! The single cell of a one-row, one-column query.
  Cell Scalar(const std::string& sql) {
    SqlResult result = Query(sql);
    if (result.rows.size() != 1 || result.rows[0].size() != 1) {
      ADD_FAILURE() << sql << ": expected one cell";
      return std::nullopt;
    }
    return result.rows[0][0];
  }

  //! A table in the embedded engines' layout, for "SELECT ... FROM " + Rows(t):
  //! on ClickHouse, which stores an absent id as 0, absent text as '', a
  //! missing number as NaN and int_value beside is_int, the view that reads
  //! those back as the NULLs they stand for (docs/STORAGE.md, ClickHouse).
  std::string Rows(const std::string& table) const {
    if (!IsClickHouse()) return table;
    // Stored columns renamed c_* first: an alias that reuses a column's name
    // would otherwise stand for it in the next expression (ClickHouse
    // substitutes aliases).
    std::string inner, outer;
    for (const auto& [name, columns] : schema::AllTableColumns()) {
      if (table != name) continue;
      for (const schema::Column& c : columns) {
        const std::string col = c.name, in = "c_" + col;
        std::string e = in;
        switch (c.kind) {
          case schema::SourceKind::kId:
            e = col.starts_with("trace_id_")
                    ? "if(c_trace_id_high = 0 AND c_trace_id_low = 0, NULL, toInt64(" + in + "))"
                    : "if(" + in + " = 0, NULL, toInt64(" + in + "))";
            break;
          case schema::SourceKind::kTextEmptyNull: e = "nullIf(" + in + ", '')"; break;
          case schema::SourceKind::kDoubleNanNull: e = "if(isNaN(" + in + "), NULL, " + in + ")"; break;
          case schema::SourceKind::kInt64IfFlag: e = "if(c_is_int = 0, NULL, " + in + ")"; break;
          // ClickHouse keeps an int point's value converted; the embedded layout has NULL there.
          case schema::SourceKind::kDoubleIfNotFlag:
            e = "if(c_is_int = 1 OR isNaN(" + in + "), NULL, " + in + ")";
            break;
          default: break;
        }
        inner += (inner.empty() ? "" : ", ") + col + " AS " + in;
        outer += (outer.empty() ? "" : ", ") + e + " AS " + col;
      }
      if (table == schema::kMetricPointsTable) inner += ", is_int AS c_is_int";
    }
    // ClickHouse keeps the sparse tables' values in the main table's row
    // (SparseLayout::kInline).
    if (table == schema::kLogExceptionsTable) {
      return "(SELECT " + outer + " FROM (SELECT " + inner + " FROM " + schema::kLogsTable +
             " WHERE exception_type != '' OR exception_message != ''))";
    }
    if (table == schema::kSpanDetailsTable) {
      return "(SELECT " + outer + " FROM (SELECT " + inner + " FROM " + schema::kSpansTable +
             " WHERE trace_state != '' OR status_message != '' OR exception_type != '' OR exception_message != '' OR "
             "events != '' OR links != '' OR exception_group != ''))";
    }
    return "(SELECT " + outer + " FROM (SELECT " + inner + " FROM " + table + "))";
  }

  //! An id column (a signed 64-bit reading) as 16 hex digits.
  std::string Hex16(const std::string& column) const {
    if (!IsClickHouse()) return "printf('%016x', " + column + ")";
    const std::string hex = "hex(toUInt64(" + column + "))";
    return "lower(substring(concat('0000000000000000', " + hex + "), length(" + hex + ") + 1))";
  }

  int64_t Count(const std::string& table) {
    Cell c = Scalar("SELECT COUNT(*) FROM " + table);
    return c ? std::stoll(*c) : -1;
  }

  TempDir dir_;
  const std::string clickhouse_database_ =
      clickhouse::testing::UniqueDatabase(::testing::UnitTest::GetInstance()->current_test_info()->name());
  std::unique_ptr<TelemetryStore> store_;
  std::vector<std::unique_ptr<SignalSink>> sinks_;
};

//! For a check of what only the embedded SQL engines have (their files,
//! their schema versions and migrations, their number formatting); the
//! ClickHouse schema version is checked in clickhouse_test.cc.
#define SKIP_ON_CLICKHOUSE(reason) \
  if (IsClickHouse()) GTEST_SKIP() << "clickhouse: " << reason

// --- Round trips ------------------------------------------------------------------

TEST_P(StoreConformanceTest, SpansRoundTripEveryColumn) {
  Open();
  SpanBatch spans = MakeSpans();
  Status s = Sink(Signal::kSpans)->WriteSpans({&spans});
  ASSERT_TRUE(s.ok()) << s.ToString();
  ExpectRows(Query("SELECT * FROM " + Rows("spans") + " ORDER BY start_time_ns"), SpanExpectations(spans), {0, 1, 2});
  // Every row has a detail: row 0 empty events and links ('[]'), row 1 all
  // of them, row 2 a trace state and status message.
  ExpectRows(Query("SELECT * FROM " + Rows("span_details") + " ORDER BY start_time_ns"), SpanDetailExpectations(spans),
             {0, 1, 2});
  ExpectRows(Query("SELECT * FROM " + Rows("span_resources") + " ORDER BY resource_id"),
             ResourceExpectations(kProject, spans.resources), {0, 1, 2});
  // duration_ns is computed by the engine, not carried in the batch.
  // Ids read back as hex the same way on every engine (docs/STORAGE.md).
  EXPECT_EQ(Scalar("SELECT duration_ns FROM spans WHERE " + Hex16("span_id") + " = '00f067aa0ba902b7'"),
            Cell("80000123"));
  EXPECT_EQ(Scalar("SELECT " + Hex16("trace_id_high") + " || " + Hex16("trace_id_low") +
                   " FROM spans WHERE name = 'cache.get'"),
            Cell("4bf92f3577b34da6a3ce929d0e0e4736"));
  // An absent parent is NULL, and so is absent optional text (status message,
  // trace state, db system, exception, events, links); names stay ''.
  EXPECT_EQ(Scalar("SELECT COUNT(*) FROM " + Rows("spans") + " AS t WHERE parent_span_id IS NULL"), Cell("1"));
  EXPECT_EQ(Scalar("SELECT COUNT(*) FROM " + Rows("span_details") + " AS t WHERE status_message IS NULL"), Cell("1"));
  EXPECT_EQ(Scalar("SELECT COUNT(*) FROM " + Rows("spans") + " AS t WHERE db_system IS NULL"), Cell("1"));
  EXPECT_EQ(Scalar("SELECT COUNT(*) FROM spans WHERE http_route = ''"), Cell("1"));
  EXPECT_EQ(Scalar("SELECT COUNT(*) FROM spans WHERE flags = 4294967295"), Cell("1"));
}

TEST_P(StoreConformanceTest, LogsRoundTripEveryColumn) {
  Open();
  LogBatch logs = MakeLogs();
  Status s = Sink(Signal::kLogs)->WriteLogs({&logs});
  ASSERT_TRUE(s.ok()) << s.ToString();
  ExpectRows(Query("SELECT * FROM " + Rows("logs") + " ORDER BY observed_time_ns"), LogExpectations(logs), {0, 1});
  // Row 0 is an exception event, row 1 is not.
  ExpectRows(Query("SELECT * FROM " + Rows("log_exceptions") + " ORDER BY observed_time_ns"),
             LogExceptionExpectations(logs), {0});
  ExpectRows(Query("SELECT * FROM " + Rows("log_resources") + " ORDER BY resource_id"),
             ResourceExpectations(kProject, logs.resources), {0, 1});
  EXPECT_EQ(Scalar("SELECT COUNT(*) FROM " + Rows("logs") +
                   " AS t WHERE trace_id_high IS NULL AND trace_id_low IS NULL AND span_id IS NULL"),
            Cell("1"));
}

TEST_P(StoreConformanceTest, MetricsRoundTripEveryColumnAndNullRules) {
  Open();
  const std::vector<SeriesSpec> series = {kGauge, kHistogram, kSummary, kExpHistogram};
  const std::vector<PointSpec> points = {kGaugeDouble, kGaugeInt, kHistogramPoint, kSummaryPoint, kExpHistogramPoint};
  MetricBatch metrics = MakeMetrics(kProject, series, points);
  Status s = Sink(Signal::kMetrics)->WriteMetrics({&metrics});
  ASSERT_TRUE(s.ok()) << s.ToString();

  ExpectRows(Query("SELECT * FROM " + Rows("metric_series") + " ORDER BY metric_name"),
             SeriesExpectations(kProject, series),
             {1, 3, 2, 0});  // http.server.duration, queue.wait, rpc.latency, system.memory.usage
  // The four series have four resources, each stored once.
  std::vector<size_t> by_id = {0, 1, 2, 3};
  std::sort(by_id.begin(), by_id.end(),
            [&](size_t a, size_t b) { return metrics.resources.resource_id[a] < metrics.resources.resource_id[b]; });
  ExpectRows(Query("SELECT * FROM " + Rows("metric_resources") + " ORDER BY resource_id"),
             ResourceExpectations(kProject, metrics.resources), by_id);
  EXPECT_EQ(Scalar("SELECT r.resource_attributes FROM metric_series s JOIN metric_resources r "
                   "ON r.project_id = s.project_id AND r.resource_id = s.resource_id "
                   "WHERE s.metric_name = 'system.memory.usage'"),
            Cell(kGauge.resource));
  ExpectRows(Query("SELECT * FROM " + Rows("metric_points") + " ORDER BY time_ns"), PointExpectations(kProject, points),
             {0, 1, 2, 3, 4});

  // The NULL rules, spelled out: NaN value/sum/min/max, value for an int
  // point (its value is int_value), int_value unless is_int, empty JSON columns.
  EXPECT_EQ(Scalar("SELECT COUNT(value) FROM " + Rows("metric_points") + " AS t"), Cell("1"));
  EXPECT_EQ(Scalar("SELECT COUNT(int_value) FROM " + Rows("metric_points") + " AS t"), Cell("1"));
  EXPECT_EQ(Scalar("SELECT COUNT(sum) FROM " + Rows("metric_points") + " AS t"), Cell("3"));
  EXPECT_EQ(Scalar("SELECT COUNT(min) FROM " + Rows("metric_points") + " AS t"), Cell("2"));
  EXPECT_EQ(Scalar("SELECT COUNT(bucket_counts) FROM " + Rows("metric_points") + " AS t"), Cell("1"));
  EXPECT_EQ(Scalar("SELECT COUNT(quantiles) FROM " + Rows("metric_points") + " AS t"), Cell("1"));
  EXPECT_EQ(Scalar("SELECT COUNT(exemplars) FROM " + Rows("metric_points") + " AS t"), Cell("1"));
  // Points join their series.
  EXPECT_EQ(Scalar("SELECT s.metric_name FROM metric_points p JOIN metric_series s "
                   "ON s.project_id = p.project_id AND s.series_id = p.series_id WHERE p.count = 10"),
            Cell("http.server.duration"));
}

// Resources work like series (below): one row per (project, resource id),
// across batches, writes and a restart, on every signal.
TEST_P(StoreConformanceTest, ResourcesAreStoredOncePerProject) {
  Open();
  SpanBatch first = MakeSpans(), second = MakeSpans(), other_project = MakeSpans(8);
  ASSERT_TRUE(Sink(Signal::kSpans)->WriteSpans({&first, &second}).ok());
  EXPECT_EQ(Count("span_resources"), 3);
  ASSERT_TRUE(Sink(Signal::kSpans)->WriteSpans({&first, &other_project}).ok());
  EXPECT_EQ(Count("span_resources"), 6);
  EXPECT_EQ(Count("spans"), 12);
  LogBatch logs = MakeLogs();
  ASSERT_TRUE(Sink(Signal::kLogs)->WriteLogs({&logs, &logs}).ok());
  EXPECT_EQ(Count("log_resources"), 2);
  // Two series under one resource, and one under another, in two batches.
  MetricBatch metrics = MakeMetrics(kProject, {kGauge, kHistogram}, {kGaugeDouble, kHistogramPoint});
  SeriesSpec same_resource = kCounter;
  same_resource.resource = kGauge.resource;
  same_resource.scope_name = kGauge.scope_name;
  same_resource.scope_version = kGauge.scope_version;
  MetricBatch more_metrics = MakeMetrics(kProject, {same_resource}, {kCounterPoint});
  ASSERT_TRUE(Sink(Signal::kMetrics)->WriteMetrics({&metrics, &more_metrics}).ok());
  EXPECT_EQ(Count("metric_series"), 3);
  EXPECT_EQ(Count("metric_resources"), 2);
  Reopen();
  ASSERT_TRUE(Sink(Signal::kSpans)->WriteSpans({&first}).ok());
  ASSERT_TRUE(Sink(Signal::kLogs)->WriteLogs({&logs}).ok());
  MetricBatch other_metrics = MakeMetrics(8, {kGauge}, {kGaugeLater});
  ASSERT_TRUE(Sink(Signal::kMetrics)->WriteMetrics({&more_metrics, &other_metrics}).ok());
  EXPECT_EQ(Count("span_resources"), 6);
  EXPECT_EQ(Count("log_resources"), 2);
  EXPECT_EQ(Count("metric_resources"), 3);  // project 8's is its own
  EXPECT_EQ(store_->Stats().metric_series, 4u);
  // Every series finds its resource.
  EXPECT_EQ(Scalar("SELECT COUNT(*) FROM metric_series s JOIN metric_resources r "
                   "ON r.project_id = s.project_id AND r.resource_id = s.resource_id"),
            Cell("4"));
  // Every span finds its resource.
  EXPECT_EQ(Scalar("SELECT COUNT(*) FROM spans s JOIN span_resources r "
                   "ON r.project_id = s.project_id AND r.resource_id = s.resource_id"),
            Cell("15"));
}

// Issue #10: the bytes a request makes the engine write follow its own size.
// One resource at the decode limits' scale (64 attributes of 4 KiB) under
// 2,000 new series: stored per series it would be 2,000 x 256 KiB = 500 MiB;
// stored once it is a few times the batch.
TEST_P(StoreConformanceTest, ALargeResourceIsWrittenOnceNotOncePerSeries) {
  Open();
  Reopen();  // the empty tables checkpointed: what follows is the batch's
  const uint64_t empty = store_->Stats().database_bytes + store_->Stats().wal_bytes;
  std::string resource = "{";
  for (int i = 0; i < 64; ++i) {
    resource += (i > 0 ? ",\"attr." : "\"attr.") + std::to_string(i) + "\":\"" + std::string(4096, 'a' + i % 26) + "\"";
  }
  resource += "}";
  ASSERT_GT(resource.size(), 256u * 1024);
  MetricBatch b;
  b.project_id = kProject;
  b.AddSeriesResource(resource, "scope", "1.0");
  constexpr int kSeries = 2000;
  for (int i = 0; i < kSeries; ++i) {
    b.series_id.push_back(i + 1);
    b.metric_name.Append("m" + std::to_string(i));
    b.metric_type.push_back(static_cast<int32_t>(MetricType::kGauge));
    b.unit.Append("");
    b.description.Append("");
    b.temporality.push_back(0);
    b.is_monotonic.push_back(0);
    b.service_name.Append("svc");
    if (i > 0) b.series_resource.push_back(0);
    b.attributes.Append("{}");
    b.point_series_id.push_back(i + 1);
    b.time_ns.push_back(1700000000000000000 + i);
    b.start_time_ns.push_back(0);
    b.value.push_back(i);
    b.int_value.push_back(0);
    b.is_int.push_back(0);
    b.count.push_back(0);
    for (std::vector<double>* v : {&b.sum, &b.min, &b.max}) v->push_back(kNaN);
    for (StringColumn* c : {&b.bucket_counts, &b.explicit_bounds, &b.exp_histogram, &b.quantiles, &b.exemplars}) {
      c->Append("");
    }
    b.flags.push_back(0);
  }
  Status s = Sink(Signal::kMetrics)->WriteMetrics({&b});
  ASSERT_TRUE(s.ok()) << s.ToString();
  const uint64_t written = store_->Stats().database_bytes + store_->Stats().wal_bytes - empty;
  Reopen();
  const uint64_t stored = store_->Stats().database_bytes + store_->Stats().wal_bytes - empty;
  EXPECT_EQ(Count("metric_series"), kSeries);
  EXPECT_EQ(Count("metric_resources"), 1);
  const uint64_t bound = 8 * b.ByteSize() + (2u << 20);
  EXPECT_LT(written, bound) << "batch " << b.ByteSize() << " bytes";
  EXPECT_LT(stored, bound) << "batch " << b.ByteSize() << " bytes";
  std::printf("[ metrics ] %s: batch %zu bytes; written %llu, stored after checkpoint %llu\n", GetParam().c_str(),
              b.ByteSize(), static_cast<unsigned long long>(written), static_cast<unsigned long long>(stored));
}

TEST_P(StoreConformanceTest, SeriesAreStoredOncePerProject) {
  Open();
  SignalSink* sink = Sink(Signal::kMetrics);
  // One write of two batches repeating the gauge series (and a batch that
  // repeats a series within itself), then a second write repeating it again.
  MetricBatch first = MakeMetrics(kProject, {kGauge, kHistogram}, {kGaugeDouble, kHistogramPoint});
  MetricBatch again = MakeMetrics(kProject, {kGauge, kGauge}, {kGaugeInt});
  Status s = sink->WriteMetrics({&first, &again});
  ASSERT_TRUE(s.ok()) << s.ToString();
  EXPECT_EQ(Count("metric_series"), 2);
  EXPECT_EQ(Count("metric_points"), 3);

  MetricBatch later = MakeMetrics(kProject, {kGauge, kCounter}, {kGaugeLater, kCounterPoint});
  // The same series id in another project is another series.
  MetricBatch other_project = MakeMetrics(8, {kGauge}, {kGaugeLater});
  s = sink->WriteMetrics({&later, &other_project});
  ASSERT_TRUE(s.ok()) << s.ToString();
  EXPECT_EQ(Count("metric_series"), 4);
  EXPECT_EQ(Count("metric_points"), 6);
  EXPECT_EQ(Scalar("SELECT COUNT(*) FROM metric_series WHERE series_id = " + std::to_string(kGaugeSeries)), Cell("2"));
  EXPECT_EQ(
      Scalar("SELECT COUNT(DISTINCT project_id) FROM metric_series WHERE series_id = " + std::to_string(kGaugeSeries)),
      Cell("2"));
  EXPECT_EQ(Scalar("SELECT COUNT(*) FROM metric_points WHERE series_id = " + std::to_string(kGaugeSeries)), Cell("4"));

  StoreStats stats = store_->Stats();
  EXPECT_EQ(stats.metric_series, 4u);
  EXPECT_EQ(stats.rows[static_cast<int>(Signal::kMetrics)], 6u);

  // What the series cap loads at start: each (project, series) once.
  std::set<std::pair<int64_t, int64_t>> listed;
  size_t calls = 0;
  ASSERT_TRUE(store_
                  ->ForEachSeries([&](int64_t project, int64_t series) {
                    calls++;
                    listed.insert({project, series});
                  })
                  .ok());
  EXPECT_EQ(calls, 4u);
  EXPECT_EQ(listed.size(), 4u);
  EXPECT_TRUE(listed.contains({kProject, kGaugeSeries}));
  EXPECT_TRUE(listed.contains({8, kGaugeSeries}));
}

// --- Stats -------------------------------------------------------------------------

TEST_P(StoreConformanceTest, StatsCountCommittedRows) {
  Open();
  StoreStats empty = store_->Stats();
  EXPECT_EQ(empty.rows[0] + empty.rows[1] + empty.rows[2] + empty.metric_series, 0u);

  SpanBatch spans = MakeSpans();
  LogBatch logs = MakeLogs();
  MetricBatch metrics = MakeMetrics(kProject, {kGauge, kHistogram}, {kGaugeDouble, kGaugeInt, kHistogramPoint});
  ASSERT_TRUE(Sink(Signal::kSpans)->WriteSpans({&spans, &spans}).ok());
  ASSERT_TRUE(Sink(Signal::kLogs)->WriteLogs({&logs}).ok());
  ASSERT_TRUE(Sink(Signal::kMetrics)->WriteMetrics({&metrics}).ok());

  StoreStats stats = store_->Stats();
  EXPECT_EQ(stats.rows[static_cast<int>(Signal::kSpans)], 6u);
  EXPECT_EQ(stats.rows[static_cast<int>(Signal::kLogs)], 2u);
  EXPECT_EQ(stats.rows[static_cast<int>(Signal::kMetrics)], 3u);
  EXPECT_EQ(stats.metric_series, 2u);
  EXPECT_GT(stats.database_bytes, 0u);
  // The counters agree with the tables.
  EXPECT_EQ(Count("spans"), 6);
  EXPECT_EQ(Count("logs"), 2);
  EXPECT_EQ(Count("metric_points"), 3);
}

// --- Atomicity ----------------------------------------------------------------------

TEST_P(StoreConformanceTest, FailedSpanWriteLeavesNothing) {
  Open();
  SignalSink* sink = Sink(Signal::kSpans);
  SpanBatch good = MakeSpans();
  // The bad batch comes second, so the good one is already appended when the
  // write fails: the rollback has to take it back.
  SpanBatch short_column = MakeSpans();
  short_column.end_time_ns.pop_back();
  Status s = sink->WriteSpans({&good, &short_column});
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << s.ToString();

  SpanBatch bad_utf8 = MakeSpans();
  bad_utf8.attributes = StringColumn();
  bad_utf8.attributes.Append("{}");
  bad_utf8.attributes.Append("{\"k\":\"\xff\xfe\"}");
  bad_utf8.attributes.Append("{}");
  s = sink->WriteSpans({&good, &good, &bad_utf8});
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << s.ToString();

  // A row boundary inside a multi-byte character: the packed buffer is valid
  // UTF-8 ("é") but each row on its own is not.
  SpanBatch split = MakeSpans();
  split.name = StringColumn();
  split.name.Append("a");
  split.name.buffer().append("\xc3");
  split.name.CommitRow();
  split.name.buffer().append("\xa9");
  split.name.CommitRow();
  s = sink->WriteSpans({&good, &split});
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << s.ToString();

  EXPECT_EQ(Count("spans"), 0);
  EXPECT_EQ(store_->Stats().rows[static_cast<int>(Signal::kSpans)], 0u);

  // The sink is still usable after a failed write.
  s = sink->WriteSpans({&good});
  ASSERT_TRUE(s.ok()) << s.ToString();
  EXPECT_EQ(Count("spans"), 3);
  EXPECT_EQ(store_->Stats().rows[static_cast<int>(Signal::kSpans)], 3u);
}

TEST_P(StoreConformanceTest, FailedLogWriteLeavesNothing) {
  Open();
  SignalSink* sink = Sink(Signal::kLogs);
  LogBatch good = MakeLogs();
  LogBatch bad = MakeLogs();
  bad.body = StringColumn();
  bad.body.Append("ok");
  bad.body.Append("\xc0\xaf");  // overlong encoding of '/'
  Status s = sink->WriteLogs({&good, &bad});
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << s.ToString();
  EXPECT_EQ(Count("logs"), 0);
  ASSERT_TRUE(sink->WriteLogs({&good}).ok());
  EXPECT_EQ(Count("logs"), 2);
}

TEST_P(StoreConformanceTest, FailedMetricWriteLeavesNoSeriesBehind) {
  Open();
  SignalSink* sink = Sink(Signal::kMetrics);
  MetricBatch good = MakeMetrics(kProject, {kGauge}, {kGaugeDouble});
  MetricBatch bad = MakeMetrics(kProject, {kHistogram}, {kHistogramPoint});
  bad.is_int.clear();
  Status s = sink->WriteMetrics({&good, &bad});
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << s.ToString();
  EXPECT_EQ(Count("metric_series"), 0);
  EXPECT_EQ(Count("metric_points"), 0);
  EXPECT_EQ(store_->Stats().metric_series, 0u);

  // The failed write must not have marked the gauge series as stored.
  s = sink->WriteMetrics({&good});
  ASSERT_TRUE(s.ok()) << s.ToString();
  EXPECT_EQ(Count("metric_series"), 1);
  EXPECT_EQ(Count("metric_points"), 1);
  EXPECT_EQ(store_->Stats().metric_series, 1u);
}

TEST_P(StoreConformanceTest, SinkRejectsOtherSignals) {
  Open();
  LogBatch logs = MakeLogs();
  EXPECT_FALSE(Sink(Signal::kSpans)->WriteLogs({&logs}).ok());
  EXPECT_EQ(Count("logs"), 0);
}

// --- Many rows ------------------------------------------------------------------------

// Batches larger than an engine's internal chunk (DuckDB: 2048 rows) must not
// leak NULLs or values from one chunk into the next.
TEST_P(StoreConformanceTest, LargeBatchesKeepEveryRow) {
  Open();
  constexpr int kRows = 5000;
  SpanBatch spans;
  spans.project_id = kProject;
  MetricBatch metrics;
  metrics.project_id = kProject;
  metrics.series_id.push_back(kGaugeSeries);
  metrics.metric_name.Append("g");
  metrics.metric_type.push_back(1);
  metrics.unit.Append("");
  metrics.description.Append("");
  metrics.temporality.push_back(0);
  metrics.is_monotonic.push_back(0);
  metrics.service_name.Append("svc");
  metrics.AddSeriesResource("{}", "", "");
  metrics.attributes.Append("{}");
  int64_t duration_sum = 0;
  int64_t int_sum = 0;
  int ints = 0, values = 0, sums = 0, buckets = 0, roots = 0;
  for (int i = 0; i < kRows; ++i) {
    std::string id = std::to_string(1000000 + i);
    spans.trace_id_high.push_back(static_cast<uint64_t>(i) << 40);
    spans.trace_id_low.push_back(~static_cast<uint64_t>(i));  // above INT64_MAX: stored negative
    spans.span_id.push_back(1000000 + i);
    spans.parent_span_id.push_back(i % 7 == 0 ? 0 : 2000000 + i);
    if (i % 7 == 0) ++roots;
    spans.trace_state.Append("");
    spans.flags.push_back(static_cast<uint32_t>(i));
    spans.name.Append(i % 2 ? "GET /a" : "a rather long operation name " + id);
    spans.kind.push_back(i % 5);
    spans.start_time_ns.push_back(1700000000000000000 + i * 1000);
    spans.end_time_ns.push_back(1700000000000000000 + i * 1000 + i * 3);
    duration_sum += i * 3;
    spans.status_code.push_back(i % 3);
    spans.status_message.Append("");
    spans.service_name.Append("svc");
    spans.http_route.Append("/a");
    spans.http_method.Append("GET");
    spans.http_status_code.push_back(200);
    spans.db_system.Append("");
    spans.exception_type.Append("");
    spans.exception_message.Append("");
    spans.exception_group.Append("");
    spans.attributes.Append("{\"i\":" + std::to_string(i) + "}");
    spans.events.Append("[]");
    spans.links.Append("[]");
    spans.dropped_attributes_count.push_back(0);
    spans.dropped_events_count.push_back(0);
    spans.dropped_links_count.push_back(0);
    AddResource(&spans.resources, &spans.resource_id, i % 3 == 0 ? "{}" : R"({"k":1})", "", "", "{}");

    bool is_int = i % 2 == 0;
    bool has_sum = i % 3 != 0;
    bool has_buckets = i % 4 == 1;
    ints += is_int;
    values += !is_int && i % 5 != 0;
    sums += has_sum;
    buckets += has_buckets;
    if (is_int) int_sum += i;
    metrics.point_series_id.push_back(kGaugeSeries);
    metrics.time_ns.push_back(1700000000000000000 + i);
    metrics.start_time_ns.push_back(0);
    metrics.value.push_back(i % 5 == 0 ? kNaN : static_cast<double>(i));
    metrics.int_value.push_back(i);
    metrics.is_int.push_back(is_int ? 1 : 0);
    metrics.count.push_back(static_cast<uint64_t>(i));
    metrics.sum.push_back(has_sum ? 0.5 : kNaN);
    metrics.min.push_back(kNaN);
    metrics.max.push_back(kNaN);
    metrics.bucket_counts.Append(has_buckets ? "[1,2,3]" : "");
    metrics.explicit_bounds.Append("");
    metrics.exp_histogram.Append("");
    metrics.quantiles.Append("");
    metrics.exemplars.Append("");
    metrics.flags.push_back(0);
  }
  Status written = Sink(Signal::kSpans)->WriteSpans({&spans});
  ASSERT_TRUE(written.ok()) << written.ToString();
  written = Sink(Signal::kMetrics)->WriteMetrics({&metrics});
  ASSERT_TRUE(written.ok()) << written.ToString();

  EXPECT_EQ(Count("spans"), kRows);
  EXPECT_EQ(Scalar("SELECT SUM(duration_ns) FROM spans"), Int(duration_sum));
  EXPECT_EQ(Scalar("SELECT COUNT(*) FROM " + Rows("spans") + " AS t WHERE parent_span_id IS NULL"), Int(roots));
  EXPECT_EQ(Scalar("SELECT SUM(flags) FROM spans"), Int(int64_t{kRows} * (kRows - 1) / 2));
  EXPECT_EQ(Scalar("SELECT name FROM spans WHERE span_id = 1004096"), Cell("a rather long operation name 1004096"));
  EXPECT_EQ(Scalar("SELECT attributes FROM spans WHERE span_id = 1004097"), Cell("{\"i\":4097}"));
  EXPECT_EQ(Scalar("SELECT " + Hex16("trace_id_high") + " || " + Hex16("trace_id_low") +
                   " FROM spans WHERE span_id = 1002048"),
            Cell(TraceIdHex(uint64_t{2048} << 40, ~uint64_t{2048})));

  EXPECT_EQ(Count("metric_points"), kRows);
  EXPECT_EQ(Scalar("SELECT COUNT(value) FROM " + Rows("metric_points") + " AS t"), Int(values));
  EXPECT_EQ(Scalar("SELECT COUNT(int_value) FROM " + Rows("metric_points") + " AS t"), Int(ints));
  EXPECT_EQ(Scalar("SELECT SUM(int_value) FROM " + Rows("metric_points") + " AS t"), Int(int_sum));
  EXPECT_EQ(Scalar("SELECT COUNT(sum) FROM " + Rows("metric_points") + " AS t"), Int(sums));
  EXPECT_EQ(Scalar("SELECT COUNT(bucket_counts) FROM " + Rows("metric_points") + " AS t"), Int(buckets));
  EXPECT_EQ(Scalar("SELECT COUNT(*) FROM " + Rows("metric_points") + " AS t WHERE int_value IS NULL AND count % 2 = 0"),
            Cell("0"));
  EXPECT_EQ(Count("metric_series"), 1);
}

TEST_P(StoreConformanceTest, ConcurrentSinksLoseNothing) {
  Open();
  constexpr int kWrites = 20;
  SignalSink* spans_a = Sink(Signal::kSpans);
  SignalSink* spans_b = Sink(Signal::kSpans);
  SignalSink* logs = Sink(Signal::kLogs);
  SignalSink* metrics = Sink(Signal::kMetrics);
  const SpanBatch span_batch = MakeSpans();
  const LogBatch log_batch = MakeLogs();
  const MetricBatch metric_batch = MakeMetrics(kProject, {kGauge, kHistogram}, {kGaugeDouble, kHistogramPoint});
  std::atomic<int> failures{0};
  auto run = [&](std::function<Status()> write) {
    return std::thread([&failures, write] {
      for (int i = 0; i < kWrites; ++i) {
        if (!write().ok()) failures.fetch_add(1);
      }
    });
  };
  std::vector<std::thread> threads;
  threads.push_back(run([&] { return spans_a->WriteSpans({&span_batch}); }));
  threads.push_back(run([&] { return spans_b->WriteSpans({&span_batch, &span_batch}); }));
  threads.push_back(run([&] { return logs->WriteLogs({&log_batch}); }));
  threads.push_back(run([&] { return metrics->WriteMetrics({&metric_batch}); }));
  for (int i = 0; i < 10; ++i) {
    (void)store_->Stats();
    EXPECT_GE(Count("spans"), 0);
  }
  for (std::thread& t : threads) t.join();

  EXPECT_EQ(failures.load(), 0);
  EXPECT_EQ(Count("spans"), 3 * kWrites * 3);
  EXPECT_EQ(Count("logs"), 2 * kWrites);
  EXPECT_EQ(Count("metric_points"), 2 * kWrites);
  EXPECT_EQ(Count("metric_series"), 2);
  StoreStats stats = store_->Stats();
  EXPECT_EQ(stats.rows[static_cast<int>(Signal::kSpans)], uint64_t{3 * kWrites * 3});
  EXPECT_EQ(stats.rows[static_cast<int>(Signal::kLogs)], uint64_t{2 * kWrites});
  EXPECT_EQ(stats.rows[static_cast<int>(Signal::kMetrics)], uint64_t{2 * kWrites});
  EXPECT_EQ(stats.metric_series, 2u);
}

// --- Persistence -------------------------------------------------------------------------

TEST_P(StoreConformanceTest, ReopenKeepsDataCountersAndSeries) {
  Open();
  SpanBatch spans = MakeSpans();
  LogBatch logs = MakeLogs();
  MetricBatch metrics = MakeMetrics(kProject, {kGauge, kHistogram}, {kGaugeDouble, kHistogramPoint});
  ASSERT_TRUE(Sink(Signal::kSpans)->WriteSpans({&spans}).ok());
  ASSERT_TRUE(Sink(Signal::kLogs)->WriteLogs({&logs}).ok());
  ASSERT_TRUE(Sink(Signal::kMetrics)->WriteMetrics({&metrics}).ok());
  Reopen();

  StoreStats stats = store_->Stats();
  EXPECT_EQ(stats.rows[static_cast<int>(Signal::kSpans)], 3u);
  EXPECT_EQ(stats.rows[static_cast<int>(Signal::kLogs)], 2u);
  EXPECT_EQ(stats.rows[static_cast<int>(Signal::kMetrics)], 2u);
  EXPECT_EQ(stats.metric_series, 2u);
  EXPECT_GT(stats.database_bytes, 0u);
  // Close checkpointed: nothing is left in the WAL.
  EXPECT_EQ(stats.wal_bytes, 0u);
  ExpectRows(Query("SELECT * FROM " + Rows("spans") + " ORDER BY start_time_ns"), SpanExpectations(spans), {0, 1, 2});
  // Every row has a detail: row 0 empty events and links ('[]'), row 1 all
  // of them, row 2 a trace state and status message.
  ExpectRows(Query("SELECT * FROM " + Rows("span_details") + " ORDER BY start_time_ns"), SpanDetailExpectations(spans),
             {0, 1, 2});
  ExpectRows(Query("SELECT * FROM " + Rows("logs") + " ORDER BY observed_time_ns"), LogExpectations(logs), {0, 1});

  // Series known before the restart are not written again.
  MetricBatch more = MakeMetrics(kProject, {kGauge, kCounter}, {kGaugeLater, kCounterPoint});
  ASSERT_TRUE(Sink(Signal::kMetrics)->WriteMetrics({&more}).ok());
  EXPECT_EQ(Count("metric_series"), 3);
  EXPECT_EQ(store_->Stats().metric_series, 3u);
  EXPECT_EQ(store_->Stats().rows[static_cast<int>(Signal::kMetrics)], 4u);
}

TEST_P(StoreConformanceTest, OpenRejectsATableWithOtherColumns) {
  Open();
  const char* type = IsClickHouse() ? "Int64" : "BIGINT";
  ASSERT_TRUE(store_->ExecuteSql(std::string("ALTER TABLE logs ADD COLUMN extra ") + type).ok());
  ASSERT_TRUE(store_->Close().ok());
  store_.reset();
  Result<std::unique_ptr<TelemetryStore>> reopened = StoreRegistry::Instance().Open(Engine(), Options());
  ASSERT_FALSE(reopened.ok());
  EXPECT_EQ(reopened.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(reopened.status().message().find("logs"), std::string::npos) << reopened.status().ToString();
}

// At the current schema version every table has every column: one missing
// its derived columns (they are added only when migrating a version 1
// database; schema_version_test.cc) is refused, naming the table.
TEST_P(StoreConformanceTest, OpenRefusesSpansWithoutDerivedColumnsAtTheCurrentVersion) {
  SKIP_ON_CLICKHOUSE("the embedded engines' migration path (DROP INDEX); ClickHouse has its own schema version");
  Open();
  SpanBatch spans = MakeSpans();
  ASSERT_TRUE(Sink(Signal::kSpans)->WriteSpans({&spans}).ok());
  sinks_.clear();
  Result<SqlResult> dropped_index = store_->ExecuteSql("DROP INDEX IF EXISTS spans_entry_stats");
  ASSERT_TRUE(dropped_index.ok()) << dropped_index.status().ToString();
  for (const char* column : {"has_exception", "is_entry", "endpoint"}) {
    Result<SqlResult> dropped = store_->ExecuteSql(std::string("ALTER TABLE spans DROP COLUMN ") + column);
    ASSERT_TRUE(dropped.ok()) << dropped.status().ToString();
  }
  ASSERT_TRUE(store_->Close().ok());
  store_.reset();
  Result<std::unique_ptr<TelemetryStore>> reopened = StoreRegistry::Instance().Open(Engine(), Options());
  ASSERT_FALSE(reopened.ok());
  EXPECT_EQ(reopened.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(reopened.status().message().find("table spans"), std::string::npos) << reopened.status().ToString();
}

// SQLite takes a partial index only for a query that holds its condition as
// written: the exception reads hold schema::kSpanDetailHasException, and so
// read the rows with an exception alone, not every detail row in range.
TEST_P(StoreConformanceTest, SqliteReadsTheSpanExceptionsThroughTheirPartialIndex) {
  if (GetParam() != "sqlite") GTEST_SKIP() << GetParam() << ": the index is SQLite's";
  Open();
  SpanBatch spans = MakeSpans();
  ASSERT_TRUE(Sink(Signal::kSpans)->WriteSpans({&spans}).ok());
  const SqlResult plan =
      Query(std::string("EXPLAIN QUERY PLAN SELECT span_id FROM span_details WHERE +project_id = 1 AND start_time_ns "
                        ">= 0 AND start_time_ns < 10 AND ") +
            schema::kSpanDetailHasException);
  std::string text;
  for (const auto& row : plan.rows) {
    for (const Cell& c : row) text += c.value_or("") + " ";
  }
  EXPECT_NE(text.find("USING INDEX span_details_exceptions"), std::string::npos) << text;
}

// --- Schema versions ------------------------------------------------------------------

TEST_P(StoreConformanceTest, ANewDatabaseRecordsTheCurrentVersion) {
  SKIP_ON_CLICKHOUSE("ClickHouse numbers its schema on its own (clickhouse_schema.h kSchemaVersion)");
  Open();
  EXPECT_EQ(store_->schema_report().found_version, 0);
  EXPECT_EQ(store_->schema_report().version, schema::kCurrentVersion);
  EXPECT_EQ(Scalar("SELECT version FROM schema_version"), Cell(std::to_string(schema::kCurrentVersion)));
  Reopen();
  EXPECT_EQ(store_->schema_report().found_version, schema::kCurrentVersion);
  EXPECT_TRUE(store_->schema_report().applied.empty());
  EXPECT_EQ(Count("schema_version"), 1);
}

TEST_P(StoreConformanceTest, ANewerVersionIsRefused) {
  SKIP_ON_CLICKHOUSE("ClickHouse numbers its schema on its own; ClickHouseStoreTest checks a newer one is refused");
  Open();
  SpanBatch spans = MakeSpans();
  ASSERT_TRUE(Sink(Signal::kSpans)->WriteSpans({&spans}).ok());
  sinks_.clear();
  const std::string newer = std::to_string(schema::kCurrentVersion + 1);
  ASSERT_TRUE(store_->ExecuteSql("UPDATE schema_version SET version = " + newer).ok());
  ASSERT_TRUE(store_->Close().ok());
  store_.reset();

  Result<std::unique_ptr<TelemetryStore>> reopened = StoreRegistry::Instance().Open(Engine(), Options());
  ASSERT_FALSE(reopened.ok());
  EXPECT_EQ(reopened.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(reopened.status().message().find("schema version " + newer + ", newer than"), std::string::npos)
      << reopened.status().ToString();
  // Nor does migrate touch it.
  Result<SchemaReport> migrated = MigrateStore(GetParam(), Options());
  EXPECT_FALSE(migrated.ok());
}

// A database written before versions were recorded, with no rows: it is
// stamped with the current version, whatever it lacked added and its empty
// tables of an older layout recreated.
TEST_P(StoreConformanceTest, AnEmptyDatabaseWithoutAVersionIsStamped) {
  SKIP_ON_CLICKHOUSE("the embedded engines' pre-version databases do not exist on ClickHouse");
  Open();
  ASSERT_TRUE(store_->ExecuteSql("DROP TABLE schema_version").ok());
  ASSERT_TRUE(store_->ExecuteSql("DROP TABLE log_resources").ok());
  ASSERT_TRUE(store_->ExecuteSql("DROP TABLE metric_resources").ok());
  ASSERT_TRUE(store_->ExecuteSql("DROP TABLE metric_series").ok());
  ASSERT_TRUE(store_
                  ->ExecuteSql("CREATE TABLE metric_series (project_id BIGINT, series_id BIGINT, resource_attributes "
                               "VARCHAR, attributes VARCHAR)")
                  .ok());
  Reopen();
  EXPECT_EQ(store_->schema_report().found_version, 0);
  EXPECT_EQ(Scalar("SELECT version FROM schema_version"), Cell(std::to_string(schema::kCurrentVersion)));
  EXPECT_EQ(Count("log_resources"), 0);
  EXPECT_EQ(Count("metric_resources"), 0);
  MetricBatch metrics = MakeMetrics(kProject, {kGauge}, {kGaugeDouble});
  ASSERT_TRUE(Sink(Signal::kMetrics)->WriteMetrics({&metrics}).ok());
  EXPECT_EQ(Scalar("SELECT COUNT(*) FROM metric_series s JOIN metric_resources r "
                   "ON r.project_id = s.project_id AND r.resource_id = s.resource_id"),
            Cell("1"));
}

// Rows but no version: written before versions were recorded, version 1,
// whose ids need `sightline migrate` (schema_version_test.cc migrates one).
TEST_P(StoreConformanceTest, ADatabaseWithRowsAndNoVersionIsVersionOne) {
  SKIP_ON_CLICKHOUSE("the embedded engines' pre-version databases do not exist on ClickHouse");
  Open();
  SpanBatch spans = MakeSpans();
  ASSERT_TRUE(Sink(Signal::kSpans)->WriteSpans({&spans}).ok());
  sinks_.clear();
  ASSERT_TRUE(store_->ExecuteSql("DROP TABLE schema_version").ok());
  ASSERT_TRUE(store_->Close().ok());
  store_.reset();
  Result<std::unique_ptr<TelemetryStore>> reopened = StoreRegistry::Instance().Open(Engine(), Options());
  ASSERT_FALSE(reopened.ok());
  EXPECT_NE(reopened.status().message().find("schema version 1 and this build uses " +
                                             std::to_string(schema::kCurrentVersion)),
            std::string::npos)
      << reopened.status().ToString();
  EXPECT_NE(reopened.status().message().find("sightline migrate"), std::string::npos) << reopened.status().ToString();
}

TEST_P(StoreConformanceTest, ReopenWithoutCloseKeepsData) {
  Open();
  SpanBatch spans = MakeSpans();
  ASSERT_TRUE(Sink(Signal::kSpans)->WriteSpans({&spans}).ok());
  sinks_.clear();
  store_.reset();  // the destructor, not Close()
  Open();
  EXPECT_EQ(Count("spans"), 3);
  EXPECT_EQ(store_->Stats().rows[static_cast<int>(Signal::kSpans)], 3u);
}

// A committed write survives the process being killed right after Write
// returns: no Close, no destructors, no checkpoint.
TEST_P(StoreConformanceTest, CommittedWriteSurvivesKill9) {
  // The child would run the engine in-process after a fork of a process whose
  // engine threads held locks: it hangs. Kill -9 of the server side is the
  // "clickhouse" variant's.
  if (GetParam() == "chdb") GTEST_SKIP() << "chdb: an in-process engine does not survive fork()";
  pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    Result<std::unique_ptr<TelemetryStore>> store = StoreRegistry::Instance().Open(Engine(), Options());
    if (!store.ok()) ::_exit(2);
    Result<std::unique_ptr<SignalSink>> spans = (*store)->NewSink(Signal::kSpans);
    Result<std::unique_ptr<SignalSink>> metrics = (*store)->NewSink(Signal::kMetrics);
    if (!spans.ok() || !metrics.ok()) ::_exit(3);
    SpanBatch batch = MakeSpans();
    MetricBatch metric_batch = MakeMetrics(kProject, {kGauge}, {kGaugeDouble, kGaugeInt});
    if (!(*spans)->WriteSpans({&batch, &batch}).ok()) ::_exit(4);
    if (!(*metrics)->WriteMetrics({&metric_batch}).ok()) ::_exit(5);
    ::kill(::getpid(), SIGKILL);
    ::_exit(6);
  }
  int wstatus = 0;
  ASSERT_EQ(::waitpid(child, &wstatus, 0), child);
  ASSERT_TRUE(WIFSIGNALED(wstatus)) << "child exited with " << WEXITSTATUS(wstatus);
  ASSERT_EQ(WTERMSIG(wstatus), SIGKILL);

  Open();
  EXPECT_EQ(Count("spans"), 6);
  EXPECT_EQ(Count("metric_series"), 1);
  EXPECT_EQ(Count("metric_points"), 2);
  EXPECT_EQ(Scalar("SELECT COUNT(*) FROM spans WHERE name = 'SELECT café ✓'"), Cell("2"));
  EXPECT_EQ(store_->Stats().rows[static_cast<int>(Signal::kSpans)], 6u);
}

// --- Lifecycle and SQL -------------------------------------------------------------------

TEST_P(StoreConformanceTest, CloseRefusesWhileSinksAreOpen) {
  Open();
  ASSERT_NE(Sink(Signal::kSpans), nullptr);
  EXPECT_EQ(store_->Close().code(), StatusCode::kInternal);
  sinks_.clear();
  EXPECT_TRUE(store_->Close().ok());
  EXPECT_TRUE(store_->Close().ok());  // idempotent
  EXPECT_FALSE(store_->NewSink(Signal::kSpans).ok());
  EXPECT_FALSE(store_->ExecuteSql("SELECT 1").ok());
}

TEST_P(StoreConformanceTest, ExecuteSqlReportsBadSqlAsInvalidArgument) {
  Open();
  EXPECT_EQ(store_->ExecuteSql("SELECT * FROM no_such_table").status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(store_->ExecuteSql("SELEKT 1").status().code(), StatusCode::kInvalidArgument);
  SqlResult r = Query("SELECT 1 AS one, NULL AS missing, 'x' AS text");
  EXPECT_EQ(r.columns, (std::vector<std::string>{"one", "missing", "text"}));
  ASSERT_EQ(r.rows.size(), 1u);
  EXPECT_EQ(r.rows[0], (std::vector<Cell>{Cell("1"), std::nullopt, Cell("x")}));
}

// Text is read with its length: a NUL byte inside a value (valid UTF-8, and
// OTLP strings may carry one) does not cut it short, on the dashboards' read
// path or in ExecuteSql.
TEST_P(StoreConformanceTest, TextWithANulByteReadsBackWhole) {
  Open();
  LogBatch logs = MakeLogs();
  const std::string body("before\0after, long enough to be stored out of line", 51);
  logs.body = StringColumn();
  logs.body.Append(body);
  logs.body.Append("");
  ASSERT_TRUE(Sink(Signal::kLogs)->WriteLogs({&logs}).ok());

  Result<std::unique_ptr<TelemetryReader>> reader = store_->AcquireReader(1000);
  ASSERT_TRUE(reader.ok()) << reader.status().ToString();
  LogPageQuery q;
  q.filter.project_id = kProject;
  q.filter.range = {1700000000000000000, 1700000002000000000};
  Result<LogPage> page = (*reader)->Logs(q);
  ASSERT_TRUE(page.ok()) << page.status().ToString();
  ASSERT_EQ(page->records.size(), 1u);
  EXPECT_EQ(page->records[0].body, body);
  EXPECT_EQ(Scalar("SELECT body FROM logs WHERE time_ns <> 0"), Cell(body));
  EXPECT_EQ(Scalar("SELECT CASE WHEN time_ns = 0 THEN NULL ELSE body END FROM logs WHERE time_ns = 0"), std::nullopt);
}

// Text around the length DuckDB keeps inside a row's own slot (12 bytes)
// reads back whole and compares equal, also where the slot held a longer or
// a different string in the batch before.
TEST_P(StoreConformanceTest, TextAroundTheInlineLengthReadsBackAndCompares) {
  Open();
  std::vector<std::string> names;
  for (size_t size = 16; size-- > 0;) names.emplace_back(size, static_cast<char>('a' + size));
  for (const std::string& name : names) {
    LogBatch logs = MakeLogs();
    logs.service_name = StringColumn();
    logs.service_name.Append(name);
    logs.service_name.Append("auth");
    ASSERT_TRUE(Sink(Signal::kLogs)->WriteLogs({&logs}).ok());
  }
  for (const std::string& name : names) {
    EXPECT_EQ(Scalar("SELECT COUNT(*) FROM logs WHERE service_name = '" + name + "'"), Int(1)) << name.size();
    EXPECT_EQ(Scalar("SELECT MAX(length(service_name)) FROM logs WHERE service_name = '" + name + "'"),
              Int(static_cast<int64_t>(name.size())));
  }
  EXPECT_EQ(Scalar("SELECT COUNT(DISTINCT service_name) FROM logs"), Int(17));  // and "auth"
}

TEST_P(StoreConformanceTest, ExecuteSqlShowsNumbersAsTheEngineWritesThem) {
  SKIP_ON_CLICKHOUSE("the expected texts are DuckDB's and SQLite's number formatting");
  Open();
  SqlResult r = Query("SELECT 12.5 * 2, CAST(3 AS DOUBLE), 7 / 2.0, COUNT(*) FROM (SELECT 1) t");
  ASSERT_EQ(r.rows.size(), 1u);
  EXPECT_EQ(r.rows[0], (std::vector<Cell>{Cell("25.0"), Cell("3.0"), Cell("3.5"), Cell("1")}));
}

TEST_P(StoreConformanceTest, FilesLiveInTheDataDirectory) {
  SKIP_ON_CLICKHOUSE("the data live in the ClickHouse server, not in --data");
  Open();
  const char* file = GetParam() == "duckdb" ? "telemetry.duckdb" : "telemetry.sqlite";
  EXPECT_TRUE(std::filesystem::exists(dir_.path() / file));
  EXPECT_EQ(store_->Stats().database_bytes, std::filesystem::file_size(dir_.path() / file));
}

INSTANTIATE_TEST_SUITE_P(Engines, StoreConformanceTest, ::testing::Values("duckdb", "sqlite", "clickhouse", "chdb"),
                         [](const ::testing::TestParamInfo<std::string>& info) { return info.param; });

TEST(StoreConformanceRegistry, UnknownEngineIsInvalidArgument) {
  RegisterBuiltinStores();
  RegisterBuiltinStores();  // idempotent
  TempDir dir;
  StoreOptions options;
  options.data_dir = dir.str();
  Result<std::unique_ptr<TelemetryStore>> store = StoreRegistry::Instance().Open("nope", options);
  ASSERT_FALSE(store.ok());
  EXPECT_EQ(store.status().code(), StatusCode::kInvalidArgument);
  std::vector<std::string> names = StoreRegistry::Instance().Names();
  EXPECT_NE(std::find(names.begin(), names.end(), "duckdb"), names.end());
  EXPECT_NE(std::find(names.begin(), names.end(), "sqlite"), names.end());
  EXPECT_NE(std::find(names.begin(), names.end(), "clickhouse"), names.end());
}

// The DuckDB engine relies on appender flushes joining the connection's
// explicit transaction. This checks it on the library itself: flushed rows are
// invisible to other connections until COMMIT and gone after ROLLBACK.
TEST(StoreConformanceDuckDb, AppenderFlushJoinsExplicitTransaction) {
  TempDir dir;
  std::string path = (dir.path() / "t.duckdb").string();
  duckdb_database db = nullptr;
  ASSERT_EQ(duckdb_open(path.c_str(), &db), DuckDBSuccess);
  duckdb_connection writer = nullptr, reader = nullptr;
  ASSERT_EQ(duckdb_connect(db, &writer), DuckDBSuccess);
  ASSERT_EQ(duckdb_connect(db, &reader), DuckDBSuccess);
  auto exec = [](duckdb_connection c, const char* sql) {
    duckdb_result r;
    duckdb_state st = duckdb_query(c, sql, &r);
    duckdb_destroy_result(&r);
    return st;
  };
  auto count = [](duckdb_connection c) {
    duckdb_result r;
    EXPECT_EQ(duckdb_query(c, "SELECT COUNT(*) FROM t", &r), DuckDBSuccess);
    int64_t n = duckdb_value_int64(&r, 0, 0);
    duckdb_destroy_result(&r);
    return n;
  };
  auto append = [](duckdb_connection c, int rows) {
    duckdb_appender a = nullptr;
    ASSERT_EQ(duckdb_appender_create(c, nullptr, "t", &a), DuckDBSuccess);
    for (int i = 0; i < rows; ++i) {
      ASSERT_EQ(duckdb_appender_begin_row(a), DuckDBSuccess);
      ASSERT_EQ(duckdb_append_int64(a, i), DuckDBSuccess);
      ASSERT_EQ(duckdb_append_varchar_length(a, "row", 3), DuckDBSuccess);
      ASSERT_EQ(duckdb_appender_end_row(a), DuckDBSuccess);
    }
    ASSERT_EQ(duckdb_appender_flush(a), DuckDBSuccess);
    ASSERT_EQ(duckdb_appender_destroy(&a), DuckDBSuccess);
  };
  ASSERT_EQ(exec(writer, "CREATE TABLE t (x BIGINT, s VARCHAR)"), DuckDBSuccess);

  ASSERT_EQ(exec(writer, "BEGIN TRANSACTION"), DuckDBSuccess);
  append(writer, 1000);
  EXPECT_EQ(count(writer), 1000);  // visible inside the transaction
  EXPECT_EQ(count(reader), 0);     // not outside it
  ASSERT_EQ(exec(writer, "ROLLBACK"), DuckDBSuccess);
  EXPECT_EQ(count(writer), 0);
  EXPECT_EQ(count(reader), 0);

  ASSERT_EQ(exec(writer, "BEGIN TRANSACTION"), DuckDBSuccess);
  append(writer, 500);
  EXPECT_EQ(count(reader), 0);
  ASSERT_EQ(exec(writer, "COMMIT"), DuckDBSuccess);
  EXPECT_EQ(count(reader), 500);

  duckdb_disconnect(&reader);
  duckdb_disconnect(&writer);
  duckdb_close(&db);
}

}  // namespace
}  // namespace sightline
