#include "storage/rollup/span_rollup.h"

#include <algorithm>
#include <set>

namespace sightline::rollup {

void SpanRollupValue::Add(int64_t duration_ns, bool error) {
  ++count;
  errors += error ? 1 : 0;
  duration_sum += static_cast<double>(duration_ns);
  duration_min = std::min(duration_min, duration_ns);
  duration_max = std::max(duration_max, duration_ns);
  sketch.Add(duration_ns);
}

void SpanRollupValue::Merge(const SpanRollupValue& other) {
  count += other.count;
  errors += other.errors;
  duration_sum += other.duration_sum;
  duration_min = std::min(duration_min, other.duration_min);
  duration_max = std::max(duration_max, other.duration_max);
  sketch.Merge(other.sketch);
}

void SpanRollupValue::Subtract(const SpanRollupValue& other) {
  count -= other.count;
  errors -= other.errors;
  duration_sum -= other.duration_sum;
  sketch.Subtract(other.sketch);
}

void AddSpans(const SpanBatch& b, SpanRollupMap* m) {
  const auto columns = schema::SpanColumns(b);
  // The derived columns as the spans table stores them, so a rollup row and
  // a GROUP BY over its spans agree on every key.
  const schema::Column* endpoint = nullptr;
  const schema::Column* is_entry = nullptr;
  for (const schema::Column& c : columns) {
    if (std::string_view(c.name) == "endpoint") endpoint = &c;
    if (std::string_view(c.name) == "is_entry") is_entry = &c;
  }
  SpanRollupKey key;
  key.project_id = b.project_id;
  for (size_t r = 0; r < b.rows(); ++r) {
    key.bucket_ns = FloorTo(b.start_time_ns[r], kMinuteNs);
    key.service.assign(b.service_name.Get(r));
    key.endpoint.assign(schema::DerivedText(*endpoint, r));
    key.is_entry = schema::DerivedInt(*is_entry, r);
    (*m)[key].Add(b.end_time_ns[r] - b.start_time_ns[r], b.status_code[r] == 2);
  }
}

SpanRollupRows ToRows(const SpanRollupMap& m) {
  SpanRollupRows out;
  for (const auto& [k, v] : m) {
    if (v.count <= 0) continue;  // every span of it expired
    out.project_id.push_back(k.project_id);
    out.bucket_ns.push_back(k.bucket_ns);
    out.service.Append(k.service);
    out.endpoint.Append(k.endpoint);
    out.is_entry.push_back(k.is_entry);
    out.count.push_back(v.count);
    out.errors.push_back(v.errors);
    out.duration_sum.push_back(v.duration_sum);
    out.duration_min.push_back(v.duration_min);
    out.duration_max.push_back(v.duration_max);
    out.sketch.Append(v.sketch.Encode());
  }
  return out;
}

std::array<schema::Column, kSpanRollupColumnCount> SpanRollupColumns(const SpanRollupRows& r) {
  using namespace schema::internal;
  return {{
      Ints("project_id", r.project_id),
      Ints("bucket_ns", r.bucket_ns),
      Text("service_name", r.service),
      Text("endpoint", r.endpoint),
      Ints("is_entry", r.is_entry),
      Ints("count", r.count),
      Ints("errors", r.errors),
      DoubleOrNull("duration_sum", r.duration_sum),
      Ints("duration_min", r.duration_min),
      Ints("duration_max", r.duration_max),
      Text("sketch", r.sketch),
  }};
}

Status ReadRow(const RowView& r, int col, SpanRollupKey* key, SpanRollupValue* value) {
  key->project_id = r.GetInt(col);
  key->bucket_ns = r.GetInt(col + 1);
  key->service = r.GetString(col + 2);
  key->endpoint = r.GetString(col + 3);
  key->is_entry = r.GetInt(col + 4);
  SpanRollupValue v;
  v.count = r.GetInt(col + 5);
  v.errors = r.GetInt(col + 6);
  v.duration_sum = r.GetDouble(col + 7);
  v.duration_min = r.GetInt(col + 8);
  v.duration_max = r.GetInt(col + 9);
  SL_RETURN_IF_ERROR(v.sketch.MergeEncoded(r.GetString(col + 10)));
  value->Merge(v);
  return Status::Ok();
}

std::vector<std::string> CreateSpanRollupSql(const schema::TypeNames& types) {
  const SpanRollupRows empty;
  const auto columns = SpanRollupColumns(empty);
  std::vector<std::string> out;
  for (const char* table : {kSpanDeltaTable, kSpanMinuteTable, kSpanHourTable}) {
    out.push_back(schema::CreateTableSql(table, columns, types));
  }
  out.push_back(std::string("CREATE TABLE IF NOT EXISTS ") + kSpanStateTable + " (complete_from_ns " + types.int64 +
                ")");
  return out;
}

Status InitSpanRollupState(RollupSession* s) {
  bool present = false;
  SL_RETURN_IF_ERROR(s->Query(std::string("SELECT count(*) FROM ") + kSpanStateTable, {},
                              [&](const RowView& r) { present = r.GetInt(0) > 0; }));
  if (present) return Status::Ok();
  int64_t from = INT64_MIN;
  SL_RETURN_IF_ERROR(s->Query("SELECT max(start_time_ns) FROM spans", {}, [&](const RowView& r) {
    if (!r.IsNull(0)) from = FloorTo(r.GetInt(0), kHourNs) + kHourNs;
  }));
  return s->Exec(std::string("INSERT INTO ") + kSpanStateTable + " VALUES (?)", {from});
}

Result<int64_t> SpanRollupsCompleteFrom(RollupSession* s) {
  int64_t from = INT64_MAX;  // no state row: nothing is known complete
  SL_RETURN_IF_ERROR(
      s->Query(std::string("SELECT min(complete_from_ns) FROM ") + kSpanStateTable, {}, [&](const RowView& r) {
        if (!r.IsNull(0)) from = r.GetInt(0);
      }));
  return from;
}

namespace {

//! Merges the rows of `table` at the (project, bucket) pairs of `level`
//! into it, deletes them, and appends the merged rows.
Status FoldInto(RollupSession* s, const char* table, SpanRollupMap* level) {
  std::map<int64_t, std::set<int64_t>> buckets;  // project -> buckets touched
  for (const auto& [k, v] : *level) buckets[k.project_id].insert(k.bucket_ns);
  // Bounded statements: at most this many buckets per IN list.
  constexpr size_t kChunk = 256;
  for (const auto& [project, set] : buckets) {
    std::vector<int64_t> all(set.begin(), set.end());
    for (size_t i = 0; i < all.size(); i += kChunk) {
      const size_t n = std::min(kChunk, all.size() - i);
      // The range as well as the list: a plain comparison lets zone maps skip
      // row groups even where an IN list is not pushed down.
      std::string where = " WHERE project_id = ? AND bucket_ns BETWEEN ? AND ? AND bucket_ns IN (";
      std::vector<SqlParam> params(n + 3);
      params[0] = project;
      params[1] = all[i];
      params[2] = all[i + n - 1];
      for (size_t j = 0; j < n; ++j) {
        where += j ? ", ?" : "?";
        params[j + 3] = all[i + j];
      }
      where += ")";
      Status row_status;
      SL_RETURN_IF_ERROR(s->Query(std::string("SELECT ") + kSpanRollupSelect + " FROM " + table + where, params,
                                  [&](const RowView& r) {
                                    SpanRollupKey k;
                                    SpanRollupValue v;
                                    if (!row_status.ok()) return;
                                    row_status = ReadRow(r, 0, &k, &v);
                                    (*level)[k].Merge(v);
                                  }));
      SL_RETURN_IF_ERROR(row_status);
      SL_RETURN_IF_ERROR(s->Exec(std::string("DELETE FROM ") + table + where, params));
    }
  }
  return s->Append(table, ToRows(*level));
}

}  // namespace

Result<int64_t> CompactSpanRollups(RollupSession* s) {
  SpanRollupMap minutes;
  int64_t deltas = 0;
  Status row_status;
  SL_RETURN_IF_ERROR(
      s->Query(std::string("SELECT ") + kSpanRollupSelect + " FROM " + kSpanDeltaTable, {}, [&](const RowView& r) {
        SpanRollupKey k;
        SpanRollupValue v;
        if (!row_status.ok()) return;
        row_status = ReadRow(r, 0, &k, &v);
        minutes[k].Merge(v);
        ++deltas;
      }));
  SL_RETURN_IF_ERROR(row_status);
  if (deltas == 0) return int64_t{0};
  SpanRollupMap hours;
  for (const auto& [k, v] : minutes) {
    SpanRollupKey h = k;
    h.bucket_ns = FloorTo(k.bucket_ns, kHourNs);
    hours[h].Merge(v);
  }
  SL_RETURN_IF_ERROR(FoldInto(s, kSpanMinuteTable, &minutes));
  SL_RETURN_IF_ERROR(FoldInto(s, kSpanHourTable, &hours));
  SL_RETURN_IF_ERROR(s->Exec(std::string("DELETE FROM ") + kSpanDeltaTable, {}));
  return deltas;
}

Status ExpireSpanRollups(RollupSession* s, const std::string& project_filter, int64_t before_ns) {
  // Everything in the levels first: the deltas need not be adjusted.
  Result<int64_t> folded = CompactSpanRollups(s);
  if (!folded.ok()) return folded.status();
  const int64_t minute = FloorTo(before_ns, kMinuteNs), hour = FloorTo(before_ns, kHourNs);
  // What leaves the partial minute: its spans before before_ns; and the
  // partial hour: those plus its whole minutes before the partial one.
  SpanRollupMap minute_out, hour_out;
  Status row_status;
  const std::string raw =
      "SELECT project_id, service_name, endpoint, is_entry, status_code, duration_ns FROM spans "
      "WHERE start_time_ns >= ? AND start_time_ns < ?" +
      project_filter;
  SL_RETURN_IF_ERROR(s->Query(raw, {minute, before_ns}, [&](const RowView& r) {
    SpanRollupKey k{r.GetInt(0), minute, r.GetString(1), r.GetString(2), r.GetInt(3)};
    minute_out[k].Add(r.GetInt(5), r.GetInt(4) == 2);
  }));
  for (const auto& [k, v] : minute_out) {
    SpanRollupKey h = k;
    h.bucket_ns = hour;
    hour_out[h].Merge(v);
  }
  SL_RETURN_IF_ERROR(s->Query(std::string("SELECT ") + kSpanRollupSelect + " FROM " + kSpanMinuteTable +
                                  " WHERE bucket_ns >= ? AND bucket_ns < ?" + project_filter,
                              {hour, minute}, [&](const RowView& r) {
                                SpanRollupKey k;
                                SpanRollupValue v;
                                if (!row_status.ok()) return;
                                row_status = ReadRow(r, 0, &k, &v);
                                k.bucket_ns = hour;
                                hour_out[k].Merge(v);
                              }));
  SL_RETURN_IF_ERROR(row_status);
  for (auto [table, first_kept] : {std::pair{kSpanMinuteTable, minute}, std::pair{kSpanHourTable, hour}}) {
    SL_RETURN_IF_ERROR(
        s->Exec(std::string("DELETE FROM ") + table + " WHERE bucket_ns < ?" + project_filter, {first_kept}));
  }
  // The partial buckets, less what leaves them, as negative folds.
  for (auto [table, out] : {std::pair{kSpanMinuteTable, &minute_out}, std::pair{kSpanHourTable, &hour_out}}) {
    SpanRollupMap level;
    for (const auto& [k, v] : *out) level[k].Subtract(v);
    SL_RETURN_IF_ERROR(FoldInto(s, table, &level));
  }
  return Status::Ok();
}

}  // namespace sightline::rollup
