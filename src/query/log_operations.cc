// Log operations: logs, logs/volume.

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
  auto attrs = AttrFilters(p, "attr");
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
