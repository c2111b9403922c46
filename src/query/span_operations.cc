// Span operations: services, endpoints, endpoints/series, traces,
// traces/{id}, exceptions, exceptions/spans, services/series, service_map.

#include <algorithm>
#include <charconv>
#include <cmath>
#include <map>
#include <optional>
#include <set>
#include <tuple>

#include "common/hex.h"
#include "query/operations.h"

namespace sightline::api {

namespace {

double NsToMs(double ns) { return ns / 1e6; }

// count (under `count_key`), errors, error_rate, p50_ms, p95_ms, p99_ms.
void WriteSpanStats(JsonWriter* w, const SpanGroup& g, const char* count_key) {
  w->Key(count_key);
  w->Int(g.count);
  w->Key("errors");
  w->Int(g.errors);
  w->Key("error_rate");
  w->Double(g.count ? static_cast<double>(g.errors) / static_cast<double>(g.count) : 0);
  static const char* kKeys[3] = {"p50_ms", "p95_ms", "p99_ms"};
  for (int i = 0; i < 3; ++i) {
    w->Key(kKeys[i]);
    WriteNumberOrNull(w, NsToMs(g.percentiles_ns[i]));
  }
}

//! The groups of q, or a 400 naming the cap when there are more than it allows.
Result<SpanGroups> CappedGroups(const Call& call, SpanGroupQuery q, const char* what, const char* narrow) {
  q.max_groups = call.limits.max_groups;
  auto groups = call.reader.GroupSpans(q);
  if (groups.ok() && static_cast<int64_t>(groups->size()) > q.max_groups) {
    return Status::InvalidArgument("more than " + std::to_string(q.max_groups) + " " + what +
                                   " in the range (the cap is --max-query-groups); " + narrow);
  }
  return groups;
}

SpanFilter EntrySpans(const Call& call, const MsRange& range) {
  SpanFilter f;
  f.project_id = call.project_id;
  f.range = range.ns();
  f.entry_only = true;
  f.service = call.params.Get("service");
  return f;
}

}  // namespace

Result<std::string> Services(const Call& call) {
  auto range = ParseRange(call.params);
  if (!range.ok()) return range.status();
  SpanGroupQuery q;
  q.filter = EntrySpans(call, *range);
  q.filter.service.reset();
  q.dimensions = {SpanDimension::kService};
  auto groups = CappedGroups(call, q, "services", "narrow the range");
  if (!groups.ok()) return groups.status();
  std::sort(groups->begin(), groups->end(), [](const SpanGroup& a, const SpanGroup& b) {
    return a.count != b.count ? a.count > b.count : a.keys < b.keys;
  });
  double seconds = static_cast<double>(range->to_ms - range->from_ms) / 1000.0;
  std::string out;
  JsonWriter w(&out);
  w.BeginObject();
  w.Key("services");
  w.BeginArray();
  for (const auto& g : *groups) {
    w.BeginObject();
    w.Key("service");
    w.String(g.keys[0]);
    w.Key("rate_per_s");
    w.Double(static_cast<double>(g.count) / seconds);
    WriteSpanStats(&w, g, "requests");
    w.EndObject();
  }
  w.EndArray();
  w.EndObject();
  return out;
}

Result<std::string> Endpoints(const Call& call) {
  const ApiParams& p = call.params;
  auto range = ParseRange(p);
  if (!range.ok()) return range.status();
  std::string sort = p.Get("sort").value_or("count");
  std::string order = p.Get("order").value_or(sort == "endpoint" ? "asc" : "desc");
  static const std::set<std::string> kSorts = {"count", "error_rate", "p50", "p95", "p99", "endpoint"};
  if (!kSorts.count(sort))
    return Status::InvalidArgument("sort must be one of count, error_rate, p50, p95, p99, endpoint");
  if (order != "asc" && order != "desc") return Status::InvalidArgument("order must be asc or desc");
  auto limit = IntParam(p, "limit", 50, 1, 1000);
  if (!limit.ok()) return limit.status();
  auto offset = IntParam(p, "offset", 0, 0, 1000000000);
  if (!offset.ok()) return offset.status();
  SpanGroupQuery q;
  q.filter = EntrySpans(call, *range);
  q.dimensions = {SpanDimension::kService, SpanDimension::kEndpoint};
  auto groups = CappedGroups(call, q, "endpoints", "filter by service or narrow the range");
  if (!groups.ok()) return groups.status();
  auto key = [&sort](const SpanGroup& g) -> double {
    if (sort == "count") return static_cast<double>(g.count);
    if (sort == "error_rate") return g.count ? static_cast<double>(g.errors) / static_cast<double>(g.count) : 0;
    if (sort == "p50") return g.percentiles_ns[0];
    if (sort == "p95") return g.percentiles_ns[1];
    return g.percentiles_ns[2];
  };
  bool desc = order == "desc";
  std::stable_sort(groups->begin(), groups->end(), [&](const SpanGroup& a, const SpanGroup& b) {
    if (sort == "endpoint") {
      auto ka = std::tie(a.keys[1], a.keys[0]), kb = std::tie(b.keys[1], b.keys[0]);
      return desc ? ka > kb : ka < kb;
    }
    double ka = key(a), kb = key(b);
    if (ka != kb) return desc ? ka > kb : ka < kb;
    // Equal values: by service, then endpoint, so pages are stable.
    return std::tie(a.keys[0], a.keys[1]) < std::tie(b.keys[0], b.keys[1]);
  });
  std::string out;
  JsonWriter w(&out);
  w.BeginObject();
  w.Key("total");
  w.Int(static_cast<int64_t>(groups->size()));
  w.Key("endpoints");
  w.BeginArray();
  for (size_t i = static_cast<size_t>(*offset); i < groups->size() && i < static_cast<size_t>(*offset + *limit); ++i) {
    const auto& g = (*groups)[i];
    w.BeginObject();
    w.Key("service");
    w.String(g.keys[0]);
    w.Key("endpoint");
    w.String(g.keys[1]);
    WriteSpanStats(&w, g, "count");
    w.EndObject();
  }
  w.EndArray();
  w.EndObject();
  return out;
}

Result<std::string> EndpointSeries(const Call& call) {
  const ApiParams& p = call.params;
  auto asked = ParseRange(p);
  if (!asked.ok()) return asked.status();
  auto step = ParseStep(p, *asked);
  if (!step.ok()) return step.status();
  const MsRange range = AlignToStep(*asked, *step);
  std::string metric = p.Get("metric").value_or("p95");
  if (metric != "p50" && metric != "p95" && metric != "p99" && metric != "count") {
    return Status::InvalidArgument("metric must be one of p50, p95, p99, count");
  }
  auto top = IntParam(p, "top", 10, 1, 50);
  if (!top.ok()) return top.status();
  // The top endpoints by count: ranking needs no percentiles.
  SpanGroupQuery rank;
  rank.filter = EntrySpans(call, range);
  rank.dimensions = {SpanDimension::kService, SpanDimension::kEndpoint};
  rank.percentiles = {false, false, false};
  auto ranked = CappedGroups(call, rank, "endpoints", "filter by service or narrow the range");
  if (!ranked.ok()) return ranked.status();
  std::sort(ranked->begin(), ranked->end(), [](const SpanGroup& a, const SpanGroup& b) {
    return a.count != b.count ? a.count > b.count : a.keys < b.keys;
  });
  SpanGroupQuery series = rank;
  for (size_t i = 0; i < ranked->size() && i < static_cast<size_t>(*top); ++i) {
    series.labels.emplace_back((*ranked)[i].keys[0], (*ranked)[i].keys[1]);
  }
  const size_t named = series.labels.size();
  const bool has_other = ranked->size() > named;
  const Buckets buckets = BucketsOf(range, *step);
  const int64_t n = buckets.count;
  std::vector<std::vector<double>> values(named + (has_other ? 1 : 0), std::vector<double>(n, NAN));
  const int which = metric == "p50" ? 0 : metric == "p95" ? 1 : metric == "p99" ? 2 : -1;
  if (named > 0) {
    series.dimensions = {SpanDimension::kBucket, SpanDimension::kLabel};
    series.buckets = buckets;
    // Only the percentile the chart shows (none for counts).
    series.percentiles = {which == 0, which == 1, which == 2};
    auto groups = call.reader.GroupSpans(series);
    if (!groups.ok()) return groups.status();
    for (const auto& g : *groups) {
      int64_t b = 0, idx = 0;
      std::from_chars(g.keys[0].data(), g.keys[0].data() + g.keys[0].size(), b);
      std::from_chars(g.keys[1].data(), g.keys[1].data() + g.keys[1].size(), idx);
      if (b < 0 || b >= n) continue;
      if (idx < 0) idx = static_cast<int64_t>(named);  // other
      if (idx >= static_cast<int64_t>(values.size())) continue;
      values[idx][b] = which < 0 ? static_cast<double>(g.count) : NsToMs(g.percentiles_ns[which]);
    }
  }
  std::string out;
  JsonWriter w(&out);
  w.BeginObject();
  w.Key("metric");
  w.String(metric);
  WriteBuckets(&w, range, *step, n);
  w.Key("series");
  w.BeginArray();
  auto emit = [&](const std::string& name, const std::vector<double>& row) {
    w.BeginObject();
    w.Key("name");
    w.String(name);
    w.Key("values");
    w.BeginArray();
    for (double v : row) {
      if (which < 0 && !std::isfinite(v)) w.Int(0);
      else WriteNumberOrNull(&w, v);
    }
    w.EndArray();
    w.EndObject();
  };
  for (size_t i = 0; i < named; ++i) emit(series.labels[i].first + " " + series.labels[i].second, values[i]);
  if (has_other) emit("other", values.back());
  w.EndArray();
  w.EndObject();
  return out;
}

namespace {

//! The span filter of the traces calls (traces, traces/durations,
//! traces/attributes): service, endpoint, status, durations, attributes.
Result<SpanFilter> TraceSpanFilter(const Call& call, const MsRange& range) {
  const ApiParams& p = call.params;
  SpanFilter f;
  f.project_id = call.project_id;
  f.range = range.ns();
  f.service = p.Get("service");
  f.endpoint = p.Get("endpoint");
  if (auto v = p.Get("status")) {
    int code = *v == "error" ? 2 : *v == "ok" ? 1 : *v == "unset" ? 0 : -1;
    if (code < 0) return Status::InvalidArgument("status must be error, ok or unset");
    f.status_code = code;
  }
  for (auto [name, bound] :
       {std::pair{"min_duration_ms", &f.min_duration_ns}, std::pair{"max_duration_ms", &f.max_duration_ns}}) {
    if (auto v = p.Get(name)) {
      auto d = ParseDouble(name, *v);
      if (!d.ok()) return d.status();
      *bound = static_cast<int64_t>(*d * 1e6);
    }
  }
  auto attrs = AttrConditions(p, "attr");
  if (!attrs.ok()) return attrs.status();
  f.attributes = std::move(attrs.value());
  auto resource = AttrConditions(p, "resource_attr");
  if (!resource.ok()) return resource.status();
  f.resource_attributes = std::move(resource.value());
  return f;
}

//! Log-scale duration bounds: 1, 1.5, 2, 3, 5 and 7 times each power of ten
//! from 1 us to 1000 s (in ns), so a bucket is 1.33-1.67 times as wide as the
//! one before it and its edges are round numbers of ms.
std::vector<int64_t> DurationBounds() {
  std::vector<int64_t> out;
  for (int64_t decade = 1000; decade < 1'000'000'000'000; decade *= 10) {
    for (int64_t tenths : {10, 15, 20, 30, 50, 70}) out.push_back(decade * tenths / 10);
  }
  out.push_back(1'000'000'000'000);
  return out;
}

}  // namespace

Result<std::string> Traces(const Call& call) {
  const ApiParams& p = call.params;
  auto range = ParseRange(p);
  if (!range.ok()) return range.status();
  TraceSearchQuery q;
  auto limit = IntParam(p, "limit", 50, 1, 500);
  if (!limit.ok()) return limit.status();
  auto offset = IntParam(p, "offset", 0, 0, 1'000'000);
  if (!offset.ok()) return offset.status();
  const std::string sort = p.Get("sort").value_or("start");
  const std::string order = p.Get("order").value_or("desc");
  if (order != "desc" && order != "asc") return Status::InvalidArgument("order must be desc or asc");
  if (sort == "start") {
    if (order != "desc") return Status::InvalidArgument("sort=start is newest first only (order=desc)");
    q.order = TraceOrder::kStartDesc;
  } else if (sort == "duration") {
    q.order = order == "desc" ? TraceOrder::kDurationDesc : TraceOrder::kDurationAsc;
  } else {
    return Status::InvalidArgument("sort must be start or duration");
  }
  // One more than the page says whether another page follows.
  q.limit = *limit + 1;
  q.offset = *offset;
  auto filter = TraceSpanFilter(call, *range);
  if (!filter.ok()) return filter.status();
  q.filter = std::move(filter.value());
  auto traces = call.reader.SearchTraces(q);
  if (!traces.ok()) return traces.status();
  const bool more = static_cast<int64_t>(traces->size()) > *limit;
  if (more) traces->resize(static_cast<size_t>(*limit));
  std::string out;
  JsonWriter w(&out);
  w.BeginObject();
  w.Key("traces");
  w.BeginArray();
  for (const auto& t : *traces) {
    w.BeginObject();
    w.Key("trace_id");
    w.String(TraceIdText(t.trace_id));
    w.Key("service");
    w.String(t.service);
    w.Key("name");
    w.String(t.name);
    w.Key("start_ms");
    w.Double(static_cast<double>(t.start_ns) / 1e6);
    w.Key("duration_ms");
    w.Double(static_cast<double>(t.end_ns - t.start_ns) / 1e6);
    w.Key("span_count");
    w.Int(t.span_count);
    w.Key("error");
    w.Bool(t.error);
    w.EndObject();
  }
  w.EndArray();
  w.Key("offset");
  w.Int(*offset);
  w.Key("has_more");
  w.Bool(more);
  w.EndObject();
  return out;
}

Result<std::string> TraceDurations(const Call& call) {
  auto range = ParseRange(call.params);
  if (!range.ok()) return range.status();
  DurationHistogramQuery q;
  auto filter = TraceSpanFilter(call, *range);
  if (!filter.ok()) return filter.status();
  q.filter = std::move(filter.value());
  q.bounds_ns = DurationBounds();
  auto h = call.reader.HistogramDurations(q);
  if (!h.ok()) return h.status();
  std::string out;
  JsonWriter w(&out);
  w.BeginObject();
  w.Key("total");
  w.Int(h->total);
  w.Key("min_ms");
  if (h->total) w.Double(NsToMs(static_cast<double>(h->min_ns)));
  else w.Null();
  w.Key("max_ms");
  if (h->total) w.Double(NsToMs(static_cast<double>(h->max_ns)));
  else w.Null();
  w.Key("buckets");
  w.BeginArray();
  for (size_t i = 0; i < h->counts.size(); ++i) {
    w.BeginObject();
    w.Key("from_ms");
    w.Double(i == 0 ? 0 : NsToMs(static_cast<double>(q.bounds_ns[i - 1])));
    w.Key("to_ms");
    if (i < q.bounds_ns.size()) w.Double(NsToMs(static_cast<double>(q.bounds_ns[i])));
    else w.Null();
    w.Key("count");
    w.Int(h->counts[i]);
    w.EndObject();
  }
  w.EndArray();
  w.EndObject();
  return out;
}

namespace {

constexpr int64_t kSuggestedKeys = 20;
constexpr int64_t kSuggestedValues = 10;

void WriteSuggestions(JsonWriter* w, const std::vector<AttributeFacet>& facets) {
  w->BeginObject();
  w->Key("keys_truncated");
  w->Bool(static_cast<int64_t>(facets.size()) > kSuggestedKeys);
  w->Key("keys");
  w->BeginArray();
  for (size_t i = 0; i < facets.size() && static_cast<int64_t>(i) < kSuggestedKeys; ++i) {
    const AttributeFacet& a = facets[i];
    w->BeginObject();
    w->Key("key");
    w->String(a.key);
    w->Key("count");
    w->Int(a.count);
    w->Key("values");
    w->BeginArray();
    for (size_t j = 0; j < a.values.size() && static_cast<int64_t>(j) < kSuggestedValues; ++j) {
      w->BeginObject();
      w->Key("value");
      w->String(a.values[j].value);
      w->Key("count");
      w->Int(a.values[j].count);
      w->EndObject();
    }
    w->EndArray();
    w->Key("values_truncated");
    w->Bool(static_cast<int64_t>(a.values.size()) > kSuggestedValues);
    w->EndObject();
  }
  w->EndArray();
  w->EndObject();
}

}  // namespace

// The keys (and their top values) of the newest `sample` matching spans; with
// `key`, the values of that key among the newest spans that have it.
Result<std::string> TraceAttributes(const Call& call) {
  const ApiParams& p = call.params;
  auto range = ParseRange(p);
  if (!range.ok()) return range.status();
  AttributeSuggestionQuery q;
  auto sample = IntParam(p, "sample", std::min<int64_t>(1000, call.limits.max_log_facet_sample), 1,
                         call.limits.max_log_facet_sample);
  if (!sample.ok()) return sample.status();
  q.sample = *sample;
  q.max_keys = kSuggestedKeys;
  q.max_values = kSuggestedValues;
  auto filter = TraceSpanFilter(call, *range);
  if (!filter.ok()) return filter.status();
  q.filter = std::move(filter.value());
  const std::string map = p.Get("map").value_or("span");
  if (map != "span" && map != "resource") return Status::InvalidArgument("map must be span or resource");
  if (auto key = p.Get("key")) {
    q.key = *key;
    AttrFilter has{*key, "", AttrOp::kExists};
    (map == "span" ? q.filter.attributes : q.filter.resource_attributes).push_back(std::move(has));
  } else if (p.Get("map")) {
    return Status::InvalidArgument("map needs a key");
  }
  auto s = call.reader.SuggestAttributes(q);
  if (!s.ok()) return s.status();
  std::string out;
  JsonWriter w(&out);
  w.BeginObject();
  w.Key("sample");
  w.Int(q.sample);
  w.Key("sampled");
  w.Int(s->sampled);
  w.Key("span");
  WriteSuggestions(&w, q.key && map == "resource" ? std::vector<AttributeFacet>{} : s->span);
  w.Key("resource");
  WriteSuggestions(&w, q.key && map == "span" ? std::vector<AttributeFacet>{} : s->resource);
  w.EndObject();
  return out;
}

Result<std::string> TraceDetail(const Call& call) {
  std::string hex(call.path_arg);
  for (char& c : hex) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  auto id = ParseTraceId("trace id", hex);
  if (!id.ok()) return id.status();
  TraceQuery q{call.project_id, *id, call.limits.max_trace_spans, call.limits.max_trace_spans};
  auto trace = call.reader.GetTrace(q);
  if (!trace.ok()) {
    if (trace.status().code() == StatusCode::kNotFound) return Status::NotFound("no trace " + hex + " in this project");
    return trace.status();
  }
  std::string out;
  JsonWriter w(&out);
  w.BeginObject();
  w.Key("trace_id");
  w.String(TraceIdText(*id));  // 32 hex, also when asked with 16
  w.Key("spans");
  w.BeginArray();
  for (const SpanRecord& s : trace->spans) {
    w.BeginObject();
    w.Key("span_id");
    w.String(SpanIdText(s.span_id));
    w.Key("parent_span_id");
    w.String(SpanIdText(s.parent_span_id));
    w.Key("service");
    w.String(s.service);
    w.Key("name");
    w.String(s.name);
    w.Key("kind");
    w.Int(s.kind);
    w.Key("start_time_ns");
    w.String(std::to_string(s.start_ns));
    w.Key("end_time_ns");
    w.String(std::to_string(s.end_ns));
    w.Key("duration_ms");
    w.Double(static_cast<double>(s.duration_ns) / 1e6);
    w.Key("status_code");
    w.Int(s.status_code);
    w.Key("status_message");
    w.String(s.status_message);
    for (auto [key, json, empty] : {std::tuple{"attributes", &s.attributes, "{}"},
                                    std::tuple{"resource_attributes", &s.resource_attributes, "{}"},
                                    std::tuple{"events", &s.events, "[]"}, std::tuple{"links", &s.links, "[]"}}) {
      w.Key(key);
      w.Raw(json->empty() ? empty : *json);
    }
    w.Key("scope_name");
    w.String(s.scope_name);
    w.Key("trace_state");
    w.String(s.trace_state);
    w.EndObject();
  }
  w.EndArray();
  w.Key("logs");
  w.BeginArray();
  for (const LogRecord& l : trace->logs) WriteLogRecord(&w, l);
  w.EndArray();
  // Past --max-trace-spans the answer holds the earliest spans (log records)
  // and says so.
  w.Key("spans_truncated");
  w.Bool(trace->spans_truncated);
  w.Key("logs_truncated");
  w.Bool(trace->logs_truncated);
  w.EndObject();
  return out;
}

Result<std::string> Exceptions(const Call& call) {
  auto range = ParseRange(call.params);
  if (!range.ok()) return range.status();
  ExceptionQuery q;
  auto limit = IntParam(call.params, "limit", 50, 1, 1000);
  if (!limit.ok()) return limit.status();
  q.limit = *limit;
  q.filter.project_id = call.project_id;
  q.filter.range = range->ns();
  q.filter.service = call.params.Get("service");
  auto groups = call.reader.GroupExceptions(q);
  if (!groups.ok()) return groups.status();
  std::string out;
  JsonWriter w(&out);
  w.BeginObject();
  w.Key("exceptions");
  w.BeginArray();
  for (const auto& g : *groups) {
    w.BeginObject();
    w.Key("type");
    w.String(g.type);
    w.Key("message");
    w.String(g.message);
    w.Key("service");
    w.String(g.service);
    w.Key("count");
    w.Int(g.count);
    w.Key("log_count");
    w.Int(g.log_count);
    w.Key("first_seen_ms");
    w.Double(static_cast<double>(g.first_ns) / 1e6);
    w.Key("last_seen_ms");
    w.Double(static_cast<double>(g.last_ns) / 1e6);
    w.Key("sample_trace_id");
    w.String(TraceIdText(g.sample_trace_id));
    w.EndObject();
  }
  w.EndArray();
  w.EndObject();
  return out;
}

Result<std::string> ExceptionSpans(const Call& call) {
  auto range = ParseRange(call.params);
  if (!range.ok()) return range.status();
  ExceptionSpansQuery q;
  auto limit = IntParam(call.params, "limit", 50, 1, 1000);
  if (!limit.ok()) return limit.status();
  q.limit = *limit;
  q.type = call.params.Get("type");
  q.message = call.params.Get("message");
  if (!q.type && !q.message) return Status::InvalidArgument("give 'type' and/or 'message'");
  q.filter.project_id = call.project_id;
  q.filter.range = range->ns();
  q.filter.service = call.params.Get("service");
  auto spans = call.reader.ExceptionSpans(q);
  if (!spans.ok()) return spans.status();
  std::string out;
  JsonWriter w(&out);
  w.BeginObject();
  w.Key("spans");
  w.BeginArray();
  for (const auto& s : *spans) {
    w.BeginObject();
    w.Key("trace_id");
    w.String(TraceIdText(s.trace_id));
    w.Key("span_id");
    w.String(SpanIdText(s.span_id));
    w.Key("service");
    w.String(s.service);
    w.Key("name");
    w.String(s.name);
    w.Key("start_ms");
    w.Double(static_cast<double>(s.start_ns) / 1e6);
    w.Key("duration_ms");
    w.Double(static_cast<double>(s.duration_ns) / 1e6);
    w.Key("source");
    w.String(s.log ? "log" : "span");
    w.EndObject();
  }
  w.EndArray();
  w.EndObject();
  return out;
}

// ------------------------------------------------------------- service map

namespace {

//! How far outside the range a child's parent span is looked for: a parent
//! starts before its child (by up to its own duration) or, with clock skew,
//! slightly after. A parent outside this margin makes no edge.
constexpr int64_t kParentMarginMs = 5 * 60 * 1000;

struct MapNode {
  int64_t count = 0;
  int64_t errors = 0;
  double p95_ns = NAN;
};

}  // namespace

Result<std::string> ServiceMap(const Call& call) {
  const ApiParams& p = call.params;
  auto range = ParseRange(p);
  if (!range.ok()) return range.status();
  const std::optional<std::string> focus = p.Get("service");
  ServiceCallQuery calls_query;
  calls_query.project_id = call.project_id;
  calls_query.range = range->ns();
  calls_query.parent_margin_ns = kParentMarginMs * kNsPerMs;
  calls_query.service = focus;
  calls_query.max_calls = call.limits.max_service_calls;
  auto calls = call.reader.GroupServiceCalls(calls_query);
  if (!calls.ok()) return calls.status();
  const bool truncated = static_cast<int64_t>(calls->size()) > calls_query.max_calls;
  if (truncated) calls->resize(static_cast<size_t>(calls_query.max_calls));
  // Nodes: every service with entry spans in the range (with a focus, the
  // focus and its neighbours), and every service an edge names; a node's
  // numbers are its entry spans', as on the services page.
  SpanGroupQuery nodes_query;
  nodes_query.filter = EntrySpans(call, *range);
  nodes_query.filter.service.reset();
  nodes_query.dimensions = {SpanDimension::kService};
  nodes_query.percentiles = {false, true, false};
  std::map<std::string, MapNode> nodes;
  if (focus) nodes[*focus];
  for (const ServiceCall& c : *calls) {
    nodes[c.caller];
    nodes[c.callee];
  }
  auto groups = CappedGroups(call, nodes_query, "services", "narrow the range");
  if (!groups.ok()) return groups.status();
  for (const SpanGroup& g : *groups) {
    // With a focus, only the focus and its neighbours are drawn.
    if (focus && !nodes.contains(g.keys[0])) continue;
    nodes[g.keys[0]] = {g.count, g.errors, g.percentiles_ns[1]};
  }
  const double seconds = static_cast<double>(range->to_ms - range->from_ms) / 1000.0;
  auto rate = [](int64_t part, int64_t whole) {
    return whole ? static_cast<double>(part) / static_cast<double>(whole) : 0.0;
  };
  std::string out;
  JsonWriter w(&out);
  w.BeginObject();
  w.Key("nodes");
  w.BeginArray();
  for (const auto& [service, n] : nodes) {
    SL_RETURN_IF_ERROR(CheckInterrupted(call));
    w.BeginObject();
    w.Key("service");
    w.String(service);
    w.Key("count");
    w.Int(n.count);
    w.Key("errors");
    w.Int(n.errors);
    w.Key("rate_per_s");
    w.Double(static_cast<double>(n.count) / seconds);
    w.Key("error_rate");
    w.Double(rate(n.errors, n.count));
    w.Key("p95_ms");
    WriteNumberOrNull(&w, NsToMs(n.p95_ns));
    w.EndObject();
  }
  w.EndArray();
  w.Key("edges");
  w.BeginArray();
  for (const ServiceCall& c : *calls) {
    w.BeginObject();
    w.Key("from");
    w.String(c.caller);
    w.Key("to");
    w.String(c.callee);
    w.Key("count");
    w.Int(c.count);
    w.Key("rate_per_s");
    w.Double(static_cast<double>(c.count) / seconds);
    w.Key("errors");
    w.Int(c.errors);
    w.Key("error_rate");
    w.Double(rate(c.errors, c.count));
    w.Key("p50_ms");
    WriteNumberOrNull(&w, NsToMs(c.percentiles_ns[0]));
    w.Key("p95_ms");
    WriteNumberOrNull(&w, NsToMs(c.percentiles_ns[1]));
    w.EndObject();
  }
  w.EndArray();
  w.Key("truncated");
  w.Bool(truncated);
  w.Key("parent_margin_ms");
  w.Int(kParentMarginMs);
  w.EndObject();
  return out;
}

}  // namespace sightline::api

// --- services/series ---

namespace sightline::api {

// Per service and bucket: requests, errors and P95 of entry spans, for the
// `top` services by requests in the range (the rest are counted, not drawn).
Result<std::string> ServiceSeries(const Call& call) {
  const ApiParams& p = call.params;
  auto asked = ParseRange(p);
  if (!asked.ok()) return asked.status();
  auto step = ParseStep(p, *asked);
  if (!step.ok()) return step.status();
  const MsRange range = AlignToStep(*asked, *step);
  auto top = IntParam(p, "top", 10, 1, 50);
  if (!top.ok()) return top.status();
  const Buckets buckets = BucketsOf(range, *step);
  const int64_t n = buckets.count;
  if (*top * n > call.limits.max_points) {
    return Status::InvalidArgument(std::to_string(*top) + " services x " + std::to_string(n) +
                                   " buckets, more than the " + std::to_string(call.limits.max_points) +
                                   " points of one chart (the cap is --max-query-points); use a larger step or a "
                                   "smaller top");
  }
  SpanGroupQuery rank;
  rank.filter = EntrySpans(call, range);
  rank.dimensions = {SpanDimension::kService};
  rank.percentiles = {false, false, false};
  auto ranked = CappedGroups(call, rank, "services", "narrow the range");
  if (!ranked.ok()) return ranked.status();
  std::sort(ranked->begin(), ranked->end(), [](const SpanGroup& a, const SpanGroup& b) {
    return a.count != b.count ? a.count > b.count : a.keys < b.keys;
  });
  const size_t shown = std::min(ranked->size(), static_cast<size_t>(*top));
  std::vector<std::string> names;
  for (size_t i = 0; i < shown; ++i) names.push_back((*ranked)[i].keys[0]);
  struct Row {
    std::vector<int64_t> requests, errors;
    std::vector<double> p95;
  };
  std::vector<Row> rows(shown,
                        Row{std::vector<int64_t>(n, 0), std::vector<int64_t>(n, 0), std::vector<double>(n, NAN)});
  if (shown > 0) {
    SpanGroupQuery q = rank;
    // Every service's buckets; the top ones are kept (the grouping is capped
    // like every other: services x buckets).
    q.dimensions = {SpanDimension::kService, SpanDimension::kBucket};
    q.buckets = buckets;
    q.percentiles = {false, true, false};
    auto groups = CappedGroups(call, q, "service buckets", "use a larger step or narrow the range");
    if (!groups.ok()) return groups.status();
    for (const auto& g : *groups) {
      SL_RETURN_IF_ERROR(CheckInterrupted(call));
      auto it = std::find(names.begin(), names.end(), g.keys[0]);
      if (it == names.end()) continue;
      int64_t b = -1;
      std::from_chars(g.keys[1].data(), g.keys[1].data() + g.keys[1].size(), b);
      if (b < 0 || b >= n) continue;
      Row& r = rows[static_cast<size_t>(it - names.begin())];
      r.requests[b] = g.count;
      r.errors[b] = g.errors;
      r.p95[b] = NsToMs(g.percentiles_ns[1]);
    }
  }
  std::string out;
  JsonWriter w(&out);
  w.BeginObject();
  WriteBuckets(&w, range, *step, n);
  w.Key("services_total");
  w.Int(static_cast<int64_t>(ranked->size()));
  w.Key("truncated");
  w.Bool(ranked->size() > shown);
  w.Key("series");
  w.BeginArray();
  for (size_t i = 0; i < shown; ++i) {
    w.BeginObject();
    w.Key("service");
    w.String(names[i]);
    w.Key("requests");
    w.BeginArray();
    for (int64_t v : rows[i].requests) w.Int(v);
    w.EndArray();
    w.Key("errors");
    w.BeginArray();
    for (int64_t v : rows[i].errors) w.Int(v);
    w.EndArray();
    w.Key("p95_ms");
    w.BeginArray();
    for (double v : rows[i].p95) WriteNumberOrNull(&w, v);
    w.EndArray();
    w.EndObject();
  }
  w.EndArray();
  w.EndObject();
  return out;
}

}  // namespace sightline::api
