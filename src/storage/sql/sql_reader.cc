#include "storage/sql/sql_reader.h"

#include <charconv>

namespace sightline {

namespace {

//! A JSON path selecting one key of an object: $."key" with " and \ escaped.
std::string JsonPathFor(const std::string& key) {
  std::string path = "$.\"";
  for (char c : key) {
    if (c == '"' || c == '\\') path.push_back('\\');
    path.push_back(c);
  }
  path += "\"";
  return path;
}

//! '%text%' for LIKE, with % _ \ escaped by \.
std::string LikeContains(const std::string& text) {
  std::string out = "%";
  for (char c : text) {
    if (c == '%' || c == '_' || c == '\\') out.push_back('\\');
    out.push_back(c);
  }
  out.push_back('%');
  return out;
}

}  // namespace

namespace sql {

std::string UnsignedOrder(const char* column, const char* direction) {
  // Values with the top bit set are negative when read as signed and the
  // largest as unsigned; within one sign, signed order is unsigned order.
  std::string c(column), d(direction);
  return "(" + c + " < 0)" + d + ", " + c + d;
}

LogRecord LogRecordOf(const RowView& r) {
  LogRecord l;
  l.time_ns = r.GetInt(0);
  l.severity_number = static_cast<int32_t>(r.GetInt(1));
  l.severity_text = Text(r, 2);
  l.body = Text(r, 3);
  l.service = Text(r, 4);
  l.trace_id = TraceId{Id(r, 5), Id(r, 6)};
  l.span_id = Id(r, 7);
  l.attributes = Text(r, 8);
  l.event_name = Text(r, 9);
  return l;
}

}  // namespace sql

std::string SqlReader::IntDiv(const std::string& a, const std::string& b) const { return "(" + a + " / " + b + ")"; }

void SqlReader::AppendJsonText(sql::Sql* sql, const char* column, const std::string& key) const {
  std::string path = JsonPathFor(key);
  std::string col(column);
  *sql << "CAST(CASE json_type(" << col << ", ";
  sql->Bind(path);
  *sql << ") WHEN 'true' THEN 'true' WHEN 'false' THEN 'false' ELSE json_extract(" << col << ", ";
  sql->Bind(path);
  *sql << ") END AS TEXT)";
}

std::string SqlReader::LastOf(const char* column) const { return column; }

void SqlReader::AppendContains(sql::Sql* sql, const char* column, const std::string& text) const {
  *sql << column << " LIKE ";
  sql->Bind(LikeContains(text));
  *sql << " ESCAPE '\\'";
}

std::string SqlReader::SampleTraceIdHex() const {
  return "max(CASE WHEN trace_id_high IS NULL THEN '' ELSE printf('%016x%016x', trace_id_high, trace_id_low) END)";
}

void SqlReader::AppendJsonNumber(sql::Sql* sql, const char* column, const std::string& key) const {
  std::string path = JsonPathFor(key);
  std::string col(column);
  *sql << "(CASE WHEN json_type(" << col << ", ";
  sql->Bind(path);
  *sql << ") IN ('integer', 'real') THEN CAST(json_extract(" << col << ", ";
  sql->Bind(path);
  *sql << ") AS REAL) END)";
}

void SqlReader::AppendAttrFilters(sql::Sql* w, const char* column, const std::vector<AttrFilter>& filters) const {
  for (const AttrFilter& a : filters) {
    *w << " AND ";
    // A NULL (absent key, JSON null) compares to nothing: = and <> are both
    // false for it, as the contract says.
    switch (a.op) {
      case AttrOp::kEq:
      case AttrOp::kNe:
        AppendJsonText(w, column, a.key);
        *w << (a.op == AttrOp::kEq ? " = " : " <> ");
        w->Bind(a.value);
        break;
      case AttrOp::kExists:
        AppendJsonText(w, column, a.key);
        *w << " IS NOT NULL";
        break;
      case AttrOp::kGt:
      case AttrOp::kLt:
        AppendJsonNumber(w, column, a.key);
        *w << (a.op == AttrOp::kGt ? " > " : " < ");
        w->Bind(a.number);
        break;
    }
  }
}

sql::Sql SqlReader::SpanWhere(const SpanFilter& f) const {
  sql::Sql w;
  w << " WHERE " << SpanRangeProjectColumn() << " = ";
  w.Bind(f.project_id);
  w << " AND start_time_ns >= ";
  w.Bind(f.range.from_ns);
  w << " AND start_time_ns < ";
  w.Bind(f.range.to_ns);
  if (f.entry_only) w << " AND is_entry = 1";
  if (f.service) {
    w << " AND service_name = ";
    w.Bind(*f.service);
  }
  if (f.endpoint) {
    w << " AND endpoint = ";
    w.Bind(*f.endpoint);
  }
  if (f.status_code) {
    w << " AND status_code = ";
    w.Bind(int64_t{*f.status_code});
  }
  if (f.min_duration_ns) {
    w << " AND duration_ns >= ";
    w.Bind(*f.min_duration_ns);
  }
  if (f.max_duration_ns) {
    w << " AND duration_ns <= ";
    w.Bind(*f.max_duration_ns);
  }
  AppendAttrFilters(&w, "attributes", f.attributes);
  if (!f.resource_attributes.empty()) {
    // Inside the subquery the bare names are span_resources' columns.
    w << " AND resource_id IN (SELECT resource_id FROM span_resources WHERE project_id = ";
    w.Bind(f.project_id);
    AppendAttrFilters(&w, "resource_attributes", f.resource_attributes);
    w << ")";
  }
  return w;
}

sql::Sql SqlReader::LogWhere(const LogFilter& f) const {
  sql::Sql w;
  w << " WHERE project_id = ";  // SQLite: the (project_id, time_ns) index serves the newest-first windows
  w.Bind(f.project_id);
  w << " AND time_ns >= ";
  w.Bind(f.range.from_ns);
  w << " AND time_ns < ";
  w.Bind(f.range.to_ns);
  if (f.severity_min > 0) {
    w << " AND severity_number >= ";
    w.Bind(int64_t{f.severity_min});
  }
  if (f.service) {
    w << " AND service_name = ";
    w.Bind(*f.service);
  }
  if (f.text) {
    w << " AND ";
    AppendContains(&w, "body", *f.text);
  }
  if (f.trace_id) {
    w << " AND trace_id_high = ";
    w.Bind(static_cast<int64_t>(f.trace_id->high));
    w << " AND trace_id_low = ";
    w.Bind(static_cast<int64_t>(f.trace_id->low));
  }
  AppendAttrFilters(&w, "attributes", f.attributes);
  return w;
}

std::string SqlReader::BucketExpr(const char* time_col, const Buckets& b) const {
  return IntDiv(std::string("(") + time_col + " - " + std::to_string(b.origin_ns) + ")", std::to_string(b.step_ns));
}

std::string SqlReader::BucketWhere(const char* time_col, const Buckets& b, const TimeRange& range) {
  std::string where;
  if (b.origin_ns > range.from_ns) where += std::string(" AND ") + time_col + " >= " + std::to_string(b.origin_ns);
  // Rows past the last bucket would be grouped, counted against a group cap
  // and only then dropped.
  const __int128 end = static_cast<__int128>(b.origin_ns) + static_cast<__int128>(b.step_ns) * b.count;
  if (end < range.to_ns) where += std::string(" AND ") + time_col + " < " + std::to_string(static_cast<int64_t>(end));
  return where;
}

std::string SqlReader::SpanKeyExpr(SpanDimension d, const SpanGroupQuery& q) const {
  switch (d) {
    case SpanDimension::kService: return "service_name";
    case SpanDimension::kEndpoint: return "endpoint";
    case SpanDimension::kBucket: return BucketExpr("start_time_ns", q.buckets);
    case SpanDimension::kLabel: return "coalesce(top.top_index, -1)";
  }
  return "NULL";
}

sql::Sql SqlReader::LabelJoin(const SpanGroupQuery& q) const {
  sql::Sql join;
  bool labelled = false;
  for (SpanDimension d : q.dimensions) labelled |= d == SpanDimension::kLabel;
  if (!labelled) return join;
  if (q.labels.empty()) {
    // No labels: every span is "other"; a join with no rows keeps the SQL uniform.
    join << " LEFT JOIN (SELECT NULL AS top_service, NULL AS top_endpoint, NULL AS top_index WHERE 1 = 0) top"
            " ON service_name = top.top_service AND endpoint = top.top_endpoint";
    return join;
  }
  // Label = index of the (service, endpoint) pair from a join with the pairs:
  // a hash join on the two columns costs about half of a CASE comparing
  // strings per row (10M spans, DuckDB).
  join << " LEFT JOIN (";
  for (size_t i = 0; i < q.labels.size(); ++i) {
    join << (i ? " UNION ALL SELECT " : "SELECT ");
    join.Bind(q.labels[i].first);
    join << (i ? ", " : " AS top_service, ");
    join.Bind(q.labels[i].second);
    join << (i ? ", " : " AS top_endpoint, ") << std::to_string(i) << (i ? "" : " AS top_index");
  }
  join << ") top ON service_name = top.top_service AND endpoint = top.top_endpoint";
  return join;
}

std::string SqlReader::GroupLimit(const SpanGroupQuery& q) {
  return " LIMIT " + std::to_string(q.max_groups < INT64_MAX ? q.max_groups + 1 : INT64_MAX);
}

Status SqlReader::CheckInterrupted() const {
  if (interrupted()) return Status::Cancelled("the query was interrupted");
  return Status::Ok();
}

void SqlReader::DropOutOfRangeBuckets(const SpanGroupQuery& q, SpanGroups* groups) {
  for (size_t i = 0; i < q.dimensions.size(); ++i) {
    if (q.dimensions[i] != SpanDimension::kBucket) continue;
    std::erase_if(*groups, [&](const SpanGroup& g) {
      int64_t b = -1;
      const std::string& k = g.keys[i];
      auto r = std::from_chars(k.data(), k.data() + k.size(), b);
      return r.ec != std::errc() || b < 0 || b >= q.buckets.count;
    });
  }
}

}  // namespace sightline
