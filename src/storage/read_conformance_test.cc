// The read conformance suite: every operation of storage/telemetry_reader.h
// on the fixed dataset of storage/testing/read_dataset.h.
//
// Two layers:
// - ReadReferenceTest checks the in-memory reference engine against answers
//   computed by hand from the dataset and written here as literals, so the
//   reference is held to something independent of any engine.
// - ReadConformanceTest runs, for every engine in Engines(), a catalog of
//   queries per operation and compares each full answer with the reference's:
//   integers, strings and order exactly, doubles to a relative 1e-9 (engines
//   may interpolate percentiles in another order). A mismatch prints a diff of
//   the answers' rows.

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <limits>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <tuple>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

#include "common/testing/temp_dir.h"
#include "storage/clickhouse/testing/clickhouse_server.h"
#include "storage/memory/memory_store.h"
#include "storage/rollup/latency_sketch.h"
#include "storage/telemetry_reader.h"
#include "storage/telemetry_store.h"
#include "storage/testing/read_dataset.h"

namespace sightline::read_dataset {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;
using Want = MetricSeriesQuery::Want;

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kRelativeTolerance = 1e-9;

//! Milliseconds as the nanoseconds a percentile is reported in.
constexpr double MsD(double ms) { return ms * 1e6; }

// ------------------------------------------------------- answers as rows

//! One value of an answer row, named for the diff.
struct Field {
  std::string name;
  std::variant<int64_t, double, std::string, std::vector<double>> value;
};
using Row = std::vector<Field>;

std::string Hex64(uint64_t v) {
  char buf[17];
  std::snprintf(buf, sizeof(buf), "%016llx", static_cast<unsigned long long>(v));
  return buf;
}
std::string Hex(const TraceId& t) { return Hex64(t.high) + Hex64(t.low); }

//! How far a span group's percentile may be from the reference's: the
//! engine's promise (LatencySketch::kRelativeError where it reads rollups),
//! set per engine by the fixture.
double g_percentile_tolerance = kRelativeTolerance;

bool SameDouble(double a, double b, double tolerance = kRelativeTolerance) {
  if (std::isnan(a) || std::isnan(b)) return std::isnan(a) && std::isnan(b);
  if (a == b) return true;
  return std::fabs(a - b) <= tolerance * std::max(std::fabs(a), std::fabs(b));
}

bool IsPercentile(const std::string& name) { return name == "p50" || name == "p95" || name == "p99"; }

bool SameField(const Field& a, const Field& b) {
  if (a.name != b.name || a.value.index() != b.value.index()) return false;
  if (const double* x = std::get_if<double>(&a.value)) {
    return SameDouble(*x, std::get<double>(b.value),
                      IsPercentile(a.name) ? g_percentile_tolerance : kRelativeTolerance);
  }
  if (const auto* x = std::get_if<std::vector<double>>(&a.value)) {
    const auto& y = std::get<std::vector<double>>(b.value);
    if (x->size() != y.size()) return false;
    for (size_t i = 0; i < x->size(); ++i) {
      if (!SameDouble((*x)[i], y[i])) return false;
    }
    return true;
  }
  return a.value == b.value;
}

bool SameRow(const Row& a, const Row& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (!SameField(a[i], b[i])) return false;
  }
  return true;
}

//! Shortest round-trip digits, without an exponent for the magnitudes of
//! times and durations (so nanoseconds read as nanoseconds).
std::string FormatDouble(double v) {
  if (std::isnan(v)) return "NaN";
  char buf[400];
  auto format = std::fabs(v) < 1e18 ? std::chars_format::fixed : std::chars_format::general;
  auto r = std::to_chars(buf, buf + sizeof(buf), v, format);
  return std::string(buf, r.ptr);
}

std::string FormatRow(const Row& row) {
  std::string out = "{";
  for (const Field& f : row) {
    if (out.size() > 1) out += ", ";
    out += f.name + "=";
    std::visit(
        [&](const auto& v) {
          using T = std::decay_t<decltype(v)>;
          if constexpr (std::is_same_v<T, int64_t>) {
            out += std::to_string(v);
          } else if constexpr (std::is_same_v<T, double>) {
            out += FormatDouble(v);
          } else if constexpr (std::is_same_v<T, std::string>) {
            out += "\"" + v + "\"";
          } else {
            out += "[";
            for (size_t i = 0; i < v.size(); ++i) out += (i ? "," : "") + FormatDouble(v[i]);
            out += "]";
          }
        },
        f.value);
  }
  return out + "}";
}

//! Equal rows in equal order; otherwise a line diff of the two answers
//! ("-" expected only, "+" actual only, "  " both), from a longest common
//! subsequence of rows.
::testing::AssertionResult SameRows(const std::vector<Row>& expected, const std::vector<Row>& actual) {
  const size_t n = expected.size(), m = actual.size();
  if (n == m && std::equal(expected.begin(), expected.end(), actual.begin(), SameRow)) {
    return ::testing::AssertionSuccess();
  }
  std::vector<std::vector<size_t>> lcs(n + 1, std::vector<size_t>(m + 1, 0));
  for (size_t i = n; i-- > 0;) {
    for (size_t j = m; j-- > 0;) {
      lcs[i][j] = SameRow(expected[i], actual[j]) ? lcs[i + 1][j + 1] + 1 : std::max(lcs[i + 1][j], lcs[i][j + 1]);
    }
  }
  std::string diff;
  size_t i = 0, j = 0;
  while (i < n || j < m) {
    if (i < n && j < m && SameRow(expected[i], actual[j])) {
      diff += "    " + FormatRow(expected[i++]) + "\n";
      ++j;
    } else if (j < m && (i == n || lcs[i][j + 1] >= lcs[i + 1][j])) {
      diff += "  + " + FormatRow(actual[j++]) + "\n";
    } else {
      diff += "  - " + FormatRow(expected[i++]) + "\n";
    }
  }
  return ::testing::AssertionFailure() << "answers differ (- expected, + actual; " << n << " rows expected, " << m
                                       << " actual):\n"
                                       << diff;
}

Row ToRow(const SpanGroup& g) {
  Row r;
  for (size_t i = 0; i < g.keys.size(); ++i) r.push_back({"key" + std::to_string(i), g.keys[i]});
  r.push_back({"count", g.count});
  r.push_back({"errors", g.errors});
  r.push_back({"p50", g.percentiles_ns[0]});
  r.push_back({"p95", g.percentiles_ns[1]});
  r.push_back({"p99", g.percentiles_ns[2]});
  return r;
}

Row ToRow(const TraceSummary& t) {
  return {{"trace", Hex(t.trace_id)}, {"service", t.service},  {"name", t.name},           {"start", t.start_ns},
          {"end", t.end_ns},          {"spans", t.span_count}, {"error", int64_t{t.error}}};
}

Row ToRow(const SpanRecord& s) {
  return {{"span", Hex64(s.span_id)},
          {"parent", Hex64(s.parent_span_id)},
          {"service", s.service},
          {"name", s.name},
          {"kind", int64_t{s.kind}},
          {"start", s.start_ns},
          {"end", s.end_ns},
          {"duration", s.duration_ns},
          {"status", int64_t{s.status_code}},
          {"status_message", s.status_message},
          {"trace_state", s.trace_state},
          {"attributes", s.attributes},
          {"resource", s.resource_attributes},
          {"events", s.events},
          {"links", s.links},
          {"scope", s.scope_name}};
}

Row ToRow(const LogRecord& l) {
  return {{"time", l.time_ns},
          {"severity", int64_t{l.severity_number}},
          {"severity_text", l.severity_text},
          {"body", l.body},
          {"service", l.service},
          {"trace", Hex(l.trace_id)},
          {"span", Hex64(l.span_id)},
          {"attributes", l.attributes},
          {"event_name", l.event_name}};
}

Row ToRow(const ExceptionGroup& g) {
  return {
      {"type", g.type},           {"message", g.message}, {"service", g.service}, {"count", g.count},
      {"log_count", g.log_count}, {"first", g.first_ns},  {"last", g.last_ns},    {"sample", Hex(g.sample_trace_id)}};
}

Row ToRow(const SpanRef& s) {
  return {{"trace", Hex(s.trace_id)}, {"span", Hex64(s.span_id)},  {"service", s.service}, {"name", s.name},
          {"start", s.start_ns},      {"duration", s.duration_ns}, {"log", int64_t{s.log}}};
}

Row ToRow(const ServiceCall& c) {
  return {{"caller", c.caller},         {"callee", c.callee},         {"count", c.count},          {"errors", c.errors},
          {"p50", c.percentiles_ns[0]}, {"p95", c.percentiles_ns[1]}, {"p99", c.percentiles_ns[2]}};
}

Row ToRow(const DurationHistogram& h) {
  std::vector<double> counts(h.counts.begin(), h.counts.end());
  return {{"counts", counts}, {"total", h.total}, {"min", h.min_ns}, {"max", h.max_ns}};
}

Row ToRow(const LogVolumeRow& v) { return {{"bucket", v.bucket}, {"level", int64_t{v.level}}, {"count", v.count}}; }

Row ToRow(const MetricCatalogRow& m) {
  return {{"name", m.name},
          {"type", int64_t{static_cast<int32_t>(m.type)}},
          {"unit", m.unit},
          {"description", m.description},
          {"service", m.service},
          {"monotonic", int64_t{m.monotonic}},
          {"temporality", int64_t{m.temporality}}};
}

Row ToRow(const MetricSeriesInfo& s) {
  return {{"series", s.series_id},
          {"type", int64_t{static_cast<int32_t>(s.type)}},
          {"temporality", int64_t{s.temporality}},
          {"monotonic", int64_t{s.monotonic}},
          {"service", s.service},
          {"attributes", s.attributes}};
}

//! The fields a MetricSeriesQuery::Want asks for (the others are unspecified).
Row ToRow(const MetricBucket& b, Want want) {
  Row r = {{"series", b.series_id}, {"bucket", b.bucket}};
  switch (want) {
    case Want::kStats: r.insert(r.end(), {{"count", b.count}, {"sum", b.sum}, {"min", b.min}, {"max", b.max}}); break;
    case Want::kLast: r.insert(r.end(), {{"last", b.last}, {"sum", b.sum}}); break;
    case Want::kHistograms: {
      std::string exp;
      for (const std::string& e : b.exp_histograms) exp += e + "\n";
      r.insert(r.end(),
               {{"counts", b.counts}, {"bounds", b.bounds}, {"exp_histograms", exp}, {"quantiles", b.quantiles}});
      break;
    }
  }
  return r;
}

template <typename T, typename... Extra>
std::vector<Row> Rows(const std::vector<T>& items, Extra... extra) {
  std::vector<Row> out;
  for (const T& item : items) out.push_back(ToRow(item, extra...));
  return out;
}

//! Span groups come in no particular order: compared by keys.
std::vector<Row> Rows(SpanGroups groups) {
  std::sort(groups.begin(), groups.end(), [](const SpanGroup& a, const SpanGroup& b) { return a.keys < b.keys; });
  return Rows<SpanGroup>(groups);
}

//! Log volume rows come in no particular order: compared by (bucket, level).
std::vector<Row> Rows(LogVolume rows) {
  std::sort(rows.begin(), rows.end(), [](const LogVolumeRow& a, const LogVolumeRow& b) {
    return std::tie(a.bucket, a.level) < std::tie(b.bucket, b.level);
  });
  return Rows<LogVolumeRow>(rows);
}

//! Log facets: the total and levels, each service, then each attribute key
//! followed by its values, in the answer's order.
std::vector<Row> Rows(const LogFacets& f) {
  std::vector<Row> out = {{{"total", f.total}, {"sampled", f.sampled}}};
  for (size_t i = 0; i < f.levels.size(); ++i) {
    out.push_back({{"level", static_cast<int64_t>(i)}, {"count", f.levels[i]}});
  }
  for (const FacetCount& s : f.services) out.push_back({{"service", s.value}, {"count", s.count}});
  for (const AttributeFacet& a : f.attributes) {
    out.push_back({{"key", a.key}, {"count", a.count}});
    for (const FacetCount& v : a.values) out.push_back({{"key", a.key}, {"value", v.value}, {"count", v.count}});
  }
  return out;
}

std::vector<Row> Rows(const DurationHistogram& h) { return {ToRow(h)}; }

//! Attribute facets in the answer's order: each key, then its values.
void AppendFacetRows(const char* map, const std::vector<AttributeFacet>& facets, std::vector<Row>* out) {
  for (const AttributeFacet& a : facets) {
    out->push_back({{"map", std::string(map)}, {"key", a.key}, {"count", a.count}});
    for (const FacetCount& v : a.values) {
      out->push_back({{"map", std::string(map)}, {"key", a.key}, {"value", v.value}, {"count", v.count}});
    }
  }
}

std::vector<Row> Rows(const AttributeSuggestions& s) {
  std::vector<Row> out = {{{"sampled", s.sampled}}};
  AppendFacetRows("span", s.span, &out);
  AppendFacetRows("resource", s.resource, &out);
  return out;
}

std::vector<Row> Rows(const TraceDetail& d) {
  std::vector<Row> out;
  for (const SpanRecord& s : d.spans) {
    out.push_back(ToRow(s));
    out.back().insert(out.back().begin(), {"part", std::string("span")});
  }
  for (const LogRecord& l : d.logs) {
    out.push_back(ToRow(l));
    out.back().insert(out.back().begin(), {"part", std::string("log")});
  }
  out.push_back({{"spans_truncated", static_cast<int64_t>(d.spans_truncated)},
                 {"logs_truncated", static_cast<int64_t>(d.logs_truncated)}});
  return out;
}

//! Pages of one log query: each record with its page number, and after each
//! page whether a cursor followed it (cursors are each engine's own text).
std::vector<Row> Rows(const std::vector<LogPage>& pages) {
  std::vector<Row> out;
  for (size_t p = 0; p < pages.size(); ++p) {
    for (const LogRecord& l : pages[p].records) {
      out.push_back(ToRow(l));
      out.back().insert(out.back().begin(), {"page", static_cast<int64_t>(p)});
    }
    out.push_back(
        {{"page", static_cast<int64_t>(p)}, {"next_cursor", std::string(pages[p].next_cursor ? "set" : "none")}});
  }
  return out;
}

template <typename T, typename... Extra>
::testing::AssertionResult SameAnswer(const Result<T>& expected, const Result<T>& actual, Extra... extra) {
  if (!expected.ok() || !actual.ok()) {
    if (expected.ok() == actual.ok() && expected.status().code() == actual.status().code()) {
      return ::testing::AssertionSuccess();
    }
    return ::testing::AssertionFailure() << "expected " << (expected.ok() ? "OK" : expected.status().ToString())
                                         << ", got " << (actual.ok() ? "OK" : actual.status().ToString());
  }
  return SameRows(Rows(expected.value(), extra...), Rows(actual.value(), extra...));
}

//! Every page of a log query, following each page's cursor.
Result<std::vector<LogPage>> AllPages(TelemetryReader& reader, LogPageQuery q) {
  std::vector<LogPage> pages;
  for (int i = 0; i < 100; ++i) {
    Result<LogPage> page = reader.Logs(q);
    if (!page.ok()) return page.status();
    pages.push_back(page.value());
    if (!pages.back().next_cursor) return pages;
    q.cursor = *pages.back().next_cursor;
  }
  return Status::Internal("more than 100 pages: the cursor does not advance");
}

// ------------------------------------------------------------- queries

SpanFilter Spans(int64_t project = kProjectA, TimeRange range = kRange) {
  SpanFilter f;
  f.project_id = project;
  f.range = range;
  return f;
}

SpanFilter EntrySpans(int64_t project = kProjectA, TimeRange range = kRange) {
  SpanFilter f = Spans(project, range);
  f.entry_only = true;
  return f;
}

LogFilter Logs(int64_t project = kProjectA, TimeRange range = kRange) {
  LogFilter f;
  f.project_id = project;
  f.range = range;
  return f;
}

constexpr TimeRange kEmptyRange{At(40'000), At(50'000)};  // nothing stored in it

template <typename Q>
struct Named {
  std::string name;
  Q query;
};

SpanGroupQuery Grouped(SpanFilter filter, std::vector<SpanDimension> dimensions) {
  SpanGroupQuery q;
  q.filter = std::move(filter);
  q.dimensions = std::move(dimensions);
  q.buckets = kTenSeconds;
  return q;
}

//! The endpoints chart: (bucket, label) of the two top endpoints.
SpanGroupQuery LatencyChart(std::array<bool, 3> percentiles) {
  SpanGroupQuery q = Grouped(EntrySpans(), {SpanDimension::kBucket, SpanDimension::kLabel});
  q.labels = {{"frontend", "/api/items"}, {"checkout", "/api/pay"}};
  q.percentiles = percentiles;
  return q;
}

SpanGroupQuery BucketsFromInsideTheRange() {
  SpanGroupQuery q = Grouped(EntrySpans(), {SpanDimension::kBucket});
  q.buckets = {At(5000), Ms(10'000), 6};
  return q;
}

std::vector<Named<SpanGroupQuery>> GroupSpanQueries() {
  using D = SpanDimension;
  std::vector<Named<SpanGroupQuery>> out = {
      {"services", Grouped(EntrySpans(), {D::kService})},
      {"endpoints", Grouped(EntrySpans(), {D::kService, D::kEndpoint})},
      {"every span by service", Grouped(Spans(), {D::kService})},
      {"endpoint then service", Grouped(Spans(), {D::kEndpoint, D::kService})},
      {"latency chart, p95", LatencyChart({false, true, false})},
      {"latency chart, counts", LatencyChart({false, false, false})},
      {"latency chart, all percentiles", LatencyChart({true, true, true})},
      {"buckets from inside the range", BucketsFromInsideTheRange()},
      {"no dimensions", Grouped(EntrySpans(), {})},
      {"empty range", Grouped(EntrySpans(kProjectA, kEmptyRange), {D::kService})},
      {"project B", Grouped(EntrySpans(kProjectB), {D::kService, D::kEndpoint})},
      {"project without data", Grouped(EntrySpans(kProjectEmpty), {D::kService})},
  };
  // Ranges with whole minutes and hours (the rollup engines read those from
  // their rollups): kT0 is 20 s into its minute and 13 min 20 s into its hour.
  constexpr int64_t kMinute = Ms(60'000), kHourStart = kT0 - Ms(800'000);
  const TimeRange hours{kHourStart - 60 * kMinute, kHourStart + 120 * kMinute};
  out.push_back({"whole hours", Grouped(EntrySpans(kProjectA, hours), {D::kService, D::kEndpoint})});
  out.push_back(
      {"whole minutes, raw edges", Grouped(Spans(kProjectA, {kT0 - Ms(30'000), At(100'000)}), {D::kService})});
  out.push_back({"whole minutes, project B", Grouped(EntrySpans(kProjectB, hours), {D::kService, D::kEndpoint})});
  SpanGroupQuery minute_chart =
      Grouped(EntrySpans(kProjectA, {kT0 - Ms(80'000), At(100'000)}), {D::kBucket, D::kLabel});
  minute_chart.labels = {{"frontend", "/api/items"}, {"checkout", "/api/pay"}};
  minute_chart.buckets = {kT0 - Ms(20'000), kMinute, 2};
  out.push_back({"minute buckets", minute_chart});
  SpanGroupQuery hour_chart = Grouped(Spans(kProjectA, hours), {D::kBucket, D::kService});
  hour_chart.buckets = {kHourStart - 60 * kMinute, 60 * kMinute, 3};
  out.push_back({"hour buckets", hour_chart});
  SpanGroupQuery two_buckets = Grouped(EntrySpans(), {D::kBucket, D::kService});
  two_buckets.buckets.count = 2;
  out.push_back({"two buckets only", two_buckets});
  SpanGroupQuery one_service = Grouped(EntrySpans(), {D::kService, D::kEndpoint});
  one_service.filter.service = "checkout";
  out.push_back({"endpoints of one service", one_service});
  SpanGroupQuery unicode = Grouped(EntrySpans(), {D::kEndpoint});
  unicode.filter.service = "naïve-svc";
  out.push_back({"unicode service", unicode});
  SpanGroupQuery filtered = Grouped(Spans(), {D::kService});
  filtered.filter.status_code = 2;
  out.push_back({"errors only", filtered});
  filtered.filter.status_code = 0;
  filtered.filter.min_duration_ns = Ms(6);
  filtered.filter.max_duration_ns = Ms(30);
  out.push_back({"status unset, 6 to 30 ms", filtered});
  SpanGroupQuery by_attribute = Grouped(Spans(), {D::kService});
  by_attribute.filter.attributes = {{"http.response.status_code", "200"}};
  out.push_back({"attribute: integer", by_attribute});
  by_attribute.filter.attributes = {{"user.name", "café"}};
  out.push_back({"attribute: escaped unicode", by_attribute});
  by_attribute.filter.attributes = {{"ratio", "2.5"}};
  out.push_back({"attribute: decimal with a trailing zero", by_attribute});
  by_attribute.filter.endpoint = "/api/items";
  by_attribute.filter.attributes = {{"http.response.status_code", "200"}, {"retry", "false"}};
  out.push_back({"endpoint and two attributes", by_attribute});
  return out;
}

AttrFilter Attr(std::string key, AttrOp op, std::string value = "") { return {std::move(key), std::move(value), op}; }
AttrFilter Number(std::string key, AttrOp op, double number) { return {std::move(key), "", op, number}; }

//! Every operator on span attributes, on values of every type (AttrFilter's
//! rules for absent keys, nulls, strings of digits and booleans).
std::vector<Named<std::vector<AttrFilter>>> OperatorFilters() {
  using O = AttrOp;
  return {
      {"!= integer", {Attr("http.response.status_code", O::kNe, "200")}},
      {"!= boolean", {Attr("vip", O::kNe, "true")}},
      {"!= on a null value", {Attr("k", O::kNe, "x")}},
      {"!= on an absent key", {Attr("no.such.key", O::kNe, "x")}},
      {"!= decimal as text", {Attr("ratio", O::kNe, "2.50")}},
      {"> integer", {Number("http.response.status_code", O::kGt, 200)}},
      {"> decimal", {Number("amount", O::kGt, 7)}},
      {"> just below an integer", {Number("amount", O::kGt, 6.99)}},
      {"< decimal", {Number("amount", O::kLt, 12.5)}},
      {"< negative", {Number("n", O::kLt, 0)}},
      {"> decimal with a trailing zero", {Number("ratio", O::kGt, 2.4)}},
      {"> exponent", {Number("big", O::kGt, 1e20)}},
      {"> on a string", {Number("currency", O::kGt, -1e300)}},
      {"< on a string of letters", {Number("user.name", O::kLt, 1e300)}},
      {"> on a boolean", {Number("vip", O::kGt, -1)}},
      {"> on a null value", {Number("k", O::kGt, -1)}},
      {"exists", {Attr("db.system", O::kExists)}},
      {"exists, boolean false", {Attr("retry", O::kExists)}},
      {"exists on a null value", {Attr("k", O::kExists)}},
      {"exists on an absent key", {Attr("no.such.key", O::kExists)}},
      {"exists and <",
       {Attr("http.response.status_code", O::kExists), Number("http.response.status_code", O::kLt, 300)}},
      {"= and !=", {Attr("currency", O::kEq, "EUR"), Attr("vip", O::kNe, "false")}},
  };
}

//! Conditions on the spans' resources (resource 101 was written twice: the
//! first content stays).
std::vector<Named<std::vector<AttrFilter>>> ResourceFilters() {
  using O = AttrOp;
  return {
      {"resource =", {Attr("host.name", O::kEq, "web-1")}},
      {"resource = the overwritten value", {Attr("host.name", O::kEq, "CHANGED")}},
      {"resource !=", {Attr("service.name", O::kNe, "frontend")}},
      {"resource exists", {Attr("région", O::kExists)}},
      {"resource exists, absent", {Attr("no.such.key", O::kExists)}},
      {"resource > on a string", {Number("service.name", O::kGt, 0)}},
      {"resource = and exists", {Attr("service.name", O::kEq, "checkout"), Attr("service.name", O::kExists)}},
  };
}

TraceSearchQuery Search(SpanFilter filter, int64_t limit = 50) {
  TraceSearchQuery q;
  q.filter = std::move(filter);
  q.limit = limit;
  return q;
}

TraceSearchQuery SearchWithAttribute(std::string key, std::string value) {
  TraceSearchQuery q = Search(Spans());
  q.filter.attributes = {{std::move(key), std::move(value)}};
  return q;
}

std::vector<Named<TraceSearchQuery>> OrderedSearchQueries() {
  std::vector<Named<TraceSearchQuery>> out;
  for (auto [order_name, order] :
       {std::pair{"start", TraceOrder::kStartDesc}, std::pair{"duration desc", TraceOrder::kDurationDesc},
        std::pair{"duration asc", TraceOrder::kDurationAsc}}) {
    for (auto [project_name, project] : {std::pair{"", kProjectA}, std::pair{", map", kProjectMap}}) {
      for (auto [offset, limit] :
           {std::pair{0, 50}, std::pair{0, 2}, std::pair{2, 2}, std::pair{5, 3}, std::pair{7, 1}, std::pair{100, 5}}) {
        TraceSearchQuery q = Search(Spans(project), limit);
        q.order = order;
        q.offset = offset;
        out.push_back({std::string(order_name) + project_name + ", offset " + std::to_string(offset) + ", limit " +
                           std::to_string(limit),
                       q});
      }
    }
    TraceSearchQuery q = Search(Spans());
    q.order = order;
    q.filter.service = "checkout";
    out.push_back({std::string(order_name) + ", one service", q});
  }
  return out;
}

std::vector<Named<TraceSearchQuery>> SearchQueries() {
  std::vector<Named<TraceSearchQuery>> out = {
      {"every trace", Search(Spans())},
      {"limit 2", Search(Spans(), 2)},
      {"limit 1", Search(Spans(), 1)},
      {"empty range", Search(Spans(kProjectA, kEmptyRange))},
      {"project B", Search(Spans(kProjectB))},
      {"project without data", Search(Spans(kProjectEmpty))},
      {"attribute: integer", SearchWithAttribute("http.response.status_code", "200")},
      {"attribute: negative integer", SearchWithAttribute("n", "-7")},
      {"attribute: decimal", SearchWithAttribute("amount", "12.5")},
      {"attribute: integer-valued", SearchWithAttribute("amount", "7")},
      {"attribute: decimal with a trailing zero", SearchWithAttribute("ratio", "2.5")},
      {"attribute: true", SearchWithAttribute("vip", "true")},
      {"attribute: false", SearchWithAttribute("vip", "false")},
      {"attribute: escaped unicode", SearchWithAttribute("user.name", "café")},
      {"attribute: unicode", SearchWithAttribute("note", "Grüße")},
      {"attribute: null matches nothing", SearchWithAttribute("k", "null")},
      {"attribute: absent key", SearchWithAttribute("no.such.key", "")},
  };
  TraceSearchQuery q = Search(Spans());
  q.filter.service = "checkout";
  out.push_back({"service", q});
  q = Search(Spans());
  q.filter.service = "worker";
  out.push_back({"service with a span before the range", q});
  q.filter.entry_only = true;
  out.push_back({"entry spans of a service", q});
  q = Search(Spans());
  q.filter.endpoint = "cron tick";
  out.push_back({"endpoint without a route", q});
  q = Search(Spans());
  q.filter.status_code = 2;
  out.push_back({"errors", q});
  q = Search(Spans());
  q.filter.min_duration_ns = Ms(30);
  out.push_back({"at least 30 ms", q});
  q = Search(Spans());
  q.filter.max_duration_ns = Ms(5);
  out.push_back({"at most 5 ms", q});
  q = Search(Spans());
  q.filter.attributes = {{"http.response.status_code", "200"}, {"retry", "false"}};
  out.push_back({"two attributes", q});
  for (auto& [name, filters] : OperatorFilters()) {
    q = Search(Spans());
    q.filter.attributes = filters;
    out.push_back({"attribute " + name, q});
  }
  for (auto& [name, filters] : ResourceFilters()) {
    q = Search(Spans());
    q.filter.resource_attributes = filters;
    out.push_back({name, q});
  }
  q = Search(Spans());
  q.filter.resource_attributes = {Attr("service.name", AttrOp::kEq, "checkout")};
  q.filter.attributes = {Attr("vip", AttrOp::kExists)};
  out.push_back({"resource and span attribute", q});
  for (auto& named : OrderedSearchQueries()) out.push_back(std::move(named));
  return out;
}

DurationHistogramQuery Histogram(SpanFilter filter, std::vector<int64_t> bounds = {Ms(5), Ms(10), Ms(20), Ms(40)}) {
  DurationHistogramQuery q;
  q.filter = std::move(filter);
  q.bounds_ns = std::move(bounds);
  return q;
}

std::vector<Named<DurationHistogramQuery>> HistogramQueries() {
  std::vector<Named<DurationHistogramQuery>> out = {
      {"every span: durations on the bounds", Histogram(Spans())},
      {"one bound", Histogram(Spans(), {Ms(10)})},
      {"log-scale bounds", Histogram(Spans(), {1000, 10'000, 100'000, Ms(1), Ms(10), Ms(100), Ms(1000)})},
      {"entry spans", Histogram(EntrySpans())},
      {"empty range", Histogram(Spans(kProjectA, kEmptyRange))},
      {"project B", Histogram(Spans(kProjectB))},
      {"project without data", Histogram(Spans(kProjectEmpty))},
      {"map project", Histogram(Spans(kProjectMap))},
  };
  DurationHistogramQuery q = Histogram(Spans());
  q.filter.service = "checkout";
  out.push_back({"one service", q});
  q = Histogram(Spans());
  q.filter.min_duration_ns = Ms(6);
  q.filter.max_duration_ns = Ms(30);
  out.push_back({"6 to 30 ms", q});
  q = Histogram(Spans());
  q.filter.attributes = {Number("http.response.status_code", AttrOp::kLt, 300)};
  out.push_back({"attribute <", q});
  q = Histogram(Spans());
  q.filter.resource_attributes = {Attr("host.name", AttrOp::kEq, "web-1")};
  out.push_back({"resource attribute", q});
  return out;
}

AttributeSuggestionQuery Suggest(SpanFilter filter, int64_t sample = 1000, int64_t max_keys = 20,
                                 int64_t max_values = 10) {
  AttributeSuggestionQuery q;
  q.filter = std::move(filter);
  q.sample = sample;
  q.max_keys = max_keys;
  q.max_values = max_values;
  return q;
}

std::vector<Named<AttributeSuggestionQuery>> SuggestionQueries() {
  // Newest first: f1, e2/e1 (one start, by span id), d3, d2, d1, c2, b3,
  // b2/c4 and b1/c1 (one start, by trace id), a2/a3 (by span id), a1.
  std::vector<Named<AttributeSuggestionQuery>> out = {
      {"every span", Suggest(Spans())},
      {"sample of 1", Suggest(Spans(), 1)},
      {"sample of 2: cuts a tie by span id", Suggest(Spans(), 2)},
      {"sample of 3", Suggest(Spans(), 3)},
      {"sample of 9: cuts a tie by trace id", Suggest(Spans(), 9)},
      {"sample of 11: cuts a tie by trace id", Suggest(Spans(), 11)},
      {"sample of 13: cuts a tie by span id, top bit set", Suggest(Spans(), 13)},
      {"caps of 1", Suggest(Spans(), 1000, 1, 1)},
      {"caps of 2", Suggest(Spans(), 1000, 2, 2)},
      {"entry spans", Suggest(EntrySpans())},
      {"empty range", Suggest(Spans(kProjectA, kEmptyRange))},
      {"project B", Suggest(Spans(kProjectB))},
      {"project without data", Suggest(Spans(kProjectEmpty))},
  };
  AttributeSuggestionQuery q = Suggest(Spans());
  q.filter.service = "worker";
  out.push_back({"one service", q});
  q = Suggest(Spans(), 3);
  q.key = "http.response.status_code";
  q.filter.attributes = {Attr("http.response.status_code", AttrOp::kExists)};
  out.push_back({"values of one key", q});
  q = Suggest(Spans());
  q.key = "service.name";
  out.push_back({"values of a resource key", q});
  q = Suggest(Spans());
  q.key = "no.such.key";
  out.push_back({"values of an absent key", q});
  q = Suggest(Spans());
  q.filter.resource_attributes = {Attr("service.name", AttrOp::kNe, "frontend")};
  out.push_back({"resource filter", q});
  return out;
}

std::vector<Named<TraceQuery>> TraceQueries() {
  std::vector<Named<TraceQuery>> out;
  const std::pair<const char*, TraceId> traces[] = {
      {"trace 1", kTrace1},       {"trace 2", kTrace2},    {"trace 3", kTrace3}, {"trace 4", kTrace4},
      {"trace 5", kTrace5},       {"trace 6", kTrace6},    {"trace 7", kTrace7}, {"trace 8", kTrace8},
      {"missing", kTraceMissing}, {"absent id", TraceId{}}};
  for (const auto& [name, id] : traces) {
    out.push_back({std::string(name), {kProjectA, id}});
    out.push_back({std::string(name) + ", project B", {kProjectB, id}});
  }
  // The first spans and records in their order, and the flags.
  for (int64_t cap : {1, 2, 3}) {
    out.push_back({"trace 1, at most " + std::to_string(cap), {kProjectA, kTrace1, cap, cap}});
  }
  out.push_back({"trace 1, at most 1 span, every log", {kProjectA, kTrace1, 1}});
  return out;
}

ExceptionQuery Exceptions(SpanFilter filter, int64_t limit = 50) {
  ExceptionQuery q;
  q.filter = std::move(filter);
  q.limit = limit;
  return q;
}

std::vector<Named<ExceptionQuery>> ExceptionQueries() {
  std::vector<Named<ExceptionQuery>> out = {
      {"every group", Exceptions(Spans())},           {"limit 2", Exceptions(Spans(), 2)},
      {"limit 3 cuts a tie", Exceptions(Spans(), 3)}, {"empty range", Exceptions(Spans(kProjectA, kEmptyRange))},
      {"project B", Exceptions(Spans(kProjectB))},
  };
  ExceptionQuery q = Exceptions(Spans());
  q.filter.service = "worker";
  out.push_back({"service", q});
  q.filter.service = "naïve-svc";
  out.push_back({"unicode service", q});
  // Ranges with whole minutes and hours, which the rollup engines read from
  // their exception rollups (kT0 is 20 s into its minute, 800 s into its hour).
  constexpr int64_t kMinute = Ms(60'000), kHourStart = kT0 - Ms(800'000);
  out.push_back({"whole hours", Exceptions(Spans(kProjectA, {kHourStart - 60 * kMinute, kHourStart + 120 * kMinute}))});
  out.push_back(
      {"whole minutes, raw edges, limit 3", Exceptions(Spans(kProjectA, {kT0 - Ms(30'000), At(100'000)}), 3)});
  out.push_back({"whole minutes, project B", Exceptions(Spans(kProjectB, {kT0 - Ms(90'000), At(200'000)}))});
  q = Exceptions(Spans(kProjectA, {kHourStart, kHourStart + 60 * kMinute}));
  q.filter.service = "worker";
  out.push_back({"whole hour, one service", q});
  // Filters only spans keep (the log records are not filtered by them).
  q = Exceptions(Spans());
  q.filter.min_duration_ns = Ms(20);
  out.push_back({"spans of at least 20 ms", q});
  q = Exceptions(Spans());
  q.filter.entry_only = true;
  out.push_back({"entry spans", q});
  return out;
}

ExceptionSpansQuery ExceptionSpansOf(std::optional<std::string> type, std::optional<std::string> message,
                                     int64_t limit = 50) {
  ExceptionSpansQuery q;
  q.filter = Spans();
  q.type = std::move(type);
  q.message = std::move(message);
  q.limit = limit;
  return q;
}

std::vector<Named<ExceptionSpansQuery>> ExceptionSpansQueries() {
  std::vector<Named<ExceptionSpansQuery>> out = {
      {"type and message", ExceptionSpansOf("PaymentError", "card declined ✗")},
      {"type and message, limit 1", ExceptionSpansOf("PaymentError", "card declined ✗", 1)},
      {"type only", ExceptionSpansOf("TimeoutError", std::nullopt)},
      {"absent type, message", ExceptionSpansOf("", "connection reset")},
      {"absent type only", ExceptionSpansOf("", std::nullopt)},
      {"absent message only", ExceptionSpansOf(std::nullopt, "")},
      {"type, absent message", ExceptionSpansOf("TimeoutError", "")},
      {"unicode type", ExceptionSpansOf("ÄrgerError", "kaputt ✗")},
      {"log-based group", ExceptionSpansOf("PanicError", "worker <n> crashed at <hex>")},
      {"log without type or trace", ExceptionSpansOf("", "retry <n> of order <n> failed")},
      {"neither", ExceptionSpansOf(std::nullopt, std::nullopt)},
      {"no such group", ExceptionSpansOf("NoSuchError", std::nullopt)},
  };
  ExceptionSpansQuery q = ExceptionSpansOf("TimeoutError", "");
  q.filter.service = "worker";
  out.push_back({"type, absent message, service", q});
  q = ExceptionSpansOf("PaymentError", std::nullopt);
  q.filter.min_duration_ns = Ms(20);
  out.push_back({"type only, spans of at least 20 ms", q});
  q = ExceptionSpansOf(std::nullopt, std::nullopt);
  q.filter.endpoint = "POST /api/pay";
  out.push_back({"neither, one endpoint", q});
  q = ExceptionSpansOf("PaymentError", std::nullopt);
  q.filter = Spans(kProjectB);
  out.push_back({"project B", q});
  q.filter = Spans(kProjectA, kEmptyRange);
  out.push_back({"empty range", q});
  return out;
}

LogPageQuery Page(LogFilter filter, int64_t limit = 100) {
  LogPageQuery q;
  q.filter = std::move(filter);
  q.limit = limit;
  return q;
}

LogFilter LogsWithText(std::string text) {
  LogFilter f = Logs();
  f.text = std::move(text);
  return f;
}

std::vector<Named<LogPageQuery>> LogQueries() {
  std::vector<Named<LogPageQuery>> out = {
      {"every record", Page(Logs())},
      {"pages of 1", Page(Logs(), 1)},
      {"pages of 3", Page(Logs(), 3)},
      {"pages of 4", Page(Logs(), 4)},
      {"pages of 10", Page(Logs(), 10)},
      {"pages of 11: the last page is full", Page(Logs(), 11)},
      {"empty range", Page(Logs(kProjectA, kEmptyRange))},
      {"project B", Page(Logs(kProjectB))},
      {"project without data", Page(Logs(kProjectEmpty))},
      {"text: ASCII case", Page(LogsWithText("failed"))},
      {"text: capitals", Page(LogsWithText("PAYMENT"))},
      {"text: ASCII letter beside a non-ASCII one", Page(LogsWithText("köln"))},
      {"text: LIKE wildcards are literal", Page(LogsWithText("50%_off"))},
      {"text: underscore", Page(LogsWithText("_"))},
      {"text: backslash", Page(LogsWithText(R"(%_off\)"))},
      {"text: lowercase non-ASCII", Page(LogsWithText("échec"))},
      {"text: uppercase non-ASCII", Page(LogsWithText("ÉCHEC"))},
      {"text: Greek", Page(LogsWithText("σφάλμα"))},
      {"text: no match", Page(LogsWithText("GRÜSSE"))},
  };
  LogFilter f = Logs();
  f.severity_min = 13;
  out.push_back({"severity at least WARN", Page(f, 2)});
  f.service = "checkout";
  out.push_back({"severity and service", Page(f)});
  f = Logs();
  f.service = "checkout";
  out.push_back({"service", Page(f)});
  f = Logs();
  f.trace_id = kTrace1;
  out.push_back({"trace 1", Page(f)});
  f.trace_id = kTrace2;
  out.push_back({"trace 2", Page(f)});
  f.trace_id = kTrace3;
  out.push_back({"trace 3, differs from trace 2 in the low half only", Page(f)});
  f = Logs();
  f.attributes = {{"retry", "true"}};
  out.push_back({"attribute: true", Page(f)});
  f.attributes = {{"amount", "12.5"}};
  out.push_back({"attribute: decimal", Page(f)});
  f.attributes = {{"order.id", "A-17"}};
  out.push_back({"attribute: string", Page(f)});
  f.attributes = {{"n", "-7"}};
  out.push_back({"attribute: negative integer", Page(f)});
  f.attributes = {{"k", "null"}};
  out.push_back({"attribute: null matches nothing", Page(f)});
  f.attributes = {Attr("lang", AttrOp::kNe, "fr")};
  out.push_back({"attribute !=", Page(f)});
  f.attributes = {Attr("amount", AttrOp::kExists)};
  out.push_back({"attribute exists", Page(f)});
  f.attributes = {Attr("k", AttrOp::kExists)};
  out.push_back({"attribute exists on a null value", Page(f)});
  f.attributes = {Number("amount", AttrOp::kGt, 10)};
  out.push_back({"attribute >", Page(f)});
  f.attributes = {Number("n", AttrOp::kLt, 0)};
  out.push_back({"attribute <", Page(f)});
  f.attributes = {Number("order.id", AttrOp::kGt, -1)};
  out.push_back({"attribute > on a string", Page(f)});
  f = Logs(kProjectA, {kT0 - 1, At(1001)});
  out.push_back({"a range starting 1 ns earlier", Page(f, 2)});
  return out;
}

LogVolumeQuery Volume(LogFilter filter, Buckets buckets = kTenSeconds) {
  LogVolumeQuery q;
  q.filter = std::move(filter);
  q.buckets = buckets;
  return q;
}

std::vector<Named<LogVolumeQuery>> VolumeQueries() {
  LogFilter checkout = Logs();
  checkout.service = "checkout";
  return {
      {"every record", Volume(Logs())},
      {"five buckets", Volume(Logs(), {kT0, Ms(10'000), 5})},
      {"buckets from inside the range", Volume(Logs(), {At(2000), Ms(10'000), 6})},
      {"one service", Volume(checkout)},
      {"text", Volume(LogsWithText("échec"))},
      {"empty range", Volume(Logs(kProjectA, kEmptyRange))},
      {"project B", Volume(Logs(kProjectB))},
      // Whole minutes and hours, which the rollup engines read from their log
      // rollups (kT0 is 20 s into its minute, 800 s into its hour).
      {"minute buckets, raw edges",
       Volume(Logs(kProjectA, {kT0 - Ms(70'000), At(130'000)}), {kT0 - Ms(80'000), Ms(60'000), 4})},
      {"hour buckets",
       Volume(Logs(kProjectA, {kT0 - Ms(4'400'000), At(4'000'000)}), {kT0 - Ms(4'400'000), Ms(3'600'000), 3})},
      {"minute buckets, warnings and up", Volume(
                                              [] {
                                                LogFilter f = Logs(kProjectA, {kT0 - Ms(20'000), At(100'000)});
                                                f.severity_min = 13;
                                                return f;
                                              }(),
                                              {kT0 - Ms(20'000), Ms(60'000), 2})},
      {"minute buckets, one service, project B", Volume(
                                                     [] {
                                                       LogFilter f = Logs(kProjectB, {kT0 - Ms(20'000), At(100'000)});
                                                       f.service = "checkout";
                                                       return f;
                                                     }(),
                                                     {kT0 - Ms(20'000), Ms(60'000), 2})},
  };
}

LogFacetsQuery Facets(LogFilter filter, int64_t sample = 1000, int64_t max_services = 10, int64_t max_keys = 8,
                      int64_t max_values = 5) {
  LogFacetsQuery q;
  q.filter = std::move(filter);
  q.sample = sample;
  q.max_services = max_services;
  q.max_keys = max_keys;
  q.max_values = max_values;
  return q;
}

std::vector<Named<LogFacetsQuery>> FacetQueries() {
  LogFilter checkout = Logs();
  checkout.service = "checkout";
  LogFilter warn = Logs();
  warn.severity_min = 13;
  LogFilter lang = Logs();
  lang.attributes = {{"lang", "fr"}};
  return {
      {"every record", Facets(Logs())},
      {"sample of 1: the newest record", Facets(Logs(), 1)},
      {"sample of 6: ties at 5 s split by insertion order", Facets(Logs(), 6)},
      {"sample of 9", Facets(Logs(), 9)},
      {"one service", Facets(checkout)},
      {"severity at least WARN", Facets(warn)},
      {"attribute filter", Facets(lang)},
      {"text", Facets(LogsWithText("échec"))},
      {"caps of 1", Facets(Logs(), 1000, 1, 1, 1)},
      {"caps of 2", Facets(Logs(), 1000, 2, 2, 2)},
      {"empty range", Facets(Logs(kProjectA, kEmptyRange))},
      {"project B", Facets(Logs(kProjectB))},
      {"project without data", Facets(Logs(kProjectEmpty))},
  };
}

MetricSeriesQuery Aggregate(std::vector<int64_t> ids, Want want, int64_t project = kProjectA, TimeRange range = kRange,
                            Buckets buckets = kTenSeconds) {
  MetricSeriesQuery q;
  q.project_id = project;
  q.range = range;
  q.buckets = buckets;
  q.series_ids = std::move(ids);
  q.want = want;
  return q;
}

MetricSeriesQuery Histograms(std::vector<int64_t> ids, std::vector<int64_t> delta) {
  MetricSeriesQuery q = Aggregate(std::move(ids), Want::kHistograms);
  q.delta_series_ids = std::move(delta);
  return q;
}

std::vector<Named<MetricSeriesQuery>> AggregateQueries() {
  const std::vector<int64_t> gauges = {kSeriesTempCore0, kSeriesTempCore1};
  const std::vector<int64_t> sums = {kSeriesRequests200, kSeriesRequestsCheckout, kSeriesQueueDepth, kSeriesRequests500,
                                     kSeriesRequests404};
  const std::vector<int64_t> histograms = {kSeriesLatencyFrontend, kSeriesLatencyCheckout};
  std::vector<Named<MetricSeriesQuery>> out = {
      {"gauges, stats", Aggregate(gauges, Want::kStats)},
      {"gauges, last", Aggregate(gauges, Want::kLast)},
      {"sums, stats", Aggregate(sums, Want::kStats)},
      {"sums, last", Aggregate(sums, Want::kLast)},
      {"histograms, stats (no values)", Aggregate(histograms, Want::kStats)},
      {"histograms, one delta", Histograms(histograms, {kSeriesLatencyCheckout})},
      {"histograms, all cumulative", Histograms(histograms, {})},
      {"histograms, delta id not asked for", Histograms({kSeriesLatencyFrontend}, {kSeriesLatencyCheckout})},
      {"exponential histograms, one delta", Histograms({kSeriesRpcFrontend, kSeriesRpcCheckout}, {kSeriesRpcCheckout})},
      {"exponential and explicit histograms", Histograms({kSeriesRpcFrontend, kSeriesLatencyFrontend}, {})},
      {"summary", Histograms({kSeriesGcPause}, {})},
      {"ints past 2^53, a NULL value, mixed kinds, stats", Aggregate({kSeriesRequestsGauge}, Want::kStats)},
      {"ints past 2^53, a NULL value, mixed kinds, last", Aggregate({kSeriesRequestsGauge}, Want::kLast)},
      {"ints and doubles of several series, stats",
       Aggregate({kSeriesRequestsGauge, kSeriesTempCore1, kSeriesRequests200}, Want::kStats)},
      {"series without points", Aggregate({kSeriesOverflow}, Want::kStats)},
      {"unknown series", Aggregate({424242}, Want::kStats)},
      {"series 11 of project A", Aggregate({kSeriesProjectB}, Want::kLast)},
      {"series 11 of project B", Aggregate({kSeriesProjectB}, Want::kLast, kProjectB)},
      {"empty range", Aggregate(gauges, Want::kStats, kProjectA, kEmptyRange)},
      {"buckets from inside the range", Aggregate(gauges, Want::kStats, kProjectA, kRange, {At(1500), Ms(10'000), 6})},
      {"one-second buckets", Aggregate(sums, Want::kLast, kProjectA, kRange, {kT0, Ms(1000), 60})},
  };
  // Whole minutes and hours, which the rollup engines read from their metric
  // rollups (kT0 is 20 s into its minute, 800 s into its hour; the points
  // are in Metrics(), from kHour0).
  constexpr int64_t kHour0 = kT0 - Ms(800'000), kH = Ms(3'600'000), kMin = Ms(60'000);
  const TimeRange minutes{kHour0 + 2 * kH - kMin, kHour0 + 2 * kH + Ms(130'000)};
  const Buckets minute_buckets{kHour0 + 2 * kH - kMin, kMin, 4};
  const TimeRange hours{kHour0 - kH, kHour0 + 4 * kH};
  const Buckets hour_buckets{kHour0 - kH, kH, 5};
  const TimeRange later_hours{kHour0 + 2 * kH + Ms(30'000), kHour0 + 4 * kH};
  const Buckets later_buckets{kHour0 + 2 * kH, kH, 2};
  auto ranged_histograms = [](std::vector<int64_t> ids, std::vector<int64_t> delta, TimeRange range, Buckets buckets) {
    MetricSeriesQuery q = Histograms(std::move(ids), std::move(delta));
    q.range = range;
    q.buckets = buckets;
    return q;
  };
  const std::vector<int64_t> both_histograms = {kSeriesLatencyFrontend, kSeriesLatencyCheckout};
  std::vector<Named<MetricSeriesQuery>> rollup_cases = {
      {"minute buckets, raw edge, stats", Aggregate(gauges, Want::kStats, kProjectA, minutes, minute_buckets)},
      {"minute buckets, raw edge, last", Aggregate(gauges, Want::kLast, kProjectA, minutes, minute_buckets)},
      {"hour buckets, stats", Aggregate(gauges, Want::kStats, kProjectA, hours, hour_buckets)},
      {"hour buckets, last", Aggregate(sums, Want::kLast, kProjectA, hours, hour_buckets)},
      {"hour buckets from a partial minute", Aggregate(gauges, Want::kStats, kProjectA, later_hours, later_buckets)},
      {"hour buckets, histograms, one delta (another layout in range: raw)",
       ranged_histograms(both_histograms, {kSeriesLatencyCheckout}, hours, hour_buckets)},
      {"later hours, histograms, one delta",
       ranged_histograms(both_histograms, {kSeriesLatencyCheckout}, later_hours, later_buckets)},
      {"minute buckets, histograms, all cumulative", ranged_histograms(both_histograms, {}, minutes, minute_buckets)},
      {"minute buckets, histograms, one delta",
       ranged_histograms(both_histograms, {kSeriesLatencyCheckout}, minutes, minute_buckets)},
      {"minute buckets, delta exponential histogram",
       ranged_histograms({kSeriesRpcCheckout}, {kSeriesRpcCheckout}, minutes, minute_buckets)},
      {"hour buckets, summary", ranged_histograms({kSeriesGcPause}, {}, hours, hour_buckets)},
      {"hour buckets, project B", Aggregate({kSeriesProjectB}, Want::kStats, kProjectB, hours, hour_buckets)},
  };
  for (auto& c : rollup_cases) out.push_back(std::move(c));
  return out;
}

// ------------------------------------------------------------- engines

//! A fresh directory for one test, removed at the end.
class TempDir : public testing::TempDir {
 public:
  TempDir() : testing::TempDir("sightline-read-test") {}
};

//! An engine the suite runs: its name, how its LogFilter::text folds case
//! (the one place the contract lets engines differ), and how to open it in an
//! empty data directory.
struct EngineSpec {
  std::string name;
  TextFolding text_folding;
  std::function<Result<std::unique_ptr<TelemetryStore>>(const std::string& data_dir)> open;
  double percentile_tolerance = kRelativeTolerance;
};

void PrintTo(const EngineSpec& e, std::ostream* os) { *os << e.name; }

Result<std::unique_ptr<TelemetryStore>> OpenMemory(const std::string&) { return OpenMemoryStore(StoreOptions{}); }

//! An engine of the StoreRegistry (duckdb, sqlite; clickhouse when it
//! registers) in its own data directory.
std::function<Result<std::unique_ptr<TelemetryStore>>(const std::string&)> Registered(
    std::string name, std::function<void(StoreOptions*)> configure = nullptr) {
  return [name, configure](const std::string& data_dir) {
    RegisterBuiltinStores();
    StoreOptions options;
    options.data_dir = data_dir;
    options.read_connections = 1;
    if (configure) configure(&options);
    return StoreRegistry::Instance().Open(name, options);
  };
}

//! An engine answering every span group it can from its rollups, folded
//! after every write (the dataset's second write folds into the first's rows).
void ReadSpanRollups(StoreOptions* o) {
  o->rollup_exact_spans = 0;
  o->rollup_compaction_interval_ms = 0;
}

//! The ClickHouse engine on this binary's clickhouse-server, a database of
//! its own per open (storage/clickhouse/testing/clickhouse_server.h).
Result<std::unique_ptr<TelemetryStore>> OpenClickHouse(const std::string&) {
  RegisterBuiltinStores();
  StoreOptions options = clickhouse::testing::StoreOptionsForTest("read_conformance");
  options.read_connections = 1;
  return StoreRegistry::Instance().Open("clickhouse", options);
}

//! The ClickHouse engine in cluster mode on this binary's two-shard cluster
//! (replicated tables, Distributed ones over them), reached through the
//! first shard: every answer must be the one-server answer.
Result<std::unique_ptr<TelemetryStore>> OpenClickHouseCluster(const std::string&) {
  RegisterBuiltinStores();
  StoreOptions options = clickhouse::testing::ClusterStoreOptionsForTest("read_conformance");
  options.read_connections = 1;
  return StoreRegistry::Instance().Open("clickhouse", options);
}

//! The ClickHouse engine on the in-process ClickHouse of the current release
//! (libchdb, chdb_transport.h): the modern DDL and every read on it.
Result<std::unique_ptr<TelemetryStore>> OpenChdb(const std::string&) {
  RegisterBuiltinStores();
  StoreOptions options = clickhouse::testing::ChdbStoreOptionsForTest("read_conformance");
  options.read_connections = 1;
  return StoreRegistry::Instance().Open("clickhouse", options);
}

//! The engines under test. Adding one is one line: its name, its text
//! folding (DuckDB's lower() folds Unicode, SQLite's LIKE ASCII only) and
//! how to open it, Registered("duckdb") for an engine of the registry.
std::vector<EngineSpec> Engines() {
  return {
      {"memory", TextFolding::kAscii, OpenMemory},
      {"duckdb", TextFolding::kSimpleUnicode, Registered("duckdb")},
      {"duckdb_rollups", TextFolding::kSimpleUnicode, Registered("duckdb", ReadSpanRollups),
       LatencySketch::kRelativeError},
      {"sqlite", TextFolding::kAscii, Registered("sqlite")},
      {"sqlite_rollups", TextFolding::kAscii, Registered("sqlite", ReadSpanRollups), LatencySketch::kRelativeError},
      // lowerUTF8 folds as DuckDB's lower() does.
      {"clickhouse", TextFolding::kSimpleUnicode, OpenClickHouse},
      {"clickhouse_cluster", TextFolding::kSimpleUnicode, OpenClickHouseCluster},
      {"chdb", TextFolding::kSimpleUnicode, OpenChdb},
  };
}

Status WriteServiceMapSpans(TelemetryStore* store);

class ReadConformanceTest : public ::testing::TestWithParam<EngineSpec> {
 protected:
  void SetUp() override {
    g_percentile_tolerance = GetParam().percentile_tolerance;
    Result<std::unique_ptr<TelemetryStore>> store = GetParam().open(dir_.str());
    ASSERT_TRUE(store.ok()) << store.status().ToString();
    store_ = std::move(store).value();
    const ReadDataset dataset = BuildReadDataset();
    Status written = WriteReadDataset(dataset, store_.get());
    ASSERT_TRUE(written.ok()) << written.ToString();
    ASSERT_TRUE(WriteReadDataset(dataset, &reference_store_).ok());
    // The service map's projects: its calls, and traces whose durations tie.
    ASSERT_TRUE(WriteServiceMapSpans(store_.get()).ok());
    ASSERT_TRUE(WriteServiceMapSpans(&reference_store_).ok());
    Result<std::unique_ptr<TelemetryReader>> reader = store_->AcquireReader(10'000);
    ASSERT_TRUE(reader.ok()) << reader.status().ToString();
    reader_ = std::move(reader).value();
    reference_ = std::move(reference_store_.OpenReader({GetParam().text_folding})).value();
  }

  void TearDown() override {
    reader_.reset();
    if (store_ != nullptr) {
      EXPECT_TRUE(store_->Close().ok());
    }
  }

  TempDir dir_;
  std::unique_ptr<TelemetryStore> store_;
  MemoryStore reference_store_;
  std::unique_ptr<TelemetryReader> reader_;     // the engine's
  std::unique_ptr<TelemetryReader> reference_;  // the memory engine's
};

TEST_P(ReadConformanceTest, GroupSpansMatchesTheReference) {
  for (const auto& [name, q] : GroupSpanQueries()) {
    EXPECT_TRUE(SameAnswer(reference_->GroupSpans(q), reader_->GroupSpans(q))) << "query: " << name;
  }
}

TEST_P(ReadConformanceTest, SearchTracesMatchesTheReference) {
  for (const auto& [name, q] : SearchQueries()) {
    EXPECT_TRUE(SameAnswer(reference_->SearchTraces(q), reader_->SearchTraces(q))) << "query: " << name;
  }
}

TEST_P(ReadConformanceTest, HistogramDurationsMatchesTheReference) {
  for (const auto& [name, q] : HistogramQueries()) {
    EXPECT_TRUE(SameAnswer(reference_->HistogramDurations(q), reader_->HistogramDurations(q))) << "query: " << name;
  }
  for (std::vector<int64_t> bad : {std::vector<int64_t>{}, {Ms(2), Ms(1)}, {Ms(1), Ms(1)}}) {
    EXPECT_EQ(reader_->HistogramDurations(Histogram(Spans(), bad)).status().code(), StatusCode::kInvalidArgument);
  }
}

TEST_P(ReadConformanceTest, SuggestAttributesMatchesTheReference) {
  for (const auto& [name, q] : SuggestionQueries()) {
    EXPECT_TRUE(SameAnswer(reference_->SuggestAttributes(q), reader_->SuggestAttributes(q))) << "query: " << name;
  }
  EXPECT_EQ(reader_->SuggestAttributes(Suggest(Spans(), 0)).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(reader_->SuggestAttributes(Suggest(Spans(), 10, 0)).status().code(), StatusCode::kInvalidArgument);
}

TEST_P(ReadConformanceTest, SearchTracesRefusesANegativeOffset) {
  TraceSearchQuery q = Search(Spans());
  q.offset = -1;
  EXPECT_EQ(reader_->SearchTraces(q).status().code(), StatusCode::kInvalidArgument);
}

TEST_P(ReadConformanceTest, GetTraceMatchesTheReference) {
  for (const auto& [name, q] : TraceQueries()) {
    EXPECT_TRUE(SameAnswer(reference_->GetTrace(q), reader_->GetTrace(q))) << "query: " << name;
  }
}

TEST_P(ReadConformanceTest, GroupExceptionsMatchesTheReference) {
  for (const auto& [name, q] : ExceptionQueries()) {
    EXPECT_TRUE(SameAnswer(reference_->GroupExceptions(q), reader_->GroupExceptions(q))) << "query: " << name;
  }
}

TEST_P(ReadConformanceTest, ExceptionSpansMatchesTheReference) {
  for (const auto& [name, q] : ExceptionSpansQueries()) {
    EXPECT_TRUE(SameAnswer(reference_->ExceptionSpans(q), reader_->ExceptionSpans(q))) << "query: " << name;
  }
}

TEST_P(ReadConformanceTest, LogPagesMatchTheReference) {
  for (const auto& [name, q] : LogQueries()) {
    EXPECT_TRUE(SameAnswer(AllPages(*reference_, q), AllPages(*reader_, q))) << "query: " << name;
  }
}

TEST_P(ReadConformanceTest, MalformedLogCursorIsInvalidArgument) {
  for (const char* cursor : {"x", ":", "not a cursor", "memory-log:", "memory-log:1", "memory-log:a:b"}) {
    LogPageQuery q = Page(Logs(), 2);
    q.cursor = cursor;
    Result<LogPage> page = reader_->Logs(q);
    EXPECT_EQ(page.status().code(), StatusCode::kInvalidArgument) << "cursor: " << cursor;
  }
}

TEST_P(ReadConformanceTest, CountLogsMatchesTheReference) {
  for (const auto& [name, q] : VolumeQueries()) {
    EXPECT_TRUE(SameAnswer(reference_->CountLogs(q), reader_->CountLogs(q))) << "query: " << name;
  }
}

TEST_P(ReadConformanceTest, FacetLogsMatchesTheReference) {
  for (const auto& [name, q] : FacetQueries()) {
    EXPECT_TRUE(SameAnswer(reference_->FacetLogs(q), reader_->FacetLogs(q))) << "query: " << name;
  }
  EXPECT_EQ(reader_->FacetLogs(Facets(Logs(), 0)).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(reader_->FacetLogs(Facets(Logs(), 10, 0)).status().code(), StatusCode::kInvalidArgument);
}

TEST_P(ReadConformanceTest, ListMetricsMatchesTheReference) {
  for (int64_t project : {kProjectA, kProjectB, kProjectEmpty}) {
    MetricCatalogQuery q{project};
    EXPECT_TRUE(SameAnswer(reference_->ListMetrics(q), reader_->ListMetrics(q))) << "project " << project;
  }
  // Capped: the first max_rows + 1 rows in order.
  for (int64_t cap : {1, 3, 7, 8}) {
    MetricCatalogQuery q{kProjectA, cap};
    EXPECT_TRUE(SameAnswer(reference_->ListMetrics(q), reader_->ListMetrics(q))) << "at most " << cap;
  }
}

// Past the cap an engine returns max_groups + 1 groups (which ones is
// unspecified), so the caller can tell; up to it, the whole answer.
TEST_P(ReadConformanceTest, GroupSpansStopsOneGroupPastTheCap) {
  for (const auto& [name, q] : GroupSpanQueries()) {
    const size_t all = reference_->GroupSpans(q).value().size();
    for (size_t cap = 1; cap <= all + 1; ++cap) {
      SpanGroupQuery capped = q;
      capped.max_groups = static_cast<int64_t>(cap);
      Result<SpanGroups> groups = reader_->GroupSpans(capped);
      ASSERT_TRUE(groups.ok()) << name << ": " << groups.status().ToString();
      EXPECT_EQ(groups->size(), std::min(all, cap + 1)) << "query: " << name << ", at most " << cap;
      if (cap >= all) {
        EXPECT_TRUE(SameAnswer(reference_->GroupSpans(q), groups)) << "query: " << name;
      }
    }
  }
}

TEST_P(ReadConformanceTest, FindSeriesMatchesTheReference) {
  for (int64_t project : {kProjectA, kProjectB}) {
    for (const char* name : {"requests", "cpu.temp", "http.server.duration", "überlauf", "b.only.metric", "none"}) {
      MetricSeriesLookup q{project, name};
      EXPECT_TRUE(SameAnswer(reference_->FindSeries(q), reader_->FindSeries(q)))
          << "project " << project << ", metric " << name;
    }
  }
  for (int64_t cap : {1, 2, 4, 5}) {
    MetricSeriesLookup q{kProjectA, "requests", cap};
    EXPECT_TRUE(SameAnswer(reference_->FindSeries(q), reader_->FindSeries(q))) << "at most " << cap;
  }
}

TEST_P(ReadConformanceTest, AggregateSeriesMatchesTheReference) {
  for (const auto& [name, q] : AggregateQueries()) {
    EXPECT_TRUE(SameAnswer(reference_->AggregateSeries(q), reader_->AggregateSeries(q), q.want)) << "query: " << name;
  }
}

// Retention deletes (TelemetryStore::DeleteBefore) remove the same rows from
// every engine as from the reference, whose rule is its own C++ (the time
// each signal ages by, the project filter): afterwards every answer of every
// operation still matches.
TEST_P(ReadConformanceTest, EveryAnswerMatchesAfterRetentionDeletes) {
  struct Delete {
    Signal signal;
    ProjectSet projects;
    int64_t before_ns;
  };
  const std::vector<Delete> deletes = {
      {Signal::kSpans, ProjectSet::Only({kProjectA}), At(20'000)},
      {Signal::kLogs, ProjectSet::All(), At(15'000)},  // and the log without a time, by its observed time
      {Signal::kMetrics, ProjectSet::AllBut({kProjectA}), At(30'000)},
      {Signal::kMetrics, ProjectSet::Only({kProjectA}), At(10'000)},
      {Signal::kSpans, ProjectSet::Only({}), At(60'000)},  // no project: nothing
  };
  uint64_t deleted = 0;
  for (const Delete& d : deletes) {
    Result<uint64_t> want = reference_store_.DeleteBefore(d.signal, d.projects, d.before_ns);
    Result<uint64_t> got = store_->DeleteBefore(d.signal, d.projects, d.before_ns);
    ASSERT_TRUE(want.ok() && got.ok()) << got.status().ToString();
    EXPECT_EQ(*got, *want) << SignalName(d.signal) << " before " << d.before_ns;
    deleted += *got;
  }
  ASSERT_GT(deleted, 0u) << "the deletes must remove something for this test to mean anything";
  StoreStats want_stats = reference_store_.Stats(), got_stats = store_->Stats();
  for (int s = 0; s < kSignalCount; ++s) {
    EXPECT_EQ(got_stats.rows[s], want_stats.rows[s]) << SignalName(Signal(s));
    Result<std::optional<int64_t>> want = reference_store_.OldestTime(Signal(s));
    Result<std::optional<int64_t>> got = store_->OldestTime(Signal(s));
    ASSERT_TRUE(want.ok() && got.ok()) << got.status().ToString();
    EXPECT_EQ(*got, *want) << SignalName(Signal(s));
  }
  EXPECT_EQ(got_stats.metric_series, want_stats.metric_series) << "series stay";
  for (const auto& [name, q] : GroupSpanQueries()) {
    EXPECT_TRUE(SameAnswer(reference_->GroupSpans(q), reader_->GroupSpans(q))) << "query: " << name;
  }
  for (const auto& [name, q] : SearchQueries()) {
    EXPECT_TRUE(SameAnswer(reference_->SearchTraces(q), reader_->SearchTraces(q))) << "query: " << name;
  }
  for (const auto& [name, q] : TraceQueries()) {
    EXPECT_TRUE(SameAnswer(reference_->GetTrace(q), reader_->GetTrace(q))) << "query: " << name;
  }
  for (const auto& [name, q] : HistogramQueries()) {
    EXPECT_TRUE(SameAnswer(reference_->HistogramDurations(q), reader_->HistogramDurations(q))) << "query: " << name;
  }
  for (const auto& [name, q] : SuggestionQueries()) {
    EXPECT_TRUE(SameAnswer(reference_->SuggestAttributes(q), reader_->SuggestAttributes(q))) << "query: " << name;
  }
  for (const auto& [name, q] : ExceptionQueries()) {
    EXPECT_TRUE(SameAnswer(reference_->GroupExceptions(q), reader_->GroupExceptions(q))) << "query: " << name;
  }
  for (const auto& [name, q] : ExceptionSpansQueries()) {
    EXPECT_TRUE(SameAnswer(reference_->ExceptionSpans(q), reader_->ExceptionSpans(q))) << "query: " << name;
  }
  for (const auto& [name, q] : LogQueries()) {
    EXPECT_TRUE(SameAnswer(AllPages(*reference_, q), AllPages(*reader_, q))) << "query: " << name;
  }
  for (const auto& [name, q] : VolumeQueries()) {
    EXPECT_TRUE(SameAnswer(reference_->CountLogs(q), reader_->CountLogs(q))) << "query: " << name;
  }
  for (const auto& [name, q] : FacetQueries()) {
    EXPECT_TRUE(SameAnswer(reference_->FacetLogs(q), reader_->FacetLogs(q))) << "query: " << name;
  }
  for (int64_t project : {kProjectA, kProjectB, kProjectEmpty}) {
    MetricCatalogQuery q{project};
    EXPECT_TRUE(SameAnswer(reference_->ListMetrics(q), reader_->ListMetrics(q))) << "project " << project;
  }
  for (const auto& [name, q] : AggregateQueries()) {
    EXPECT_TRUE(SameAnswer(reference_->AggregateSeries(q), reader_->AggregateSeries(q), q.want)) << "query: " << name;
  }
}

// ------------------------------------------------------------ service map

//! Writes the service map's spans (read_dataset.h) into a store.
Status WriteServiceMapSpans(TelemetryStore* store) {
  const std::vector<SpanBatch> batches = ServiceMapSpans();
  Result<std::unique_ptr<SignalSink>> sink = store->NewSink(Signal::kSpans);
  if (!sink.ok()) return sink.status();
  std::vector<const SpanBatch*> pointers;
  for (const SpanBatch& b : batches) pointers.push_back(&b);
  return (*sink)->WriteSpans(pointers);
}

ServiceCallQuery Calls(int64_t project, TimeRange range, int64_t margin_ns = 0) {
  ServiceCallQuery q;
  q.project_id = project;
  q.range = range;
  q.parent_margin_ns = margin_ns;
  return q;
}

std::vector<Named<ServiceCallQuery>> ServiceCallQueries() {
  std::vector<Named<ServiceCallQuery>> out = {
      {"map, no margin", Calls(kProjectMap, kRange)},
      {"map, 1 s margin", Calls(kProjectMap, kRange, Ms(1000))},
      {"map, 5 min margin", Calls(kProjectMap, kRange, Ms(300'000))},
      {"map, from inside the range", Calls(kProjectMap, {At(1500), At(60'000)})},
      {"map, empty range", Calls(kProjectMap, kEmptyRange, Ms(300'000))},
      {"other project with a parent id of the map's", Calls(kProjectMapOther, kRange, Ms(300'000))},
      {"project A", Calls(kProjectA, kRange)},
      {"project A, 5 min margin", Calls(kProjectA, kRange, Ms(300'000))},
      {"project B", Calls(kProjectB, kRange, Ms(300'000))},
      {"project without data", Calls(kProjectEmpty, kRange)},
  };
  for (const char* service : {"web", "db-svc", "api", "nobody"}) {
    ServiceCallQuery q = Calls(kProjectMap, kRange, Ms(300'000));
    q.service = service;
    out.push_back({std::string("map, calls of ") + service, q});
  }
  for (int64_t cap : {0, 1, 2}) {
    ServiceCallQuery q = Calls(kProjectMap, kRange, Ms(1000));
    q.max_calls = cap;
    out.push_back({"map, at most " + std::to_string(cap), q});
  }
  return out;
}

TEST_P(ReadConformanceTest, GroupServiceCallsMatchesTheReference) {
  for (const auto& [name, q] : ServiceCallQueries()) {
    EXPECT_TRUE(SameAnswer(reference_->GroupServiceCalls(q), reader_->GroupServiceCalls(q))) << "query: " << name;
  }
  ServiceCallQuery bad = Calls(kProjectMap, kRange, -1);
  EXPECT_EQ(reader_->GroupServiceCalls(bad).status().code(), StatusCode::kInvalidArgument);
}

// ------------------------------------------------------- indexed lookups

std::vector<Named<TraceQuery>> IndexedTraceQueries() {
  return {
      {"long trace", {kProjectIndex, kTraceLong}},
      {"long trace, at most 1", {kProjectIndex, kTraceLong, 1, 1}},
      {"logs only: not found", {kProjectIndex, kTraceLogsOnly}},
      {"no logs", {kProjectIndex, kTraceOther}},
      {"another project", {kProjectA, kTraceLong}},
  };
}

std::vector<Named<LogPageQuery>> IndexedLogQueries() {
  auto text = [](std::string t, int64_t limit = 100) {
    LogFilter f = Logs(kProjectIndex, kIndexRange);
    f.text = std::move(t);
    return Page(f, limit);
  };
  std::vector<Named<LogPageQuery>> out = {
      {"a word only in the oldest record", text("zebrafish")},
      {"capitals", text("ZEBRA")},
      {"a separator inside", text("fish rare")},
      {"a hyphen inside", text("rare-word")},
      {"an absent word", text("absentword")},
      {"an underscore inside", text("card_declined")},
      {"a word after a non-ASCII capital", text("émile")},
      {"a non-ASCII capital, folded", text("ÉMILE")},
      {"Cyrillic only", text("журнал")},
      {"the middle of a long token", text("stuvwxyz0123456789ABCDEFGH")},
      {"past the token cap", text("needleinoverflow")},
      {"separators only", text(" : ")},
      {"a common letter, pages of 1", text("e", 1)},
      {"a common letter, pages of 2", text("o", 2)},
      {"a word in another project", text("payment")},
  };
  for (const auto& [name, id] : {std::pair<const char*, TraceId>{"long trace", kTraceLong},
                                 {"logs only", kTraceLogsOnly},
                                 {"no logs", kTraceOther},
                                 {"missing", kTraceMissing}}) {
    LogFilter f = Logs(kProjectIndex, kIndexRange);
    f.trace_id = id;
    out.push_back({std::string("trace: ") + name, Page(f)});
    out.push_back({std::string("trace, pages of 1: ") + name, Page(f, 1)});
    f.text = "the";
    out.push_back({std::string("trace and text: ") + name, Page(f)});
  }
  LogFilter f = Logs(kProjectIndex, {At(-150 * 60'000), At(0)});
  f.trace_id = kTraceLogsOnly;
  out.push_back({"trace in part of its range", Page(f)});
  return out;
}

//! A severity page past the range's newest window: the log rollups' counts
//! (where the engine keeps them) only narrow which minutes are read.
TEST_P(ReadConformanceTest, SeverityPagesPastTheNewestWindowMatchTheReference) {
  auto queries = [] {
    std::vector<Named<LogPageQuery>> out;
    for (int64_t limit : {1, 2, 3, 5, 100}) {
      LogFilter f = Logs(kProjectSeverity, kSeverityRange);
      f.severity_min = 17;
      out.push_back({"errors, pages of " + std::to_string(limit), Page(f, limit)});
    }
    LogFilter f = Logs(kProjectSeverity, kSeverityRange);
    f.severity_min = 21;
    out.push_back({"fatal", Page(f, 1)});
    f.severity_min = 13;
    f.service = "b";
    out.push_back({"at least WARN of service b", Page(f, 1)});
    f = Logs(kProjectSeverity, {At(-175 * 60'000), At(-95 * 60'000) + 3});
    f.severity_min = 17;
    out.push_back({"errors in part of the range", Page(f, 2)});
    f.severity_min = 22;
    out.push_back({"a severity nothing has", Page(f, 2)});
    return out;
  };
  auto check = [&](const std::string& stage) {
    for (const auto& [name, q] : queries()) {
      EXPECT_TRUE(SameAnswer(AllPages(*reference_, q), AllPages(*reader_, q))) << stage << ", query: " << name;
    }
  };
  const std::vector<WriteStep> steps = SeverityPagingWrites();
  for (size_t i = 0; i < steps.size(); ++i) {
    for (TelemetryStore* store : {store_.get(), static_cast<TelemetryStore*>(&reference_store_)}) {
      Result<std::unique_ptr<SignalSink>> logs = store->NewSink(Signal::kLogs);
      ASSERT_TRUE(logs.ok());
      std::vector<const LogBatch*> batches;
      for (const LogBatch& b : steps[i].logs) batches.push_back(&b);
      ASSERT_TRUE((*logs)->WriteLogs(batches).ok());
    }
    check("after write " + std::to_string(i + 1));
  }
}

//! The engines' own indexes (DuckDB's trace ranges and log tokens) only
//! narrow what a lookup reads: a trace in several writes, before and after
//! compaction (ReclaimSpace compacts DuckDB's), a late span, retention.
TEST_P(ReadConformanceTest, IndexedLookupsMatchTheReference) {
  const std::vector<WriteStep> steps = IndexedLookupWrites();
  auto write = [](TelemetryStore* store, const WriteStep& step) {
    Result<std::unique_ptr<SignalSink>> spans = store->NewSink(Signal::kSpans);
    Result<std::unique_ptr<SignalSink>> logs = store->NewSink(Signal::kLogs);
    ASSERT_TRUE(spans.ok() && logs.ok());
    std::vector<const SpanBatch*> span_batches;
    for (const SpanBatch& b : step.spans) span_batches.push_back(&b);
    std::vector<const LogBatch*> log_batches;
    for (const LogBatch& b : step.logs) log_batches.push_back(&b);
    ASSERT_TRUE((*spans)->WriteSpans(span_batches).ok());
    ASSERT_TRUE((*logs)->WriteLogs(log_batches).ok());
  };
  auto check = [&](const std::string& stage) {
    for (const auto& [name, q] : IndexedTraceQueries()) {
      EXPECT_TRUE(SameAnswer(reference_->GetTrace(q), reader_->GetTrace(q))) << stage << ", query: " << name;
    }
    for (const auto& [name, q] : IndexedLogQueries()) {
      EXPECT_TRUE(SameAnswer(AllPages(*reference_, q), AllPages(*reader_, q))) << stage << ", query: " << name;
    }
  };
  write(store_.get(), steps[0]);
  write(&reference_store_, steps[0]);
  check("one write");
  write(store_.get(), steps[1]);
  write(&reference_store_, steps[1]);
  check("two writes");
  ASSERT_TRUE(store_->ReclaimSpace().ok());
  check("compacted");
  write(store_.get(), steps[2]);
  write(&reference_store_, steps[2]);
  check("a late span after compaction");
  for (Signal signal : {Signal::kSpans, Signal::kLogs}) {
    const int64_t before = At(-150 * 60'000);
    Result<uint64_t> want = reference_store_.DeleteBefore(signal, ProjectSet::All(), before);
    Result<uint64_t> got = store_->DeleteBefore(signal, ProjectSet::All(), before);
    ASSERT_TRUE(want.ok() && got.ok()) << got.status().ToString();
    EXPECT_EQ(*got, *want);
  }
  check("after retention");
  ASSERT_TRUE(store_->ReclaimSpace().ok());
  check("after retention, compacted");
}

INSTANTIATE_TEST_SUITE_P(Engines, ReadConformanceTest, ::testing::ValuesIn(Engines()),
                         [](const ::testing::TestParamInfo<EngineSpec>& info) { return info.param.name; });

// ------------------------------------------- the reference, checked by hand

class ReadReferenceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(WriteReadDataset(BuildReadDataset(), &store_).ok());
    reader_ = std::move(store_.AcquireReader(0)).value();
  }

  //! The answer, or an empty one (and a failure) for an error.
  template <typename T>
  static T Ok(const Result<T>& r) {
    if (!r.ok()) {
      ADD_FAILURE() << r.status().ToString();
      return T{};
    }
    return r.value();
  }

  MemoryStore store_;
  std::unique_ptr<TelemetryReader> reader_;
};

MetricBucket Stats(int64_t series, int64_t bucket, int64_t count, double sum, double min, double max) {
  MetricBucket m;
  m.series_id = series;
  m.bucket = bucket;
  m.count = count;
  m.sum = sum;
  m.min = min;
  m.max = max;
  return m;
}

MetricBucket Last(int64_t series, int64_t bucket, double last, double sum) {
  MetricBucket m;
  m.series_id = series;
  m.bucket = bucket;
  m.last = last;
  m.sum = sum;
  return m;
}

std::vector<std::string> TraceIds(const TraceSummaries& traces) {
  std::vector<std::string> out;
  for (const TraceSummary& t : traces) out.push_back(Hex(t.trace_id));
  return out;
}

std::vector<std::string> Bodies(const std::vector<LogRecord>& records) {
  std::vector<std::string> out;
  for (const LogRecord& l : records) out.push_back(l.body);
  return out;
}

// Entry spans in the range: frontend /api/items a1 10 ms, b1 20 (error),
// c1 30, d1 40; checkout /api/pay a3 10 (error), c2 20, d2 40, d3 30; worker
// b3 and e2 (CONSUMER) 5 each, e1 (INTERNAL root) 7; naïve-svc f1 15. a2, b2
// and c4 are CLIENT children; c0, g1 and h1 are outside the range.
// Percentiles of 10, 20, 30, 40: positions 1.5, 2.85, 2.97 between ranks.
TEST_F(ReadReferenceTest, GroupSpansByServiceAndEndpoint) {
  using D = SpanDimension;
  const SpanGroups expected = {
      {{"checkout", "/api/pay"}, 4, 1, {MsD(25), MsD(38.5), MsD(39.7)}},
      {{"frontend", "/api/items"}, 4, 1, {MsD(25), MsD(38.5), MsD(39.7)}},
      {{"naïve-svc", "Überprüfung ✓"}, 1, 0, {MsD(15), MsD(15), MsD(15)}},
      {{"worker", "checkout-job"}, 2, 0, {MsD(5), MsD(5), MsD(5)}},
      {{"worker", "cron tick"}, 1, 0, {MsD(7), MsD(7), MsD(7)}},
  };
  EXPECT_TRUE(
      SameAnswer<SpanGroups>(expected, reader_->GroupSpans(Grouped(EntrySpans(), {D::kService, D::kEndpoint}))));
}

// Every span: frontend adds a2 6, b2 3 and c4 2 ms: 2 3 6 10 20 30 40, so p50
// is rank 3 (10), p95 at 5.7 (30 + 0.7 * 10), p99 at 5.94. worker: 5 5 7.
TEST_F(ReadReferenceTest, GroupSpansOfEverySpan) {
  const SpanGroups expected = {
      {{"checkout"}, 4, 1, {MsD(25), MsD(38.5), MsD(39.7)}},
      {{"frontend"}, 7, 1, {MsD(10), MsD(37), MsD(39.4)}},
      {{"naïve-svc"}, 1, 0, {MsD(15), MsD(15), MsD(15)}},
      {{"worker"}, 3, 0, {MsD(5), MsD(6.8), MsD(6.96)}},
  };
  EXPECT_TRUE(SameAnswer<SpanGroups>(expected, reader_->GroupSpans(Grouped(Spans(), {SpanDimension::kService}))));
}

// Bucket 0 (0-10 s) holds both top endpoints and b3 ("other"); bucket 2 e1 and
// e2 (7 and 5 ms: p95 5 + 0.95 * 2); bucket 3 f1. Only p95 is asked for.
TEST_F(ReadReferenceTest, GroupSpansByBucketAndLabel) {
  const SpanGroups expected = {
      {{"0", "-1"}, 1, 0, {kNaN, MsD(5), kNaN}},   {{"0", "0"}, 4, 1, {kNaN, MsD(38.5), kNaN}},
      {{"0", "1"}, 4, 1, {kNaN, MsD(38.5), kNaN}}, {{"2", "-1"}, 2, 0, {kNaN, MsD(6.9), kNaN}},
      {{"3", "-1"}, 1, 0, {kNaN, MsD(15), kNaN}},
  };
  EXPECT_TRUE(SameAnswer<SpanGroups>(expected, reader_->GroupSpans(LatencyChart({false, true, false}))));
}

// Buckets from 5 s: a1 and a3 (1 s) fall in bucket -1, not 0 (floor, not
// truncation). Bucket 0: b1 20, b3 5, c1 30, c2 20, d1 40, d2 40, d3 30 ms.
TEST_F(ReadReferenceTest, GroupSpansBucketsAreFloored) {
  const SpanGroups expected = {
      {{"0"}, 7, 1, {MsD(30), MsD(40), MsD(40)}},
      {{"1"}, 2, 0, {MsD(6), MsD(6.9), MsD(6.98)}},
      {{"2"}, 1, 0, {MsD(15), MsD(15), MsD(15)}},
  };
  EXPECT_TRUE(SameAnswer<SpanGroups>(expected, reader_->GroupSpans(BucketsFromInsideTheRange())));
}

// All twelve entry spans: 5 5 7 10 10 15 20 20 30 30 40 40.
TEST_F(ReadReferenceTest, GroupSpansWithoutDimensions) {
  const SpanGroups expected = {{{}, 12, 2, {MsD(17.5), MsD(40), MsD(40)}}};
  EXPECT_TRUE(SameAnswer<SpanGroups>(expected, reader_->GroupSpans(Grouped(EntrySpans(), {}))));
}

TEST_F(ReadReferenceTest, GroupSpansKeepsProjectsApart) {
  using D = SpanDimension;
  const SpanGroups b = {
      {{"frontend"}, 1, 1, {MsD(999), MsD(999), MsD(999)}},
      {{"secret-b"}, 1, 0, {MsD(1), MsD(1), MsD(1)}},
  };
  EXPECT_TRUE(SameAnswer<SpanGroups>(b, reader_->GroupSpans(Grouped(EntrySpans(kProjectB), {D::kService}))));
  EXPECT_THAT(Ok(reader_->GroupSpans(Grouped(EntrySpans(kProjectEmpty), {D::kService}))), IsEmpty());
  EXPECT_THAT(Ok(reader_->GroupSpans(Grouped(EntrySpans(kProjectA, kEmptyRange), {D::kService}))), IsEmpty());
}

// Attribute values compare as text: the \u00e9 escape is é, 2.50 is "2.5",
// false is "false", 1e+21 as std::to_chars writes it; null matches nothing.
TEST_F(ReadReferenceTest, AttributeFiltersCompareValuesAsText) {
  auto traces = [&](const char* key, const char* value) {
    return TraceIds(Ok(reader_->SearchTraces(SearchWithAttribute(key, value))));
  };
  EXPECT_THAT(traces("user.name", "café"), ElementsAre(Hex(kTrace1)));
  EXPECT_THAT(traces("ratio", "2.5"), ElementsAre(Hex(kTrace3)));
  EXPECT_THAT(traces("ratio", "2.50"), IsEmpty());
  EXPECT_THAT(traces("amount", "12.5"), ElementsAre(Hex(kTrace1)));
  EXPECT_THAT(traces("amount", "7"), ElementsAre(Hex(kTrace3)));
  EXPECT_THAT(traces("vip", "true"), ElementsAre(Hex(kTrace1)));
  EXPECT_THAT(traces("vip", "false"), ElementsAre(Hex(kTrace3)));
  EXPECT_THAT(traces("retry", "false"), ElementsAre(Hex(kTrace1)));
  EXPECT_THAT(traces("n", "-7"), ElementsAre(Hex(kTrace6)));
  EXPECT_THAT(traces("note", "Grüße"), ElementsAre(Hex(kTrace6)));
  EXPECT_THAT(traces("big", "1e+21"), ElementsAre(Hex(kTrace2)));
  EXPECT_THAT(traces("k", "null"), IsEmpty());
  EXPECT_THAT(traces("k", ""), IsEmpty());
  EXPECT_THAT(traces("http.response.status_code", "200"), ElementsAre(Hex(kTrace4), Hex(kTrace3), Hex(kTrace1)));
}

// Order: the earliest start in the range, newest first; kTrace2 and kTrace3
// both start at 5 s and differ in the low half only: ascending. Summaries span
// all of a trace's spans: kTrace3 starts with c0 and c5 before the range, and
// c0 names it (no root among them; c0's id is the smaller unsigned, c5's top
// bit is set); kTrace5 is named by its root e1, though its child e2 starts
// with it and has the smaller id. kTrace1's span in project B is not counted.
TEST_F(ReadReferenceTest, SearchTracesOrderAndSummaries) {
  const TraceSummaries expected = {
      {kTrace6, "naïve-svc", "Überprüfung ✓", At(30000), At(30015), 1, false},
      {kTrace5, "worker", "cron tick", At(20000), At(20007), 2, false},
      {kTrace4, "frontend", "GET /api/items", At(9000), At(9045), 3, false},
      {kTrace2, "frontend", "GET /api/items", At(5000), At(5020), 3, true},
      {kTrace3, "worker", "prefetch", At(-5000), At(5030), 5, false},
      {kTrace1, "frontend", "GET /api/items", At(1000), At(1012), 3, true},
  };
  EXPECT_TRUE(SameAnswer<TraceSummaries>(expected, reader_->SearchTraces(Search(Spans()))));
  EXPECT_THAT(TraceIds(Ok(reader_->SearchTraces(Search(Spans(), 2)))), ElementsAre(Hex(kTrace6), Hex(kTrace5)));
  EXPECT_THAT(Ok(reader_->SearchTraces(Search(Spans(kProjectA, kEmptyRange)))), IsEmpty());
  const TraceSummaries b = {
      {kTrace2, "secret-b", "hidden", At(5000), At(5001), 1, false},
      {kTrace1, "frontend", "GET /api/items", At(1000), At(1999), 1, true},
  };
  EXPECT_TRUE(SameAnswer<TraceSummaries>(b, reader_->SearchTraces(Search(Spans(kProjectB)))));
}

TEST_F(ReadReferenceTest, SearchTracesFilters) {
  auto search = [&](auto edit) {
    TraceSearchQuery q = Search(Spans());
    edit(q.filter);
    return TraceIds(Ok(reader_->SearchTraces(q)));
  };
  // A trace is placed by its earliest span in the range, not by the span that
  // matched: kTrace3 by c1 (5 s), not c2 (5.01 s).
  EXPECT_THAT(search([](SpanFilter& f) { f.service = "checkout"; }),
              ElementsAre(Hex(kTrace4), Hex(kTrace3), Hex(kTrace1)));
  // kTrace3's worker span c0 is before the range.
  EXPECT_THAT(search([](SpanFilter& f) { f.service = "worker"; }), ElementsAre(Hex(kTrace5), Hex(kTrace2)));
  EXPECT_THAT(search([](SpanFilter& f) { f.status_code = 2; }), ElementsAre(Hex(kTrace2), Hex(kTrace1)));
  EXPECT_THAT(search([](SpanFilter& f) { f.min_duration_ns = Ms(30); }), ElementsAre(Hex(kTrace4), Hex(kTrace3)));
  EXPECT_THAT(search([](SpanFilter& f) { f.max_duration_ns = Ms(5); }),
              ElementsAre(Hex(kTrace5), Hex(kTrace2), Hex(kTrace3)));
  EXPECT_THAT(search([](SpanFilter& f) { f.endpoint = "cron tick"; }), ElementsAre(Hex(kTrace5)));
}

// Operators: != needs the key with another value; > and < compare JSON
// numbers only (not strings, booleans or nulls); exists needs a non-null value.
TEST_F(ReadReferenceTest, AttributeOperators) {
  auto traces = [&](std::vector<AttrFilter> filters, bool resource = false) {
    TraceSearchQuery q = Search(Spans());
    (resource ? q.filter.resource_attributes : q.filter.attributes) = std::move(filters);
    return TraceIds(Ok(reader_->SearchTraces(q)));
  };
  using O = AttrOp;
  EXPECT_THAT(traces({Attr("http.response.status_code", O::kNe, "200")}), ElementsAre(Hex(kTrace2)));
  EXPECT_THAT(traces({Attr("vip", O::kNe, "true")}), ElementsAre(Hex(kTrace3)));
  EXPECT_THAT(traces({Attr("k", O::kNe, "x")}), IsEmpty());
  EXPECT_THAT(traces({Attr("no.such.key", O::kNe, "x")}), IsEmpty());
  EXPECT_THAT(traces({Number("http.response.status_code", O::kGt, 200)}), ElementsAre(Hex(kTrace2)));
  EXPECT_THAT(traces({Number("amount", O::kGt, 7)}), ElementsAre(Hex(kTrace1)));
  EXPECT_THAT(traces({Number("amount", O::kGt, 6.99)}), ElementsAre(Hex(kTrace3), Hex(kTrace1)));
  EXPECT_THAT(traces({Number("amount", O::kLt, 12.5)}), ElementsAre(Hex(kTrace3)));
  EXPECT_THAT(traces({Number("n", O::kLt, 0)}), ElementsAre(Hex(kTrace6)));
  EXPECT_THAT(traces({Number("big", O::kGt, 1e20)}), ElementsAre(Hex(kTrace2)));
  EXPECT_THAT(traces({Number("currency", O::kGt, -1e300)}), IsEmpty());
  EXPECT_THAT(traces({Number("vip", O::kGt, -1)}), IsEmpty());
  EXPECT_THAT(traces({Attr("db.system", O::kExists)}), ElementsAre(Hex(kTrace2)));
  EXPECT_THAT(traces({Attr("k", O::kExists)}), IsEmpty());
  EXPECT_THAT(traces({Attr("http.response.status_code", O::kExists), Number("http.response.status_code", O::kLt, 300)}),
              ElementsAre(Hex(kTrace4), Hex(kTrace3), Hex(kTrace1)));
  // Resources: 101 (frontend) keeps its first content, web-1.
  EXPECT_THAT(traces({Attr("host.name", O::kEq, "web-1")}, true),
              ElementsAre(Hex(kTrace4), Hex(kTrace2), Hex(kTrace3), Hex(kTrace1)));
  EXPECT_THAT(traces({Attr("host.name", O::kEq, "CHANGED")}, true), IsEmpty());
  EXPECT_THAT(traces({Attr("région", O::kExists)}, true), ElementsAre(Hex(kTrace6)));
  EXPECT_THAT(traces({Attr("service.name", O::kNe, "frontend")}, true),
              ElementsAre(Hex(kTrace6), Hex(kTrace5), Hex(kTrace4), Hex(kTrace2), Hex(kTrace3), Hex(kTrace1)));
}

// Durations over the spans in the range: kTrace4 45 ms, kTrace3 30 (c0 and c5
// before the range do not count), kTrace2 20, kTrace6 15, kTrace1 12,
// kTrace5 7. In the map project kTraceM0, kTraceM6 and kTraceM7 tie at 5 ms
// (M6's and M7's other span lies outside the range; M0 is written last),
// ascending by trace id either way.
TEST_F(ReadReferenceTest, SearchTracesByDurationAndPages) {
  auto search = [&](int64_t project, TraceOrder order, int64_t offset = 0, int64_t limit = 50) {
    TraceSearchQuery q = Search(Spans(project), limit);
    q.order = order;
    q.offset = offset;
    return TraceIds(Ok(reader_->SearchTraces(q)));
  };
  EXPECT_THAT(search(kProjectA, TraceOrder::kDurationDesc),
              ElementsAre(Hex(kTrace4), Hex(kTrace3), Hex(kTrace2), Hex(kTrace6), Hex(kTrace1), Hex(kTrace5)));
  EXPECT_THAT(search(kProjectA, TraceOrder::kDurationAsc),
              ElementsAre(Hex(kTrace5), Hex(kTrace1), Hex(kTrace6), Hex(kTrace2), Hex(kTrace3), Hex(kTrace4)));
  EXPECT_THAT(search(kProjectA, TraceOrder::kDurationDesc, 2, 2), ElementsAre(Hex(kTrace2), Hex(kTrace6)));
  EXPECT_THAT(search(kProjectA, TraceOrder::kStartDesc, 2, 2), ElementsAre(Hex(kTrace4), Hex(kTrace2)));
  EXPECT_THAT(search(kProjectA, TraceOrder::kStartDesc, 5, 2), ElementsAre(Hex(kTrace1)));
  EXPECT_THAT(search(kProjectA, TraceOrder::kStartDesc, 6, 2), IsEmpty());
  ASSERT_TRUE(WriteServiceMapSpans(&store_).ok());
  EXPECT_THAT(search(kProjectMap, TraceOrder::kDurationDesc),
              ElementsAre(Hex(kTraceM1), Hex(kTraceM5), Hex(kTraceM4), Hex(kTraceM2), Hex(kTraceM3), Hex(kTraceM0),
                          Hex(kTraceM6), Hex(kTraceM7)));
  EXPECT_THAT(search(kProjectMap, TraceOrder::kDurationAsc),
              ElementsAre(Hex(kTraceM0), Hex(kTraceM6), Hex(kTraceM7), Hex(kTraceM3), Hex(kTraceM2), Hex(kTraceM4),
                          Hex(kTraceM5), Hex(kTraceM1)));
}

// Project A's 15 spans in the range, by duration: c4 2, b2 3 | e2 5, b3 5,
// a2 6, e1 7 | a1 10, a3 10, f1 15 | b1 20, c2 20, c1 30, d3 30 | d1 40, d2 40.
TEST_F(ReadReferenceTest, HistogramDurations) {
  DurationHistogram h = Ok(reader_->HistogramDurations(Histogram(Spans())));
  EXPECT_THAT(h.counts, ElementsAre(2, 4, 3, 4, 2));
  EXPECT_EQ(h.total, 15);
  EXPECT_EQ(h.min_ns, Ms(2));
  EXPECT_EQ(h.max_ns, Ms(40));
  DurationHistogram none = Ok(reader_->HistogramDurations(Histogram(Spans(kProjectA, kEmptyRange))));
  EXPECT_THAT(none.counts, ElementsAre(0, 0, 0, 0, 0));
  EXPECT_EQ(none.total, 0);
  EXPECT_EQ(none.max_ns, 0);
}

// The newest two spans are f1 and e2 (e1 starts with e2, with a greater id).
TEST_F(ReadReferenceTest, SuggestAttributes) {
  AttributeSuggestions two = Ok(reader_->SuggestAttributes(Suggest(Spans(), 2)));
  EXPECT_EQ(two.sampled, 2);
  std::vector<std::string> keys;
  for (const AttributeFacet& a : two.span) keys.push_back(a.key + "=" + std::to_string(a.count));
  EXPECT_THAT(keys, ElementsAre("n=1", "note=1"));
  ASSERT_EQ(two.resource.size(), 2u);
  EXPECT_EQ(two.resource[0].key, "service.name");
  EXPECT_EQ(two.resource[0].count, 2);
  ASSERT_EQ(two.resource[0].values.size(), 2u);
  EXPECT_EQ(two.resource[0].values[0].value, "naïve-svc");
  EXPECT_EQ(two.resource[0].values[1].value, "worker");
  EXPECT_EQ(two.resource[1].key, "région");
  // Every span: http.response.status_code on a1, c1, d1 (200) and b1 (504).
  AttributeSuggestionQuery q = Suggest(Spans());
  q.key = "http.response.status_code";
  AttributeSuggestions one = Ok(reader_->SuggestAttributes(q));
  EXPECT_EQ(one.sampled, 15);
  ASSERT_EQ(one.span.size(), 1u);
  EXPECT_EQ(one.span[0].count, 4);
  ASSERT_EQ(one.span[0].values.size(), 2u);
  EXPECT_EQ(one.span[0].values[0].value, "200");
  EXPECT_EQ(one.span[0].values[0].count, 3);
  EXPECT_EQ(one.span[0].values[1].value, "504");
  EXPECT_THAT(one.resource, IsEmpty());
}

// Spans by start, then span id unsigned: a2 (0xa2) before a3 (0xf0...a3),
// e2 (0x0e) before its parent e1 (0xe1), c0 (0xc0) before c5 (0x80...c5).
// Logs by time at any time, then insertion: L10 before the range, then L1, L2
// (first write) and L3 (second write).
TEST_F(ReadReferenceTest, GetTraceOrdersSpansAndLogs) {
  const TraceDetail t1 = Ok(reader_->GetTrace({kProjectA, kTrace1}));
  std::vector<uint64_t> ids;
  for (const SpanRecord& s : t1.spans) ids.push_back(s.span_id);
  EXPECT_THAT(ids, ElementsAre(kSpanA1, kSpanA2, kSpanA3));
  EXPECT_THAT(Bodies(t1.logs),
              ElementsAre("too early", "request started", "Payment FAILED for order 42", "ÉCHEC du paiement"));
  const TraceDetail t5 = Ok(reader_->GetTrace({kProjectA, kTrace5}));
  ASSERT_EQ(t5.spans.size(), 2u);
  EXPECT_EQ(t5.spans[0].span_id, kSpanE2);
  EXPECT_EQ(t5.spans[1].span_id, kSpanE1);
  EXPECT_THAT(t5.logs, IsEmpty());
  std::vector<uint64_t> t3;
  for (const SpanRecord& s : Ok(reader_->GetTrace({kProjectA, kTrace3})).spans) t3.push_back(s.span_id);
  EXPECT_THAT(t3, ElementsAre(kSpanC0, kSpanC5, kSpanC1, kSpanC4, kSpanC2));
}

TEST_F(ReadReferenceTest, GetTraceReturnsEveryColumnOfASpan) {
  const TraceDetail t1 = Ok(reader_->GetTrace({kProjectA, kTrace1}));
  ASSERT_EQ(t1.spans.size(), 3u);
  const SpanRecord& a3 = t1.spans[2];
  const SpanRecord expected = {
      kSpanA3,
      kSpanA2,
      "checkout",
      "POST /api/pay",
      2,
      At(1002),
      At(1012),
      Ms(10),
      2,
      "card declined",
      "",
      R"({"amount":12.5,"currency":"EUR","vip":true})",
      R"({"service.name":"checkout"})",
      R"([{"time_unix_nano":1700000001005000000,"name":"exception","attributes":{"exception.type":"PaymentError",)"
      R"("exception.message":"card declined ✗"},"dropped_attributes_count":0}])",
      R"([{"trace_id":"00000000000000001111111111111111","span_id":"00000000000000b1","trace_state":"",)"
      R"("attributes":{},"dropped_attributes_count":0,"flags":0}])",
      "checkout-lib"};
  EXPECT_TRUE(SameRows({ToRow(expected)}, {ToRow(a3)}));
  EXPECT_EQ(t1.spans[0].trace_state, "congo=t61rcWkgMzE");
  EXPECT_EQ(t1.spans[0].parent_span_id, 0u);
  EXPECT_EQ(t1.spans[0].events, "");
  const LogRecord l1 = {
      At(1000), 9, "INFO", "request started", "frontend", kTrace1, kSpanA1, R"({"http.request.method":"GET"})", ""};
  EXPECT_TRUE(SameRows({ToRow(l1)}, {ToRow(t1.logs[1])}));
}

// Resources are stored once per (project, id): kTrace8's span was written
// with resource 101 changed, and reads the first one; project B has its own.
TEST_F(ReadReferenceTest, GetTraceReadsTheFirstResourceWritten) {
  const TraceDetail t8 = Ok(reader_->GetTrace({kProjectA, kTrace8}));
  ASSERT_EQ(t8.spans.size(), 1u);
  EXPECT_EQ(t8.spans[0].resource_attributes, R"({"service.name":"frontend","host.name":"web-1"})");
  EXPECT_EQ(t8.spans[0].scope_name, "io.opentelemetry.http");
  const TraceDetail b1 = Ok(reader_->GetTrace({kProjectB, kTrace1}));
  ASSERT_EQ(b1.spans.size(), 1u);
  EXPECT_EQ(b1.spans[0].span_id, kSpanP1);
  EXPECT_EQ(b1.spans[0].resource_attributes, R"({"service.name":"frontend","host.name":"b-host"})");
  EXPECT_THAT(Bodies(b1.logs), ElementsAre("Payment FAILED (project B)"));
}

TEST_F(ReadReferenceTest, GetTraceNotFound) {
  EXPECT_EQ(reader_->GetTrace({kProjectA, kTraceMissing}).status().code(), StatusCode::kNotFound);
  EXPECT_EQ(reader_->GetTrace({kProjectA, TraceId{}}).status().code(), StatusCode::kNotFound);
  EXPECT_EQ(reader_->GetTrace({kProjectB, kTrace3}).status().code(), StatusCode::kNotFound);
  // kTrace2 and kTrace3 differ in the low half only.
  EXPECT_EQ(Ok(reader_->GetTrace({kProjectA, kTrace2})).spans[0].span_id, kSpanB1);
  EXPECT_EQ(Ok(reader_->GetTrace({kProjectA, kTrace3})).spans[0].span_id, kSpanC0);
  // Before the range: GetTrace reads any time.
  EXPECT_EQ(Ok(reader_->GetTrace({kProjectA, kTrace7})).spans.size(), 1u);
}

// Groups in the range: PaymentError a3, c2, d2 and the log record L2;
// "connection reset" without a type b2, c4; the log records L6 and L7, whose
// messages differ only in a number and a hex run; TimeoutError without a
// message b3, e1 (worker) and b1 (frontend); L4 without a type or trace;
// ÄrgerError f1. g1 (OldError) is before the range. Equal counts order by
// type, "" first; "T" < "Ä" in bytes. The sample is the greatest trace id
// unsigned: kTrace4 (high half top bit set), kTrace3 > kTrace2 by the low
// half, kTrace5 (low half all ones) > kTrace2; none for L4.
TEST_F(ReadReferenceTest, GroupExceptions) {
  const ExceptionGroups expected = {
      {"PaymentError", "card declined ✗", "checkout", 4, At(1000), At(9005), kTrace4, 1},
      {"", "connection reset", "frontend", 2, At(5001), At(5001), kTrace3, 0},
      {"PanicError", "worker <n> crashed at <hex>", "worker", 2, At(5000), At(5000), kTrace3, 2},
      {"TimeoutError", "", "worker", 2, At(5002), At(20000), kTrace5, 0},
      {"", "retry <n> of order <n> failed", "checkout", 1, At(2000), At(2000), TraceId{}, 1},
      {"TimeoutError", "", "frontend", 1, At(5000), At(5000), kTrace2, 0},
      {"ÄrgerError", "kaputt ✗", "naïve-svc", 1, At(30000), At(30000), kTrace6, 0},
  };
  EXPECT_TRUE(SameAnswer<ExceptionGroups>(expected, reader_->GroupExceptions(Exceptions(Spans()))));
  EXPECT_TRUE(SameAnswer<ExceptionGroups>(ExceptionGroups{expected[0], expected[1]},
                                          reader_->GroupExceptions(Exceptions(Spans(), 2))));
  ExceptionQuery worker = Exceptions(Spans());
  worker.filter.service = "worker";
  EXPECT_TRUE(SameAnswer<ExceptionGroups>(ExceptionGroups{expected[2], expected[3]}, reader_->GroupExceptions(worker)));
  const ExceptionGroups b = {{"PaymentError", "card declined ✗", "checkout", 1, At(1000), At(1000), kTrace1, 1},
                             {"PaymentError", "card declined ✗", "frontend", 1, At(1000), At(1000), kTrace1, 0}};
  EXPECT_TRUE(SameAnswer<ExceptionGroups>(b, reader_->GroupExceptions(Exceptions(Spans(kProjectB)))));
}

TEST_F(ReadReferenceTest, ExceptionSpans) {
  const SpanRefs payment = {
      {kTrace4, kSpanD2, "checkout", "POST /api/pay", At(9005), Ms(40), false},
      {kTrace3, kSpanC2, "checkout", "POST /api/pay", At(5010), Ms(20), false},
      {kTrace1, kSpanA3, "checkout", "POST /api/pay", At(1002), Ms(10), false},
      {kTrace1, kSpanA3, "checkout", "", At(1000), 0, true},  // the log record L2
  };
  EXPECT_TRUE(
      SameAnswer<SpanRefs>(payment, reader_->ExceptionSpans(ExceptionSpansOf("PaymentError", "card declined ✗"))));
  EXPECT_TRUE(SameAnswer<SpanRefs>(SpanRefs{payment[0]},
                                   reader_->ExceptionSpans(ExceptionSpansOf("PaymentError", "card declined ✗", 1))));
  // A filter only spans keep leaves the log records be.
  ExceptionSpansQuery slow = ExceptionSpansOf("PaymentError", "card declined ✗");
  slow.filter.min_duration_ns = Ms(20);
  EXPECT_TRUE(SameAnswer<SpanRefs>(SpanRefs{payment[0], payment[1], payment[3]}, reader_->ExceptionSpans(slow)));
  // "" is an absent type: b2 and c4 (which start together: by trace id), and
  // no span without an exception.
  const SpanRefs no_type = {
      {kTrace2, kSpanB2, "frontend", "SELECT items", At(5001), Ms(3), false},
      {kTrace3, kSpanC4, "frontend", "SELECT items", At(5001), Ms(2), false},
  };
  EXPECT_TRUE(SameAnswer<SpanRefs>(SpanRefs{no_type[0], no_type[1], {TraceId{}, 0, "checkout", "", At(2000), 0, true}},
                                   reader_->ExceptionSpans(ExceptionSpansOf("", std::nullopt))));
  EXPECT_TRUE(SameAnswer<SpanRefs>(no_type, reader_->ExceptionSpans(ExceptionSpansOf("", "connection reset"))));
  ExceptionSpansQuery worker = ExceptionSpansOf("TimeoutError", "");
  worker.filter.service = "worker";
  const SpanRefs timeouts = {
      {kTrace5, kSpanE1, "worker", "cron tick", At(20000), Ms(7), false},
      {kTrace2, kSpanB3, "worker", "checkout-job", At(5002), Ms(5), false},
  };
  EXPECT_TRUE(SameAnswer<SpanRefs>(timeouts, reader_->ExceptionSpans(worker)));
  // Neither given: every span with an exception in the range.
  std::vector<uint64_t> ids;
  for (const SpanRef& s : Ok(reader_->ExceptionSpans(ExceptionSpansOf(std::nullopt, std::nullopt)))) {
    ids.push_back(s.span_id);
  }
  // At At(5000) the span b1 before the log records L6 and L7 (by trace id);
  // L4 has no span.
  EXPECT_THAT(ids, ElementsAre(kSpanF1, kSpanE1, kSpanD2, kSpanC2, kSpanB3, kSpanB2, kSpanC4, kSpanB1, kSpanB3, kSpanC1,
                               0u, kSpanA3, kSpanA3));
  // A log-based group: its records, with the trace and span they were in.
  const SpanRefs panics = {
      {kTrace2, kSpanB3, "worker", "worker.crash", At(5000), 0, true},
      {kTrace3, kSpanC1, "worker", "", At(5000), 0, true},
  };
  EXPECT_TRUE(SameAnswer<SpanRefs>(
      panics, reader_->ExceptionSpans(ExceptionSpansOf("PanicError", "worker <n> crashed at <hex>"))));
}

// Newest first; equal times by insertion, newest first: L7 after L6 (one
// write), L3 (second write) after L2 after L1. Outside the range: L10 (1 ns
// early), L11 (at the end), L12 (no timestamp); L9 is the range's last ns.
TEST_F(ReadReferenceTest, LogsNewestFirst) {
  const Result<std::vector<LogPage>> all = AllPages(*reader_, Page(Logs()));
  ASSERT_TRUE(all.ok());
  ASSERT_EQ(all.value().size(), 1u);
  EXPECT_THAT(Bodies(all.value()[0].records),
              ElementsAre("last one", "Grüße aus Köln", "σφάλμα trace", "ΣΦΆΛΜΑ κρίσιμο", "promo 50Xyoff",
                          R"(promo 50%_off\path)", "", "échec mineur", "ÉCHEC du paiement",
                          "Payment FAILED for order 42", "request started"));
  EXPECT_EQ(all.value()[0].records[0].time_ns, At(60000) - 1);
  EXPECT_FALSE(all.value()[0].next_cursor.has_value());
}

TEST_F(ReadReferenceTest, LogPagesSplitTiesWithoutLosingRecords) {
  const Result<std::vector<LogPage>> pages = AllPages(*reader_, Page(Logs(), 3));
  ASSERT_TRUE(pages.ok());
  ASSERT_EQ(pages.value().size(), 4u);
  EXPECT_THAT(Bodies(pages.value()[0].records), ElementsAre("last one", "Grüße aus Köln", "σφάλμα trace"));
  EXPECT_THAT(Bodies(pages.value()[1].records),
              ElementsAre("ΣΦΆΛΜΑ κρίσιμο", "promo 50Xyoff", R"(promo 50%_off\path)"));
  EXPECT_THAT(Bodies(pages.value()[2].records), ElementsAre("", "échec mineur", "ÉCHEC du paiement"));
  EXPECT_THAT(Bodies(pages.value()[3].records), ElementsAre("Payment FAILED for order 42", "request started"));
  EXPECT_FALSE(pages.value()[3].next_cursor.has_value());
  // A last page that is exactly full has no cursor.
  const Result<std::vector<LogPage>> full = AllPages(*reader_, Page(Logs(), 11));
  ASSERT_TRUE(full.ok());
  EXPECT_EQ(full.value().size(), 1u);
}

TEST_F(ReadReferenceTest, LogFilters) {
  auto bodies = [&](LogFilter f) { return Bodies(Ok(reader_->Logs(Page(std::move(f)))).records); };
  EXPECT_THAT(bodies(LogsWithText("failed")), ElementsAre("Payment FAILED for order 42"));
  EXPECT_THAT(bodies(LogsWithText("PAYMENT")), ElementsAre("Payment FAILED for order 42"));
  EXPECT_THAT(bodies(LogsWithText("köln")), ElementsAre("Grüße aus Köln"));
  // LIKE wildcards and the escape character are plain text.
  EXPECT_THAT(bodies(LogsWithText("50%_off")), ElementsAre(R"(promo 50%_off\path)"));
  EXPECT_THAT(bodies(LogsWithText("_")), ElementsAre(R"(promo 50%_off\path)"));
  EXPECT_THAT(bodies(LogsWithText(R"(%_off\)")), ElementsAre(R"(promo 50%_off\path)"));
  // ASCII folding (the default, as SQLite): É and é differ.
  EXPECT_THAT(bodies(LogsWithText("échec")), ElementsAre("échec mineur"));
  EXPECT_THAT(bodies(LogsWithText("ÉCHEC")), ElementsAre("ÉCHEC du paiement"));
  EXPECT_THAT(bodies(LogsWithText("σφάλμα")), ElementsAre("σφάλμα trace"));
  LogFilter f = Logs();
  f.severity_min = 13;
  EXPECT_THAT(bodies(f), ElementsAre("last one", "ΣΦΆΛΜΑ κρίσιμο", R"(promo 50%_off\path)", "ÉCHEC du paiement",
                                     "Payment FAILED for order 42"));
  f.service = "checkout";
  EXPECT_THAT(bodies(f), ElementsAre("ÉCHEC du paiement", "Payment FAILED for order 42"));
  f = Logs();
  f.trace_id = kTrace1;
  EXPECT_THAT(bodies(f), ElementsAre("ÉCHEC du paiement", "Payment FAILED for order 42", "request started"));
  f.trace_id = kTrace2;
  EXPECT_THAT(bodies(f), ElementsAre("ΣΦΆΛΜΑ κρίσιμο"));
  f.trace_id = kTrace3;
  EXPECT_THAT(bodies(f), ElementsAre("σφάλμα trace"));
  f.trace_id = TraceId{};
  EXPECT_THAT(bodies(f), IsEmpty());
  f = Logs();
  f.attributes = {{"retry", "true"}, {"order.id", "A-17"}};
  EXPECT_THAT(bodies(f), ElementsAre("Payment FAILED for order 42"));
  f.attributes = {{"k", "null"}};
  EXPECT_THAT(bodies(f), IsEmpty());
  EXPECT_THAT(bodies(Logs(kProjectB)), ElementsAre("Payment FAILED (project B)"));
  EXPECT_THAT(bodies(Logs(kProjectA, kEmptyRange)), IsEmpty());
}

TEST_F(ReadReferenceTest, LogTextWithUnicodeFolding) {
  Result<std::unique_ptr<TelemetryReader>> unicode = store_.OpenReader({TextFolding::kSimpleUnicode});
  ASSERT_TRUE(unicode.ok());
  auto bodies = [&](const char* text) { return Bodies(Ok(unicode.value()->Logs(Page(LogsWithText(text)))).records); };
  EXPECT_THAT(bodies("échec"), ElementsAre("échec mineur", "ÉCHEC du paiement"));
  EXPECT_THAT(bodies("ÉCHEC"), ElementsAre("échec mineur", "ÉCHEC du paiement"));
  // Ά folds to ά and Σ to σ (the simple mapping: no final sigma).
  EXPECT_THAT(bodies("σφάλμα"), ElementsAre("σφάλμα trace", "ΣΦΆΛΜΑ κρίσιμο"));
  EXPECT_THAT(bodies("GRÜSSE"), IsEmpty());
  EXPECT_THAT(bodies("failed"), ElementsAre("Payment FAILED for order 42"));
}

TEST_F(ReadReferenceTest, MalformedLogCursor) {
  LogPageQuery q = Page(Logs(), 2);
  q.cursor = "memory-log:12";
  EXPECT_EQ(reader_->Logs(q).status().code(), StatusCode::kInvalidArgument);
  q.cursor = "memory-log:1:2x";
  EXPECT_EQ(reader_->Logs(q).status().code(), StatusCode::kInvalidArgument);
}

// Levels: L5 0 -> 0, L7 1 -> TRACE, L4 5 -> DEBUG, L1 and L14 9 -> INFO, L13
// and L3 13 -> WARN, L2 17 -> ERROR, L6 21 -> FATAL (all in bucket 0); L8 12
// -> INFO in bucket 3; L9 24 -> FATAL in bucket 5.
TEST_F(ReadReferenceTest, CountLogs) {
  const LogVolume expected = {{0, 0, 1}, {0, 1, 1}, {0, 2, 1}, {0, 3, 2}, {0, 4, 2},
                              {0, 5, 1}, {0, 6, 1}, {3, 3, 1}, {5, 6, 1}};
  EXPECT_TRUE(SameAnswer<LogVolume>(expected, reader_->CountLogs(Volume(Logs()))));
  // From 2 s, the records at 1 s fall in bucket -1 and are not counted.
  const LogVolume from_two = {{0, 0, 1}, {0, 1, 1}, {0, 2, 1}, {0, 3, 1}, {0, 4, 1}, {0, 6, 1}, {2, 3, 1}, {5, 6, 1}};
  EXPECT_TRUE(SameAnswer<LogVolume>(from_two, reader_->CountLogs(Volume(Logs(), {At(2000), Ms(10'000), 6}))));
  LogFilter checkout = Logs();
  checkout.service = "checkout";
  EXPECT_TRUE(SameAnswer<LogVolume>(LogVolume{{0, 2, 1}, {0, 4, 1}, {0, 5, 1}}, reader_->CountLogs(Volume(checkout))));
  EXPECT_EQ(reader_->CountLogs(Volume(Logs(), {kT0, 0, 6})).status().code(), StatusCode::kInvalidArgument);
}

// One row per (name, type, unit, description, service): "requests" sum of
// frontend merges 13 and 18 (monotonic, cumulative) with 19 (delta, not
// monotonic). Series -16 keeps the description it was first written with.
// Project A's 11 records in the range: levels as in CountLogs; services
// frontend L1 L5 L13 L14 L9, checkout L2 L4 L3, worker L6 L7, naïve-svc L8.
// Attributes: lang on L7 (el) and L3 (fr); one record each for amount,
// http.request.method, n, order.id, retry; L6's k is null and does not count.
TEST_F(ReadReferenceTest, FacetLogs) {
  LogFacets all = Ok(reader_->FacetLogs(Facets(Logs())));
  EXPECT_EQ(all.total, 11);
  EXPECT_EQ(all.sampled, 11);
  EXPECT_THAT(all.levels, ElementsAre(1, 1, 1, 3, 2, 1, 2));
  auto counts = [](const std::vector<FacetCount>& v) {
    std::vector<std::pair<std::string, int64_t>> out;
    for (const FacetCount& c : v) out.emplace_back(c.value, c.count);
    return out;
  };
  using P = std::pair<std::string, int64_t>;
  EXPECT_THAT(counts(all.services), ElementsAre(P{"frontend", 5}, P{"checkout", 3}, P{"worker", 2}, P{"naïve-svc", 1}));
  std::vector<std::string> keys;
  for (const AttributeFacet& a : all.attributes) keys.push_back(a.key + "=" + std::to_string(a.count));
  EXPECT_THAT(keys, ElementsAre("lang=2", "amount=1", "http.request.method=1", "n=1", "order.id=1", "retry=1"));
  EXPECT_THAT(counts(all.attributes[0].values), ElementsAre(P{"el", 1}, P{"fr", 1}));
  EXPECT_THAT(counts(all.attributes[1].values), ElementsAre(P{"12.5", 1}));
  EXPECT_THAT(counts(all.attributes[3].values), ElementsAre(P{"-7", 1}));
  EXPECT_THAT(counts(all.attributes[5].values), ElementsAre(P{"true", 1}));
  // The newest 6: L9 L8 L7 L6 L14 L13 (L7 after L6: inserted later).
  LogFacets six = Ok(reader_->FacetLogs(Facets(Logs(), 6)));
  EXPECT_EQ(six.total, 11);
  EXPECT_EQ(six.sampled, 6);
  keys.clear();
  for (const AttributeFacet& a : six.attributes) keys.push_back(a.key + "=" + std::to_string(a.count));
  EXPECT_THAT(keys, ElementsAre("lang=1", "n=1"));
  // Caps of 1: one past each cap comes back.
  LogFacets capped = Ok(reader_->FacetLogs(Facets(Logs(), 1000, 1, 1, 1)));
  EXPECT_THAT(counts(capped.services), ElementsAre(P{"frontend", 5}, P{"checkout", 3}));
  ASSERT_EQ(capped.attributes.size(), 2u);
  EXPECT_EQ(capped.attributes[0].key, "lang");
  EXPECT_EQ(capped.attributes[1].key, "amount");
  EXPECT_THAT(counts(capped.attributes[0].values), ElementsAre(P{"el", 1}, P{"fr", 1}));
  LogFacets none = Ok(reader_->FacetLogs(Facets(Logs(kProjectA, kEmptyRange))));
  EXPECT_EQ(none.total, 0);
  EXPECT_THAT(none.services, IsEmpty());
  EXPECT_THAT(none.attributes, IsEmpty());
}

TEST_F(ReadReferenceTest, ListMetrics) {
  const MetricCatalog expected = {
      {"cpu.temp", MetricType::kGauge, "°C", "Température CPU", "naïve-svc", false, 0},
      {"gc.pause", MetricType::kSummary, "ms", "GC pause", "worker", false, 0},
      {"http.server.duration", MetricType::kHistogram, "ms", "Server latency", "checkout", false, 1},
      {"http.server.duration", MetricType::kHistogram, "ms", "Server latency", "frontend", false, 2},
      {"queue.depth", MetricType::kSum, "1", "Queue depth", "worker", false, 2},
      {"requests", MetricType::kGauge, "1", "Requests", "frontend", false, 0},
      {"requests", MetricType::kSum, "1", "Requests", "checkout", true, 1},
      {"requests", MetricType::kSum, "1", "Requests", "frontend", true, 2},
      {"rpc.duration", MetricType::kExponentialHistogram, "s", "RPC duration", "checkout", false, 1},
      {"rpc.duration", MetricType::kExponentialHistogram, "s", "RPC duration", "frontend", false, 2},
      {"überlauf", MetricType::kGauge, "", "", "worker", false, 0},
  };
  EXPECT_TRUE(SameAnswer<MetricCatalog>(expected, reader_->ListMetrics({kProjectA})));
  const MetricCatalog b = {{"b.only.metric", MetricType::kGauge, "", "", "secret-b", false, 0}};
  EXPECT_TRUE(SameAnswer<MetricCatalog>(b, reader_->ListMetrics({kProjectB})));
  EXPECT_THAT(Ok(reader_->ListMetrics({kProjectEmpty})), IsEmpty());
}

TEST_F(ReadReferenceTest, FindSeries) {
  const MetricSeriesList requests = {
      {kSeriesRequests200, MetricType::kSum, 2, true, "frontend", R"({"code":200})"},
      {kSeriesRequestsCheckout, MetricType::kSum, 1, true, "checkout", R"({"code":"200"})"},
      {kSeriesRequests500, MetricType::kSum, 2, true, "frontend", R"({"code":500})"},
      {kSeriesRequests404, MetricType::kSum, 1, false, "frontend", R"({"code":404})"},
      {kSeriesRequestsGauge, MetricType::kGauge, 0, false, "frontend", "{}"},
  };
  EXPECT_TRUE(SameAnswer<MetricSeriesList>(requests, reader_->FindSeries({kProjectA, "requests"})));
  // By series id, signed: -12 before 11.
  const MetricSeriesList latency = {
      {kSeriesLatencyCheckout, MetricType::kHistogram, 1, false, "checkout", R"({"http.route":"/api/pay"})"},
      {kSeriesLatencyFrontend, MetricType::kHistogram, 2, false, "frontend", R"({"http.route":"/api/items"})"},
  };
  EXPECT_TRUE(SameAnswer<MetricSeriesList>(latency, reader_->FindSeries({kProjectA, "http.server.duration"})));
  EXPECT_THAT(Ok(reader_->FindSeries({kProjectA, "b.only.metric"})), IsEmpty());
  EXPECT_EQ(Ok(reader_->FindSeries({kProjectB, "b.only.metric"})).size(), 1u);
}

// Gauge -16: 40 and 45 in bucket 0; 50 and a point without a value (the
// newest) in bucket 1; only a point without a value in bucket 2; -3.5 in
// bucket 5; 1000 and 2000 outside the range. Gauge 17: 7, 7 (same time) and
// 9 in bucket 0.
TEST_F(ReadReferenceTest, AggregateGauges) {
  const std::vector<int64_t> gauges = {kSeriesTempCore0, kSeriesTempCore1};
  const MetricBuckets stats = {Stats(kSeriesTempCore0, 0, 2, 85, 40, 45), Stats(kSeriesTempCore0, 1, 1, 50, 50, 50),
                               Stats(kSeriesTempCore0, 5, 1, -3.5, -3.5, -3.5),
                               Stats(kSeriesTempCore1, 0, 3, 23, 7, 9)};
  EXPECT_TRUE(
      SameAnswer<MetricBuckets>(stats, reader_->AggregateSeries(Aggregate(gauges, Want::kStats)), Want::kStats));
  // The newest point of bucket 1 has no value: last is the newest value, 50.
  const MetricBuckets last = {Last(kSeriesTempCore0, 0, 45, 85), Last(kSeriesTempCore0, 1, 50, 50),
                              Last(kSeriesTempCore0, 5, -3.5, -3.5), Last(kSeriesTempCore1, 0, 9, 23)};
  EXPECT_TRUE(SameAnswer<MetricBuckets>(last, reader_->AggregateSeries(Aggregate(gauges, Want::kLast)), Want::kLast));
  // From 1.5 s: 40 (1 s) is in bucket -1; 45 (2 s) and 9 (3 s) in 0; 50 (12 s) in 1.
  const MetricBuckets shifted = {Stats(kSeriesTempCore0, 0, 1, 45, 45, 45), Stats(kSeriesTempCore0, 1, 1, 50, 50, 50),
                                 Stats(kSeriesTempCore0, 5, 1, -3.5, -3.5, -3.5),
                                 Stats(kSeriesTempCore1, 0, 1, 9, 9, 9)};
  EXPECT_TRUE(SameAnswer<MetricBuckets>(
      shifted, reader_->AggregateSeries(Aggregate(gauges, Want::kStats, kProjectA, kRange, {At(1500), Ms(10'000), 6})),
      Want::kStats));
}

// 13: cumulative with a reset at 21 s; 14: delta, 5 and 7 in bucket 0; 15 goes
// down. The answer is per series: rates and resets are the caller's.
TEST_F(ReadReferenceTest, AggregateSums) {
  const MetricBuckets last = {Last(kSeriesRequests200, 0, 100, 100),   Last(kSeriesRequests200, 1, 150, 150),
                              Last(kSeriesRequests200, 2, 30, 30),     Last(kSeriesRequests200, 3, 60, 60),
                              Last(kSeriesRequestsCheckout, 0, 7, 12), Last(kSeriesRequestsCheckout, 1, 1, 1),
                              Last(kSeriesQueueDepth, 0, 10, 10),      Last(kSeriesQueueDepth, 1, -4, -4)};
  EXPECT_TRUE(
      SameAnswer<MetricBuckets>(last,
                                reader_->AggregateSeries(Aggregate(
                                    {kSeriesQueueDepth, kSeriesRequests200, kSeriesRequestsCheckout}, Want::kLast)),
                                Want::kLast));
  // Series ids are per project: 11 of project A is a histogram (no values).
  EXPECT_THAT(Ok(reader_->AggregateSeries(Aggregate({kSeriesProjectB}, Want::kStats))), IsEmpty());
  EXPECT_TRUE(SameAnswer<MetricBuckets>(MetricBuckets{Stats(kSeriesProjectB, 0, 1, 99, 99, 99)},
                                        reader_->AggregateSeries(Aggregate({kSeriesProjectB}, Want::kStats, kProjectB)),
                                        Want::kStats));
}

// Cumulative 11: the newest point with counts per bucket; at 23 s a point
// without counts is skipped, so bucket 2 has the reset [0,1,0] of 22 s. Delta
// -12: [1,0,0] + [0,2,1]; in bucket 1 [1,1,1] is dropped when [2,0,0,0]
// changes the length, then + [1,1,1,1], with the last point's bounds.
TEST_F(ReadReferenceTest, AggregateHistograms) {
  const std::vector<double> b2 = {10, 100}, b3 = {5, 10, 100};
  auto histogram = [](int64_t series, int64_t bucket, std::vector<double> counts, std::vector<double> bounds) {
    MetricBucket m;
    m.series_id = series;
    m.bucket = bucket;
    m.counts = std::move(counts);
    m.bounds = std::move(bounds);
    return m;
  };
  const std::vector<int64_t> ids = {kSeriesLatencyFrontend, kSeriesLatencyCheckout};
  MetricBuckets expected = {
      histogram(kSeriesLatencyCheckout, 0, {1, 2, 1}, b2), histogram(kSeriesLatencyCheckout, 1, {3, 1, 1, 1}, b3),
      histogram(kSeriesLatencyFrontend, 0, {2, 3, 1}, b2), histogram(kSeriesLatencyFrontend, 1, {3, 3, 1}, b2),
      histogram(kSeriesLatencyFrontend, 2, {0, 1, 0}, b2), histogram(kSeriesLatencyFrontend, 3, {1, 1, 1, 1}, b3)};
  EXPECT_TRUE(SameAnswer<MetricBuckets>(expected, reader_->AggregateSeries(Histograms(ids, {kSeriesLatencyCheckout})),
                                        Want::kHistograms));
  // Read as cumulative, -12 gives its newest points instead.
  expected[0] = histogram(kSeriesLatencyCheckout, 0, {0, 2, 1}, b2);
  expected[1] = histogram(kSeriesLatencyCheckout, 1, {1, 1, 1, 1}, b3);
  EXPECT_TRUE(SameAnswer<MetricBuckets>(expected, reader_->AggregateSeries(Histograms(ids, {})), Want::kHistograms));
  EXPECT_THAT(Ok(reader_->AggregateSeries(Aggregate(ids, Want::kStats))), IsEmpty());
}

// Exponential points come back as their stored JSON text: cumulative 22 the
// newest point of each bucket, delta -23 every point of the bucket, oldest first.
TEST_F(ReadReferenceTest, AggregateExponentialHistograms) {
  auto exp = [](int64_t series, int64_t bucket, std::vector<std::string> texts) {
    MetricBucket m;
    m.series_id = series;
    m.bucket = bucket;
    m.exp_histograms = std::move(texts);
    return m;
  };
  const std::string neg_empty = R"("negative":{"offset":0,"bucket_counts":[]}})";
  const MetricBuckets expected = {
      exp(kSeriesRpcCheckout, 0,
          {R"({"scale":0,"zero_count":0,"zero_threshold":0,"positive":{"offset":1,"bucket_counts":[2]},)"
           R"("negative":{"offset":0,"bucket_counts":[2]}})",
           R"({"scale":-1,"zero_count":0,"zero_threshold":0,"positive":{"offset":1,"bucket_counts":[4]},)" +
               neg_empty}),
      exp(kSeriesRpcFrontend, 0,
          {R"({"scale":1,"zero_count":1,"zero_threshold":0,"positive":{"offset":0,"bucket_counts":[1,2]},)" +
           neg_empty}),
      exp(kSeriesRpcFrontend, 1,
          {R"({"scale":0,"zero_count":1,"zero_threshold":0,"positive":{"offset":0,"bucket_counts":[3,4]},)" +
           neg_empty}),
      exp(kSeriesRpcFrontend, 2,
          {R"({"scale":0,"zero_count":0,"zero_threshold":0,"positive":{"offset":0,"bucket_counts":[1]},)" + neg_empty}),
  };
  EXPECT_TRUE(SameAnswer<MetricBuckets>(
      expected, reader_->AggregateSeries(Histograms({kSeriesRpcFrontend, kSeriesRpcCheckout}, {kSeriesRpcCheckout})),
      Want::kHistograms));
}

// A summary: the quantiles text of the newest point of each bucket.
TEST_F(ReadReferenceTest, AggregateSummaries) {
  auto summary = [](int64_t bucket, std::string quantiles) {
    MetricBucket m;
    m.series_id = kSeriesGcPause;
    m.bucket = bucket;
    m.quantiles = std::move(quantiles);
    return m;
  };
  const MetricBuckets expected = {
      summary(0, R"([{"quantile":0.5,"value":2},{"quantile":0.9,"value":4},{"quantile":0.99,"value":20}])"),
      summary(2, R"([{"quantile":0.5,"value":3},{"quantile":0.95,"value":7}])")};
  EXPECT_TRUE(SameAnswer<MetricBuckets>(expected, reader_->AggregateSeries(Histograms({kSeriesGcPause}, {})),
                                        Want::kHistograms));
}

// The service map's spans (read_dataset.h, ServiceMapSpans): the calls by hand.
// web -> api: m3 40 ms, n2 20; with a 1 s margin also q2 60 and t2 5 (parents
// just before and just after the range); with 5 min also r2 70. api -> db-svc:
// m5 10 (error), n3 30. Same-service parents (m2, m4), o1's missing parent,
// s2 (at the range's end) and x1 (another project) make no call.
TEST_F(ReadReferenceTest, GroupServiceCalls) {
  ASSERT_TRUE(WriteServiceMapSpans(&store_).ok());
  auto call = [](const char* caller, const char* callee, int64_t count, int64_t errors, double p50_ms, double p95_ms,
                 double p99_ms) {
    return ServiceCall{caller, callee, count, errors, {MsD(p50_ms), MsD(p95_ms), MsD(p99_ms)}};
  };
  // Percentiles of two values a <= b: p50 (a+b)/2, p95 a + 0.95 (b-a), p99 a + 0.99 (b-a).
  const ServiceCall api_db = call("api", "db-svc", 2, 1, 20, 29, 29.8);
  EXPECT_TRUE(SameAnswer<ServiceCalls>(ServiceCalls{api_db, call("web", "api", 2, 0, 30, 39, 39.8)},
                                       reader_->GroupServiceCalls(Calls(kProjectMap, kRange))));
  // 5, 20, 40, 60: p50 at 1.5 -> 30, p95 at 2.85 -> 40 + 0.85 * 20, p99 at 2.97.
  EXPECT_TRUE(SameAnswer<ServiceCalls>(ServiceCalls{call("web", "api", 4, 0, 30, 57, 59.4), api_db},
                                       reader_->GroupServiceCalls(Calls(kProjectMap, kRange, Ms(1000)))));
  // 5, 20, 40, 60, 70: p50 40, p95 at 3.8 -> 60 + 0.8 * 10, p99 at 3.96.
  EXPECT_TRUE(SameAnswer<ServiceCalls>(ServiceCalls{call("web", "api", 5, 0, 40, 68, 69.6), api_db},
                                       reader_->GroupServiceCalls(Calls(kProjectMap, kRange, Ms(300'000)))));
  EXPECT_TRUE(SameAnswer<ServiceCalls>(
      ServiceCalls{call("api", "db-svc", 1, 0, 30, 30, 30), call("web", "api", 1, 0, 20, 20, 20)},
      reader_->GroupServiceCalls(Calls(kProjectMap, {At(1500), At(60'000)}))));
  ServiceCallQuery focus = Calls(kProjectMap, kRange);
  focus.service = "db-svc";
  EXPECT_TRUE(SameAnswer<ServiceCalls>(ServiceCalls{api_db}, reader_->GroupServiceCalls(focus)));
  EXPECT_TRUE(SameAnswer<ServiceCalls>(ServiceCalls{},
                                       reader_->GroupServiceCalls(Calls(kProjectMapOther, kRange, Ms(300'000)))));
  ServiceCallQuery capped = Calls(kProjectMap, kRange);
  capped.max_calls = 0;
  EXPECT_TRUE(SameAnswer<ServiceCalls>(ServiceCalls{api_db}, reader_->GroupServiceCalls(capped)));
}

TEST_F(ReadReferenceTest, InterruptCancelsTheLeaseAndTheStoreServesTheNext) {
  reader_->Interrupt();
  EXPECT_TRUE(reader_->interrupted());
  EXPECT_EQ(reader_->GroupSpans(Grouped(Spans(), {SpanDimension::kService})).status().code(), StatusCode::kCancelled);
  EXPECT_EQ(reader_->ListMetrics({kProjectA}).status().code(), StatusCode::kCancelled);
  Result<std::unique_ptr<TelemetryReader>> next = store_.AcquireReader(0);
  ASSERT_TRUE(next.ok());
  EXPECT_FALSE(next.value()->interrupted());
  EXPECT_TRUE(next.value()->GroupSpans(Grouped(Spans(), {SpanDimension::kService})).ok());
}

TEST_F(ReadReferenceTest, AFailedWriteLeavesNothingBehind) {
  MemoryStore store;
  ReadDataset dataset = BuildReadDataset();
  dataset.spans[1].name.Append("one name too many");
  Result<std::unique_ptr<SignalSink>> sink = store.NewSink(Signal::kSpans);
  ASSERT_TRUE(sink.ok());
  EXPECT_EQ(sink.value()->WriteSpans({&dataset.spans[0], &dataset.spans[1]}).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(store.Stats().rows[static_cast<int>(Signal::kSpans)], 0u);
  EXPECT_EQ(store.Close().code(), StatusCode::kInternal);  // a sink is open
  sink.value().reset();
  EXPECT_TRUE(store.Close().ok());
}

// The comparison itself: a changed answer fails, with the row in the message.
TEST(ReadConformanceDiffTest, ReportsTheRowsThatDiffer) {
  const SpanGroups expected = {{{"checkout"}, 4, 1, {MsD(25), MsD(38.5), MsD(39.7)}},
                               {{"frontend"}, 4, 1, {MsD(25), MsD(38.5), MsD(39.7)}}};
  SpanGroups actual = expected;
  EXPECT_TRUE(SameAnswer<SpanGroups>(expected, actual));
  actual[1].percentiles_ns[1] *= 1 + 1e-12;  // within the tolerance
  EXPECT_TRUE(SameAnswer<SpanGroups>(expected, actual));
  actual[1].percentiles_ns[1] *= 1 + 1e-6;
  ::testing::AssertionResult differ = SameAnswer<SpanGroups>(expected, actual);
  EXPECT_FALSE(differ);
  EXPECT_THAT(differ.message(),
              ::testing::HasSubstr("  - {key0=\"frontend\", count=4, errors=1, p50=25000000, p95=38500000,"));
  EXPECT_THAT(differ.message(), ::testing::HasSubstr("    {key0=\"checkout\""));
  EXPECT_FALSE(SameAnswer<SpanGroups>(expected, Status::Internal("engine failed")));
}

}  // namespace
}  // namespace sightline::read_dataset
