// The log operations of the read contract in SQL.

#include <simdjson.h>

#include <algorithm>
#include <charconv>
#include <functional>
#include <map>
#include <set>

#include "storage/attribute_text.h"
#include "storage/rollup/rollup_table.h"
#include "storage/sql/sql_reader.h"

namespace sightline {

namespace {

using rollup::FloorTo;
using rollup::kMinuteNs;

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

namespace sql {

std::vector<TimeRange> RangesOfMinutes(const std::vector<int64_t>& minutes, const TimeRange& range) {
  std::vector<TimeRange> out;  // newest first
  for (int64_t m : minutes) {
    const __int128 from = static_cast<__int128>(m) * kMinuteNs;
    const __int128 to = from + kMinuteNs;
    TimeRange r{static_cast<int64_t>(std::max<__int128>(from, range.from_ns)),
                static_cast<int64_t>(std::min<__int128>(to, range.to_ns))};
    if (r.from_ns >= r.to_ns) continue;
    if (!out.empty() && out.back().from_ns <= r.to_ns) {
      out.back().from_ns = std::min(out.back().from_ns, r.from_ns);
      continue;
    }
    out.push_back(r);
  }
  while (out.size() > kMaxLogReadRanges) {
    // Close the smallest gap: between out[i] (newer) and out[i + 1].
    size_t best = 0;
    int64_t best_gap = INT64_MAX;
    for (size_t i = 0; i + 1 < out.size(); ++i) {
      const int64_t gap = out[i].from_ns - out[i + 1].to_ns;
      if (gap < best_gap) {
        best_gap = gap;
        best = i;
      }
    }
    out[best].from_ns = out[best + 1].from_ns;
    out.erase(out.begin() + static_cast<std::ptrdiff_t>(best) + 1);
  }
  return out;
}

}  // namespace sql

Result<std::optional<std::vector<TimeRange>>> SqlReader::LogCountedRanges(const LogFilter& f, int64_t want) {
  using Ranges = std::optional<std::vector<TimeRange>>;
  if (!HasRollups() || f.severity_min <= 0 || f.text || f.trace_id || !f.attributes.empty()) return Ranges();
  if (f.range.from_ns >= f.range.to_ns) return Ranges(std::vector<TimeRange>{});
  LogVolumeQuery v;
  v.filter = f;
  v.buckets.origin_ns = FloorTo(f.range.from_ns, kMinuteNs);
  v.buckets.step_ns = kMinuteNs;
  v.buckets.count = (static_cast<__int128>(f.range.to_ns) - v.buckets.origin_ns + kMinuteNs - 1) / kMinuteNs;
  Result<std::optional<LogVolume>> counted = CountLogsFromRollups(v);
  if (!counted.ok()) return counted.status();
  if (!counted->has_value()) return Ranges();
  std::map<int64_t, int64_t, std::greater<>> per_minute;  // bucket -> matches, newest first
  for (const LogVolumeRow& row : **counted) per_minute[row.bucket] += row.count;
  std::vector<int64_t> minutes;
  int64_t found = 0;
  for (const auto& [bucket, n] : per_minute) {
    if (n <= 0) continue;
    minutes.push_back(v.buckets.origin_ns / kMinuteNs + bucket);
    if ((found += n) >= want) break;
  }
  return Ranges(sql::RangesOfMinutes(minutes, f.range));
}

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
  // Reads range r newest first, in growing windows (one pass: one window);
  // true once the page is complete. A page is usually found in the newest
  // sliver of a range, and zone maps (DuckDB) or the time index (SQLite) skip
  // the rest. Each window is 4x the last, so a page that needs the whole
  // range costs at most 4/3 of one full scan.
  // `first_window`: the first window's length when not one pass (else the
  // range's newest 1/256, at least a minute).
  auto scan = [&](const TimeRange& r, bool one_pass, int64_t first_window = 0) -> Result<bool> {
    const int64_t top = std::min(r.to_ns, newest);
    if (r.from_ns >= top) return false;
    const size_t kept = page.records.size();
    int64_t window = one_pass       ? top - r.from_ns
                     : first_window ? first_window
                                    : std::max<int64_t>((top - r.from_ns) / 256, kMinuteNs);
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
      if (!*more) return true;
      if (low == r.from_ns) return false;
      window = window > INT64_MAX / 4 ? INT64_MAX : window * 4;
    }
  };
  // A text: only the ranges the engine says can hold it, newest first
  // (disjoint, so their rows join in order), each from its newest minute:
  // the index says that minute holds the text, so a common word fills the
  // page there, where a 1/256 window of a day's range at 400M records read
  // five minutes (1.5M records). A trace id matches a handful of rows
  // anywhere in the range: growing windows would scan it 4/3 times over, so
  // it gets one pass.
  if (text_ranges || f.trace_id) {
    for (const TimeRange& r : text_ranges ? *text_ranges : std::vector<TimeRange>{f.range}) {
      Result<bool> full = scan(r, f.trace_id.has_value(), text_ranges ? kMinuteNs : 0);
      if (!full.ok()) return full.status();
      if (*full) return page;
    }
    return page;
  }
  // Otherwise the newest window of the range first. Past it, where the log
  // rollups count the filter's matches (a severity), only the newest minutes
  // that hold the rest of the page: matches older than the range's newest
  // part (the last error an hour back in a day's range) would else cost a
  // scan of every record newer than them. A count can include rows before
  // the cursor at its own time, so a page still short goes on below.
  TimeRange first{f.range.from_ns, std::min(f.range.to_ns, newest)};
  if (first.from_ns >= first.to_ns) return page;
  first.from_ns =
      std::max(first.from_ns, first.to_ns - std::max<int64_t>((first.to_ns - first.from_ns) / 256, kMinuteNs));
  Result<bool> full = scan(first, /*one_pass=*/true);
  if (!full.ok()) return full.status();
  for (int64_t low = first.from_ns; !*full && low > f.range.from_ns;) {
    LogFilter rest = f;
    rest.range = TimeRange{f.range.from_ns, low};
    Result<std::optional<std::vector<TimeRange>>> counted =
        LogCountedRanges(rest, q.limit + 1 - static_cast<int64_t>(page.records.size()));
    if (!counted.ok()) return counted.status();
    if (!counted->has_value()) {
      full = scan(rest.range, /*one_pass=*/false);
      if (!full.ok()) return full.status();
      break;
    }
    if ((*counted)->empty()) break;
    for (const TimeRange& r : **counted) {
      full = scan(r, /*one_pass=*/false);
      if (!full.ok()) return full.status();
      if (*full) break;
    }
    low = (*counted)->back().from_ns;
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
