// The log operations of the read contract in SQL.

#include <simdjson.h>

#include <algorithm>
#include <charconv>
#include <map>
#include <set>

#include "storage/attribute_text.h"
#include "storage/sql/sql_reader.h"

namespace sightline {

namespace {

constexpr int64_t kMinuteNs = 60LL * 1000 * 1000 * 1000;

//! The severity level (SeverityLevel) of severity_number, in SQL.
constexpr const char* kLevelExpr =
    "(CASE WHEN severity_number >= 21 THEN 6 WHEN severity_number >= 17 THEN 5 WHEN severity_number >= 13 "
    "THEN 4 WHEN severity_number >= 9 THEN 3 WHEN severity_number >= 5 THEN 2 WHEN severity_number >= 1 THEN 1 "
    "ELSE 0 END)";

bool ParseInt64(std::string_view s, int64_t* out) {
  auto r = std::from_chars(s.data(), s.data() + s.size(), *out);
  return r.ec == std::errc() && r.ptr == s.data() + s.size();
}

}  // namespace

Result<LogPage> SqlReader::Logs(const LogPageQuery& q) {
  // What the engine's own indexes know narrows the scan, never the answer:
  // the time range of a trace's logs, the time ranges that can hold a text.
  LogFilter f = q.filter;
  if (f.trace_id) {
    Result<std::optional<TraceExtent>> extent = TraceExtentOf(f.project_id, *f.trace_id);
    if (!extent.ok()) return extent.status();
    if (*extent) {
      if (!(*extent)->logs) return LogPage{};
      f.range.from_ns = std::max(f.range.from_ns, (*extent)->logs->from_ns);
      f.range.to_ns = std::min(f.range.to_ns, (*extent)->logs->to_ns);
      if (f.range.from_ns >= f.range.to_ns) return LogPage{};
    }
  }
  std::optional<std::vector<TimeRange>> text_ranges;
  if (f.text) {
    Result<std::optional<std::vector<TimeRange>>> ranges = LogTextRanges(f);
    if (!ranges.ok()) return ranges.status();
    text_ranges = std::move(ranges).value();
    if (text_ranges && text_ranges->empty()) return LogPage{};
  }
  sql::Sql base;
  base << "SELECT " << sql::kLogColumns << ", rowid FROM logs";
  base.Append(LogWhere(f));
  int64_t newest = f.range.to_ns;  // exclusive upper bound of the scan
  // Cursor "<time_ns>:<rowid>": the last row returned; the page continues strictly after it.
  if (!q.cursor.empty()) {
    size_t colon = q.cursor.find(':');
    int64_t t = 0, id = 0;
    if (colon == std::string::npos || !ParseInt64(std::string_view(q.cursor).substr(0, colon), &t) ||
        !ParseInt64(std::string_view(q.cursor).substr(colon + 1), &id)) {
      return Status::InvalidArgument("malformed cursor");
    }
    base << " AND (time_ns < ";
    base.Bind(t);
    base << " OR (time_ns = ";
    base.Bind(t);
    base << " AND rowid < ";
    base.Bind(id);
    base << "))";
    if (t < INT64_MAX) newest = std::min(newest, t + 1);
  }
  LogPage page;
  std::string next;
  // Reads the rows of `sql` (ORDER BY and LIMIT added here) after those on
  // the page; false once the page is full and one more row was seen.
  auto read = [&](sql::Sql sql) -> Result<bool> {
    const int64_t want = q.limit - static_cast<int64_t>(page.records.size());
    sql << " ORDER BY time_ns DESC, rowid DESC LIMIT ";
    sql.Bind(want + 1);
    int64_t n = 0;
    SL_RETURN_IF_ERROR(Rows(sql, [&](const RowView& r) {
      if (++n > want) return;
      page.records.push_back(sql::LogRecordOf(r));
      next = std::to_string(r.GetInt(0)) + ":" + std::to_string(r.GetInt(sql::kLogColumnCount));
    }));
    if (n > want) page.next_cursor = next;
    return n <= want;
  };
  // The ranges that can hold a match, newest first (disjoint, so their rows
  // join in order): the engine's for a text, else the whole range. Each is
  // read newest first, in growing windows: a page is usually found in the
  // newest sliver of the range, and zone maps (DuckDB) or the time index
  // (SQLite) skip the rest. Each window is 4x the last, so a page that needs
  // the whole range costs at most 4/3 of one full scan. A trace id matches a
  // handful of rows anywhere in the range: growing windows would scan it 4/3
  // times over, so it gets one pass.
  const std::vector<TimeRange> ranges = text_ranges ? *text_ranges : std::vector<TimeRange>{f.range};
  for (const TimeRange& r : ranges) {
    const int64_t top = std::min(r.to_ns, newest);
    if (r.from_ns >= top) continue;
    const size_t kept = page.records.size();
    int64_t window = f.trace_id ? top - r.from_ns : std::max<int64_t>((top - r.from_ns) / 256, kMinuteNs);
    for (;;) {
      const int64_t low = top - window > r.from_ns ? top - window : r.from_ns;
      sql::Sql sql = base;
      sql << " AND time_ns >= ";
      sql.Bind(low);
      sql << " AND time_ns < ";
      sql.Bind(top);
      page.records.resize(kept);
      page.next_cursor.reset();
      Result<bool> more = read(std::move(sql));
      if (!more.ok()) return more.status();
      if (!*more) return page;
      if (low == r.from_ns) break;
      window = window > INT64_MAX / 4 ? INT64_MAX : window * 4;
    }
  }
  return page;
}

Result<LogVolume> SqlReader::CountRawLogs(const LogVolumeQuery& q) {
  sql::Sql sql;
  sql << "SELECT " << BucketExpr("time_ns", q.buckets) << ", " << kLevelExpr << ", count(*) FROM logs";
  sql.Append(LogWhere(q.filter));
  sql << BucketWhere("time_ns", q.buckets, q.filter.range) << " GROUP BY 1, 2";
  LogVolume out;
  SL_RETURN_IF_ERROR(Rows(sql, [&](const RowView& r) {
    LogVolumeRow row{r.GetInt(0), static_cast<int32_t>(r.GetInt(1)), r.GetInt(2)};
    if (row.bucket < 0 || row.bucket >= q.buckets.count) return;
    out.push_back(row);
  }));
  return out;
}

// --- Log facets ---

namespace {

//! By count descending, then value ascending; the first cap + 1.
std::vector<FacetCount> Top(const std::map<std::string, int64_t>& counts, int64_t cap) {
  std::vector<FacetCount> out;
  for (const auto& [value, n] : counts) out.push_back({value, n});
  std::sort(out.begin(), out.end(), [](const FacetCount& a, const FacetCount& b) {
    return a.count != b.count ? a.count > b.count : a.value < b.value;
  });
  if (static_cast<int64_t>(out.size()) > cap + 1) out.resize(static_cast<size_t>(cap + 1));
  return out;
}

}  // namespace

namespace sql {

AttributeCounter::AttributeCounter() : parser_(std::make_unique<simdjson::dom::parser>()) {}
AttributeCounter::~AttributeCounter() = default;

void AttributeCounter::Add(const std::string& json, const std::optional<std::string>& only) {
  simdjson::dom::element doc;
  simdjson::dom::object object;
  if (parser_->parse(json).get(doc) != simdjson::SUCCESS || doc.get_object().get(object) != simdjson::SUCCESS) return;
  std::set<std::string_view> seen;
  for (auto field : object) {
    if (seen.count(field.key)) continue;  // a repeated key: its first value, as a filter reads it
    seen.insert(field.key);
    if (only && field.key != *only) continue;
    std::optional<std::string> text = ScalarAttributeText(field.value);
    if (!text) continue;
    std::string key(field.key);
    ++keys_[key];
    ++values_[key][*text];
  }
}

std::vector<AttributeFacet> AttributeCounter::Top(int64_t max_keys, int64_t max_values) const {
  std::vector<AttributeFacet> out;
  for (const FacetCount& k : sightline::Top(keys_, max_keys)) {
    out.push_back({k.value, k.count, sightline::Top(values_.at(k.value), max_values)});
  }
  return out;
}

}  // namespace sql

// Three statements: levels (the exact total is their sum), the top services
// (exact counts, LIMIT cap + 1), and the attributes of the newest `sample`
// records, counted here: their keys are data, which SQL cannot group by
// portably across the dialects.
Result<LogFacets> SqlReader::FacetLogs(const LogFacetsQuery& q) {
  if (q.max_services < 1 || q.sample < 1 || q.max_keys < 1 || q.max_values < 1) {
    return Status::InvalidArgument("log facet caps and sample must be at least 1");
  }
  LogFacets out;
  sql::Sql levels;
  levels << "SELECT " << kLevelExpr << ", count(*) FROM logs";
  levels.Append(LogWhere(q.filter));
  levels << " GROUP BY 1";
  SL_RETURN_IF_ERROR(Rows(levels, [&](const RowView& r) {
    const int64_t level = r.GetInt(0);
    if (level < 0 || level > 6) return;
    out.levels[static_cast<size_t>(level)] += r.GetInt(1);
    out.total += r.GetInt(1);
  }));
  if (out.total == 0) return out;
  sql::Sql services;
  services << "SELECT service_name, count(*) FROM logs";
  services.Append(LogWhere(q.filter));
  services << " GROUP BY service_name ORDER BY 2 DESC, 1 LIMIT ";
  services.Bind(q.max_services + 1);
  SL_RETURN_IF_ERROR(Rows(services, [&](const RowView& r) { out.services.push_back({sql::Text(r, 0), r.GetInt(1)}); }));
  sql::Sql sample;
  sample << "SELECT attributes FROM logs";
  sample.Append(LogWhere(q.filter));
  sample << " ORDER BY time_ns DESC, rowid DESC LIMIT ";
  sample.Bind(q.sample);
  sql::AttributeCounter counter;
  SL_RETURN_IF_ERROR(Rows(sample, [&](const RowView& r) {
    ++out.sampled;
    if (!r.IsNull(0)) counter.Add(r.GetString(0));
  }));
  SL_RETURN_IF_ERROR(CheckInterrupted());
  out.attributes = counter.Top(q.max_keys, q.max_values);
  return out;
}

}  // namespace sightline
