// Log operations: logs, logs/volume, logs/facets.

#include <algorithm>

#include "query/operations.h"

namespace sightline::api {

namespace {

Result<LogFilter> ParseLogFilter(const Call& call, const MsRange& range) {
  const ApiParams& p = call.params;
  LogFilter f;
  f.project_id = call.project_id;
  f.range = range.ns();
  auto sev = IntParam(p, "severity_min", 0, 0, 24);
  if (!sev.ok()) return sev.status();
  f.severity_min = static_cast<int32_t>(*sev);
  f.service = p.Get("service");
  f.text = p.Get("q");
  if (auto v = p.Get("trace_id")) {
    auto id = ParseTraceId("trace_id", *v);
    if (!id.ok()) return id.status();
    f.trace_id = *id;
  }
  auto attrs = AttrConditions(p, "attr");
  if (!attrs.ok()) return attrs.status();
  f.attributes = std::move(attrs.value());
  return f;
}

}  // namespace

Result<std::string> Logs(const Call& call) {
  auto range = ParseRange(call.params);
  if (!range.ok()) return range.status();
  LogPageQuery q;
  auto limit = IntParam(call.params, "limit", 100, 1, 1000);
  if (!limit.ok()) return limit.status();
  q.limit = *limit;
  auto filter = ParseLogFilter(call, *range);
  if (!filter.ok()) return filter.status();
  q.filter = std::move(filter.value());
  q.cursor = call.params.Get("cursor").value_or("");
  auto page = call.reader.Logs(q);
  if (!page.ok()) return page.status();
  std::string out;
  JsonWriter w(&out);
  w.BeginObject();
  w.Key("logs");
  w.BeginArray();
  for (const LogRecord& r : page->records) WriteLogRecord(&w, r);
  w.EndArray();
  w.Key("next_cursor");
  if (page->next_cursor) w.String(*page->next_cursor);
  else w.Null();
  w.EndObject();
  return out;
}

Result<std::string> LogVolume(const Call& call) {
  auto asked = ParseRange(call.params);
  if (!asked.ok()) return asked.status();
  auto step = ParseStep(call.params, *asked);
  if (!step.ok()) return step.status();
  const MsRange range = AlignToStep(*asked, *step);
  LogVolumeQuery q;
  auto filter = ParseLogFilter(call, range);
  if (!filter.ok()) return filter.status();
  q.filter = std::move(filter.value());
  q.buckets = BucketsOf(range, *step);
  auto rows = call.reader.CountLogs(q);
  if (!rows.ok()) return rows.status();
  static const char* kLevels[] = {"UNSPECIFIED", "TRACE", "DEBUG", "INFO", "WARN", "ERROR", "FATAL"};
  const int64_t n = q.buckets.count;
  std::vector<std::vector<int64_t>> counts(7, std::vector<int64_t>(n, 0));
  std::vector<bool> seen(7, false);
  for (const LogVolumeRow& r : *rows) {
    if (r.bucket < 0 || r.bucket >= n || r.level < 0 || r.level > 6) continue;
    counts[r.level][r.bucket] += r.count;
    seen[r.level] = true;
  }
  std::string out;
  JsonWriter w(&out);
  w.BeginObject();
  WriteBuckets(&w, range, *step, n);
  w.Key("series");
  w.BeginArray();
  for (int level = 0; level < 7; ++level) {
    if (!seen[level]) continue;
    w.BeginObject();
    w.Key("severity");
    w.String(kLevels[level]);
    w.Key("values");
    w.BeginArray();
    for (int64_t c : counts[level]) w.Int(c);
    w.EndArray();
    w.EndObject();
  }
  w.EndArray();
  w.EndObject();
  return out;
}

}  // namespace sightline::api

// --- logs/facets ---

namespace sightline::api {

namespace {

constexpr int64_t kFacetServices = 10;
constexpr int64_t kFacetKeys = 8;
constexpr int64_t kFacetValues = 5;

//! The severity_min of each level's lowest number (UNSPECIFIED: none).
constexpr int32_t kLevelMin[7] = {0, 1, 5, 9, 13, 17, 21};
constexpr const char* kLevelNames[7] = {"UNSPECIFIED", "TRACE", "DEBUG", "INFO", "WARN", "ERROR", "FATAL"};

void WriteCounts(JsonWriter* w, const std::vector<FacetCount>& counts, int64_t cap) {
  w->BeginArray();
  for (size_t i = 0; i < counts.size() && static_cast<int64_t>(i) < cap; ++i) {
    w->BeginObject();
    w->Key("value");
    w->String(counts[i].value);
    w->Key("count");
    w->Int(counts[i].count);
    w->EndObject();
  }
  w->EndArray();
}

}  // namespace

// Exact total, levels and services (top kFacetServices, the rest summed as
// services_other); attribute keys and values counted over the newest
// `sample` records, and the answer says how many that was.
Result<std::string> LogFacetCounts(const Call& call) {
  auto range = ParseRange(call.params);
  if (!range.ok()) return range.status();
  auto sample = IntParam(call.params, "sample", std::min<int64_t>(1000, call.limits.max_log_facet_sample), 1,
                         call.limits.max_log_facet_sample);
  if (!sample.ok()) return sample.status();
  auto filter = ParseLogFilter(call, *range);
  if (!filter.ok()) return filter.status();
  LogFacetsQuery q;
  q.filter = std::move(filter.value());
  q.sample = *sample;
  q.max_services = kFacetServices;
  q.max_keys = kFacetKeys;
  q.max_values = kFacetValues;
  auto facets = call.reader.FacetLogs(q);
  if (!facets.ok()) return facets.status();
  const auto& f = *facets;
  std::string out;
  JsonWriter w(&out);
  w.BeginObject();
  w.Key("total");
  w.Int(f.total);
  w.Key("levels");
  w.BeginArray();
  for (int level = 6; level >= 0; --level) {
    if (f.levels[level] == 0) continue;
    w.BeginObject();
    w.Key("severity");
    w.String(kLevelNames[level]);
    w.Key("severity_min");
    w.Int(kLevelMin[level]);
    w.Key("count");
    w.Int(f.levels[level]);
    w.EndObject();
  }
  w.EndArray();
  w.Key("services");
  WriteCounts(&w, f.services, kFacetServices);
  int64_t shown = 0;
  for (size_t i = 0; i < f.services.size() && static_cast<int64_t>(i) < kFacetServices; ++i) {
    shown += f.services[i].count;
  }
  w.Key("services_truncated");
  w.Bool(static_cast<int64_t>(f.services.size()) > kFacetServices);
  w.Key("services_other");
  w.Int(f.total - shown);
  w.Key("attributes");
  w.BeginObject();
  w.Key("sample");
  w.Int(q.sample);
  w.Key("sampled");
  w.Int(f.sampled);
  w.Key("exact");
  w.Bool(f.sampled == f.total);
  w.Key("keys_truncated");
  w.Bool(static_cast<int64_t>(f.attributes.size()) > kFacetKeys);
  w.Key("keys");
  w.BeginArray();
  for (size_t i = 0; i < f.attributes.size() && static_cast<int64_t>(i) < kFacetKeys; ++i) {
    SL_RETURN_IF_ERROR(CheckInterrupted(call));
    const AttributeFacet& a = f.attributes[i];
    w.BeginObject();
    w.Key("key");
    w.String(a.key);
    w.Key("count");
    w.Int(a.count);
    w.Key("values");
    WriteCounts(&w, a.values, kFacetValues);
    w.Key("values_truncated");
    w.Bool(static_cast<int64_t>(a.values.size()) > kFacetValues);
    w.EndObject();
  }
  w.EndArray();
  w.EndObject();
  w.EndObject();
  return out;
}

}  // namespace sightline::api
