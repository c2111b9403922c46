// The span operations of the read contract in SQL.

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <tuple>
#include <unordered_map>
#include <utility>

#include "common/hex.h"
#include "storage/schema.h"
#include "storage/sql/sql_reader.h"

namespace sightline {

namespace {

constexpr double kFractions[3] = {0.5, 0.95, 0.99};

//! Linear interpolation between closest ranks of sorted values (q in [0,1]).
double PercentileSorted(const std::vector<int64_t>& sorted, double q) {
  if (sorted.empty()) return NAN;
  double pos = q * static_cast<double>(sorted.size() - 1);
  size_t lo = static_cast<size_t>(std::floor(pos));
  size_t hi = std::min(lo + 1, sorted.size() - 1);
  double frac = pos - static_cast<double>(lo);
  return static_cast<double>(sorted[lo]) + (static_cast<double>(sorted[hi]) - static_cast<double>(sorted[lo])) * frac;
}

bool AnyPercentile(const SpanGroupQuery& q) { return q.percentiles[0] || q.percentiles[1] || q.percentiles[2]; }

TraceId TraceIdOf(const RowView& r, int high_col) { return TraceId{sql::Id(r, high_col), sql::Id(r, high_col + 1)}; }

TraceId TraceIdFromHex(const std::string& hex) {
  TraceId id;
  if (hex.size() != 32 || !IdFromHex(hex, &id.high, &id.low)) return TraceId{};
  return id;
}

}  // namespace

namespace {

bool ByBucket(const SpanGroupQuery& q) {
  return std::find(q.dimensions.begin(), q.dimensions.end(), SpanDimension::kBucket) != q.dimensions.end();
}

}  // namespace

sql::Sql SqlReader::SpanGroupWhere(const SpanGroupQuery& q) const {
  sql::Sql w = SpanWhere(q.filter);
  if (ByBucket(q)) w << BucketWhere("start_time_ns", q.buckets, q.filter.range);
  return w;
}

Result<SpanGroups> SqlReader::GroupRawSpans(const SpanGroupQuery& q) {
  const int k = static_cast<int>(q.dimensions.size());
  sql::Sql sql;
  sql << "SELECT ";
  for (SpanDimension d : q.dimensions) sql << SpanKeyExpr(d, q) << ", ";
  SpanGroups out;
  if (!AnyPercentile(q)) {
    sql << "count(*), sum(CASE WHEN status_code = 2 THEN 1 ELSE 0 END) FROM spans";
    sql.Append(LabelJoin(q));
    sql.Append(SpanGroupWhere(q));
    if (k > 0) {
      sql << " GROUP BY ";
      for (int i = 0; i < k; ++i) sql << (i ? ", " : "") << std::to_string(i + 1);
    }
    sql << GroupLimit(q);
    SL_RETURN_IF_ERROR(Rows(sql, [&](const RowView& r) {
      SpanGroup g;
      for (int i = 0; i < k; ++i) g.keys.push_back(sql::Text(r, i));
      g.count = r.GetInt(k);
      g.errors = r.IsNull(k + 1) ? 0 : r.GetInt(k + 1);
      g.percentiles_ns = {NAN, NAN, NAN};
      if (g.count > 0) out.push_back(std::move(g));
    }));
    DropOutOfRangeBuckets(q, &out);
    return out;
  }
  // No quantiles in portable SQL: stream (keys, status, duration) and compute here.
  sql << "status_code, duration_ns FROM spans";
  sql.Append(LabelJoin(q));
  sql.Append(SpanGroupWhere(q));
  struct Acc {
    std::vector<std::string> keys;
    int64_t errors = 0;
    std::vector<int64_t> durations;
  };
  // Hashed on the keys joined with a separator no key contains: a row costs
  // one lookup instead of a tree walk comparing vectors of strings.
  std::unordered_map<std::string, Acc> groups;
  std::string joined;
  // Past max_groups + 1 groups the answer is only "over the cap": rows of
  // further groups are dropped, so memory stays bounded by the cap.
  const size_t most = static_cast<size_t>(std::min<int64_t>(q.max_groups, INT64_MAX - 1) + 1);
  SL_RETURN_IF_ERROR(Rows(sql, [&](const RowView& r) {
    joined.clear();
    for (int i = 0; i < k; ++i) {
      if (!r.IsNull(i)) joined += r.GetString(i);
      joined.push_back('\0');
    }
    if (groups.size() >= most && !groups.contains(joined)) return;
    auto [it, inserted] = groups.try_emplace(joined);
    Acc& a = it->second;
    if (inserted) {
      for (int i = 0; i < k; ++i) a.keys.push_back(sql::Text(r, i));
    }
    if (r.GetInt(k) == 2) a.errors++;
    a.durations.push_back(r.GetInt(k + 1));
  }));
  for (auto& [unused, a] : groups) {
    SL_RETURN_IF_ERROR(CheckInterrupted());
    SpanGroup g;
    g.keys = std::move(a.keys);
    g.count = static_cast<int64_t>(a.durations.size());
    g.errors = a.errors;
    std::sort(a.durations.begin(), a.durations.end());
    for (int i = 0; i < 3; ++i)
      g.percentiles_ns[i] = q.percentiles[i] ? PercentileSorted(a.durations, kFractions[i]) : NAN;
    out.push_back(std::move(g));
  }
  DropOutOfRangeBuckets(q, &out);
  return out;
}

Result<TraceSummaries> SqlReader::SearchTraces(const TraceSearchQuery& q) {
  if (q.limit < 1) return Status::InvalidArgument("limit must be at least 1");
  if (q.offset < 0) return Status::InvalidArgument("offset must not be negative");
  // Matching traces in the query's order: a trace starts at its earliest
  // span in the range and ends at its latest end there, whichever span
  // matched.
  SpanFilter range_only;
  range_only.project_id = q.filter.project_id;
  range_only.range = q.filter.range;
  sql::Sql ids;
  ids << "SELECT trace_id_high, trace_id_low FROM spans";
  ids.Append(SpanWhere(range_only));
  ids << " AND (trace_id_high, trace_id_low) IN (SELECT trace_id_high, trace_id_low FROM spans";
  ids.Append(SpanWhere(q.filter));
  ids << ") GROUP BY trace_id_high, trace_id_low ORDER BY "
      << (q.order == TraceOrder::kStartDesc      ? "min(start_time_ns) DESC"
          : q.order == TraceOrder::kDurationDesc ? "max(end_time_ns) - min(start_time_ns) DESC"
                                                 : "max(end_time_ns) - min(start_time_ns)")
      << ", " << sql::UnsignedOrder("trace_id_high") << ", " << sql::UnsignedOrder("trace_id_low") << " LIMIT ";
  ids.Bind(q.limit);
  ids << " OFFSET ";
  ids.Bind(q.offset);
  TraceSummaries out;
  sql::Sql wanted;  // ((high, low), ...) of the page's traces
  SL_RETURN_IF_ERROR(Rows(ids, [&](const RowView& r) {
    wanted << (out.empty() ? "((" : ", (");
    wanted.Bind(r.GetInt(0));
    wanted << ", ";
    wanted.Bind(r.GetInt(1));
    wanted << ")";
    TraceSummary s;
    s.trace_id = TraceIdOf(r, 0);
    s.start_ns = INT64_MAX;
    s.end_ns = INT64_MIN;
    out.push_back(std::move(s));
  }));
  if (out.empty()) return out;
  std::map<TraceId, size_t> index;
  for (size_t i = 0; i < out.size(); ++i) index.emplace(out[i].trace_id, i);
  // The key that picks a trace's first span: earliest start, then a root
  // (no parent), then the smallest span id.
  using FirstKey = std::tuple<int64_t, bool, uint64_t>;
  std::vector<FirstKey> first(out.size(), FirstKey{INT64_MAX, true, UINT64_MAX});
  sql::Sql spans;
  spans << "SELECT trace_id_high, trace_id_low, span_id, start_time_ns, end_time_ns, status_code, service_name, name, "
           "parent_span_id "
           "FROM spans WHERE project_id = ";
  spans.Bind(q.filter.project_id);
  spans << " AND (trace_id_high, trace_id_low) IN ";
  spans.Append(wanted);
  spans << ")";
  SL_RETURN_IF_ERROR(Rows(spans, [&](const RowView& r) {
    TraceId id = TraceIdOf(r, 0);
    auto it = index.find(id);
    if (it == index.end()) return;
    TraceSummary& s = out[it->second];
    int64_t start = r.GetInt(3), end = r.GetInt(4);
    FirstKey key{start, sql::Id(r, 8) != 0, sql::Id(r, 2)};
    if (key < first[it->second]) {
      first[it->second] = key;
      s.start_ns = start;
      s.service = sql::Text(r, 6);
      s.name = sql::Text(r, 7);
    }
    s.end_ns = std::max(s.end_ns, end);
    s.span_count++;
    s.error |= r.GetInt(5) == 2;
  }));
  return out;
}

Result<DurationHistogram> SqlReader::HistogramDurations(const DurationHistogramQuery& q) {
  if (q.bounds_ns.empty() ||
      std::adjacent_find(q.bounds_ns.begin(), q.bounds_ns.end(), std::greater_equal<>()) != q.bounds_ns.end()) {
    return Status::InvalidArgument("duration bounds must be strictly ascending and not empty");
  }
  sql::Sql sql;
  sql << "SELECT CASE";
  for (size_t i = 0; i < q.bounds_ns.size(); ++i) {
    sql << " WHEN duration_ns < ";
    sql.Bind(q.bounds_ns[i]);
    sql << " THEN " << std::to_string(i);
  }
  sql << " ELSE " << std::to_string(q.bounds_ns.size())
      << " END, count(*), min(duration_ns), max(duration_ns) FROM spans";
  sql.Append(SpanWhere(q.filter));
  sql << " GROUP BY 1";
  DurationHistogram out;
  out.counts.assign(q.bounds_ns.size() + 1, 0);
  SL_RETURN_IF_ERROR(Rows(sql, [&](const RowView& r) {
    const int64_t bucket = r.GetInt(0), n = r.GetInt(1);
    if (bucket < 0 || bucket >= static_cast<int64_t>(out.counts.size()) || n == 0) return;
    out.counts[static_cast<size_t>(bucket)] += n;
    out.min_ns = out.total == 0 ? r.GetInt(2) : std::min(out.min_ns, r.GetInt(2));
    out.max_ns = out.total == 0 ? r.GetInt(3) : std::max(out.max_ns, r.GetInt(3));
    out.total += n;
  }));
  return out;
}

Result<AttributeSuggestions> SqlReader::SuggestAttributes(const AttributeSuggestionQuery& q) {
  if (q.sample < 1 || q.max_keys < 1 || q.max_values < 1) {
    return Status::InvalidArgument("attribute suggestion caps and sample must be at least 1");
  }
  // The newest spans first, then their resources joined (the span filter's
  // bare column names stay unambiguous inside the subquery).
  sql::Sql sql;
  sql << "SELECT s.attributes, r.resource_attributes FROM (SELECT project_id AS p, resource_id AS rid, attributes "
         "FROM spans";
  sql.Append(SpanWhere(q.filter));
  sql << " ORDER BY start_time_ns DESC, " << sql::UnsignedOrder("trace_id_high") << ", "
      << sql::UnsignedOrder("trace_id_low") << ", " << sql::UnsignedOrder("span_id") << " LIMIT ";
  sql.Bind(q.sample);
  sql << ") AS s LEFT JOIN span_resources r ON r.project_id = s.p AND r.resource_id = s.rid";
  AttributeSuggestions out;
  sql::AttributeCounter span, resource;
  SL_RETURN_IF_ERROR(Rows(sql, [&](const RowView& r) {
    ++out.sampled;
    if (!r.IsNull(0)) span.Add(r.GetString(0), q.key);
    if (!r.IsNull(1)) resource.Add(r.GetString(1), q.key);
  }));
  SL_RETURN_IF_ERROR(CheckInterrupted());
  out.span = span.Top(q.max_keys, q.max_values);
  out.resource = resource.Top(q.max_keys, q.max_values);
  return out;
}

Result<TraceDetail> SqlReader::GetTrace(const TraceQuery& q) {
  // The trace's time range, when the engine indexes it: random ids defeat
  // zone maps, a time range does not.
  Result<std::optional<TraceExtent>> extent = TraceExtentOf(q.project_id, q.trace_id);
  if (!extent.ok()) return extent.status();
  if (*extent && !(*extent)->spans) return Status::NotFound("no such trace in this project");
  auto in_range = [](sql::Sql* sql, const char* column, const TimeRange& r) {
    *sql << " AND " << column << " >= ";
    sql->Bind(r.from_ns);
    *sql << " AND " << column << " < ";
    sql->Bind(r.to_ns);
  };
  TraceDetail out;
  sql::Sql by_trace;
  by_trace << " AND trace_id_high = ";
  by_trace.Bind(static_cast<int64_t>(q.trace_id.high));
  by_trace << " AND trace_id_low = ";
  by_trace.Bind(static_cast<int64_t>(q.trace_id.low));
  // Resource and scope are stored once per (resource, scope) in span_resources.
  sql::Sql spans;
  spans << "SELECT span_id, parent_span_id, service_name, name, kind, start_time_ns, end_time_ns, duration_ns, "
           "status_code, attributes, r.resource_attributes, r.scope_name FROM spans LEFT JOIN span_resources r ON "
           "r.project_id = spans.project_id AND r.resource_id = "
           "spans.resource_id WHERE spans.project_id = ";
  spans.Bind(q.project_id);
  spans.Append(by_trace);
  if (*extent) in_range(&spans, "start_time_ns", *(*extent)->spans);
  spans << " ORDER BY start_time_ns, " << sql::UnsignedOrder("span_id") << " LIMIT ";
  spans.Bind(q.max_spans < INT64_MAX ? q.max_spans + 1 : INT64_MAX);
  SL_RETURN_IF_ERROR(Rows(spans, [&](const RowView& r) {
    if (static_cast<int64_t>(out.spans.size()) >= q.max_spans) {
      out.spans_truncated = true;
      return;
    }
    SpanRecord s;
    s.span_id = sql::Id(r, 0);
    s.parent_span_id = sql::Id(r, 1);
    s.service = sql::Text(r, 2);
    s.name = sql::Text(r, 3);
    s.kind = static_cast<int32_t>(r.GetInt(4));
    s.start_ns = r.GetInt(5);
    s.end_ns = r.GetInt(6);
    s.duration_ns = r.GetInt(7);
    s.status_code = static_cast<int32_t>(r.GetInt(8));
    s.attributes = sql::Text(r, 9);
    s.resource_attributes = sql::Text(r, 10);
    s.scope_name = sql::Text(r, 11);
    out.spans.push_back(std::move(s));
  }));
  if (out.spans.empty()) return Status::NotFound("no such trace in this project");
  // The few spans with a status message, trace state, events or links have
  // them in span_details, under the same (span id, start time).
  std::multimap<std::pair<uint64_t, int64_t>, SpanRecord*> by_key;  // a span stored twice is two spans
  for (SpanRecord& s : out.spans) by_key.emplace(std::pair{s.span_id, s.start_ns}, &s);
  sql::Sql details;
  details << "SELECT span_id, start_time_ns, status_message, events, links, trace_state FROM span_details WHERE "
             "project_id = ";
  details.Bind(q.project_id);
  details.Append(by_trace);
  if (*extent) in_range(&details, "start_time_ns", *(*extent)->spans);
  // In the spans' order: the details of the first max_spans spans are among
  // the first max_spans rows.
  details << " ORDER BY start_time_ns, " << sql::UnsignedOrder("span_id") << " LIMIT ";
  details.Bind(q.max_spans);
  SL_RETURN_IF_ERROR(Rows(details, [&](const RowView& r) {
    auto [first, last] = by_key.equal_range({sql::Id(r, 0), r.GetInt(1)});  // none past max_spans
    for (auto it = first; it != last; ++it) {
      SpanRecord& s = *it->second;
      s.status_message = sql::Text(r, 2);
      s.events = sql::Text(r, 3);
      s.links = sql::Text(r, 4);
      s.trace_state = sql::Text(r, 5);
    }
  }));
  if (*extent && !(*extent)->logs) return out;
  sql::Sql logs;
  logs << "SELECT " << sql::kLogColumns << " FROM logs WHERE project_id = ";
  logs.Bind(q.project_id);
  logs.Append(by_trace);
  if (*extent) in_range(&logs, "time_ns", *(*extent)->logs);
  logs << " ORDER BY time_ns, rowid LIMIT ";
  logs.Bind(q.max_logs < INT64_MAX ? q.max_logs + 1 : INT64_MAX);
  SL_RETURN_IF_ERROR(Rows(logs, [&](const RowView& r) {
    if (static_cast<int64_t>(out.logs.size()) >= q.max_logs) {
      out.logs_truncated = true;
      return;
    }
    out.logs.push_back(sql::LogRecordOf(r));
  }));
  return out;
}

namespace {

//! " WHERE ..." over an exception table (span_details, log_exceptions) for
//! the project, range and service of `f`.
sql::Sql ExceptionWhere(const SpanFilter& f, const char* project_column, const char* time_column) {
  sql::Sql w;
  w << " WHERE " << project_column << " = ";
  w.Bind(f.project_id);
  w << " AND " << time_column << " >= ";
  w.Bind(f.range.from_ns);
  w << " AND " << time_column << " < ";
  w.Bind(f.range.to_ns);
  if (f.service) {
    w << " AND service_name = ";
    w.Bind(*f.service);
  }
  return w;
}

//! " AND exception_type = ? AND exception_group = ?" for the given ones; ""
//! matches an absent (NULL) value.
sql::Sql ExceptionGroupWhere(const ExceptionSpansQuery& q) {
  sql::Sql w;
  for (auto [column, value] : {std::pair{"exception_type", &q.type}, std::pair{"exception_group", &q.message}}) {
    if (!*value) continue;
    if ((*value)->empty()) {
      w << " AND " << column << " IS NULL";
    } else {
      w << " AND " << column << " = ";
      w.Bind(**value);
    }
  }
  return w;
}

}  // namespace

// The spans' exceptions from span_details alone, which has the service, name
// and duration they show (schema 8): a span stored twice has two rows there,
// as in spans. A filter on what only spans keep asks spans for the same span.
sql::Sql SqlReader::SpanExceptions(const SpanFilter& f, const sql::Sql& group_where) const {
  sql::Sql sql;
  sql << "SELECT trace_id_high, trace_id_low, span_id, service_name, name, start_time_ns, duration_ns, "
         "exception_type, exception_group FROM span_details AS sd";
  sql.Append(ExceptionWhere(f, SpanRangeProjectColumn(), "start_time_ns"));
  sql << " AND " << schema::kSpanDetailHasException;
  sql.Append(group_where);
  if (!IsServiceOnly(f)) {
    // The bare names are spans' columns; the span's own project_id, which
    // SpanWhere hides from SQLite's planner, leads it to spans_trace.
    sql << " AND EXISTS (SELECT 1 FROM spans";
    sql.Append(SpanWhere(f));
    sql << " AND project_id = sd.project_id AND trace_id_high = sd.trace_id_high AND trace_id_low = "
           "sd.trace_id_low AND span_id = sd.span_id AND start_time_ns = sd.start_time_ns)";
  }
  return sql;
}

Result<ExceptionGroups> SqlReader::GroupRawExceptions(const ExceptionQuery& q) {
  // Span-event and log-based exceptions in one grouping. An absent type or
  // message is NULL; grouped and ordered as '' so every engine orders them
  // first.
  sql::Sql sql;
  sql << "SELECT exception_type, exception_group, service_name, count(*), count(CASE WHEN is_log = 1 THEN 1 END), "
         "min(t), max(t), "
      << SampleTraceIdHex()
      << " FROM (SELECT coalesce(exception_type, '') AS exception_type, coalesce(exception_group, '') AS "
         "exception_group, service_name, start_time_ns AS t, trace_id_high, trace_id_low, 0 AS is_log FROM (";
  sql.Append(SpanExceptions(q.filter, sql::Sql()));
  sql << ") AS se UNION ALL SELECT coalesce(exception_type, ''), coalesce(exception_group, ''), "
         "service_name, time_ns, trace_id_high, trace_id_low, 1 FROM log_exceptions";
  sql.Append(ExceptionWhere(q.filter, "project_id", "time_ns"));
  sql << ") AS e GROUP BY 1, 2, 3 ORDER BY 4 DESC, 1, 2, 3 LIMIT ";
  sql.Bind(q.limit);
  ExceptionGroups out;
  SL_RETURN_IF_ERROR(Rows(sql, [&](const RowView& r) {
    ExceptionGroup g;
    g.type = sql::Text(r, 0);
    g.message = sql::Text(r, 1);
    g.service = sql::Text(r, 2);
    g.count = r.GetInt(3);
    g.log_count = r.GetInt(4);
    g.first_ns = r.GetInt(5);
    g.last_ns = r.GetInt(6);
    g.sample_trace_id = TraceIdFromHex(sql::Text(r, 7));
    out.push_back(std::move(g));
  }));
  return out;
}

Result<SpanRefs> SqlReader::ExceptionSpans(const ExceptionSpansQuery& q) {
  // Absent ids are NULL in logs; ordered as 0, as the reference does.
  sql::Sql sql;
  sql << "SELECT trace_id_high, trace_id_low, span_id, service_name, name, t, duration_ns, is_log FROM (SELECT "
         "trace_id_high, trace_id_low, span_id, service_name, name, start_time_ns AS t, duration_ns, 0 AS is_log, "
         "trace_id_high AS th, trace_id_low AS tl, span_id AS s FROM (";
  sql.Append(SpanExceptions(q.filter, ExceptionGroupWhere(q)));
  sql << ") AS se UNION ALL SELECT trace_id_high, trace_id_low, span_id, service_name, coalesce(event_name, ''), "
         "time_ns, 0, "
         "1, coalesce(trace_id_high, 0), coalesce(trace_id_low, 0), coalesce(span_id, 0) FROM log_exceptions";
  sql.Append(ExceptionWhere(q.filter, "project_id", "time_ns"));
  sql.Append(ExceptionGroupWhere(q));
  sql << ") AS e ORDER BY t DESC, is_log, " << sql::UnsignedOrder("th") << ", " << sql::UnsignedOrder("tl") << ", "
      << sql::UnsignedOrder("s") << " LIMIT ";
  sql.Bind(q.limit);
  SpanRefs out;
  SL_RETURN_IF_ERROR(Rows(sql, [&](const RowView& r) {
    SpanRef s;
    s.trace_id = TraceIdOf(r, 0);
    s.span_id = sql::Id(r, 2);
    s.service = sql::Text(r, 3);
    s.name = sql::Text(r, 4);
    s.start_ns = r.GetInt(5);
    s.duration_ns = r.GetInt(6);
    s.log = r.GetInt(7) != 0;
    out.push_back(std::move(s));
  }));
  return out;
}

// ------------------------------------------------------------- service map

namespace {

int64_t SaturatingSub(int64_t a, int64_t b) { return a < INT64_MIN + b ? INT64_MIN : a - b; }
int64_t SaturatingAdd(int64_t a, int64_t b) { return a > INT64_MAX - b ? INT64_MAX : a + b; }

}  // namespace

sql::Sql SqlReader::ServiceCallJoin(const ServiceCallQuery& q) const {
  // The child side scans the range as every span query does (SQLite's
  // "+project_id" keeps it off the trace index); the parent is looked up by
  // the trace index (project_id, trace_id_high, trace_id_low), then span id.
  const std::string project = SpanRangeProjectColumn();
  sql::Sql j;
  j << " FROM spans c JOIN spans p ON p.project_id = c.project_id AND p.trace_id_high = c.trace_id_high AND "
       "p.trace_id_low = c.trace_id_low AND p.span_id = c.parent_span_id WHERE "
    << (project.starts_with("+") ? "+" : "") << "c.project_id = ";
  j.Bind(q.project_id);
  j << " AND c.start_time_ns >= ";
  j.Bind(q.range.from_ns);
  j << " AND c.start_time_ns < ";
  j.Bind(q.range.to_ns);
  j << " AND c.parent_span_id IS NOT NULL AND p.start_time_ns >= ";
  j.Bind(SaturatingSub(q.range.from_ns, q.parent_margin_ns));
  j << " AND p.start_time_ns < ";
  j.Bind(SaturatingAdd(q.range.to_ns, q.parent_margin_ns));
  j << " AND p.service_name <> c.service_name";
  if (q.service) {
    j << " AND (p.service_name = ";
    j.Bind(*q.service);
    j << " OR c.service_name = ";
    j.Bind(*q.service);
    j << ")";
  }
  return j;
}

Status SqlReader::CheckServiceCallQuery(const ServiceCallQuery& q) {
  if (q.parent_margin_ns < 0) return Status::InvalidArgument("parent margin must not be negative");
  if (q.max_calls < 0) return Status::InvalidArgument("max_calls must not be negative");
  return Status::Ok();
}

void SqlReader::OrderAndCapServiceCalls(const ServiceCallQuery& q, ServiceCalls* calls) {
  std::sort(calls->begin(), calls->end(), [](const ServiceCall& a, const ServiceCall& b) {
    return std::tie(b.count, a.caller, a.callee) < std::tie(a.count, b.caller, b.callee);
  });
  if (static_cast<int64_t>(calls->size()) > q.max_calls) calls->resize(static_cast<size_t>(q.max_calls) + 1);
}

Result<ServiceCalls> SqlReader::GroupServiceCalls(const ServiceCallQuery& q) {
  SL_RETURN_IF_ERROR(CheckServiceCallQuery(q));
  sql::Sql sql;
  sql << "SELECT p.service_name, c.service_name, c.status_code, c.duration_ns";
  sql.Append(ServiceCallJoin(q));
  struct Acc {
    int64_t errors = 0;
    std::vector<int64_t> durations;
  };
  // Keyed by caller and callee joined with a separator no service name holds.
  std::unordered_map<std::string, Acc> groups;
  std::string key;
  SL_RETURN_IF_ERROR(Rows(sql, [&](const RowView& r) {
    key = sql::Text(r, 0);
    key.push_back('\0');
    key += sql::Text(r, 1);
    Acc& a = groups[key];
    if (r.GetInt(2) == 2) a.errors++;
    a.durations.push_back(r.GetInt(3));
  }));
  ServiceCalls out;
  for (auto& [k, a] : groups) {
    SL_RETURN_IF_ERROR(CheckInterrupted());
    ServiceCall c;
    const size_t split = k.find('\0');
    c.caller = k.substr(0, split);
    c.callee = k.substr(split + 1);
    c.count = static_cast<int64_t>(a.durations.size());
    c.errors = a.errors;
    std::sort(a.durations.begin(), a.durations.end());
    for (int i = 0; i < 3; ++i) c.percentiles_ns[i] = PercentileSorted(a.durations, kFractions[i]);
    out.push_back(std::move(c));
  }
  OrderAndCapServiceCalls(q, &out);
  return out;
}

}  // namespace sightline
