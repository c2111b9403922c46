// The log operations of the read contract in SQL.

#include <algorithm>
#include <charconv>

#include "storage/sql/sql_reader.h"

namespace sightline {

namespace {

constexpr int64_t kMinuteNs = 60LL * 1000 * 1000 * 1000;

bool ParseInt64(std::string_view s, int64_t* out) {
  auto r = std::from_chars(s.data(), s.data() + s.size(), *out);
  return r.ec == std::errc() && r.ptr == s.data() + s.size();
}

}  // namespace

Result<LogPage> SqlReader::Logs(const LogPageQuery& q) {
  sql::Sql base;
  base << "SELECT " << sql::kLogColumns << ", rowid FROM logs";
  base.Append(LogWhere(q.filter));
  int64_t newest = q.filter.range.to_ns;  // exclusive upper bound of the scan
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
  // Newest first, in growing windows: a page is usually found in the newest
  // sliver of the range, and zone maps (DuckDB) or the time index (SQLite)
  // skip the rest. Each window is 4x the last, so a page that needs the whole
  // range costs at most 4/3 of one full scan. A trace id matches a handful of
  // rows anywhere in the range: growing windows would scan it 4/3 times over,
  // so it gets one pass.
  const int64_t oldest = q.filter.range.from_ns;
  int64_t window = q.filter.trace_id ? newest - oldest : std::max<int64_t>((newest - oldest) / 256, kMinuteNs);
  LogPage page;
  std::string next;
  for (;;) {
    int64_t low = newest - window > oldest ? newest - window : oldest;
    sql::Sql sql = base;
    if (low > oldest) {
      sql << " AND time_ns >= ";
      sql.Bind(low);
    }
    sql << " ORDER BY time_ns DESC, rowid DESC LIMIT ";
    sql.Bind(q.limit + 1);
    page.records.clear();
    int64_t n = 0;
    SL_RETURN_IF_ERROR(Rows(sql, [&](const RowView& r) {
      if (++n > q.limit) return;
      page.records.push_back(sql::LogRecordOf(r));
      next = std::to_string(r.GetInt(0)) + ":" + std::to_string(r.GetInt(sql::kLogColumnCount));
    }));
    if (n > q.limit) {
      page.next_cursor = next;
      break;
    }
    if (low == oldest) break;
    window = window > INT64_MAX / 4 ? INT64_MAX : window * 4;
  }
  return page;
}

Result<LogVolume> SqlReader::CountLogs(const LogVolumeQuery& q) {
  sql::Sql sql;
  sql << "SELECT " << BucketExpr("time_ns", q.buckets)
      << ", (CASE WHEN severity_number >= 21 THEN 6 WHEN severity_number >= 17 THEN 5 WHEN severity_number >= 13 "
         "THEN 4 WHEN severity_number >= 9 THEN 3 WHEN severity_number >= 5 THEN 2 WHEN severity_number >= 1 THEN 1 "
         "ELSE 0 END), count(*) FROM logs";
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

}  // namespace sightline
