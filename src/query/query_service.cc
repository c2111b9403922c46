#include "query/query_service.h"

#include <simdjson.h>

#include <algorithm>
#include <array>
#include <charconv>
#include <chrono>
#include <cmath>
#include <functional>
#include <set>
#include <tuple>
#include <unordered_map>

#include "common/hex.h"
#include "common/json_writer.h"

namespace sightline {

// ---------------------------------------------------------------- parameters

namespace {

int HexDigit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

bool UrlDecode(std::string_view in, std::string* out) {
  out->clear();
  for (size_t i = 0; i < in.size(); ++i) {
    char c = in[i];
    if (c == '+') {
      out->push_back(' ');
    } else if (c == '%') {
      if (i + 2 >= in.size()) return false;
      int hi = HexDigit(in[i + 1]), lo = HexDigit(in[i + 2]);
      if (hi < 0 || lo < 0) return false;
      out->push_back(static_cast<char>(hi << 4 | lo));
      i += 2;
    } else {
      out->push_back(c);
    }
  }
  return true;
}

}  // namespace

Result<ApiParams> ApiParams::Parse(std::string_view query) {
  ApiParams p;
  while (!query.empty()) {
    size_t amp = query.find('&');
    std::string_view pair = query.substr(0, amp);
    query = amp == std::string_view::npos ? std::string_view() : query.substr(amp + 1);
    if (pair.empty()) continue;
    size_t eq = pair.find('=');
    std::string key, value;
    if (!UrlDecode(pair.substr(0, eq), &key) ||
        !UrlDecode(eq == std::string_view::npos ? std::string_view() : pair.substr(eq + 1), &value)) {
      return Status::InvalidArgument("malformed percent-encoding in the query string");
    }
    p.values_.emplace(std::move(key), std::move(value));
  }
  return p;
}

std::optional<std::string> ApiParams::Get(const std::string& key) const {
  auto it = values_.find(key);
  if (it == values_.end() || it->second.empty()) return std::nullopt;
  return it->second;
}

std::vector<std::string> ApiParams::GetAll(const std::string& key) const {
  std::vector<std::string> out;
  auto [b, e] = values_.equal_range(key);
  for (auto it = b; it != e; ++it) {
    if (!it->second.empty()) out.push_back(it->second);
  }
  return out;
}

double PercentileSorted(const std::vector<int64_t>& sorted, double q) {
  if (sorted.empty()) return NAN;
  double pos = q * static_cast<double>(sorted.size() - 1);
  size_t lo = static_cast<size_t>(std::floor(pos));
  size_t hi = std::min(lo + 1, sorted.size() - 1);
  double frac = pos - static_cast<double>(lo);
  return static_cast<double>(sorted[lo]) + (static_cast<double>(sorted[hi]) - static_cast<double>(sorted[lo])) * frac;
}

namespace {

constexpr int64_t kNsPerMs = 1000000;
// Columns the writer derives per span (docs/STORAGE.md): the endpoint (the
// route, else the span name), whether the span is a service entry (SERVER or
// CONSUMER kind, or a root), and whether it recorded an exception. Plain
// columns let the engines filter and group without evaluating an expression
// over every row.
constexpr const char* kEndpointColumn = "endpoint";
constexpr const char* kEntrySpan = "is_entry = 1";
constexpr const char* kHasException = "has_exception = 1";
// Ids are stored as signed 64-bit halves (docs/STORAGE.md); the API speaks
// lowercase hex. printf('%016x') prints the same on both engines.
#define SL_HEX_ID(col) "CASE WHEN " col " IS NULL THEN '' ELSE printf('%016x', " col ") END"
constexpr const char* kTraceIdHex =
    "CASE WHEN trace_id_high IS NULL THEN '' ELSE printf('%016x%016x', trace_id_high, trace_id_low) END";
constexpr const char* kSpanIdHex = SL_HEX_ID("span_id");
constexpr const char* kParentSpanIdHex = SL_HEX_ID("parent_span_id");
#undef SL_HEX_ID

Result<int64_t> ParseInt(const std::string& name, const std::string& v, int64_t min, int64_t max) {
  int64_t out = 0;
  auto r = std::from_chars(v.data(), v.data() + v.size(), out);
  if (r.ec != std::errc() || r.ptr != v.data() + v.size()) {
    return Status::InvalidArgument("parameter '" + name + "' must be an integer, got '" + v + "'");
  }
  if (out < min || out > max) {
    return Status::InvalidArgument("parameter '" + name + "' must be between " + std::to_string(min) + " and " +
                                   std::to_string(max));
  }
  return out;
}

Result<double> ParseDouble(const std::string& name, const std::string& v) {
  double out = 0;
  auto r = std::from_chars(v.data(), v.data() + v.size(), out);
  if (r.ec != std::errc() || r.ptr != v.data() + v.size() || !std::isfinite(out) || out < 0) {
    return Status::InvalidArgument("parameter '" + name + "' must be a non-negative number, got '" + v + "'");
  }
  return out;
}

Result<int64_t> IntParam(const ApiParams& p, const std::string& name, int64_t def, int64_t min, int64_t max) {
  auto v = p.Get(name);
  if (!v) return def;
  return ParseInt(name, *v, min, max);
}

struct Range {
  int64_t from_ms, to_ms;
  int64_t from_ns() const { return from_ms * kNsPerMs; }
  int64_t to_ns() const { return to_ms * kNsPerMs; }
};

Result<Range> ParseRange(const ApiParams& p) {
  int64_t now_ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch()).count();
  constexpr double kMaxMs = 9223372036854.0;  // keeps ns arithmetic inside int64
  // Milliseconds; fractions (as in the answers' time_ms) are floored.
  auto ms = [&](const char* name, int64_t def) -> Result<int64_t> {
    auto v = p.Get(name);
    if (!v) return def;
    auto d = ParseDouble(name, *v);
    if (!d.ok()) return d.status();
    if (*d > kMaxMs) return Status::InvalidArgument(std::string("parameter '") + name + "' is out of range");
    return static_cast<int64_t>(std::floor(*d));
  };
  auto to = ms("to", now_ms);
  if (!to.ok()) return to.status();
  auto from = ms("from", *to - 3600 * 1000);
  if (!from.ok()) return from.status();
  if (*from >= *to) return Status::InvalidArgument("'from' must be before 'to'");
  return Range{*from, *to};
}

// Bucket width for a chart over the range: step_ms, or about 60 buckets
// rounded to a readable width.
Result<int64_t> ParseStep(const ApiParams& p, const Range& r) {
  auto v = p.Get("step_ms");
  int64_t span = r.to_ms - r.from_ms;
  if (v) {
    auto step = ParseInt("step_ms", *v, 1, span);
    if (!step.ok()) return step.status();
    if (span / *step > 2000) return Status::InvalidArgument("step_ms gives more than 2000 buckets over the range");
    return *step;
  }
  static const int64_t kNice[] = {1000,    2000,    5000,     10000,    15000,    30000,   60000,
                                  120000,  300000,  600000,   900000,   1800000,  3600000, 7200000,
                                  10800000, 21600000, 43200000, 86400000, 604800000};
  int64_t want = std::max<int64_t>(1, span / 60);
  for (int64_t n : kNice) {
    if (n >= want) return n;
  }
  return want;
}

// Splits "key=value".
Result<std::pair<std::string, std::string>> ParseKeyValue(const std::string& name, const std::string& v) {
  size_t eq = v.find('=');
  if (eq == std::string::npos || eq == 0) {
    return Status::InvalidArgument("parameter '" + name + "' must be key=value, got '" + v + "'");
  }
  return std::make_pair(v.substr(0, eq), v.substr(eq + 1));
}

std::string JsonPathFor(const std::string& key) {
  std::string path = "$.\"";
  for (char c : key) {
    if (c == '"' || c == '\\') path.push_back('\\');
    path.push_back(c);
  }
  path += "\"";
  return path;
}

std::string LikeContains(const std::string& text) {
  std::string out = "%";
  for (char c : text) {
    if (c == '%' || c == '_' || c == '\\') out.push_back('\\');
    out.push_back(c);
  }
  out.push_back('%');
  return out;
}

std::string Lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// A SQL statement under construction with its bound parameters.
struct Sql {
  std::string text;
  std::vector<SqlParam> params;
  Sql& operator<<(std::string_view s) {
    text.append(s);
    return *this;
  }
  Sql& Bind(SqlParam p) {
    text.push_back('?');
    params.push_back(std::move(p));
    return *this;
  }
  //! " AND trace_id_high = ? AND trace_id_low = ?" for a trace id in hex;
  //! false when it is not 32 hex characters.
  bool BindTraceId(std::string_view hex) {
    uint64_t high = 0, low = 0;
    if (hex.size() != 32 || !IdFromHex(hex, &high, &low)) return false;
    text.append(" AND trace_id_high = ");
    Bind(static_cast<int64_t>(high));
    text.append(" AND trace_id_low = ");
    Bind(static_cast<int64_t>(low));
    return true;
  }
};

Sql Expr(std::string_view text) {
  Sql s;
  s << text;
  return s;
}

double NsToMs(double ns) { return ns / 1e6; }

void WriteNumberOrNull(JsonWriter* w, double v) {
  if (std::isfinite(v)) w->Double(v);
  else w->Null();
}

// Count, errors and latency percentiles of spans grouped by SQL expressions.
struct SpanGroup {
  std::vector<std::string> keys;
  int64_t count = 0;
  int64_t errors = 0;
  double p50 = NAN, p95 = NAN, p99 = NAN;  // ns
};

// count (under `count_key`), errors, error_rate, p50_ms, p95_ms, p99_ms.
void WriteSpanStats(JsonWriter* w, const SpanGroup& g, const char* count_key) {
  w->Key(count_key);
  w->Int(g.count);
  w->Key("errors");
  w->Int(g.errors);
  w->Key("error_rate");
  w->Double(g.count ? static_cast<double>(g.errors) / static_cast<double>(g.count) : 0);
  w->Key("p50_ms");
  WriteNumberOrNull(w, NsToMs(g.p50));
  w->Key("p95_ms");
  WriteNumberOrNull(w, NsToMs(g.p95));
  w->Key("p99_ms");
  WriteNumberOrNull(w, NsToMs(g.p99));
}

class Runner {
 public:
  Runner(const SqlDialect& d, ReadConnection* conn, int64_t project) : d_(d), conn_(conn), project_(project) {}

  Status Rows(const Sql& sql, const RowCallback& cb) { return conn_->Query(sql.text, sql.params, cb); }

  // Groups by the key expressions (each may bind params); `where` starts
  // with " WHERE ..." and binds its own params. Only the percentiles in
  // `want` (p50, p95, p99) are computed; the others stay NaN.
  Result<std::vector<SpanGroup>> GroupSpans(const std::vector<Sql>& group_exprs, const Sql& where,
                                            std::array<bool, 3> want = {true, true, true}, const Sql& join = Sql()) {
    static constexpr double kFractions[3] = {0.5, 0.95, 0.99};
    std::vector<SpanGroup> out;
    const int k = static_cast<int>(group_exprs.size());
    Sql sql;
    sql << "SELECT ";
    for (const Sql& g : group_exprs) {
      sql << g.text << ", ";
      sql.params.insert(sql.params.end(), g.params.begin(), g.params.end());
    }
    auto set = [](SpanGroup* g, int i, double v) { (i == 0 ? g->p50 : i == 1 ? g->p95 : g->p99) = v; };
    if (d_.has_quantile_cont) {
      // One quantile aggregate with a list of fractions sorts each group
      // once; three separate ones measured ~30% slower at 5M spans.
      std::string fractions;
      int wanted = 0;
      for (int i = 0; i < 3; ++i) {
        if (!want[i]) continue;
        fractions += (wanted++ ? ", " : "") + std::string(i == 0 ? "0.5" : i == 1 ? "0.95" : "0.99");
      }
      Sql inner = std::move(sql);
      inner << "count(*) AS c, sum(CASE WHEN status_code = 2 THEN 1 ELSE 0 END) AS e";
      if (wanted > 0) inner << ", quantile_cont(duration_ns, [" << fractions << "]) AS q";
      inner << " FROM spans" << join.text;
      inner.params.insert(inner.params.end(), join.params.begin(), join.params.end());
      inner.text += where.text;
      inner.params.insert(inner.params.end(), where.params.begin(), where.params.end());
      inner << " GROUP BY ";
      for (int i = 0; i < k; ++i) inner << (i ? ", " : "") << std::to_string(i + 1);
      sql = Sql();
      if (wanted > 0) {
        sql << "SELECT * EXCLUDE (q)";
        for (int i = 1; i <= wanted; ++i) sql << ", q[" << std::to_string(i) << "]";
        sql << " FROM (" << inner.text << ")";
      } else {
        sql << inner.text;
      }
      sql.params = std::move(inner.params);
      Status st = Rows(sql, [&](const RowView& r) {
        SpanGroup g;
        for (int i = 0; i < k; ++i) g.keys.push_back(r.IsNull(i) ? "" : r.GetString(i));
        g.count = r.GetInt(k);
        g.errors = r.IsNull(k + 1) ? 0 : r.GetInt(k + 1);
        int col = k + 2;
        for (int i = 0; i < 3; ++i) {
          if (want[i]) set(&g, i, r.GetDouble(col++));
        }
        out.push_back(std::move(g));
      });
      if (!st.ok()) return st;
      return out;
    }
    // No quantiles in SQL: stream (keys, status, duration) and compute here.
    sql << "status_code, duration_ns FROM spans" << join.text;
    sql.params.insert(sql.params.end(), join.params.begin(), join.params.end());
    sql.text += where.text;
    sql.params.insert(sql.params.end(), where.params.begin(), where.params.end());
    struct Acc {
      std::vector<std::string> keys;
      int64_t errors = 0;
      std::vector<int64_t> durations;
    };
    // Hashed on the keys joined with a separator no key contains: a row costs
    // one lookup instead of a tree walk comparing vectors of strings.
    std::unordered_map<std::string, Acc> groups;
    std::string joined;
    Status st = Rows(sql, [&](const RowView& r) {
      joined.clear();
      for (int i = 0; i < k; ++i) {
        if (!r.IsNull(i)) joined += r.GetString(i);
        joined.push_back('\0');
      }
      auto [it, inserted] = groups.try_emplace(joined);
      Acc& a = it->second;
      if (inserted) {
        for (int i = 0; i < k; ++i) a.keys.push_back(r.IsNull(i) ? "" : r.GetString(i));
      }
      if (r.GetInt(k) == 2) a.errors++;
      a.durations.push_back(r.GetInt(k + 1));
    });
    if (!st.ok()) return st;
    for (auto& [unused, a] : groups) {
      SpanGroup g;
      g.keys = std::move(a.keys);
      g.count = static_cast<int64_t>(a.durations.size());
      g.errors = a.errors;
      if (want[0] || want[1] || want[2]) std::sort(a.durations.begin(), a.durations.end());
      for (int i = 0; i < 3; ++i) {
        if (want[i]) set(&g, i, PercentileSorted(a.durations, kFractions[i]));
      }
      out.push_back(std::move(g));
    }
    return out;
  }

  Sql SpanWhere(const Range& r, bool entry_only) const {
    Sql w;
    w << " WHERE " << d_.project_column << " = ";
    w.Bind(project_);
    w << " AND start_time_ns >= ";
    w.Bind(r.from_ns());
    w << " AND start_time_ns < ";
    w.Bind(r.to_ns());
    if (entry_only) w << " AND " << kEntrySpan;
    return w;
  }

  Sql BucketExpr(const char* column, const Range& r, int64_t step_ms) const {
    return Expr(std::string("((") + column + " - " + std::to_string(r.from_ns()) + ") " + d_.int_div + " " +
                std::to_string(step_ms * kNsPerMs) + ")");
  }

  // The dialect's "value of the newest point in the group" for a column.
  std::string LastOf(const char* column) const {
    std::string expr = d_.last_of;
    expr.replace(expr.find("$COL"), 4, column);
    return expr;
  }

  // Appends "<attribute of column at key, as text>" to sql, binding the path.
  void JsonText(const char* column, const std::string& key, Sql* sql) const {
    std::string expr = d_.json_text;
    std::string path = JsonPathFor(key);
    for (size_t pos; (pos = expr.find("$COL")) != std::string::npos;) expr.replace(pos, 4, column);
    for (size_t pos = 0; (pos = expr.find("$PATH", pos)) != std::string::npos;) {
      expr.replace(pos, 5, "?");
      sql->params.push_back(path);
    }
    *sql << expr;
  }

  const SqlDialect& d_;
  ReadConnection* conn_;
  int64_t project_;
};

void WriteBuckets(JsonWriter* w, const Range& r, int64_t step_ms, int64_t n) {
  w->Key("step_ms");
  w->Int(step_ms);
  w->Key("buckets");
  w->BeginArray();
  for (int64_t i = 0; i < n; ++i) w->Int(r.from_ms + i * step_ms);
  w->EndArray();
}

int64_t BucketCount(const Range& r, int64_t step_ms) { return (r.to_ms - r.from_ms + step_ms - 1) / step_ms; }

// --------------------------------------------------------------- operations

Result<std::string> Services(Runner& run, const ApiParams& p) {
  auto range = ParseRange(p);
  if (!range.ok()) return range.status();
  auto groups = run.GroupSpans({Expr("service_name")}, run.SpanWhere(*range, true));
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

Result<std::vector<SpanGroup>> EndpointGroups(Runner& run, const ApiParams& p, const Range& range) {
  Sql where = run.SpanWhere(range, true);
  if (auto svc = p.Get("service")) {
    where << " AND service_name = ";
    where.Bind(*svc);
  }
  return run.GroupSpans({Expr("service_name"), Expr(kEndpointColumn)}, where);
}

Result<std::string> Endpoints(Runner& run, const ApiParams& p) {
  auto range = ParseRange(p);
  if (!range.ok()) return range.status();
  std::string sort = p.Get("sort").value_or("count");
  std::string order = p.Get("order").value_or(sort == "endpoint" ? "asc" : "desc");
  static const std::set<std::string> kSorts = {"count", "error_rate", "p50", "p95", "p99", "endpoint"};
  if (!kSorts.count(sort)) return Status::InvalidArgument("sort must be one of count, error_rate, p50, p95, p99, endpoint");
  if (order != "asc" && order != "desc") return Status::InvalidArgument("order must be asc or desc");
  auto limit = IntParam(p, "limit", 50, 1, 1000);
  if (!limit.ok()) return limit.status();
  auto offset = IntParam(p, "offset", 0, 0, 1000000000);
  if (!offset.ok()) return offset.status();
  auto groups = EndpointGroups(run, p, *range);
  if (!groups.ok()) return groups.status();
  auto key = [&sort](const SpanGroup& g) -> double {
    if (sort == "count") return static_cast<double>(g.count);
    if (sort == "error_rate") return g.count ? static_cast<double>(g.errors) / static_cast<double>(g.count) : 0;
    if (sort == "p50") return g.p50;
    if (sort == "p95") return g.p95;
    return g.p99;
  };
  bool desc = order == "desc";
  std::stable_sort(groups->begin(), groups->end(), [&](const SpanGroup& a, const SpanGroup& b) {
    if (sort != "endpoint") {
      double ka = key(a), kb = key(b);
      if (ka != kb) return desc ? ka > kb : ka < kb;
    }
    if (sort == "endpoint") {
      auto ka = std::tie(a.keys[1], a.keys[0]), kb = std::tie(b.keys[1], b.keys[0]);
      return desc ? ka > kb : ka < kb;
    }
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

Result<std::string> EndpointSeries(Runner& run, const ApiParams& p) {
  auto range = ParseRange(p);
  if (!range.ok()) return range.status();
  auto step = ParseStep(p, *range);
  if (!step.ok()) return step.status();
  std::string metric = p.Get("metric").value_or("p95");
  if (metric != "p50" && metric != "p95" && metric != "p99" && metric != "count") {
    return Status::InvalidArgument("metric must be one of p50, p95, p99, count");
  }
  auto top = IntParam(p, "top", 10, 1, 50);
  if (!top.ok()) return top.status();
  Sql where = run.SpanWhere(*range, true);
  if (auto svc = p.Get("service")) {
    where << " AND service_name = ";
    where.Bind(*svc);
  }
  // The top endpoints by count: ranking needs no percentiles.
  struct Ranked {
    std::string service, endpoint;
    int64_t count;
  };
  std::vector<Ranked> ranked;
  Sql rank;
  rank << "SELECT service_name, " << kEndpointColumn << ", count(*) FROM spans" << where.text << " GROUP BY 1, 2";
  rank.params = where.params;
  SL_RETURN_IF_ERROR(run.Rows(rank, [&](const RowView& r) {
    ranked.push_back({r.IsNull(0) ? "" : r.GetString(0), r.IsNull(1) ? "" : r.GetString(1), r.GetInt(2)});
  }));
  std::sort(ranked.begin(), ranked.end(), [](const Ranked& a, const Ranked& b) {
    return a.count != b.count ? a.count > b.count : std::tie(a.service, a.endpoint) < std::tie(b.service, b.endpoint);
  });
  std::vector<std::string> names;
  for (size_t i = 0; i < ranked.size() && i < static_cast<size_t>(*top); ++i) {
    names.push_back(ranked[i].service + " " + ranked[i].endpoint);
  }
  bool has_other = ranked.size() > names.size();
  int64_t n = BucketCount(*range, *step);
  std::vector<std::vector<double>> values(names.size() + (has_other ? 1 : 0), std::vector<double>(n, NAN));
  if (!names.empty()) {
    // Label = index of the top endpoint, or -1 for "other", from a join with
    // the top (service, endpoint) pairs: a hash join on the two columns costs
    // about half of a CASE comparing strings per row (10M spans, DuckDB).
    Sql join;
    join << " LEFT JOIN (";
    for (size_t i = 0; i < names.size(); ++i) {
      join << (i ? " UNION ALL SELECT " : "SELECT ");
      join.Bind(ranked[i].service);
      join << (i ? ", " : " AS top_service, ");
      join.Bind(ranked[i].endpoint);
      join << (i ? ", " : " AS top_endpoint, ") << std::to_string(i) << (i ? "" : " AS top_index");
    }
    join << ") top ON service_name = top.top_service AND " << kEndpointColumn << " = top.top_endpoint";
    Sql label = Expr("coalesce(top.top_index, -1)");
    // Only the percentile the chart shows (none for counts).
    std::array<bool, 3> want = {metric == "p50", metric == "p95", metric == "p99"};
    auto series = run.GroupSpans({run.BucketExpr("start_time_ns", *range, *step), label}, where, want, join);
    if (!series.ok()) return series.status();
    for (const auto& g : *series) {
      int64_t b = 0, idx = 0;
      std::from_chars(g.keys[0].data(), g.keys[0].data() + g.keys[0].size(), b);
      std::from_chars(g.keys[1].data(), g.keys[1].data() + g.keys[1].size(), idx);
      if (b < 0 || b >= n) continue;
      if (idx < 0) idx = static_cast<int64_t>(names.size());  // other
      if (idx >= static_cast<int64_t>(values.size())) continue;
      double v = metric == "count" ? static_cast<double>(g.count)
                 : metric == "p50" ? NsToMs(g.p50)
                 : metric == "p95" ? NsToMs(g.p95)
                                   : NsToMs(g.p99);
      values[idx][b] = v;
    }
  }
  std::string out;
  JsonWriter w(&out);
  w.BeginObject();
  w.Key("metric");
  w.String(metric);
  WriteBuckets(&w, *range, *step, n);
  w.Key("series");
  w.BeginArray();
  auto emit = [&](const std::string& name, const std::vector<double>& row) {
    w.BeginObject();
    w.Key("name");
    w.String(name);
    w.Key("values");
    w.BeginArray();
    for (double v : row) {
      if (metric == "count" && !std::isfinite(v)) w.Int(0);
      else WriteNumberOrNull(&w, v);
    }
    w.EndArray();
    w.EndObject();
  };
  for (size_t i = 0; i < names.size(); ++i) emit(names[i], values[i]);
  if (has_other) emit("other", values.back());
  w.EndArray();
  w.EndObject();
  return out;
}

Status AddAttrFilters(Runner& run, const ApiParams& p, const char* column, Sql* where) {
  for (const auto& a : p.GetAll("attr")) {
    auto kv = ParseKeyValue("attr", a);
    if (!kv.ok()) return kv.status();
    *where << " AND ";
    run.JsonText(column, kv->first, where);
    *where << " = ";
    where->Bind(kv->second);
  }
  return Status::Ok();
}

Result<std::string> Traces(Runner& run, const ApiParams& p) {
  auto range = ParseRange(p);
  if (!range.ok()) return range.status();
  auto limit = IntParam(p, "limit", 50, 1, 500);
  if (!limit.ok()) return limit.status();
  Sql where = run.SpanWhere(*range, false);
  if (auto v = p.Get("service")) {
    where << " AND service_name = ";
    where.Bind(*v);
  }
  if (auto v = p.Get("endpoint")) {
    where << " AND " << kEndpointColumn << " = ";
    where.Bind(*v);
  }
  if (auto v = p.Get("status")) {
    int code = *v == "error" ? 2 : *v == "ok" ? 1 : *v == "unset" ? 0 : -1;
    if (code < 0) return Status::InvalidArgument("status must be error, ok or unset");
    where << " AND status_code = ";
    where.Bind(int64_t{code});
  }
  if (auto v = p.Get("min_duration_ms")) {
    auto d = ParseDouble("min_duration_ms", *v);
    if (!d.ok()) return d.status();
    where << " AND duration_ns >= ";
    where.Bind(static_cast<int64_t>(*d * 1e6));
  }
  if (auto v = p.Get("max_duration_ms")) {
    auto d = ParseDouble("max_duration_ms", *v);
    if (!d.ok()) return d.status();
    where << " AND duration_ns <= ";
    where.Bind(static_cast<int64_t>(*d * 1e6));
  }
  SL_RETURN_IF_ERROR(AddAttrFilters(run, p, "attributes", &where));
  // Matching traces, newest trace start first (a trace starts at its earliest
  // span in the range, whichever span matched).
  Sql ids;
  Sql in_range = run.SpanWhere(*range, false);
  ids << "SELECT trace_id_high, trace_id_low, " << kTraceIdHex << " FROM spans" << in_range.text;
  ids.params = in_range.params;
  ids << " AND (trace_id_high, trace_id_low) IN (SELECT trace_id_high, trace_id_low FROM spans" << where.text << ")";
  ids.params.insert(ids.params.end(), where.params.begin(), where.params.end());
  ids << " GROUP BY trace_id_high, trace_id_low ORDER BY min(start_time_ns) DESC, 3 LIMIT ";
  ids.Bind(*limit);
  std::vector<std::string> trace_ids;
  Sql wanted;  // ((high, low), ...) of the page's traces
  SL_RETURN_IF_ERROR(run.Rows(ids, [&](const RowView& r) {
    wanted << (trace_ids.empty() ? "((" : ", (");
    wanted.Bind(r.GetInt(0));
    wanted << ", ";
    wanted.Bind(r.GetInt(1));
    wanted << ")";
    trace_ids.push_back(r.GetString(2));
  }));
  struct Summary {
    int64_t start = INT64_MAX, end = INT64_MIN, spans = 0;
    bool error = false;
    std::string service, name;
  };
  std::unordered_map<std::string, Summary> sums;
  if (!trace_ids.empty()) {
    Sql spans;
    spans << "SELECT " << kTraceIdHex << ", start_time_ns, end_time_ns, status_code, service_name, name FROM spans "
          << "WHERE project_id = ";
    spans.Bind(run.project_);
    spans << " AND (trace_id_high, trace_id_low) IN " << wanted.text << ")";
    spans.params.insert(spans.params.end(), wanted.params.begin(), wanted.params.end());
    SL_RETURN_IF_ERROR(run.Rows(spans, [&](const RowView& r) {
      Summary& s = sums[r.GetString(0)];
      int64_t st = r.GetInt(1), en = r.GetInt(2);
      if (st < s.start) {
        s.start = st;
        s.service = r.GetString(4);
        s.name = r.GetString(5);
      }
      s.end = std::max(s.end, en);
      s.spans++;
      s.error |= r.GetInt(3) == 2;
    }));
  }
  std::string out;
  JsonWriter w(&out);
  w.BeginObject();
  w.Key("traces");
  w.BeginArray();
  for (const auto& id : trace_ids) {
    const Summary& s = sums[id];
    w.BeginObject();
    w.Key("trace_id");
    w.String(id);
    w.Key("service");
    w.String(s.service);
    w.Key("name");
    w.String(s.name);
    w.Key("start_ms");
    w.Double(static_cast<double>(s.start) / 1e6);
    w.Key("duration_ms");
    w.Double(static_cast<double>(s.end - s.start) / 1e6);
    w.Key("span_count");
    w.Int(s.spans);
    w.Key("error");
    w.Bool(s.error);
    w.EndObject();
  }
  w.EndArray();
  w.EndObject();
  return out;
}

void WriteLogRow(JsonWriter* w, const RowView& r) {
  // Columns: time_ns, severity_number, severity_text, body, service_name, trace_id, span_id, attributes
  w->BeginObject();
  w->Key("time_ns");
  w->String(std::to_string(r.GetInt(0)));
  w->Key("time_ms");
  w->Double(static_cast<double>(r.GetInt(0)) / 1e6);
  w->Key("severity_number");
  w->Int(r.GetInt(1));
  w->Key("severity_text");
  w->String(r.GetString(2));
  w->Key("body");
  w->String(r.GetString(3));
  w->Key("service");
  w->String(r.GetString(4));
  w->Key("trace_id");
  w->String(r.GetString(5));
  w->Key("span_id");
  w->String(r.GetString(6));
  w->Key("attributes");
  std::string attrs = r.IsNull(7) ? "" : r.GetString(7);
  w->Raw(attrs.empty() ? "{}" : attrs);
  w->EndObject();
}

const std::string kLogColumns = std::string("time_ns, severity_number, severity_text, body, service_name, ") +
                                kTraceIdHex + ", " + kSpanIdHex + ", attributes";

Result<std::string> TraceDetail(Runner& run, const std::string& trace_id_in) {
  std::string trace_id = Lower(trace_id_in);
  Sql by_trace;
  if (!by_trace.BindTraceId(trace_id)) return Status::InvalidArgument("trace id must be 32 hex characters");
  std::string out;
  JsonWriter w(&out);
  w.BeginObject();
  w.Key("trace_id");
  w.String(trace_id);
  w.Key("spans");
  w.BeginArray();
  Sql spans;
  // Resource and scope are stored once per (resource, scope) in span_resources.
  spans << "SELECT " << kSpanIdHex << ", " << kParentSpanIdHex
        << ", service_name, name, kind, start_time_ns, end_time_ns, duration_ns, "
           "status_code, status_message, attributes, r.resource_attributes, events, links, r.scope_name, trace_state "
           "FROM spans LEFT JOIN span_resources r ON r.project_id = spans.project_id AND r.resource_id = spans.resource_id "
           "WHERE spans.project_id = ";
  spans.Bind(run.project_);
  spans << by_trace.text;
  spans.params.insert(spans.params.end(), by_trace.params.begin(), by_trace.params.end());
  spans << " ORDER BY start_time_ns, 1";
  int64_t n = 0;
  SL_RETURN_IF_ERROR(run.Rows(spans, [&](const RowView& r) {
    ++n;
    w.BeginObject();
    w.Key("span_id");
    w.String(r.GetString(0));
    w.Key("parent_span_id");
    w.String(r.GetString(1));
    w.Key("service");
    w.String(r.GetString(2));
    w.Key("name");
    w.String(r.GetString(3));
    w.Key("kind");
    w.Int(r.GetInt(4));
    w.Key("start_time_ns");
    w.String(std::to_string(r.GetInt(5)));
    w.Key("end_time_ns");
    w.String(std::to_string(r.GetInt(6)));
    w.Key("duration_ms");
    w.Double(static_cast<double>(r.GetInt(7)) / 1e6);
    w.Key("status_code");
    w.Int(r.GetInt(8));
    w.Key("status_message");
    w.String(r.GetString(9));
    for (auto [key, col, empty] : {std::tuple{"attributes", 10, "{}"}, std::tuple{"resource_attributes", 11, "{}"},
                                   std::tuple{"events", 12, "[]"}, std::tuple{"links", 13, "[]"}}) {
      w.Key(key);
      std::string v = r.IsNull(col) ? "" : r.GetString(col);
      w.Raw(v.empty() ? empty : v);
    }
    w.Key("scope_name");
    w.String(r.GetString(14));
    w.Key("trace_state");
    w.String(r.GetString(15));
    w.EndObject();
  }));
  w.EndArray();
  if (n == 0) return Status::NotFound("no trace " + trace_id + " in this project");
  w.Key("logs");
  w.BeginArray();
  Sql logs;
  logs << "SELECT " << kLogColumns << " FROM logs WHERE project_id = ";
  logs.Bind(run.project_);
  logs << by_trace.text;
  logs.params.insert(logs.params.end(), by_trace.params.begin(), by_trace.params.end());
  logs << " ORDER BY time_ns";
  SL_RETURN_IF_ERROR(run.Rows(logs, [&](const RowView& r) { WriteLogRow(&w, r); }));
  w.EndArray();
  w.EndObject();
  return out;
}

Result<std::string> Exceptions(Runner& run, const ApiParams& p) {
  auto range = ParseRange(p);
  if (!range.ok()) return range.status();
  auto limit = IntParam(p, "limit", 50, 1, 1000);
  if (!limit.ok()) return limit.status();
  Sql sql;
  sql << "SELECT exception_type, exception_message, service_name, count(*), min(start_time_ns), max(start_time_ns), "
      << run.d_.sample_trace_id << " FROM spans";
  Sql where = run.SpanWhere(*range, false);
  sql.text += where.text;
  sql.params = where.params;
  sql << " AND " << kHasException;
  if (auto v = p.Get("service")) {
    sql << " AND service_name = ";
    sql.Bind(*v);
  }
  sql << " GROUP BY 1, 2, 3 ORDER BY 4 DESC, 1, 2, 3 LIMIT ";
  sql.Bind(*limit);
  std::string out;
  JsonWriter w(&out);
  w.BeginObject();
  w.Key("exceptions");
  w.BeginArray();
  SL_RETURN_IF_ERROR(run.Rows(sql, [&](const RowView& r) {
    w.BeginObject();
    w.Key("type");
    w.String(r.GetString(0));
    w.Key("message");
    w.String(r.GetString(1));
    w.Key("service");
    w.String(r.GetString(2));
    w.Key("count");
    w.Int(r.GetInt(3));
    w.Key("first_seen_ms");
    w.Double(static_cast<double>(r.GetInt(4)) / 1e6);
    w.Key("last_seen_ms");
    w.Double(static_cast<double>(r.GetInt(5)) / 1e6);
    w.Key("sample_trace_id");
    w.String(r.GetString(6));
    w.EndObject();
  }));
  w.EndArray();
  w.EndObject();
  return out;
}

Result<std::string> ExceptionSpans(Runner& run, const ApiParams& p) {
  auto range = ParseRange(p);
  if (!range.ok()) return range.status();
  auto limit = IntParam(p, "limit", 50, 1, 1000);
  if (!limit.ok()) return limit.status();
  auto type = p.Get("type");
  auto message = p.Get("message");
  if (!type && !message) return Status::InvalidArgument("give 'type' and/or 'message'");
  Sql sql;
  sql << "SELECT " << kTraceIdHex << ", " << kSpanIdHex << ", service_name, name, start_time_ns, duration_ns FROM spans";
  Sql where = run.SpanWhere(*range, false);
  sql.text += where.text;
  sql.params = where.params;
  // An absent type or message is NULL and listed as "" by Exceptions().
  for (auto [column, value] : {std::pair{"exception_type", type}, std::pair{"exception_message", message}}) {
    if (!value) continue;
    if (value->empty()) {
      sql << " AND " << column << " IS NULL";
    } else {
      sql << " AND " << column << " = ";
      sql.Bind(*value);
    }
  }
  if (auto v = p.Get("service")) {
    sql << " AND service_name = ";
    sql.Bind(*v);
  }
  sql << " ORDER BY start_time_ns DESC LIMIT ";
  sql.Bind(*limit);
  std::string out;
  JsonWriter w(&out);
  w.BeginObject();
  w.Key("spans");
  w.BeginArray();
  SL_RETURN_IF_ERROR(run.Rows(sql, [&](const RowView& r) {
    w.BeginObject();
    w.Key("trace_id");
    w.String(r.GetString(0));
    w.Key("span_id");
    w.String(r.GetString(1));
    w.Key("service");
    w.String(r.GetString(2));
    w.Key("name");
    w.String(r.GetString(3));
    w.Key("start_ms");
    w.Double(static_cast<double>(r.GetInt(4)) / 1e6);
    w.Key("duration_ms");
    w.Double(static_cast<double>(r.GetInt(5)) / 1e6);
    w.EndObject();
  }));
  w.EndArray();
  w.EndObject();
  return out;
}

Result<Sql> LogWhere(Runner& run, const ApiParams& p, const Range& range) {
  Sql w;
  w << " WHERE project_id = ";  // SQLite: the (project_id, time_ns) index serves the newest-first windows
  w.Bind(run.project_);
  w << " AND time_ns >= ";
  w.Bind(range.from_ns());
  w << " AND time_ns < ";
  w.Bind(range.to_ns());
  auto sev = IntParam(p, "severity_min", 0, 0, 24);
  if (!sev.ok()) return sev.status();
  if (*sev > 0) {
    w << " AND severity_number >= ";
    w.Bind(*sev);
  }
  if (auto v = p.Get("service")) {
    w << " AND service_name = ";
    w.Bind(*v);
  }
  if (auto v = p.Get("q")) {
    std::string expr = run.d_.contains_ci;
    expr.replace(expr.find("$COL"), 4, "body");
    w << " AND " << expr;
    w.params.push_back(run.d_.contains_raw ? *v : LikeContains(*v));
  }
  if (auto v = p.Get("trace_id")) {
    if (!w.BindTraceId(*v)) return Status::InvalidArgument("trace_id must be 32 hex characters");
  }
  SL_RETURN_IF_ERROR(AddAttrFilters(run, p, "attributes", &w));
  return w;
}

Result<std::string> Logs(Runner& run, const ApiParams& p) {
  auto range = ParseRange(p);
  if (!range.ok()) return range.status();
  auto limit = IntParam(p, "limit", 100, 1, 1000);
  if (!limit.ok()) return limit.status();
  auto where = LogWhere(run, p, *range);
  if (!where.ok()) return where.status();
  Sql base;
  base << "SELECT " << kLogColumns << ", rowid FROM logs" << where->text;
  base.params = where->params;
  int64_t newest = range->to_ns();  // exclusive upper bound of the scan
  // Cursor "<time_ns>:<rowid>": the last row returned; the page continues strictly after it.
  if (auto c = p.Get("cursor")) {
    size_t colon = c->find(':');
    if (colon == std::string::npos) return Status::InvalidArgument("malformed cursor");
    auto t = ParseInt("cursor", c->substr(0, colon), INT64_MIN, INT64_MAX);
    auto id = ParseInt("cursor", c->substr(colon + 1), INT64_MIN, INT64_MAX);
    if (!t.ok() || !id.ok()) return Status::InvalidArgument("malformed cursor");
    base << " AND (time_ns < ";
    base.Bind(*t);
    base << " OR (time_ns = ";
    base.Bind(*t);
    base << " AND rowid < ";
    base.Bind(*id);
    base << "))";
    newest = std::min(newest, *t + 1);
  }
  // Newest first, in growing windows: a page is usually found in the newest
  // sliver of the range, and zone maps (DuckDB) or the time index (SQLite)
  // skip the rest. Each window is 4x the last, so a page that needs the whole
  // range costs at most 4/3 of one full scan.
  // A trace id matches a handful of rows anywhere in the range: growing
  // windows would scan it 4/3 times over, so it gets one pass.
  const int64_t oldest = range->from_ns();
  int64_t window = p.Get("trace_id") ? newest - oldest : std::max<int64_t>((newest - oldest) / 256, 60 * 1000 * kNsPerMs);
  std::string out;
  JsonWriter w(&out);
  w.BeginObject();
  w.Key("logs");
  w.BeginArray();
  int64_t n = 0;
  std::string next;
  for (;;) {
    int64_t low = newest - window > oldest ? newest - window : oldest;
    Sql sql = base;
    if (low > oldest) {
      sql << " AND time_ns >= ";
      sql.Bind(low);
    }
    sql << " ORDER BY time_ns DESC, rowid DESC LIMIT ";
    sql.Bind(*limit + 1);
    std::string rows_json;
    JsonWriter rows(&rows_json);
    n = 0;
    SL_RETURN_IF_ERROR(run.Rows(sql, [&](const RowView& r) {
      if (++n > *limit) return;
      WriteLogRow(&rows, r);
      next = std::to_string(r.GetInt(0)) + ":" + std::to_string(r.GetInt(8));
    }));
    if (n > *limit || low == oldest) {
      if (!rows_json.empty()) w.Raw(rows_json);
      break;
    }
    window *= 4;
  }
  w.EndArray();
  w.Key("next_cursor");
  if (n > *limit) w.String(next);
  else w.Null();
  w.EndObject();
  return out;
}

Result<std::string> LogVolume(Runner& run, const ApiParams& p) {
  auto range = ParseRange(p);
  if (!range.ok()) return range.status();
  auto step = ParseStep(p, *range);
  if (!step.ok()) return step.status();
  auto where = LogWhere(run, p, *range);
  if (!where.ok()) return where.status();
  static const char* kLevels[] = {"UNSPECIFIED", "TRACE", "DEBUG", "INFO", "WARN", "ERROR", "FATAL"};
  Sql sql;
  sql << "SELECT " << run.BucketExpr("time_ns", *range, *step).text
      << ", (CASE WHEN severity_number >= 21 THEN 6 WHEN severity_number >= 17 THEN 5 WHEN severity_number >= 13 "
         "THEN 4 WHEN severity_number >= 9 THEN 3 WHEN severity_number >= 5 THEN 2 WHEN severity_number >= 1 THEN 1 "
         "ELSE 0 END), count(*) FROM logs"
      << where->text;
  sql.params = where->params;
  sql << " GROUP BY 1, 2";
  int64_t n = BucketCount(*range, *step);
  std::vector<std::vector<int64_t>> counts(7, std::vector<int64_t>(n, 0));
  std::vector<bool> seen(7, false);
  SL_RETURN_IF_ERROR(run.Rows(sql, [&](const RowView& r) {
    int64_t b = r.GetInt(0), level = r.GetInt(1);
    if (b < 0 || b >= n || level < 0 || level > 6) return;
    counts[level][b] += r.GetInt(2);
    seen[level] = true;
  }));
  std::string out;
  JsonWriter w(&out);
  w.BeginObject();
  WriteBuckets(&w, *range, *step, n);
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

// ------------------------------------------------------------------ metrics

// Point attributes of a series as (key, value-as-text) pairs.
std::vector<std::pair<std::string, std::string>> ParseLabels(const std::string& json) {
  std::vector<std::pair<std::string, std::string>> out;
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  if (parser.parse(json).get(doc) != simdjson::SUCCESS) return out;
  simdjson::dom::object obj;
  if (doc.get_object().get(obj) != simdjson::SUCCESS) return out;
  for (auto field : obj) {
    std::string value;
    std::string_view sv;
    if (field.value.get_string().get(sv) == simdjson::SUCCESS) value = std::string(sv);
    else value = simdjson::minify(field.value);
    out.emplace_back(std::string(field.key), std::move(value));
  }
  return out;
}

struct SeriesInfo {
  int64_t id;
  int32_t type;
  int32_t temporality;
  bool monotonic;
  std::string service;
  std::vector<std::pair<std::string, std::string>> labels;
  std::string Label(const std::string& key) const {
    if (key == "service.name") return service;
    for (const auto& [k, v] : labels) {
      if (k == key) return v;
    }
    return "";
  }
};

Result<std::vector<SeriesInfo>> LoadSeries(Runner& run, const std::string& name) {
  Sql sql;
  sql << "SELECT series_id, metric_type, temporality, is_monotonic, service_name, attributes FROM metric_series "
         "WHERE project_id = ";
  sql.Bind(run.project_);
  sql << " AND metric_name = ";
  sql.Bind(name);
  std::vector<SeriesInfo> out;
  SL_RETURN_IF_ERROR(run.Rows(sql, [&](const RowView& r) {
    SeriesInfo s;
    s.id = r.GetInt(0);
    s.type = static_cast<int32_t>(r.GetInt(1));
    s.temporality = static_cast<int32_t>(r.IsNull(2) ? 0 : r.GetInt(2));
    s.monotonic = !r.IsNull(3) && r.GetInt(3) != 0;
    s.service = r.GetString(4);
    s.labels = ParseLabels(r.IsNull(5) ? "{}" : r.GetString(5));
    out.push_back(std::move(s));
  }));
  return out;
}

Result<std::string> MetricList(Runner& run, const ApiParams&) {
  Sql sql;
  sql << "SELECT metric_name, metric_type, unit, description, service_name, max(is_monotonic), max(temporality) "
         "FROM metric_series WHERE project_id = ";
  sql.Bind(run.project_);
  sql << " GROUP BY 1, 2, 3, 4, 5 ORDER BY 1";
  struct Info {
    bool monotonic = false;
    int64_t temporality = 0;
    int64_t type = 0;
    std::string unit, description;
    std::set<std::string> services;
  };
  std::map<std::string, Info> metrics;
  SL_RETURN_IF_ERROR(run.Rows(sql, [&](const RowView& r) {
    Info& i = metrics[r.GetString(0)];
    i.type = r.GetInt(1);
    if (i.unit.empty()) i.unit = r.GetString(2);
    if (i.description.empty()) i.description = r.GetString(3);
    i.services.insert(r.GetString(4));
    i.monotonic |= !r.IsNull(5) && r.GetInt(5) != 0;
    if (!r.IsNull(6)) i.temporality = std::max(i.temporality, r.GetInt(6));
  }));
  std::string out;
  JsonWriter w(&out);
  w.BeginObject();
  w.Key("metrics");
  w.BeginArray();
  for (const auto& [name, i] : metrics) {
    w.BeginObject();
    w.Key("name");
    w.String(name);
    w.Key("type");
    w.String(MetricTypeName(static_cast<MetricType>(i.type)));
    w.Key("unit");
    w.String(i.unit);
    w.Key("description");
    w.String(i.description);
    w.Key("monotonic");
    w.Bool(i.monotonic);
    w.Key("temporality");
    w.String(i.temporality == 1 ? "delta" : i.temporality == 2 ? "cumulative" : "unspecified");
    w.Key("services");
    w.BeginArray();
    for (const auto& s : i.services) w.String(s);
    w.EndArray();
    w.EndObject();
  }
  w.EndArray();
  w.EndObject();
  return out;
}

Result<std::string> MetricLabels(Runner& run, const ApiParams& p) {
  auto name = p.Get("name");
  if (!name) return Status::InvalidArgument("give the metric 'name'");
  auto series = LoadSeries(run, *name);
  if (!series.ok()) return series.status();
  std::map<std::string, std::set<std::string>> labels;
  for (const auto& s : *series) {
    labels["service.name"].insert(s.service);
    for (const auto& [k, v] : s.labels) labels[k].insert(v);
  }
  std::string out;
  JsonWriter w(&out);
  w.BeginObject();
  w.Key("labels");
  w.BeginObject();
  for (const auto& [k, values] : labels) {
    w.Key(k);
    w.BeginArray();
    for (const auto& v : values) w.String(v);
    w.EndArray();
  }
  w.EndObject();
  w.EndObject();
  return out;
}

// `parser` is reused across calls: a fresh simdjson parser allocates.
std::vector<double> ParseDoubleArray(simdjson::dom::parser& parser, const std::string& json) {
  std::vector<double> out;
  simdjson::dom::element doc;
  if (parser.parse(json).get(doc) != simdjson::SUCCESS) return out;
  simdjson::dom::array arr;
  if (doc.get_array().get(arr) != simdjson::SUCCESS) return out;
  for (auto e : arr) {
    double d;
    if (e.get_double().get(d) == simdjson::SUCCESS) {
      out.push_back(d);
    } else {
      uint64_t u;
      if (e.get_uint64().get(u) == simdjson::SUCCESS) out.push_back(static_cast<double>(u));
    }
  }
  return out;
}

// Quantile from explicit-bucket counts, interpolating linearly inside the
// bucket (as Prometheus histogram_quantile does); the first bucket starts at 0
// and the overflow bucket answers its lower bound.
double HistogramQuantile(const std::vector<double>& bounds, const std::vector<double>& counts, double q) {
  double total = 0;
  for (double c : counts) total += c;
  if (total <= 0 || counts.size() != bounds.size() + 1) return NAN;
  double rank = q * total, cum = 0;
  for (size_t i = 0; i < counts.size(); ++i) {
    if (cum + counts[i] >= rank && counts[i] > 0) {
      if (i == bounds.size()) return bounds.empty() ? NAN : bounds.back();
      double lo = i == 0 ? std::min(0.0, bounds[0]) : bounds[i - 1];
      double hi = bounds[i];
      return lo + (hi - lo) * (rank - cum) / counts[i];
    }
    cum += counts[i];
  }
  return bounds.empty() ? NAN : bounds.back();
}

Result<std::string> MetricSeries(Runner& run, const ApiParams& p) {
  auto range = ParseRange(p);
  if (!range.ok()) return range.status();
  auto step = ParseStep(p, *range);
  if (!step.ok()) return step.status();
  auto name = p.Get("name");
  if (!name) return Status::InvalidArgument("give the metric 'name'");
  std::string agg = p.Get("agg").value_or("avg");
  static const std::set<std::string> kAggs = {"avg", "sum", "min", "max", "rate", "p50", "p95", "p99"};
  if (!kAggs.count(agg)) return Status::InvalidArgument("agg must be one of avg, sum, min, max, rate, p50, p95, p99");
  std::vector<std::string> group_by;
  if (auto g = p.Get("group_by")) {
    size_t start = 0;
    while (start <= g->size()) {
      size_t comma = g->find(',', start);
      std::string key = g->substr(start, comma == std::string::npos ? std::string::npos : comma - start);
      if (!key.empty()) group_by.push_back(key);
      if (comma == std::string::npos) break;
      start = comma + 1;
    }
  }
  std::vector<std::pair<std::string, std::string>> filters;
  for (const auto& f : p.GetAll("filter")) {
    auto kv = ParseKeyValue("filter", f);
    if (!kv.ok()) return kv.status();
    filters.push_back(*kv);
  }
  auto all = LoadSeries(run, *name);
  if (!all.ok()) return all.status();
  bool quantile = agg[0] == 'p';
  double q = agg == "p50" ? 0.5 : agg == "p95" ? 0.95 : 0.99;
  // Series that pass the filters, and their group.
  std::map<std::vector<std::string>, int> group_index;
  std::vector<std::vector<std::string>> group_keys;
  std::unordered_map<int64_t, std::pair<int, const SeriesInfo*>> chosen;
  for (const auto& s : *all) {
    bool keep = std::all_of(filters.begin(), filters.end(), [&](const auto& f) { return s.Label(f.first) == f.second; });
    if (!keep) continue;
    bool histogram = s.type == static_cast<int32_t>(MetricType::kHistogram);
    if (quantile && !histogram) continue;
    if (!quantile && histogram && agg != "rate") continue;
    if (agg == "rate" && !(s.type == static_cast<int32_t>(MetricType::kSum) && s.monotonic)) continue;
    std::vector<std::string> key;
    for (const auto& g : group_by) key.push_back(s.Label(g));
    auto [it, inserted] = group_index.emplace(key, static_cast<int>(group_keys.size()));
    if (inserted) group_keys.push_back(key);
    chosen[s.id] = {it->second, &s};
  }
  if (!all->empty() && chosen.empty() && (quantile || agg == "rate")) {
    return Status::InvalidArgument(quantile ? "percentiles need a histogram metric" : "rate needs a monotonic sum metric");
  }
  int64_t n = BucketCount(*range, *step);
  std::vector<std::vector<double>> values(group_keys.size(), std::vector<double>(n, NAN));
  if (!chosen.empty()) {
    std::vector<int64_t> ids;
    for (const auto& [id, v] : chosen) ids.push_back(id);
    Sql where;
    where << " WHERE project_id = ";
    where.Bind(run.project_);
    where << " AND time_ns >= ";
    where.Bind(range->from_ns());
    where << " AND time_ns < ";
    where.Bind(range->to_ns());
    auto series_in = [](const std::vector<int64_t>& list) {
      std::string in = " AND series_id IN (";
      for (size_t i = 0; i < list.size(); ++i) in += (i ? "," : "") + std::to_string(list[i]);
      return in + ")";
    };
    Sql where_ids = where;
    where_ids << series_in(ids);
    std::string bucket = run.BucketExpr("time_ns", *range, *step).text;
    if (!quantile && agg != "rate") {
      // Per series and bucket in SQL, then combined per group here.
      Sql sql;
      sql << "SELECT series_id, " << bucket << ", sum(value), count(value), min(value), max(value) FROM metric_points"
          << where_ids.text << " GROUP BY 1, 2";
      sql.params = where_ids.params;
      std::vector<std::vector<double>> sum(group_keys.size(), std::vector<double>(n, 0)),
          cnt(group_keys.size(), std::vector<double>(n, 0));
      SL_RETURN_IF_ERROR(run.Rows(sql, [&](const RowView& r) {
        auto it = chosen.find(r.GetInt(0));
        int64_t b = r.GetInt(1);
        if (it == chosen.end() || b < 0 || b >= n || r.IsNull(2)) return;
        int g = it->second.first;
        double& v = values[g][b];
        sum[g][b] += r.GetDouble(2);
        cnt[g][b] += static_cast<double>(r.GetInt(3));
        if (agg == "min") v = std::isnan(v) ? r.GetDouble(4) : std::min(v, r.GetDouble(4));
        if (agg == "max") v = std::isnan(v) ? r.GetDouble(5) : std::max(v, r.GetDouble(5));
      }));
      if (agg == "sum" || agg == "avg") {
        for (size_t g = 0; g < group_keys.size(); ++g) {
          for (int64_t b = 0; b < n; ++b) {
            if (cnt[g][b] > 0) values[g][b] = agg == "sum" ? sum[g][b] : sum[g][b] / cnt[g][b];
          }
        }
      }
    } else if (agg == "rate") {
      // Per series: increase per second. Cumulative sums diff the last value of
      // consecutive buckets (a drop is a reset: the new value is the increase);
      // delta sums add up their values.
      Sql sql;
      sql << "SELECT series_id, " << bucket << ", " << run.LastOf("value") << ", sum(value), max(time_ns) FROM metric_points"
          << where_ids.text << " GROUP BY 1, 2 ORDER BY 1, 2";
      sql.params = where_ids.params;
      double step_s = static_cast<double>(*step) / 1000.0;
      int64_t prev_series = 0;
      double prev_last = NAN;
      SL_RETURN_IF_ERROR(run.Rows(sql, [&](const RowView& r) {
        int64_t sid = r.GetInt(0), b = r.GetInt(1);
        auto it = chosen.find(sid);
        if (it == chosen.end() || b < 0 || b >= n || r.IsNull(2)) return;
        if (sid != prev_series) {
          prev_series = sid;
          prev_last = NAN;
        }
        double inc;
        if (it->second.second->temporality == 1) {
          inc = r.GetDouble(3);
        } else {
          double last = r.GetDouble(2);
          if (std::isnan(prev_last)) {
            prev_last = last;
            return;  // the first bucket of a cumulative series has no baseline
          }
          inc = last >= prev_last ? last - prev_last : last;
          prev_last = last;
        }
        double& v = values[it->second.first][b];
        v = (std::isnan(v) ? 0 : v) + inc / step_s;
      }));
    } else {
      // Histogram percentiles: per series and bucket, the distribution of the
      // bucket (delta: sum of points; cumulative: last point minus the last
      // point of the previous bucket), merged per group when bounds agree.
      // Cumulative series need only the newest point of each bucket, so the
      // engine picks it; delta series need every point.
      std::vector<int64_t> cumulative, delta;
      for (int64_t id : ids) (chosen.at(id).second->temporality == 1 ? delta : cumulative).push_back(id);
      std::vector<Sql> queries;
      if (!cumulative.empty()) {
        Sql sql;
        sql << "SELECT series_id, " << bucket << ", max(time_ns), " << run.LastOf("bucket_counts") << ", "
            << run.LastOf("explicit_bounds") << " FROM metric_points" << where.text << series_in(cumulative)
            << " GROUP BY 1, 2 ORDER BY 1, 2";
        sql.params = where.params;
        queries.push_back(std::move(sql));
      }
      if (!delta.empty()) {
        Sql sql;
        sql << "SELECT series_id, " << bucket << ", time_ns, bucket_counts, explicit_bounds FROM metric_points"
            << where.text << series_in(delta) << " ORDER BY series_id, time_ns";
        sql.params = where.params;
        queries.push_back(std::move(sql));
      }
      simdjson::dom::parser parser;
      std::string bounds_text;
      struct Dist {
        std::vector<double> bounds, counts;
      };
      std::map<std::pair<int, int64_t>, Dist> merged;
      int64_t cur_series = 0, cur_bucket = -1;
      std::vector<double> last_prev_bucket, last_this_bucket, delta_sum, bounds;
      const SeriesInfo* cur_info = nullptr;
      auto flush = [&]() {
        if (cur_info == nullptr || cur_bucket < 0) return;
        std::vector<double> dist;
        if (cur_info->temporality == 1) {
          dist = delta_sum;
        } else {
          dist = last_this_bucket;
          if (last_prev_bucket.size() == dist.size()) {
            bool reset = false;
            for (size_t i = 0; i < dist.size(); ++i) reset |= dist[i] < last_prev_bucket[i];
            if (!reset) {
              for (size_t i = 0; i < dist.size(); ++i) dist[i] -= last_prev_bucket[i];
            }
          }
          last_prev_bucket = last_this_bucket;
        }
        Dist& d = merged[{chosen[cur_series].first, cur_bucket}];
        if (d.counts.empty()) {
          d.bounds = bounds;
          d.counts = dist;
        } else if (d.bounds == bounds && d.counts.size() == dist.size()) {
          for (size_t i = 0; i < dist.size(); ++i) d.counts[i] += dist[i];
        }
      };
      for (const Sql& sql : queries) {
        SL_RETURN_IF_ERROR(run.Rows(sql, [&](const RowView& r) {
          int64_t sid = r.GetInt(0), b = r.GetInt(1);
          auto it = chosen.find(sid);
          if (it == chosen.end() || b < 0 || b >= n || r.IsNull(3)) return;
          if (sid != cur_series || b != cur_bucket) {
            flush();
            if (sid != cur_series) last_prev_bucket.clear();
            cur_series = sid;
            cur_bucket = b;
            cur_info = it->second.second;
            delta_sum.clear();
          }
          std::vector<double> counts = ParseDoubleArray(parser, r.GetString(3));
          std::string text = r.IsNull(4) ? "[]" : r.GetString(4);
          if (text != bounds_text) {  // a series' bounds rarely change
            bounds = ParseDoubleArray(parser, text);
            bounds_text = std::move(text);
          }
          last_this_bucket = counts;
          if (delta_sum.size() != counts.size()) delta_sum.assign(counts.size(), 0);
          for (size_t i = 0; i < counts.size(); ++i) delta_sum[i] += counts[i];
        }));
        flush();
        cur_info = nullptr;  // the next query starts its own series
        cur_series = 0;
        cur_bucket = -1;
      }
      for (const auto& [key, d] : merged) values[key.first][key.second] = HistogramQuantile(d.bounds, d.counts, q);
    }
  }
  std::string out;
  JsonWriter w(&out);
  w.BeginObject();
  w.Key("name");
  w.String(*name);
  w.Key("agg");
  w.String(agg);
  WriteBuckets(&w, *range, *step, n);
  w.Key("series");
  w.BeginArray();
  for (size_t g = 0; g < group_keys.size(); ++g) {
    w.BeginObject();
    w.Key("labels");
    w.BeginObject();
    for (size_t i = 0; i < group_by.size(); ++i) {
      w.Key(group_by[i]);
      w.String(group_keys[g][i]);
    }
    w.EndObject();
    w.Key("values");
    w.BeginArray();
    for (double v : values[g]) WriteNumberOrNull(&w, v);
    w.EndArray();
    w.EndObject();
  }
  w.EndArray();
  w.EndObject();
  return out;
}

}  // namespace

bool QueryService::Knows(std::string_view op) {
  static const std::set<std::string_view> kOps = {
      "services", "endpoints", "endpoints/series", "traces",  "exceptions",     "exceptions/spans",
      "logs",     "logs/volume", "metrics",        "metrics/labels", "metrics/series"};
  if (kOps.count(op)) return true;
  return op.starts_with("traces/") && op.size() > 7 && op.find('/', 7) == std::string_view::npos;
}

Result<std::string> QueryService::Run(std::string_view op, const ApiParams& params, int64_t project_id,
                                      ReadConnection* conn) const {
  Runner run(dialect_, conn, project_id);
  if (op == "services") return Services(run, params);
  if (op == "endpoints") return Endpoints(run, params);
  if (op == "endpoints/series") return EndpointSeries(run, params);
  if (op == "traces") return Traces(run, params);
  if (op.starts_with("traces/")) return TraceDetail(run, std::string(op.substr(7)));
  if (op == "exceptions") return Exceptions(run, params);
  if (op == "exceptions/spans") return ExceptionSpans(run, params);
  if (op == "logs") return Logs(run, params);
  if (op == "logs/volume") return LogVolume(run, params);
  if (op == "metrics") return MetricList(run, params);
  if (op == "metrics/labels") return MetricLabels(run, params);
  if (op == "metrics/series") return MetricSeries(run, params);
  return Status::NotFound("no such query: " + std::string(op));
}

}  // namespace sightline
