#include "storage/clickhouse/clickhouse_reader.h"

#include <algorithm>
#include <atomic>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <functional>
#include <map>
#include <optional>
#include <random>
#include <string_view>
#include <utility>
#include <vector>

#include "common/mutex.h"
#include "storage/clickhouse/formats.h"

namespace sightline::clickhouse {

namespace {

constexpr std::string_view kCursorPrefix = "ch1:";

std::string Int(int64_t v) { return std::to_string(v); }
std::string UInt(uint64_t v) { return std::to_string(v); }

//! LIMIT n for a cap: max + 1 rows, so the caller sees the cap was passed.
std::string CapLimit(int64_t max) { return " LIMIT " + UInt(static_cast<uint64_t>(std::max<int64_t>(max, 0)) + 1); }

//! The severity level (SeverityLevel) of severity_number.
constexpr const char* kLevelExpr =
    "multiIf(severity_number >= 21, 6, severity_number >= 17, 5, severity_number >= 13, 4, severity_number >= 9, 3, "
    "severity_number >= 5, 2, severity_number >= 1, 1, 0)";

//! The columns of a LogRecord, in LogRecordOf's order.
constexpr const char* kLogColumns =
    "time_ns, severity_number, severity_text, body, service_name, trace_id_high, trace_id_low, span_id, attributes, "
    "event_name";
constexpr int kLogColumnCount = 10;

LogRecord LogRecordOf(const TsvRowView& r) {
  LogRecord l;
  l.time_ns = r.GetInt(0);
  l.severity_number = static_cast<int32_t>(r.GetInt(1));
  l.severity_text = r.GetString(2);
  l.body = r.GetString(3);
  l.service = r.GetString(4);
  l.trace_id = TraceId{r.GetUInt(5), r.GetUInt(6)};
  l.span_id = r.GetUInt(7);
  l.attributes = r.GetString(8);
  l.event_name = r.GetString(9);
  return l;
}

//! Exact percentiles over the sorted array `sorted` of `n` values, linear
//! between closest ranks (numpy's default): position f*(n-1), computed in
//! Float64 as the reference computes it. NaN for an empty array.
std::string PercentileExpr(const char* sorted, const char* n, const char* fraction) {
  const std::string pos = std::string("(") + fraction + " * toFloat64(" + n + " - 1))";
  const std::string lo = "(toUInt64(floor(" + pos + ")) + 1)";
  const std::string hi = std::string("(least(toUInt64(floor(") + pos + ")) + 1, " + n + " - 1) + 1)";
  const std::string s = sorted;
  return std::string("if(") + n + " = 0, nan, toFloat64(" + s + "[" + lo + "]) + (toFloat64(" + s + "[" + hi +
         "]) - toFloat64(" + s + "[" + lo + "])) * (" + pos + " - floor(" + pos + ")))";
}

constexpr const char* kFractions[3] = {"0.5", "0.95", "0.99"};

//! " AND time_col >= origin" when the origin lies inside the range (rows
//! before it are in negative buckets; intDiv truncates toward zero and would
//! put them in bucket 0), and " AND time_col < end of the last bucket".
std::string BucketWhere(const char* time_col, const Buckets& b, const TimeRange& range) {
  std::string where;
  if (b.origin_ns > range.from_ns) where += std::string(" AND ") + time_col + " >= " + Int(b.origin_ns);
  const __int128 end = static_cast<__int128>(b.origin_ns) + static_cast<__int128>(b.step_ns) * b.count;
  if (end < range.to_ns) where += std::string(" AND ") + time_col + " < " + Int(static_cast<int64_t>(end));
  return where;
}

std::string BucketExpr(const char* time_col, const Buckets& b) {
  return std::string("intDiv(") + time_col + " - (" + Int(b.origin_ns) + "), " + Int(b.step_ns) + ")";
}

//! A finite double as a ClickHouse Float64 literal that reads back the same.
std::string Float(double v) {
  char buf[32];
  auto r = std::to_chars(buf, buf + sizeof(buf), v);
  return "toFloat64(" + std::string(buf, r.ptr) + ")";
}

//! " AND <condition>" per filter, on the attribute arrays of the row
//! (clickhouse_schema.h, AttributeArrays): attr_keys/attr_values hold each
//! key's first scalar value as text, attr_numbers its number (NaN, which
//! compares false, for strings and booleans), attr_other the keys whose
//! first value is an array or an object.
std::string AttrFilters(const std::vector<AttrFilter>& filters) {
  std::string w;
  for (const AttrFilter& a : filters) {
    const std::string key = Quote(a.key);
    const std::string has = "has(attr_keys, " + key + ")";
    const std::string at = "[indexOf(attr_keys, " + key + ")]";
    switch (a.op) {
      case AttrOp::kEq: w += " AND " + has + " AND attr_values" + at + " = " + Quote(a.value); break;
      case AttrOp::kNe: w += " AND " + has + " AND attr_values" + at + " != " + Quote(a.value); break;
      case AttrOp::kGt: w += " AND " + has + " AND attr_numbers" + at + " > " + Float(a.number); break;
      case AttrOp::kLt: w += " AND " + has + " AND attr_numbers" + at + " < " + Float(a.number); break;
      case AttrOp::kExists: w += " AND (" + has + " OR has(attr_other, " + key + "))"; break;
    }
  }
  return w;
}

std::string SpanWhere(const SpanFilter& f) {
  std::string w = " WHERE project_id = " + Int(f.project_id) + " AND start_time_ns >= " + Int(f.range.from_ns) +
                  " AND start_time_ns < " + Int(f.range.to_ns);
  if (f.entry_only) w += " AND is_entry = 1";
  if (f.service) w += " AND service_name = " + Quote(*f.service);
  if (f.endpoint) w += " AND endpoint = " + Quote(*f.endpoint);
  if (f.status_code) w += " AND status_code = " + Int(*f.status_code);
  if (f.min_duration_ns) w += " AND duration_ns >= " + Int(*f.min_duration_ns);
  if (f.max_duration_ns) w += " AND duration_ns <= " + Int(*f.max_duration_ns);
  w += AttrFilters(f.attributes);
  // The resource's attribute arrays are on its span_resources row; a span
  // whose resource row is missing matches none.
  if (!f.resource_attributes.empty()) {
    w += " AND resource_id IN (SELECT resource_id FROM span_resources WHERE project_id = " + Int(f.project_id) +
         AttrFilters(f.resource_attributes) + ")";
  }
  return w;
}

std::string TraceIdWhere(const TraceId& id) {
  if (id.empty()) return " AND 0";  // a zero id is "absent" and matches nothing
  return " AND trace_id_high = " + UInt(id.high) + " AND trace_id_low = " + UInt(id.low);
}

std::string LogWhere(const LogFilter& f) {
  std::string w = " WHERE project_id = " + Int(f.project_id) + " AND time_ns >= " + Int(f.range.from_ns) +
                  " AND time_ns < " + Int(f.range.to_ns);
  if (f.severity_min > 0) w += " AND severity_number >= " + Int(f.severity_min);
  if (f.service) w += " AND service_name = " + Quote(*f.service);
  // Unicode case folding, as DuckDB's lower() (TextFolding::kSimpleUnicode):
  // lowerUTF8 on both sides (26.5's positionCaseInsensitiveUTF8 does not fold
  // accented Greek capitals such as U+0386).
  if (f.text) w += " AND positionUTF8(lowerUTF8(body), lowerUTF8(" + Quote(*f.text) + ")) > 0";
  if (f.trace_id) w += TraceIdWhere(*f.trace_id);
  return w + AttrFilters(f.attributes);
}

//! Log-based exception events of the filter's project, range and service.
std::string ExceptionLogWhere(const SpanFilter& f) {
  std::string w = " WHERE project_id = " + Int(f.project_id) + " AND time_ns >= " + Int(f.range.from_ns) +
                  " AND time_ns < " + Int(f.range.to_ns);
  if (f.service) w += " AND service_name = " + Quote(*f.service);
  return w + " AND (exception_type != '' OR exception_message != '')";
}

std::string ExceptionGroupWhere(const ExceptionSpansQuery& q) {
  std::string w;
  if (q.type) w += " AND exception_type = " + Quote(*q.type);
  if (q.message) w += " AND exception_group = " + Quote(*q.message);
  return w;
}

//! A ClickHouse array of numbers as TabSeparated writes it: "[1,2.5,3]".
std::vector<double> ParseNumberArray(std::string_view text) {
  std::vector<double> out;
  if (text.size() < 2 || text.front() != '[') return out;
  text = text.substr(1, text.size() - 2);
  while (!text.empty()) {
    size_t comma = text.find(',');
    std::string item(text.substr(0, comma));
    if (item == "nan" || item == "-nan") out.push_back(NAN);
    else if (item == "inf") out.push_back(INFINITY);
    else if (item == "-inf") out.push_back(-INFINITY);
    else out.push_back(std::strtod(item.c_str(), nullptr));
    if (comma == std::string_view::npos) break;
    text.remove_prefix(comma + 1);
  }
  return out;
}

//! A ClickHouse Array(String) as TabSeparated writes it (after the cell's
//! own unescaping): ['a','b\'c'].
std::vector<std::string> ParseStringArray(std::string_view text) {
  std::vector<std::string> out;
  size_t i = 1;
  while (i < text.size()) {
    if (text[i] != '\'') {
      ++i;
      continue;
    }
    std::string item;
    for (++i; i < text.size() && text[i] != '\''; ++i) {
      if (text[i] == '\\' && i + 1 < text.size()) {
        char e = text[++i];
        switch (e) {
          case 'n': item.push_back('\n'); break;
          case 't': item.push_back('\t'); break;
          case 'r': item.push_back('\r'); break;
          case 'b': item.push_back('\b'); break;
          case 'f': item.push_back('\f'); break;
          case '0': item.push_back('\0'); break;
          default: item.push_back(e); break;
        }
      } else {
        item.push_back(text[i]);
      }
    }
    ++i;
    out.push_back(std::move(item));
  }
  return out;
}

bool ParseInt64(std::string_view s, int64_t* out) {
  auto r = std::from_chars(s.data(), s.data() + s.size(), *out);
  return !s.empty() && r.ec == std::errc() && r.ptr == s.data() + s.size();
}
bool ParseUInt64(std::string_view s, uint64_t* out) {
  auto r = std::from_chars(s.data(), s.data() + s.size(), *out);
  return !s.empty() && r.ec == std::errc() && r.ptr == s.data() + s.size();
}

Status CheckLimit(int64_t limit) {
  if (limit < 1) return Status::InvalidArgument("limit must be at least 1");
  return Status::Ok();
}

int64_t SaturatingSub(int64_t a, int64_t b) { return a < INT64_MIN + b ? INT64_MIN : a - b; }
int64_t SaturatingAdd(int64_t a, int64_t b) { return a > INT64_MAX - b ? INT64_MAX : a + b; }

class ClickHouseReader final : public TelemetryReader {
 public:
  ClickHouseReader(std::unique_ptr<Transport> conn, ReleaseFn release, bool cluster)
      : conn_(std::move(conn)), release_(std::move(release)), cluster_(cluster) {
    std::random_device rd;
    id_prefix_ = "sightline-" + UInt((static_cast<uint64_t>(rd()) << 32) ^ rd()) + "-";
  }
  ~ClickHouseReader() override { release_(std::move(conn_)); }

  Result<SpanGroups> GroupSpans(const SpanGroupQuery& q) override;
  Result<TraceSummaries> SearchTraces(const TraceSearchQuery& q) override;
  Result<TraceDetail> GetTrace(const TraceQuery& q) override;
  Result<ExceptionGroups> GroupExceptions(const ExceptionQuery& q) override;
  Result<SpanRefs> ExceptionSpans(const ExceptionSpansQuery& q) override;
  Result<ServiceCalls> GroupServiceCalls(const ServiceCallQuery& q) override;
  Result<DurationHistogram> HistogramDurations(const DurationHistogramQuery& q) override;
  Result<AttributeSuggestions> SuggestAttributes(const AttributeSuggestionQuery& q) override;
  Result<LogPage> Logs(const LogPageQuery& q) override;
  Result<LogVolume> CountLogs(const LogVolumeQuery& q) override;
  Result<LogFacets> FacetLogs(const LogFacetsQuery& q) override;
  Result<MetricCatalog> ListMetrics(const MetricCatalogQuery& q) override;
  Result<MetricSeriesList> FindSeries(const MetricSeriesLookup& q) override;
  Result<MetricBuckets> AggregateSeries(const MetricSeriesQuery& q) override;

 protected:
  //! Shuts the socket (the running Execute returns at once) and kills the
  //! statement on the server, from a connection of its own.
  void InterruptEngine() override EXCLUDES(mu_);

 private:
  //! Runs one statement (its own query id) and calls on_row per answer row.
  Status Run(const std::string& sql, const std::function<void(const TsvRowView&)>& on_row) EXCLUDES(mu_);
  //! The top attribute keys of the rows of `sample` (a subquery with
  //! attr_keys and attr_values; `only`: that key alone), each with its top
  //! values, counted by the server.
  Status TopAttributes(const std::string& sample, const std::optional<std::string>& only, int64_t max_keys,
                       int64_t max_values, std::vector<AttributeFacet>* out);
  Status CheckInterrupted() const {
    return interrupted() ? Status::Cancelled("the query was interrupted") : Status::Ok();
  }

  std::unique_ptr<Transport> conn_;
  ReleaseFn release_;
  const bool cluster_;
  std::string id_prefix_;
  uint64_t statements_ = 0;
  Mutex mu_;
  std::string running_ GUARDED_BY(mu_);  // the running statement's query id
};

Status ClickHouseReader::Run(const std::string& sql, const std::function<void(const TsvRowView&)>& on_row) {
  Request r;
  r.query = sql;
  r.query_id = id_prefix_ + UInt(++statements_);
  r.settings.emplace_back("default_format", "TabSeparated");
  // The whole answer is computed before the 200 is sent, so an error
  // mid-query is an error status, not a truncated body.
  r.settings.emplace_back("wait_end_of_query", "1");
  // On a cluster, an IN subquery or a JOIN on a Distributed table inside a
  // query on one (the resource filter, the trace search's matching traces,
  // the log page's keys) is computed once over every shard and its result
  // sent to each (GLOBAL IN); rewriting it to the local tables would see
  // only the shard's own rows.
  if (cluster_) r.settings.emplace_back("distributed_product_mode", "global");
  {
    MutexLock lock(&mu_);
    running_ = r.query_id;
  }
  // After publishing the id: an Interrupt() from now on finds it, one
  // before has set the flag checked here.
  SL_RETURN_IF_ERROR(CheckInterrupted());
  Result<std::string> body = conn_->Execute(r);
  {
    MutexLock lock(&mu_);
    running_.clear();
  }
  if (!body.ok()) {
    SL_RETURN_IF_ERROR(CheckInterrupted());
    return body.status();
  }
  SL_ASSIGN_OR_RETURN(TsvResult rows, TsvResult::Parse(*body, false));
  for (const auto& row : rows.rows()) on_row(TsvRowView(&row));
  return CheckInterrupted();
}

void ClickHouseReader::InterruptEngine() {
  std::string id;
  {
    MutexLock lock(&mu_);
    id = running_;
  }
  conn_->Abort();
  if (id.empty()) return;
  // Interrupt() must return promptly even when the server is stuck.
  Endpoint killer_endpoint = conn_->endpoint();
  killer_endpoint.timeout = std::chrono::milliseconds(2000);
  std::unique_ptr<Transport> killer = Connect(killer_endpoint);
  Request k;
  k.query = "KILL QUERY WHERE query_id = " + Quote(id) + " ASYNC";
  (void)killer->Execute(k);
}

// ------------------------------------------------------------------- spans

std::string SpanKeyExpr(SpanDimension d, const SpanGroupQuery& q) {
  switch (d) {
    case SpanDimension::kService: return "service_name";
    case SpanDimension::kEndpoint: return "endpoint";
    case SpanDimension::kBucket: return BucketExpr("start_time_ns", q.buckets);
    case SpanDimension::kLabel: {
      if (q.labels.empty()) return "toInt64(-1)";
      // indexOf over the label pairs: 1-based, 0 when absent (-> -1, "other").
      std::string pairs = "[";
      for (size_t i = 0; i < q.labels.size(); ++i) {
        pairs += (i ? ", (" : "(") + Quote(q.labels[i].first) + ", " + Quote(q.labels[i].second) + ")";
      }
      return "toInt64(indexOf(" + pairs + "], (service_name, endpoint))) - 1";
    }
  }
  return "0";
}

Result<SpanGroups> ClickHouseReader::GroupSpans(const SpanGroupQuery& q) {
  if (q.buckets.step_ns <= 0 &&
      std::find(q.dimensions.begin(), q.dimensions.end(), SpanDimension::kBucket) != q.dimensions.end()) {
    return Status::InvalidArgument("bucket step must be positive");
  }
  const int k = static_cast<int>(q.dimensions.size());
  const bool any_percentile = q.percentiles[0] || q.percentiles[1] || q.percentiles[2];
  std::string inner = "SELECT ";
  std::string keys;
  for (int i = 0; i < k; ++i) {
    inner += SpanKeyExpr(q.dimensions[static_cast<size_t>(i)], q) + " AS k" + Int(i) + ", ";
    keys += (i ? ", k" : "k") + Int(i);
  }
  inner += "count() AS c, countIf(status_code = 2) AS e";
  // Exact percentiles: each group's durations sorted once for all three.
  if (any_percentile) inner += ", arraySort(groupArray(duration_ns)) AS s, length(s) AS n";
  inner += " FROM spans" + SpanWhere(q.filter);
  bool by_bucket = false;
  for (SpanDimension d : q.dimensions) by_bucket |= d == SpanDimension::kBucket;
  if (by_bucket) inner += BucketWhere("start_time_ns", q.buckets, q.filter.range);
  if (k > 0) inner += " GROUP BY " + keys;
  if (by_bucket) {
    for (int i = 0; i < k; ++i) {
      if (q.dimensions[static_cast<size_t>(i)] != SpanDimension::kBucket) continue;
      inner += (inner.find(" HAVING ") == std::string::npos ? " HAVING " : " AND ") + std::string("k") + Int(i) +
               " >= 0 AND k" + Int(i) + " < " + Int(q.buckets.count);
    }
  }
  inner += CapLimit(std::min<int64_t>(q.max_groups, INT64_MAX - 1));
  std::string sql = "SELECT ";
  for (int i = 0; i < k; ++i) sql += "k" + Int(i) + ", ";
  sql += "c, e";
  for (int i = 0; i < 3; ++i) {
    if (q.percentiles[i]) sql += ", " + PercentileExpr("s", "n", kFractions[i]);
  }
  sql += " FROM (" + inner + ")";
  SpanGroups out;
  SL_RETURN_IF_ERROR(Run(sql, [&](const TsvRowView& r) {
    SpanGroup g;
    for (int i = 0; i < k; ++i) g.keys.push_back(r.GetString(i));
    g.count = r.GetInt(k);
    g.errors = r.GetInt(k + 1);
    int col = k + 2;
    for (int i = 0; i < 3; ++i) g.percentiles_ns[i] = q.percentiles[i] ? r.GetDouble(col++) : NAN;
    if (g.count > 0) out.push_back(std::move(g));
  }));
  return out;
}

Result<TraceSummaries> ClickHouseReader::SearchTraces(const TraceSearchQuery& q) {
  SL_RETURN_IF_ERROR(CheckLimit(q.limit));
  if (q.offset < 0) return Status::InvalidArgument("offset must not be negative");
  SpanFilter range_only;
  range_only.project_id = q.filter.project_id;
  range_only.range = q.filter.range;
  // Matching traces in the query's order, over their spans in the range:
  // the earliest start, or the latest end less it; a page of them.
  const char* order = q.order == TraceOrder::kStartDesc      ? "min(start_time_ns) DESC"
                      : q.order == TraceOrder::kDurationDesc ? "max(end_time_ns) - min(start_time_ns) DESC"
                                                             : "max(end_time_ns) - min(start_time_ns)";
  const std::string ids = "SELECT trace_id_high, trace_id_low FROM spans" + SpanWhere(range_only) +
                          " AND (trace_id_high, trace_id_low) IN (SELECT trace_id_high, trace_id_low FROM spans" +
                          SpanWhere(q.filter) +
                          " AND NOT (trace_id_high = 0 AND trace_id_low = 0)) GROUP BY trace_id_high, trace_id_low "
                          "ORDER BY " +
                          order + ", trace_id_high, trace_id_low LIMIT " + Int(q.offset) + ", " + Int(q.limit);
  TraceSummaries out;
  std::string wanted;
  SL_RETURN_IF_ERROR(Run(ids, [&](const TsvRowView& r) {
    TraceSummary s;
    s.trace_id = TraceId{r.GetUInt(0), r.GetUInt(1)};
    wanted += (out.empty() ? "(" : ", (") + UInt(s.trace_id.high) + ", " + UInt(s.trace_id.low) + ")";
    out.push_back(std::move(s));
  }));
  if (out.empty()) return out;
  std::map<TraceId, size_t> index;
  for (size_t i = 0; i < out.size(); ++i) index.emplace(out[i].trace_id, i);
  // Each trace over all its spans: named by its first span (earliest start,
  // then a root, then the smallest span id).
  const std::string first = "(start_time_ns, parent_span_id != 0, span_id)";
  const std::string sql = "SELECT trace_id_high, trace_id_low, argMin(service_name, " + first + "), argMin(name, " +
                          first +
                          "), min(start_time_ns), max(end_time_ns), count(), max(status_code = 2) FROM spans WHERE "
                          "project_id = " +
                          Int(q.filter.project_id) + " AND (trace_id_high, trace_id_low) IN (" + wanted +
                          ") GROUP BY trace_id_high, trace_id_low";
  SL_RETURN_IF_ERROR(Run(sql, [&](const TsvRowView& r) {
    auto it = index.find(TraceId{r.GetUInt(0), r.GetUInt(1)});
    if (it == index.end()) return;
    TraceSummary& s = out[it->second];
    s.service = r.GetString(2);
    s.name = r.GetString(3);
    s.start_ns = r.GetInt(4);
    s.end_ns = r.GetInt(5);
    s.span_count = r.GetInt(6);
    s.error = r.GetInt(7) != 0;
  }));
  return out;
}

Result<TraceDetail> ClickHouseReader::GetTrace(const TraceQuery& q) {
  TraceDetail out;
  if (q.trace_id.empty()) return Status::NotFound("no such trace in this project");
  const std::string by_trace = TraceIdWhere(q.trace_id);
  // Resource and scope are stored once per (resource, scope); ANY keeps one
  // row per span while a duplicate key waits for its merge.
  const std::string spans =
      "SELECT span_id, parent_span_id, service_name, name, kind, start_time_ns, end_time_ns, duration_ns, "
      "status_code, status_message, attributes, resource_attributes, events, links, scope_name, trace_state FROM "
      "(SELECT * FROM spans PREWHERE project_id = " +
      Int(q.project_id) + by_trace +
      ") AS s ANY LEFT JOIN (SELECT project_id, resource_id, resource_attributes, scope_name FROM span_resources "
      "WHERE project_id = " +
      Int(q.project_id) + ") AS r USING (project_id, resource_id) ORDER BY start_time_ns, span_id" +
      (q.max_spans < INT64_MAX ? CapLimit(q.max_spans) : std::string());
  SL_RETURN_IF_ERROR(Run(spans, [&](const TsvRowView& r) {
    if (static_cast<int64_t>(out.spans.size()) >= q.max_spans) {
      out.spans_truncated = true;
      return;
    }
    SpanRecord s;
    s.span_id = r.GetUInt(0);
    s.parent_span_id = r.GetUInt(1);
    s.service = r.GetString(2);
    s.name = r.GetString(3);
    s.kind = static_cast<int32_t>(r.GetInt(4));
    s.start_ns = r.GetInt(5);
    s.end_ns = r.GetInt(6);
    s.duration_ns = r.GetInt(7);
    s.status_code = static_cast<int32_t>(r.GetInt(8));
    s.status_message = r.GetString(9);
    s.attributes = r.GetString(10);
    s.resource_attributes = r.GetString(11);
    s.events = r.GetString(12);
    s.links = r.GetString(13);
    s.scope_name = r.GetString(14);
    s.trace_state = r.GetString(15);
    out.spans.push_back(std::move(s));
  }));
  if (out.spans.empty()) return Status::NotFound("no such trace in this project");
  const std::string logs = std::string("SELECT ") + kLogColumns +
                           " FROM logs PREWHERE project_id = " + Int(q.project_id) + by_trace +
                           " ORDER BY time_ns, seq" + (q.max_logs < INT64_MAX ? CapLimit(q.max_logs) : std::string());
  SL_RETURN_IF_ERROR(Run(logs, [&](const TsvRowView& r) {
    if (static_cast<int64_t>(out.logs.size()) >= q.max_logs) {
      out.logs_truncated = true;
      return;
    }
    out.logs.push_back(LogRecordOf(r));
  }));
  return out;
}

Result<ExceptionGroups> ClickHouseReader::GroupExceptions(const ExceptionQuery& q) {
  SL_RETURN_IF_ERROR(CheckLimit(q.limit));
  // Span-event and log-based exceptions in one grouping; an absent type or
  // message is '' and sorts first. The sample is the greatest (high, low)
  // pair; (0, 0), "none", is the least, so it comes out only when no
  // occurrence has a trace id.
  const std::string sql =
      "SELECT exception_type, exception_group, service_name, count() AS n, countIf(is_log = 1), min(t), max(t), "
      "max((th, tl)) FROM (SELECT exception_type, exception_group, service_name, start_time_ns AS t, trace_id_high "
      "AS th, trace_id_low AS tl, toUInt8(0) AS is_log FROM spans" +
      SpanWhere(q.filter) +
      " AND has_exception = 1 UNION ALL SELECT exception_type, exception_group, service_name, time_ns AS t, "
      "trace_id_high AS th, trace_id_low AS tl, toUInt8(1) AS is_log FROM logs" +
      ExceptionLogWhere(q.filter) +
      ") GROUP BY exception_type, exception_group, service_name ORDER BY n DESC, exception_type, exception_group, "
      "service_name LIMIT " +
      Int(std::max<int64_t>(q.limit, 0));
  ExceptionGroups out;
  SL_RETURN_IF_ERROR(Run(sql, [&](const TsvRowView& r) {
    ExceptionGroup g;
    g.type = r.GetString(0);
    g.message = r.GetString(1);
    g.service = r.GetString(2);
    g.count = r.GetInt(3);
    g.log_count = r.GetInt(4);
    g.first_ns = r.GetInt(5);
    g.last_ns = r.GetInt(6);
    // "(high,low)"
    const std::string pair = r.GetString(7);
    const size_t comma = pair.find(',');
    if (pair.size() > 2 && comma != std::string::npos) {
      uint64_t h = 0, l = 0;
      if (ParseUInt64(std::string_view(pair).substr(1, comma - 1), &h) &&
          ParseUInt64(std::string_view(pair).substr(comma + 1, pair.size() - comma - 2), &l)) {
        g.sample_trace_id = TraceId{h, l};
      }
    }
    out.push_back(std::move(g));
  }));
  return out;
}

Result<SpanRefs> ClickHouseReader::ExceptionSpans(const ExceptionSpansQuery& q) {
  SL_RETURN_IF_ERROR(CheckLimit(q.limit));
  const std::string groups = ExceptionGroupWhere(q);
  const std::string sql =
      "SELECT trace_id_high, trace_id_low, span_id, service_name, nm, t, d, is_log FROM (SELECT trace_id_high, "
      "trace_id_low, span_id, service_name, name AS nm, start_time_ns AS t, duration_ns AS d, toUInt8(0) AS is_log "
      "FROM spans" +
      SpanWhere(q.filter) + " AND has_exception = 1" + groups +
      " UNION ALL SELECT trace_id_high, trace_id_low, span_id, service_name, event_name AS nm, time_ns AS t, "
      "toInt64(0) AS d, toUInt8(1) AS is_log FROM logs" +
      ExceptionLogWhere(q.filter) + groups + ") ORDER BY t DESC, is_log, trace_id_high, trace_id_low, span_id LIMIT " +
      Int(std::max<int64_t>(q.limit, 0));
  SpanRefs out;
  SL_RETURN_IF_ERROR(Run(sql, [&](const TsvRowView& r) {
    SpanRef s;
    s.trace_id = TraceId{r.GetUInt(0), r.GetUInt(1)};
    s.span_id = r.GetUInt(2);
    s.service = r.GetString(3);
    s.name = r.GetString(4);
    s.start_ns = r.GetInt(5);
    s.duration_ns = r.GetInt(6);
    s.log = r.GetInt(7) != 0;
    out.push_back(std::move(s));
  }));
  return out;
}

Result<ServiceCalls> ClickHouseReader::GroupServiceCalls(const ServiceCallQuery& q) {
  if (q.parent_margin_ns < 0) return Status::InvalidArgument("parent margin must not be negative");
  if (q.max_calls < 0) return Status::InvalidArgument("max_calls must not be negative");
  // Children in the range joined to every stored parent row (ALL: a parent
  // written twice counts twice) in the widened window.
  std::string children =
      "SELECT project_id, trace_id_high, trace_id_low, parent_span_id AS join_span, service_name "
      "AS callee, status_code, duration_ns FROM spans WHERE project_id = " +
      Int(q.project_id) + " AND start_time_ns >= " + Int(q.range.from_ns) + " AND start_time_ns < " +
      Int(q.range.to_ns) + " AND parent_span_id != 0 AND NOT (trace_id_high = 0 AND trace_id_low = 0)";
  std::string parents =
      "SELECT project_id, trace_id_high, trace_id_low, span_id AS join_span, service_name AS caller "
      "FROM spans "
      "WHERE project_id = " +
      Int(q.project_id) + " AND start_time_ns >= " + Int(SaturatingSub(q.range.from_ns, q.parent_margin_ns)) +
      " AND start_time_ns < " + Int(SaturatingAdd(q.range.to_ns, q.parent_margin_ns));
  std::string where = " WHERE caller != callee";
  if (q.service) where += " AND (caller = " + Quote(*q.service) + " OR callee = " + Quote(*q.service) + ")";
  std::string sql = "SELECT caller, callee, c, e";
  for (const char* f : kFractions) sql += ", " + PercentileExpr("s", "c", f);
  sql +=
      " FROM (SELECT caller, callee, count() AS c, countIf(status_code = 2) AS e, arraySort(groupArray("
      "duration_ns)) AS s FROM (" +
      children + ") AS children ALL INNER JOIN (" + parents +
      ") AS parents USING (project_id, trace_id_high, trace_id_low, join_span)" + where +
      " GROUP BY caller, callee) ORDER BY c DESC, caller, callee" +
      CapLimit(std::min<int64_t>(q.max_calls, INT64_MAX - 1));
  ServiceCalls out;
  SL_RETURN_IF_ERROR(Run(sql, [&](const TsvRowView& r) {
    ServiceCall c;
    c.caller = r.GetString(0);
    c.callee = r.GetString(1);
    c.count = r.GetInt(2);
    c.errors = r.GetInt(3);
    for (int i = 0; i < 3; ++i) c.percentiles_ns[i] = r.GetDouble(4 + i);
    out.push_back(std::move(c));
  }));
  return out;
}

// -------------------------------------------------------------------- logs

Result<LogPage> ClickHouseReader::Logs(const LogPageQuery& q) {
  SL_RETURN_IF_ERROR(CheckLimit(q.limit));
  // The page's (time_ns, seq) keys first, reading only the filter's columns;
  // then the records' wide columns (body, attributes) for those keys alone,
  // under PREWHERE, not for every row the range holds.
  std::string keys = "SELECT time_ns, seq FROM logs" + LogWhere(q.filter);
  // Cursor "ch1:<time_ns>:<seq>": the last record returned; the page goes on
  // strictly after it (newest first: older time, or the same time and an
  // earlier insertion).
  if (!q.cursor.empty()) {
    std::string_view c = q.cursor;
    int64_t t = 0;
    uint64_t seq = 0;
    const size_t colon = c.rfind(':');
    if (!c.starts_with(kCursorPrefix) || colon < kCursorPrefix.size() ||
        !ParseInt64(c.substr(kCursorPrefix.size(), colon - kCursorPrefix.size()), &t) ||
        !ParseUInt64(c.substr(colon + 1), &seq)) {
      return Status::InvalidArgument("malformed cursor");
    }
    keys += " AND (time_ns < " + Int(t) + " OR (time_ns = " + Int(t) + " AND seq < " + UInt(seq) + "))";
  }
  keys += " ORDER BY time_ns DESC, seq DESC" + CapLimit(q.limit);
  const std::string sql = std::string("SELECT ") + kLogColumns + ", seq FROM logs PREWHERE (time_ns, seq) IN (" + keys +
                          ") WHERE project_id = " + Int(q.filter.project_id) +
                          " AND time_ns >= " + Int(q.filter.range.from_ns) + " AND time_ns < " +
                          Int(q.filter.range.to_ns) + " ORDER BY time_ns DESC, seq DESC";
  LogPage page;
  int64_t n = 0;
  std::string next;
  SL_RETURN_IF_ERROR(Run(sql, [&](const TsvRowView& r) {
    if (++n > q.limit) return;
    page.records.push_back(LogRecordOf(r));
    next = std::string(kCursorPrefix) + Int(r.GetInt(0)) + ":" + UInt(r.GetUInt(kLogColumnCount));
  }));
  if (n > q.limit) page.next_cursor = next;
  return page;
}

Result<LogVolume> ClickHouseReader::CountLogs(const LogVolumeQuery& q) {
  if (q.buckets.step_ns <= 0) return Status::InvalidArgument("bucket step must be positive");
  const std::string sql = "SELECT " + BucketExpr("time_ns", q.buckets) + " AS b, " + kLevelExpr +
                          " AS level, count() FROM logs" + LogWhere(q.filter) +
                          BucketWhere("time_ns", q.buckets, q.filter.range) +
                          " GROUP BY b, level HAVING b >= 0 AND b < " + Int(q.buckets.count);
  LogVolume out;
  SL_RETURN_IF_ERROR(Run(sql, [&](const TsvRowView& r) {
    out.push_back(LogVolumeRow{r.GetInt(0), static_cast<int32_t>(r.GetInt(1)), r.GetInt(2)});
  }));
  return out;
}

Result<LogFacets> ClickHouseReader::FacetLogs(const LogFacetsQuery& q) {
  if (q.max_services < 1 || q.sample < 1 || q.max_keys < 1 || q.max_values < 1) {
    return Status::InvalidArgument("log facet caps and sample must be at least 1");
  }
  const std::string where = LogWhere(q.filter);
  LogFacets out;
  SL_RETURN_IF_ERROR(
      Run(std::string("SELECT ") + kLevelExpr + " AS level, count() FROM logs" + where + " GROUP BY level",
          [&](const TsvRowView& r) {
            const int64_t level = r.GetInt(0);
            if (level < 0 || level > 6) return;
            out.levels[static_cast<size_t>(level)] += r.GetInt(1);
            out.total += r.GetInt(1);
          }));
  if (out.total == 0) return out;
  SL_RETURN_IF_ERROR(Run("SELECT service_name, count() AS n FROM logs" + where +
                             " GROUP BY service_name ORDER BY n DESC, service_name" + CapLimit(q.max_services),
                         [&](const TsvRowView& r) {
                           out.services.push_back({r.GetString(0), r.GetInt(1)});
                         }));
  out.sampled = std::min(out.total, q.sample);
  // The newest `sample` records' attributes, unnested and counted by the
  // server: the top keys, then the top values of each of them.
  const std::string sample = "(SELECT attr_keys, attr_values FROM logs" + where +
                             " ORDER BY time_ns DESC, seq DESC LIMIT " + Int(q.sample) + ")";
  SL_RETURN_IF_ERROR(TopAttributes(sample, std::nullopt, q.max_keys, q.max_values, &out.attributes));
  return out;
}

Status ClickHouseReader::TopAttributes(const std::string& sample, const std::optional<std::string>& only,
                                       int64_t max_keys, int64_t max_values, std::vector<AttributeFacet>* out) {
  const std::string key_where = only ? " WHERE k = " + Quote(*only) : "";
  std::vector<std::string> keys;
  SL_RETURN_IF_ERROR(Run("SELECT k, count() AS n FROM " + sample + " ARRAY JOIN attr_keys AS k" + key_where +
                             " GROUP BY k ORDER BY n DESC, k" + CapLimit(max_keys),
                         [&](const TsvRowView& r) {
                           out->push_back({r.GetString(0), r.GetInt(1), {}});
                           keys.push_back(Quote(r.GetString(0)));
                         }));
  if (keys.empty()) return Status::Ok();
  std::string in;
  for (const std::string& k : keys) in += (in.empty() ? "" : ", ") + k;
  std::map<std::string, std::vector<FacetCount>> values;
  SL_RETURN_IF_ERROR(Run("SELECT k, v, count() AS n FROM " + sample +
                             " ARRAY JOIN attr_keys AS k, attr_values AS v WHERE k IN (" + in +
                             ") GROUP BY k, v ORDER BY k, n DESC, v" + CapLimit(max_values) + " BY k",
                         [&](const TsvRowView& r) {
                           values[r.GetString(0)].push_back({r.GetString(1), r.GetInt(2)});
                         }));
  for (AttributeFacet& f : *out) f.values = std::move(values[f.key]);
  return Status::Ok();
}

// ------------------------------------------ trace search: distribution, suggestions

Result<DurationHistogram> ClickHouseReader::HistogramDurations(const DurationHistogramQuery& q) {
  if (q.bounds_ns.empty() ||
      std::adjacent_find(q.bounds_ns.begin(), q.bounds_ns.end(), std::greater_equal<>()) != q.bounds_ns.end()) {
    return Status::InvalidArgument("duration bounds must be strictly ascending and not empty");
  }
  std::string bounds = "[";
  for (size_t i = 0; i < q.bounds_ns.size(); ++i) bounds += (i ? ", toInt64(" : "toInt64(") + Int(q.bounds_ns[i]) + ")";
  bounds += "]";
  DurationHistogram out;
  out.counts.assign(q.bounds_ns.size() + 1, 0);
  // A span's bucket is the number of bounds at or below its duration.
  const std::string sql = "SELECT arrayCount(b -> b <= duration_ns, " + bounds +
                          ") AS i, count(), min(duration_ns), max(duration_ns) FROM spans" + SpanWhere(q.filter) +
                          " GROUP BY i";
  SL_RETURN_IF_ERROR(Run(sql, [&](const TsvRowView& r) {
    const int64_t i = r.GetInt(0);
    if (i < 0 || i >= static_cast<int64_t>(out.counts.size())) return;
    const int64_t n = r.GetInt(1), lo = r.GetInt(2), hi = r.GetInt(3);
    out.min_ns = out.total == 0 ? lo : std::min(out.min_ns, lo);
    out.max_ns = out.total == 0 ? hi : std::max(out.max_ns, hi);
    out.counts[static_cast<size_t>(i)] += n;
    out.total += n;
  }));
  return out;
}

Result<AttributeSuggestions> ClickHouseReader::SuggestAttributes(const AttributeSuggestionQuery& q) {
  if (q.sample < 1 || q.max_keys < 1 || q.max_values < 1) {
    return Status::InvalidArgument("attribute suggestion caps and sample must be at least 1");
  }
  // The newest `sample` matching spans, in the contract's order.
  const std::string newest = " FROM spans" + SpanWhere(q.filter) +
                             " ORDER BY start_time_ns DESC, trace_id_high, trace_id_low, span_id LIMIT " +
                             Int(q.sample);
  AttributeSuggestions out;
  SL_RETURN_IF_ERROR(
      Run("SELECT count() FROM (SELECT 1" + newest + ")", [&](const TsvRowView& r) { out.sampled = r.GetInt(0); }));
  if (out.sampled == 0) return out;
  SL_RETURN_IF_ERROR(
      TopAttributes("(SELECT attr_keys, attr_values" + newest + ")", q.key, q.max_keys, q.max_values, &out.span));
  // Their resources' arrays, one resource row per span (ANY: a duplicate
  // key waiting for its merge is the same row). LEFT, not INNER: from 20.1
  // ANY INNER also keeps one span per resource; a span without its resource
  // row gets empty arrays, which ARRAY JOIN drops.
  const std::string resources = "(SELECT attr_keys, attr_values FROM (SELECT project_id, resource_id" + newest +
                                ") AS s ANY LEFT JOIN (SELECT project_id, resource_id, attr_keys, attr_values FROM "
                                "span_resources WHERE project_id = " +
                                Int(q.filter.project_id) + ") AS r USING (project_id, resource_id))";
  SL_RETURN_IF_ERROR(TopAttributes(resources, q.key, q.max_keys, q.max_values, &out.resource));
  return out;
}

// ----------------------------------------------------------------- metrics

Result<MetricCatalog> ClickHouseReader::ListMetrics(const MetricCatalogQuery& q) {
  const std::string sql =
      "SELECT metric_name, metric_type, unit, description, service_name, max(is_monotonic), max(temporality) FROM "
      "metric_series WHERE project_id = " +
      Int(q.project_id) +
      " GROUP BY metric_name, metric_type, unit, description, service_name ORDER BY metric_name, metric_type, unit, "
      "description, service_name" +
      CapLimit(std::min<int64_t>(q.max_rows, INT64_MAX - 1));
  MetricCatalog out;
  SL_RETURN_IF_ERROR(Run(sql, [&](const TsvRowView& r) {
    MetricCatalogRow m;
    m.name = r.GetString(0);
    m.type = static_cast<MetricType>(r.GetInt(1));
    m.unit = r.GetString(2);
    m.description = r.GetString(3);
    m.service = r.GetString(4);
    m.monotonic = r.GetInt(5) != 0;
    m.temporality = static_cast<int32_t>(r.GetInt(6));
    out.push_back(std::move(m));
  }));
  return out;
}

Result<MetricSeriesList> ClickHouseReader::FindSeries(const MetricSeriesLookup& q) {
  // GROUP BY series_id: one row per series while a duplicate key waits for
  // its merge (the duplicates are equal).
  const std::string sql =
      "SELECT series_id, any(metric_type), any(temporality), any(is_monotonic), any(service_name), any(attributes) "
      "FROM metric_series WHERE project_id = " +
      Int(q.project_id) + " AND metric_name = " + Quote(q.name) + " GROUP BY series_id ORDER BY series_id" +
      CapLimit(std::min<int64_t>(q.max_series, INT64_MAX - 1));
  MetricSeriesList out;
  SL_RETURN_IF_ERROR(Run(sql, [&](const TsvRowView& r) {
    MetricSeriesInfo s;
    s.series_id = r.GetInt(0);
    s.type = static_cast<MetricType>(r.GetInt(1));
    s.temporality = static_cast<int32_t>(r.GetInt(2));
    s.monotonic = r.GetInt(3) != 0;
    s.service = r.GetString(4);
    s.attributes = r.GetString(5);
    out.push_back(std::move(s));
  }));
  return out;
}

Result<MetricBuckets> ClickHouseReader::AggregateSeries(const MetricSeriesQuery& q) {
  MetricBuckets out;
  if (q.series_ids.empty()) return out;
  if (q.buckets.step_ns <= 0) return Status::InvalidArgument("bucket step must be positive");
  auto in_list = [](const std::vector<int64_t>& ids) {
    std::string s = " AND series_id IN (";
    for (size_t i = 0; i < ids.size(); ++i) s += (i ? ", " : "") + Int(ids[i]);
    return s + ")";
  };
  const std::string where = " WHERE project_id = " + Int(q.project_id) + " AND time_ns >= " + Int(q.range.from_ns) +
                            " AND time_ns < " + Int(q.range.to_ns) + BucketWhere("time_ns", q.buckets, q.range);
  const std::string bucket = BucketExpr("time_ns", q.buckets) + " AS b";
  const std::string in_range = " HAVING b >= 0 AND b < " + Int(q.buckets.count);

  if (q.want != MetricSeriesQuery::Want::kHistograms) {
    const bool last = q.want == MetricSeriesQuery::Want::kLast;
    // A missing value is NaN (the other engines' NULL), skipped.
    std::string sql = "SELECT series_id, " + bucket + ", count() AS c, sum(value), ";
    sql += last ? "argMax(value, time_ns), 0" : "min(value), max(value)";
    sql += " FROM metric_points" + where + " AND NOT isNaN(value)" + in_list(q.series_ids) + " GROUP BY series_id, b" +
           in_range + " ORDER BY series_id, b";
    SL_RETURN_IF_ERROR(Run(sql, [&](const TsvRowView& r) {
      MetricBucket m;
      m.series_id = r.GetInt(0);
      m.bucket = r.GetInt(1);
      m.count = r.GetInt(2);
      if (m.count == 0) return;
      m.sum = r.GetDouble(3);
      if (last) {
        m.last = r.GetDouble(4);
      } else {
        m.min = r.GetDouble(4);
        m.max = r.GetDouble(5);
      }
      out.push_back(std::move(m));
    }));
    return out;
  }

  std::vector<int64_t> marked = q.delta_series_ids, delta, cumulative;
  std::sort(marked.begin(), marked.end());
  for (int64_t id : q.series_ids) {
    (std::binary_search(marked.begin(), marked.end(), id) ? delta : cumulative).push_back(id);
  }
  if (!cumulative.empty()) {
    // The newest point of each (series, bucket) with a histogram or summary.
    const std::string sql =
        "SELECT series_id, " + bucket +
        ", argMax(bucket_counts, time_ns), argMax(bucket_counts_arr, time_ns), argMax(explicit_bounds_arr, "
        "time_ns), argMax(exp_histogram, time_ns), argMax(quantiles, time_ns) FROM metric_points" +
        where + in_list(cumulative) +
        " AND (bucket_counts != '' OR exp_histogram != '' OR quantiles != '') GROUP BY series_id, b" + in_range;
    SL_RETURN_IF_ERROR(Run(sql, [&](const TsvRowView& r) {
      MetricBucket m;
      m.series_id = r.GetInt(0);
      m.bucket = r.GetInt(1);
      if (r.GetString(2).empty()) {
        if (!r.GetString(5).empty()) m.exp_histograms.push_back(r.GetString(5));
        else if (!r.GetString(6).empty()) m.quantiles = r.GetString(6);
        else return;
      } else {
        m.counts = ParseNumberArray(r.GetString(3));
        m.bounds = ParseNumberArray(r.GetString(4));
      }
      out.push_back(std::move(m));
    }));
  }
  if (!delta.empty()) {
    // Per (series, bucket), oldest first: the element-wise sum of the bucket
    // counts since the last change of their length, the newest bounds, and
    // every exponential histogram.
    const std::string sql =
        "SELECT series_id, b, arrayReduce('sumForEach', arrayMap(x -> tupleElement(x, 2), arraySlice(h, restart + "
        "1))), "
        "tupleElement(h[length(h)], 3), arrayFilter(x -> x != '', arrayMap(x -> tupleElement(x, 2), arraySort(x -> "
        "tupleElement(x, 1), "
        "e))), length(h) FROM (SELECT series_id, " +
        bucket +
        ", arraySort(x -> tupleElement(x, 1), groupArrayIf((time_ns, bucket_counts_arr, explicit_bounds_arr), "
        "bucket_counts != "
        "'')) AS h, groupArrayIf((time_ns, exp_histogram), exp_histogram != '') AS e, arrayMap(x -> "
        "length(tupleElement(x, 2)), h) "
        "AS lens, arrayFilter(i -> lens[i] != lens[length(lens)], arrayEnumerate(lens)) AS changed, "
        "if(length(changed) = 0, 0, changed[length(changed)]) AS restart FROM metric_points" +
        where + in_list(delta) + " AND (bucket_counts != '' OR exp_histogram != '') GROUP BY series_id, b" + in_range +
        ")";
    SL_RETURN_IF_ERROR(Run(sql, [&](const TsvRowView& r) {
      MetricBucket m;
      m.series_id = r.GetInt(0);
      m.bucket = r.GetInt(1);
      if (r.GetInt(5) > 0) {
        m.counts = ParseNumberArray(r.GetString(2));
        m.bounds = ParseNumberArray(r.GetString(3));
      }
      m.exp_histograms = ParseStringArray(r.GetString(4));
      out.push_back(std::move(m));
    }));
  }
  std::sort(out.begin(), out.end(), [](const MetricBucket& a, const MetricBucket& b) {
    return std::tie(a.series_id, a.bucket) < std::tie(b.series_id, b.bucket);
  });
  return out;
}

}  // namespace

std::unique_ptr<TelemetryReader> NewReader(std::unique_ptr<Transport> conn, ReleaseFn release, bool cluster) {
  return std::make_unique<ClickHouseReader>(std::move(conn), std::move(release), cluster);
}

}  // namespace sightline::clickhouse
